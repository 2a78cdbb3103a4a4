//! The verbs' JSON contract.

use serde_json::json;

use super::*;
use crate::remote::{HttpError, Transport};

struct NoNetwork;

impl Transport for NoNetwork {
    fn post(&mut self, _: &str, _: &[u8], _: Option<f64>) -> Result<Vec<u8>, HttpError> {
        Err("[Errno 111] Connection refused".into())
    }
}

fn session() -> Session {
    Session::new(Box::new(NoNetwork))
}

/// A successful call as the tests read it: the value and the text item, if any.
#[derive(Debug)]
struct Out {
    value: Json,
    text: Option<String>,
}

fn run(s: &mut Session, input: Json) -> Result<Out, Failure> {
    call(s, "run_keyword", &input.to_string())
}

fn call(s: &mut Session, verb: &str, input: &str) -> Result<Out, Failure> {
    invoke(s, verb, input).map(|out| Out {
        value: out.value_json(),
        text: out.texts().first().map(|t| t.to_string()),
    })
}

#[test]
fn describe_lists_closed_schemas() {
    let info = stephost_plugin::describe::<Rf>();
    assert_eq!(info.name, "rf");
    let names: Vec<&str> = info.verbs.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["run_keyword", "keywords", "variables", "test"]);
    for v in &info.verbs {
        let schema: Json = serde_json::from_str(&v.input_schema).unwrap();
        assert_eq!(schema["additionalProperties"], false, "{}", v.name);
        assert_eq!(v.acts_on_world, v.name == "run_keyword");
    }
}

#[test]
fn values_logs_and_assign() {
    let mut s = session();
    let out = run(
        &mut s,
        json!({"keyword": "Create List", "args": ["a", "${1}"], "assign": "items"}),
    )
    .unwrap();
    assert_eq!(out.value, json!(["a", 1]));
    assert_eq!(out.text.as_deref(), Some("[INFO] ${items} = ['a', 1]"));
    let out = run(
        &mut s,
        json!({"keyword": "Get From List", "args": ["${items}", "-1"]}),
    )
    .unwrap();
    assert_eq!(out.value, json!(1));
    // Non-string JSON arguments arrive as values.
    let out = run(
        &mut s,
        json!({"keyword": "Get Length", "args": [[1, 2, 3]]}),
    )
    .unwrap();
    assert_eq!(out.value, json!(3));
    let out = run(
        &mut s,
        json!({"keyword": "Create Dictionary", "args": ["a=1"], "assign": "&{d}"}),
    )
    .unwrap();
    assert_eq!(out.value, json!({"a": "1"}));
    let vars = call(&mut s, "variables", "{}").unwrap().value;
    assert_eq!(vars["items"], json!(["a", 1]));
    assert_eq!(vars["d"], json!({"a": "1"}));
    assert_eq!(vars["True"], json!(true));
}

