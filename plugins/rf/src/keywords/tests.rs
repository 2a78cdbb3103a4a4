//! Keyword tests through the engine. Expected values and messages are Robot Framework's
//! (the differential test in tests/rf checks hundreds more against RF itself).

use crate::engine::{Level, Session};
use crate::error::Code;
use crate::remote::{HttpError, Transport};
use crate::value::Value;
use crate::variables::Arg;

struct NoNetwork;

impl Transport for NoNetwork {
    fn post(&mut self, _: &str, _: &[u8], _: Option<f64>) -> Result<Vec<u8>, HttpError> {
        Err("[Errno 111] Connection refused".into())
    }
}

fn session() -> Session {
    Session::new(Box::new(NoNetwork))
}

fn raw(args: &[&str]) -> Vec<Arg> {
    args.iter().map(|a| Arg::Raw(a.to_string())).collect()
}

fn ok(s: &mut Session, kw: &str, args: &[&str]) -> Value {
    s.run(kw, &raw(args))
        .unwrap_or_else(|e| panic!("{kw} {args:?} failed: {}", e.message))
}

fn err(s: &mut Session, kw: &str, args: &[&str]) -> (Code, String) {
    match s.run(kw, &raw(args)) {
        Ok(v) => panic!("{kw} {args:?} passed with {}", v.repr()),
        Err(e) => (e.code, e.message),
    }
}

#[test]
fn variables_live_on_between_calls() {
    let mut s = session();
    ok(&mut s, "Set Test Variable", &["${greeting}", "hello"]);
    assert_eq!(
        ok(&mut s, "Catenate", &["${greeting}", "world"]).repr(),
        "'hello world'"
    );
    let list = ok(&mut s, "Create List", &["a", "b"]);
    s.assign("items", list).unwrap();
    ok(&mut s, "Append To List", &["${items}", "c"]);
    assert_eq!(ok(&mut s, "Get Length", &["${items}"]).repr(), "3");
    assert_eq!(s.take_logs().last().unwrap().message, "Length is 3.");
}

#[test]
fn names_match_like_rf() {
    let mut s = session();
    for name in [
        "should be equal",
        "Should_Be_Equal",
        "BuiltIn.Should Be Equal",
        "Then Should Be Equal",
    ] {
        ok(&mut s, name, &["x", "x"]);
    }
    let (code, message) = err(&mut s, "Shuld Be Equal", &["a", "b"]);
    assert_eq!(code, Code::NotFound);
    assert_eq!(
        message,
        "No keyword with name 'Shuld Be Equal' found. Did you mean:\n    BuiltIn.Should Be Equal\n    BuiltIn.Should Not Be Equal"
    );
}

#[test]
fn argument_errors_are_invalid_input() {
    let mut s = session();
    let (code, message) = err(&mut s, "Should Be Equal", &["a"]);
    assert_eq!(code, Code::InvalidInput);
    assert_eq!(
        message,
        "Keyword 'BuiltIn.Should Be Equal' expected 2 to 10 arguments, got 1."
    );
    let (code, message) = err(&mut s, "Get From List", &["[1]", "x"]);
    assert_eq!(code, Code::InvalidInput);
    assert_eq!(
        message,
        "ValueError: Argument 'index' got value 'x' that cannot be converted to integer."
    );
    let (code, _) = err(&mut s, "Fail", &["boom"]);
    assert_eq!(code, Code::Failed);
}

#[test]
fn verification_messages() {
    let mut s = session();
    assert_eq!(
        err(&mut s, "Should Be Equal", &["1", "${1}"]).1,
        "1 (string) != 1 (integer)"
    );
    assert_eq!(
        err(&mut s, "Should Contain", &["abc", "z", "msg=nope"]).1,
        "nope: 'abc' does not contain 'z'"
    );
    assert_eq!(
        err(&mut s, "Should Be True", &["1 > 2"]).1,
        "'1 > 2' should be true."
    );
    assert_eq!(
        err(&mut s, "Convert To Integer", &["abc"]).1,
        "ValueError: 'abc' cannot be converted to an integer: invalid literal for int() with base 10: 'abc'"
    );
    assert_eq!(
        ok(
            &mut s,
            "Should Match Regexp",
            &["Bar: 43", "(Bar): (\\\\d+)"]
        )
        .repr(),
        "['Bar: 43', 'Bar', '43']"
    );
}

