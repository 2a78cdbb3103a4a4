//! Everything wrong with a `describe()` answer at once, each with its place:
//! what `stephost plugin check` reports and what a refused load names.

use serde::Serialize;
use serde_json::Value;

use crate::plugin::{RawDescription, valid_plugin_name, valid_semver};

/// The property a single-verb MCP tool adds to choose a session; a verb that
/// declares one of its own gets the caller's value instead.
pub const SESSION_ID: &str = "session_id";

/// Whether a problem stops the host from loading the plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The host refuses the plugin.
    Error,
    /// The host loads it, but callers will stumble over this.
    Warning,
}

/// Which of a verb's schemas a problem is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemaKind {
    /// `input-schema`.
    Input,
    /// `output-schema`.
    Output,
}

impl SchemaKind {
    fn as_str(self) -> &'static str {
        match self {
            SchemaKind::Input => "input",
            SchemaKind::Output => "output",
        }
    }
}

/// One problem in a description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Whether it stops the load.
    pub severity: Severity,
    /// The verb it is in, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verb: Option<String>,
    /// The schema it is in, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaKind>,
    /// JSON pointer into that schema (`/properties/name/type`; empty for the
    /// schema itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// What is wrong, and what to write instead where that is clear.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(verb) = &self.verb {
            write!(f, "verb `{verb}`: ")?;
        }
        if let Some(schema) = self.schema {
            write!(f, "{} schema", schema.as_str())?;
            match self.pointer.as_deref() {
                Some("") | None => write!(f, ": ")?,
                Some(pointer) => write!(f, " at {pointer}: ")?,
            }
        }
        f.write_str(&self.message)
    }
}

