//! `run_macro`: a fixed sequence of tool calls `[{tool, params}]` in one call,
//! as `shared/seeds/run_macro.txt` describes it, re-created for clients of
//! desktop-touch-mcp: its tool names and parameter names, its result shape
//! (0-based `results[]` of `{step, tool, ok, text, error, code}`, `warnings`)
//! and its envelope (`include: ["envelope"]`).
//!
//! - `tools.rs` is the table of desktop-touch's tools: each becomes one or
//!   more calls to our desktop and browser verbs, or is refused up front with
//!   the reason (Windows-only tools). Our own verb names work as they are,
//!   except where desktop-touch has the same name (`screenshot`, `scroll`,
//!   `wait_until`, `focus_window`, `sleep`): those read both styles.
//! - `step.rs` reads a step's parameters and names problems in the caller's
//!   terms (`steps[2].params.action`).
//! - `browser.rs` (+ `browser.js`) maps the `browser_*` tools.
//! - `render.rs` folds the generic report back into desktop-touch's shape.
//!
//! Unlike desktop-touch, every step is mapped and validated before the first
//! one acts (the engine's plan does the rest for the whole batch), and text in
//! `params` is literal: `${...}` is not a reference here, as it is not there.

mod browser;
mod render;
mod step;
#[cfg(test)]
mod tests;
mod tools;

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::desktop::{DESKTOP, step_timeout_ms, unknown_args};
use super::{Dialect, arg_problem, session_id_schema};
use crate::{Catalog, ContentItem, Limits, Problem, Report, room_for_wait, vars};
use step::Step;
use tools::{Kind, TOOLS};

/// The browser plugin, for the `browser_*` tools.
const BROWSER: &str = "browser";
/// Most steps in one macro.
const MAX_STEPS: usize = 50;
const FIELDS: &[&str] = &["steps", "stop_on_error", "include", "session_id"];
/// How long `wait_for_page` waits when a step names no time (its default).
const PAGE_WAIT_MS: u64 = 5_000;

/// The `run_macro` tool.
pub struct RunMacro;

/// One generic batch step a macro step becomes.
#[derive(Debug, Clone)]
struct Call {
    plugin: String,
    verb: String,
    input: Map<String, Value>,
    /// `None` for the step's own call, whose result is the step's; else what
    /// a helper call is for (`select all`, `first tab`).
    helper: Option<&'static str>,
}

/// Where one macro step's calls are collected.
struct Out<'c> {
    catalog: &'c Catalog,
    /// Calls of the macro's earlier steps.
    base: usize,
    calls: Vec<Call>,
    /// The batch index of the call that lists the browser's tabs, once a step
    /// needed the first tab.
    first_tab: &'c mut Option<usize>,
}

impl<'c> Out<'c> {
    fn new(catalog: &'c Catalog, base: usize, first_tab: &'c mut Option<usize>) -> Self {
        Self {
            catalog,
            base,
            calls: Vec::new(),
            first_tab,
        }
    }

    /// A verb's input schema, when the plugin and verb are loaded.
    fn schema(&self, plugin: &str, verb: &str) -> Option<&Value> {
        self.catalog
            .get(plugin)?
            .verb(verb)
            .map(|v| &v.info.input_schema)
    }

