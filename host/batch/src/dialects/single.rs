//! One verb as its own tool: a one-step batch whose result is that step.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Dialect, add_session_id};
use crate::{BatchStatus, ContentItem, Problem, Report};
use crate::{Catalog, Limits};
use stephost_contract::PluginSpec;

/// The default tool name of `plugin.verb`: `<plugin>_<verb>`, or the bare verb
/// when the plugin asks for bare names, as [`sanitize_tool_name`] makes it.
pub fn tool_name(plugin: &PluginSpec, verb: &str) -> String {
    if plugin.info().bare_tool_names {
        sanitize_tool_name(verb)
    } else {
        sanitize_tool_name(&format!("{}_{verb}", plugin.name()))
    }
}

/// An MCP tool name: `[A-Za-z0-9_-]`, at most 64 characters; anything else
/// becomes `_`.
pub fn sanitize_tool_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    out.truncate(64);
    out
}

/// A tool for one verb of one plugin.
pub struct SingleVerb {
    tool_name: String,
    plugin: Arc<PluginSpec>,
    verb: String,
    /// Whether `session_id` is ours to strip (the verb does not declare it).
    owns_session_id: bool,
}

impl SingleVerb {
    /// The tool `tool_name` for `plugin.verb`.
    pub fn new(tool_name: String, plugin: Arc<PluginSpec>, verb: String) -> Self {
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

    fn description(&self, _catalog: &Catalog) -> String {
        // The verb's own description only: the server instructions say once
        // that every single tool is a batch step too (its plugin and verb are
        // listed in the `batch` description), rather than each tool repeating it.
        self.plugin
            .verb(&self.verb)
            .map(|v| v.info.description.clone())
            .unwrap_or_default()
    }

    fn input_schema(&self, _catalog: &Catalog) -> Value {
        let mut schema = self
            .plugin
            .verb(&self.verb)
            .map(|v| v.info.input_schema.clone())
            .unwrap_or_else(|| json!({"type": "object"}));
        if self.owns_session_id {
            add_session_id(&mut schema);
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
        _catalog: &Catalog,
        _limits: &Limits,
    ) -> Result<Value, Vec<Problem>> {
        let mut input = args.clone();
        if self.owns_session_id {
            input.remove("session_id");
        }
        Ok(json!({"steps": [{"plugin": self.plugin.name(), "verb": self.verb, "input": input}]}))
    }

    fn content(&self, report: &Report, _structured: &Value) -> Option<Vec<ContentItem>> {
        // Only an invalid call reads differently from the generic lines: its
        // problems are named by the tool's own arguments.
        if report.status != BatchStatus::Invalid {
            return None;
        }
        let mut text = format!(
            "invalid: {} problem(s) in the arguments; nothing ran",
            report.errors.len()
        );
        for problem in report.errors.iter().map(as_argument) {
            text.push_str(&format!("\n- {}: {}", problem.field, problem.message));
        }
        Some(vec![ContentItem::Text { text }])
    }

    fn render(&self, report: &Report) -> Value {
        let mut out = Map::new();
        out.insert("status".into(), json!(report.status));
        if let Some(session) = &report.session_id {
            out.insert("session_id".into(), json!(session));
        }
        if !report.errors.is_empty() {
            let errors: Vec<Problem> = report.errors.iter().map(as_argument).collect();
            out.insert("errors".into(), json!(errors));
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

/// A problem the planner found in the one step's input, named by the tool's
/// arguments: `steps[0].input.url` is the argument `url`, and `steps[0].input`
/// the arguments as a whole.
fn as_argument(problem: &Problem) -> Problem {
    let field = match problem.field.strip_prefix("steps[0].input") {
        Some("") => "(arguments)".to_owned(),
        Some(rest) => rest.strip_prefix('.').unwrap_or(rest).to_owned(),
        None => problem.field.clone(),
    };
    Problem {
        step: None,
        label: None,
        field,
        message: problem.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(field: &str) -> Problem {
        Problem {
            step: Some(0),
            label: None,
            field: field.into(),
            message: "m".into(),
        }
    }

    #[test]
    fn problems_are_named_by_the_tools_arguments() {
        assert_eq!(as_argument(&problem("steps[0].input.url")).field, "url");
        assert_eq!(
            as_argument(&problem("steps[0].input[\"a b\"]")).field,
            "[\"a b\"]"
        );
        assert_eq!(as_argument(&problem("steps[0].input")).field, "(arguments)");
        assert_eq!(as_argument(&problem("timeout_ms")).field, "timeout_ms");
        assert_eq!(as_argument(&problem("steps[0].input.url")).step, None);
    }
}