#[test]
fn assign_unpacks_like_rf() {
    let mut s = session();
    let list = |s: &mut Session, assign: Json| {
        run(
            s,
            json!({"keyword": "Create List", "args": ["a", "b", "c"], "assign": assign}),
        )
    };
    list(&mut s, json!(["x", "@{rest}"])).unwrap();
    list(&mut s, json!(["${first}", "@{mid}", "last"])).unwrap();
    let vars = call(&mut s, "variables", "{}").unwrap().value;
    assert_eq!(vars["x"], json!("a"));
    assert_eq!(vars["rest"], json!(["b", "c"]));
    assert_eq!(
        (&vars["first"], &vars["mid"], &vars["last"]),
        (&json!("a"), &json!(["b"]), &json!("c"))
    );
    let message = |r: Result<Out, Failure>| r.unwrap_err().message;
    assert_eq!(
        message(list(&mut s, json!(["a", "b"]))),
        "Cannot set variables: Expected 2 return values, got 3."
    );
    assert_eq!(
        message(list(&mut s, json!(["a", "b", "c", "d", "@{e}"]))),
        "Cannot set variables: Expected 4 or more return values, got 3."
    );
    assert_eq!(
        message(list(&mut s, json!(["@{a}", "@{b}"]))),
        "Assignment can contain only one list variable."
    );
    assert_eq!(
        message(list(&mut s, json!(["a", "&{b}"]))),
        "Dictionary variable cannot be assigned with other variables."
    );
    let text = |s: &mut Session, assign: Json| {
        run(
            s,
            json!({"keyword": "Set Variable", "args": ["ab"], "assign": assign}),
        )
    };
    assert_eq!(
        message(text(&mut s, json!(["a", "b"]))),
        "Cannot set variables: Expected list-like value, got string."
    );
    // None gives every scalar None, and `@{x}` / `&{x}` an empty list / dict.
    run(
        &mut s,
        json!({"keyword": "No Operation", "assign": ["n1", "n2"]}),
    )
    .unwrap();
    run(
        &mut s,
        json!({"keyword": "No Operation", "assign": "@{empty}"}),
    )
    .unwrap();
    run(
        &mut s,
        json!({"keyword": "No Operation", "assign": "&{nothing}"}),
    )
    .unwrap();
    let vars = call(&mut s, "variables", "{}").unwrap().value;
    assert_eq!((&vars["n1"], &vars["n2"]), (&Json::Null, &Json::Null));
    assert_eq!((&vars["empty"], &vars["nothing"]), (&json!([]), &json!({})));
    let f = run(&mut s, json!({"keyword": "No Operation", "assign": [1]})).unwrap_err();
    assert_eq!(f.code, FailureCode::InvalidInput);
    assert_eq!(f.details_json()["field"], "assign");
}

#[test]
fn failure_codes() {
    let mut s = session();
    let f = run(&mut s, json!({"keyword": "Nope Nope"})).unwrap_err();
    assert_eq!((f.code.as_str(), f.input_fired), ("not-found", false));
    assert_eq!(f.message, "No keyword with name 'Nope Nope' found.");
    let f = run(&mut s, json!({"keyword": "Log"})).unwrap_err();
    assert_eq!((f.code.as_str(), f.input_fired), ("invalid-input", false));
    // A failure of the sandboxed libraries repeats exactly when re-run: `assertion`,
    // which the RF batch tools' retry policies leave alone, and nothing to recover with.
    let f = run(&mut s, json!({"keyword": "Fail", "args": ["boom"]})).unwrap_err();
    assert_eq!(
        (f.code.as_str(), f.input_fired, f.message.as_str()),
        ("assertion", true, "boom")
    );
    assert_eq!(f.details_json()["continuable"], false);
    assert!(f.recovery.is_empty());
    let f = run(&mut s, json!({"keyword": "Run Keyword And Continue On Failure", "args": ["Should Be Equal", "1", "2"]})).unwrap_err();
    assert_eq!(f.code.as_str(), "assertion");
    // A remote library's failure may heal: `failed` (the server is down here).
    let f = run(
        &mut s,
        json!({"keyword": "Import Library", "args": ["Remote", "http://127.0.0.1:9"]}),
    )
    .unwrap_err();
    assert_eq!(f.code.as_str(), "failed", "{}", f.message);
    // A call that changed the session before it failed may go another way next time.
    let f = run(&mut s, json!({"keyword": "Run Keywords", "args": ["Set Test Variable", "${n}", "1", "AND", "Fail", "not yet"]})).unwrap_err();
    assert_eq!(f.code.as_str(), "failed");
    let f = run(
        &mut s,
        json!({"keyword": "Evaluate", "args": ["$l.append(1) or 1/0"], "assign": "x"}),
    )
    .unwrap_err();
    assert_eq!(f.code.as_str(), "assertion", "no ${{l}} yet: {}", f.message);
    run(&mut s, json!({"keyword": "Create List", "assign": "l"})).unwrap();
    let f = run(
        &mut s,
        json!({"keyword": "Evaluate", "args": ["$l.append(1) or 1/0"]}),
    )
    .unwrap_err();
    assert_eq!(f.code.as_str(), "failed", "{}", f.message);
    // The next call starts afresh.
    let f = run(&mut s, json!({"keyword": "Fail"})).unwrap_err();
    assert_eq!(f.code.as_str(), "assertion");
    let f = invoke(&mut s, "run_keyword", r#"{"keyword": "Log", "extra": 1}"#).unwrap_err();
    assert_eq!(f.code, FailureCode::InvalidInput);
    let f = invoke(&mut s, "nope", "{}").unwrap_err();
    assert_eq!(f.code, FailureCode::InvalidInput);
}

#[test]
fn pass_execution_passes() {
    let mut s = session();
    let out = run(
        &mut s,
        json!({"keyword": "Pass Execution", "args": ["done"]}),
    )
    .unwrap();
    assert_eq!(out.value, Json::Null);
    assert!(
        out.text
            .unwrap()
            .contains("Execution passed with message:\ndone")
    );
}

#[test]
fn keyword_listing_filters() {
    let mut s = session();
    let all = call(&mut s, "keywords", "{}").unwrap().value;
    assert!(all.as_array().unwrap().len() > 180);
    let some = call(&mut s, "keywords", r#"{"filter": "should be equal as"}"#)
        .unwrap()
        .value;
    let names: Vec<&str> = some
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Should Be Equal As Integers",
            "Should Be Equal As Numbers",
            "Should Be Equal As Strings"
        ]
    );
    let globbed = call(
        &mut s,
        "keywords",
        r#"{"filter": "get*dictionary*", "library": "collections"}"#,
    )
    .unwrap()
    .value;
    assert_eq!(globbed.as_array().unwrap().len(), 4);
    assert_eq!(
        globbed[0]["args"],
        "dictionary: Mapping, sort_keys: bool = True"
    );
}

