//! `run_macro`: a fixed sequence of tool calls `[{tool, params}]` in one call,
//! as `shared/seeds/run_macro.txt` describes it, mapped onto the generic batch.
//!
//! Each `tool` is a verb tool's name (`focus_window`, `testkit_echo`) and
//! `params` its input; `{tool: "sleep", params: {ms}}` is the pseudo-step,
//! capped at 10000 ms. Unlike the seed's original, every step is validated
//! before the first one acts (the engine's plan does that for the whole batch).

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::desktop::{DESKTOP, step_timeout_ms, unknown_args};
use super::{Dialect, arg_problem, insert_outcome, session_id_schema};
use crate::plan::{join_field, key_field};
use crate::{Catalog, Limits};
use crate::{Problem, Report, StepReport};

/// Most steps in one macro.
const MAX_STEPS: usize = 50;
/// Longest `sleep` pseudo-step.
const MAX_SLEEP_MS: u64 = 10_000;
const FIELDS: &[&str] = &["steps", "stop_on_error", "include", "session_id"];

/// The `run_macro` tool.
pub struct RunMacro;

/// Verb tool names, as the catalog names them by default, to (plugin, verb).
/// The desktop plugin's verbs win a clash: this is the desktop tool.
fn tools(catalog: &Catalog) -> BTreeMap<String, (String, String)> {
    let mut map = BTreeMap::new();
    let desktop_first = catalog
        .get(DESKTOP)
        .into_iter()
        .chain(catalog.plugins().filter(|p| p.name() != DESKTOP));
    for plugin in desktop_first {
        for verb in plugin.verb_names() {
            let name = if plugin.info().bare_tool_names {
                verb.to_owned()
            } else {
                format!("{}_{verb}", plugin.name())
            };
            map.entry(name)
                .or_insert_with(|| (plugin.name().to_owned(), verb.to_owned()));
        }
    }
    map
}

impl Dialect for RunMacro {
    fn name(&self) -> &str {
        "run_macro"
    }

    fn description(&self, _catalog: &Catalog) -> String {
        // The seed's content, cut to what changes a model's call; the tool
        // names are the `tool` enum of the input schema.
        format!(
            "Execute multiple desktop tools sequentially in one macro call to reduce round-trip latency for \
predictable multi-step workflows (focus -> sleep -> type -> screenshot). steps[] are {{tool, params}}, params \
exactly what that tool takes; the pseudo-step {{tool: \"sleep\", params: {{ms: N}}}} pauses up to {MAX_SLEEP_MS} \
ms. At most {MAX_STEPS} steps, all validated before the first runs. stop_on_error=true (default) halts on the \
first failure. You see no intermediate result: do not use it for conditional logic, and split the macro where \
a step may fail conditionally (a dialog that may appear). Each screenshot step costs the tokens of a standalone \
call. include: ['envelope'] wraps the result as {{_version, data, as_of, confidence}}; ['raw'] (default) does not."
        )
    }

