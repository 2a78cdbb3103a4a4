//! Robot Framework standard libraries that run as Robot Framework's own Python in
//! the host's sandboxed interpreter (the `python` capability): XML.
//!
//! XML is plain Python over ElementTree, with no files or network of its own to
//! reach, so rather than a second implementation here it runs as RF's code in the
//! instance's CPython (`host/runtime/python/stephost_libraries.py`). Its keyword
//! names, argument conversion, messages and log lines are therefore RF's. This side
//! matches names, splits arguments as RF splits a dynamic library's, and carries
//! values; a parsed tree stays in the interpreter and crosses as an object handle,
//! so later keywords change the same tree in place.

use std::collections::HashMap;

use stephost_plugin::python::{self as host, EvaluationError};

use crate::args::{Resolve, Spec};
use crate::engine::{Level, Session};
use crate::error::{RfError, RfResult};
use crate::keywords::operating_system::{paths, sandbox};
use crate::matching::normalize_name;
use crate::pyjson;
use crate::value::Value;
use crate::variables::Arg;

/// A library imported into the interpreter.
pub(crate) struct PyLibrary {
    /// Its real name (`XML`).
    pub(crate) real: &'static str,
    /// The import's arguments, which name the instance in the interpreter.
    args: Vec<String>,
    /// Its keywords, as RF's library machinery lists them.
    pub(crate) keywords: Vec<PyKeyword>,
    /// Keyword indexes by normalized name: every keyword lookup of the session
    /// asks every library, so names are normalized once, at import.
    by_name: HashMap<String, usize>,
}

/// One keyword of a [`PyLibrary`].
pub(crate) struct PyKeyword {
    /// RF's name (`Parse Xml`).
    pub(crate) name: String,
    /// Its arguments in the remote API's form (`source`, `xpath=.`, `*args`).
    pub(crate) args: Vec<String>,
    /// What `args` means for argument splitting.
    spec: Spec,
    /// The first line of its documentation.
    pub(crate) short_doc: String,
}

impl PyLibrary {
    /// The index of the keyword whose normalized name is `norm`.
    pub(crate) fn find(&self, norm: &str) -> Option<usize> {
        self.by_name.get(norm).copied()
    }
}

/// The module and the expressions the plugin calls it through; the values go in
/// the namespace, so they are not RF variables of the expression.
const MODULE: &str = "stephost_libraries";
const IMPORT: &str = "stephost_libraries.import_library(_name, _args)";
const RUN: &str = "stephost_libraries.run(_name, _args, _keyword, _positional, _named)";

/// Imports library `name` (`XML`, the one `stephost_libraries` runs) with `args`
/// into the interpreter.
pub(crate) fn import(s: &mut Session, name: &'static str, args: &[Value]) -> RfResult<PyLibrary> {
    let texts: Vec<String> = args.iter().map(Value::to_str).collect();
    let namespace = [
        ("_name".to_string(), Value::str(name)),
        ("_args".to_string(), strings(&texts)),
    ];
    let answer = call(
        IMPORT,
        &namespace,
        name,
        &format!("Importing library '{name}'"),
    )?;
    let items = answer.list_items().unwrap_or_default();
    log_messages(s, items.get(2));
    if text_of(items.first()) != "PASS" {
        return Err(RfError::fail(text_of(items.get(1))));
    }
    let keywords = list(items.get(1))
        .iter()
        .filter_map(keyword_of)
        .collect::<Vec<_>>();
    let by_name = keywords
        .iter()
        .enumerate()
        .map(|(i, kw)| (normalize_name(&kw.name), i))
        .collect();
    Ok(PyLibrary {
        real: name,
        args: texts,
        keywords,
        by_name,
    })
}

