//! Robot Framework's own `output.xml` for a batch: one suite, one test for the
//! batch, one keyword per step, in the format RF 7 writes (schema version 5),
//! so `rebot` makes RF's `log.html` and `report.html` from it.
//!
//! Steps of the rf plugin's `run_keyword` are the keywords they ran, with
//! their arguments; a step of another plugin is a keyword named
//! `plugin.verb` whose one argument is its input as JSON. Times are the
//! report's: the batch ended when the report was made, and its steps ran one
//! after another.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::report::{BatchStatus, Report, StepStatus};

/// The output.xml of `report`, the run of the generic batch `request`, made
/// at `now`.
pub fn output_xml(request: &Value, report: &Report, now: SystemTime) -> String {
    let asked = request
        .get("steps")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let batch_time = Duration::from_secs_f64(report.time_ms.max(0.0) / 1e3);
    let started = now.checked_sub(batch_time).unwrap_or(now);
    let suite = format!("Batch {}", report.batch_id);
    let mut out = String::with_capacity(1024 + report.steps.len() * 512);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<robot generator=\"stephost {}\" generated=\"{}\" rpa=\"false\" schemaversion=\"5\">",
        env!("CARGO_PKG_VERSION"),
        timestamp(now)
    );
    let _ = writeln!(out, "<suite id=\"s1\" name=\"{}\">", escape(&suite));
    let _ = writeln!(
        out,
        "<test id=\"s1-t1\" name=\"{}\">",
        escape(&report.batch_id)
    );
    let mut clock = started;
    for step in &report.steps {
        let spec = asked.get(step.index);
        // Arguments as written, as RF's log shows them (`${who}`, not its value).
        let input = spec.and_then(|s| s.get("input")).or(step.input.as_ref());
        if step.plugin == "rf" && step.verb == "test" {
            // The rf plugin's end-of-test bookkeeping, not a keyword.
            continue;
        }
        let (name, args) = keyword(&step.plugin, &step.verb, input);
        // RF's own assignment (`assign`), else the host's `assign_to`, as RF
        // would write the variable.
        let assign = input
            .and_then(|i| i.get("assign"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| {
                spec.and_then(|s| s.get("assign_to"))
                    .and_then(Value::as_str)
                    .map(|name| format!("${{{name}}}"))
            });
        let _ = writeln!(out, "<kw name=\"{}\">", escape(&name));
        if let Some(assign) = &assign {
            let _ = writeln!(out, "<var>{}</var>", escape(assign));
        }
        for arg in &args {
            let _ = writeln!(out, "<arg>{}</arg>", escape(arg));
        }
        if let Some(label) = &step.label {
            let _ = writeln!(out, "<doc>{}</doc>", escape(label));
        }
        for line in &step.logs {
            let _ = writeln!(
                out,
                "<msg time=\"{}\" level=\"{}\">{}</msg>",
                timestamp(clock),
                level(line.level),
                escape(&line.message)
            );
        }
        if let (Some(value), Some(assign)) = (&step.value, &assign) {
            let _ = writeln!(
                out,
                "<msg time=\"{}\" level=\"INFO\">{} = {}</msg>",
                timestamp(clock),
                escape(assign),
                escape(&shown(value))
            );
        }
        let elapsed = Duration::from_secs_f64(step.time_ms.max(0.0) / 1e3);
        let (status, message) = match step.status {
            StepStatus::Passed => ("PASS", String::new()),
            _ => (
                "FAIL",
                step.error
                    .as_ref()
                    .map(|e| e.message.clone())
                    .unwrap_or_default(),
            ),
        };
        status_line(&mut out, status, clock, elapsed, &message);
        out.push_str("</kw>\n");
        clock += elapsed;
    }
    // Steps that never started, as RF lists keywords after a failure.
    for (index, spec) in asked.iter().enumerate() {
        if report.steps.iter().any(|s| s.index == index) {
            continue;
        }
        let plugin = spec.get("plugin").and_then(Value::as_str).unwrap_or("");
        let verb = spec.get("verb").and_then(Value::as_str).unwrap_or("");
        if plugin == "rf" && verb == "test" {
            continue;
        }
        let (name, args) = keyword(plugin, verb, spec.get("input"));
        let _ = writeln!(out, "<kw name=\"{}\">", escape(&name));
        for arg in &args {
            let _ = writeln!(out, "<arg>{}</arg>", escape(arg));
        }
        status_line(&mut out, "NOT RUN", clock, Duration::ZERO, "");
        out.push_str("</kw>\n");
    }
    let (status, message) = match report.status {
        BatchStatus::Passed => ("PASS", String::new()),
        _ => ("FAIL", batch_message(report)),
    };
    status_line(&mut out, status, started, batch_time, &message);
    out.push_str("</test>\n");
    status_line(&mut out, status, started, batch_time, "");
    out.push_str("</suite>\n");
    let (pass, fail) = if status == "PASS" { (1, 0) } else { (0, 1) };
    let _ = write!(
        out,
        "<statistics>\n<total>\n<stat pass=\"{pass}\" fail=\"{fail}\" skip=\"0\">All Tests</stat>\n</total>\n<tag>\n</tag>\n<suite>\n<stat name=\"{name}\" id=\"s1\" pass=\"{pass}\" fail=\"{fail}\" skip=\"0\">{name}</stat>\n</suite>\n</statistics>\n<errors>\n</errors>\n</robot>\n",
        name = escape(&suite)
    );
    out
}

