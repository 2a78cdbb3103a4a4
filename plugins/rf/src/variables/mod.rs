//! Robot Framework variables: the store that lives as long as the plugin instance (one
//! host session), and the substitution of `${scalar}`, `@{list}`, `&{dict}`, `%{ENV}`,
//! `${var}[item]`, `${5}`, `${EMPTY}`, `${{expression}}` and extended `${var.attr}` into
//! keyword arguments, with RF's results and error messages.
//!
//! RF keeps test, suite and global scopes; a plugin session has no tests or suites, so
//! there is one scope and `Set Test/Suite/Global Variable` all write to it.

mod replace;
pub mod search;

use std::collections::BTreeMap;

use crate::error::RfError;
use crate::expr::Vars;
use crate::matching::{format_recommendations, normalize, recommend};
use crate::value::Value;

pub use replace::{is_dict_like, is_list_like};

/// One keyword argument before variable substitution.
#[derive(Debug, Clone)]
pub enum Arg {
    /// Test data as written: variables, escapes and `name=value` still to be processed.
    Raw(String),
    /// An already resolved value (a JSON argument from the caller, or an argument that a
    /// run-keyword variant resolved before passing it on).
    Value(Value),
}

impl Arg {
    /// The raw text, if this argument is still raw.
    pub fn raw(&self) -> Option<&str> {
        match self {
            Arg::Raw(s) => Some(s),
            Arg::Value(_) => None,
        }
    }

    /// How the argument reads in messages: raw text as written, values as `str()`.
    pub fn display(&self) -> String {
        match self {
            Arg::Raw(s) => s.clone(),
            Arg::Value(v) => v.to_str(),
        }
    }
}

/// A stored variable: the name as it was set, and its value.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    value: Value,
}

/// The variable store. Names match RF's way: case, spaces and underscores ignored.
#[derive(Debug, Clone)]
pub struct Store {
    vars: BTreeMap<String, Entry>,
    /// The session's environment (`%{NAME}`): the sandbox has no process
    /// environment, so it starts empty and OperatingSystem's keywords change it.
    pub(crate) env: BTreeMap<String, String>,
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

/// The key a name is stored under.
fn key(name: &str) -> String {
    normalize(name, &["_"], true, true)
}

impl Store {
    /// A store with RF's built-in variables.
    pub fn new() -> Self {
        let mut store = Self {
            vars: BTreeMap::new(),
            env: BTreeMap::new(),
        };
        for (name, value) in [
            ("TEMPDIR", Value::str("/tmp")),
            ("EXECDIR", Value::str("/")),
            ("/", Value::str("/")),
            (":", Value::str(":")),
            ("\\n", Value::str("\n")),
            ("SPACE", Value::str(" ")),
            ("True", Value::Bool(true)),
            ("False", Value::Bool(false)),
            ("None", Value::None),
            ("null", Value::None),
            ("LOG_LEVEL", Value::str("INFO")),
        ] {
            store.set(name, value);
        }
        store
    }

    /// The value of undecorated `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.vars.get(&key(name)).map(|e| &e.value)
    }

    /// Sets undecorated `name`. An existing variable keeps the name it was first set with,
    /// as RF's normalized dictionary does.
    pub fn set(&mut self, name: &str, value: Value) {
        crate::value::note_change();
        match self.vars.get_mut(&key(name)) {
            Some(entry) => entry.value = value,
            None => {
                self.vars.insert(
                    key(name),
                    Entry {
                        name: name.to_string(),
                        value,
                    },
                );
            }
        }
    }

    /// Removes undecorated `name`.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        crate::value::note_change();
        self.vars.remove(&key(name)).map(|e| e.value)
    }

    /// Every variable, as (name as set, value), ordered by normalized name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.vars.values().map(|e| (e.name.as_str(), &e.value))
    }

    /// RF's "variable not found" error for `name` (decorated, e.g. `${x}` or, in
    /// expressions, `$x`), with "did you mean" recommendations.
    pub fn not_found(&self, name: &str, deco_braces: bool) -> RfError {
        let mut chars = name.chars();
        let identifier = chars.next().unwrap_or('$');
        let ignore = ["$", "@", "&", "%", "{", "}", "_"];
        let norm = |s: &str| normalize(s, &ignore, true, true);
        let candidates: Vec<(String, String)> = self
            .vars
            .values()
            .map(|e| (e.name.clone(), norm(&e.name)))
            .collect();
        let recommendations: Vec<String> = recommend(&norm(name), &candidates, 10)
            .into_iter()
            .filter(|cand| {
                let value = self.get(cand);
                match identifier {
                    '@' => value.is_some_and(is_list_like),
                    '&' => value.is_some_and(is_dict_like),
                    _ => true,
                }
            })
            .map(|cand| {
                if deco_braces {
                    format!("{identifier}{{{cand}}}")
                } else {
                    format!("{identifier}{cand}")
                }
            })
            .collect();
        RfError::data(format_recommendations(
            &format!("Variable '{name}' not found."),
            &recommendations,
        ))
    }
}

impl Vars for Store {
    fn dollar(&self, name: &str) -> Result<Value, String> {
        self.get(name)
            .cloned()
            .ok_or_else(|| self.not_found(&format!("${name}"), false).message)
    }
}

#[cfg(test)]
mod tests;
