//! `Import Resource`: Robot Framework resource files from the plugin's granted
//! folders. Robot Framework's own parser reads the file in the sandboxed
//! interpreter (`stephost_libraries.resource`), so what is valid, and the errors
//! for what is not, are RF's; the plugin sets the file's variables, makes its
//! imports, and runs its keywords.
//!
//! A keyword body runs as RF runs it: keyword calls with `${x} =` assignments,
//! `RETURN`, and the control structures (`IF`, `FOR`, `WHILE`, `TRY`, `VAR`,
//! `BREAK`, `CONTINUE`, `GROUP`; [`body`]).

mod body;

use std::collections::HashMap;

use crate::args::{Resolve, Spec};
use crate::engine::Session;
use crate::error::{RfError, RfResult};
use crate::keywords::operating_system::{paths, sandbox};
use crate::matching::{Embedded, normalize_name};
use crate::pylib::{CallFailure, call_module, list, text_of};
use crate::value::Value;
use crate::variables::Arg;

/// Resource files imported within one another at most this deep.
const MAX_NESTING: usize = 10;

/// An imported resource file.
pub(crate) struct ResourceLib {
    /// Its keywords.
    pub(crate) keywords: Vec<UserKeyword>,
    by_name: HashMap<String, usize>,
    /// The keywords with embedded arguments (`User ${name} Logs In`), compiled.
    embedded: Vec<(usize, Embedded)>,
}

impl ResourceLib {
    /// The index of the keyword whose normalized name is `norm`.
    pub(crate) fn find(&self, norm: &str) -> Option<usize> {
        self.by_name.get(norm).copied()
    }

    /// The keywords whose embedded arguments match `name`, with the values
    /// each takes from it.
    pub(crate) fn embedded_matches(&self, name: &str) -> Vec<(usize, Vec<String>)> {
        self.embedded
            .iter()
            .filter_map(|(k, pattern)| pattern.values(name).map(|values| (*k, values)))
            .collect()
    }

    /// The names of keyword `kw`'s embedded arguments, none for a plain name.
    fn embedded_names(&self, kw: usize) -> &[String] {
        self.embedded
            .iter()
            .find(|(k, _)| *k == kw)
            .map_or(&[], |(_, pattern)| pattern.names())
    }
}

/// A keyword of a resource file.
pub(crate) struct UserKeyword {
    /// Its name as written.
    pub(crate) name: String,
    /// `[Arguments]` in the remote API's form (`a`, `b=default`, `*rest`, `**named`).
    pub(crate) args: Vec<String>,
    spec: Spec,
    body: Vec<body::Step>,
    /// `[Setup]` and `[Teardown]`: one keyword call each, or none.
    setup: Vec<body::Step>,
    teardown: Vec<body::Step>,
}

/// Resource text given inline (`Import Resource` of text rather than a path): its
/// keywords are qualified with this name.
const INLINE: &str = "inline";

/// Whether `Import Resource`'s argument is resource text rather than a path.
pub(crate) fn is_inline(text: &str) -> bool {
    text.contains('\n') || text.trim_start().starts_with("***")
}

