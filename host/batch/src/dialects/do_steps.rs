//! `do_steps`: a known sequence of desktop actions `[{do: verb, ...args}]`
//! with one look at the end, as `shared/seeds/do_steps.txt` describes it.
//!
//! The mapping onto the generic batch:
//! - each `{do, retry, ...args}` becomes a `desktop` step whose input is the
//!   args (`wait` is `wait_for`); `retry` passes through, so the engine retries
//!   on `world-moved` by default and reports the runs taken;
//! - `look: "auto"` prepends `look_begin` (a capture before the first step) and
//!   every look but `false` appends `look` marked `always`, so the engine runs
//!   it after the last step, or right after the step that failed and stopped
//!   the batch. The plugin waits for the screen to settle, compares and picks
//!   the picture; this file only translates.

use serde_json::{Map, Value, json};

use super::desktop::{DESKTOP, step_timeout_ms, unknown_args};
use super::{Dialect, arg_problem, insert_outcome, session_id_schema, text};
use crate::plan::join_field;
use crate::{BatchStatus, ContentItem, Problem, Report, StepReport, StepStatus};
use crate::{Catalog, Limits};

/// Most steps in one call.
const MAX_STEPS: usize = 100;
/// Longest settle wait.
const MAX_SETTLE_S: f64 = 60.0;
/// Default settle wait.
const DEFAULT_SETTLE_S: f64 = 2.0;
const FIELDS: &[&str] = &[
    "steps",
    "look",
    "look_at",
    "settle_max_s",
    "stop_on_error",
    "session_id",
];
/// Step keys that belong to the engine, not to the verb.
const ENGINE_KEYS: &[&str] = &["retry", "label", "timeout_ms"];
/// Verbs a step may not name: the look machinery belongs to this tool.
const INTERNAL: &[&str] = &["look_begin", "look"];
/// The `do_steps` tool.
pub struct DoSteps;

/// What `look` asked for.
#[derive(Debug, Clone, PartialEq)]
enum Look {
    Auto,
    Window,
    Screen,
    Region(Value),
    Off,
}

impl Dialect for DoSteps {
    fn name(&self) -> &str {
        "do_steps"
    }

    fn description(&self, _catalog: &Catalog) -> String {
        // The seed's content, cut to what changes a model's call.
        "Execute a known sequence of desktop UI actions in one call, looking once at the end: a round trip \
costs seconds, an action milliseconds, so activate, click, type, press Return belong here, not in four calls. \
Use single tools when the next action depends on what the last revealed. Validated up front: a call that \
cannot finish never starts.\n\
Steps: {do: verb, ...that tool's arguments}: activate(target), click(x,y), double_click, right_click, move(x,y), \
drag(from_x,from_y,to_x,to_y), scroll(x,y,dy), type(target,text), key(target,combo), screenshot(target|region), \
press(path,expect_name), set_text(path,text), wait_for(condition,target,timeout) (alias wait), sleep(ms, \
1-60000; prefer wait_for). Any step may carry retry {\"attempts\": N, \"on\": [codes]} (default on world-moved).\n\
look: \"auto\" (default) waits for the screen to settle and attaches the affected window only if something \
changed (a click that hit nothing costs no tokens and says so); \"window\" always; \"screen\" the whole \
desktop; \"region\" look_at; false none. Steps run with their own look off; the picture is taken after the \
last step or at the one that failed."
            .into()
    }