    fn input_schema(&self, catalog: &Catalog) -> Value {
        let mut names: Vec<String> = tools(catalog).into_keys().collect();
        names.push("sleep".into());
        names.sort();
        names.dedup();
        json!({
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_STEPS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "tool": {"type": "string", "enum": names},
                            "params": {"type": "object"}
                        },
                        "required": ["tool"],
                        "additionalProperties": false
                    }
                },
                "stop_on_error": {"type": "boolean", "default": true},
                "include": {
                    "type": "array",
                    "items": {"enum": ["envelope", "raw"]}
                },
                "session_id": session_id_schema()
            },
            "required": ["steps"],
            "additionalProperties": false
        })
    }

    fn output_schema(&self) -> Value {
        // Top level only (see `batch::report_schema`): results[] entries are
        // {step (1-based), tool, ok, result, error, attempts, time_ms}. Nothing
        // is required: with include ["envelope"] the result is
        // {_version, data, as_of, confidence} instead.
        json!({
            "type": "object",
            "properties": {
                "status": {"type": "string"},
                "session_id": {"type": "string"},
                "results": {"type": "array"},
                "errors": {"type": "array"},
                "data": {"type": "object"}
            }
        })
    }

    fn available(&self, catalog: &Catalog) -> bool {
        catalog.get(DESKTOP).is_some()
    }

    fn to_batch(
        &self,
        args: &Map<String, Value>,
        catalog: &Catalog,
        limits: &Limits,
    ) -> Result<Value, Vec<Problem>> {
        let mut problems = unknown_args(args, FIELDS);
        let on_failure = match args.get("stop_on_error") {
            None | Some(Value::Bool(true)) => "stop",
            Some(Value::Bool(false)) => "continue",
            Some(other) => {
                problems.push(arg_problem(
                    "stop_on_error",
                    format!("must be true or false, got {other}"),
                ));
                "stop"
            }
        };
        if let Err(p) = include_envelope(args) {
            problems.push(p);
        }
        let steps = match args.get("steps") {
            Some(Value::Array(steps)) if steps.is_empty() => {
                problems.push(arg_problem("steps", "must hold at least one step"));
                &[][..]
            }
            Some(Value::Array(steps)) if steps.len() > MAX_STEPS => {
                problems.push(arg_problem(
                    "steps",
                    format!(
                        "holds {} steps; a macro takes at most {MAX_STEPS}",
                        steps.len()
                    ),
                ));
                &[][..]
            }
            Some(Value::Array(steps)) => steps.as_slice(),
            Some(_) => {
                problems.push(arg_problem("steps", "must be an array of {tool, params}"));
                &[][..]
            }
            None => {
                problems.push(arg_problem("steps", "is required"));
                &[][..]
            }
        };
        let known = tools(catalog);
        let mut out = Vec::with_capacity(steps.len());
        for (i, step) in steps.iter().enumerate() {
            match map_step(i, step, &known, limits) {
                Ok(step) => out.push(step),
                Err(p) => problems.extend(p),
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut batch = json!({"steps": out, "on_failure": on_failure});
        if let Some(session) = args.get("session_id") {
            batch["session_id"] = session.clone();
        }
        Ok(batch)
    }

    fn render(&self, report: &Report) -> Value {
        raw(report)
    }

    fn render_call(&self, args: &Map<String, Value>, report: &Report) -> Value {
        let data = raw(report);
        if include_envelope(args).unwrap_or(false) {
            json!({
                "_version": "1.0",
                "data": data,
                "as_of": rfc3339_now(),
                // What the steps saw when they ran: observed, not inferred.
                "confidence": "observed"
            })
        } else {
            data
        }
    }
}

/// Whether `include` asks for the envelope (`raw` wins when both are given).
fn include_envelope(args: &Map<String, Value>) -> Result<bool, Problem> {
    let Some(include) = args.get("include") else {
        return Ok(false);
    };
    let Some(items) = include.as_array() else {
        return Err(arg_problem(
            "include",
            "must be an array such as [\"envelope\"]",
        ));
    };
    let mut envelope = false;
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some("envelope") => envelope = true,
            Some("raw") => return Ok(false),
            _ => {
                return Err(arg_problem(
                    &format!("include[{i}]"),
                    format!("must be \"envelope\" or \"raw\", got {item}"),
                ));
            }
        }
    }
    Ok(envelope)
}

fn step_problem(index: usize, field: &str, message: impl Into<String>) -> Problem {
    Problem {
        step: Some(index),
        label: None,
        field: join_field(&format!("steps[{index}]"), field),
        message: message.into(),
    }
}

