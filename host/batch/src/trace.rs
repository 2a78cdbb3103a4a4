//! A trace people can look at: one self-contained HTML page per batch (no
//! network, no scripts) with a timeline of the steps drawn to scale and each
//! step's input, value, logs, error, runs, recovery rounds, budget and
//! images where they were taken.

use std::fmt::Write as _;

use serde_json::Value;

use crate::limits::Limits;
use crate::report::{BatchStatus, ContentItem, Report, StepReport, StepStatus};

/// The trace of `report`, the run of the generic batch `request` under
/// `limits`.
pub fn trace_html(request: &Value, report: &Report, limits: &Limits) -> String {
    let asked = request
        .get("steps")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let total_ms = report.time_ms.max(0.001);
    let batch_budget = request
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .unwrap_or(limits.batch_timeout_ms);
    let mut out = String::with_capacity(8192 + report.steps.len() * 2048);
    let title = format!("stephost trace {}", report.batch_id);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>{STYLE}</style></head>\n<body>\n",
        esc(&title)
    );
    let _ = writeln!(
        out,
        "<header><h1>Batch <code>{}</code></h1><p class=\"summary status-{}\" id=\"summary\">{}</p>",
        esc(&report.batch_id),
        batch_class(report.status),
        esc(&report.summary())
    );
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} of {} steps ran in {:.1} ms (batch budget {batch_budget} ms){}</p></header>",
        report.steps_executed,
        report.steps_total,
        report.time_ms,
        report
            .session_id
            .as_ref()
            .map(|s| format!(", session <code>{}</code>", esc(s)))
            .unwrap_or_default()
    );
    timeline(&mut out, report, total_ms);
    if !report.errors.is_empty() {
        out.push_str("<section class=\"problems\"><h2>Refused before anything ran</h2><ul>\n");
        for problem in &report.errors {
            let _ = writeln!(out, "<li>{}</li>", esc(&problem.to_string()));
        }
        out.push_str("</ul></section>\n");
    }
    out.push_str("<main>\n");
    for step in &report.steps {
        step_section(&mut out, step, asked.get(step.index), limits);
    }
    for (index, spec) in asked.iter().enumerate() {
        if report.steps.iter().all(|s| s.index != index) {
            let name = format!(
                "{}.{}",
                spec.get("plugin").and_then(Value::as_str).unwrap_or("?"),
                spec.get("verb").and_then(Value::as_str).unwrap_or("?")
            );
            let _ = writeln!(
                out,
                "<section class=\"step status-never\" id=\"step-{n}\"><h2>{n}. {} <span class=\"badge\">never started</span></h2></section>",
                esc(&name),
                n = index + 1
            );
        }
    }
    out.push_str("</main>\n");
    if !report.notes.is_empty() {
        out.push_str("<footer><h2>Notes</h2><ul>\n");
        for note in &report.notes {
            let _ = writeln!(out, "<li>{}</li>", esc(note));
        }
        out.push_str("</ul></footer>\n");
    }
    out.push_str("</body></html>\n");
    out
}

/// One bar per step on a shared time axis: left edge where the step started,
/// width its share of the batch's wall time.
fn timeline(out: &mut String, report: &Report, total_ms: f64) {
    out.push_str("<section id=\"timeline\"><h2>Timeline</h2>\n");
    let mut start = 0.0_f64;
    for step in &report.steps {
        let left = (start / total_ms * 100.0).clamp(0.0, 99.7);
        // min/max, not clamp: clamp panics when rounding puts its bounds the
        // wrong way round, and a trace must never take the host down.
        let width = (step.time_ms / total_ms * 100.0).min(100.0 - left).max(0.3);
        let _ = writeln!(
            out,
            "<div class=\"row\"><span class=\"name\"><a href=\"#step-{n}\">{n}. {}</a></span><span class=\"lane\"><span class=\"bar status-{}\" style=\"left:{left:.3}%;width:{width:.3}%\" title=\"{:.3} ms\" data-ms=\"{:.3}\"></span></span><span class=\"ms\">{:.1} ms</span></div>",
            esc(&display_name(step)),
            step_class(step.status),
            step.time_ms,
            step.time_ms,
            step.time_ms,
            n = step.index + 1
        );
        start += step.time_ms;
    }
    out.push_str("</section>\n");
}