/// A step's keyword name and arguments.
fn keyword(plugin: &str, verb: &str, input: Option<&Value>) -> (String, Vec<String>) {
    if plugin == "rf" && verb == "run_keyword" {
        let name = input
            .and_then(|i| i.get("keyword"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let args = input
            .and_then(|i| i.get("args"))
            .and_then(Value::as_array)
            .map(|args| args.iter().map(shown).collect())
            .unwrap_or_default();
        return (name, args);
    }
    let args = match input {
        Some(input) if input.as_object().is_some_and(|o| !o.is_empty()) => vec![input.to_string()],
        _ => Vec::new(),
    };
    (format!("{plugin}.{verb}"), args)
}

fn batch_message(report: &Report) -> String {
    if let Some(step) = report.first_failure()
        && let Some(error) = &step.error
    {
        return error.message.clone();
    }
    report.summary()
}

fn status_line(
    out: &mut String,
    status: &str,
    start: SystemTime,
    elapsed: Duration,
    message: &str,
) {
    let _ = write!(
        out,
        "<status status=\"{status}\" start=\"{}\" elapsed=\"{:.6}\"",
        timestamp(start),
        elapsed.as_secs_f64()
    );
    if message.is_empty() {
        out.push_str("/>\n");
    } else {
        let _ = writeln!(out, ">{}</status>", escape(message));
    }
}

/// RF's log levels; the host's `warn` is RF's `WARN`.
fn level(host: &str) -> &'static str {
    match host.to_ascii_lowercase().as_str() {
        "trace" => "TRACE",
        "debug" => "DEBUG",
        "warn" | "warning" => "WARN",
        "error" => "ERROR",
        _ => "INFO",
    }
}

/// A value as RF shows it: text as itself, anything else as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// XML text and attribute escaping; characters XML 1.0 cannot hold are
/// dropped, as RF's own writer does.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// `2026-12-07T08:00:00.123456` (UTC), RF's timestamp form.
fn timestamp(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (year, month, day) = civil(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_micros()
    )
}

/// Days since 1970-01-01 as (year, month, day), after H. Hinnant's
/// `civil_from_days`.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rf_shaped_utc() {
        let at = UNIX_EPOCH + Duration::from_micros(1_796_630_400_123_456);
        assert_eq!(timestamp(at), "2026-12-07T08:00:00.123456");
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000000");
        assert_eq!(civil(11_016), (2000, 2, 29));
    }

    #[test]
    fn text_is_escaped_and_control_characters_dropped() {
        assert_eq!(escape("a<b & \"c\"\u{1}\n"), "a&lt;b &amp; &quot;c&quot;\n");
    }
}
