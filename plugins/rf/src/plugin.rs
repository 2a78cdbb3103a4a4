//! The plugin's verbs, as the SDK's verb table (`describe` and `invoke` both come from
//! [`verbs`]). Natively the SDK's `log` goes to its mock host, so all of it is tested
//! with `cargo test`.
//!
//! - `run_keyword` runs one keyword: `{keyword, args?, assign?, timeout_ms?}`. The value
//!   is the keyword's return value as JSON; the content is its log. Failures carry RF's
//!   message and a code: `failed`, `not-found` (no such keyword; nothing ran) or
//!   `invalid-input` (wrong arguments; nothing ran). A `failed` failure also carries the
//!   error's `classification` and the `recovery` strategies that can run in this session
//!   (see [`crate::recovery`]), in the failure's own fields.
//! - `keywords` lists keywords with argument specs and one-line docs, remote ones
//!   included: `{filter?, library?}`.
//! - `variables` returns the session's variables as a JSON object.
//! - `test` returns what the test and suite keywords (`Set Tags`, ...) set in the session.

use serde_json::{Map, Value as Json, json};
use stephost_plugin::{Args, Failure, FailureCode, Level as HostLevel, Output, Plugin, Verb, log};

use crate::engine::{Level, LogLine, Session};
use crate::error::{Code, RfError};
use crate::matching::{glob_match, normalize_name};
use crate::value::Value;
use crate::variables::Arg;

/// The plugin: its `describe` and its verb table. Its state is the RF session.
pub struct Rf;

impl Plugin for Rf {
    const NAME: &'static str = "rf";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str = "Robot Framework keywords with RF semantics: BuiltIn, String, \
        Collections, DateTime and OperatingSystem (in granted folders) run in the sandbox \
        (variables persist for the session), other libraries through RF's remote library \
        interface over allow-listed HTTP.";
    // One RF session per instance; the host gives every session its own instance.
    type State = Session;

    fn verbs() -> Vec<Verb<Session>> {
        verbs()
    }
}

/// The session the SDK creates for an instance, on its first call: remote
/// libraries go through this build's transport (`wasi:http` in the component,
/// `std::net` natively).
impl Default for Session {
    fn default() -> Self {
        Session::new(crate::remote::default_transport())
    }
}

