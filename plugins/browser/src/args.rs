//! Reading a verb's JSON input without trusting it: the host checks inputs
//! against the schemas first, but the plugin re-checks what it reads, and every
//! problem names its field.

use serde_json::{Map, Value};

use crate::error::{Result, invalid};

/// A verb's input object.
pub(crate) struct Args(Map<String, Value>);

impl Args {
    /// Parses `input` (empty counts as `{}`).
    pub(crate) fn parse(input: &str) -> Result<Self> {
        match input.trim() {
            "" => Ok(Self(Map::new())),
            text => match serde_json::from_str(text) {
                Ok(Value::Object(map)) => Ok(Self(map)),
                Ok(_) => Err(invalid("", "the input must be a JSON object")),
                Err(e) => Err(invalid("", format!("the input is not JSON: {e}"))),
            },
        }
    }

    fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    /// A value, as given.
    pub(crate) fn value(&self, field: &str) -> Result<&Value> {
        self.get(field)
            .ok_or_else(|| invalid(field, format!("`{field}` is required")))
    }

    /// A required string.
    pub(crate) fn str(&self, field: &str) -> Result<&str> {
        self.opt_str(field)?
            .ok_or_else(|| invalid(field, format!("`{field}` is required")))
    }

    /// An optional string.
    pub(crate) fn opt_str(&self, field: &str) -> Result<Option<&str>> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(invalid(
                field,
                format!("`{field}` must be a string, got {other}"),
            )),
        }
    }

    /// An optional number.
    pub(crate) fn opt_f64(&self, field: &str) -> Result<Option<f64>> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| invalid(field, format!("`{field}` must be a number, got {v}"))),
        }
    }

    /// An optional whole number.
    pub(crate) fn opt_i64(&self, field: &str) -> Result<Option<i64>> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| {
                invalid(field, format!("`{field}` must be a whole number, got {v}"))
            }),
        }
    }

    /// `tabId`: the tab a page-acting verb acts on.
    pub(crate) fn tab(&self) -> Result<u32> {
        let value = self.get("tabId").ok_or_else(|| {
            invalid(
                "tabId",
                "`tabId` is required: say which tab (tabs_context lists them, tabs_create opens one)",
            )
        })?;
        value
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                invalid(
                    "tabId",
                    format!("`tabId` must be a tab id (a whole number from 1), got {value}"),
                )
            })
    }

    /// An optional `[x, y]` point, rounded to whole CSS pixels.
    pub(crate) fn point(&self, field: &str) -> Result<Option<(i64, i64)>> {
        let Some(value) = self.get(field) else {
            return Ok(None);
        };
        let bad = || {
            invalid(
                field,
                format!("`{field}` must be [x, y] in CSS pixels of the viewport, got {value}"),
            )
        };
        let items = value.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
        let x = items[0]
            .as_f64()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(bad)?;
        let y = items[1]
            .as_f64()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(bad)?;
        if x > 100_000.0 || y > 100_000.0 {
            return Err(bad());
        }
        Ok(Some((x.round() as i64, y.round() as i64)))
    }
}