fn step_section(out: &mut String, step: &StepReport, spec: Option<&Value>, limits: &Limits) {
    let n = step.index + 1;
    let _ = writeln!(
        out,
        "<section class=\"step status-{}\" id=\"step-{n}\"><h2>{n}. {} <span class=\"badge\">{}</span> <span class=\"ms\">{:.1} ms</span></h2>",
        step_class(step.status),
        esc(&display_name(step)),
        step_class(step.status).replace('_', " "),
        step.time_ms
    );
    let timeout = spec
        .and_then(|s| s.get("timeout_ms"))
        .and_then(Value::as_u64)
        .unwrap_or(limits.step_timeout_ms);
    let share = step.time_ms / (timeout.max(1) as f64) * 100.0;
    let _ = writeln!(
        out,
        "<p class=\"budget\">budget: {timeout} ms, {} fuel, {} MiB; used {:.1} ms ({share:.1}% of the time){}</p>",
        limits.fuel_per_step,
        limits.memory_mib,
        step.time_ms,
        if step.attempts > 1 {
            format!(" over {} runs", step.attempts)
        } else {
            String::new()
        }
    );
    let input = step
        .input
        .as_ref()
        .or_else(|| spec.and_then(|s| s.get("input")));
    if let Some(input) = input {
        block(out, "input", "Input", input);
    }
    if let Some(value) = &step.value {
        block(out, "value", "Value", value);
    }
    if let Some(error) = &step.error {
        let _ = writeln!(
            out,
            "<div class=\"error\"><h3>Error <code>{}</code></h3><p>{}</p>{}</div>",
            esc(error.code.as_str()),
            esc(&error.message),
            if error.input_fired {
                ""
            } else {
                "<p class=\"meta\">nothing reached the outside world</p>"
            }
        );
        if let Some(details) = &error.details {
            block(out, "details", "Details", details);
        }
    }
    for item in &step.content {
        match item {
            ContentItem::Text { text } => {
                let _ = writeln!(out, "<pre class=\"text\">{}</pre>", esc(text));
            }
            ContentItem::Image {
                mime_type,
                data,
                label,
            } => {
                let _ = writeln!(
                    out,
                    "<figure><img alt=\"{}\" src=\"data:{};base64,{}\"><figcaption>{}</figcaption></figure>",
                    esc(label),
                    esc(mime_type),
                    esc(data),
                    esc(label)
                );
            }
        }
    }
    if !step.recovery.is_empty() {
        let rounds = serde_json::to_value(&step.recovery).unwrap_or(Value::Null);
        block(out, "recovery", "Recovery rounds", &rounds);
    }
    if !step.logs.is_empty() {
        out.push_str("<details open class=\"logs\"><summary>Logs</summary><ul>\n");
        for line in &step.logs {
            let _ = writeln!(
                out,
                "<li><span class=\"level\">{}</span> {}</li>",
                esc(line.level),
                esc(&line.message)
            );
        }
        out.push_str("</ul></details>\n");
    }
    if !step.notes.is_empty() {
        out.push_str("<ul class=\"notes\">\n");
        for note in &step.notes {
            let _ = writeln!(out, "<li>{}</li>", esc(note));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

fn block(out: &mut String, class: &str, title: &str, value: &Value) {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    let _ = writeln!(
        out,
        "<details open class=\"{class}\"><summary>{title}</summary><pre>{}</pre></details>",
        esc(&text)
    );
}

fn display_name(step: &StepReport) -> String {
    match &step.label {
        Some(label) => format!("{label} ({}.{})", step.plugin, step.verb),
        None => format!("{}.{}", step.plugin, step.verb),
    }
}

fn step_class(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Passed => "passed",
        StepStatus::Failed => "failed",
        StepStatus::TimedOut => "timed_out",
        StepStatus::Cancelled => "cancelled",
    }
}

fn batch_class(status: BatchStatus) -> &'static str {
    match status {
        BatchStatus::Passed => "passed",
        BatchStatus::Failed => "failed",
        BatchStatus::TimedOut => "timed_out",
        BatchStatus::Cancelled => "cancelled",
        BatchStatus::Invalid => "invalid",
        BatchStatus::Rejected => "rejected",
        BatchStatus::Planned => "planned",
    }
}

fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;color:#1d2330}
h1{font-size:1.4em}h2{font-size:1.1em;margin:.2em 0}h3{font-size:1em;margin:.2em 0}
code,pre{font-family:ui-monospace,monospace}pre{background:#f4f5f8;padding:.6em;overflow:auto;max-height:24em;margin:.3em 0}
.summary{font-weight:600}.meta{color:#5b6275}
#timeline .row{display:flex;align-items:center;gap:.6em;margin:2px 0}
#timeline .name{width:16em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
#timeline .lane{position:relative;flex:1;height:14px;background:#eef0f4}
#timeline .bar{position:absolute;top:0;height:14px;border-radius:2px}
#timeline .ms{width:6em;text-align:right;color:#5b6275}
.step{border-left:4px solid #aab;padding:.4em .9em;margin:1em 0;background:#fff}
.badge{font-size:.8em;padding:0 .5em;border-radius:1em;background:#eef0f4;vertical-align:middle}
.status-passed.bar,.bar.status-passed{background:#2f9e44}.step.status-passed{border-color:#2f9e44}
.status-failed.bar,.bar.status-failed{background:#e03131}.step.status-failed{border-color:#e03131}
.bar.status-timed_out{background:#f08c00}.step.status-timed_out{border-color:#f08c00}
.bar.status-cancelled{background:#868e96}.step.status-never{border-color:#ced4da;color:#868e96}
.summary.status-failed,.summary.status-invalid,.summary.status-timed_out{color:#c92a2a}
.summary.status-passed{color:#2b8a3e}
.error{background:#fff5f5;border:1px solid #ffc9c9;padding:.4em .8em;margin:.4em 0}
figure{margin:.5em 0}img{max-width:100%;border:1px solid #dee2e6}
.logs ul,.notes{margin:.2em 0;padding-left:1.2em}.level{font-family:ui-monospace,monospace;color:#5b6275}
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_stay_on_the_axis_whatever_the_times() {
        let mut out = String::new();
        let step = |index, time_ms| StepReport {
            index,
            label: None,
            plugin: "testkit".into(),
            verb: "echo".into(),
            status: StepStatus::Passed,
            attempts: 1,
            time_ms,
            input: None,
            value: None,
            error: None,
            content: Vec::new(),
            logs: Vec::new(),
            recovery: Vec::new(),
            notes: Vec::new(),
        };
        let report = Report {
            steps: vec![
                step(0, 0.0),
                step(1, 100.0),
                step(2, 1e-9),
                step(3, f64::NAN),
            ],
            time_ms: 100.0,
            ..Report::invalid("b".into(), None, 4, Vec::new())
        };
        timeline(&mut out, &report, 100.0);
        assert_eq!(out.matches("class=\"bar").count(), 4, "{out}");
    }

    #[test]
    fn html_text_is_escaped() {
        assert_eq!(esc("<b a=\"1\">&'"), "&lt;b a=&quot;1&quot;&gt;&amp;&#39;");
    }
}
