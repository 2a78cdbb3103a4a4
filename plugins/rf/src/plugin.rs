//! The plugin's verbs, independent of the WIT bindings so they can be tested natively.
//!
//! - `run_keyword` runs one keyword: `{keyword, args?, assign?, timeout_ms?}`. The value
//!   is the keyword's return value as JSON; the content is its log. Failures carry RF's
//!   message and a code: `failed`, `not-found` (no such keyword; nothing ran) or
//!   `invalid-input` (wrong arguments; nothing ran). A `failed` failure's details also
//!   carry the error's `classification` and the `recovery` strategies that can run in
//!   this session (see [`crate::recovery`]).
//! - `keywords` lists keywords with argument specs and one-line docs, remote ones
//!   included: `{filter?, library?}`.
//! - `variables` returns the session's variables as a JSON object.

use serde_json::{Map, Value as Json, json};

use crate::engine::{Level, LogLine, Session};
use crate::error::{Code, RfError};
use crate::matching::{glob_match, normalize_name};
use crate::value::Value;
use crate::variables::Arg;

/// A verb's description for `describe`.
pub struct VerbSpec {
    /// The verb name.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// JSON Schema of the input.
    pub input_schema: Json,
    /// JSON Schema of the output value, if declared.
    pub output_schema: Option<Json>,
    /// Whether a retry could repeat an effect on the world.
    pub acts_on_world: bool,
}

/// A successful verb call.
#[derive(Debug)]
pub struct VerbOutput {
    /// The result value.
    pub value: Json,
    /// Human-readable text (the keyword's log), if any.
    pub text: Option<String>,
    /// Log lines to forward to the host.
    pub logs: Vec<LogLine>,
}

/// A failed verb call.
#[derive(Debug)]
pub struct VerbFailure {
    /// `failed`, `not-found`, `invalid-input` or `denied`.
    pub code: &'static str,
    /// RF's message.
    pub message: String,
    /// False when the keyword provably did not run.
    pub input_fired: bool,
    /// Structured details.
    pub details: Json,
    /// Log lines to forward to the host.
    pub logs: Vec<LogLine>,
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
pub fn verbs() -> Vec<VerbSpec> {
    vec![
        VerbSpec {
            name: "run_keyword",
            description: "Run one Robot Framework keyword: BuiltIn, String and Collections run in \
                the sandbox, other libraries via `Import Library    Remote    http://host:port    AS    \
                Name`. args are RF cells (`${var}`, `@{list}`, `&{dict}`, `name=value`, `${{expr}}`); \
                non-string JSON args pass as values. Variables persist in the session; `assign` also \
                stores the return value. Returns it as JSON, the log as text. Fails with `failed`, \
                `not-found` (with suggestions) or `invalid-input`.",
            input_schema: schema(
                json!({
                    "keyword": {"type": "string", "minLength": 1, "description": "e.g. `Should Be Equal`, `Calc.Add`."},
                    "args": {"type": "array", "default": []},
                    "assign": {"type": "string", "description": "`name`, `${name}`, `@{name}` or `&{name}`."},
                    "timeout_ms": {"type": "integer", "minimum": 0, "description": "Ignored: the host enforces step timeouts."}
                }),
                &["keyword"],
            ),
            output_schema: Some(
                json!({"description": "The keyword's return value: null for None, arrays for lists and tuples, objects for dictionaries."}),
            ),
            acts_on_world: true,
        },
        VerbSpec {
            name: "keywords",
            description: "List the keywords this session can run (BuiltIn, String, Collections, \
                imported remote libraries) with argument specs and one-line docs. `filter`: a \
                substring or `*`/`?` glob, ignoring case, spaces and underscores; `library`: one \
                library only.",
            input_schema: schema(
                json!({
                    "filter": {"type": "string"},
                    "library": {"type": "string"}
                }),
                &[],
            ),
            output_schema: Some(json!({"type": "array", "items": {"type": "object"}})),
            acts_on_world: false,
        },
        VerbSpec {
            name: "variables",
            description: "The session's Robot Framework variables as a JSON object, keyed by \
                undecorated name.",
            input_schema: schema(json!({}), &[]),
            output_schema: Some(json!({"type": "object"})),
            acts_on_world: false,
        },
    ]
}

fn invalid(message: impl Into<String>) -> VerbFailure {
    VerbFailure {
        code: "invalid-input",
        message: message.into(),
        input_fired: false,
        details: Json::Null,
        logs: Vec::new(),
    }
}

fn parse_input(input: &str, allowed: &[&str]) -> Result<Map<String, Json>, VerbFailure> {
    let value: Json = match input.trim() {
        "" => Json::Object(Map::new()),
        text => serde_json::from_str(text)
            .map_err(|e| invalid(format!("input is not valid JSON: {e}")))?,
    };
    let Json::Object(map) = value else {
        return Err(invalid("input must be a JSON object"));
    };
    if let Some(key) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(invalid(format!(
            "unknown field `{key}`; expected one of: {}",
            allowed.join(", ")
        )));
    }
    Ok(map)
}