/// `Import Resource    path`: reads, parses and imports the file; answers the name
/// its keywords are qualified with and how many there are. Text holding a line
/// break or starting with `***` is a resource itself, read from the call; its own
/// imports still come from the granted folders.
pub(crate) fn import(s: &mut Session, path: &str, depth: usize) -> RfResult<()> {
    if depth >= MAX_NESTING {
        return Err(RfError::fail(format!(
            "Resource file '{path}' is imported more than {MAX_NESTING} levels deep."
        )));
    }
    let inline = is_inline(path);
    let (text, path, folder) = if inline {
        (path.to_string(), format!("<{INLINE}>"), sandbox::cwd())
    } else {
        let (path, text) = read_file(path)?;
        let folder = paths::dirname(&path);
        (text, path, folder)
    };
    let answer = parse(&text, &path)?;
    let items = answer.list_items().unwrap_or_default();
    if text_of(items.first()) != "PASS" {
        return Err(RfError::fail(text_of(items.get(1))));
    }
    let curdir = |text: &str| text.replace("${CURDIR}", &folder);
    for item in list(items.get(1)) {
        let fields = item.list_items().unwrap_or_default();
        let kind = text_of(fields.first());
        let name = s.store.replace_string(&curdir(&text_of(fields.get(1))))?;
        let args: Vec<Value> = s.store.replace_list(
            &list(fields.get(2))
                .iter()
                .map(|a| Arg::Raw(curdir(&a.to_str())))
                .collect::<Vec<_>>(),
        )?;
        match kind.as_str() {
            "LIBRARY" => {
                let alias = fields
                    .get(3)
                    .filter(|a| !matches!(a, Value::None))
                    .map(Value::to_str);
                s.import_library(&name, &args, alias)?;
            }
            "RESOURCE" => import(s, &paths::join(&folder, &[name.as_str()]), depth + 1)?,
            _ => {
                let mut call = vec![Arg::Raw(paths::join(&folder, &[name.as_str()]))];
                call.extend(args.into_iter().map(Arg::Value));
                s.run("Import Variables", &call)?;
            }
        }
    }
    for variable in list(items.get(2)) {
        set_variable(s, &variable, &curdir)?;
    }
    let keywords: Vec<UserKeyword> = list(items.get(3)).iter().filter_map(keyword_of).collect();
    let mut by_name = HashMap::new();
    let mut embedded = Vec::new();
    for (i, kw) in keywords.iter().enumerate() {
        match Embedded::parse(&kw.name) {
            Some(pattern) => embedded.push((i, pattern)),
            None => {
                by_name.insert(normalize_name(&kw.name), i);
            }
        }
    }
    let count = keywords.len();
    let (lib_name, imported) = if inline {
        (
            INLINE.to_string(),
            format!("Imported resource text ({count} keywords)."),
        )
    } else {
        (
            paths::splitext(&paths::basename(&path)).0,
            format!("Imported resource file '{path}' ({count} keywords)."),
        )
    };
    s.add_resource(
        lib_name,
        ResourceLib {
            keywords,
            by_name,
            embedded,
        },
    );
    s.info(imported);
    Ok(())
}

/// The absolute path of resource file `given` and its text, from the granted
/// folders.
fn read_file(given: &str) -> RfResult<(String, String)> {
    let path = paths::absnorm(given, &sandbox::cwd());
    if sandbox::folders().is_empty() {
        return Err(RfError::denied(format!(
            "Resource file '{path}' cannot be imported: the host grants the rf plugin no folders to read it from; grant one with {}.",
            sandbox::GRANT_KEY
        )));
    }
    sandbox::readable(&path)?;
    if !sandbox::is_file(&path) {
        // RF names the file as it was given.
        return Err(RfError::fail(format!(
            "Resource file '{given}' does not exist."
        )));
    }
    let bytes = sandbox::read_bounded(&path)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok((path, text))
}

/// A variable of the file's `*** Variables ***`. RF sets them in the suite's
/// scope, so a variable the session (a test) already has keeps its value.
fn set_variable(
    s: &mut Session,
    variable: &Value,
    curdir: &dyn Fn(&str) -> String,
) -> RfResult<()> {
    let fields = variable.list_items().unwrap_or_default();
    let name = text_of(fields.first());
    let values: Vec<String> = list(fields.get(1))
        .iter()
        .map(|v| curdir(&v.to_str()))
        .collect();
    let separator = fields
        .get(2)
        .filter(|v| !matches!(v, Value::None))
        .map(Value::to_str);
    if let Some(base) = body::base_of(&name)
        && s.store.get(&base).is_some()
    {
        return Ok(());
    }
    let (base, value) = variable_value(s, &name, &values, separator.as_deref())?;
    s.store.set(&base, value);
    Ok(())
}

