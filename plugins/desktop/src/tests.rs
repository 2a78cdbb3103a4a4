//! Native unit tests of what needs no host: the catalogue, argument checks
//! and the verbs that answer without calling a capability.

use serde_json::{Value, json};

use super::*;

fn call(verb: &str, input: Value) -> Result<Output, Failure> {
    Desktop::invoke(verb.into(), input.to_string())
}

#[test]
fn describe_lists_every_verb_with_a_closed_object_schema() {
    let info = Desktop::describe();
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
    for verb in ["press", "set_text"] {
        let f = call(verb, json!({"path": "a/b", "text": "x"})).expect_err("unsupported");
        assert_eq!(f.code, "unsupported");
        assert!(!f.input_fired);
    }
}

#[test]
fn bad_input_names_the_field() {
    let f = call("sleep", json!({"ms": 70000})).expect_err("too long");
    assert_eq!(f.code, "invalid-input");
    assert!(f.details.contains("ms"), "{}", f.details);
    let f = call("click", json!({"x": 1})).expect_err("no y");
    assert!(f.message.contains("`y`"), "{}", f.message);
    let f = call("wait_for", json!({"condition": "soon"})).expect_err("bad condition");
    assert!(f.message.contains("soon"));
    assert_eq!(
        call("nope", json!({})).expect_err("unknown").code,
        "invalid-input"
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