#[test]
fn mutations_last_across_calls() {
    // The three steps of a plain RF test, one `run_keyword` call each.
    let mut s = session();
    run(
        &mut s,
        json!({"keyword": "Create List", "args": ["a", "b"], "assign": "letters"}),
    )
    .unwrap();
    let out = run(
        &mut s,
        json!({"keyword": "Append To List", "args": ["${letters}", "c"]}),
    )
    .unwrap();
    assert_eq!(out.value, json!(["a", "b", "c"]));
    run(
        &mut s,
        json!({"keyword": "Length Should Be", "args": ["${letters}", "3"]}),
    )
    .unwrap();
    run(
        &mut s,
        json!({"keyword": "Set To Dictionary", "args": ["${d}", "k=v"]}),
    )
    .unwrap_err();
    run(
        &mut s,
        json!({"keyword": "Create Dictionary", "assign": "&{d}"}),
    )
    .unwrap();
    run(
        &mut s,
        json!({"keyword": "Set To Dictionary", "args": ["${d}", "k=v"]}),
    )
    .unwrap();
    let vars = call(&mut s, "variables", "{}").unwrap().value;
    assert_eq!(vars["letters"], json!(["a", "b", "c"]));
    assert_eq!(vars["d"], json!({"k": "v"}));
    // A JSON array argument is a new list of its own: changing it changes no variable.
    // (This is what a `${letters}` that the host resolves itself arrives as.)
    let out = run(
        &mut s,
        json!({"keyword": "Append To List", "args": [["a", "b", "c"], "d"]}),
    )
    .unwrap();
    assert_eq!(out.value, json!(["a", "b", "c", "d"]));
    let vars = call(&mut s, "variables", "{}").unwrap().value;
    assert_eq!(vars["letters"], json!(["a", "b", "c"]));
}

