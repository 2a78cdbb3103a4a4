//! One verb as its own tool: a one-step batch whose result is that step.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Dialect, session_id_schema};
use crate::batch::{Problem, Report};
use crate::plugins::{LoadedPlugin, Registry};

/// A tool for one verb of one plugin.
pub struct SingleVerb {
    tool_name: String,
    plugin: Arc<LoadedPlugin>,
    verb: String,
    /// Whether `session_id` is ours to strip (the verb does not declare it).
    owns_session_id: bool,
}

impl SingleVerb {
    /// The tool `tool_name` for `plugin.verb`.
    pub fn new(tool_name: String, plugin: Arc<LoadedPlugin>, verb: String) -> Self {
        let owns_session_id = plugin
            .verb(&verb)
            .and_then(|v| v.info.input_schema.get("properties"))
            .and_then(|p| p.get("session_id"))
            .is_none();
        Self {
            tool_name,
            plugin,
            verb,
            owns_session_id,
        }
    }

    /// Whether the verb acts on the outside world.
    pub fn acts_on_world(&self) -> bool {
        self.plugin
            .verb(&self.verb)
            .is_some_and(|v| v.info.acts_on_world)
    }
}

impl Dialect for SingleVerb {
    fn name(&self) -> &str {
        &self.tool_name
    }

    fn description(&self, _registry: &Registry) -> String {
        // The verb's own description only: the server instructions say once
        // that every single tool is a batch step too (its plugin and verb are
        // listed in the `batch` description), rather than each tool repeating it.
        self.plugin
            .verb(&self.verb)
            .map(|v| v.info.description.clone())
            .unwrap_or_default()
    }

    fn input_schema(&self, _registry: &Registry) -> Value {
        let mut schema = self
            .plugin
            .verb(&self.verb)
            .map(|v| v.info.input_schema.clone())
            .unwrap_or_else(|| json!({"type": "object"}));
        if self.owns_session_id
            && let Some(obj) = schema.as_object_mut()
        {
            let properties = obj
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(properties) = properties.as_object_mut() {
                properties.insert("session_id".into(), session_id_schema());
            }
        }
        schema
    }

    fn output_schema(&self) -> Value {
        // Why so little: it is repeated in every single-verb tool and sent to
        // the model in every conversation, and clients validate each result
        // against it. Only what every result has, or has the type of, is
        // stated; `render` adds session_id, errors, attempts, time_ms, notes
        // and logs when there are any.
        json!({
            "type": "object",
            "properties": {
                "status": {"type": "string"},
                "value": {},
                "error": {"type": "object"}
            },
            "required": ["status"]
        })
    }

    fn to_batch(
        &self,
        args: &Map<String, Value>,
        _registry: &Registry,
    ) -> Result<Value, Vec<Problem>> {
        let mut input = args.clone();
        if self.owns_session_id {
            input.remove("session_id");
        }
        Ok(json!({"steps": [{"plugin": self.plugin.name(), "verb": self.verb, "input": input}]}))
    }

    fn render(&self, report: &Report) -> Value {
        let mut out = Map::new();
        out.insert("status".into(), json!(report.status));
        if let Some(session) = &report.session_id {
            out.insert("session_id".into(), json!(session));
        }
        if !report.errors.is_empty() {
            out.insert("errors".into(), json!(report.errors));
        }
        if let Some(step) = report.steps.first() {
            if let Some(value) = &step.value {
                out.insert("value".into(), value.clone());
            }
            if let Some(error) = &step.error {
                out.insert("error".into(), json!(error));
            }
            out.insert("attempts".into(), json!(step.attempts));
            out.insert("time_ms".into(), json!(step.time_ms));
            if !step.notes.is_empty() {
                out.insert("notes".into(), json!(step.notes));
            }
            if !step.logs.is_empty() {
                out.insert("logs".into(), json!(step.logs));
            }
        }
        Value::Object(out)
    }
}