#[test]
fn run_keyword_family() {
    let mut s = session();
    assert_eq!(
        ok(&mut s, "Run Keyword And Ignore Error", &["Fail", "oops"]).repr(),
        "('FAIL', 'oops')"
    );
    assert_eq!(
        ok(
            &mut s,
            "Run Keyword And Return Status",
            &["Should Be Equal", "a", "a"]
        )
        .repr(),
        "True"
    );
    assert_eq!(
        ok(
            &mut s,
            "Run Keyword If",
            &["1 == 2", "Set Variable", "a", "ELSE", "Set Variable", "b"]
        )
        .repr(),
        "'b'"
    );
    assert_eq!(
        err(
            &mut s,
            "Wait Until Keyword Succeeds",
            &["2x", "1ms", "Fail", "never"]
        )
        .1,
        "Keyword 'Fail' failed after retrying 2 times. The last error was: never"
    );
    assert_eq!(
        err(
            &mut s,
            "Run Keywords",
            &[
                "Fail",
                "a",
                "AND",
                "Run Keyword And Continue On Failure",
                "Fail",
                "b"
            ]
        )
        .1,
        "a"
    );
    let e = s
        .run(
            "Run Keyword And Continue On Failure",
            &raw(&["Fail", "soft"]),
        )
        .unwrap_err();
    assert!(e.continuable);
    let e = s.run("Fatal Error", &raw(&["stop"])).unwrap_err();
    assert!(e.fatal && !e.catchable());
    let e = s
        .run(
            "Run Keyword And Ignore Error",
            &raw(&["Pass Execution", "done"]),
        )
        .unwrap_err();
    assert!(e.pass, "Pass Execution goes through wrappers");
}

#[test]
fn keywords_needing_a_test_say_so() {
    let mut s = session();
    let (code, message) = err(&mut s, "Set Tags", &["x"]);
    assert_eq!(code, Code::Failed);
    assert!(
        message.contains("'BuiltIn.Set Tags' is not supported in the rf sandbox"),
        "{message}"
    );
    assert_eq!(
        err(&mut s, "Exit For Loop", &[]).1,
        "'Exit For Loop' can only be used inside a loop."
    );
}

#[test]
fn log_levels_filter() {
    let mut s = session();
    ok(&mut s, "Log", &["hidden", "DEBUG"]);
    assert!(s.take_logs().is_empty());
    assert_eq!(ok(&mut s, "Set Log Level", &["DEBUG"]).repr(), "'INFO'");
    s.take_logs();
    ok(&mut s, "Log", &["shown", "DEBUG"]);
    let logs = s.take_logs();
    assert_eq!(
        (logs[0].level, logs[0].message.as_str()),
        (Level::Debug, "shown")
    );
}

#[test]
fn import_library() {
    let mut s = session();
    ok(&mut s, "Import Library", &["OperatingSystem"]);
    ok(&mut s, "Import Library", &["String", "AS", "Str"]);
    assert_eq!(
        ok(&mut s, "Str.Convert To Upper Case", &["x"]).repr(),
        "'X'"
    );
    assert!(
        err(&mut s, "Import Library", &["SeleniumLibrary"])
            .1
            .contains("Remote")
    );
    assert_eq!(
        err(&mut s, "Import Library", &["Remote", "127.0.0.1:1"]).1,
        "Getting keyword names from library 'Remote' failed: Calling dynamic method 'get_keyword_names' failed: Connecting remote server at http://127.0.0.1:1 failed: [Errno 111] Connection refused"
    );
}

#[test]
fn every_catalog_keyword_binds_its_spec() {
    // The specs come from RF's libdoc; each must parse into something sensible.
    for kw in super::registry() {
        let spec = &kw.spec;
        let names: Vec<&str> = spec.positional.iter().map(|p| p.name.as_str()).collect();
        assert!(
            names.iter().all(|n| !n.is_empty() && !n.contains(' ')),
            "{}: {names:?}",
            kw.info.name
        );
    }
    let implemented = super::registry().iter().filter(|k| k.run.is_some()).count();
    assert!(implemented >= 160, "{implemented} keywords implemented");
}
