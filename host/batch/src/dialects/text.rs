//! Result values as the plain lines a model reads in a tool result's text.
//!
//! Why not JSON: a model reads the text content of every result, and JSON
//! inside a text string arrives escaped (`\"`, `\n`), so a page tree or a log
//! reads as one long line of escapes. Here a multi-line string keeps its lines,
//! an object reads as `key: value` lines, and only short compound values stay
//! inline as compact JSON. The structured content carries the exact JSON.

use serde_json::Value;

use crate::{ContentItem, Report, StepReport};

/// Compound values whose compact JSON is at most this long stay on one line.
const INLINE_MAX: usize = 96;

/// `head: value` when the value fits on the line, else `head:` and the value's
/// lines indented under it.
pub fn labelled(head: &str, value: &Value) -> String {
    let mut out = String::from(head);
    push_field(&mut out, value, 0);
    out
}

/// The value's lines, with no header (a whole result that is one
/// value, such as a single verb's output).
pub fn block(value: &Value) -> String {
    if let Some(text) = inline(value) {
        return text;
    }
    let mut out = String::new();
    push_nested(&mut out, value, 0);
    trim_newline(&mut out);
    out
}

/// The value on one line when it is a scalar (strings as they are, unless that
/// would be ambiguous) or a short compound.
fn inline(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if s.contains('\n') => None,
        Value::Object(_) | Value::Array(_) => {
            let json = compact_within(value, INLINE_MAX)?;
            (!has_multiline_string(value)).then_some(json)
        }
        _ => Some(scalar_or_inline(value)),
    }
}

