//! BuiltIn's keywords about the running test and suite: tags, the test message,
//! documentation and metadata. A session is one test in one suite, so they act on that
//! test and suite: the session keeps what they set ([`RunContext`]), RF's automatic
//! variables show it (`@{TEST TAGS}`, `${TEST DOCUMENTATION}`, `&{TEST METADATA}`,
//! `${SUITE DOCUMENTATION}`, `&{SUITE METADATA}`), and each logs what RF logs.

use crate::args::Bound;
use crate::engine::Session;
use crate::error::RfResult;
use crate::matching::{glob_match, normalize, normalize_name};
use crate::value::{Value, plural, seq2str};

/// What the suite-context keywords set in a session.
#[derive(Debug, Default, Clone)]
pub struct RunContext {
    /// The test's tags, unique and ordered as RF orders them (normalized, sorted).
    pub tags: Vec<String>,
    pub message: String,
    pub test_doc: String,
    pub suite_doc: String,
    pub test_metadata: Vec<(String, String)>,
    pub suite_metadata: Vec<(String, String)>,
}

impl RunContext {
    /// The test and its suite as the `test` verb reports them: what a batch's
    /// `Set Tags`, `Set Test Message`, documentation and metadata keywords left.
    pub fn to_json(&self) -> serde_json::Value {
        let metadata = |pairs: &[(String, String)]| {
            serde_json::Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                    .collect(),
            )
        };
        serde_json::json!({
            "tags": self.tags,
            "message": self.message,
            "documentation": self.test_doc,
            "metadata": metadata(&self.test_metadata),
            "suite": {
                "documentation": self.suite_doc,
                "metadata": metadata(&self.suite_metadata),
            },
        })
    }
}

/// Whose documentation or metadata a keyword sets.
#[derive(Clone, Copy)]
enum Scope {
    Test,
    Suite,
}

impl Scope {
    fn word(self) -> &'static str {
        match self {
            Scope::Test => "test",
            Scope::Suite => "suite",
        }
    }

    /// The automatic variables' prefix (`TEST_DOCUMENTATION`, `SUITE_METADATA`).
    fn variable(self) -> &'static str {
        match self {
            Scope::Test => "TEST",
            Scope::Suite => "SUITE",
        }
    }
}

/// RF's `_get_new_text`: the new text, or the old one continued with it.
fn new_text(old: &str, new: &str, append: bool, separator: &str) -> String {
    if append && !old.is_empty() {
        format!("{old}{separator}{new}")
    } else {
        new.to_string()
    }
}

fn tag_values(tags: &[String]) -> Value {
    Value::list(tags.iter().map(|t| Value::str(t.clone())).collect())
}

fn metadata_value(metadata: &[(String, String)]) -> Value {
    Value::dict(
        metadata
            .iter()
            .map(|(k, v)| (Value::str(k.clone()), Value::str(v.clone())))
            .collect(),
        true,
    )
}

fn tag_args(b: &Bound) -> Vec<String> {
    b.varargs.iter().map(Value::to_str).collect()
}

pub(super) fn set_tags(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let tags = tag_args(b);
    for tag in &tags {
        // RF's `Tags` drops empty tags and `NONE`, and keeps one of tags that normalize alike.
        if tag.is_empty() || tag.eq_ignore_ascii_case("NONE") {
            continue;
        }
        let key = normalize_name(tag);
        if !s.context.tags.iter().any(|t| normalize_name(t) == key) {
            s.context.tags.push(tag.clone());
        }
    }
    s.context.tags.sort_by_key(|t| normalize_name(t));
    let value = tag_values(&s.context.tags);
    s.store.set("TEST_TAGS", value);
    s.info(format!(
        "Set tag{} {}.",
        plural(tags.len()),
        seq2str(&tags, "'", ", ", " and ")
    ));
    Ok(Value::None)
}

pub(super) fn remove_tags(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let patterns = tag_args(b);
    let spaceless = |t: &str| normalize(t, &["_"], false, false);
    s.context.tags.retain(|tag| {
        !patterns
            .iter()
            .any(|p| glob_match(&spaceless(tag), &spaceless(p), true, true))
    });
    let value = tag_values(&s.context.tags);
    s.store.set("TEST_TAGS", value);
    s.info(format!(
        "Removed tag{} {}.",
        plural(patterns.len()),
        seq2str(&patterns, "'", ", ", " and ")
    ));
    Ok(Value::None)
}

