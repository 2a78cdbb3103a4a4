//! `batch`: the generic batch, as the CLI runs it. The identity dialect.

use serde_json::{Map, Value, json};

use super::{Dialect, session_id_schema};
use crate::batch::{Problem, Report};
use crate::plugins::Registry;

/// The generic `batch` tool.
pub struct Batch;

impl Dialect for Batch {
    fn name(&self) -> &str {
        "batch"
    }

    fn description(&self, registry: &Registry) -> String {
        let mut catalog = String::new();
        for plugin in registry.plugins() {
            let verbs: Vec<&str> = plugin.verb_names().collect();
            catalog.push_str(&format!("\n- {}: {}", plugin.name(), verbs.join(", ")));
        }
        format!(
            "Run a whole sequence of plugin steps in ONE call instead of one call per step: every round trip costs \
seconds, each step takes milliseconds. Use it whenever you can see two or more steps ahead.\n\n\
Each step is {{plugin, verb, input}} where input is exactly what that verb's own tool takes, plus optional \
label, timeout_ms, assign_to (store the result under a name) and retry {{attempts, on: [failure codes]}}.\n\n\
The whole batch is validated before anything runs: an unknown plugin or verb, an input that breaks the verb's \
schema, or a reference to a step that cannot have run yet rejects the call with every problem listed, \
naming the step and field, and nothing runs.\n\n\
Chaining: a string in an input may reference earlier results. ${{STEP_N}} is step N's result value (1-based; \
${{STEP_0}} also means the first step). Reach inside with paths: ${{STEP_2.items[0].name}}, ${{STEP_1.rows[-1]}}. \
${{name}} reads a value stored by an earlier assign_to (in this batch or an earlier one in the same session). \
A string that is exactly one reference becomes that JSON value (numbers stay numbers); inside longer text it is \
spliced in. Write \\${{ for a literal ${{.\n\n\
Time: each step runs under min(its timeout_ms, what is left of the batch timeout_ms, default 120000). A step that \
runs out of time is stopped and reported timed_out.\n\n\
Failure: on_failure \"stop\" (default) ends the batch at the first failed step and reports how many never \
started; \"continue\" runs the rest. A step marked always: true runs even after a failure stopped the batch \
(use it for a final screenshot or a cleanup). The result lists every executed step with status, value or error \
{{code, message}}, attempts and time; images come back inline, each after a text item naming its step.\n\n\
Loaded plugins and their verbs:{catalog}"
        )
    }

    fn input_schema(&self, registry: &Registry) -> Value {
        let plugins: Vec<&str> = registry.names().collect();
        json!({
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "description": "Steps, run in order.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "plugin": {"type": "string", "enum": plugins, "description": "Plugin name."},
                            "verb": {"type": "string", "description": "Verb of that plugin."},
                            "input": {"type": "object", "description": "The verb's input; strings may hold ${STEP_N} / ${name} references."},
                            "label": {"type": "string", "description": "Human-readable label, shown in progress and errors."},
                            "timeout_ms": {"type": "integer", "minimum": 1, "description": "Step timeout in ms."},
                            "assign_to": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "description": "Store the result under this name for ${name}."},
                            "always": {"type": "boolean", "default": false, "description": "Run this step even after an earlier failure stopped the batch (a screenshot of the failure, a cleanup)."},
                            "retry": {
                                "type": "object",
                                "properties": {
                                    "attempts": {"type": "integer", "minimum": 1, "description": "Runs in all."},
                                    "on": {"type": "array", "items": {"type": "string"}, "description": "Failure codes that trigger a re-run (default [\"world-moved\"])."},
                                    "recover": {"type": "boolean", "default": false, "description": "Between runs, also run the recovery strategies the plugin proposes in its failure (tier 2), after a plain wait on the first retry (tier 1)."}
                                },
                                "additionalProperties": false
                            }
                        },
                        "required": ["plugin", "verb"],
                        "additionalProperties": false
                    }
                },
                "on_failure": {"type": "string", "enum": ["stop", "continue"], "default": "stop"},
                "timeout_ms": {"type": "integer", "minimum": 1, "default": 120000, "description": "Batch time budget in ms."},
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
        _registry: &Registry,
    ) -> Result<Value, Vec<Problem>> {
        Ok(Value::Object(args.clone()))
    }

    fn render(&self, report: &Report) -> Value {
        serde_json::to_value(report).unwrap_or(Value::Null)
    }
}

/// JSON Schema of the generic report.
pub fn report_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["passed", "failed", "timed_out", "cancelled", "invalid"]},
            "batch_id": {"type": "string"},
            "session_id": {"type": "string"},
            "steps_total": {"type": "integer"},
            "steps_executed": {"type": "integer"},
            "never_started": {"type": "integer"},
            "time_ms": {"type": "number"},
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "index": {"type": "integer", "description": "0-based position."},
                        "label": {"type": "string"},
                        "plugin": {"type": "string"},
                        "verb": {"type": "string"},
                        "status": {"type": "string", "enum": ["passed", "failed", "timed_out", "cancelled"]},
                        "attempts": {"type": "integer"},
                        "time_ms": {"type": "number"},
                        "input": {"description": "The input after references were resolved."},
                        "value": {"description": "The result value."},
                        "error": {
                            "type": "object",
                            "properties": {
                                "code": {"type": "string"},
                                "message": {"type": "string"},
                                "input_fired": {"type": "boolean"},
                                "details": {}
                            }
                        },
                        "content": {"type": "array"},
                        "logs": {"type": "array"},
                        "recovery": {"type": "array", "description": "One entry per recovery round between runs: the failure, the tier and strategy, its actions and the wait."},
                        "notes": {"type": "array", "items": {"type": "string"}}
                    }
                }
            },
            "errors": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "step": {"type": "integer"},
                        "label": {"type": "string"},
                        "field": {"type": "string"},
                        "message": {"type": "string"}
                    }
                }
            },
            "notes": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["status", "batch_id", "steps_total", "steps_executed", "never_started", "steps"]
    })
}
