//! `browser_batch`: a run of browser tool calls in one request
//! (`shared/seeds/browser_batch.txt`).
//!
//! `{actions: [{name, input}]}` maps entry for entry onto generic steps
//! `{plugin: "browser", verb: name, input}` (`firefox_dialog` is the `dialog`
//! verb). Before anything runs, the list is checked here (an unknown tool name,
//! `browser_batch` inside itself, a page-acting entry without `tabId`) and by
//! the planner (each input against its verb's schema); every problem names its
//! entry, `actions[2].name`. The engine runs the steps in order and stops at the
//! first failure; the result lists what finished, the error of the entry that
//! broke, how many never started, and each image after the entry that made it.

use serde_json::{Map, Value, json};

use super::{Dialect, arg_problem, session_id_schema, text};
use crate::plan::key_field;
use crate::{BatchStatus, ContentItem, Problem, Report, StepReport, StepStatus, UnknownPolicy};
use crate::{Catalog, Limits};

/// The plugin whose verbs the entries name.
const PLUGIN: &str = "browser";
/// Entry names accepted beside the verbs they stand for: the seed's name for
/// the dialog tool, and the short name of the wait (the bare `wait_for` tool is
/// the desktop plugin's, so the browser verb is `wait_for_page`; inside a
/// browser batch the short name can only mean the page).
const ALIASES: [(&str, &str); 2] = [("firefox_dialog", "dialog"), ("wait_for", "wait_for_page")];
/// This tool's own name, refused as an entry.
const NAME: &str = "browser_batch";

/// The `browser_batch` tool.
pub struct BrowserBatch;

impl BrowserBatch {
    /// The verb an entry name stands for.
    fn verb(name: &str) -> &str {
        ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, verb)| verb)
    }

    /// Tool names an entry may use: the browser plugin's verbs and the alias.
    fn names(catalog: &Catalog) -> Vec<String> {
        let mut names: Vec<String> = catalog
            .get(PLUGIN)
            .map(|p| p.verb_names().map(str::to_owned).collect())
            .unwrap_or_default();
        for (alias, verb) in ALIASES {
            if names.iter().any(|n| n == verb) {
                names.push(alias.to_owned());
            }
        }
        names
    }
}

