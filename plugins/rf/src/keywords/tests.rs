//! Keyword tests through the engine. Expected values and messages are Robot Framework's
//! (the differential test in tests/rf checks hundreds more against RF itself).

use crate::engine::{Level, Session};
use crate::error::Code;
use crate::remote::{HttpError, Transport};
use crate::value::Value;
use crate::variables::Arg;

pub(crate) struct NoNetwork;

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

/// `kw` with `args` (raw text, as a batch step gives them), its result as it is.
pub(crate) fn call(s: &mut Session, kw: &str, args: &[&str]) -> crate::error::RfResult<Value> {
    s.run(kw, &raw(args))
}

pub(super) fn ok(s: &mut Session, kw: &str, args: &[&str]) -> Value {
    s.run(kw, &raw(args))
        .unwrap_or_else(|e| panic!("{kw} {args:?} failed: {}", e.message))
}

pub(super) fn err(s: &mut Session, kw: &str, args: &[&str]) -> (Code, String) {
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
    // Without granted folders there is nothing to read a resource file from.
    let (code, message) = err(&mut s, "Import Resource", &["x.resource"]);
    assert_eq!(code, Code::Denied);
    assert!(
        message.starts_with("Resource file '/x.resource' cannot be imported: the host grants the rf plugin no folders")
            && message.contains("[plugins.grants.rf]"),
        "{message}"
    );
    let (code, message) = err(&mut s, "Import Variables", &[]);
    assert_eq!(code, Code::InvalidInput, "{message}");
    assert_eq!(
        err(&mut s, "Get Library Instance", &["Nope"]).1,
        "No library 'Nope' found."
    );
    ok(&mut s, "Reload Library", &["string"]);
    assert!(
        s.take_logs()[0]
            .message
            .starts_with("Reloaded library String with ")
    );
    assert_eq!(
        err(&mut s, "Exit For Loop", &[]).1,
        "'Exit For Loop' can only be used inside a loop."
    );
}

