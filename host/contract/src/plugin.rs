//! What a plugin says about itself, checked and compiled once at load.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::ContractVersion;
use crate::review::{Problem, Severity, review};

/// A verb's description, as listed by `stephost plugins --json` and the MCP front.
#[derive(Debug, Clone, Serialize)]
pub struct VerbInfo {
    /// Verb name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Input JSON Schema.
    pub input_schema: Value,
    /// Output JSON Schema, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Whether it acts on the outside world.
    pub acts_on_world: bool,
    /// Whether the plugin checks its input beyond the schema before a batch
    /// acts (contract 0.3.0 `tool.check`).
    pub checked: bool,
}

/// A plugin's description.
#[derive(Debug, Clone, Serialize)]
pub struct PluginInfo {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// What it is for.
    pub description: String,
    /// Whether its verbs keep their bare names as MCP tools.
    pub bare_tool_names: bool,
    /// Where it was loaded from (`builtin:<name>` or a path).
    pub source: String,
    /// sha256 of the component bytes.
    pub sha256: String,
    /// The contract version the component was built against.
    pub contract: ContractVersion,
    /// Its verbs.
    pub verbs: Vec<VerbInfo>,
}

/// One verb with its compiled input schema.
pub struct Verb {
    /// What the plugin said about it.
    pub info: VerbInfo,
    validator: jsonschema::Validator,
}

impl Verb {
    /// Validates `input` against the verb's schema; each problem as
    /// (JSON pointer into the input, message).
    pub fn validate(&self, input: &Value) -> Vec<(String, String)> {
        self.validator
            .iter_errors(input)
            .map(|e| (e.instance_path().to_string(), e.to_string()))
            .collect()
    }
}

/// Why a plugin's `describe` answer was refused: every error in it, each with
/// its place ([`review`](crate::review)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.problems))]
pub struct SpecError {
    problems: Vec<Problem>,
}

impl SpecError {
    /// What is wrong, in the order of the answer.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

fn render(problems: &[Problem]) -> String {
    match problems {
        [one] => one.to_string(),
        many => {
            let listed: Vec<String> = many
                .iter()
                .enumerate()
                .map(|(i, p)| format!("({}) {p}", i + 1))
                .collect();
            format!("{} problems: {}", many.len(), listed.join("; "))
        }
    }
}

/// Semantic versioning 2.0's `MAJOR.MINOR.PATCH[-pre][+build]`: numbers without
/// leading zeros, identifiers of `[0-9A-Za-z-]`.
pub(crate) fn valid_semver(version: &str) -> bool {
    let (rest, build) = match version.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (version, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let number = |n: &str| {
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'))
    };
    let identifiers = |text: &str, numeric_rule: bool| {
        text.split('.').all(|id| {
            !id.is_empty()
                && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && (!numeric_rule || !id.bytes().all(|b| b.is_ascii_digit()) || number(id))
        })
    };
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| number(p))
        && pre.is_none_or(|p| identifiers(p, true))
        && build.is_none_or(|b| identifiers(b, false))
}

/// A verb as `describe` returns it, in any contract version: schemas as text.
#[derive(Debug, Clone)]
pub struct RawVerb {
    /// Verb name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Input JSON Schema as JSON text.
    pub input_schema: String,
    /// Output JSON Schema as JSON text; empty when undeclared.
    pub output_schema: String,
    /// Whether it acts on the outside world.
    pub acts_on_world: bool,
    /// Whether `check` should be called for it (always false before 0.3.0).
    pub checked: bool,
}

/// A `describe` answer, in any contract version.
#[derive(Debug, Clone)]
pub struct RawDescription {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// What it is for.
    pub description: String,
    /// Whether its verbs keep their bare names as MCP tools.
    pub bare_tool_names: bool,
    /// Its verbs, in listing order.
    pub verbs: Vec<RawVerb>,
}

/// A plugin the host may plan steps for: what it said, checked and compiled.
/// Everything the batch engine and the fronts need to know about a plugin, and
/// nothing about how it runs.
pub struct PluginSpec {
    info: PluginInfo,
    verbs: BTreeMap<String, Verb>,
    contract: ContractVersion,
}

impl PluginSpec {
    /// Checks `raw` (from a component loaded from `source` with digest
    /// `sha256`, speaking `contract`) and compiles its input schemas.
    pub fn new(
        raw: RawDescription,
        source: &str,
        sha256: &str,
        contract: ContractVersion,
    ) -> Result<Self, SpecError> {
        let problems: Vec<Problem> = review(&raw)
            .into_iter()
            .filter(|p| p.severity == Severity::Error)
            .collect();
        if !problems.is_empty() {
            return Err(SpecError { problems });
        }
        // Reviewed above, so these cannot fail; a slip still refuses, never panics.
        let refuse = |verb: &str, message: String| SpecError {
            problems: vec![Problem {
                severity: Severity::Error,
                verb: Some(verb.to_owned()),
                schema: None,
                pointer: None,
                message,
            }],
        };
        let mut verbs = BTreeMap::new();
        let mut infos = Vec::with_capacity(raw.verbs.len());
        for v in raw.verbs {
            let input_schema: Value = serde_json::from_str(&v.input_schema)
                .map_err(|e| refuse(&v.name, e.to_string()))?;
            let validator =
                crate::schema::validator_for(&input_schema).map_err(|e| refuse(&v.name, e))?;
            let output_schema = if v.output_schema.trim().is_empty() {
                None
            } else {
                Some(
                    serde_json::from_str(&v.output_schema)
                        .map_err(|e| refuse(&v.name, e.to_string()))?,
                )
            };
            let info = VerbInfo {
                name: v.name.clone(),
                description: v.description,
                input_schema,
                output_schema,
                acts_on_world: v.acts_on_world,
                checked: v.checked,
            };
            infos.push(info.clone());
            verbs.insert(v.name, Verb { info, validator });
        }
        Ok(Self {
            info: PluginInfo {
                name: raw.name,
                version: raw.version,
                description: raw.description,
                bare_tool_names: raw.bare_tool_names,
                source: source.to_owned(),
                sha256: sha256.to_owned(),
                contract,
                verbs: infos,
            },
            verbs,
            contract,
        })
    }