impl Dialect for BrowserBatch {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self, _catalog: &Catalog) -> String {
        // The seed's content, cut to what changes a model's call; the tool
        // names are the `name` enum of the input schema.
        "Execute multiple browser tool calls in one batch, sequentially, halting on the first error: returns \
every finished entry's output, the breaking entry's error and how many never started. Each entry is {name, input}, \
input exactly as for that tool on its own. The list is checked before anything touches the page; a bad entry \
rejects the whole call. Batch whenever you can see two or more moves ahead (navigate, click the search box, type, \
press Return, screenshot); images come back inline, labelled by entry. What bites: coordinates and refs must come \
from a screenshot or read_page made BEFORE this call, and a navigation or reload makes them stale, so end the \
batch there; every page-acting entry must state tabId (none is inferred; after tabs_create write \
\"${STEP_N.tabId}\"). A modal dialog freezes its page: clear it with firefox_dialog (or dialog)."
            .to_owned()
    }

    fn input_schema(&self, catalog: &Catalog) -> Value {
        json!({
            "type": "object",
            "properties": {
                "actions": {
                    "type": "array",
                    "minItems": 1,
                    "description": "The calls, run top down, e.g. [{\"name\":\"navigate\",\"input\":{\"tabId\":7,\"url\":\"https://example.org\"}}]",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "enum": Self::names(catalog)},
                            "input": {"type": "object"}
                        },
                        "required": ["name", "input"],
                        "additionalProperties": false
                    }
                },
                "session_id": session_id_schema()
            },
            "required": ["actions"],
            "additionalProperties": false
        })
    }

    fn output_schema(&self) -> Value {
        // Top level only (see `report_schema`): results[] entries are
        // {index, name, status, output, images, time_ms}, error is
        // {index, name, code, message, input_fired}.
        json!({
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["passed", "failed", "timed_out", "cancelled", "invalid", "planned"]},
                "session_id": {"type": "string"},
                "results": {"type": "array"},
                "error": {"type": "object"},
                "error_count": {"type": "integer"},
                "never_started": {"type": "integer"},
                "errors": {"type": "array"}
            },
            "required": ["status", "results", "error_count", "never_started"]
        })
    }

    fn policy(&self) -> UnknownPolicy {
        // Typed text and scripts may hold `${...}` of their own (template
        // literals): only ${STEP_N} and known names are the host's.
        UnknownPolicy::PassThrough
    }

    fn available(&self, catalog: &Catalog) -> bool {
        catalog.get(PLUGIN).is_some()
    }

    fn entry_count(&self, args: &Map<String, Value>) -> usize {
        args.get("actions")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    }

    fn to_batch(
        &self,
        args: &Map<String, Value>,
        catalog: &Catalog,
        _limits: &Limits,
    ) -> Result<Value, Vec<Problem>> {
        let mut problems = Vec::new();
        for key in args.keys() {
            if key != "actions" && key != "session_id" {
                problems.push(arg_problem(
                    &key_field(key),
                    "unknown field (expected actions, session_id)",
                ));
            }
        }
        let Some(plugin) = catalog.get(PLUGIN) else {
            problems.push(arg_problem("actions", "the browser plugin is not loaded"));
            return Err(problems);
        };
        let actions = match args.get("actions") {
            Some(Value::Array(actions)) if !actions.is_empty() => actions.as_slice(),
            Some(Value::Array(_)) => {
                problems.push(arg_problem("actions", "must hold at least one entry"));
                return Err(problems);
            }
            Some(_) => {
                problems.push(arg_problem(
                    "actions",
                    "must be an array of {name, input} entries",
                ));
                return Err(problems);
            }
            None => {
                problems.push(arg_problem("actions", "is required"));
                return Err(problems);
            }
        };
        let names = Self::names(catalog);
        let mut steps = Vec::with_capacity(actions.len());
        for (i, entry) in actions.iter().enumerate() {
            let at = |field: &str| format!("actions[{i}]{field}");
            let mut problem = |field: String, message: String| {
                problems.push(Problem {
                    step: Some(i),
                    label: None,
                    field,
                    message,
                });
            };
            let Some(entry) = entry.as_object() else {
                problem(at(""), "must be an object {name, input}".into());
                continue;
            };
            for key in entry.keys() {
                if key != "name" && key != "input" {
                    let field = key_field(key);
                    let suffix = if field.starts_with('[') {
                        field
                    } else {
                        format!(".{field}")
                    };
                    problem(at(&suffix), "unknown field (expected name, input)".into());
                }
            }
            let name = match entry.get("name") {
                Some(Value::String(name)) => name.as_str(),
                Some(other) => {
                    problem(at(".name"), format!("must be a tool name, got {other}"));
                    continue;
                }
                None => {
                    problem(at(".name"), "is required".into());
                    continue;
                }
            };
            if name == NAME {
                problem(
                    at(".name"),
                    "browser_batch cannot run inside browser_batch; put its entries in this list instead".into(),
                );
                continue;
            }
            if !names.iter().any(|n| n == name) {
                let known: Vec<&str> = names.iter().map(String::as_str).collect();
                let hint = crate::plan::closest(name, &known)
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default();
                problem(
                    at(".name"),
                    format!(
                        "unknown browser tool `{name}` (tools: {}){hint}",
                        names.join(", ")
                    ),
                );
                continue;
            }
            let verb = Self::verb(name);
            let input = match entry.get("input") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(v @ Value::Object(_)) => v.clone(),
                Some(other) => {
                    problem(at(".input"), format!("must be an object, got {other}"));
                    continue;
                }
            };
            let needs_tab = plugin
                .verb(verb)
                .and_then(|v| v.info.input_schema.get("required"))
                .and_then(Value::as_array)
                .is_some_and(|required| required.iter().any(|r| r == "tabId"));
            if needs_tab && input.get("tabId").is_none_or(Value::is_null) {
                problem(
                    at(".input.tabId"),
                    format!(
                        "`{name}` acts on a page and needs tabId: inside a batch no tab is inferred (tabs_context lists the tabs; an entry after tabs_create may use \"${{STEP_N.tabId}}\")"
                    ),
                );
                continue;
            }
            steps.push(json!({"plugin": PLUGIN, "verb": verb, "input": input, "label": name}));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut batch = json!({"steps": steps, "on_failure": "stop"});
        if let Some(session) = args.get("session_id") {
            batch["session_id"] = session.clone();
        }
        Ok(batch)
    }

    fn render(&self, report: &Report) -> Value {
        let mut results = Vec::new();
        let mut error = Value::Null;
        for step in &report.steps {
            let name = entry_name(step);
            if step.status == StepStatus::Passed {
                let images: Vec<String> = step
                    .content
                    .iter()
                    .filter(|c| matches!(c, ContentItem::Image { .. }))
                    .map(|_| image_label(step))
                    .collect();
                let mut result = json!({
                    "index": step.index,
                    "name": name,
                    "status": step.status,
                    "output": step.value.clone().unwrap_or(Value::Null),
                    "time_ms": step.time_ms
                });
                if !images.is_empty() {
                    result["images"] = json!(images);
                }
                results.push(result);
            } else if let Some(e) = &step.error {
                error = json!({
                    "index": step.index,
                    "name": name,
                    "status": step.status,
                    "code": e.code,
                    "message": e.message,
                    "input_fired": e.input_fired
                });
            }
        }
        let mut out = json!({
            "status": report.status,
            "results": results,
            "error_count": usize::from(!error.is_null()),
            "never_started": report.never_started,
        });
        if !error.is_null() {
            out["error"] = error;
        }
        if let Some(session) = &report.session_id {
            out["session_id"] = json!(session);
        }
        if !report.errors.is_empty() {
            let errors: Vec<Value> = report
                .errors
                .iter()
                .map(|p| json!({"field": entry_field(&p.field), "message": p.message}))
                .collect();
            out["errors"] = json!(errors);
        }
        let mut notes: Vec<String> = report.notes.clone();
        for step in &report.steps {
            notes.extend(
                step.notes
                    .iter()
                    .map(|n| format!("actions[{}]: {n}", step.index)),
            );
        }
        if !notes.is_empty() {
            out["notes"] = json!(notes);
        }
        out
    }

    fn content(&self, report: &Report, _structured: &Value) -> Option<Vec<ContentItem>> {
        let mut items = vec![ContentItem::Text {
            text: summary(report),
        }];
        if report.status == BatchStatus::Invalid {
            let mut text = String::from("Nothing ran; fix these and send the whole list again:");
            for p in &report.errors {
                text.push_str(&format!("\n- {}: {}", entry_field(&p.field), p.message));
            }
            items.push(ContentItem::Text { text });
            return Some(items);
        }
        for step in &report.steps {
            let name = entry_name(step);
            let text = match (&step.error, &step.value) {
                (Some(e), _) => format!(
                    "[actions[{}] {name}] {}: {}: {}",
                    step.index,
                    step.status.word(),
                    e.code,
                    e.message
                ),
                (None, value) => text::labelled(
                    &format!("[actions[{}] {name}] passed", step.index),
                    value.as_ref().unwrap_or(&Value::Null),
                ),
            };
            items.push(ContentItem::Text { text });
            for item in &step.content {
                if let ContentItem::Image {
                    mime_type, data, ..
                } = item
                {
                    items.push(ContentItem::Text {
                        text: format!("[{}]", image_label(step)),
                    });
                    items.push(ContentItem::Image {
                        mime_type: mime_type.clone(),
                        data: data.clone(),
                        label: image_label(step),
                    });
                }
            }
        }
        Some(items)
    }
}