/// One `{tool, params}` as a generic step.
fn map_step(
    index: usize,
    step: &Value,
    known: &BTreeMap<String, (String, String)>,
    limits: &Limits,
) -> Result<Value, Vec<Problem>> {
    let Some(obj) = step.as_object() else {
        return Err(vec![step_problem(
            index,
            "",
            "must be an object {tool, params}",
        )]);
    };
    let mut problems = Vec::new();
    for key in obj.keys() {
        if key != "tool" && key != "params" {
            problems.push(step_problem(
                index,
                &key_field(key),
                "unknown field (expected tool, params)",
            ));
        }
    }
    let params = match obj.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p.clone(),
        Some(other) => {
            problems.push(step_problem(
                index,
                "params",
                format!("must be an object, got {other}"),
            ));
            Map::new()
        }
    };
    let tool = match obj.get("tool") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => {
            problems.push(step_problem(
                index,
                "tool",
                format!("must be a tool name, got {other}"),
            ));
            return Err(problems);
        }
        None => {
            problems.push(step_problem(index, "tool", "is required"));
            return Err(problems);
        }
    };
    let (plugin, verb) = if tool == "sleep" {
        match params.get("ms").and_then(Value::as_u64) {
            Some(ms) if ms <= MAX_SLEEP_MS && params.len() == 1 => {}
            _ => problems.push(step_problem(
                index,
                "params.ms",
                format!(
                    "the sleep pseudo-step takes {{ms: 0-{MAX_SLEEP_MS}}}, got {}",
                    Value::Object(params.clone())
                ),
            )),
        }
        (DESKTOP.to_owned(), "sleep".to_owned())
    } else {
        match known.get(&tool) {
            Some(pv) => pv.clone(),
            None => {
                let names: Vec<&str> = known.keys().map(String::as_str).collect();
                let hint = crate::plan::closest(&tool, &names)
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default();
                problems.push(step_problem(
                    index,
                    "tool",
                    format!("unknown tool `{tool}`{hint}"),
                ));
                return Err(problems);
            }
        }
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut out = json!({"plugin": plugin, "verb": verb, "input": params, "label": tool});
    if plugin == DESKTOP
        && let Some(ms) = step_timeout_ms(&verb, &params, limits)
    {
        out["timeout_ms"] = json!(ms);
    }
    Ok(out)
}

fn result_json(step: &StepReport) -> Value {
    let mut out = json!({
        "step": step.index + 1,
        "tool": step.label.clone().unwrap_or_else(|| step.verb.clone()),
        "ok": step.error.is_none(),
        "attempts": step.attempts,
        "time_ms": step.time_ms,
    });
    insert_outcome(&mut out, step);
    out
}

fn raw(report: &Report) -> Value {
    let mut out = json!({
        "status": report.status,
        "steps_total": report.steps_total,
        "steps_executed": report.steps_executed,
        "never_started": report.never_started,
        "time_ms": report.time_ms,
        "results": report.steps.iter().map(result_json).collect::<Vec<_>>(),
    });
    if let Some(session) = &report.session_id {
        out["session_id"] = json!(session);
    }
    if !report.errors.is_empty() {
        // The engine names the generic step's `input`; here it is `params`.
        let errors: Vec<Value> = report
            .errors
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p.field = rename_input(&p.field);
                json!(p)
            })
            .collect();
        out["errors"] = json!(errors);
    }
    if !report.notes.is_empty() {
        out["notes"] = json!(report.notes);
    }
    out
}

/// `steps[2].input.text` -> `steps[2].params.text`.
fn rename_input(field: &str) -> String {
    match field.split_once("].input") {
        Some((head, tail)) => format!("{head}].params{tail}"),
        None => field.to_owned(),
    }
}

/// Now as RFC 3339 UTC (`2026-01-31T12:00:00Z`).
fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_name_params() {
        assert_eq!(rename_input("steps[2].input.text"), "steps[2].params.text");
        assert_eq!(rename_input("steps[2].input"), "steps[2].params");
        assert_eq!(rename_input("steps"), "steps");
    }

    #[test]
    fn timestamps_look_like_rfc3339() {
        let now = rfc3339_now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.starts_with("20") && now.ends_with('Z'), "{now}");
    }

    #[test]
    fn sleep_pseudo_steps_are_capped_and_unknown_tools_refused() {
        let known = BTreeMap::from([("type".to_owned(), (DESKTOP.to_owned(), "type".to_owned()))]);
        let ok = map_step(
            0,
            &json!({"tool": "sleep", "params": {"ms": 300}}),
            &known,
            &Limits::default(),
        )
        .expect("ok");
        assert_eq!(ok["verb"], "sleep");
        let long = map_step(
            1,
            &json!({"tool": "sleep", "params": {"ms": 20000}}),
            &known,
            &Limits::default(),
        )
        .expect_err("too long");
        assert_eq!(long[0].field, "steps[1].params.ms");
        let unknown = map_step(
            2,
            &json!({"tool": "typo", "params": {}}),
            &known,
            &Limits::default(),
        )
        .expect_err("unknown");
        assert!(
            unknown[0].message.contains("unknown tool `typo`"),
            "{}",
            unknown[0].message
        );
        let typed = map_step(
            3,
            &json!({"tool": "type", "params": {"text": "x"}}),
            &known,
            &Limits::default(),
        )
        .expect("ok");
        assert_eq!(typed["input"]["text"], "x");
    }
}