/// Runs keyword `kw` of the library at `lib` with `args`.
pub(crate) fn run_keyword(s: &mut Session, lib: usize, kw: usize, args: &[Arg]) -> RfResult<Value> {
    let crate::engine::LibKind::Python(library) = &s.libraries[lib].kind else {
        return Err(RfError::fail(
            "internal error: not a library of the interpreter",
        ));
    };
    let keyword = &library.keywords[kw];
    let full_name = format!("{}.{}", s.libraries[lib].name, keyword.name);
    let resolve = Resolve {
        full_name: &full_name,
        spec: &keyword.spec,
        resolve_until: None,
    };
    let (mut positional, mut named) = resolve.resolve_dynamic(&s.store, args)?;
    let sources = source_params(&keyword.name);
    for (param, value) in keyword.spec.positional.iter().zip(positional.iter_mut()) {
        if sources.contains(&param.name.as_str()) {
            read_source(value)?;
        }
    }
    for (name, value) in &mut named {
        if sources.contains(&name.as_str()) {
            read_source(value)?;
        }
    }
    let named: Vec<Value> = named
        .into_iter()
        .map(|(name, value)| Value::list(vec![Value::str(name), value]))
        .collect();
    let namespace = [
        ("_name".to_string(), Value::str(library.real)),
        ("_args".to_string(), strings(&library.args)),
        ("_keyword".to_string(), Value::str(keyword.name.clone())),
        ("_positional".to_string(), Value::list(positional)),
        ("_named".to_string(), Value::list(named)),
    ];
    let real = library.real;
    let answer = call(RUN, &namespace, real, &format!("Keyword '{full_name}'"))?;
    let items = answer.list_items().unwrap_or_default();
    log_messages(s, items.get(2));
    match text_of(items.first()).as_str() {
        "PASS" => return Ok(items.get(1).cloned().unwrap_or(Value::None)),
        "SAVE" => {
            save(s, &text_of(items.get(1)), items.get(2))?;
            return Ok(Value::None);
        }
        _ => {}
    }
    let mut error = RfError::fail(text_of(items.get(1)));
    error.traceback = text_of(items.get(3));
    if !error.traceback.is_empty() {
        s.log(Level::Debug, error.traceback.clone());
    }
    Err(error)
}

/// Why a call into `stephost_libraries` gave no answer.
pub(crate) enum CallFailure {
    /// An argument nests deeper than the value encoding allows.
    TooDeep,
    /// The answer is not in the value encoding.
    Unreadable(String),
    /// The interpreter failed (a trap, a limit, the deadline): the module answers
    /// what the library itself raises as values, so this is never the library's.
    Failed(String),
    /// The host has no interpreter.
    NoEvaluator(String),
}

/// Calls `expression` (a function of `stephost_libraries`) with `namespace` in
/// the instance's interpreter and decodes the answer; the callers word failures.
pub(crate) fn call_module(
    expression: &str,
    namespace: &[(String, Value)],
) -> Result<Value, CallFailure> {
    let encoded = pyjson::encode_pairs(namespace).map_err(|_| CallFailure::TooDeep)?;
    match host::evaluate(expression, "[]", &encoded, MODULE) {
        Ok(answer) => serde_json::from_str(&answer.value)
            .map(|json| pyjson::decode(&json))
            .map_err(|e| CallFailure::Unreadable(e.to_string())),
        Err(EvaluationError::Failed(message)) | Err(EvaluationError::Unavailable(message)) => {
            Err(CallFailure::Failed(message))
        }
        Err(EvaluationError::NoEvaluator(why)) => Err(CallFailure::NoEvaluator(why)),
    }
}

/// One call of library `library`; `what` names it in failures (`Keyword
/// 'XML.Get Element Text'`).
fn call(
    expression: &str,
    namespace: &[(String, Value)],
    library: &str,
    what: &str,
) -> RfResult<Value> {
    call_module(expression, namespace).map_err(|failure| match failure {
        CallFailure::TooDeep => RfError::fail(format!(
            "An argument to library '{library}' nests deeper than 64 levels."
        )),
        CallFailure::Unreadable(e) => RfError::fail(format!(
            "The interpreter's answer for library '{library}' is unreadable: {e}"
        )),
        CallFailure::Failed(message) => RfError::fail(format!("{what} failed: {message}")),
        CallFailure::NoEvaluator(why) => RfError::fail(format!(
            "Importing library '{library}' failed: Robot Framework's {library} library runs in the host's Python interpreter, and this host has none ({why})."
        )),
    })
}

/// The arguments of XML keyword `keyword` that RF reads as a file when given a
/// path (any text that does not start with `<`): the interpreter has no files, so
/// the plugin reads them from its granted folders first.
fn source_params(keyword: &str) -> &'static [&'static str] {
    match keyword {
        "Elements Should Be Equal" | "Elements Should Match" => &["source", "expected"],
        "Add Element" => &["source", "element"],
        _ => &["source"],
    }
}