/// The entry's name as the caller wrote it (the step label carries it).
fn entry_name(step: &StepReport) -> &str {
    step.label.as_deref().unwrap_or(&step.verb)
}

fn image_label(step: &StepReport) -> String {
    format!("actions[{}] {} image", step.index, entry_name(step))
}

/// `steps[2].input.url` (the planner's name) as `actions[2].input.url`.
fn entry_field(field: &str) -> String {
    match field.strip_prefix("steps") {
        Some(rest) if rest.is_empty() || rest.starts_with('[') => format!("actions{rest}"),
        _ => field.to_owned(),
    }
}

/// One line: what finished, what broke, what never started.
fn summary(report: &Report) -> String {
    let word = match report.status {
        BatchStatus::Invalid => {
            return format!(
                "browser_batch rejected: {} problem(s) in the list; nothing ran and no page was touched.",
                report.errors.len()
            );
        }
        BatchStatus::Passed => "passed",
        BatchStatus::Failed => "failed",
        BatchStatus::TimedOut => "timed out",
        BatchStatus::Cancelled => "cancelled",
        // Refused before it ran (a limit): the generic summary says why.
        _ => return format!("browser_batch {}", report.summary()),
    };
    let passed = report
        .steps
        .iter()
        .filter(|s| s.status == StepStatus::Passed)
        .count();
    let mut text = format!(
        "browser_batch {word}: {passed} of {} entries finished",
        report.steps_total
    );
    if let Some(step) = report.first_failure() {
        text.push_str(&format!(
            "; actions[{}] ({}) {}",
            step.index,
            entry_name(step),
            step.status.word()
        ));
    }
    text.push_str(&format!(
        "; {} never started; {:.1} ms.",
        report.never_started, report.time_ms
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planner_fields_are_named_by_entry() {
        assert_eq!(entry_field("steps[2].input.url"), "actions[2].input.url");
        assert_eq!(entry_field("steps"), "actions");
        assert_eq!(entry_field("session_id"), "session_id");
        assert_eq!(entry_field("stepsize"), "stepsize");
    }

    #[test]
    fn the_dialog_alias_maps_to_the_verb() {
        assert_eq!(BrowserBatch::verb("firefox_dialog"), "dialog");
        assert_eq!(BrowserBatch::verb("computer"), "computer");
    }
}