/// A variable's name without its decoration and its value, as RF resolves a
/// variable table entry or `VAR`: a scalar of several values joins them (with
/// `separator`, else a space), `@{x}` is a list, `&{x}` a dictionary of
/// `name=value` items.
fn variable_value(
    s: &mut Session,
    name: &str,
    values: &[String],
    separator: Option<&str>,
) -> RfResult<(String, Value)> {
    let values: Vec<Arg> = values.iter().map(|v| Arg::Raw(v.clone())).collect();
    let (sigil, base) = match (
        name.chars().next(),
        name.get(2..name.len().saturating_sub(1)),
    ) {
        (Some(c @ ('$' | '@' | '&')), Some(base)) if name.ends_with('}') => (c, base.to_string()),
        _ => return Err(RfError::fail(format!("Invalid variable name '{name}'."))),
    };
    let value = match sigil {
        '@' => s.run("Create List", &values)?,
        '&' => s.run("Create Dictionary", &values)?,
        _ if values.is_empty() => Value::str(""),
        _ if values.len() == 1 && separator.is_none() => s.store.replace_scalar(&values[0])?,
        _ => {
            let mut call = vec![Arg::Value(Value::str(format!(
                "SEPARATOR={}",
                separator.unwrap_or(" ")
            )))];
            call.extend(values);
            s.run("Catenate", &call)?
        }
    };
    Ok((base, value))
}

/// Runs keyword `kw` of the resource at `lib` with `args`: its arguments bound as
/// RF binds a user keyword's, its body run step by step, its local variables gone
/// afterwards.
pub(crate) fn run_keyword(
    s: &mut Session,
    (lib, kw): (usize, usize),
    embedded: &[String],
    args: &[Arg],
) -> RfResult<Value> {
    let crate::engine::LibKind::Resource(resource) = &s.libraries[lib].kind else {
        return Err(RfError::fail("internal error: not a resource file"));
    };
    let keyword = &resource.keywords[kw];
    let full_name = format!("{}.{}", s.libraries[lib].name, keyword.name);
    if let Some((kind, line)) = body::unsupported(&keyword.body) {
        return Err(RfError::fail(format!(
            "Keyword '{full_name}' uses {kind} (line {line}), which the rf sandbox does not run in resource-file keywords."
        )));
    }
    // Owned, so the session can run them while it changes.
    let spec = keyword.spec.clone();
    let steps = keyword.body.clone();
    let names = resource.embedded_names(kw).to_vec();
    let (setup, teardown) = (keyword.setup.clone(), keyword.teardown.clone());
    let resolve = Resolve {
        full_name: &full_name,
        spec: &spec,
        resolve_until: None,
    };
    let (positional, named) = resolve.resolve_dynamic(&s.store, args)?;
    // Local names: the arguments and what the body assigns; their earlier values
    // come back when the keyword ends. Taken before binding, which sets arguments
    // for the defaults that use them.
    let mut locals: Vec<String> = spec
        .positional
        .iter()
        .chain(&spec.named_only)
        .chain(&spec.varargs)
        .chain(&spec.kwargs)
        .map(|p| p.name.clone())
        .collect();
    // Embedded values are resolved in the caller's scope, as arguments are.
    let mut from_name = Vec::new();
    for (name, text) in names.into_iter().zip(embedded) {
        from_name.push((name, s.store.replace_scalar_str(text)?));
    }
    locals.extend(from_name.iter().map(|(n, _)| n.clone()));
    body::locals(&steps, &mut locals);
    let saved: Vec<(String, Option<Value>)> = locals
        .iter()
        .map(|n| (n.clone(), s.store.get(n).cloned()))
        .collect();
    let bound = match bind(s, &spec, positional, named) {
        Ok(bound) => bound,
        Err(e) => {
            restore(s, saved);
            return Err(e);
        }
    };
    for (name, value) in from_name.into_iter().chain(bound) {
        s.store.set(&name, value);
    }
    // As RF's user keyword runner: a failed `[Setup]` skips the body, and the
    // `[Teardown]` runs whatever happened, its failure added to the body's.
    let setup = fixture(s, &setup);
    let result = match setup {
        Some(e) => Err(e),
        None => match body::run_body(s, &steps) {
            Ok(body::Flow::Return(value)) => Ok(value),
            Ok(_) => Ok(Value::None),
            // `Return From Keyword` and `Run Keyword And Return` end this keyword.
            Err(e) if e.returning => s.returned.take().unwrap_or(Ok(Value::None)),
            Err(e) => Err(e),
        },
    };
    let result = match (result, fixture(s, &teardown)) {
        (result, None) => result,
        (Ok(_), Some(td)) => Err(RfError {
            message: format!("Keyword teardown failed:\n{}", td.message),
            ..td
        }),
        (Err(e), Some(td)) => Err(RfError {
            message: format!(
                "{}\n\nAlso keyword teardown failed:\n{}",
                e.message, td.message
            ),
            ..e
        }),
    };
    restore(s, saved);
    result
}