/// An input schema. No `$schema`: the host validates with draft 2020-12, the
/// default, and every character here is sent to the model with the tool.
/// An empty `required` is left out for the same reason.
fn schema(properties: Json, required: &[&str]) -> Json {
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// The verbs, in listing order.
pub fn verbs() -> Vec<Verb<Session>> {
    vec![
        Verb::new(
            "run_keyword",
            "Run one Robot Framework keyword: BuiltIn, String and Collections run in \
                the sandbox, DateTime and OperatingSystem (in folders the host grants) after `Import \
                Library`, other Python libraries (Process, RequestsLibrary, ...) after `Import Library` \
                when the host grants them, remote servers via `Import Library    Remote    \
                http://host:port    AS    Name`. args are RF cells (`${var}`, `@{list}`, `&{dict}`, `name=value`, `${{expr}}`); \
                non-string JSON args pass as values. Variables persist in the session; `assign` also \
                stores the return value. Returns it as JSON, the log as text. Fails with `failed`, \
                `assertion` (fails the same way if repeated), `not-found` (with suggestions), \
                `invalid-input`, `denied` or `skip`.",
            schema(
                json!({
                    "keyword": {"type": "string", "minLength": 1, "description": "e.g. `Should Be Equal`, `Calc.Add`."},
                    "args": {"type": "array", "default": []},
                    "assign": {
                        "type": ["string", "array"],
                        "items": {"type": "string"},
                        "maxItems": 64,
                        "description": "`name`, `${name}`, `@{name}` or `&{name}`; a list unpacks like `${a}    @{rest} =`."
                    },
                    "timeout_ms": {"type": "integer", "minimum": 0, "description": "Ignored: the host enforces step timeouts."}
                }),
                &["keyword"],
            ),
            run_keyword,
        )
        .with_output_schema(
            json!({"description": "The keyword's return value: null for None, arrays for lists and tuples, objects for dictionaries."}),
        )
        .acts_on_world(true),
        Verb::new(
            "keywords",
            "List the keywords this session can run (BuiltIn, String, Collections, \
                imported DateTime, OperatingSystem, XML, host-run and remote libraries) with argument specs and one-line docs. `filter`: a \
                substring or `*`/`?` glob, ignoring case, spaces and underscores; `library`: one \
                library only.",
            schema(
                json!({
                    "filter": {"type": "string"},
                    "library": {"type": "string"}
                }),
                &[],
            ),
            keywords,
        )
        .with_output_schema(json!({"type": "array", "items": {"type": "object"}})),
        Verb::new(
            "variables",
            "The session's Robot Framework variables as a JSON object, keyed by \
                undecorated name.",
            schema(json!({}), &[]),
            variables,
        )
        .with_output_schema(json!({"type": "object"})),
        Verb::new(
            "test",
            "The test this session is (one session is one RF test in one suite): the tags, \
                message, documentation and metadata that `Set Tags`, `Remove Tags`, `Set Test \
                Message` and the documentation and metadata keywords left, and the suite's \
                documentation and metadata.",
            schema(json!({}), &[]),
            |session: &mut Session, _: &Args| output(session.context.to_json(), None, &[]),
        )
        .with_output_schema(json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "message": {"type": "string"},
                "documentation": {"type": "string"},
                "metadata": {"type": "object"},
                "suite": {"type": "object"}
            }
        })),
    ]
}

/// Runs verb `verb` on `session`, through the same table and checks as the
/// component (what the tests call).
pub fn invoke(session: &mut Session, verb: &str, input: &str) -> Result<Output, Failure> {
    stephost_plugin::invoke_with::<Rf>(session, verb, input)
}

/// Sends a call's RF log lines to the host's log (RF's NONE level shows as info).
fn forward(logs: &[LogLine]) {
    for line in logs {
        let level = match line.level {
            Level::Trace => HostLevel::Trace,
            Level::Debug => HostLevel::Debug,
            Level::Info | Level::None => HostLevel::Info,
            Level::Warn => HostLevel::Warn,
            Level::Error => HostLevel::Error,
        };
        log(level, &line.message);
    }
}

/// A successful result: the value, and the log lines as text when `text` is set.
fn output(value: Json, text: Option<String>, logs: &[LogLine]) -> Result<Output, Failure> {
    forward(logs);
    let out = Output::new(value);
    Ok(match text {
        Some(text) => out.with_text(text),
        None => out,
    })
}

fn variables(session: &mut Session, _: &Args) -> Result<Output, Failure> {
    let mut map = Map::new();
    for (name, value) in session.store.iter() {
        map.insert(name.to_string(), value.to_json());
    }
    output(Json::Object(map), None, &[])
}

/// Log lines as the step's text: `[LEVEL] message`.
pub fn log_text(logs: &[LogLine]) -> String {
    logs.iter()
        .map(|l| format!("[{}] {}", l.level.name(), l.message))
        .collect::<Vec<_>>()
        .join("\n")
}

fn log_json(logs: &[LogLine]) -> Json {
    Json::Array(
        logs.iter()
            .map(|l| json!({"level": l.level.name(), "message": l.message}))
            .collect(),
    )
}