/// Replaces a path by the file's bytes, which RF parses as it would have parsed
/// the file. The path must lie in a folder the host granted the plugin; a file
/// that cannot be opened fails as Python's `open` fails in RF.
fn read_source(value: &mut Value) -> RfResult<()> {
    let text = match &*value {
        Value::Str(text) => text.clone(),
        // `${{pathlib.Path(...)}}`: RF opens it as a path too.
        Value::Object(o) if o.module == "pathlib" => o.view.borrow().text.clone(),
        _ => return Ok(()),
    };
    if text.trim_start().starts_with('<') {
        return Ok(());
    }
    let path = paths::absnorm(&text, &sandbox::cwd());
    sandbox::readable(&path)?;
    if let Err(e) = std::fs::File::open(&path) {
        return Err(sandbox::os_error(&e, &text, None));
    }
    *value = Value::Bytes(sandbox::read_bounded(&path)?);
    Ok(())
}

/// Writes what `Save XML` made to `path`, in a folder granted writable, and logs
/// it as RF does.
fn save(s: &mut Session, path: &str, bytes: Option<&Value>) -> RfResult<()> {
    let Some(Value::Bytes(bytes)) = bytes else {
        return Err(RfError::fail("internal error: Save XML made no bytes"));
    };
    // RF's `Path.absolute()`: joined to the working folder, `..` kept.
    let absolute = if path.starts_with('/') {
        path.to_string()
    } else {
        paths::join(&sandbox::cwd(), &[path])
    };
    let target = paths::absnorm(&absolute, &sandbox::cwd());
    sandbox::writable(&target)?;
    std::fs::write(&target, bytes).map_err(|e| sandbox::os_error(&e, &absolute, None))?;
    s.info(format!(
        "XML saved to <a href=\"file://{absolute}\">{absolute}</a>."
    ));
    Ok(())
}

fn strings(texts: &[String]) -> Value {
    Value::list(texts.iter().map(|t| Value::str(t.clone())).collect())
}

/// The items of a list or tuple of an answer, none for anything else.
pub(crate) fn list(value: Option<&Value>) -> Vec<Value> {
    value.and_then(Value::list_items).unwrap_or_default()
}

/// An answer's text field, empty when it is missing.
pub(crate) fn text_of(value: Option<&Value>) -> String {
    value.map(Value::to_str).unwrap_or_default()
}

/// `(name, spec, short doc, tags)` as `import_library` lists a keyword.
fn keyword_of(item: &Value) -> Option<PyKeyword> {
    let fields = item.list_items()?;
    let name = fields.first()?.as_str()?.to_string();
    let args: Vec<String> = fields
        .get(1)?
        .list_items()?
        .iter()
        .map(Value::to_str)
        .collect();
    Some(PyKeyword {
        spec: crate::remote::spec_of(&args),
        name,
        args,
        short_doc: text_of(fields.get(2)),
    })
}