/// Runs a `[Setup]` or `[Teardown]`: its failure, if it failed (`Pass Execution`
/// in it is none, as in RF).
fn fixture(s: &mut Session, call: &[body::Step]) -> Option<RfError> {
    match body::run_body(s, call) {
        Err(e) if e.pass => None,
        Err(e) => Some(e),
        Ok(_) => None,
    }
}

/// Puts back the values the session had for a keyword's local names.
fn restore(s: &mut Session, saved: Vec<(String, Option<Value>)>) {
    for (name, value) in saved {
        match value {
            Some(v) => s.store.set(&name, v),
            None => {
                s.store.remove(&name);
            }
        }
    }
}

/// Binds the call's values to the keyword's arguments as RF does: by position, then
/// by name, then the default (resolved now, so it can use earlier arguments);
/// `*rest` takes the positional values left, `**named` the named ones left.
fn bind(
    s: &mut Session,
    spec: &Spec,
    positional: Vec<Value>,
    named: Vec<(String, Value)>,
) -> RfResult<Vec<(String, Value)>> {
    let mut named: Vec<(String, Value)> = named;
    let mut bound: Vec<(String, Value)> = Vec::new();
    let mut positional = positional.into_iter();
    let mut take = |s: &mut Session, param: &crate::args::Param, from_position: Option<Value>| {
        let value = match from_position {
            Some(v) => v,
            None => match named.iter().position(|(n, _)| *n == param.name) {
                Some(i) => named.remove(i).1,
                None => match &param.default {
                    Some(Some(default)) => {
                        // Earlier arguments are visible to a later default.
                        for (n, v) in &bound {
                            s.store.set(n, v.clone());
                        }
                        s.store.replace_scalar_str(&default.to_str())?
                    }
                    _ => Value::None,
                },
            },
        };
        bound.push((param.name.clone(), value));
        Ok::<(), RfError>(())
    };
    for param in &spec.positional {
        let value = positional.next();
        take(s, param, value)?;
    }
    let rest: Vec<Value> = positional.collect();
    for param in &spec.named_only {
        take(s, param, None)?;
    }
    if let Some(varargs) = &spec.varargs {
        bound.push((varargs.name.clone(), Value::list(rest)));
    }
    if let Some(kwargs) = &spec.kwargs {
        let items = named.into_iter().map(|(k, v)| (Value::str(k), v)).collect();
        bound.push((kwargs.name.clone(), Value::dict(items, true)));
    }
    Ok(bound)
}

fn parse(text: &str, path: &str) -> RfResult<Value> {
    let namespace = [
        ("_text".to_string(), Value::str(text)),
        ("_source".to_string(), Value::str(path)),
    ];
    call_module("stephost_libraries.resource(_text, _source)", &namespace).map_err(|failure| {
        RfError::fail(match failure {
            CallFailure::TooDeep => "internal error: the resource text did not encode".to_string(),
            CallFailure::Unreadable(m) | CallFailure::Failed(m) => {
                format!("Importing resource file '{path}' failed: {m}")
            }
            CallFailure::NoEvaluator(why) => format!(
                "Importing resource file '{path}' failed: resource files are parsed by Robot Framework in the host's Python interpreter, and this host has none ({why})."
            ),
        })
    })
}