    /// Whether the verb's input takes `value` for `property` (a property
    /// without an enum takes anything).
    fn allows(&self, plugin: &str, verb: &str, property: &str, value: &str) -> bool {
        let Some(p) = self
            .schema(plugin, verb)
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.get(property))
        else {
            return false;
        };
        match p.get("enum").and_then(Value::as_array) {
            Some(values) => values.iter().any(|v| v.as_str() == Some(value)),
            None => true,
        }
    }

    /// Whether the verb's input requires `property`.
    fn requires(&self, plugin: &str, verb: &str, property: &str) -> bool {
        self.schema(plugin, verb)
            .and_then(|s| s.get("required"))
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|v| v.as_str() == Some(property)))
    }

    /// A reference to the result of the call at batch index `index`: 1-based,
    /// which the engine never reads as another step.
    fn reference(index: usize, path: &str) -> Value {
        Value::String(format!("${{STEP_{}{path}}}", index + 1))
    }

    fn push(&mut self, s: &mut Step<'_>, plugin: &str, verb: &str, call: Call) -> Option<usize> {
        if self.schema(plugin, verb).is_none() {
            let why = match self.catalog.unavailable(plugin) {
                Some(reason) => format!("the {plugin} plugin is not available: {reason}"),
                None if self.catalog.get(plugin).is_none() => {
                    format!("the {plugin} plugin is not loaded on this host")
                }
                None => format!("the {plugin} plugin here has no `{verb}` verb"),
            };
            s.tool_problem(format!("`{}` needs {plugin}.{verb}: {why}", s.tool));
            return None;
        }
        self.calls.push(call);
        Some(self.base + self.calls.len() - 1)
    }

    /// Adds the step's own call; its batch index.
    fn call(
        &mut self,
        s: &mut Step<'_>,
        plugin: &str,
        verb: &str,
        input: Map<String, Value>,
    ) -> Option<usize> {
        let call = Call {
            plugin: plugin.to_owned(),
            verb: verb.to_owned(),
            input,
            helper: None,
        };
        self.push(s, plugin, verb, call)
    }

    /// Adds a call the step needs before its own; its batch index.
    fn helper(
        &mut self,
        s: &mut Step<'_>,
        plugin: &str,
        verb: &str,
        input: Map<String, Value>,
        purpose: &'static str,
    ) -> Option<usize> {
        let call = Call {
            plugin: plugin.to_owned(),
            verb: verb.to_owned(),
            input,
            helper: Some(purpose),
        };
        self.push(s, plugin, verb, call)
    }

    /// The step's `tabId`, or (none given) the first tab of the browser, as
    /// desktop-touch's "first page tab": listed once per macro, by the first
    /// step that needs it.
    fn tab(&mut self, s: &mut Step<'_>) -> Option<Value> {
        match browser::tab_id(s) {
            browser::TabId::Given(id) => Some(json!(id)),
            browser::TabId::Bad => None,
            browser::TabId::First => self.first_tab(s),
        }
    }

    /// Records that the call at `index` lists the tabs, so later steps take
    /// their first tab from it rather than listing them again.
    fn listed_tabs(&mut self, index: usize) {
        self.first_tab.get_or_insert(index);
    }

    /// A reference to the first tab's id.
    fn first_tab(&mut self, s: &mut Step<'_>) -> Option<Value> {
        let index = match *self.first_tab {
            Some(index) => index,
            None => {
                let index = self.helper(s, BROWSER, "tabs_context", Map::new(), "first tab")?;
                *self.first_tab = Some(index);
                index
            }
        };
        Some(Self::reference(index, ".tabs[0].tabId"))
    }
}

/// `value` with every string made literal for the engine (`${` escaped), so
/// text a client sends is typed, searched for or run exactly as sent.
fn lit(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(vars::escape(s)),
        Value::Array(items) => Value::Array(items.iter().map(lit).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), lit(v))).collect()),
        other => other.clone(),
    }
}

/// Verb tool names, as the catalog names them by default, to (plugin, verb).
/// The desktop plugin's verbs win a clash: this is the desktop tool.
fn our_tools(catalog: &Catalog) -> Vec<(String, String, String)> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let desktop_first = catalog
        .get(DESKTOP)
        .into_iter()
        .chain(catalog.plugins().filter(|p| p.name() != DESKTOP));
    for plugin in desktop_first {
        for verb in plugin.verb_names() {
            let name = super::single::tool_name(plugin, verb);
            if seen.insert(name.clone()) {
                out.push((name, plugin.name().to_owned(), verb.to_owned()));
            }
        }
    }
    out
}

