//! Dialects: each batch tool's own input and result shape, mapped onto the
//! generic plan and report. A dialect is a thin translation in both directions;
//! validation, running, timing and retries all happen in the batch engine.

pub mod batch;
pub mod browser_batch;
mod desktop;
pub mod do_steps;
pub mod execute_batch;
pub mod run_macro;
pub mod single;
pub mod text;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::{Catalog, Limits};
use crate::{ContentItem, Problem, Report, StepReport, UnknownPolicy};

/// The built-in batch tools, each with the plugin whose domain it belongs to
/// (`None`: the generic `batch`, always served). The one place this mapping
/// lives; each dialect's `available()` still decides whether its plugin is
/// loaded (the server's tool catalog tests that the two agree). The RF tools
/// share one resume memory per call of this function, so the server calls it
/// once per tenant.
pub fn builtin() -> Vec<(Option<&'static str>, Arc<dyn Dialect>)> {
    let mut builtin: Vec<(Option<&'static str>, Arc<dyn Dialect>)> = vec![
        (None, Arc::new(batch::Batch)),
        (Some("browser"), Arc::new(browser_batch::BrowserBatch)),
        (Some(desktop::DESKTOP), Arc::new(run_macro::RunMacro)),
        (Some(desktop::DESKTOP), Arc::new(do_steps::DoSteps)),
    ];
    builtin.extend(
        execute_batch::dialects()
            .into_iter()
            .map(|dialect| (Some("rf"), dialect)),
    );
    builtin
}

/// One batch tool's shape.
pub trait Dialect: Send + Sync {
    /// Tool name (`batch`, `execute_batch`, ...).
    fn name(&self) -> &str;
    /// Tool description for models: when to use it, how references and failures work.
    fn description(&self, catalog: &Catalog) -> String;
    /// JSON Schema of the tool's arguments.
    fn input_schema(&self, catalog: &Catalog) -> Value;
    /// JSON Schema of the structured result.
    fn output_schema(&self) -> Value;
    /// How `${...}` that the host does not know are treated.
    fn policy(&self) -> UnknownPolicy {
        UnknownPolicy::Reject
    }
    /// The session a call runs in, when the arguments name it. Default: the
    /// `session_id` argument. `resume_batch` names its session via the batch id.
    fn session_for(&self, args: &Map<String, Value>) -> Option<String> {
        session_arg(args).map(str::to_owned)
    }
    /// Whether the tool is offered with these plugins loaded.
    fn available(&self, _catalog: &Catalog) -> bool {
        true
    }
    /// How many steps the arguments ask for, before any mapping: what "never
    /// started" counts when `to_batch` rejects them.
    fn entry_count(&self, args: &Map<String, Value>) -> usize {
        args.get("steps")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    }
    /// Maps tool arguments to a generic batch (`{"steps": [...], ...}`).
    fn to_batch(
        &self,
        args: &Map<String, Value>,
        catalog: &Catalog,
        limits: &Limits,
    ) -> Result<Value, Vec<Problem>>;
    /// Renders the generic report in this tool's result shape.
    fn render(&self, report: &Report) -> Value;
    /// Renders the report for a call whose arguments choose the response shape
    /// (run_macro's `include: ["envelope"]`). Default: [`Dialect::render`].
    fn render_call(&self, _args: &Map<String, Value>, report: &Report) -> Value {
        self.render(report)
    }
    /// The result's content items in order (texts as plain lines, and images
    /// after the text that labels them), when the tool lays them out itself;
    /// `structured` is this call's structured result. `None`, the default: the
    /// generic lines of [`text::report_content`].
    fn content(&self, _report: &Report, _structured: &Value) -> Option<Vec<ContentItem>> {
        None
    }
    /// Whether the MCP result is marked `isError`. Default: anything but a
    /// passed batch. rf-mcp's tools answer a failed or timed-out batch as a
    /// normal result (a client that raises on tool errors must not raise on an
    /// ordinary assertion failure) and keep `isError` for calls that could not
    /// run at all.
    fn is_error(&self, report: &Report) -> bool {
        report.status != crate::BatchStatus::Passed
    }
}

/// The `session_id` argument, if any.
pub fn session_arg(args: &Map<String, Value>) -> Option<&str> {
    args.get("session_id").and_then(Value::as_str)
}

/// A problem with a tool argument outside any step.
pub fn arg_problem(field: &str, message: impl Into<String>) -> Problem {
    Problem {
        step: None,
        label: None,
        field: field.to_owned(),
        message: message.into(),
    }
}

/// Adds a step's outcome to a dialect's rendering of it: `result` (its value),
/// `error` and `notes`, each only when there is one.
pub fn insert_outcome(out: &mut Value, step: &StepReport) {
    if let Some(value) = &step.value {
        out["result"] = value.clone();
    }
    if let Some(error) = &step.error {
        out["error"] = serde_json::json!(error);
    }
    if !step.notes.is_empty() {
        out["notes"] = serde_json::json!(step.notes);
    }
}

/// Adds the optional `session_id` argument to an object schema's properties
/// (a verb's or a saved batch's own schema, which does not name it).
pub fn add_session_id(schema: &mut Value) {
    if let Some(obj) = schema.as_object_mut() {
        let properties = obj
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(properties) = properties.as_object_mut() {
            properties.insert("session_id".into(), session_id_schema());
        }
    }
}

/// JSON Schema for the optional `session_id` argument. Why no description:
/// it is repeated in nearly every tool definition, and every definition is
/// sent to the model in every conversation; the server instructions explain
/// sessions once (omitted: this connection's session).
pub fn session_id_schema() -> Value {
    serde_json::json!({
        "type": "string",
        "pattern": "^[A-Za-z0-9._:-]{1,128}$"
    })
}