/// `(name, args, body, line)` as `stephost_libraries.resource` lists a keyword.
fn keyword_of(item: &Value) -> Option<UserKeyword> {
    let fields = item.list_items()?;
    let name = fields.first()?.as_str()?.to_string();
    let args: Vec<String> = list(fields.get(1)).iter().map(Value::to_str).collect();
    let body = body::steps_of(fields.get(2));
    let setup = body::steps_of(fields.get(4));
    let teardown = body::steps_of(fields.get(5));
    Some(UserKeyword {
        spec: crate::remote::spec_of(&args),
        name,
        args,
        body,
        setup,
        teardown,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use stephost_plugin::mock;
    use stephost_plugin::python::{Evaluation, EvaluationError};

    use crate::engine::Session;
    use crate::keywords::operating_system::sandbox::{Folder, set_folders};
    use crate::keywords::tests::{NoNetwork, call as run};

    /// Answers every parse with one file: a variable and three keywords, as
    /// `stephost_libraries.resource` lists them.
    struct Parsed;

    impl mock::MockHost for Parsed {
        fn evaluate(
            &mut self,
            expression: &str,
            _variables: &str,
            _namespace: &str,
            modules: &str,
        ) -> Result<Evaluation, EvaluationError> {
            assert!(expression.starts_with("stephost_libraries.resource("));
            assert_eq!(modules, "stephost_libraries");
            let t = |v| json!({ "tuple": v });
            let answer = t(json!([
                "PASS",
                [],
                [t(json!(["${GREETING}", ["Hello"], null]))],
                [
                    t(json!([
                        "Greet",
                        ["name", "punct=${name}!"],
                        [
                            t(json!([
                                "KEYWORD",
                                "Catenate",
                                ["${GREETING}", "${name}${punct}"],
                                ["${text} ="]
                            ])),
                            t(json!(["RETURN", ["${text}"]])),
                        ],
                        3
                    ])),
                    t(json!([
                        "Pair",
                        ["*items", "**named"],
                        [t(json!(["RETURN", ["${items}", "${named}"]])),],
                        8
                    ])),
                    t(json!(["Loop", [], [t(json!(["SOMEDAY", 12]))], 11])),
                ],
            ]));
            Ok(Evaluation {
                value: answer.to_string(),
                truthy: true,
                changed: "[]".into(),
            })
        }
    }

    #[test]
    fn keywords_bind_arguments_as_rf_does_and_keep_their_locals() {
        let dir = std::env::temp_dir().join(format!("rf-resource-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp folder");
        std::fs::write(dir.join("common.resource"), "*** Keywords ***\n").expect("temp file");
        let folder = dir.to_str().expect("UTF-8 temp path").to_string();
        set_folders(vec![Folder {
            path: folder.clone(),
            read_only: true,
        }]);
        mock::reset();
        mock::install(Parsed);
        let mut s = Session::new(Box::new(NoNetwork));
        s.store.set("name", crate::value::Value::str("outer"));
        run(
            &mut s,
            "Import Resource",
            &[&format!("{folder}/common.resource")],
        )
        .expect("imports");
        assert!(
            s.take_logs()
                .iter()
                .any(|l| l.message.ends_with("common.resource' (3 keywords)."))
        );
        // A default that uses an earlier argument, by position and by name.
        assert_eq!(
            run(&mut s, "Greet", &["Ann"]).expect("runs").repr(),
            "'Hello AnnAnn!'"
        );
        assert_eq!(
            run(&mut s, "common.greet", &["Bo", "punct=?"])
                .expect("runs")
                .repr(),
            "'Hello Bo?'"
        );
        // The caller's `${name}` is back, the keyword's `${text}` gone.
        assert_eq!(
            s.store.get("name").map(|v| v.repr()).as_deref(),
            Some("'outer'")
        );
        assert!(s.store.get("text").is_none());
        let pair = run(&mut s, "Pair", &["a", "b", "k=v"]).expect("runs");
        assert_eq!(pair.repr(), "[['a', 'b'], {'k': 'v'}]");
        let error = run(&mut s, "Greet", &[]).expect_err("too few");
        assert_eq!(
            error.message,
            "Keyword 'common.Greet' expected 1 to 2 arguments, got 0."
        );
        // A structure a later RF may add, which this plugin does not know.
        let error = run(&mut s, "Loop", &[]).expect_err("not run");
        assert!(
            error
                .message
                .starts_with("Keyword 'common.Loop' uses SOMEDAY (line 12)"),
            "{}",
            error.message
        );
        set_folders(Vec::new());
        mock::reset();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