/// Every tool name a step may use with these plugins: desktop-touch's that
/// can be done here, then ours that desktop-touch's do not shadow.
fn tool_names(catalog: &Catalog) -> Vec<String> {
    let mut names: Vec<String> = TOOLS
        .iter()
        .filter(|t| match &t.kind {
            Kind::Maps {
                needs: (plugin, verb),
                ..
            } => catalog.get(plugin).is_some_and(|p| p.verb(verb).is_some()),
            Kind::Refused(_) => false,
        })
        .map(|t| t.name.to_owned())
        .collect();
    names.extend(
        our_tools(catalog)
            .into_iter()
            .map(|(name, _, _)| name)
            .filter(|name| tools::find(name).is_none()),
    );
    names.sort();
    names.dedup();
    names
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
predictable multi-step workflows (focus -> sleep -> type -> screenshot). steps[] are {{tool, params}} with \
desktop-touch's tool and parameter names (focus_window, keyboard {{action: type|press|sequence}}, mouse_click, \
mouse_drag, scroll {{action: raw}}, screenshot {{detail: image|text|meta}}, wait_until, click_element, \
set_element_value, get_ui_elements, get_windows, browser_*), or this host's own verb names; the pseudo-step \
{{tool: \"sleep\", params: {{ms: N}}}} pauses up to {max_sleep} ms. Windows-only tools (clipboard, terminal, \
window_dock, workspace_*, notification_show, desktop_discover/act) are refused. At most {MAX_STEPS} steps, \
all checked before the first runs. stop_on_error=true (default) halts on the first failure. You see no \
intermediate result: do not use it for conditional logic, and split the macro where a step may fail \
conditionally (a dialog that may appear). Each screenshot step costs the tokens of a standalone call. \
Result: {{steps_total, steps_completed, results: [{{step (0-based), tool, ok, text, error, code}}], \
warnings}}; include: ['envelope'] wraps it as {{_version, data, as_of, confidence}}, ['raw'] (default) does not.",
            max_sleep = tools::MAX_SLEEP_MS
        )
    }

    fn input_schema(&self, catalog: &Catalog) -> Value {
        json!({
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_STEPS,
                    "description": "Ordered list of tool calls to execute sequentially (max 50 steps).",
                    "items": {
                        "type": "object",
                        "properties": {
                            "tool": {"type": "string", "enum": tool_names(catalog)},
                            "params": {"type": "object", "description": "The tool's parameters, as when calling it directly."}
                        },
                        "required": ["tool"],
                        "additionalProperties": false
                    }
                },
                "stop_on_error": {"type": "boolean", "default": true},
                "include": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "['envelope']: {_version, data, as_of, confidence}; ['raw'] (default): the result alone."
                },
                "session_id": session_id_schema()
            },
            "required": ["steps"],
            "additionalProperties": false
        })
    }

    fn output_schema(&self) -> Value {
        // Top level only (see `batch::report_schema`). Nothing is required:
        // with include ["envelope"] the result is {_version, data, as_of,
        // confidence} instead.
        json!({
            "type": "object",
            "properties": {
                "steps_total": {"type": "integer"},
                "steps_completed": {"type": "integer"},
                "results": {"type": "array"},
                "warnings": {"type": "array"},
                "status": {"type": "string"},
                "session_id": {"type": "string"},
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
        let on_failure = match stop_on_error(args) {
            Ok(true) => "stop",
            Ok(false) => "continue",
            Err(p) => {
                problems.push(p);
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
        let ours = our_tools(catalog);
        let mut calls: Vec<(usize, String, Call)> = Vec::new();
        let mut first_tab = None;
        for (i, step) in steps.iter().enumerate() {
            match map_step(i, step, catalog, &ours, calls.len(), &mut first_tab) {
                Ok((tool, mapped)) => {
                    calls.extend(mapped.into_iter().map(|c| (i, tool.clone(), c)));
                }
                Err(p) => problems.extend(p),
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let out: Vec<Value> = calls
            .into_iter()
            .map(|(i, tool, call)| batch_step(i, &tool, call, limits))
            .collect();
        let mut batch = json!({"steps": out, "on_failure": on_failure});
        if let Some(session) = args.get("session_id") {
            batch["session_id"] = session.clone();
        }
        Ok(batch)
    }

    fn render(&self, report: &Report) -> Value {
        render::raw(report, None)
    }

    fn render_call(&self, args: &Map<String, Value>, report: &Report) -> Value {
        let total = args.get("steps").and_then(Value::as_array).map(Vec::len);
        let data = render::raw(report, total);
        if include_envelope(args).unwrap_or(false) {
            envelope(data, now_ms())
        } else {
            data
        }
    }

    fn content(&self, report: &Report, structured: &Value) -> Option<Vec<ContentItem>> {
        // desktop-touch's layout: the result as JSON text first (clients
        // parse it), then each image followed by the step that took it.
        let mut items = vec![ContentItem::Text {
            text: structured.to_string(),
        }];
        items.extend(render::images(report));
        Some(items)
    }
}

/// The envelope desktop-touch's run_macro builds: `as_of` is the wallclock
/// when the result was assembled, and `confidence` is `degraded` because that
/// is a server clock reading rather than an observed event's time (its
/// envelope builder says so whenever no event time is supplied, which is
/// always the case for run_macro).
fn envelope(data: Value, wallclock_ms: u64) -> Value {
    json!({
        "_version": "1.0",
        "data": data,
        "as_of": {"wallclock_ms": wallclock_ms},
        "confidence": "degraded"
    })
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `stop_on_error`, coerced as desktop-touch coerces booleans.
fn stop_on_error(args: &Map<String, Value>) -> Result<bool, Problem> {
    match args.get("stop_on_error") {
        None | Some(Value::Null) | Some(Value::Bool(true)) => Ok(true),
        Some(Value::Bool(false)) => Ok(false),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("false") => Ok(false),
        Some(Value::Number(n)) if n.as_f64() == Some(1.0) => Ok(true),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => Ok(false),
        Some(other) => Err(arg_problem(
            "stop_on_error",
            format!("must be true or false, got {other}"),
        )),
    }
}

/// Whether `include` asks for the envelope: `raw` wins when both are given,
/// and other words are ignored (desktop-touch's memory opt-ins feed envelope
/// fields its run_macro never fills).
fn include_envelope(args: &Map<String, Value>) -> Result<bool, Problem> {
    let Some(include) = args.get("include").filter(|v| !v.is_null()) else {
        return Ok(false);
    };
    let Some(items) = include.as_array() else {
        return Err(arg_problem(
            "include",
            "must be an array such as [\"envelope\"]",
        ));
    };
    let mut words = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(word) => words.push(word),
            None => {
                return Err(arg_problem(
                    &format!("include[{i}]"),
                    format!("must be a string such as \"envelope\", got {item}"),
                ));
            }
        }
    }
    Ok(!words.contains(&"raw") && words.contains(&"envelope"))
}

/// One `{tool, params}` as its calls, with the tool name it was given.
fn map_step(
    index: usize,
    step: &Value,
    catalog: &Catalog,
    ours: &[(String, String, String)],
    base: usize,
    first_tab: &mut Option<usize>,
) -> Result<(String, Vec<Call>), Vec<Problem>> {
    let problem = |field: &str, message: String| Problem {
        step: Some(index),
        label: None,
        field: format!("steps[{index}]{field}"),
        message,
    };
    let Some(obj) = step.as_object() else {
        return Err(vec![problem(
            "",
            format!("must be an object {{tool, params}}, got {step}"),
        )]);
    };
    let mut problems = Vec::new();
    for key in obj.keys() {
        if key != "tool" && key != "params" {
            problems.push(Problem {
                step: Some(index),
                label: None,
                field: crate::plan::join_field(
                    &format!("steps[{index}]"),
                    &crate::plan::key_field(key),
                ),
                message: "unknown field (expected tool, params)".into(),
            });
        }
    }
    let empty = Map::new();
    let params = match obj.get("params") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(p)) => p,
        Some(other) => {
            problems.push(problem(
                ".params",
                format!("must be an object, got {other}"),
            ));
            &empty
        }
    };
    let tool = match obj.get("tool") {
        Some(Value::String(t)) => t.as_str(),
        Some(other) => {
            problems.push(problem(
                ".tool",
                format!("must be a tool name, got {other}"),
            ));
            return Err(problems);
        }
        None => {
            problems.push(problem(".tool", "is required".into()));
            return Err(problems);
        }
    };
    let mut s = Step::new(index, tool, params);
    let mut out = Out::new(catalog, base, first_tab);
    match tools::find(tool) {
        Some(t) => match &t.kind {
            Kind::Maps { map, .. } => map(&mut s, &mut out),
            Kind::Refused(reason) => {
                s.tool_problem(format!("`{tool}` cannot run on this host: {reason}"));
                s.accept_rest();
            }
        },
        None => match ours.iter().find(|(name, _, _)| name == tool) {
            Some((_, plugin, verb)) => tools::ours(&mut s, &mut out, plugin, verb),
            None => {
                let names = tool_names(catalog);
                let known: Vec<&str> = names.iter().map(String::as_str).collect();
                let hint = crate::plan::closest(tool, &known)
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default();
                s.tool_problem(format!("unknown tool `{tool}`{hint}"));
                s.accept_rest();
            }
        },
    }
    let calls = out.calls;
    problems.extend(s.finish());
    if problems.is_empty() {
        Ok((tool.to_owned(), calls))
    } else {
        Err(problems)
    }
}

/// A call as a generic batch step, labelled so the report can be folded back
/// into the caller's steps (see [`render::Label`]).
fn batch_step(index: usize, tool: &str, call: Call, limits: &Limits) -> Value {
    let label = render::Label {
        index,
        tool,
        helper: call.helper,
    }
    .to_string();
    let timeout = match call.plugin.as_str() {
        DESKTOP => step_timeout_ms(&call.verb, &call.input, limits),
        BROWSER if call.verb == "wait_for_page" => {
            let wait = call
                .input
                .get("timeout_ms")
                .and_then(Value::as_u64)
                .unwrap_or(PAGE_WAIT_MS);
            room_for_wait(wait, limits)
        }
        _ => None,
    };
    let mut out = json!({
        "plugin": call.plugin,
        "verb": call.verb,
        "input": call.input,
        "label": label,
    });
    if let Some(ms) = timeout {
        out["timeout_ms"] = json!(ms);
    }
    out
}