    fn input_schema(&self, _catalog: &Catalog) -> Value {
        let rect = json!({
            "anyOf": [
                {"type": "object", "properties": {
                    "x": {"type": "integer"}, "y": {"type": "integer"},
                    "width": {"type": "integer", "minimum": 1}, "height": {"type": "integer", "minimum": 1}
                }, "required": ["x", "y", "width", "height"], "additionalProperties": false},
                {"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4}
            ],
            "description": "For look \"region\", in screen pixels."
        });
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
                            "do": {"type": "string", "enum": [
                                "activate", "focus_window", "click", "double_click", "right_click", "move", "drag",
                                "scroll", "type", "key", "press", "set_text", "wait_for", "wait_until", "wait",
                                "sleep", "screenshot", "list_windows"
                            ]},
                            "retry": {"type": "object", "properties": {
                                "attempts": {"type": "integer", "minimum": 1},
                                "on": {"type": "array", "items": {"type": "string"}}
                            }, "additionalProperties": false}
                        },
                        "required": ["do"]
                    }
                },
                "look": {
                    "anyOf": [{"enum": ["auto", "window", "screen", "region"]}, {"const": false}],
                    "default": "auto",
                    "description": "What to show afterwards."
                },
                "look_at": rect,
                "settle_max_s": {"type": "number", "minimum": 0, "maximum": MAX_SETTLE_S, "default": DEFAULT_SETTLE_S,
                                 "description": "Longest wait for the screen to settle; 0 captures at once."},
                "stop_on_error": {"type": "boolean", "default": true},
                "session_id": session_id_schema()
            },
            "required": ["steps"],
            "additionalProperties": false
        })
    }

    fn output_schema(&self) -> Value {
        // Top level only (see `batch::report_schema`): steps[] entries are
        // {step (1-based), do, status, runs, time_ms, result, error, notes};
        // look is {text, changed, changed_fraction, window, settled}.
        json!({
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["passed", "failed", "timed_out", "cancelled", "invalid", "rejected", "planned"]},
                "session_id": {"type": "string"},
                "steps": {"type": "array"},
                "errors": {"type": "array"}
            },
            "required": ["status"]
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
        let look = parse_look(args, &mut problems);
        let settle_s = match args.get("settle_max_s") {
            None | Some(Value::Null) => DEFAULT_SETTLE_S,
            Some(v) => match v.as_f64() {
                Some(s) if (0.0..=MAX_SETTLE_S).contains(&s) => s,
                _ => {
                    problems.push(arg_problem(
                        "settle_max_s",
                        format!("must be a number of seconds from 0 to {MAX_SETTLE_S}, got {v}"),
                    ));
                    DEFAULT_SETTLE_S
                }
            },
        };
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
        let steps = match args.get("steps") {
            Some(Value::Array(s)) if !s.is_empty() && s.len() <= MAX_STEPS => s.as_slice(),
            Some(Value::Array(s)) => {
                problems.push(arg_problem(
                    "steps",
                    format!("must hold 1 to {MAX_STEPS} steps, got {}", s.len()),
                ));
                &[][..]
            }
            Some(_) => {
                problems.push(arg_problem("steps", "must be an array of {do: verb, ...}"));
                &[][..]
            }
            None => {
                problems.push(arg_problem("steps", "is required"));
                &[][..]
            }
        };
        let verbs: Vec<&str> = catalog
            .get(DESKTOP)
            .map(|p| p.verb_names().filter(|v| !INTERNAL.contains(v)).collect())
            .unwrap_or_default();
        let mut out = Vec::with_capacity(steps.len() + 2);
        if look == Look::Auto {
            out.push(json!({"plugin": DESKTOP, "verb": "look_begin", "input": {}, "label": BEFORE_LABEL}));
        }
        for (i, step) in steps.iter().enumerate() {
            match map_step(i, step, &verbs, limits) {
                Ok(s) => out.push(s),
                Err(p) => problems.extend(p),
            }
        }
        let settle_ms = (settle_s * 1000.0).round() as u64;
        let look_input = match &look {
            Look::Off => None,
            Look::Auto => Some(json!({"mode": "auto", "settle_max_ms": settle_ms})),
            Look::Window => Some(json!({"mode": "window", "settle_max_ms": settle_ms})),
            Look::Screen => Some(json!({"mode": "screen", "settle_max_ms": settle_ms})),
            Look::Region(r) => {
                Some(json!({"mode": "region", "region": r, "settle_max_ms": settle_ms}))
            }
        };
        if let Some(input) = look_input {
            let timeout = input
                .as_object()
                .and_then(|i| step_timeout_ms("look", i, limits))
                .unwrap_or(limits.step_timeout_ms);
            out.push(
                json!({"plugin": DESKTOP, "verb": "look", "input": input, "label": LOOK_LABEL,
                            "always": true, "timeout_ms": timeout}),
            );
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
        let view = View::of(report);
        let mut out = json!({
            "status": report.status,
            "time_ms": report.time_ms,
            "steps_total": view.total,
            "steps_executed": view.user.len(),
            "never_started": view.total.saturating_sub(view.user.len()),
            "steps": view.user.iter().map(|(i, s)| step_json(*i, s)).collect::<Vec<_>>(),
            "look": view.look.map(look_json).unwrap_or(Value::Null),
        });
        if let Some(session) = &report.session_id {
            out["session_id"] = json!(session);
        }
        if !report.errors.is_empty() {
            let errors: Vec<Value> = report
                .errors
                .iter()
                .map(|p| json!(view.user_problem(p)))
                .collect();
            out["errors"] = json!(errors);
        }
        let notes = view.notes(report);
        if !notes.is_empty() {
            out["notes"] = json!(notes);
        }
        out
    }

    fn content(&self, report: &Report, _structured: &Value) -> Option<Vec<ContentItem>> {
        let view = View::of(report);
        let mut items = vec![ContentItem::Text {
            text: view.summary(report),
        }];
        if report.status == BatchStatus::Invalid {
            let mut text = String::from("Nothing ran; fix these and send the whole call again:");
            for p in &report.errors {
                text.push_str(&format!("\n- {}", view.user_problem(p)));
            }
            items.push(ContentItem::Text { text });
            return Some(items);
        }
        for (i, step) in &view.user {
            let n = i + 1;
            let line = match &step.error {
                Some(e) => format!("step {n} {}: {}: {}", step.verb, e.code, e.message),
                None => {
                    let retried = if step.attempts > 1 {
                        format!(" after {} runs", step.attempts)
                    } else {
                        String::new()
                    };
                    match &step.value {
                        Some(Value::Null) | None => format!("step {n} {}: ok{retried}", step.verb),
                        Some(value) => {
                            text::labelled(&format!("step {n} {} ok{retried}", step.verb), value)
                        }
                    }
                }
            };
            items.push(ContentItem::Text { text: line });
            push_images(&mut items, step, &format!("step {n}"));
        }
        for note in view.notes(report) {
            items.push(ContentItem::Text { text: note });
        }
        if let Some(look) = view.look {
            let text = match (&look.value, &look.error) {
                (Some(v), _) => v
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("look done")
                    .to_owned(),
                (None, Some(e)) => format!("look failed: {}: {}", e.code, e.message),
                (None, None) => "look did not run".to_owned(),
            };
            items.push(ContentItem::Text {
                text: format!("look: {text}"),
            });
            push_images(&mut items, look, "look");
        }
        Some(items)
    }
}

