//! The SDK's own tests, run natively: a small plugin through the same `describe`
//! and `invoke` the component uses, the input getters, the failure builders and
//! the mock host.

use serde_json::{Value, json};

use crate::desktop::windows::{self, WindowInfo};
use crate::desktop::{DesktopError, Rect};
use crate::webdriver::{self, SessionError, SessionInfo};
use crate::*;

/// A plugin with state, a closed and an open schema, and an acting verb.
struct Probe;

#[derive(Default)]
struct Calls {
    count: u32,
}

impl Plugin for Probe {
    const NAME: &'static str = "probe";
    const VERSION: &'static str = "1.2.3";
    const DESCRIPTION: &'static str = "Test plugin.";
    type State = Calls;

    fn verbs() -> Vec<Verb<Calls>> {
        let closed = json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}, "label": {"type": "string"}},
            "additionalProperties": false,
        });
        vec![
            Verb::new("count", "Counts calls.", closed, count)
                .with_output_schema(json!({"type": "integer"})),
            Verb::new("open", "Takes anything.", json!({"type": "object"}), open),
            Verb::new(
                "act",
                "Acts.",
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
                act,
            )
            .acts_on_world(true),
        ]
    }
}

fn count(calls: &mut Calls, args: &Args) -> Result<Output, Failure> {
    calls.count += u32::try_from(args.opt_int("n", 1..=10)?.unwrap_or(1)).unwrap_or(1);
    log(Level::Info, &format!("count is {}", calls.count));
    Ok(Output::new(json!(calls.count)))
}

fn open(_: &mut Calls, args: &Args) -> Result<Output, Failure> {
    Ok(Output::new(Value::Object(args.map().clone())).with_text("as given"))
}

fn act(_: &mut Calls, _: &Args) -> Result<Output, Failure> {
    Err(Failure::new("stuck", "could not act")
        .with_classification("stuck")
        .with_recovery(
            RecoveryStrategy::new("nudge", 1)
                .with_description("Count, then retry")
                .with_action(RecoveryAction::new("count", json!({"n": 2}))),
        ))
}

fn call(verb: &str, input: Value) -> Result<Output, Failure> {
    invoke::<Probe>(verb, &input.to_string())
}

#[test]
fn describe_is_the_table_without_handlers() {
    let info = describe::<Probe>();
    assert_eq!(
        (
            info.name.as_str(),
            info.version.as_str(),
            info.bare_tool_names
        ),
        ("probe", "1.2.3", false)
    );
    let names: Vec<&str> = info.verbs.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["count", "open", "act"]);
    assert_eq!(info.verbs[0].output_schema, r#"{"type":"integer"}"#);
    assert_eq!(info.verbs[1].output_schema, "");
    let schema: Value = serde_json::from_str(&info.verbs[0].input_schema).unwrap();
    assert_eq!(schema["additionalProperties"], false);
    let acting: Vec<bool> = info.verbs.iter().map(|v| v.acts_on_world).collect();
    assert_eq!(acting, [false, false, true]);
}

#[test]
fn state_lives_as_long_as_the_instance() {
    mock::reset();
    assert_eq!(call("count", json!({})).unwrap().value, "1");
    assert_eq!(call("count", json!({"n": 3})).unwrap().value, "4");
    mock::reset();
    assert_eq!(call("count", json!({})).unwrap().value, "1");
    // A caller's own state goes through the same table.
    let mut mine = Calls { count: 41 };
    let out = invoke_with::<Probe>(&mut mine, "count", "{}").unwrap();
    assert_eq!((out.value_json(), mine.count), (json!(42), 42));
}

#[test]
fn log_lines_go_to_the_mock_buffer_natively() {
    mock::reset();
    call("count", json!({})).unwrap();
    log(Level::Warn, "direct");
    assert_eq!(
        mock::take_logs(),
        [
            (Level::Info, "count is 1".to_owned()),
            (Level::Warn, "direct".to_owned())
        ]
    );
    assert!(mock::take_logs().is_empty());
}