/// Logs the `(level, text)` pairs the library logged, at RF's levels.
fn log_messages(s: &mut Session, messages: Option<&Value>) {
    for message in list(messages) {
        let pair = message.list_items().unwrap_or_default();
        let level = pair
            .first()
            .and_then(Value::as_str)
            .and_then(Level::parse)
            .unwrap_or(Level::Info);
        s.log(level, text_of(pair.get(1)));
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use serde_json::{Value as Json, json};
    use stephost_plugin::mock;
    use stephost_plugin::python::{Evaluation, EvaluationError};

    use crate::engine::{Level, Session};
    use crate::keywords::tests::{NoNetwork, call as run};

    /// Each call's expression and namespace, as the fake saw them.
    type Calls = Rc<RefCell<Vec<(String, Json)>>>;

    /// Stands in for `stephost_libraries`: lists three keywords and answers runs,
    /// keeping each call's namespace.
    struct FakeXml {
        calls: Calls,
    }

    fn tuple(items: Json) -> Json {
        json!({ "tuple": items })
    }

    impl mock::MockHost for FakeXml {
        fn evaluate(
            &mut self,
            expression: &str,
            variables: &str,
            namespace: &str,
            modules: &str,
        ) -> Result<Evaluation, EvaluationError> {
            assert_eq!((variables, modules), ("[]", "stephost_libraries"));
            let namespace: Json = serde_json::from_str(namespace).expect("namespace is JSON");
            self.calls
                .borrow_mut()
                .push((expression.to_string(), namespace.clone()));
            let arg = |name: &str| {
                namespace
                    .as_array()
                    .and_then(|pairs| pairs.iter().find(|p| p[0] == name))
                    .map(|p| p[1].clone())
                    .unwrap_or(Json::Null)
            };
            let answer = if expression.contains("import_library") {
                if arg("_args") != json!([]) {
                    tuple(json!([
                        "FAIL",
                        "Library 'XML' expected 0 to 1 arguments, got 2.",
                        []
                    ]))
                } else {
                    let keywords = json!([
                        tuple(json!([
                            "Parse Xml",
                            ["source", "keep_clark_notation=False"],
                            "Parses the given XML file or string into an element structure.",
                            []
                        ])),
                        tuple(json!([
                            "Get Element Count",
                            ["source", "xpath=."],
                            "Returns and logs how many elements the given `xpath` matches.",
                            []
                        ])),
                        tuple(json!([
                            "Save Xml",
                            ["source", "path", "encoding=UTF-8"],
                            "Saves the given element to the specified file.",
                            []
                        ])),
                    ]);
                    tuple(json!([
                        "PASS",
                        keywords,
                        [tuple(json!([
                            "WARN",
                            "XML library reverted to use standard ElementTree."
                        ]))]
                    ]))
                }
            } else if arg("_keyword") == "Save Xml" {
                let path = arg("_positional")[1].clone();
                tuple(json!(["SAVE", path, {"bytes": "<saved/>"}, []]))
            } else if arg("_keyword") == "Get Element Count" {
                tuple(json!([
                    "PASS",
                    2,
                    [tuple(json!(["INFO", "2 elements matched 'b'."]))]
                ]))
            } else {
                tuple(json!([
                    "FAIL",
                    "syntax error: line 1, column 0",
                    [],
                    "Traceback (most recent call last):\n  ParseError"
                ]))
            };
            Ok(Evaluation {
                value: answer.to_string(),
                truthy: true,
                changed: "[]".into(),
            })
        }
    }

    fn with_fake() -> (Session, Calls) {
        mock::reset();
        let calls = Rc::new(RefCell::new(Vec::new()));
        mock::install(FakeXml {
            calls: calls.clone(),
        });
        (Session::new(Box::new(NoNetwork)), calls)
    }

    #[test]
    fn keywords_are_split_as_a_dynamic_librarys_and_their_logs_kept() {
        let (mut s, calls) = with_fake();
        run(&mut s, "Import Library", &["XML"]).expect("imports");
        let logs = s.take_logs();
        assert!(
            logs.iter()
                .any(|l| l.level == Level::Warn && l.message.contains("reverted"))
        );
        assert!(
            logs.iter()
                .any(|l| l.message == "Imported library 'XML' with arguments [  ] (3 keywords).")
        );
        let count = run(&mut s, "get element count", &["<a/>", "xpath=b"]).expect("runs");
        assert_eq!(count.repr(), "2");
        let (expression, namespace) = calls.borrow().last().cloned().expect("a call");
        assert!(expression.starts_with("stephost_libraries.run("));
        assert_eq!(
            namespace,
            json!([
                ["_name", "XML"],
                ["_args", []],
                ["_keyword", "Get Element Count"],
                ["_positional", ["<a/>"]],
                ["_named", [["xpath", "b"]]]
            ])
        );
        assert!(
            s.take_logs()
                .iter()
                .any(|l| l.level == Level::Info && l.message == "2 elements matched 'b'.")
        );
        // The full name and an alias find it too.
        run(&mut s, "XML.Get Element Count", &["<a/>"]).expect("full name");
        run(&mut s, "Import Library", &["XML", "AS", "X"]).expect("alias");
        run(&mut s, "X.Get Element Count", &["<a/>"]).expect("alias name");
        mock::reset();
    }

    #[test]
    fn failures_are_the_librarys_and_bad_calls_never_reach_it() {
        let (mut s, calls) = with_fake();
        run(&mut s, "Import Library", &["XML"]).expect("imports");
        run(&mut s, "Set Log Level", &["DEBUG"]).expect("sets the level");
        s.take_logs();
        let error = run(&mut s, "Parse XML", &["<a"]).expect_err("fails");
        assert_eq!(
            calls.borrow().last().map(|c| c.1[3][1].clone()),
            Some(json!(["<a"]))
        );
        assert_eq!(error.message, "syntax error: line 1, column 0");
        assert!(error.traceback.contains("ParseError"));
        assert!(
            s.take_logs()
                .iter()
                .any(|l| l.level == Level::Debug && l.message.contains("Traceback"))
        );
        let before = calls.borrow().len();
        let error = run(&mut s, "Get Element Count", &["a", "b", "c"]).expect_err("too many");
        assert_eq!(
            error.message,
            "Keyword 'XML.Get Element Count' expected 1 to 2 arguments, got 3."
        );
        let error = run(&mut s, "Get Element Count", &[]).expect_err("too few");
        assert_eq!(
            error.message,
            "Keyword 'XML.Get Element Count' expected 1 to 2 arguments, got 0."
        );
        assert_eq!(
            calls.borrow().len(),
            before,
            "argument errors are found before the call"
        );
        let error = run(&mut s, "Import Library", &["XML", "a", "b"]).expect_err("bad import");
        assert_eq!(
            error.message,
            "Library 'XML' expected 0 to 1 arguments, got 2."
        );
        mock::reset();
    }

    #[test]
    fn files_are_read_and_written_only_in_granted_folders() {
        use crate::keywords::operating_system::sandbox::{Folder, set_folders};
        let base = std::env::temp_dir().join(format!("rf-pylib-{}", std::process::id()));
        let (rw, ro) = (base.join("rw"), base.join("ro"));
        for dir in [&rw, &ro] {
            std::fs::create_dir_all(dir).expect("temp folder");
        }
        std::fs::write(ro.join("a.xml"), "<a><b/></a>").expect("temp file");
        let text = |p: &std::path::Path| p.to_str().expect("UTF-8 temp path").to_string();
        set_folders(vec![
            Folder {
                path: text(&rw),
                read_only: false,
            },
            Folder {
                path: text(&ro),
                read_only: true,
            },
        ]);
        let (mut s, calls) = with_fake();
        run(&mut s, "Import Library", &["XML"]).expect("imports");
        let source = text(&ro.join("a.xml"));
        run(&mut s, "Get Element Count", &[&source, "b"]).expect("reads the file");
        let sent = calls.borrow().last().map(|c| c.1[3][1].clone());
        assert_eq!(
            sent,
            Some(json!([{"bytes": "<a><b/></a>"}, "b"])),
            "the file's bytes go to RF"
        );
        let missing = text(&ro.join("missing.xml"));
        let error = run(&mut s, "Get Element Count", &[&missing]).expect_err("missing");
        assert_eq!(
            error.message,
            format!("FileNotFoundError: [Errno 2] No such file or directory: '{missing}'")
        );
        let error = run(&mut s, "Get Element Count", &["/elsewhere/a.xml"]).expect_err("outside");
        assert!(
            error.message.contains("outside the folders granted"),
            "{}",
            error.message
        );
        run(&mut s, "Save XML", &["<a/>", "out.xml"]).expect("saves in the working folder");
        assert_eq!(
            std::fs::read_to_string(rw.join("out.xml")).ok().as_deref(),
            Some("<saved/>")
        );
        let saved = format!(
            "XML saved to <a href=\"file://{0}\">{0}</a>.",
            text(&rw.join("out.xml"))
        );
        assert!(s.take_logs().iter().any(|l| l.message == saved));
        let error =
            run(&mut s, "Save XML", &["<a/>", &text(&ro.join("out.xml"))]).expect_err("read-only");
        assert!(error.message.contains("read-only"), "{}", error.message);
        assert!(!ro.join("out.xml").exists());
        set_folders(Vec::new());
        mock::reset();
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn without_the_interpreter_the_import_says_why() {
        mock::reset();
        let mut s = Session::new(Box::new(NoNetwork));
        let error = run(&mut s, "Import Library", &["XML"]).expect_err("no evaluator");
        assert!(
            error.message.starts_with("Importing library 'XML' failed: Robot Framework's XML library runs in the host's Python interpreter, and this host has none"),
            "{}",
            error.message
        );
        let error = run(&mut s, "Parse XML", &["<a/>"]).expect_err("not imported");
        assert!(
            error
                .message
                .starts_with("No keyword with name 'Parse XML' found."),
            "{}",
            error.message
        );
    }
}
