//! Reading one macro step's `params` the way desktop-touch's schemas read them
//! (numbers and booleans may arrive as strings, `null` means absent), with
//! every problem named in the caller's terms: `steps[2].params.target.windowTitle`.
//!
//! A mapping asks for each parameter it understands (or marks it ignored);
//! whatever it never asked about is reported as unknown at the end, so the
//! list of accepted parameters cannot drift from the code that reads them.

use std::ops::RangeInclusive;

use serde_json::{Map, Value};

use crate::Problem;
use crate::plan::{closest, join_field, key_field};

/// One step's parameters being read.
pub(super) struct Step<'a> {
    /// The step's 0-based place in the macro.
    pub(super) index: usize,
    /// The tool it names.
    pub(super) tool: &'a str,
    params: &'a Map<String, Value>,
    /// Where these parameters sit under `params` (`target.` inside a target).
    prefix: String,
    /// What this reading is of, for the unknown-parameter message
    /// (`keyboard action 'type'`).
    context: Option<String>,
    /// Keys asked about (read, ignored or refused).
    known: Vec<String>,
    problems: Vec<Problem>,
}

impl<'a> Step<'a> {
    pub(super) fn new(index: usize, tool: &'a str, params: &'a Map<String, Value>) -> Self {
        Self {
            index,
            tool,
            params,
            prefix: String::new(),
            context: None,
            known: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// The parameters under `key` (an object, or JSON text of one, as
    /// desktop-touch's `wait_until.target` allows), read by a child whose
    /// problems come back through [`Step::absorb`].
    pub(super) fn child<'b>(&mut self, key: &str, map: &'b Map<String, Value>) -> Step<'b>
    where
        'a: 'b,
    {
        self.mark(key);
        let path = format!("{}{}", self.prefix, key_field(key));
        self.child_at(path, map)
    }

    /// The object at `key[index]`, read by a child.
    pub(super) fn item<'b>(
        &mut self,
        key: &str,
        index: usize,
        map: &'b Map<String, Value>,
    ) -> Step<'b>
    where
        'a: 'b,
    {
        self.mark(key);
        let path = format!("{}{}[{index}]", self.prefix, key_field(key));
        self.child_at(path, map)
    }