fn run_keyword(session: &mut Session, args: &Args) -> Result<Output, Failure> {
    let keyword = args.str("keyword")?.to_owned();
    let cells: Vec<Arg> = match args.get("args") {
        None => Vec::new(),
        Some(Json::Array(items)) => items
            .iter()
            .map(|a| match a {
                Json::String(s) => Arg::Raw(s.clone()),
                other => Arg::Value(Value::from_json(other)),
            })
            .collect(),
        Some(other) => {
            return Err(
                Failure::invalid_input(format!("`args` must be an array; got `{other}`"))
                    .with_field("args"),
            );
        }
    };
    let bad_assign = || {
        Failure::invalid_input("`assign` must be a name or a list of names").with_field("assign")
    };
    let targets: Vec<String> = match args.get("assign") {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::String(one)) => vec![one.clone()],
        Some(Json::Array(many)) => many
            .iter()
            .map(|t| t.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(bad_assign)?,
        Some(_) => return Err(bad_assign()),
    };
    session.take_logs();
    session.reached_out = false;
    let changes_before = crate::value::changes();
    let result = session
        .run(&keyword, &cells)
        .and_then(|v| session.assign_all(&targets, v.clone()).map(|()| v));
    match result {
        Ok(value) => {
            let logs = session.take_logs();
            let text = (!logs.is_empty()).then(|| log_text(&logs));
            output(value.to_json(), text, &logs)
        }
        Err(e) if e.pass => {
            // `Pass Execution` ends the step successfully.
            let logs = session.take_logs();
            output(Json::Null, Some(log_text(&logs)), &logs)
        }
        Err(e) => {
            // RF shows a skip's reason as the test's SKIP message, not as an error.
            let level = if e.skip { Level::Info } else { Level::Error };
            session.log(level, e.message.clone());
            let logs = session.take_logs();
            forward(&logs);
            // Repeating the call cannot change how it failed when it reached nothing
            // outside the session and changed nothing in it.
            let repeatable = !session.reached_out && crate::value::changes() == changes_before;
            Err(failure(session, &keyword, e, &logs, repeatable))
        }
    }
}

/// The code of a failure that repeating the call cannot change: a keyword of
/// BuiltIn, String or Collections (or a run-keyword variant running only those)
/// failed on its arguments and the session's variables, and changed none of them.
pub const ASSERTION: &str = "assertion";

/// A failed keyword as the step's failure: RF's message, a code, the details
/// (keyword, continuable, fatal, log, traceback) and, for a keyword that ran and
/// failed, its classification and the recovery strategies this session can run.
fn failure(
    session: &mut Session,
    keyword: &str,
    e: RfError,
    logs: &[LogLine],
    repeatable: bool,
) -> Failure {
    let (code, input_fired) = match e.code {
        Code::NotFound => (FailureCode::NotFound, false),
        Code::InvalidInput => (FailureCode::InvalidInput, false),
        Code::Denied => (FailureCode::Denied, false),
        // Why not `failed`: a skip is no failure to retry or recover from, and the
        // batch fronts end the batch SKIPPED on it.
        Code::Skip => (FailureCode::Other("skip".into()), false),
        // Why its own code: a keyword that read only its arguments and the session
        // fails the same way however often it is run, so retry policies that re-run
        // `failed` (execute_batch's `retry` and `recover`) leave it alone.
        Code::Failed if repeatable => (FailureCode::Other(ASSERTION.into()), true),
        Code::Failed => (FailureCode::Failed, true),
    };
    let mut details = json!({
        "keyword": keyword,
        "continuable": e.continuable,
        "fatal": e.fatal,
        "log": log_json(logs),
    });
    if !e.traceback.is_empty() {
        details["traceback"] = Json::String(e.traceback.clone());
    }
    let mut failure = Failure::new(code, e.message.clone())
        .with_input_fired(input_fired)
        .with_details(details);
    // Only a keyword that ran and failed is worth recovering from, and only if it
    // reached out: the others fail the same way on every retry.
    if e.code == Code::Failed {
        if !repeatable {
            let (class, strategies) = crate::recovery::propose(session, keyword, &e);
            failure = failure.with_classification(class.name());
            failure.recovery = strategies;
        } else {
            failure = failure.with_classification(crate::recovery::classify(&e.message).name());
        }
    }
    failure
}

