//! The generic report folded back into desktop-touch's run_macro result:
//! one `results[]` entry per macro step that ran (0-based `step`), however
//! many calls it became, with `ok`, `text` (the result as text lines, the
//! way the inner tool's content reads), `error` and `code`; `warnings` for
//! every step that failed.
//!
//! Kept from our own report, as extra keys a desktop-touch client ignores:
//! `status`, `session_id`, `time_ms`, `errors` (what made a macro invalid),
//! `notes`; per step `time_ms`, `attempts`, `failure` (our code, message,
//! whether input fired) and `notes`.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Value, json};
use stephost_contract::FailureCode;

use crate::{BatchStatus, ContentItem, Problem, Report, StepError, StepReport, StepStatus};

/// How a call is labelled in the batch: `steps[3] keyboard` for step 3's own
/// call, `steps[3] keyboard (select all)` for a helper. The label carries the
/// caller's numbering through the engine into the report and its problems.
pub(super) struct Label<'a> {
    pub(super) index: usize,
    pub(super) tool: &'a str,
    pub(super) helper: Option<&'a str>,
}

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "steps[{}] {}", self.index, self.tool)?;
        if let Some(h) = self.helper {
            write!(f, " ({h})")?;
        }
        Ok(())
    }
}

impl<'a> Label<'a> {
    pub(super) fn parse(text: &'a str) -> Option<Self> {
        let (index, rest) = text.strip_prefix("steps[")?.split_once("] ")?;
        let index = index.parse().ok()?;
        // Tool names hold no spaces; what follows one is the helper's purpose.
        let (tool, helper) = match rest.split_once(' ') {
            Some((tool, purpose)) => (tool, Some(purpose.strip_prefix('(')?.strip_suffix(')')?)),
            None => (rest, None),
        };
        Some(Self {
            index,
            tool,
            helper,
        })
    }
}

/// One macro step's calls, in the order they ran.
struct Group<'r> {
    index: usize,
    tool: &'r str,
    calls: Vec<(&'r StepReport, Option<&'r str>)>,
}

fn groups(report: &Report) -> Vec<Group<'_>> {
    let mut by_index: BTreeMap<usize, Group<'_>> = BTreeMap::new();
    for step in &report.steps {
        let Some(label) = step.label.as_deref().and_then(Label::parse) else {
            continue;
        };
        by_index
            .entry(label.index)
            .or_insert_with(|| Group {
                index: label.index,
                tool: label.tool,
                calls: Vec::new(),
            })
            .calls
            .push((step, label.helper));
    }
    by_index.into_values().collect()
}

/// How one macro step ended.
enum Outcome<'r> {
    Passed(&'r StepReport),
    Failed(&'r StepReport, StepError),
    /// No call of it is in the report (cannot happen for a group, which is
    /// made from its calls; kept total rather than assumed).
    Missing,
}

fn outcome<'r>(g: &Group<'r>, batch: BatchStatus) -> Outcome<'r> {
    if let Some((call, _)) = g.calls.iter().find(|(c, _)| c.status != StepStatus::Passed) {
        let error = call.error.clone().unwrap_or_else(|| StepError {
            code: match call.status {
                StepStatus::Cancelled => FailureCode::Cancelled,
                _ => FailureCode::Timeout,
            },
            message: format!("the call {}", call.status.word()),
            input_fired: true,
            details: None,
        });
        return Outcome::Failed(call, error);
    }
    match g.calls.iter().find(|(_, helper)| helper.is_none()) {
        Some((own, _)) => Outcome::Passed(own),
        None => {
            // Its helpers ran but the batch ended before the step's own call.
            let last = g.calls.last().map(|(c, _)| *c);
            let (code, why) = if batch == BatchStatus::Cancelled {
                (FailureCode::Cancelled, "the macro was cancelled")
            } else {
                (FailureCode::Timeout, "the macro ran out of time")
            };
            let error = StepError {
                code,
                message: format!("{why} before this step finished"),
                input_fired: true,
                details: None,
            };
            match last {
                Some(call) => Outcome::Failed(call, error),
                None => Outcome::Missing,
            }
        }
    }
}