#[test]
fn unknown_verbs_and_fields_are_invalid_input_that_fired_nothing() {
    let f = call("nope", json!({})).unwrap_err();
    assert_eq!((f.code.as_str(), f.input_fired), ("invalid-input", false));
    assert_eq!(
        f.message,
        "probe has no verb `nope`; its verbs are: count, open, act"
    );
    assert_eq!(
        f.details_json(),
        json!({"verb": "nope", "known_verbs": ["count", "open", "act"]})
    );

    // Closed schemas refuse fields they do not list, naming them (in key order).
    let f = call("count", json!({"m": 1})).unwrap_err();
    assert_eq!(f.message, "unknown field `m`; expected one of: label, n");
    assert_eq!(f.details_json(), json!({"field": "m"}));
    let f = call("act", json!({"x": 1})).unwrap_err();
    assert_eq!(f.message, "unknown field `x`; this verb takes no fields");
    // Open ones pass everything through.
    let out = call("open", json!({"anything": [1]})).unwrap();
    assert_eq!(out.value_json(), json!({"anything": [1]}));
    assert_eq!(out.texts(), ["as given"]);

    let f = invoke::<Probe>("count", "[1]").unwrap_err();
    assert_eq!(f.message, "input must be a JSON object, got `[1]`");
    assert_eq!(f.details, "", "the input as a whole names no field");
    let f = invoke::<Probe>("count", "{").unwrap_err();
    assert!(
        f.message.starts_with("input is not valid JSON: "),
        "{}",
        f.message
    );
    // Empty input is `{}`.
    invoke::<Probe>("count", " ").unwrap();
}

