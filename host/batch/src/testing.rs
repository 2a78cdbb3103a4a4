//! A catalog for the engine's own tests: a `testkit` plugin described the way
//! the built-in one describes itself, without loading any component.

use std::sync::Arc;

use stephost_contract::{ContractVersion, PluginSpec, RawDescription, RawVerb};

use crate::Catalog;

/// `testkit` with `echo {value}` and `sleep {ms}`.
pub(crate) fn catalog() -> Catalog {
    let verb = |name: &str, schema: &str| RawVerb {
        name: name.into(),
        description: String::new(),
        input_schema: schema.into(),
        output_schema: String::new(),
        acts_on_world: false,
    };
    let raw = RawDescription {
        name: "testkit".into(),
        version: "0.1.0".into(),
        description: "test verbs".into(),
        bare_tool_names: false,
        verbs: vec![
            verb(
                "echo",
                r#"{"type":"object","properties":{"value":{}},"required":["value"],"additionalProperties":false}"#,
            ),
            verb(
                "sleep",
                r#"{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"],"additionalProperties":false}"#,
            ),
        ],
    };
    match PluginSpec::new(raw, "builtin:testkit", "00", ContractVersion::LATEST) {
        Ok(spec) => Catalog::new([Arc::new(spec)], []),
        Err(e) => panic!("the test catalog is valid: {e}"),
    }
}