fn push_images(items: &mut Vec<ContentItem>, step: &StepReport, label: &str) {
    for item in &step.content {
        if let ContentItem::Image {
            mime_type, data, ..
        } = item
        {
            items.push(ContentItem::Text {
                text: format!("[{label}]"),
            });
            items.push(ContentItem::Image {
                mime_type: mime_type.clone(),
                data: data.clone(),
                label: label.to_owned(),
            });
        }
    }
}

fn parse_look(args: &Map<String, Value>, problems: &mut Vec<Problem>) -> Look {
    let look = match args.get("look") {
        None | Some(Value::Null) => Look::Auto,
        Some(Value::Bool(false)) => Look::Off,
        Some(Value::String(s)) => match s.as_str() {
            "auto" => Look::Auto,
            "window" => Look::Window,
            "screen" => Look::Screen,
            "region" => Look::Region(Value::Null),
            "false" | "off" | "none" => Look::Off,
            other => {
                problems.push(arg_problem("look", format!("must be \"auto\", \"window\", \"screen\", \"region\" or false, got \"{other}\"")));
                Look::Off
            }
        },
        Some(other) => {
            problems.push(arg_problem(
                "look",
                format!(
                    "must be \"auto\", \"window\", \"screen\", \"region\" or false, got {other}"
                ),
            ));
            Look::Off
        }
    };
    let look_at = args.get("look_at").filter(|v| !v.is_null());
    match (&look, look_at) {
        (Look::Region(_), None) => {
            problems.push(arg_problem(
                "look_at",
                "look \"region\" needs look_at: {x, y, width, height} or [x, y, width, height]",
            ));
            Look::Off
        }
        (Look::Region(_), Some(r)) => match rect(r) {
            Some(r) => Look::Region(r),
            None => {
                problems.push(arg_problem("look_at", format!("must be {{x, y, width, height}} or [x, y, width, height] with positive size, got {r}")));
                Look::Off
            }
        },
        (_, Some(_)) => {
            problems.push(arg_problem("look_at", "is only used with look \"region\""));
            look
        }
        _ => look,
    }
}