/// Codes of desktop-touch's that page scripts put at the front of what they
/// throw (`browser.js`).
const PAGE_CODES: &[&str] = &[
    "BrowserSearchNoResults",
    "BrowserAmbiguousTarget",
    "BrowserNoActionableTarget",
    "BrowserModalBlocking",
    "BrowserValueNotKept",
    "ElementNotInViewport",
    "ElementNotFound",
    "ScopeNotFound",
    "InvalidArgs",
];

/// A page script's desktop-touch code and message, from the browser plugin's
/// "the script threw: Error: <Code>: <message>".
pub(super) fn page_code(message: &str) -> Option<(&'static str, &str)> {
    const THREW: &str = "the script threw: ";
    let at = message.find(THREW)? + THREW.len();
    let rest = message.get(at..)?;
    let rest = rest.strip_prefix("Error: ").unwrap_or(rest);
    PAGE_CODES.iter().find_map(|code| {
        rest.strip_prefix(code)
            .and_then(|m| m.strip_prefix(": "))
            .map(|m| (*code, m))
    })
}

/// The verbs whose `not-found` means the element, not the window.
const ELEMENT_VERBS: &[&str] = &["press", "set_text"];
/// The verbs whose `timeout` is their own wait running out.
const WAIT_VERBS: &[&str] = &["wait_for", "wait_until", "wait_for_page"];

/// desktop-touch's code for a failure where one means the same, else ours,
/// and the message to show.
fn their_code(tool: &str, call: &StepReport, error: &StepError) -> (String, String) {
    if call.verb == "javascript_tool"
        && tool != "javascript_tool"
        && let Some((code, message)) = page_code(&error.message)
    {
        return (code.to_owned(), message.to_owned());
    }
    let desktop = call.plugin == super::DESKTOP;
    let code = match &error.code {
        FailureCode::InvalidInput => "InvalidArgs",
        FailureCode::Timeout if WAIT_VERBS.contains(&call.verb.as_str()) => "WaitTimeout",
        FailureCode::NotFound if desktop && ELEMENT_VERBS.contains(&call.verb.as_str()) => {
            "ElementNotFound"
        }
        FailureCode::NotFound if desktop => "WindowNotFound",
        FailureCode::Denied if desktop && (call.verb == "key" || call.verb == "type") => {
            "BlockedKeyCombo"
        }
        other => other.as_str(),
    };
    (code.to_owned(), error.message.clone())
}

/// The step's result as text lines: its value as desktop-touch's tools put
/// theirs in the first text block, then the texts the call gave.
fn text(tool: &str, own: &StepReport) -> Vec<String> {
    let value = own.value.clone().unwrap_or(Value::Null);
    if tool == "sleep" {
        let ms = value.get("slept_ms").and_then(Value::as_u64).unwrap_or(0);
        return vec![format!("slept {ms}ms")];
    }
    // A page script's answer is what the tool returns; the plugin's wrapper
    // around it says only which tab.
    let shown = if own.verb == "javascript_tool" && tool != "javascript_tool" {
        value.get("result").cloned().unwrap_or(Value::Null)
    } else {
        value
    };
    let mut lines = vec![match shown {
        Value::String(s) => s,
        other => other.to_string(),
    }];
    lines.extend(own.content.iter().filter_map(|item| match item {
        ContentItem::Text { text } => Some(text.clone()),
        ContentItem::Image { .. } => None,
    }));
    lines
}

fn result_json(g: &Group<'_>, batch: BatchStatus) -> Value {
    let time_ms: f64 = g.calls.iter().map(|(c, _)| c.time_ms).sum();
    let attempts = g.calls.iter().map(|(c, _)| c.attempts).max().unwrap_or(0);
    let mut out = json!({
        "step": g.index,
        "tool": g.tool,
        "time_ms": time_ms,
        "attempts": attempts,
    });
    match outcome(g, batch) {
        Outcome::Passed(own) => {
            out["ok"] = json!(true);
            out["text"] = json!(text(g.tool, own));
        }
        Outcome::Missing => {
            out["ok"] = json!(false);
            out["error"] = json!("the step did not run");
        }
        Outcome::Failed(call, error) => {
            let (code, message) = their_code(g.tool, call, &error);
            out["ok"] = json!(false);
            out["text"] = json!([json!({"ok": false, "code": code, "error": message}).to_string()]);
            out["error"] = json!(message);
            out["code"] = json!(code);
            out["failure"] = json!(error);
        }
    }
    let notes: Vec<&String> = g.calls.iter().flat_map(|(c, _)| &c.notes).collect();
    if !notes.is_empty() {
        out["notes"] = json!(notes);
    }
    out
}