#[test]
fn the_session_is_a_test_with_tags_message_and_metadata() {
    let mut s = session();
    ok(&mut s, "Set Tags", &["smoke", "B_2", "NONE", "b 2", ""]);
    assert_eq!(
        s.take_logs()[0].message,
        "Set tags 'smoke', 'B_2', 'NONE', 'b 2' and ''."
    );
    ok(&mut s, "Set Tags", &["Alpha"]);
    assert_eq!(
        ok(&mut s, "Set Variable", &["${TEST TAGS}"]).repr(),
        "['Alpha', 'B_2', 'smoke']"
    );
    ok(&mut s, "Remove Tags", &["sm*", "b2"]);
    assert_eq!(s.context.tags, ["Alpha"]);
    ok(&mut s, "Set Test Message", &["first"]);
    ok(
        &mut s,
        "Set Test Message",
        &["second", "append=yes", "separator=; "],
    );
    assert_eq!(s.context.message, "first; second");
    assert_eq!(
        s.take_logs().last().map(|l| l.message.clone()),
        Some("Set test message to:\nfirst; second".to_string())
    );
    ok(&mut s, "Set Test Documentation", &["doc"]);
    ok(&mut s, "Set Test Documentation", &["more", "append=True"]);
    assert_eq!(
        ok(&mut s, "Set Variable", &["${TEST DOCUMENTATION}"]).repr(),
        "'doc more'"
    );
    ok(&mut s, "Set Suite Metadata", &["Ver sion", "1"]);
    ok(
        &mut s,
        "Set Suite Metadata",
        &["version", "2", "append=True", "separator=."],
    );
    assert_eq!(
        ok(&mut s, "Set Variable", &["${SUITE METADATA}"]).repr(),
        "{'Ver sion': '1.2'}"
    );
    assert_eq!(
        s.take_logs().last().map(|l| l.message.clone()),
        Some("Set suite metadata 'version' to value '1.2'.".to_string())
    );
    ok(&mut s, "Set Task Metadata", &["k", "v"]);
    assert_eq!(
        s.context.test_metadata,
        [("k".to_string(), "v".to_string())]
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
    // A standard library the sandbox does not run fails, naming the way to it.
    let refused = err(&mut s, "Import Library", &["Telnet"]).1;
    assert!(
        refused.contains("'Telnet' is one of Robot Framework's standard libraries")
            && refused.contains("Remote"),
        "{refused}"
    );
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

/// Runs `kw` with `args`, then `Evaluate  $var` (the variable as it is now), returning
/// both: what the keyword returned and what the variable holds afterwards.
fn mutate(s: &mut Session, kw: &str, args: &[&str], var: &str) -> (String, String) {
    let returned = ok(s, kw, args).repr();
    let now = ok(s, "Evaluate", &[&format!("${var}")]).repr();
    (returned, now)
}

#[test]
fn collections_keywords_change_the_variable_in_place() {
    // RF 7.5's Collections.py: what each keyword does to its argument and returns.
    let mut s = session();
    let fresh_list = |s: &mut Session| {
        let list = ok(s, "Create List", &["a", "b", "c", "b"]);
        s.assign("L", list).unwrap();
    };
    let fresh_dict = |s: &mut Session| {
        let dict = ok(s, "Create Dictionary", &["a=1", "b=2", "c=3"]);
        s.assign("D", dict).unwrap();
    };
    let list_cases: &[(&str, &[&str], &str, &str)] = &[
        (
            "Append To List",
            &["${L}", "x", "y"],
            "['a', 'b', 'c', 'b', 'x', 'y']",
            "['a', 'b', 'c', 'b', 'x', 'y']",
        ),
        (
            "Insert Into List",
            &["${L}", "-1", "x"],
            "['a', 'b', 'c', 'x', 'b']",
            "['a', 'b', 'c', 'x', 'b']",
        ),
        (
            "Set List Value",
            &["${L}", "1", "x"],
            "['a', 'x', 'c', 'b']",
            "['a', 'x', 'c', 'b']",
        ),
        (
            "Remove Values From List",
            &["${L}", "b", "z"],
            "['a', 'c']",
            "['a', 'c']",
        ),
        ("Remove From List", &["${L}", "0"], "'a'", "['b', 'c', 'b']"),
        (
            "Reverse List",
            &["${L}"],
            "['b', 'c', 'b', 'a']",
            "['b', 'c', 'b', 'a']",
        ),
        (
            "Sort List",
            &["${L}"],
            "['a', 'b', 'b', 'c']",
            "['a', 'b', 'b', 'c']",
        ),
        // Not in place: a new list, the variable keeps its value.
        (
            "Remove Duplicates",
            &["${L}"],
            "['a', 'b', 'c']",
            "['a', 'b', 'c', 'b']",
        ),
        (
            "Copy List",
            &["${L}"],
            "['a', 'b', 'c', 'b']",
            "['a', 'b', 'c', 'b']",
        ),
    ];
    for (kw, args, returned, now) in list_cases {
        fresh_list(&mut s);
        assert_eq!(
            mutate(&mut s, kw, args, "L"),
            (returned.to_string(), now.to_string()),
            "{kw}"
        );
    }
    let dict_cases: &[(&str, &[&str], &str, &str)] = &[
        (
            "Set To Dictionary",
            &["${D}", "d", "4", "a=0"],
            "{'a': '0', 'b': '2', 'c': '3', 'd': '4'}",
            "{'a': '0', 'b': '2', 'c': '3', 'd': '4'}",
        ),
        (
            "Remove From Dictionary",
            &["${D}", "a", "x"],
            "{'b': '2', 'c': '3'}",
            "{'b': '2', 'c': '3'}",
        ),
        (
            "Pop From Dictionary",
            &["${D}", "b"],
            "'2'",
            "{'a': '1', 'c': '3'}",
        ),
        (
            "Pop From Dictionary",
            &["${D}", "x", "none"],
            "'none'",
            "{'a': '1', 'b': '2', 'c': '3'}",
        ),
        (
            "Keep In Dictionary",
            &["${D}", "c", "a"],
            "{'a': '1', 'c': '3'}",
            "{'a': '1', 'c': '3'}",
        ),
        (
            "Copy Dictionary",
            &["${D}"],
            "{'a': '1', 'b': '2', 'c': '3'}",
            "{'a': '1', 'b': '2', 'c': '3'}",
        ),
    ];
    for (kw, args, returned, now) in dict_cases {
        fresh_dict(&mut s);
        assert_eq!(
            mutate(&mut s, kw, args, "D"),
            (returned.to_string(), now.to_string()),
            "{kw} {args:?}"
        );
    }
    // A failing mutation leaves the variable as it was.
    fresh_list(&mut s);
    err(&mut s, "Set List Value", &["${L}", "9", "x"]);
    assert_eq!(
        ok(&mut s, "Evaluate", &["$L"]).repr(),
        "['a', 'b', 'c', 'b']"
    );
}

#[test]
fn mutations_reach_every_name_of_the_object() {
    let mut s = session();
    let list = ok(&mut s, "Create List", &["a"]);
    s.assign("a", list).unwrap();
    // `Set Variable` and `Set Test Variable` pass the same object on, as in Python.
    let alias = ok(&mut s, "Set Variable", &["${a}"]);
    s.assign("b", alias).unwrap();
    ok(&mut s, "Set Test Variable", &["${c}", "${a}"]);
    ok(&mut s, "Append To List", &["${b}", "x"]);
    ok(&mut s, "Append To List", &["${c}", "y"]);
    assert_eq!(ok(&mut s, "Evaluate", &["$a"]).repr(), "['a', 'x', 'y']");
    // `@{name} =` makes a new list, `Copy List` too: later changes do not reach them.
    let copied = ok(&mut s, "Set Variable", &["${a}"]);
    s.assign("@{d}", copied).unwrap();
    let copy = ok(&mut s, "Copy List", &["${a}"]);
    s.assign("e", copy).unwrap();
    ok(&mut s, "Append To List", &["${a}", "z"]);
    assert_eq!(ok(&mut s, "Get Length", &["${a}"]).repr(), "4");
    assert_eq!(ok(&mut s, "Get Length", &["${d}"]).repr(), "3");
    assert_eq!(ok(&mut s, "Get Length", &["${e}"]).repr(), "3");
    // Items reached with `${x}[i]` are the nested objects themselves.
    let nested = ok(&mut s, "Evaluate", &["[[1], {'k': []}]"]);
    s.assign("n", nested).unwrap();
    ok(&mut s, "Append To List", &["${n}[0]", "${2}"]);
    ok(&mut s, "Set To Dictionary", &["${n}[1]", "j=${3}"]);
    ok(&mut s, "Append To List", &["${n}[1][k]", "v"]);
    assert_eq!(
        ok(&mut s, "Evaluate", &["$n"]).repr(),
        "[[1, 2], {'k': ['v'], 'j': 3}]"
    );
    // `&{name}` variables are DotDicts that the dictionary keywords change in place.
    let dict = ok(&mut s, "Create Dictionary", &["a=1"]);
    s.assign("&{dd}", dict).unwrap();
    ok(&mut s, "Set To Dictionary", &["${dd}", "b=2"]);
    assert_eq!(ok(&mut s, "Get Length", &["${dd}"]).repr(), "2");
    assert_eq!(ok(&mut s, "Set Variable", &["${dd.b}"]).repr(), "'2'");
}

#[test]
fn mutations_through_run_keyword_wrappers() {
    let mut s = session();
    let list = ok(&mut s, "Create List", &[]);
    s.assign("L", list).unwrap();
    ok(&mut s, "Run Keyword", &["Append To List", "${L}", "a"]);
    ok(
        &mut s,
        "Run Keyword If",
        &["True", "Append To List", "${L}", "b"],
    );
    ok(
        &mut s,
        "Run Keyword If",
        &[
            "len($L) > 5",
            "Fail",
            "no",
            "ELSE",
            "Insert Into List",
            "${L}",
            "0",
            "c",
        ],
    );
    ok(
        &mut s,
        "Run Keywords",
        &["Append To List", "${L}", "d", "AND", "Reverse List", "${L}"],
    );
    ok(
        &mut s,
        "Run Keyword And Ignore Error",
        &["Remove From List", "${L}", "0"],
    );
    ok(
        &mut s,
        "Wait Until Keyword Succeeds",
        &["3x", "1ms", "Append To List", "${L}", "e"],
    );
    // Each attempt that gets as far as the keyword changes the list: the third passes.
    ok(
        &mut s,
        "Wait Until Keyword Succeeds",
        &[
            "5x",
            "1ms",
            "Run Keywords",
            "Append To List",
            "${L}",
            "f",
            "AND",
            "Should Be True",
            "$L.count('f') == 3",
        ],
    );
    ok(
        &mut s,
        "Repeat Keyword",
        &["2 times", "Append To List", "${L}", "g"],
    );
    assert_eq!(
        ok(&mut s, "Evaluate", &["$L"]).repr(),
        "['b', 'a', 'c', 'e', 'f', 'f', 'f', 'g', 'g']"
    );
}

#[test]
fn case_folds_and_strings_compare_in_nfc() {
    let mut s = session();
    ok(
        &mut s,
        "Should Be Equal",
        &["Straße", "STRASSE", "ignore_case=True"],
    );
    ok(
        &mut s,
        "Should Contain",
        &["Straße", "SS", "ignore_case=True"],
    );
    ok(&mut s, "Should Be Equal As Strings", &["Å", "A\u{30a}"]);
    ok(&mut s, "Should Be Equal As Strings", &["Å", "\u{212b}"]);
    assert_eq!(
        err(
            &mut s,
            "Should Be Equal",
            &["Ä", "A\u{308}", "formatter=repr"]
        )
        .1,
        "'Ä' (string) != 'Ä' (string)"
    );
    let nfc = ok(&mut s, "Convert To String", &["hyva\u{308}"]);
    assert_eq!(nfc.repr(), "'hyvä'");
    assert_eq!(
        err(&mut s, "Get Variable Value", &["notvar"]).1,
        "Invalid variable name 'notvar'."
    );
    assert_eq!(
        err(&mut s, "Log", &["${42}", "formatter=len"]).1,
        "TypeError: object of type 'int' has no len()"
    );
}

#[test]
fn text_arguments_on_bytes_must_fit_latin1_as_in_rf() {
    let mut s = session();
    let refused = "ValueError: String 'BĀD' cannot be converted to bytes: Characters must \
                   have code point below 256, but 'Ā' has code point 256.";
    for (keyword, args) in [
        ("Replace String", &["${{b'xxx'}}", "OK", "BĀD"][..]),
        ("Replace String", &["${{b'xxx'}}", "BĀD", "OK"][..]),
        (
            "Replace String Using Regexp",
            &["${{b'xxx'}}", "BĀD", "OK"][..],
        ),
        ("Convert To Title Case", &["${{b'xxx'}}", "BĀD"][..]),
        ("Split String", &["${{b'a b'}}", "BĀD"][..]),
        ("Fetch From Left", &["${{b'a b'}}", "BĀD"][..]),
        ("Get Regexp Matches", &["${{b'a b'}}", "BĀD"][..]),
    ] {
        assert_eq!(err(&mut s, keyword, args).1, refused, "{keyword}");
    }
    // Latin-1 text is fine on bytes, and anything is fine on text.
    assert_eq!(
        ok(&mut s, "Replace String", &["${{b'x\\xe4x'}}", "ä", "a"]).repr(),
        "b'xax'"
    );
    assert_eq!(
        ok(&mut s, "Replace String", &["xxx", "x", "Ā"]).to_str(),
        "ĀĀĀ"
    );
}

#[test]
fn bytes_are_built_and_counted_like_python() {
    let mut s = session();
    assert_eq!(
        ok(&mut s, "Evaluate", &["bytes([0, 1, 255])"]).repr(),
        "b'\\x00\\x01\\xff'"
    );
    assert_eq!(
        ok(&mut s, "Evaluate", &["bytes('ä', 'latin-1')"]).repr(),
        "b'\\xe4'"
    );
    assert_eq!(
        ok(&mut s, "Evaluate", &["bytes(3)"]).repr(),
        "b'\\x00\\x00\\x00'"
    );
    assert_eq!(
        err(&mut s, "Evaluate", &["bytes([256])"]).1,
        "Evaluating expression 'bytes([256])' failed: ValueError: bytes must be in range(0, 256)"
    );
    assert_eq!(
        err(&mut s, "Evaluate", &["bytes('ä', 'ascii')"]).1,
        "Evaluating expression \"bytes('ä', 'ascii')\" failed: UnicodeEncodeError: 'ascii' codec can't encode character '\\xe4' in position 0: ordinal not in range(128)"
    );
    ok(
        &mut s,
        "Should Contain X Times",
        &["${{b'good'}}", "o", "2"],
    );
    ok(
        &mut s,
        "Should Contain X Times",
        &["${{bytes([0, 1, 1, 1])}}", "${1}", "3"],
    );
    assert_eq!(
        err(
            &mut s,
            "Should Contain X Times",
            &["${{b'good'}}", "x", "1"]
        )
        .1,
        "b'good' contains 'b'x'' 0 times, not 1 time."
    );
}

#[test]
fn should_be_equal_converts_to_parametrized_types() {
    let mut s = session();
    ok(
        &mut s,
        "Should Be Equal",
        &["${{[1, 2, 'x']}}", "[1, 2.0, 'x']", "type=list[int|str]"],
    );
    ok(
        &mut s,
        "Should Be Equal",
        &["${{[b'a', b'b']}}", "[\"a\", \"b\"]", "type=list[bytes]"],
    );
    ok(
        &mut s,
        "Should Be Equal",
        &["Cat", "cat", "type=Literal[\"Dog\", \"Cat\"]"],
    );
    ok(
        &mut s,
        "Should Be Equal",
        &["${{[1, 2]}}", "['1', '2']", "types=list[str]"],
    );
    assert_eq!(
        err(
            &mut s,
            "Should Be Equal",
            &["${{[1, 2]}}", "['1', '2']", "type=list[str]"]
        )
        .1,
        "ValueError: Argument 'first' got value [1, 2] that does not match type 'list[str]'."
    );
    assert_eq!(
        err(&mut s, "Should Be Equal", &["${42}", "x", "type=bad"]).1,
        "TypeError: Unrecognized type 'bad'."
    );
    assert_eq!(
        err(&mut s, "Should Be Equal", &["${42}", "${42}", "types=auto"]).1,
        "TypeError: Unrecognized type 'auto'."
    );
}

#[test]
fn datetime_needs_its_import() {
    let mut s = session();
    let (code, message) = err(&mut s, "Convert Date", &["2014-01-01"]);
    assert_eq!(code, Code::NotFound);
    assert_eq!(message, "No keyword with name 'Convert Date' found.");
    assert!(
        !s.all_keyword_names()
            .iter()
            .any(|(full, _)| full.starts_with("DateTime."))
    );
    assert_eq!(
        err(&mut s, "Import Library", &["DateTime", "x"]).1,
        "Library 'DateTime' expected 0 arguments, got 1."
    );
    ok(&mut s, "Import Library", &["DateTime", "AS", "DT"]);
    assert_eq!(
        ok(&mut s, "DT.Convert Time", &["1 min 2 s", "verbose"]).repr(),
        "'1 minute 2 seconds'"
    );
    assert_eq!(
        err(&mut s, "DateTime.Convert Time", &["1s"]).0,
        Code::NotFound
    );
    ok(&mut s, "Import Library", &["DateTime"]);
    assert_eq!(ok(&mut s, "DateTime.Convert Time", &["1s"]).repr(), "1.0");
    let names = s.all_keyword_names();
    assert_eq!(
        names.iter().filter(|(f, _)| f.starts_with("DT.")).count(),
        8
    );
}

#[test]
fn datetime_keywords() {
    let mut s = session();
    ok(&mut s, "Import Library", &["DateTime"]);
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "Convert Date",
            &["2014.04+24@@21/45!12,123"],
            "'2014-04-24 21:45:12.123'",
        ),
        (
            "Convert Date",
            &["2014-04-24 21:45:12.1235"],
            "'2014-04-24 21:45:12.124'",
        ),
        (
            "Convert Date",
            &["2014-07-30 17:31:00.9995"],
            "'2014-07-30 17:31:01.000'",
        ),
        (
            "Convert Date",
            &["24.4.2014 21", "date_format=%d.%m.%Y %H"],
            "'2014-04-24 21:00:00.000'",
        ),
        (
            "Convert Date",
            &["2014-04-24 21:45:12.5", "exclude_millis=yes"],
            "'2014-04-24 21:45:13'",
        ),
        (
            "Convert Date",
            &["${1542892422.5}", "epoch", "exclude_millis=True"],
            "1542892423.0",
        ),
        (
            "Convert Date",
            &["2014-04-24 21:45:12.5", "datetime"],
            "datetime.datetime(2014, 4, 24, 21, 45, 12, 500000)",
        ),
        (
            "Convert Date",
            &["2014-04-24 21:45", "date"],
            "datetime.date(2014, 4, 24)",
        ),
        (
            "Convert Date",
            &["2014-04-24", "%d.%m.%Y %j"],
            "'24.04.2014 114'",
        ),
        ("Convert Time", &["1d 2h 3m 4s 5ms"], "93784.005"),
        ("Convert Time", &["123 μs"], "0.000123"),
        (
            "Convert Time",
            &["-01:02:03.004", "timer"],
            "'-01:02:03.004'",
        ),
        (
            "Convert Time",
            &["${-62.3}", "compact"],
            "'- 1min 2s 300ms'",
        ),
        (
            "Convert Time",
            &["-62.3", "timedelta"],
            "datetime.timedelta(days=-1, seconds=86337, microseconds=700000)",
        ),
        (
            "Convert Time",
            &["0.5", "number", "exclude_millis=yes"],
            "0.0",
        ),
        (
            "Subtract Date From Date",
            &["2014-04-24 22:45", "2014-04-24 21:43:11", "timer"],
            "'01:01:49.000'",
        ),
        (
            "Add Time To Date",
            &["2014-01-01", "0.0000015", "datetime"],
            "datetime.datetime(2014, 1, 1, 0, 0, 0, 2)",
        ),
        (
            "Subtract Time From Date",
            &["2015-10-26", "1 day"],
            "'2015-10-25 00:00:00.000'",
        ),
        (
            "Add Time To Time",
            &["5 hours 3 minutes", "${4.0}", "timer"],
            "'05:03:04.000'",
        ),
        (
            "Subtract Time From Time",
            &["0.3", "0.1"],
            "0.19999999999999998",
        ),
    ];
    for (kw, args, want) in cases {
        assert_eq!(ok(&mut s, kw, args).repr(), *want, "{kw} {args:?}");
    }
    let failures: &[(&str, &[&str], &str)] = &[
        (
            "Convert Date",
            &["2014-06"],
            "ValueError: Invalid timestamp '2014-06'.",
        ),
        (
            "Convert Date",
            &["2014-02-30"],
            "ValueError: day is out of range for month",
        ),
        (
            "Convert Date",
            &["2014-13-01"],
            "ValueError: time data '2014-13-01 00:00:00.000000' does not match format '%Y-%m-%d %H:%M:%S.%f'",
        ),
        (
            "Convert Date",
            &["2015-1x", "date_format=%Y-%f"],
            "ValueError: unconverted data remains: x",
        ),
        (
            "Convert Date",
            &["2014-01-01", "bad"],
            "ValueError: Unknown format 'bad'.",
        ),
        (
            "Convert Date",
            &["${-62135596800}"],
            "ValueError: year 0 is out of range",
        ),
        (
            "Convert Date",
            &["${1e300}"],
            "OverflowError: timestamp out of range for platform time_t",
        ),
        (
            "Convert Time",
            &["kekkonen"],
            "ValueError: Invalid time string 'kekkonen'.",
        ),
        (
            "Convert Time",
            &["10s", "invalid"],
            "ValueError: Argument 'result_format' got value 'invalid' that cannot be converted to 'number', 'verbose', 'compact', 'timer' or 'timedelta'.",
        ),
        (
            "Convert Time",
            &["inf", "verbose"],
            "OverflowError: cannot convert float infinity to integer",
        ),
        (
            "Convert Time",
            &["1e20", "timedelta"],
            "OverflowError: Python int too large to convert to C int",
        ),
        (
            "Convert Time",
            &["1000000000 days", "timedelta"],
            "OverflowError: days=1000000000; must have magnitude <= 999999999",
        ),
        (
            "Add Time To Date",
            &["9999-12-31 23:59:59", "1s"],
            "OverflowError: date value out of range",
        ),
        (
            "Get Current Date",
            &["invalid"],
            "ValueError: Argument 'time_zone' got value 'invalid' that cannot be converted to 'local' or 'UTC'.",
        ),
        (
            "Convert Date",
            &["2014-04-24 +0200", "date_format=%Y-%m-%d %z"],
            "Date format '%Y-%m-%d %z' has %z: Python would return a time-zone-aware datetime, which the rf sandbox (UTC only, naive dates) does not support.",
        ),
    ];
    for (kw, args, want) in failures {
        assert_eq!(err(&mut s, kw, args).1, *want, "{kw} {args:?}");
    }
    // Huge inputs stay bounded: a long time string is read in one pass and fails.
    let long = "1s".repeat(100_000);
    assert!(
        err(&mut s, "Convert Time", &[&long])
            .1
            .starts_with("ValueError: Invalid time string")
    );
    let long_format = "%Y".repeat(20_000);
    assert_eq!(
        ok(&mut s, "Convert Date", &["2014-01-01", &long_format]).len(),
        Some(80_000)
    );
    assert!(
        s.run("Convert Date", &raw(&["2014", "date_format=%Y%Y"]))
            .is_err()
    );
    let wide = "%1000Y".repeat(20_000);
    assert!(
        err(&mut s, "Convert Date", &["2014-01-01", &wide])
            .1
            .contains("more than the rf sandbox builds")
    );
    let long_input = "%d".repeat(50_000);
    assert!(
        err(
            &mut s,
            "Convert Date",
            &["2014", &format!("date_format={long_input}")]
        )
        .1
        .contains("rf sandbox")
    );
}