fn keywords(session: &mut Session, args: &Args) -> Result<Output, Failure> {
    let filter = args.opt_str("filter")?;
    let library = args.opt_str("library")?;
    let matches = |name: &str| match &filter {
        None => true,
        Some(f) if f.contains(['*', '?']) => glob_match(name, f, true, true),
        Some(f) => normalize_name(name).contains(&normalize_name(f)),
    };
    let lib_ok = |lib: &str| {
        library
            .as_ref()
            .is_none_or(|l| normalize_name(l) == normalize_name(lib))
    };
    let mut out = Vec::new();
    for (li, lib) in session.libraries.iter().enumerate() {
        if !lib_ok(&lib.name) {
            continue;
        }
        match &lib.kind {
            crate::engine::LibKind::Static(real) => {
                for kw in crate::keywords::registry()
                    .iter()
                    .filter(|k| k.info.library == *real)
                {
                    if matches(kw.info.name) {
                        out.push(json!({
                            "name": kw.info.name,
                            "library": lib.name,
                            "full_name": format!("{}.{}", lib.name, kw.info.name),
                            "args": kw.info.args,
                            "doc": kw.info.doc,
                            "supported": kw.run.is_some(),
                        }));
                    }
                }
            }
            crate::engine::LibKind::Python(p) => {
                for kw in p.keywords.iter().filter(|k| matches(&k.name)) {
                    out.push(listed(&lib.name, &kw.name, &kw.args, &kw.short_doc));
                }
            }
            crate::engine::LibKind::Resource(r) => {
                for kw in r.keywords.iter().filter(|k| matches(&k.name)) {
                    let mut entry = listed(&lib.name, &kw.name, &kw.args, "");
                    entry["resource"] = Json::Bool(true);
                    out.push(entry);
                }
            }
            crate::engine::LibKind::Remote(r) => {
                let names: Vec<String> = r
                    .keyword_names()
                    .iter()
                    .filter(|n| matches(n))
                    .cloned()
                    .collect();
                // A host-run library's URL carries its session's secret path: not shown.
                let uri = if r.is_hosted() {
                    Json::Null
                } else {
                    json!(r.uri())
                };
                out.push(json!({"remote_library": lib.name, "uri": uri, "hosted": r.is_hosted(), "index": li, "names": names}));
            }
        }
    }
    // Remote keywords need calls to their server for specs and docs.
    let mut expanded = Vec::new();
    for item in out {
        let Some(li) = item.get("index").and_then(Json::as_u64) else {
            expanded.push(item);
            continue;
        };
        let li = usize::try_from(li).unwrap_or(0);
        let lib_name = item["remote_library"]
            .as_str()
            .unwrap_or("Remote")
            .to_string();
        for name in item["names"].as_array().cloned().unwrap_or_default() {
            let name = name.as_str().unwrap_or("").to_string();
            let args = crate::remote::keyword_args(session, li, &name).unwrap_or_default();
            let doc = crate::remote::keyword_doc(session, li, &name).unwrap_or_default();
            let first_line = doc.lines().next().unwrap_or("").to_string();
            let mut entry = json!({
                "name": name,
                "library": lib_name,
                "full_name": format!("{lib_name}.{name}"),
                "args": args.join(", "),
                "doc": first_line,
                "supported": true,
            });
            if item["hosted"] == Json::Bool(true) {
                entry["hosted"] = Json::Bool(true);
            } else {
                entry["remote"] = item["uri"].clone();
            }
            expanded.push(entry);
        }
    }
    let logs = session.take_logs();
    output(Json::Array(expanded), None, &logs)
}

/// A `keywords` entry of a keyword whose arguments are in the remote API's form.
fn listed(library: &str, name: &str, args: &[String], doc: &str) -> Json {
    json!({
        "name": name,
        "library": library,
        "full_name": format!("{library}.{name}"),
        "args": args.join(", "),
        "doc": doc,
        "supported": true,
    })
}

#[cfg(test)]
mod tests;
