//! Reading a verb's JSON input without trusting it.
//!
//! The host validates every input against the verb's schema first, but the
//! plugin re-checks what it reads and names the field in every complaint.

use serde_json::{Map, Value, json};

use crate::stephost::plugin::types::Failure;

/// An `invalid-input` failure about `field`.
pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Failure {
    Failure {
        code: "invalid-input".into(),
        message: message.into(),
        input_fired: false,
        details: if field.is_empty() {
            String::new()
        } else {
            json!({ "field": field }).to_string()
        },
    }
}

/// A verb's input object.
pub(crate) struct Args(pub(crate) Map<String, Value>);

impl Args {
    /// Parses `input`; empty input is `{}`. Keys outside `allowed` are refused.
    pub(crate) fn parse(input: &str, allowed: &[&str]) -> Result<Self, Failure> {
        let value = match input.trim() {
            "" => Value::Object(Map::new()),
            text => serde_json::from_str(text)
                .map_err(|e| invalid("", format!("input is not valid JSON: {e}")))?,
        };
        let Value::Object(map) = value else {
            return Err(invalid("", "input must be a JSON object"));
        };
        if let Some(key) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(invalid(
                key,
                format!(
                    "unknown field `{key}`; expected one of: {}",
                    allowed.join(", ")
                ),
            ));
        }
        Ok(Self(map))
    }

    /// A field as given.
    pub(crate) fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    /// A whole number in `min..=max`; required when `default` is `None`.
    pub(crate) fn int(
        &self,
        field: &str,
        min: i64,
        max: i64,
        default: Option<i64>,
    ) -> Result<i64, Failure> {
        let Some(value) = self.get(field) else {
            return default.ok_or_else(|| invalid(field, format!("`{field}` is required")));
        };
        let n = value.as_i64().or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                .map(|f| f as i64)
        });
        n.filter(|n| (min..=max).contains(n)).ok_or_else(|| {
            invalid(
                field,
                format!("`{field}` must be a whole number from {min} to {max}, got {value}"),
            )
        })
    }

    /// A coordinate (screen pixels).
    pub(crate) fn coord(&self, field: &str) -> Result<i32, Failure> {
        // Bounded to i32 by the range.
        self.int(field, -100_000, 100_000, None).map(|n| n as i32)
    }

    /// A number in `min..=max`.
    pub(crate) fn number(
        &self,
        field: &str,
        min: f64,
        max: f64,
        default: f64,
    ) -> Result<f64, Failure> {
        let Some(value) = self.get(field) else {
            return Ok(default);
        };
        value
            .as_f64()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                invalid(
                    field,
                    format!("`{field}` must be a number from {min} to {max}, got {value}"),
                )
            })
    }

    /// A string; required when `default` is `None`.
    pub(crate) fn string(&self, field: &str, default: Option<&str>) -> Result<String, Failure> {
        match self.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(invalid(
                field,
                format!("`{field}` must be a string, got {other}"),
            )),
            None => default
                .map(str::to_owned)
                .ok_or_else(|| invalid(field, format!("`{field}` is required"))),
        }
    }

    /// A boolean.
    pub(crate) fn boolean(&self, field: &str, default: bool) -> Result<bool, Failure> {
        match self.get(field) {
            None => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| invalid(field, format!("`{field}` must be true or false, got {v}"))),
        }
    }
}
