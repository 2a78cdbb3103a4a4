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

#[test]
fn accessibility_verbs_are_unsupported_and_fire_nothing() {
    // Inputs valid for each verb's schema: the SDK refuses fields a schema lacks.
    let cases = [
        ("press", json!({"path": "a/b"})),
        ("set_text", json!({"path": "a/b", "text": "x"})),
    ];
    for (verb, input) in cases {
        let f = call(verb, input).expect_err("unsupported");
        assert_eq!(f.code, FailureCode::Unsupported);
        assert!(!f.input_fired);
    }
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