#[test]
fn datetime_values_behave_like_python() {
    let mut s = session();
    ok(&mut s, "Import Library", &["DateTime"]);
    let dt = ok(
        &mut s,
        "Convert Date",
        &["2014-04-24 21:45:12.123", "datetime"],
    );
    assert_eq!(dt.to_str(), "2014-04-24 21:45:12.123000");
    assert_eq!(dt.type_name(), "datetime");
    s.assign("dt", dt).unwrap();
    let td = ok(&mut s, "Convert Time", &["1 day 1 s", "timedelta"]);
    assert_eq!(td.to_str(), "1 day, 0:00:01");
    s.assign("td", td).unwrap();
    assert_eq!(
        ok(&mut s, "Add Time To Date", &["${dt}", "${td}"]).repr(),
        "'2014-04-25 21:45:13.123'"
    );
    assert_eq!(ok(&mut s, "Convert Time", &["${td}"]).repr(), "86401.0");
    assert_eq!(
        err(
            &mut s,
            "Should Be Equal",
            &["${dt}", "2014-04-24 21:45:12.123000"]
        )
        .1,
        "2014-04-24 21:45:12.123000 (datetime) != 2014-04-24 21:45:12.123000 (string)"
    );
}

/// A host whose variable loader answers as the real one does for one file.
struct Loader;

