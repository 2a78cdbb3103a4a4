//! Reading a verb's JSON input without trusting it.
//!
//! The host validates every input against the verb's schema before the call, but a
//! plugin must not rely on that: these helpers re-check what they read and turn every
//! problem into an `invalid-input` failure that names the field.

use std::ops::RangeInclusive;

use serde_json::{Map, Value, json};

use crate::stephost::plugin::types::Failure;

/// An `invalid-input` failure about `field` (empty when the input as a whole is wrong);
/// `details` carries the field name so callers need not parse the message.
pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Failure {
    let details = if field.is_empty() {
        String::new()
    } else {
        json!({ "field": field }).to_string()
    };
    Failure {
        code: "invalid-input".into(),
        message: message.into(),
        input_fired: false,
        details,
    }
}

/// A verb's input object; its getters name the offending field in every error.
pub(crate) struct Args(Map<String, Value>);

impl Args {
    /// Parses `input` as a JSON object whose keys are all in `allowed`. Empty input
    /// counts as `{}`.
    pub(crate) fn parse(input: &str, allowed: &[&str]) -> Result<Self, Failure> {
        let value = match input.trim() {
            "" => Value::Object(Map::new()),
            text => serde_json::from_str(text)
                .map_err(|e| invalid("", format!("input is not valid JSON: {e}")))?,
        };
        let Value::Object(map) = value else {
            return Err(invalid(
                "",
                format!("input must be a JSON object, got `{value}`"),
            ));
        };
        if let Some(key) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            let expected = if allowed.is_empty() {
                "this verb takes no fields".to_string()
            } else {
                format!("expected one of: {}", allowed.join(", "))
            };
            return Err(invalid(key, format!("unknown field `{key}`; {expected}")));
        }
        Ok(Self(map))
    }

    /// A field as given, if present.
    pub(crate) fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field)
    }

    /// A required field of any type.
    pub(crate) fn value(&self, field: &str) -> Result<&Value, Failure> {
        self.0
            .get(field)
            .ok_or_else(|| invalid(field, format!("missing required field `{field}`")))
    }

    /// An integer field within `range`; required when `default` is `None`.
    pub(crate) fn int(
        &self,
        field: &str,
        range: RangeInclusive<u64>,
        default: Option<u64>,
    ) -> Result<u64, Failure> {
        let Some(value) = self.0.get(field) else {
            return default
                .ok_or_else(|| invalid(field, format!("missing required field `{field}`")));
        };
        // JSON Schema counts 5.0 as an integer, so accept whole floats too.
        let n = value.as_u64().or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                .map(|f| f as u64)
        });
        n.filter(|n| range.contains(n)).ok_or_else(|| {
            invalid(
                field,
                format!(
                    "`{field}` must be an integer from {} to {}; got `{value}`",
                    range.start(),
                    range.end()
                ),
            )
        })
    }

    /// A required string field.
    pub(crate) fn string_required(&self, field: &str) -> Result<String, Failure> {
        let value = self.value(field)?;
        value
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| invalid(field, format!("`{field}` must be a string; got `{value}`")))
    }

    /// An optional string field.
    pub(crate) fn string(&self, field: &str, default: &str) -> Result<String, Failure> {
        if self.0.contains_key(field) {
            self.string_required(field)
        } else {
            Ok(default.to_owned())
        }
    }

    /// An optional boolean field.
    pub(crate) fn boolean(&self, field: &str, default: bool) -> Result<bool, Failure> {
        match self.0.get(field) {
            None => Ok(default),
            Some(value) => value.as_bool().ok_or_else(|| {
                invalid(
                    field,
                    format!("`{field}` must be true or false; got `{value}`"),
                )
            }),
        }
    }
}