/// `{x, y, width, height}` or `[x, y, w, h]` as the object form.
fn rect(v: &Value) -> Option<Value> {
    let n: Vec<Option<i64>> = match v {
        Value::Array(a) => a.iter().map(Value::as_i64).collect(),
        Value::Object(o) if o.len() == 4 => ["x", "y", "width", "height"]
            .iter()
            .map(|k| o.get(*k).and_then(Value::as_i64))
            .collect(),
        _ => return None,
    };
    match n.as_slice() {
        [Some(x), Some(y), Some(w), Some(h)] if *w > 0 && *h > 0 => {
            Some(json!({"x": x, "y": y, "width": w, "height": h}))
        }
        _ => None,
    }
}

fn step_problem(index: usize, field: &str, message: impl Into<String>) -> Problem {
    Problem {
        step: Some(index),
        label: None,
        field: join_field(&format!("steps[{index}]"), field),
        message: message.into(),
    }
}

/// One `{do, ...}` as a generic desktop step.
fn map_step(
    index: usize,
    step: &Value,
    verbs: &[&str],
    limits: &Limits,
) -> Result<Value, Vec<Problem>> {
    let Some(obj) = step.as_object() else {
        return Err(vec![step_problem(
            index,
            "",
            "must be an object {do: verb, ...}",
        )]);
    };
    let verb = match obj.get("do") {
        Some(Value::String(v)) => match v.as_str() {
            "wait" => "wait_for",
            other => other,
        },
        Some(other) => {
            return Err(vec![step_problem(
                index,
                "do",
                format!("must be a verb name, got {other}"),
            )]);
        }
        None => {
            return Err(vec![step_problem(
                index,
                "do",
                format!("is required (one of: {})", verbs.join(", ")),
            )]);
        }
    };
    if !verbs.contains(&verb) {
        let hint = crate::plan::closest(verb, verbs)
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default();
        return Err(vec![step_problem(
            index,
            "do",
            format!("unknown verb `{verb}` (verbs: {}){hint}", verbs.join(", ")),
        )]);
    }
    let mut input = Map::new();
    let mut out = json!({"plugin": DESKTOP, "verb": verb, "label": user_label(index, verb)});
    for (key, value) in obj {
        match key.as_str() {
            "do" => {}
            // Steps run with their own look off: the look is this tool's.
            "look" => {}
            k if ENGINE_KEYS.contains(&k) => out[k] = value.clone(),
            _ => {
                input.insert(key.clone(), value.clone());
            }
        }
    }
    if out.get("timeout_ms").is_none()
        && let Some(ms) = step_timeout_ms(verb, &input, limits)
    {
        out["timeout_ms"] = json!(ms);
    }
    out["input"] = Value::Object(input);
    Ok(out)
}

fn step_json(index: usize, step: &StepReport) -> Value {
    let mut out = json!({
        "step": index + 1,
        "do": step.verb,
        "status": step.status,
        "runs": step.attempts,
        "time_ms": step.time_ms,
    });
    insert_outcome(&mut out, step);
    out
}

fn look_json(step: &StepReport) -> Value {
    match (&step.value, &step.error) {
        (Some(v), _) => v.clone(),
        (None, Some(e)) => json!({"error": e}),
        (None, None) => Value::Null,
    }
}

/// Label of the capture before the first step.
const BEFORE_LABEL: &str = "look: before the first step";
/// Label of the final look.
const LOOK_LABEL: &str = "look";

/// The label of the user's step `index`: it carries the user's numbering
/// through the engine into step reports and plan problems.
fn user_label(index: usize, verb: &str) -> String {
    format!("steps[{index}] {verb}")
}

/// The user's 0-based index from a label made by [`user_label`].
fn user_index(label: Option<&str>) -> Option<usize> {
    label?
        .strip_prefix("steps[")?
        .split_once(']')?
        .0
        .parse()
        .ok()
}

/// The report seen as this tool's steps, with the look steps split off.
struct View<'a> {
    before: Option<&'a StepReport>,
    user: Vec<(usize, &'a StepReport)>,
    look: Option<&'a StepReport>,
    /// The user's step count.
    total: usize,
}