/// A plan problem in the caller's terms: `steps[5].input.text` of the call
/// labelled `steps[3] keyboard` is `steps[3].params.text`.
pub(super) fn user_problem(p: &Problem) -> Problem {
    let mut p = p.clone();
    let Some(label) = p.label.as_deref().and_then(Label::parse) else {
        return p;
    };
    let index = label.index;
    let tail = p.field.split_once(']').map(|(_, t)| t).unwrap_or("");
    let tail = match tail.strip_prefix(".input") {
        Some(rest) => format!(".params{rest}"),
        None if tail == ".verb" || tail == ".plugin" => ".tool".to_owned(),
        None => tail.to_owned(),
    };
    p.field = format!("steps[{index}]{tail}");
    p.step = Some(index);
    p.label = None;
    p
}

/// The raw result (desktop-touch's `data`). `total`: how many steps the call
/// asked for, when known (a report counts calls, and some steps make more
/// than one).
pub(super) fn raw(report: &Report, total: Option<usize>) -> Value {
    let groups = groups(report);
    let results: Vec<Value> = groups
        .iter()
        .map(|g| result_json(g, report.status))
        .collect();
    let errors: Vec<Problem> = report.errors.iter().map(user_problem).collect();
    let mut warnings: Vec<Value> = results
        .iter()
        .filter(|r| r["ok"] == json!(false))
        .map(|r| json!({"step": r["step"], "tool": r["tool"], "code": r["code"], "error": r["error"]}))
        .collect();
    // Nothing ran, but a client that reads only `warnings` must still see it.
    warnings.extend(errors.iter().filter_map(|p| {
        let step = p.step?;
        Some(json!({"step": step, "code": "InvalidArgs", "error": format!("{}: {}", p.field, p.message)}))
    }));
    let steps_total = total.unwrap_or_else(|| {
        if report.steps.is_empty() {
            report.steps_total
        } else {
            let helpers = report
                .steps
                .iter()
                .filter(|s| {
                    s.label
                        .as_deref()
                        .and_then(Label::parse)
                        .is_some_and(|l| l.helper.is_some())
                })
                .count();
            report
                .steps_total
                .saturating_sub(helpers)
                .max(results.len())
        }
    });
    let mut out = json!({
        "steps_total": steps_total,
        "steps_completed": results.len(),
        "results": results,
        "status": report.status,
        "time_ms": report.time_ms,
    });
    if !warnings.is_empty() {
        out["warnings"] = json!(warnings);
    }
    if let Some(session) = &report.session_id {
        out["session_id"] = json!(session);
    }
    if !errors.is_empty() {
        out["errors"] = json!(errors);
    }
    if !report.notes.is_empty() {
        out["notes"] = json!(report.notes);
    }
    out
}

/// Each image a step took, followed by `[step N: tool]` as desktop-touch
/// labels them (N 0-based).
pub(super) fn images(report: &Report) -> Vec<ContentItem> {
    let mut items = Vec::new();
    for g in groups(report) {
        let label = format!("step {}: {}", g.index, g.tool);
        for (call, _) in &g.calls {
            for item in &call.content {
                if let ContentItem::Image {
                    mime_type, data, ..
                } = item
                {
                    items.push(ContentItem::Image {
                        mime_type: mime_type.clone(),
                        data: data.clone(),
                        label: label.clone(),
                    });
                    items.push(ContentItem::Text {
                        text: format!("[{label}]"),
                    });
                }
            }
        }
    }
    items
}