#[test]
fn skip_ends_the_step_with_its_own_code() {
    let mut s = session();
    let f = run(
        &mut s,
        json!({"keyword": "Skip", "args": ["not on this platform"]}),
    )
    .unwrap_err();
    assert_eq!(f.code, FailureCode::Other("skip".into()));
    assert_eq!(f.message, "not on this platform");
    assert!(!f.input_fired);
    assert!(f.recovery.is_empty());
    let f = run(&mut s, json!({"keyword": "Skip"})).unwrap_err();
    assert_eq!(f.message, "Skipped with Skip keyword.");
    // Without a message the condition as written is the reason; a false one does nothing.
    let f = run(&mut s, json!({"keyword": "Skip If", "args": ["1 < 2"]})).unwrap_err();
    assert_eq!(
        (f.code, f.message.as_str()),
        (FailureCode::Other("skip".into()), "1 < 2")
    );
    run(
        &mut s,
        json!({"keyword": "Skip If", "args": ["1 > 2", "never"]}),
    )
    .unwrap();
    // Wrappers that catch failures do not catch a skip.
    for wrapper in [
        "Run Keyword And Ignore Error",
        "Run Keyword And Return Status",
        "Wait Until Keyword Succeeds",
    ] {
        let mut args = vec![];
        if wrapper == "Wait Until Keyword Succeeds" {
            args.extend(["3x", "0s"]);
        }
        args.extend(["Skip", "inner"]);
        let f = run(&mut s, json!({"keyword": wrapper, "args": args})).unwrap_err();
        assert_eq!(
            (f.code, f.message.as_str()),
            (FailureCode::Other("skip".into()), "inner"),
            "{wrapper}"
        );
    }
}

#[test]
fn return_outside_a_keyword_is_invalid() {
    let mut s = session();
    for (kw, args) in [
        ("Return From Keyword", json!(["x"])),
        ("Return From Keyword If", json!(["True", "x"])),
        ("Run Keyword And Return", json!(["Fail", "inner"])),
        (
            "Run Keyword And Return If",
            json!(["True", "No Such Keyword"]),
        ),
        (
            "Run Keyword And Ignore Error",
            json!(["Return From Keyword"]),
        ),
    ] {
        let f = run(&mut s, json!({"keyword": kw, "args": args})).unwrap_err();
        assert_eq!(f.message, "Invalid 'RETURN' usage.", "{kw}");
    }
    for (kw, args) in [
        ("Return From Keyword If", json!(["False", "x"])),
        (
            "Run Keyword And Return If",
            json!(["False", "No Such Keyword"]),
        ),
    ] {
        run(&mut s, json!({"keyword": kw, "args": args})).unwrap();
    }
    // The keyword runs before the return is refused, as in RF.
    let _ = run(
        &mut s,
        json!({"keyword": "Run Keyword And Return", "args": ["Set Test Variable", "${ran}", "yes"]}),
    );
    assert_eq!(
        run(
            &mut s,
            json!({"keyword": "Set Variable", "args": ["${ran}"]})
        )
        .unwrap()
        .value,
        json!("yes")
    );
}

#[test]
fn test_verb_reports_what_the_test_keywords_set() {
    let mut s = session();
    assert_eq!(
        call(&mut s, "test", "{}").unwrap().value,
        json!({"tags": [], "message": "", "documentation": "", "metadata": {}, "suite": {"documentation": "", "metadata": {}}})
    );
    for (kw, args) in [
        ("Set Tags", json!(["smoke", "B-2", "a1"])),
        ("Remove Tags", json!(["b*"])),
        ("Set Test Message", json!(["first"])),
        ("Set Test Message", json!(["second", "append=yes"])),
        ("Set Test Documentation", json!(["Doc."])),
        ("Set Suite Metadata", json!(["Version", "1.2"])),
    ] {
        run(&mut s, json!({"keyword": kw, "args": args})).unwrap();
    }
    let test = call(&mut s, "test", "{}").unwrap().value;
    assert_eq!(test["tags"], json!(["a1", "smoke"]));
    assert_eq!(test["message"], "first second");
    assert_eq!(test["documentation"], "Doc.");
    assert_eq!(test["suite"]["metadata"], json!({"Version": "1.2"}));
}
