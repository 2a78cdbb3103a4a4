//! What a batch leaves for the next one in its session: the `assign_to`
//! variables, with their sizes for `limits.max_session_vars_bytes`.

use std::collections::BTreeMap;

use serde_json::Value;

/// A session's named variables. Sizes are kept beside the values so the cap is
/// checked without serializing every variable again.
#[derive(Debug, Default)]
pub struct Vars {
    values: BTreeMap<String, Value>,
    bytes: BTreeMap<String, u64>,
}

impl Vars {
    /// The variables by name.
    pub fn values(&self) -> &BTreeMap<String, Value> {
        &self.values
    }

    /// Whether `name` is set.
    pub fn contains(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// The JSON size of `name`'s value, if set.
    pub fn size(&self, name: &str) -> Option<u64> {
        self.bytes.get(name).copied()
    }

    /// Sets `name` to `value`, whose JSON text is `bytes` long.
    pub fn set(&mut self, name: &str, value: Value, bytes: u64) {
        self.values.insert(name.to_owned(), value);
        self.bytes.insert(name.to_owned(), bytes);
    }

    /// The JSON size of every variable but `name`.
    pub fn bytes_without(&self, name: &str) -> u64 {
        self.bytes
            .iter()
            .filter(|(n, _)| n.as_str() != name)
            .map(|(_, b)| *b)
            .fold(0, u64::saturating_add)
    }
}
