//! Reading a verb's JSON input without trusting it.
//!
//! The host validates every input against the verb's schema before the call, but
//! a plugin must not rely on that (a schema can be looser than the code, a field
//! can hold a `${...}` that resolved to something odd, a test calls the plugin
//! directly). These getters re-check what they read and turn every problem into an
//! `invalid-input` failure whose message and `details.field` name the field.
//!
//! JSON `null` counts as "not given" for every typed getter, so an optional field
//! set to `null` takes its default. Only [`Args::value`] returns `null` as a value.

use std::ops::RangeInclusive;

use serde_json::{Map, Value};

use crate::Failure;

/// A verb's input object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Args(Map<String, Value>);

/// The `invalid-input` failure about `field` (empty: the input as a whole).
fn invalid(field: &str, message: String) -> Failure {
    Failure::invalid_input(message).with_field(field)
}

impl Args {
    /// Parses `input` as a JSON object; empty input counts as `{}`.
    pub fn parse(input: &str) -> Result<Self, Failure> {
        let value = match input.trim() {
            "" => return Ok(Self::default()),
            text => serde_json::from_str(text)
                .map_err(|e| invalid("", format!("input is not valid JSON: {e}")))?,
        };
        match value {
            Value::Object(map) => Ok(Self(map)),
            other => Err(invalid(
                "",
                format!("input must be a JSON object, got `{other}`"),
            )),
        }
    }

    /// Refuses any key outside `allowed`. [`crate::invoke`] calls it with the
    /// properties of every closed (`"additionalProperties": false`) input schema,
    /// so handlers need not list their fields again.
    pub fn check_fields<S: AsRef<str>>(&self, allowed: &[S]) -> Result<(), Failure> {
        let allowed: Vec<&str> = allowed.iter().map(AsRef::as_ref).collect();
        match self.0.keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => {
                let expected = if allowed.is_empty() {
                    "this verb takes no fields".to_owned()
                } else {
                    format!("expected one of: {}", allowed.join(", "))
                };
                Err(invalid(key, format!("unknown field `{key}`; {expected}")))
            }
        }
    }

    /// The whole object, as given.
    pub fn map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// A field, if given and not `null`.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    /// A required field of any type; `null` is a value here.
    pub fn value(&self, field: &str) -> Result<&Value, Failure> {
        self.0.get(field).ok_or_else(|| missing(field))
    }

    /// A required string.
    pub fn str(&self, field: &str) -> Result<&str, Failure> {
        self.opt_str(field)?.ok_or_else(|| missing(field))
    }

    /// An optional string.
    pub fn opt_str(&self, field: &str) -> Result<Option<&str>, Failure> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(invalid(
                field,
                format!("`{field}` must be a string; got `{other}`"),
            )),
        }
    }

    /// An optional string, `default` when absent.
    pub fn str_or<'a>(&'a self, field: &str, default: &'a str) -> Result<&'a str, Failure> {
        Ok(self.opt_str(field)?.unwrap_or(default))
    }

    /// An optional boolean, `default` when absent.
    pub fn boolean(&self, field: &str, default: bool) -> Result<bool, Failure> {
        match self.get(field) {
            None => Ok(default),
            Some(value) => value.as_bool().ok_or_else(|| {
                invalid(
                    field,
                    format!("`{field}` must be true or false; got `{value}`"),
                )
            }),
        }
    }

    /// A required integer within `range`.
    pub fn int(&self, field: &str, range: RangeInclusive<i64>) -> Result<i64, Failure> {
        self.opt_int(field, range)?.ok_or_else(|| missing(field))
    }

    /// An optional integer within `range`. JSON Schema counts `5.0` as an integer,
    /// so whole floats are accepted too.
    pub fn opt_int(&self, field: &str, range: RangeInclusive<i64>) -> Result<Option<i64>, Failure> {
        let Some(value) = self.get(field) else {
            return Ok(None);
        };
        let n = value.as_i64().or_else(|| {
            value
                .as_f64()
                // Strictly inside i64, where the cast is exact for whole floats.
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e18)
                .map(|f| f as i64)
        });
        match n.filter(|n| range.contains(n)) {
            Some(n) => Ok(Some(n)),
            None if range == (i64::MIN..=i64::MAX) => Err(invalid(
                field,
                format!("`{field}` must be an integer; got `{value}`"),
            )),
            None => Err(invalid(
                field,
                format!(
                    "`{field}` must be an integer from {} to {}; got `{value}`",
                    range.start(),
                    range.end()
                ),
            )),
        }
    }

    /// An optional number within `range`.
    pub fn opt_number(
        &self,
        field: &str,
        range: RangeInclusive<f64>,
    ) -> Result<Option<f64>, Failure> {
        let Some(value) = self.get(field) else {
            return Ok(None);
        };
        match value.as_f64().filter(|n| range.contains(n)) {
            Some(n) => Ok(Some(n)),
            None if range == (f64::MIN..=f64::MAX) => Err(invalid(
                field,
                format!("`{field}` must be a number; got `{value}`"),
            )),
            None => Err(invalid(
                field,
                format!(
                    "`{field}` must be a number from {} to {}; got `{value}`",
                    range.start(),
                    range.end()
                ),
            )),
        }
    }
}

impl From<Map<String, Value>> for Args {
    fn from(map: Map<String, Value>) -> Self {
        Self(map)
    }
}

/// The failure for a required field that is absent.
fn missing(field: &str) -> Failure {
    invalid(field, format!("missing required field `{field}`"))
}