fn string_field(map: &Map<String, Json>, field: &str) -> Result<Option<String>, VerbFailure> {
    match map.get(field) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(format!(
            "`{field}` must be a string; got `{other}`"
        ))),
    }
}

/// Runs verb `verb` in `session`.
pub fn invoke(session: &mut Session, verb: &str, input: &str) -> Result<VerbOutput, VerbFailure> {
    match verb {
        "run_keyword" => run_keyword(session, input),
        "keywords" => keywords(session, input),
        "variables" => {
            parse_input(input, &[])?;
            let mut map = Map::new();
            for (name, value) in session.store.iter() {
                map.insert(name.to_string(), value.to_json());
            }
            Ok(VerbOutput {
                value: Json::Object(map),
                text: None,
                logs: Vec::new(),
            })
        }
        other => Err(VerbFailure {
            details: json!({"verb": other, "known_verbs": ["run_keyword", "keywords", "variables"]}),
            ..invalid(format!(
                "rf has no verb `{other}`; its verbs are: run_keyword, keywords, variables"
            ))
        }),
    }
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

fn run_keyword(session: &mut Session, input: &str) -> Result<VerbOutput, VerbFailure> {
    let map = parse_input(input, &["keyword", "args", "assign", "timeout_ms"])?;
    let keyword = string_field(&map, "keyword")?
        .ok_or_else(|| invalid("missing required field `keyword`"))?;
    let args: Vec<Arg> = match map.get("args") {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(items)) => items
            .iter()
            .map(|a| match a {
                Json::String(s) => Arg::Raw(s.clone()),
                other => Arg::Value(Value::from_json(other)),
            })
            .collect(),
        Some(other) => return Err(invalid(format!("`args` must be an array; got `{other}`"))),
    };
    let assign = string_field(&map, "assign")?;
    session.take_logs();
    let result = session.run(&keyword, &args).and_then(|v| match &assign {
        Some(target) => session.assign(target, v.clone()).map(|()| v),
        None => Ok(v),
    });
    match result {
        Ok(value) => {
            let logs = session.take_logs();
            Ok(VerbOutput {
                value: value.to_json(),
                text: (!logs.is_empty()).then(|| log_text(&logs)),
                logs,
            })
        }
        Err(e) if e.pass => {
            // `Pass Execution` ends the step successfully.
            let logs = session.take_logs();
            Ok(VerbOutput {
                value: Json::Null,
                text: Some(log_text(&logs)),
                logs,
            })
        }
        Err(e) => {
            session.log(Level::Error, e.message.clone());
            let logs = session.take_logs();
            Err(failure(session, &keyword, e, logs))
        }
    }
}

fn failure(session: &mut Session, keyword: &str, e: RfError, logs: Vec<LogLine>) -> VerbFailure {
    let (code, input_fired) = match e.code {
        Code::NotFound => ("not-found", false),
        Code::InvalidInput => ("invalid-input", false),
        Code::Denied => ("denied", false),
        Code::Failed => ("failed", true),
    };
    let mut details = json!({
        "keyword": keyword,
        "continuable": e.continuable,
        "fatal": e.fatal,
        "log": log_json(&logs),
    });
    if !e.traceback.is_empty() {
        details["traceback"] = Json::String(e.traceback.clone());
    }
    // Only a keyword that ran and failed is worth recovering from; the others fail the
    // same way on every retry.
    if e.code == Code::Failed {
        crate::recovery::annotate(session, keyword, &e, &mut details);
    }
    VerbFailure {
        code,
        message: e.message,
        input_fired,
        details,
        logs,
    }
}

fn keywords(session: &mut Session, input: &str) -> Result<VerbOutput, VerbFailure> {
    let map = parse_input(input, &["filter", "library"])?;
    let filter = string_field(&map, "filter")?;
    let library = string_field(&map, "library")?;
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
            crate::engine::LibKind::Remote(r) => {
                let names: Vec<String> = r
                    .keyword_names()
                    .iter()
                    .filter(|n| matches(n))
                    .cloned()
                    .collect();
                out.push(json!({"remote_library": lib.name, "uri": r.uri(), "index": li, "names": names}));
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
            expanded.push(json!({
                "name": name,
                "library": lib_name,
                "full_name": format!("{lib_name}.{name}"),
                "args": args.join(", "),
                "doc": first_line,
                "supported": true,
                "remote": item["uri"],
            }));
        }
    }
    let logs = session.take_logs();
    Ok(VerbOutput {
        value: Json::Array(expanded),
        text: None,
        logs,
    })
}

#[cfg(test)]
mod tests;