#[test]
fn failures_carry_typed_codes_classification_and_recovery() {
    let f = call("act", json!({})).unwrap_err();
    assert_eq!(f.code, FailureCode::Other("stuck".into()));
    assert!(
        f.input_fired,
        "input fired unless the plugin says otherwise"
    );
    assert_eq!(f.details, "");
    assert_eq!(f.classification.as_deref(), Some("stuck"));
    assert_eq!(
        f.recovery,
        [RecoveryStrategy {
            name: "nudge".into(),
            tier: 1,
            description: Some("Count, then retry".into()),
            actions: vec![RecoveryAction {
                verb: "count".into(),
                input: r#"{"n":2}"#.into(),
                description: None,
            }],
        }]
    );
    assert_eq!(f.recovery[0].actions[0].input_json(), json!({"n": 2}));

    let f = Failure::invalid_input("bad").with_field("ms");
    assert_eq!(
        (f.input_fired, f.details.as_str()),
        (false, r#"{"field":"ms"}"#)
    );
    assert_eq!(Failure::invalid_input("bad").with_field("").details, "");
    let f = Failure::new(FailureCode::NotFound, "gone")
        .with_input_fired(false)
        .with_details(json!({"id": 7}));
    assert_eq!(
        (f.code.as_str(), f.details_json()),
        ("not-found", json!({"id": 7}))
    );
    assert_eq!(
        Failure::new("failed", "x")
            .with_details(Value::Null)
            .details,
        ""
    );
}

#[test]
fn well_known_codes_never_travel_as_other() {
    for name in [
        "invalid-input",
        "not-found",
        "world-moved",
        "timeout",
        "denied",
        "unsupported",
        "failed",
    ] {
        let code = FailureCode::from_name(name);
        assert!(!matches!(code, FailureCode::Other(_)), "{name}");
        assert_eq!(code.as_str(), name);
        assert_eq!(code.to_string(), name);
    }
    assert_eq!(
        FailureCode::from("dialog-open"),
        FailureCode::Other("dialog-open".into())
    );
    assert_eq!(FailureCode::from(String::new()).as_str(), "");
}

#[test]
fn getters_check_types_and_ranges_and_name_the_field() {
    let args = Args::parse(
        r#"{"s": "x", "n": 5, "whole": 5.0, "half": 2.5, "b": true, "nil": null, "big": 1e300}"#,
    )
    .unwrap();
    assert_eq!(args.str("s").unwrap(), "x");
    assert_eq!(args.str_or("missing", "dflt").unwrap(), "dflt");
    assert_eq!(
        args.str_or("nil", "dflt").unwrap(),
        "dflt",
        "null is not given"
    );
    assert_eq!(args.opt_str("nil").unwrap(), None);
    assert_eq!(args.value("nil").unwrap(), &Value::Null, "but is a value");
    assert!(args.get("nil").is_none());
    assert_eq!(args.int("n", 0..=10).unwrap(), 5);
    assert_eq!(args.int("whole", 0..=10).unwrap(), 5);
    assert_eq!(args.opt_number("half", 0.0..=3.0).unwrap(), Some(2.5));
    assert!(args.boolean("b", false).unwrap());
    assert!(args.boolean("missing", true).unwrap());

    let message = |r: Result<_, Failure>| {
        let f = r.map(|_: ()| ()).unwrap_err();
        assert_eq!(f.code, FailureCode::InvalidInput);
        assert!(!f.input_fired);
        (f.message.clone(), f.details_json()["field"].clone())
    };
    let cases = [
        (
            message(args.str("missing").map(drop)),
            "missing required field `missing`",
            "missing",
        ),
        (
            message(args.str("n").map(drop)),
            "`n` must be a string; got `5`",
            "n",
        ),
        (
            message(args.int("n", 6..=9).map(drop)),
            "`n` must be an integer from 6 to 9; got `5`",
            "n",
        ),
        (
            message(args.int("half", 0..=9).map(drop)),
            "`half` must be an integer from 0 to 9; got `2.5`",
            "half",
        ),
        (
            message(args.int("big", i64::MIN..=i64::MAX).map(drop)),
            "`big` must be an integer; got `1e+300`",
            "big",
        ),
        (
            message(args.opt_number("s", 0.0..=1.0).map(drop)),
            "`s` must be a number from 0 to 1; got `\"x\"`",
            "s",
        ),
        (
            message(args.opt_number("s", f64::MIN..=f64::MAX).map(drop)),
            "`s` must be a number; got `\"x\"`",
            "s",
        ),
        (
            message(args.boolean("s", false).map(drop)),
            "`s` must be true or false; got `\"x\"`",
            "s",
        ),
    ];
    for ((got, field), want, want_field) in cases {
        assert_eq!(got, want);
        assert_eq!(field, want_field);
    }
}

#[test]
fn capabilities_answer_like_a_host_without_them_until_a_test_installs_one() {
    mock::reset();
    assert!(matches!(
        webdriver::session(),
        Err(SessionError::Unavailable(_))
    ));
    assert!(matches!(
        windows::list_windows(),
        Err(DesktopError::Unsupported(_))
    ));

    struct OneWindow;
    impl mock::MockHost for OneWindow {
        fn session(&mut self) -> Result<SessionInfo, SessionError> {
            Ok(SessionInfo {
                url: "http://127.0.0.1:1/session/s".into(),
                browser: "chromium".into(),
                capabilities: "{}".into(),
            })
        }
        fn list_windows(&mut self) -> Result<Vec<WindowInfo>, DesktopError> {
            Ok(vec![WindowInfo {
                id: 1,
                title: "xterm".into(),
                class: "XTerm".into(),
                instance: "xterm".into(),
                pid: None,
                geometry: Rect {
                    x: 0,
                    y: 0,
                    width: 10,
                    height: 10,
                },
                focused: true,
            }])
        }
    }
    mock::install(OneWindow);
    assert_eq!(webdriver::session().unwrap().browser, "chromium");
    assert_eq!(windows::list_windows().unwrap()[0].title, "xterm");
    // What the fake does not override still answers "not available".
    assert!(matches!(
        windows::window_manager(),
        Err(DesktopError::Unsupported(_))
    ));
    webdriver::end_session();
    mock::reset();
    assert!(webdriver::session().is_err());
}

#[test]
fn levels_have_their_contract_names() {
    for level in [
        Level::Trace,
        Level::Debug,
        Level::Info,
        Level::Warn,
        Level::Error,
    ] {
        assert_eq!(Level::from_name(level.name()), Some(level));
    }
    assert_eq!(Level::from_name("loud"), None);
}