fn scalar_or_inline(value: &Value) -> String {
    match value {
        // Why quoted sometimes: bare text is easiest to read, but an empty
        // string, one with edge spaces, or one that reads as another JSON
        // value (`null`, `42`, `true`) must not pass for something else.
        Value::String(s) if s.is_empty() || s.trim() != s || reads_as_json(s) => {
            Value::String(s.clone()).to_string()
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn reads_as_json(s: &str) -> bool {
    matches!(s, "null" | "true" | "false")
        || s.parse::<f64>().is_ok()
        || s.starts_with(['{', '[', '"'])
}

/// The compact JSON of `value` if it is at most `max` bytes. Why not
/// `to_string` and measure: this is asked at every level of a large value, and
/// serializing stops as soon as it is past `max`.
fn compact_within(value: &Value, max: usize) -> Option<String> {
    struct Bounded {
        buf: Vec<u8>,
        max: usize,
    }
    impl std::io::Write for Bounded {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if self.buf.len() + bytes.len() > self.max {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.buf.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded {
        buf: Vec::new(),
        max,
    };
    serde_json::to_writer(&mut out, value).ok()?;
    String::from_utf8(out.buf).ok()
}

fn has_multiline_string(value: &Value) -> bool {
    // Why iterative: values come from plugins and may nest deeply; the host
    // never recurses on input-derived depth.
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s.contains('\n') => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    false
}

/// After a `head` (a key or `-`): ` value` on the same line, or the value's
/// lines below, one level deeper.
fn push_field(out: &mut String, value: &Value, indent: usize) {
    if let Some(text) = inline(value) {
        out.push_str(": ");
        out.push_str(&text);
        return;
    }
    out.push_str(":\n");
    push_nested(out, value, indent + 2);
    trim_newline(out);
}

fn trim_newline(out: &mut String) {
    if out.ends_with('\n') {
        out.pop();
    }
}

fn push_nested(out: &mut String, value: &Value, indent: usize) {
    match value {
        Value::Object(map) => push_object(out, map, indent),
        Value::Array(items) => push_array(out, items, indent),
        Value::String(s) => {
            for line in s.lines() {
                pad(out, indent);
                out.push_str(line);
                out.push('\n');
            }
        }
        other => {
            pad(out, indent);
            out.push_str(&other.to_string());
            out.push('\n');
        }
    }
}

/// Nesting past this depth is shown as compact JSON: the rendering recurses,
/// so its depth is bounded here rather than by the value.
const MAX_DEPTH_INDENT: usize = 2 * 16;

fn push_object(out: &mut String, map: &serde_json::Map<String, Value>, indent: usize) {
    for (key, value) in map {
        pad(out, indent);
        out.push_str(key);
        if indent >= MAX_DEPTH_INDENT {
            out.push_str(": ");
            out.push_str(&value.to_string());
            out.push('\n');
            continue;
        }
        push_field(out, value, indent);
        out.push('\n');
    }
}

fn push_array(out: &mut String, items: &[Value], indent: usize) {
    for value in items {
        pad(out, indent);
        out.push('-');
        if indent >= MAX_DEPTH_INDENT {
            out.push(' ');
            out.push_str(&value.to_string());
            out.push('\n');
            continue;
        }
        match inline(value) {
            Some(text) => {
                out.push(' ');
                out.push_str(&text);
                out.push('\n');
            }
            None => {
                out.push('\n');
                push_nested(out, value, indent + 2);
            }
        }
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// Whether a step's text content item only repeats its value (the testkit's
/// echo, a verb that returns its text both ways): then one of them serves.
pub fn repeats_value(text: &str, value: Option<&Value>) -> bool {
    match value {
        Some(Value::String(s)) if s == text => true,
        Some(v) => compact_within(v, text.len()).is_some_and(|json| json == text),
        None => false,
    }
}

/// The generic result text: the summary, then one entry per executed step
/// (its value or error, its notes and its own texts), each image after a line
/// naming it. `single`: the result of a one-verb tool, whose value is the
/// answer and comes right after a short status line.
pub fn report_content(report: &Report, single: bool) -> Vec<ContentItem> {
    let mut items = Vec::new();
    let mut text = if single && report.steps.len() == 1 {
        single_status(report)
    } else {
        let mut head = report.summary();
        head.push_str(&format!(" · batch {}", report.batch_id));
        if let Some(session) = &report.session_id {
            head.push_str(&format!(" · session {session}"));
        }
        head
    };
    for problem in &report.errors {
        text.push_str(&format!("\n- {problem}"));
    }
    for note in &report.notes {
        text.push_str(&format!("\nnote: {note}"));
    }
    for step in &report.steps {
        let indent = if single { "" } else { "  " };
        if single {
            if let Some(value) = &step.value {
                text.push('\n');
                text.push_str(&block(value));
            }
        } else {
            text.push('\n');
            text.push_str(&step_entry(step));
        }
        if single && let Some(error) = &step.error {
            text.push_str(&format!("\n{}: {}", error.code, error.message));
        }
        for note in &step.notes {
            text.push_str(&format!("\n{indent}note: {note}"));
        }
        for item in &step.content {
            match item {
                ContentItem::Text { text: t } if repeats_value(t, step.value.as_ref()) => {}
                ContentItem::Text { text: t } => {
                    for line in t.lines() {
                        text.push('\n');
                        text.push_str(indent);
                        text.push_str(line);
                    }
                }
                ContentItem::Image {
                    mime_type,
                    data,
                    label,
                } => {
                    text.push_str(&format!("\n[{label}]"));
                    items.push(ContentItem::Text {
                        text: std::mem::take(&mut text),
                    });
                    items.push(ContentItem::Image {
                        mime_type: mime_type.clone(),
                        data: data.clone(),
                        label: label.clone(),
                    });
                }
            }
        }
    }
    if !text.is_empty() {
        items.push(ContentItem::Text {
            text: text.trim_start_matches('\n').to_owned(),
        });
    }
    items
}

/// `step 2 testkit.echo "label" passed in 0.1 ms: value`, or the error.
fn step_entry(step: &StepReport) -> String {
    let mut head = format!("step {} {}.{}", step.index + 1, step.plugin, step.verb);
    if let Some(label) = &step.label {
        head.push_str(&format!(" {}", Value::String(label.clone())));
    }
    head.push(' ');
    head.push_str(step.status.word());
    if step.attempts > 1 {
        head.push_str(&format!(" after {} runs", step.attempts));
    }
    head.push_str(&format!(" in {:.1} ms", step.time_ms));
    match (&step.error, &step.value) {
        (Some(error), _) => format!("{head}: {}: {}", error.code, error.message),
        (None, Some(value)) => labelled(&head, value),
        (None, None) => head,
    }
}

/// The first line of a one-verb tool's result.
fn single_status(report: &Report) -> String {
    let Some(step) = report.steps.first() else {
        return report.summary();
    };
    let mut line = step.status.word().to_owned();
    if step.attempts > 1 {
        line.push_str(&format!(" after {} runs", step.attempts));
    }
    line.push_str(&format!(" in {:.1} ms", step.time_ms));
    if let Some(session) = &report.session_id {
        line.push_str(&format!(" · session {session}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn multi_line_strings_keep_their_lines() {
        let page = json!({"tabId": 1, "tree": "- link \"Docs\" [ref_1]\n- button \"Go\" [ref_2]"});
        assert_eq!(
            block(&page),
            "tabId: 1\ntree:\n  - link \"Docs\" [ref_1]\n  - button \"Go\" [ref_2]"
        );
    }

    #[test]
    fn short_values_stay_inline() {
        assert_eq!(labelled("step 1", &json!("hello")), "step 1: hello");
        assert_eq!(
            labelled("step 1", &json!(["a", "b"])),
            "step 1: [\"a\",\"b\"]"
        );
        assert_eq!(labelled("step 1", &json!({"a": 1})), "step 1: {\"a\":1}");
        assert_eq!(block(&json!(null)), "null");
    }

    #[test]
    fn ambiguous_strings_are_quoted() {
        assert_eq!(block(&json!("")), "\"\"");
        assert_eq!(block(&json!("42")), "\"42\"");
        assert_eq!(block(&json!("null")), "\"null\"");
        assert_eq!(block(&json!(" x")), "\" x\"");
        assert_eq!(block(&json!("plain words")), "plain words");
    }

    #[test]
    fn long_compounds_break_into_lines() {
        let long = "x".repeat(120);
        let value = json!({"rows": [{"name": long, "n": 1}, 2]});
        let text = labelled("step 2", &value);
        assert_eq!(
            text,
            format!("step 2:\n  rows:\n    -\n      n: 1\n      name: {long}\n    - 2")
        );
    }

    #[test]
    fn texts_that_repeat_the_value() {
        assert!(repeats_value("Ada", Some(&json!("Ada"))));
        assert!(repeats_value("\"Ada\"", Some(&json!("Ada"))));
        assert!(repeats_value("{\"a\":1}", Some(&json!({"a": 1}))));
        assert!(!repeats_value("[INFO] hi", Some(&json!("hi"))));
        assert!(!repeats_value("x", None));
    }

    #[test]
    fn deep_values_end_in_compact_json() {
        let mut value = json!("x\ny");
        for _ in 0..100 {
            value = json!({ "k": value });
        }
        let text = block(&value);
        assert!(text.lines().count() <= 20, "{text}");
        assert!(text.contains("\"k\""));
    }
}