impl stephost_plugin::mock::MockHost for Loader {
    fn load_variables(
        &mut self,
        path: &str,
        args: &[String],
    ) -> Result<String, stephost_plugin::rf_library::LibraryError> {
        use stephost_plugin::rf_library::LibraryError;
        match path {
            "/srv/vars/env.py" => Ok(format!(
                r#"[["ENV", "{}"], ["PORT", 8080], ["conf", {{"dict": [["host", "db"], [1, [true, null]]], "dot": true}}], ["plain", {{"dict": [], "dot": false}}], ["pair", {{"tuple": [1, 2.5]}}], ["raw", {{"bytes": "\u00ff\u0000"}}], ["BIG", {{"int": "1180591620717411303424"}}], ["os", {{"text": "<module 'os'>"}}]]"#,
                args.first().map_or("dev", String::as_str)
            )),
            "/srv/vars/broken.json" => Err(LibraryError::ImportFailed(
                "Processing variable file '/srv/vars/broken.json' failed: JSON variable file must be a mapping, got list.".into(),
            )),
            _ => Err(LibraryError::NotGranted(format!(
                "variable file '{path}' is outside the folders granted to this plugin"
            ))),
        }
    }
}

#[test]
fn import_variables_sets_what_the_host_read() {
    stephost_plugin::mock::install(Loader);
    let mut s = session();
    s.store.set("WHICH", Value::str("env"));
    ok(
        &mut s,
        "Import Variables",
        &["/srv/vars/${WHICH}.py", "prod"],
    );
    assert_eq!(ok(&mut s, "Set Variable", &["${ENV}"]).repr(), "'prod'");
    assert_eq!(ok(&mut s, "Set Variable", &["${PORT}"]).repr(), "8080");
    assert_eq!(ok(&mut s, "Set Variable", &["${conf.host}"]).repr(), "'db'");
    assert_eq!(
        ok(&mut s, "Set Variable", &["${conf}[${1}]"]).repr(),
        "[True, None]"
    );
    assert_eq!(ok(&mut s, "Set Variable", &["${plain}"]).repr(), "{}");
    assert_eq!(ok(&mut s, "Set Variable", &["${pair}"]).repr(), "(1, 2.5)");
    assert_eq!(
        ok(&mut s, "Set Variable", &["${raw}"]).repr(),
        "b'\\xff\\x00'"
    );
    assert_eq!(
        ok(&mut s, "Set Variable", &["${BIG}"]).repr(),
        "'1180591620717411303424'"
    );
    let (code, message) = err(&mut s, "Import Variables", &["/srv/vars/broken.json"]);
    assert_eq!(code, Code::InvalidInput);
    assert_eq!(
        message,
        "Processing variable file '/srv/vars/broken.json' failed: JSON variable file must be a mapping, got list."
    );
    let (code, message) = err(&mut s, "Import Variables", &["/etc/../etc/x.py"]);
    assert_eq!(code, Code::Denied);
    assert!(
        message.starts_with(
            "Importing variable file '/etc/x.py' failed: variable file '/etc/x.py' is outside"
        ),
        "{message}"
    );
}