/// Every problem in `raw`, errors and warnings, in the order of the answer.
pub fn review(raw: &RawDescription) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut plugin = |severity, message: String| {
        problems.push(Problem {
            severity,
            verb: None,
            schema: None,
            pointer: None,
            message,
        });
    };
    if !valid_plugin_name(&raw.name) {
        plugin(
            Severity::Error,
            format!(
                "describe() returned the name `{}`; plugin names are lower-case `[a-z][a-z0-9-]*`",
                raw.name
            ),
        );
    }
    if !valid_semver(&raw.version) {
        plugin(
            Severity::Error,
            format!(
                "describe() returned the version `{}`; a plugin's version is semantic versioning's MAJOR.MINOR.PATCH (with an optional -pre-release and +build), such as 1.4.0",
                raw.version
            ),
        );
    }
    if raw.description.trim().is_empty() {
        plugin(
            Severity::Warning,
            "the plugin's description is empty; `stephost plugins` and operators read it".into(),
        );
    }
    if raw.verbs.is_empty() {
        plugin(
            Severity::Warning,
            "the plugin offers no verbs, so no step can use it".into(),
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for verb in &raw.verbs {
        let name = verb.name.as_str();
        let at = |severity, schema, pointer: Option<String>, message: String| Problem {
            severity,
            verb: Some(name.to_owned()),
            schema,
            pointer,
            message,
        };
        if name.is_empty() {
            problems.push(at(
                Severity::Error,
                None,
                None,
                "a verb has an empty name".into(),
            ));
        } else if !seen.insert(name) {
            problems.push(at(
                Severity::Error,
                None,
                None,
                "listed twice; verb names are unique within a plugin".into(),
            ));
        }
        if verb.description.trim().is_empty() {
            problems.push(at(
                Severity::Warning,
                None,
                None,
                "its description is empty; a model chooses tools by their description".into(),
            ));
        }
        match serde_json::from_str::<Value>(&verb.input_schema) {
            Err(e) => problems.push(at(
                Severity::Error,
                Some(SchemaKind::Input),
                None,
                format!("not JSON: {e}"),
            )),
            Ok(schema) => {
                let found = schema_problems(&schema);
                let valid = found.is_empty();
                problems.extend(found.into_iter().map(|(pointer, message)| {
                    at(
                        Severity::Error,
                        Some(SchemaKind::Input),
                        Some(pointer),
                        message,
                    )
                }));
                if valid {
                    problems.extend(input_shape(&schema).into_iter().map(|(pointer, message)| {
                        at(
                            Severity::Warning,
                            Some(SchemaKind::Input),
                            Some(pointer),
                            message,
                        )
                    }));
                }
            }
        }
        if !verb.output_schema.trim().is_empty() {
            match serde_json::from_str::<Value>(&verb.output_schema) {
                Err(e) => problems.push(at(
                    Severity::Error,
                    Some(SchemaKind::Output),
                    None,
                    format!("not JSON: {e}"),
                )),
                // The host keeps an output schema as documentation only, so a
                // wrong one misleads readers but stops nothing.
                Ok(schema) => {
                    problems.extend(schema_problems(&schema).into_iter().map(
                        |(pointer, message)| {
                            at(
                                Severity::Warning,
                                Some(SchemaKind::Output),
                                Some(pointer),
                                message,
                            )
                        },
                    ));
                }
            }
        }
    }
    problems
}

/// What makes `schema` no valid JSON Schema, each as (JSON pointer into it,
/// message): every meta-schema violation, or else what stops it compiling
/// (a `$ref` that resolves nowhere, a bad `pattern`).
pub fn schema_problems(schema: &Value) -> Vec<(String, String)> {
    // The validator crate documents panics on meta-schemas it cannot place;
    // a plugin's schema must never take the host down.
    let meta = std::panic::catch_unwind(|| {
        jsonschema::meta::validator_for(schema).map(|meta| {
            meta.iter_errors(schema)
                .map(|e| (e.instance_path().to_string(), e.to_string()))
                .collect::<Vec<_>>()
        })
    });
    let found = match meta {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => vec![(
            "/$schema".to_owned(),
            format!("cannot check against its meta-schema: {e}"),
        )],
        Err(_) => vec![(
            "/$schema".to_owned(),
            "names a meta-schema the host does not know".to_owned(),
        )],
    };
    if !found.is_empty() {
        return found;
    }
    crate::schema::problem(schema).into_iter().collect()
}

/// What a valid input schema does that callers trip over: MCP lists a tool's
/// input as an object, and `session_id` is the single-verb tools' own.
fn input_shape(schema: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        found.push((
            "/type".to_owned(),
            "a step's input is a JSON object; say `\"type\": \"object\"` so MCP clients and models see its properties".to_owned(),
        ));
    }
    if schema
        .get("properties")
        .and_then(|p| p.get(SESSION_ID))
        .is_some()
    {
        found.push((
            format!("/properties/{SESSION_ID}"),
            format!(
                "`{SESSION_ID}` is the property each MCP verb tool adds to choose a session; a verb that declares it receives the caller's value and its tool loses session choice (rename it)"
            ),
        ));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::RawVerb;

    fn description(input_schema: &str) -> RawDescription {
        RawDescription {
            name: "demo".into(),
            version: "1.0.0".into(),
            description: "A demo.".into(),
            bare_tool_names: false,
            verbs: vec![RawVerb {
                name: "echo".into(),
                description: "Echoes.".into(),
                input_schema: input_schema.into(),
                output_schema: String::new(),
                acts_on_world: false,
                checked: false,
            }],
        }
    }

    #[test]
    fn every_schema_error_is_reported_with_its_pointer() {
        let problems = review(&description(
            r#"{"type":"object","properties":{"a":{"type":"strin"},"b":{"minLength":-1}}}"#,
        ));
        let pointers: Vec<_> = problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .filter_map(|p| p.pointer.as_deref())
            .collect();
        assert!(pointers.contains(&"/properties/a/type"), "{problems:#?}");
        assert!(
            pointers.contains(&"/properties/b/minLength"),
            "{problems:#?}"
        );
        let first = problems[0].to_string();
        assert!(
            first.starts_with("verb `echo`: input schema at /properties/"),
            "{first}"
        );
    }

    #[test]
    fn a_clean_description_has_no_problems() {
        let problems = review(&description(
            r#"{"type":"object","properties":{"text":{"type":"string"}}}"#,
        ));
        assert_eq!(problems, []);
    }

    #[test]
    fn shapes_that_trip_callers_are_warnings() {
        let problems = review(&description(
            r#"{"type":"object","properties":{"session_id":{"type":"string"}}}"#,
        ));
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert_eq!(problems[0].severity, Severity::Warning);
        assert_eq!(
            problems[0].pointer.as_deref(),
            Some("/properties/session_id")
        );
        let loose = review(&description("{}"));
        assert_eq!(loose[0].pointer.as_deref(), Some("/type"), "{loose:#?}");
    }

    #[test]
    fn an_unknown_meta_schema_is_a_problem_not_a_panic() {
        let problems = review(&description(
            r#"{"$schema":"https://example.invalid/schema","type":"object"}"#,
        ));
        assert!(
            problems
                .iter()
                .any(|p| p.severity == Severity::Error && p.pointer.as_deref() == Some("/$schema")),
            "{problems:#?}"
        );
    }
}