impl<'a> View<'a> {
    fn of(report: &'a Report) -> Self {
        let label = |s: &StepReport, l: &str| s.plugin == DESKTOP && s.label.as_deref() == Some(l);
        let before = report.steps.iter().find(|s| label(s, BEFORE_LABEL));
        let look = report.steps.iter().find(|s| label(s, LOOK_LABEL));
        let user: Vec<(usize, &StepReport)> = report
            .steps
            .iter()
            .filter_map(|s| user_index(s.label.as_deref()).map(|i| (i, s)))
            .collect();
        // Invalid and rejected reports hold no steps; the total counts the user's.
        let hidden = usize::from(before.is_some()) + usize::from(look.is_some());
        let total = if report.steps.is_empty() {
            report.steps_total
        } else {
            report.steps_total.saturating_sub(hidden).max(user.len())
        };
        Self {
            before,
            user,
            look,
            total,
        }
    }

    /// A plan problem in the user's terms: `steps[3].input.x` -> `steps[2].x`.
    fn user_problem(&self, p: &Problem) -> Problem {
        let mut p = p.clone();
        if let Some(user) = user_index(p.label.as_deref()) {
            p.step = Some(user);
            let tail = p.field.split_once(']').map(|(_, t)| t).unwrap_or("");
            let tail = tail.strip_prefix(".input").unwrap_or(tail);
            let tail = if tail == ".verb" { ".do" } else { tail };
            p.field = format!("steps[{user}]{tail}");
            p.label = None;
        }
        p
    }

    fn notes(&self, report: &Report) -> Vec<String> {
        let mut notes: Vec<String> = report
            .notes
            .iter()
            .filter(|n| !n.contains("marked `always`"))
            .cloned()
            .collect();
        if let Some(b) = self.before
            && let Some(e) = &b.error
        {
            notes.push(format!(
                "could not capture the screen before the first step ({}: {}); nothing ran",
                e.code, e.message
            ));
        }
        notes
    }

    fn summary(&self, report: &Report) -> String {
        let passed = self
            .user
            .iter()
            .filter(|(_, s)| s.status == StepStatus::Passed)
            .count();
        match report.status {
            BatchStatus::Invalid => {
                format!("invalid: {} problem(s); nothing ran", report.errors.len())
            }
            BatchStatus::Rejected => report.summary(),
            status => {
                let word = serde_json::to_value(status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let mut text = format!(
                    "{word}: {passed}/{} steps passed, {} never started, {:.1} ms",
                    self.total,
                    self.total.saturating_sub(self.user.len()),
                    report.time_ms
                );
                if let Some((i, step)) = self
                    .user
                    .iter()
                    .find(|(_, s)| s.status != StepStatus::Passed)
                    && let Some(e) = &step.error
                {
                    text.push_str(&format!(
                        "; step {} ({}) {}: {}",
                        i + 1,
                        step.verb,
                        e.code,
                        e.message
                    ));
                }
                text
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_map_aliases_and_keep_retry_for_the_engine() {
        let verbs = ["wait_for", "click", "type"];
        let s = map_step(
            0,
            &json!({"do": "wait", "condition": "window_appears", "target": "A"}),
            &verbs,
            &Limits::default(),
        )
        .expect("ok");
        assert_eq!(s["verb"], "wait_for");
        assert_eq!(s["input"]["condition"], "window_appears");
        let s = map_step(
            1,
            &json!({"do": "click", "x": 1, "y": 2, "retry": {"attempts": 3}, "look": false}),
            &verbs,
            &Limits::default(),
        )
        .expect("ok");
        assert_eq!(s["retry"]["attempts"], 3);
        assert!(s["input"].get("retry").is_none() && s["input"].get("look").is_none());
        let e =
            map_step(2, &json!({"do": "clik"}), &verbs, &Limits::default()).expect_err("unknown");
        assert!(
            e[0].message.contains("did you mean `click`"),
            "{}",
            e[0].message
        );
    }

    #[test]
    fn look_region_needs_a_rectangle() {
        let mut problems = Vec::new();
        let args = json!({"look": "region", "look_at": [1, 2, 30, 40]});
        let look = parse_look(args.as_object().expect("obj"), &mut problems);
        assert_eq!(
            look,
            Look::Region(json!({"x": 1, "y": 2, "width": 30, "height": 40}))
        );
        let args = json!({"look": "region"});
        parse_look(args.as_object().expect("obj"), &mut problems);
        assert_eq!(problems[0].field, "look_at");
    }
}
