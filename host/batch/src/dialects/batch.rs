//! `batch`: the generic batch, as the CLI runs it. The identity dialect.

use serde_json::{Map, Value, json};

use super::{Dialect, session_id_schema, text};
use crate::{Catalog, Limits};
use crate::{Problem, Report};

/// The generic `batch` tool.
pub struct Batch;

impl Dialect for Batch {
    fn name(&self) -> &str {
        "batch"
    }

    fn description(&self, catalog: &Catalog) -> String {
        let mut listing = String::new();
        for plugin in catalog.plugins() {
            let verbs: Vec<&str> = plugin.verb_names().collect();
            listing.push_str(&format!("\n- {}: {}", plugin.name(), verbs.join(", ")));
        }
        format!(
            "Run several plugin steps in ONE call (a round trip costs seconds, a step milliseconds): use it whenever \
you can see two or more steps ahead. A step is {{plugin, verb, input}}, input exactly as that verb's own tool takes \
it. The whole batch is validated first: any problem rejects it, naming step and field, and nothing runs.\n\
References in input strings: ${{STEP_N}} is step N's result (1-based; ${{STEP_0}} is the first too), with paths \
like ${{STEP_2.items[0].name}}; ${{name}} is a value stored by assign_to (this batch or an earlier one in the \
session). A string that is exactly one reference becomes that JSON value; \\${{ is a literal ${{.\n\
on_failure \"stop\" (default) ends at the first failed step, \"continue\" runs the rest; always: true runs a step \
even after a failure (a final screenshot, a cleanup). Each step gets min(its timeout_ms, what is left of the \
batch's). Images come back inline, each after a text naming its step.\n\
Plugins and verbs:{listing}"
        )
    }

    fn input_schema(&self, catalog: &Catalog) -> Value {
        let plugins: Vec<&str> = catalog.names().collect();
        // Descriptions only where the name and type do not say it: the tool
        // description covers the rest once.
        json!({
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "plugin": {"type": "string", "enum": plugins},
                            "verb": {"type": "string"},
                            "input": {"type": "object"},
                            "label": {"type": "string"},
                            "timeout_ms": {"type": "integer", "minimum": 1},
                            "assign_to": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                            "always": {"type": "boolean", "default": false},
                            "retry": {
                                "type": "object",
                                "properties": {
                                    "attempts": {"type": "integer", "minimum": 1, "description": "Runs in all."},
                                    "on": {"type": "array", "items": {"type": "string"}, "description": "Failure codes to re-run on (default [\"world-moved\"])."},
                                    "recover": {"type": "boolean", "default": false, "description": "Also run the recovery the plugin proposes between runs."}
                                },
                                "additionalProperties": false
                            }
                        },
                        "required": ["plugin", "verb"],
                        "additionalProperties": false
                    }
                },
                "on_failure": {"type": "string", "enum": ["stop", "continue"], "default": "stop"},
                "timeout_ms": {"type": "integer", "minimum": 1, "default": 120000, "description": "Batch time budget."},
                "session_id": session_id_schema()
            },
            "required": ["steps"],
            "additionalProperties": false
        })
    }

    fn output_schema(&self) -> Value {
        report_schema()
    }

    fn to_batch(
        &self,
        args: &Map<String, Value>,
        _catalog: &Catalog,
        _limits: &Limits,
    ) -> Result<Value, Vec<Problem>> {
        Ok(Value::Object(args.clone()))
    }

    fn render(&self, report: &Report) -> Value {
        let mut out = serde_json::to_value(report).unwrap_or(Value::Null);
        // A text item that only repeats the step's value is left out: the
        // value serves, and the result is read (and paid for) once.
        if let Some(steps) = out.get_mut("steps").and_then(Value::as_array_mut) {
            for (step, reported) in steps.iter_mut().zip(&report.steps) {
                let Some(obj) = step.as_object_mut() else {
                    continue;
                };
                if let Some(Value::Array(items)) = obj.get_mut("content") {
                    items.retain(|item| {
                        !item
                            .get("text")
                            .and_then(Value::as_str)
                            .is_some_and(|t| text::repeats_value(t, reported.value.as_ref()))
                    });
                    if items.is_empty() {
                        obj.remove("content");
                    }
                }
            }
        }
        out
    }
}

/// JSON Schema of the generic report. Why only the top level: the schema is
/// sent to the model with the tool in every conversation, and clients validate
/// each result against it; the steps' fields are the report's own
/// (`crate::Report`), named in the result itself.
pub fn report_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["passed", "failed", "timed_out", "cancelled", "invalid", "rejected", "planned"]},
            "batch_id": {"type": "string"},
            "session_id": {"type": "string"},
            "steps_total": {"type": "integer"},
            "steps_executed": {"type": "integer"},
            "never_started": {"type": "integer"},
            "steps": {"type": "array"},
            "errors": {"type": "array"}
        },
        "required": ["status", "batch_id", "steps_total", "steps_executed", "never_started", "steps"]
    })
}