    /// A spec with no verbs, named after `source`: what stands for a component
    /// while it is asked to describe itself.
    pub fn placeholder(source: &str, sha256: &str, contract: ContractVersion) -> Self {
        Self {
            info: PluginInfo {
                name: source.to_owned(),
                version: String::new(),
                description: String::new(),
                bare_tool_names: false,
                source: source.to_owned(),
                sha256: sha256.to_owned(),
                contract,
                verbs: Vec::new(),
            },
            verbs: BTreeMap::new(),
            contract,
        }
    }

    /// Its description.
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// The contract version the component was built against.
    pub fn contract(&self) -> ContractVersion {
        self.contract
    }

    /// A verb by name.
    pub fn verb(&self, name: &str) -> Option<&Verb> {
        self.verbs.get(name)
    }

    /// Verb names, in the order the plugin lists them.
    pub fn verb_names(&self) -> impl Iterator<Item = &str> {
        self.info.verbs.iter().map(|v| v.name.as_str())
    }
}

impl std::fmt::Debug for PluginSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginSpec")
            .field("name", &self.info.name)
            .field("contract", &self.contract)
            .field("verbs", &self.verbs.len())
            .finish()
    }
}

pub(crate) fn valid_plugin_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(name: &str, schema: &str) -> RawDescription {
        RawDescription {
            name: name.into(),
            version: "1.0.0".into(),
            description: String::new(),
            bare_tool_names: false,
            verbs: vec![RawVerb {
                name: "echo".into(),
                description: String::new(),
                input_schema: schema.into(),
                output_schema: String::new(),
                acts_on_world: false,
                checked: false,
            }],
        }
    }

    #[test]
    fn versions_are_semver() {
        for good in [
            "0.1.0",
            "1.4.10",
            "2.0.0-rc.1",
            "1.0.0-alpha-2+build.7",
            "1.0.0+20261207",
        ] {
            assert!(valid_semver(good), "{good}");
        }
        for bad in [
            "",
            "1",
            "1.0",
            "v1.0.0",
            "1.0.0.0",
            "01.0.0",
            "1.0.0-",
            "1.0.0-01",
            "1.0.0+",
            "1.0.0-a..b",
        ] {
            assert!(!valid_semver(bad), "{bad}");
        }
        let mut description = raw("demo", "{}");
        description.version = "latest".into();
        let err = PluginSpec::new(description, "x", "00", ContractVersion::LATEST)
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("`latest`") && e.contains("MAJOR.MINOR.PATCH")),
            "{err:?}"
        );
    }

    #[test]
    fn a_spec_validates_inputs_against_its_schemas() {
        let spec = PluginSpec::new(
            raw("demo", r#"{"type":"object","required":["text"]}"#),
            "builtin:demo",
            "00",
            ContractVersion::LATEST,
        )
        .expect("a valid description");
        let verb = spec.verb("echo").expect("the verb");
        assert!(verb.validate(&serde_json::json!({"text": "x"})).is_empty());
        assert_eq!(verb.validate(&serde_json::json!({})).len(), 1);
        assert_eq!(spec.verb_names().collect::<Vec<_>>(), ["echo"]);
    }

    #[test]
    fn bad_descriptions_are_refused_naming_the_fault() {
        let bad = |name: &str, schema: &str| {
            PluginSpec::new(raw(name, schema), "f", "00", ContractVersion::V0_1)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(bad("Demo", "{}").contains("lower-case"));
        assert!(bad("demo", "{").contains("verb `echo`: input schema: not JSON"));
        let wrong = bad("demo", r#"{"type": 5, "minLength": -1}"#);
        assert!(
            wrong.starts_with("2 problems: (1) verb `echo`: input schema at /"),
            "{wrong}"
        );
    }
}
