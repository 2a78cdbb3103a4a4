//! Native unit tests of what needs no host: the catalogue, argument checks
//! and the verbs that answer without calling a capability.

use serde_json::{Value, json};

use super::*;

fn call(verb: &str, input: Value) -> Result<Output, Failure> {
    stephost_plugin::invoke::<Desktop>(verb, &input.to_string())
}

#[test]
fn describe_lists_every_verb_with_a_closed_object_schema() {
    let info = stephost_plugin::describe::<Desktop>();
    assert_eq!(info.name, "desktop");
    assert!(info.bare_tool_names);
    let names: Vec<&str> = info.verbs.iter().map(|v| v.name.as_str()).collect();
    for verb in [
        "list_windows",
        "focus_window",
        "activate",
        "click",
        "double_click",
        "right_click",
        "move",
        "drag",
        "scroll",
        "type",
        "key",
        "screenshot",
        "wait_for",
        "wait_until",
        "sleep",
        "press",
        "set_text",
        "ui_elements",
        "look_begin",
        "look",
    ] {
        assert!(names.contains(&verb), "{verb} missing from {names:?}");
    }
    for v in &info.verbs {
        let schema: Value = serde_json::from_str(&v.input_schema).expect("schema is JSON");
        assert_eq!(schema["type"], "object", "{}", v.name);
        assert_eq!(schema["additionalProperties"], false, "{}", v.name);
    }
    let acting: Vec<&str> = info
        .verbs
        .iter()
        .filter(|v| v.acts_on_world)
        .map(|v| v.name.as_str())
        .collect();
    assert!(
        acting.contains(&"click") && acting.contains(&"type") && !acting.contains(&"screenshot")
    );
}

/// What a test host records, shared with the test that installed it.
type Record<T> = std::rc::Rc<std::cell::RefCell<Vec<T>>>;

/// A desktop with one dialog whose tree is a label, an entry and a button.
#[derive(Default)]
struct Dialog {
    pressed: Record<(String, Option<String>)>,
    set: Record<(String, String)>,
}

fn dialog_window() -> WindowInfo {
    WindowInfo {
        id: 0x40,
        title: "Name please".into(),
        class: "Zenity".into(),
        instance: "zenity".into(),
        pid: Some(7),
        geometry: stephost_plugin::desktop::Rect {
            x: 0,
            y: 0,
            width: 300,
            height: 120,
        },
        focused: true,
    }
}

impl MockHost for Dialog {
    fn list_windows(&mut self) -> Result<Vec<WindowInfo>, DesktopError> {
        Ok(vec![dialog_window()])
    }
    fn get_window(&mut self, _: u64) -> Result<WindowInfo, DesktopError> {
        Ok(dialog_window())
    }
    fn status(&mut self) -> Result<(), DesktopError> {
        Ok(())
    }
    fn check_combo(&mut self, combo: &str) -> Result<(), DesktopError> {
        if combo.contains("Nope") {
            Err(DesktopError::Invalid("unknown key `Nope`".into()))
        } else {
            Ok(())
        }
    }
    fn window_tree(&mut self, _: u64, _: u32, _: u32) -> Result<Tree, DesktopError> {
        Ok(Tree {
            application: "zenity".into(),
            elements: vec![
                el("", "dialog", "Name please", &[], false),
                el("0", "label", "Your name:", &[], false),
                el("1", "text", "", &["activate"], true),
                el("2", "push button", "OK", &["click"], false),
            ],
            truncated: false,
        })
    }
    fn do_action(
        &mut self,
        _: u64,
        path: &str,
        _: Option<&str>,
        expect_name: Option<&str>,
    ) -> Result<Element, DesktopError> {
        self.pressed
            .borrow_mut()
            .push((path.into(), expect_name.map(str::to_owned)));
        Ok(el(path, "push button", "OK", &["click"], false))
    }
    fn set_text(
        &mut self,
        _: u64,
        path: &str,
        text: &str,
        _: Option<&str>,
    ) -> Result<Element, DesktopError> {
        self.set.borrow_mut().push((path.into(), text.into()));
        Ok(el(path, "text", "", &["activate"], true))
    }
}

use crate::a11y::tests::el;
use stephost_plugin::desktop::DesktopError;
use stephost_plugin::desktop::accessibility::{Element, Tree};
use stephost_plugin::desktop::windows::WindowInfo;
use stephost_plugin::mock::{self, MockHost};

#[test]
fn accessibility_verbs_find_elements_by_name_and_keep_the_name_they_saw() {
    let host = Dialog::default();
    let (pressed, set) = (host.pressed.clone(), host.set.clone());
    mock::install(host);
    let out = call(
        "ui_elements",
        json!({"target": "Name", "interactive": true}),
    )
    .expect("lists");
    let value = out.value_json();
    let paths: Vec<&str> = value["elements"]
        .as_array()
        .expect("elements")
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert_eq!(paths, ["0x40/1", "0x40/2"], "{value}");
    call(
        "set_text",
        json!({"target": "Name", "name": "your name", "text": "Ada"}),
    )
    .expect("set");
    assert_eq!(
        set.borrow().as_slice(),
        [("1".to_owned(), "Ada".to_owned())]
    );
    call(
        "press",
        json!({"target": "Name", "name": "ok", "role": "push button"}),
    )
    .expect("pressed");
    call("press", json!({"path": "0x40/2", "expect_name": "OK"})).expect("pressed by path");
    assert_eq!(
        pressed.borrow().as_slice(),
        [
            ("2".to_owned(), Some("OK".to_owned())),
            ("2".to_owned(), Some("OK".to_owned()))
        ]
    );
    let f = call("press", json!({"target": "Name", "name": "Cancel"})).expect_err("no such");
    assert_eq!(f.code, FailureCode::NotFound);
    assert!(!f.input_fired);
    mock::reset();
}