pub(super) fn set_test_message(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let message = new_text(
        &s.context.message,
        &b.text("message"),
        b.flag("append"),
        &b.text("separator"),
    );
    s.info(format!("Set test message to:\n{message}"));
    s.context.message = message;
    Ok(Value::None)
}

pub(super) fn set_test_documentation(s: &mut Session, b: &Bound) -> RfResult<Value> {
    set_documentation(s, b, Scope::Test)
}

pub(super) fn set_suite_documentation(s: &mut Session, b: &Bound) -> RfResult<Value> {
    set_documentation(s, b, Scope::Suite)
}

fn set_documentation(s: &mut Session, b: &Bound, of: Scope) -> RfResult<Value> {
    let old = match of {
        Scope::Test => &s.context.test_doc,
        Scope::Suite => &s.context.suite_doc,
    };
    let doc = new_text(old, &b.text("doc"), b.flag("append"), &b.text("separator"));
    s.store.set(
        &format!("{}_DOCUMENTATION", of.variable()),
        Value::str(doc.clone()),
    );
    s.info(format!("Set {} documentation to:\n{doc}", of.word()));
    match of {
        Scope::Test => s.context.test_doc = doc,
        Scope::Suite => s.context.suite_doc = doc,
    }
    Ok(Value::None)
}

/// Sets `name` in `metadata` as RF's `Metadata` (a normalized dict) does; returns the
/// name and its new value.
fn set_metadata(metadata: &mut Vec<(String, String)>, b: &Bound) -> (String, String) {
    let name = b.text("name");
    let key = normalize_name(&name);
    let (append, separator) = (b.flag("append"), b.text("separator"));
    let at = metadata.iter().position(|(k, _)| normalize_name(k) == key);
    let old = at.map(|i| metadata[i].1.clone()).unwrap_or_default();
    let value = new_text(&old, &b.text("value"), append, &separator);
    match at {
        // A normalized dict keeps the name a key was first set with.
        Some(i) => metadata[i].1 = value.clone(),
        None => {
            metadata.push((name.clone(), value.clone()));
            metadata.sort_by_key(|(k, _)| normalize_name(k));
        }
    }
    (name, value)
}

pub(super) fn set_test_metadata(s: &mut Session, b: &Bound) -> RfResult<Value> {
    set_any_metadata(s, b, Scope::Test)
}

pub(super) fn set_suite_metadata(s: &mut Session, b: &Bound) -> RfResult<Value> {
    set_any_metadata(s, b, Scope::Suite)
}

fn set_any_metadata(s: &mut Session, b: &Bound, of: Scope) -> RfResult<Value> {
    let metadata = match of {
        Scope::Test => &mut s.context.test_metadata,
        Scope::Suite => &mut s.context.suite_metadata,
    };
    let (name, value) = set_metadata(metadata, b);
    let all = metadata_value(metadata);
    s.store.set(&format!("{}_METADATA", of.variable()), all);
    s.info(format!(
        "Set {} metadata '{name}' to value '{value}'.",
        of.word()
    ));
    Ok(Value::None)
}

/// The imported library RF's `get_library` finds for `name` (normalized name match), or
/// its "No library 'X' found." error.
fn find_library(s: &Session, name: &Value) -> RfResult<String> {
    if matches!(name, Value::None) {
        return Err(crate::error::RfError::fail("Library can not be None."));
    }
    let wanted = normalize_name(&name.to_str());
    s.libraries
        .iter()
        .find(|lib| normalize_name(&lib.name) == wanted)
        .map(|lib| lib.name.clone())
        .ok_or_else(|| {
            crate::error::RfError::fail(format!("No library '{}' found.", name.to_str()))
        })
}

pub(super) fn get_library_instance(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let name = if b.flag("all") {
        "all".to_string()
    } else {
        find_library(s, &b.get("name"))?
    };
    Err(crate::error::RfError::fail(format!(
        "Keyword 'BuiltIn.Get Library Instance' cannot return library '{name}' in the rf sandbox: a library instance is a Python object, and the sandbox's libraries are not Python."
    )))
}

pub(super) fn reload_library(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let name = find_library(s, &b.get("name_or_instance"))?;
    let prefix = format!("{name}.");
    let count = s
        .all_keyword_names()
        .iter()
        .filter(|(full, _)| full.starts_with(&prefix))
        .count();
    // The sandbox's libraries cannot change under it, so reloading finds the same keywords.
    s.info(format!("Reloaded library {name} with {count} keywords."));
    Ok(Value::None)
}