    fn child_at<'b>(&self, path: String, map: &'b Map<String, Value>) -> Step<'b>
    where
        'a: 'b,
    {
        Step {
            index: self.index,
            tool: self.tool,
            params: map,
            context: Some(format!("`{path}`")),
            prefix: format!("{path}."),
            known: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// Takes a child's problems, its unknown keys included.
    pub(super) fn absorb(&mut self, child: Step<'_>) {
        let problems = child.finish();
        self.problems.extend(problems);
    }

    /// Names what is being read, for the unknown-parameter message.
    pub(super) fn context(&mut self, context: String) {
        self.context = Some(context);
    }

    /// The full field of a parameter: `steps[2].params.x`; `""` is `params`.
    pub(super) fn field(&self, key: &str) -> String {
        let base = format!("steps[{}].params", self.index);
        let key = if key.is_empty() {
            String::new()
        } else {
            key_field(key)
        };
        // A quoted key (`["a b"]`) follows its parent without a dot.
        let rest = if key.starts_with('[') {
            format!("{}{key}", self.prefix.trim_end_matches('.'))
        } else {
            format!("{}{key}", self.prefix)
        };
        join_field(&base, rest.trim_end_matches('.'))
    }

    /// A problem with parameter `key` (`""`: the params as a whole).
    pub(super) fn problem(&mut self, key: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            step: Some(self.index),
            label: None,
            field: self.field(key),
            message: message.into(),
        });
    }

    /// A problem with item `index` of the array parameter `key`.
    pub(super) fn item_problem(&mut self, key: &str, index: usize, message: impl Into<String>) {
        let field = format!("{}[{index}]", self.field(key));
        self.problems.push(Problem {
            step: Some(self.index),
            label: None,
            field,
            message: message.into(),
        });
    }

    /// A problem with the step's `tool`.
    pub(super) fn tool_problem(&mut self, message: impl Into<String>) {
        self.problems.push(Problem {
            step: Some(self.index),
            label: None,
            field: format!("steps[{}].tool", self.index),
            message: message.into(),
        });
    }

    /// Whether anything is wrong so far.
    pub(super) fn failed(&self) -> bool {
        !self.problems.is_empty()
    }

    fn mark(&mut self, key: &str) {
        if !self.known.iter().any(|k| k == key) {
            self.known.push(key.to_owned());
        }
    }

    /// The value of `key`; `null` counts as absent, as optional zod fields
    /// take it.
    pub(super) fn get(&mut self, key: &str) -> Option<&'a Value> {
        self.mark(key);
        self.params.get(key).filter(|v| !v.is_null())
    }

    /// Whether `key` is given.
    pub(super) fn has(&mut self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Whether `key` is given, without counting it as read.
    pub(super) fn peek(&self, key: &str) -> bool {
        self.params.get(key).is_some_and(|v| !v.is_null())
    }

    /// Parameters that only tune how desktop-touch does the job on Windows:
    /// accepted, and nothing here needs them.
    pub(super) fn ignore(&mut self, keys: &[&str]) {
        for key in keys {
            self.mark(key);
        }
    }

    /// Accepts every parameter not read yet: after a problem that makes the
    /// rest moot (an action that cannot run here), or when the parameters go
    /// to one of our verbs as they are and its schema checks them.
    pub(super) fn accept_rest(&mut self) {
        let keys: Vec<String> = self.params.keys().cloned().collect();
        for key in keys {
            self.mark(&key);
        }
    }

    /// The parameters as given.
    pub(super) fn params(&self) -> &'a Map<String, Value> {
        self.params
    }

    /// Refuses `key` when it is given: it asks for something this host
    /// cannot do, and dropping it would change what the step does.
    pub(super) fn refuse(&mut self, key: &str, reason: &str) {
        if self.has(key) {
            self.problem(key, reason);
        }
    }

    /// A string.
    pub(super) fn string(&mut self, key: &str) -> Option<&'a str> {
        match self.get(key)? {
            Value::String(s) => Some(s),
            other => {
                self.problem(key, format!("must be a string, got {other}"));
                None
            }
        }
    }

    /// A string that must be there and not blank.
    pub(super) fn required_string(&mut self, key: &str) -> Option<&'a str> {
        match self.string(key) {
            Some(s) if !s.trim().is_empty() => Some(s),
            Some(_) => {
                self.problem(key, "must not be empty");
                None
            }
            None => {
                if !self.peek(key) {
                    self.problem(key, "is required");
                }
                None
            }
        }
    }

    /// One of `choices`.
    pub(super) fn choice(&mut self, key: &str, choices: &[&'static str]) -> Option<&'static str> {
        let text = self.string(key)?;
        match choices.iter().find(|c| **c == text) {
            Some(c) => Some(c),
            None => {
                self.problem(
                    key,
                    format!("must be one of {}, got {text:?}", quoted(choices)),
                );
                None
            }
        }
    }

    /// A number (numeric strings too, as zod's `coerce.number` takes them).
    pub(super) fn number(&mut self, key: &str) -> Option<f64> {
        let value = self.get(key)?;
        let n = match value {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match n.filter(|n| n.is_finite()) {
            Some(n) => Some(n),
            None => {
                self.problem(key, format!("must be a number, got {value}"));
                None
            }
        }
    }

    /// A required number.
    pub(super) fn required_number(&mut self, key: &str) -> Option<f64> {
        if !self.peek(key) {
            self.mark(key);
            self.problem(key, "is required");
            return None;
        }
        self.number(key)
    }

    /// A whole number within `range`.
    pub(super) fn int(&mut self, key: &str, range: RangeInclusive<i64>) -> Option<i64> {
        let n = self.number(key)?;
        if n.fract() != 0.0 || n < *range.start() as f64 || n > *range.end() as f64 {
            self.problem(
                key,
                format!(
                    "must be a whole number from {} to {}, got {n}",
                    range.start(),
                    range.end()
                ),
            );
            return None;
        }
        Some(n as i64)
    }

    /// A boolean (`"true"`/`"false"` and 1/0 too, as desktop-touch's
    /// `coercedBoolean` takes them).
    pub(super) fn boolean(&mut self, key: &str) -> Option<bool> {
        let value = self.get(key)?;
        let b = match value {
            Value::Bool(b) => Some(*b),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
            Value::Number(n) if n.as_f64() == Some(1.0) => Some(true),
            Value::Number(n) if n.as_f64() == Some(0.0) => Some(false),
            _ => None,
        };
        if b.is_none() {
            self.problem(key, format!("must be true or false, got {value}"));
        }
        b
    }

    /// An object, or JSON text of one.
    pub(super) fn object(&mut self, key: &str) -> Option<&'a Map<String, Value>> {
        match self.get(key)? {
            Value::Object(map) => Some(map),
            other => {
                self.problem(key, format!("must be an object, got {other}"));
                None
            }
        }
    }

    /// An array.
    pub(super) fn array(&mut self, key: &str) -> Option<&'a [Value]> {
        match self.get(key)? {
            Value::Array(items) => Some(items),
            other => {
                self.problem(key, format!("must be an array, got {other}"));
                None
            }
        }
    }

    /// The problems, with one for every parameter nobody asked about.
    pub(super) fn finish(mut self) -> Vec<Problem> {
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        let mut unknown = Vec::new();
        for key in self.params.keys() {
            if !known.contains(&key.as_str()) {
                let hint = closest(key, &known)
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default();
                let of = self
                    .context
                    .clone()
                    .unwrap_or_else(|| format!("`{}`", self.tool));
                let mut accepted = known.clone();
                accepted.sort_unstable();
                unknown.push((
                    key.clone(),
                    format!(
                        "unknown parameter of {of} (it takes {}){hint}",
                        if accepted.is_empty() {
                            "none".to_owned()
                        } else {
                            accepted.join(", ")
                        }
                    ),
                ));
            }
        }
        for (key, message) in unknown {
            self.problem(&key, message);
        }
        self.problems
    }
}