#[test]
fn checks_refuse_bad_keys_and_a_missing_bus_naming_the_field() {
    let check =
        |verb: &str, input: Value| stephost_plugin::check::<Desktop>(verb, &input.to_string());
    // No host installed: the bus is not there.
    let f = check("press", json!({"path": "0x40/2"})).expect_err("no bus");
    assert_eq!(f.code, FailureCode::Unsupported);
    assert!(
        check("click", json!({"x": 1, "y": 2})).is_ok(),
        "unchecked verbs pass"
    );
    mock::install(Dialog::default());
    assert!(check("press", json!({"path": "0x40/2"})).is_ok());
    assert!(check("key", json!({"combo": "ctrl+a"})).is_ok());
    let f = check("key", json!({"combo": "ctrl+Nope"})).expect_err("bad key");
    assert_eq!(f.code, FailureCode::InvalidInput);
    assert!(f.details.contains("combo"), "{}", f.details);
    assert!(check("wait_for", json!({"condition": "screen_settles"})).is_ok());
    mock::reset();
}

#[test]
fn bad_input_names_the_field() {
    let f = call("sleep", json!({"ms": 70000})).expect_err("too long");
    assert_eq!(f.code, FailureCode::InvalidInput);
    assert!(f.details.contains("ms"), "{}", f.details);
    let f = call("click", json!({"x": 1})).expect_err("no y");
    assert!(f.message.contains("`y`"), "{}", f.message);
    let f = call("wait_for", json!({"condition": "soon"})).expect_err("bad condition");
    assert!(f.message.contains("soon"));
    assert_eq!(
        call("nope", json!({})).expect_err("unknown").code,
        FailureCode::InvalidInput
    );
}

#[test]
fn sleep_sleeps() {
    let out = call("sleep", json!({"ms": 5})).expect("sleeps");
    assert_eq!(
        serde_json::from_str::<Value>(&out.value).expect("json")["slept_ms"],
        5
    );
}

/// Clicks as (x, y, the window the host was to check).
type Clicks = std::rc::Rc<std::cell::RefCell<Vec<(i32, i32, Option<u64>)>>>;

/// A desktop with two windows that records the clicks it gets.
struct FakeDesktop {
    clicks: Clicks,
}

fn window(id: u64, title: &str, x: i32, focused: bool) -> windows::WindowInfo {
    windows::WindowInfo {
        id,
        title: title.into(),
        class: "Tk".into(),
        instance: "tk".into(),
        pid: None,
        geometry: stephost_plugin::desktop::Rect {
            x,
            y: 0,
            width: 100,
            height: 50,
        },
        focused,
    }
}

impl stephost_plugin::mock::MockHost for FakeDesktop {
    fn list_windows(&mut self) -> Result<Vec<windows::WindowInfo>, DesktopError> {
        Ok(vec![
            window(1, "notes", 0, true),
            window(2, "mail", 200, false),
        ])
    }
    fn window_manager(&mut self) -> Result<Option<String>, DesktopError> {
        Ok(None)
    }
    fn click(
        &mut self,
        x: i32,
        y: i32,
        _: stephost_plugin::desktop::input::MouseButton,
        _: u32,
        expect: Option<stephost_plugin::desktop::input::Expectation>,
    ) -> Result<(), DesktopError> {
        self.clicks
            .borrow_mut()
            .push((x, y, expect.map(|e| e.window)));
        Ok(())
    }
}

#[test]
fn verbs_reach_the_desktop_through_the_sdk_mock_host() {
    stephost_plugin::mock::reset();
    // Without a desktop, capability calls fail as unsupported, without aborting.
    let f = call("list_windows", json!({})).expect_err("no desktop natively");
    assert_eq!(f.code, FailureCode::Unsupported);

    let clicks = Clicks::default();
    stephost_plugin::mock::install(FakeDesktop {
        clicks: std::rc::Rc::clone(&clicks),
    });
    let out = call("list_windows", json!({"title": "mail"})).expect("lists");
    let value: Value = serde_json::from_str(&out.value).expect("json");
    assert_eq!(value["windows"].as_array().map(Vec::len), Some(1));
    assert_eq!(value["windows"][0]["title"], "mail");

    // Window-relative coordinates on the focused target, checked by the host.
    let out = call(
        "click",
        json!({"x": 10, "y": 5, "target": "notes", "window_relative": true}),
    )
    .expect("clicks");
    assert_eq!(*clicks.borrow(), [(10, 5, Some(1))]);
    assert!(out.texts()[0].contains("on \"notes\""), "{:?}", out.texts());
    stephost_plugin::mock::reset();
}
