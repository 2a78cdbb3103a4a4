//! Native unit tests of the verbs, through the SDK's dispatch (the same one the
//! component's `invoke` runs). `log` goes to the SDK's mock host natively.

use serde_json::{Value, json};
use stephost_plugin::{Content, mock};

use super::*;

fn call(verb: &str, input: Value) -> Result<Output, Failure> {
    stephost_plugin::invoke::<Testkit>(verb, &input.to_string())
}

fn value(verb: &str, input: Value) -> Value {
    let output = call(verb, input).unwrap_or_else(|f| panic!("{verb} failed: {}", f.message));
    serde_json::from_str(&output.value).unwrap()
}

fn failure(verb: &str, input: Value) -> Failure {
    match call(verb, input) {
        Ok(output) => panic!("{verb} succeeded with {}", output.value),
        Err(failure) => failure,
    }
}

#[test]
fn describe_lists_closed_object_schemas() {
    let info = stephost_plugin::describe::<Testkit>();
    assert_eq!(info.name, "testkit");
    let names: Vec<&str> = info.verbs.iter().map(|v| v.name.as_str()).collect();
    let expected = [
        "echo", "sleep", "spin", "alloc", "fail", "flaky", "count", "panic", "log", "image",
    ];
    assert_eq!(names, expected);
    for verb in &info.verbs {
        let schema: Value = serde_json::from_str(&verb.input_schema).unwrap();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert_eq!(schema["type"], "object", "{}", verb.name);
        assert_eq!(schema["additionalProperties"], false, "{}", verb.name);
        assert_eq!(verb.acts_on_world, verb.name == "fail", "{}", verb.name);
    }
}

#[test]
fn echo_returns_the_value_and_its_json() {
    let output = call("echo", json!({ "value": { "a": [1, "x", null] } })).unwrap();
    assert_eq!(output.value, r#"{"a":[1,"x",null]}"#);
    assert!(matches!(&output.content[..], [Content::Text(t)] if *t == output.value));
}

#[test]
fn sleep_and_alloc_report_what_they_did() {
    assert_eq!(value("sleep", json!({ "ms": 1 })), json!({ "slept_ms": 1 }));
    assert_eq!(
        value("alloc", json!({ "mib": 2 })),
        json!({ "allocated_mib": 2 })
    );
}

#[test]
fn fail_uses_defaults_and_overrides() {
    let f = failure("fail", json!({}));
    assert_eq!(
        (f.code.as_str(), f.message.as_str(), f.input_fired),
        ("failed", "requested failure", true)
    );
    let f = failure(
        "fail",
        json!({ "code": "not-found", "message": "m", "input_fired": false }),
    );
    assert_eq!(
        (f.code.as_str(), f.message.as_str(), f.input_fired),
        ("not-found", "m", false)
    );
}

#[test]
fn flaky_fails_then_succeeds_and_starts_over() {
    for _round in 0..2 {
        for _ in 0..2 {
            let f = failure("flaky", json!({ "failures": 2 }));
            assert_eq!((f.code.as_str(), f.input_fired), ("world-moved", false));
        }
        assert_eq!(
            value("flaky", json!({ "failures": 2 })),
            json!({ "calls": 3 })
        );
    }
    assert_eq!(
        value("flaky", json!({ "failures": 0 })),
        json!({ "calls": 1 })
    );
}

#[test]
fn count_counts_per_instance() {
    assert_eq!(value("count", json!({})), json!(1));
    assert_eq!(value("count", json!({})), json!(2));
    mock::reset();
    assert_eq!(value("count", json!({})), json!(1), "a fresh instance");
}

#[test]
fn log_writes_to_the_host_log() {
    mock::reset();
    assert_eq!(
        value("log", json!({ "message": "hi", "level": "warn" })),
        Value::Null
    );
    value("log", json!({ "message": "default level" }));
    assert_eq!(
        mock::take_logs(),
        [
            (Level::Warn, "hi".to_owned()),
            (Level::Info, "default level".to_owned())
        ]
    );
}

#[test]
fn fail_lifts_old_style_recovery_details_into_the_typed_fields() {
    let details = json!({
        "classification": "stuck",
        "recovery": [
            {"name": "bump", "tier": 2, "description": "count once",
             "actions": [{"verb": "count", "input": {}}]},
            {"tier": 2, "actions": []},
        ],
        "note": "kept",
    });
    let f = failure("fail", json!({ "details": details }));
    assert_eq!(f.classification.as_deref(), Some("stuck"));
    assert_eq!(
        f.recovery,
        [
            RecoveryStrategy::new("bump", 2)
                .with_description("count once")
                .with_action(RecoveryAction::new("count", json!({}))),
            // Malformed stays visible (an empty name) for the host to report.
            RecoveryStrategy::new("", 2),
        ]
    );
    assert_eq!(f.details_json(), json!({ "note": "kept" }));
    // Details without those keys pass through unchanged; none means none.
    let f = failure("fail", json!({ "details": { "field": "ms" } }));
    assert_eq!(
        (f.details.as_str(), f.recovery.len()),
        (r#"{"field":"ms"}"#, 0)
    );
    assert_eq!(failure("fail", json!({})).details, "");
}

#[test]
fn image_returns_a_png_and_a_text_item() {
    let output = call(
        "image",
        json!({ "width": 3, "height": 2, "color": [0, 128, 255] }),
    )
    .unwrap();
    assert_eq!(output.value, r#"{"height":2,"width":3}"#);
    match &output.content[..] {
        [Content::Image(image), Content::Text(text)] => {
            assert_eq!(image.mime, "image/png");
            assert_eq!(image.data, png::solid_rgb(3, 2, [0, 128, 255]));
            assert!(text.contains("3x2"), "{text}");
        }
        other => panic!("unexpected content: {} items", other.len()),
    }
}

#[test]
#[should_panic(expected = "boom")]
fn panic_panics_with_the_message() {
    let _ = call("panic", json!({ "message": "boom" }));
}

#[test]
fn bad_input_names_the_problem() {
    let f = failure("nope", json!({}));
    assert_eq!((f.code.as_str(), f.input_fired), ("invalid-input", false));
    assert!(
        f.message.contains("`nope`") && f.message.contains("echo, sleep"),
        "{}",
        f.message
    );

    let cases = [
        ("sleep", json!({}), "ms"),
        ("sleep", json!({ "ms": -1 }), "ms"),
        ("sleep", json!({ "ms": 3_600_001 }), "ms"),
        ("alloc", json!({ "mib": "1" }), "mib"),
        ("echo", json!({ "value": 1, "extra": 2 }), "extra"),
        ("fail", json!({ "input_fired": "yes" }), "input_fired"),
        ("log", json!({ "message": "m", "level": "loud" }), "level"),
        (
            "image",
            json!({ "width": 1, "height": 1, "color": [1, 2] }),
            "color",
        ),
        ("image", json!({ "width": 4097, "height": 1 }), "width"),
    ];
    for (verb, input, field) in cases {
        let f = failure(verb, input.clone());
        assert_eq!(f.code, FailureCode::InvalidInput, "{verb} {input}");
        assert!(
            f.message.contains(&format!("`{field}`")),
            "{verb} {input}: {}",
            f.message
        );
        assert_eq!(f.details, json!({ "field": field }).to_string());
    }
    let f = stephost_plugin::invoke::<Testkit>("count", "[1]").unwrap_err();
    assert_eq!(f.code, FailureCode::InvalidInput);
    let f = stephost_plugin::invoke::<Testkit>("count", "{").unwrap_err();
    assert!(f.message.contains("not valid JSON"), "{}", f.message);
}