/// `"a", "b" or "c"`.
pub(super) fn quoted(choices: &[&str]) -> String {
    let items: Vec<String> = choices.iter().map(|c| format!("{c:?}")).collect();
    match items.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn values_are_coerced_like_zod_and_problems_name_the_users_field() {
        let p =
            params(json!({"x": "12.5", "on": "TRUE", "off": 0, "n": 3, "bad": "abc", "nil": null}));
        let mut s = Step::new(4, "mouse_click", &p);
        assert_eq!(s.number("x"), Some(12.5));
        assert_eq!(s.boolean("on"), Some(true));
        assert_eq!(s.boolean("off"), Some(false));
        assert_eq!(s.int("n", 1..=2), None);
        assert_eq!(s.number("bad"), None);
        assert_eq!(s.number("nil"), None, "null is absent");
        let problems = s.finish();
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["steps[4].params.n", "steps[4].params.bad"]);
        assert!(problems.iter().all(|p| p.step == Some(4)));
    }

    #[test]
    fn unknown_parameters_are_named_with_a_hint_and_nested_ones_with_their_path() {
        let p = params(json!({"windowtitle": "A", "target": {"elementNam": "B"}}));
        let mut s = Step::new(1, "wait_until", &p);
        s.string("windowTitle");
        let inner = match p.get("target") {
            Some(Value::Object(m)) => m,
            _ => unreachable!("the test's target is an object"),
        };
        let mut child = s.child("target", inner);
        child.string("elementName");
        s.absorb(child);
        let problems = s.finish();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert_eq!(problems[0].field, "steps[1].params.target.elementNam");
        assert!(problems[0].message.contains("did you mean `elementName`"));
        assert!(
            problems[0].message.contains("of `target`"),
            "{}",
            problems[0].message
        );
        assert_eq!(problems[1].field, "steps[1].params.windowtitle");
        assert!(problems[1].message.contains("did you mean `windowTitle`"));
    }

    #[test]
    fn required_and_choice_say_what_is_wanted() {
        let p = params(json!({"action": "tap", "text": "  "}));
        let mut s = Step::new(0, "keyboard", &p);
        assert_eq!(s.choice("action", &["type", "press"]), None);
        assert_eq!(s.required_string("text"), None);
        assert_eq!(s.required_string("keys"), None);
        let problems = s.finish();
        assert!(problems[0].message.contains("\"type\" or \"press\""));
        assert_eq!(problems[1].message, "must not be empty");
        assert_eq!(problems[2].message, "is required");
        assert_eq!(quoted(&["a", "b", "c"]), "\"a\", \"b\" or \"c\"");
    }
}
