//! A trace people can look at: one self-contained HTML page per batch (no
//! network, no scripts) with a timeline of the steps drawn to scale and each
//! step's input, value, logs, error, runs, recovery rounds, budget and
//! images where they were taken.
//!
//! The page is rendered twice: once into a counter, to learn its exact size
//! without holding it, then (when it is within the cap) once into a buffer
//! of exactly that size. Values are serialized and HTML-escaped straight
//! into that buffer, never into intermediate strings, so building a page
//! holds the report and the page and nothing else of their size. A page
//! past the cap is not built at all: HTML escaping can make a page several
//! times larger than its report (a `"` in a value is `\&quot;` on the page).

use std::fmt::{self, Display, Write as _};

use serde::Serialize;
use serde_json::Value;

use crate::limits::Limits;
use crate::report::{BatchStatus, ContentItem, Report, StepReport, StepStatus};

/// The largest trace page built, in bytes: what one tenant's trace store
/// holds in all. A larger page would not be kept, so it is not built.
pub const MAX_PAGE_BYTES: usize = 64 * 1024 * 1024;

/// A trace page that was not built: it would have been larger than allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the trace page would be more than the {max} bytes a trace page may be")]
pub struct TooLarge {
    /// The cap it passed.
    pub max: usize,
}

/// The trace of `report`, the run of the generic batch `request` under
/// `limits`. A page past [`MAX_PAGE_BYTES`] is not built; a short page
/// saying so, with the batch's summary, stands in for it.
pub fn trace_html(request: &Value, report: &Report, limits: &Limits) -> String {
    trace_page(request, report, limits, MAX_PAGE_BYTES)
        .unwrap_or_else(|too_large| not_built(report, too_large))
}

/// The trace of `report` when its page is at most `max_bytes`, built in one
/// buffer of its exact size.
///
/// # Errors
/// [`TooLarge`] when the page is past `max_bytes`; nothing of the page was
/// built, and counting stopped there.
pub fn trace_page(
    request: &Value,
    report: &Report,
    limits: &Limits,
    max_bytes: usize,
) -> Result<String, TooLarge> {
    let mut counted = Count {
        bytes: 0,
        max: max_bytes,
    };
    if render(&mut counted, request, report, limits).is_err() {
        return Err(TooLarge { max: max_bytes });
    }
    let mut page = String::with_capacity(counted.bytes);
    // A String takes every write, and no part of the page fails on its own.
    let _ = render(&mut page, request, report, limits);
    debug_assert_eq!(
        page.len(),
        counted.bytes,
        "both passes render the same page"
    );
    Ok(page)
}

/// The page that stands in for a trace too large to build.
fn not_built(report: &Report, too_large: TooLarge) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>stephost trace {id}</title>\n<style>{STYLE}</style></head>\n<body>\n<header><h1>Batch <code>{id}</code></h1><p class=\"summary status-{}\" id=\"summary\">{}</p></header>\n<main><p class=\"error\" id=\"not-built\">This trace was not built: its page would be more than the {} bytes a trace page may be. Run the batch again with smaller results, or without <code>trace</code>.</p></main>\n</body></html>\n",
        batch_class(report.status),
        Esc(&report.summary()),
        too_large.max,
        id = Esc(&report.batch_id),
    );
    out
}

/// Counts what is written, keeping none of it; fails once past `max`, so
/// a page far too large costs no more to refuse than one just too large.
struct Count {
    bytes: usize,
    max: usize,
}

impl fmt::Write for Count {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.bytes = self.bytes.saturating_add(s.len());
        if self.bytes > self.max {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

fn render(
    out: &mut impl fmt::Write,
    request: &Value,
    report: &Report,
    limits: &Limits,
) -> fmt::Result {
    let asked = request
        .get("steps")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let total_ms = report.time_ms.max(0.001);
    let batch_budget = request
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .unwrap_or(limits.batch_timeout_ms);
    write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>stephost trace {}</title>\n<style>{STYLE}</style></head>\n<body>\n",
        Esc(&report.batch_id)
    )?;
    writeln!(
        out,
        "<header><h1>Batch <code>{}</code></h1><p class=\"summary status-{}\" id=\"summary\">{}</p>",
        Esc(&report.batch_id),
        batch_class(report.status),
        Esc(&report.summary())
    )?;
    write!(
        out,
        "<p class=\"meta\">{} of {} steps ran in {:.1} ms (batch budget {batch_budget} ms)",
        report.steps_executed, report.steps_total, report.time_ms,
    )?;
    if let Some(session) = &report.session_id {
        write!(out, ", session <code>{}</code>", Esc(session))?;
    }
    out.write_str("</p></header>\n")?;
    timeline(out, report, total_ms)?;
    if !report.errors.is_empty() {
        out.write_str("<section class=\"problems\"><h2>Refused before anything ran</h2><ul>\n")?;
        for problem in &report.errors {
            writeln!(out, "<li>{}</li>", Esc(&problem.to_string()))?;
        }
        out.write_str("</ul></section>\n")?;
    }
    out.write_str("<main>\n")?;
    for step in &report.steps {
        step_section(out, step, asked.get(step.index), limits)?;
    }
    for (index, spec) in asked.iter().enumerate() {
        if report.steps.iter().all(|s| s.index != index) {
            let part = |key: &str| spec.get(key).and_then(Value::as_str).unwrap_or("?");
            writeln!(
                out,
                "<section class=\"step status-never\" id=\"step-{n}\"><h2>{n}. {}.{} <span class=\"badge\">never started</span></h2></section>",
                Esc(part("plugin")),
                Esc(part("verb")),
                n = index + 1
            )?;
        }
    }
    out.write_str("</main>\n")?;
    if !report.notes.is_empty() {
        out.write_str("<footer><h2>Notes</h2><ul>\n")?;
        for note in &report.notes {
            writeln!(out, "<li>{}</li>", Esc(note))?;
        }
        out.write_str("</ul></footer>\n")?;
    }
    out.write_str("</body></html>\n")
}

/// One bar per step on a shared time axis: left edge where the step started,
/// width its share of the batch's wall time.
fn timeline(out: &mut impl fmt::Write, report: &Report, total_ms: f64) -> fmt::Result {
    out.write_str("<section id=\"timeline\"><h2>Timeline</h2>\n")?;
    let mut start = 0.0_f64;
    for step in &report.steps {
        let left = (start / total_ms * 100.0).clamp(0.0, 99.7);
        // min/max, not clamp: clamp panics when rounding puts its bounds the
        // wrong way round, and a trace must never take the host down.
        let width = (step.time_ms / total_ms * 100.0).min(100.0 - left).max(0.3);
        writeln!(
            out,
            "<div class=\"row\"><span class=\"name\"><a href=\"#step-{n}\">{n}. {}</a></span><span class=\"lane\"><span class=\"bar status-{}\" style=\"left:{left:.3}%;width:{width:.3}%\" title=\"{:.3} ms\" data-ms=\"{:.3}\"></span></span><span class=\"ms\">{:.1} ms</span></div>",
            DisplayName(step),
            step_class(step.status),
            step.time_ms,
            step.time_ms,
            step.time_ms,
            n = step.index + 1
        )?;
        start += step.time_ms;
    }
    out.write_str("</section>\n")
}

fn step_section(
    out: &mut impl fmt::Write,
    step: &StepReport,
    spec: Option<&Value>,
    limits: &Limits,
) -> fmt::Result {
    let n = step.index + 1;
    let class = step_class(step.status);
    writeln!(
        out,
        "<section class=\"step status-{class}\" id=\"step-{n}\"><h2>{n}. {} <span class=\"badge\">{}</span> <span class=\"ms\">{:.1} ms</span></h2>",
        DisplayName(step),
        Spaced(class),
        step.time_ms
    )?;
    let timeout = spec
        .and_then(|s| s.get("timeout_ms"))
        .and_then(Value::as_u64)
        .unwrap_or(limits.step_timeout_ms);
    let share = step.time_ms / (timeout.max(1) as f64) * 100.0;
    write!(
        out,
        "<p class=\"budget\">budget: {timeout} ms, {} fuel, {} MiB; used {:.1} ms ({share:.1}% of the time)",
        limits.fuel_per_step, limits.memory_mib, step.time_ms,
    )?;
    if step.attempts > 1 {
        write!(out, " over {} runs", step.attempts)?;
    }
    out.write_str("</p>\n")?;
    let input = step
        .input
        .as_ref()
        .or_else(|| spec.and_then(|s| s.get("input")));
    if let Some(input) = input {
        block(out, "input", "Input", input)?;
    }
    if let Some(value) = &step.value {
        block(out, "value", "Value", value)?;
    }
    if let Some(error) = &step.error {
        writeln!(
            out,
            "<div class=\"error\"><h3>Error <code>{}</code></h3><p>{}</p>{}</div>",
            Esc(error.code.as_str()),
            Esc(&error.message),
            if error.input_fired {
                ""
            } else {
                "<p class=\"meta\">nothing reached the outside world</p>"
            }
        )?;
        if let Some(details) = &error.details {
            block(out, "details", "Details", details)?;
        }
    }
    for item in &step.content {
        match item {
            ContentItem::Text { text } => {
                writeln!(out, "<pre class=\"text\">{}</pre>", Esc(text))?;
            }
            ContentItem::Image {
                mime_type,
                data,
                label,
            } => {
                writeln!(
                    out,
                    "<figure><img alt=\"{}\" src=\"data:{};base64,{}\"><figcaption>{}</figcaption></figure>",
                    Esc(label),
                    Esc(mime_type),
                    Esc(data),
                    Esc(label)
                )?;
            }
        }
    }
    if !step.recovery.is_empty() {
        block(out, "recovery", "Recovery rounds", &step.recovery)?;
    }
    if !step.logs.is_empty() {
        out.write_str("<details open class=\"logs\"><summary>Logs</summary><ul>\n")?;
        for line in &step.logs {
            writeln!(
                out,
                "<li><span class=\"level\">{}</span> {}</li>",
                Esc(line.level),
                Esc(&line.message)
            )?;
        }
        out.write_str("</ul></details>\n")?;
    }
    if !step.notes.is_empty() {
        out.write_str("<ul class=\"notes\">\n")?;
        for note in &step.notes {
            writeln!(out, "<li>{}</li>", Esc(note))?;
        }
        out.write_str("</ul>\n")?;
    }
    out.write_str("</section>\n")
}

fn block(
    out: &mut impl fmt::Write,
    class: &str,
    title: &str,
    value: &impl Serialize,
) -> fmt::Result {
    writeln!(
        out,
        "<details open class=\"{class}\"><summary>{title}</summary><pre>{}</pre></details>",
        Json(value)
    )
}

/// A step's label and verb, escaped as it is written.
struct DisplayName<'a>(&'a StepReport);

impl Display for DisplayName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let step = self.0;
        match &step.label {
            Some(label) => write!(
                f,
                "{} ({}.{})",
                Esc(label),
                Esc(&step.plugin),
                Esc(&step.verb)
            ),
            None => write!(f, "{}.{}", Esc(&step.plugin), Esc(&step.verb)),
        }
    }
}

/// A status class as words: `timed_out` reads `timed out`.
struct Spaced<'a>(&'a str);

impl Display for Spaced<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, word) in self.0.split('_').enumerate() {
            if i > 0 {
                f.write_char(' ')?;
            }
            f.write_str(word)?;
        }
        Ok(())
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

/// Text as HTML text, escaped as it is written (no copy of the text).
struct Esc<'a>(&'a str);

impl Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        escape_into(f, self.0)
    }
}

fn escape_into(out: &mut impl fmt::Write, text: &str) -> fmt::Result {
    let mut start = 0;
    for (i, byte) in text.bytes().enumerate() {
        let entity = match byte {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        // `i` is at an ASCII byte, so the slice ends on a char boundary.
        if start < i {
            out.write_str(&text[start..i])?;
        }
        out.write_str(entity)?;
        start = i + 1;
    }
    out.write_str(&text[start..])
}

/// A value as pretty JSON, HTML-escaped, serialized as it is written.
struct Json<'a, T>(&'a T);

impl<T: Serialize> Display for Json<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut writer = EscapeWriter {
            out: f,
            pending: Vec::new(),
            failed: false,
        };
        // A value that cannot be serialized shows what was written of it;
        // a sink that fails (a page past its cap) stops the page.
        let _ = serde_json::to_writer_pretty(&mut writer, self.0);
        if writer.failed {
            return Err(fmt::Error);
        }
        if writer.pending.is_empty() {
            Ok(())
        } else {
            writer.out.write_char(char::REPLACEMENT_CHARACTER)
        }
    }
}

/// serde_json's bytes into a formatter, escaped. serde_json writes whole
/// characters, but a character split across two writes is put together
/// rather than trusted not to happen.
struct EscapeWriter<'a, 'b> {
    out: &'a mut fmt::Formatter<'b>,
    /// The start of a character whose end is in the next write.
    pending: Vec<u8>,
    /// Whether the formatter failed.
    failed: bool,
}

impl std::io::Write for EscapeWriter<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.escape(buf);
        self.failed |= written.is_err();
        written
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl EscapeWriter<'_, '_> {
    fn escape(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let failed = |_| std::io::Error::other("formatter failed");
        let mut rest = buf;
        while !self.pending.is_empty() && !rest.is_empty() {
            self.pending.push(rest[0]);
            rest = &rest[1..];
            match std::str::from_utf8(&self.pending) {
                Ok(text) => escape_into(self.out, text).map_err(failed)?,
                Err(e) if e.error_len().is_none() => continue,
                Err(_) => self
                    .out
                    .write_char(char::REPLACEMENT_CHARACTER)
                    .map_err(failed)?,
            }
            self.pending.clear();
        }
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    escape_into(self.out, text).map_err(failed)?;
                    break;
                }
                Err(e) => {
                    let (good, after) = rest.split_at(e.valid_up_to());
                    let text = std::str::from_utf8(good).unwrap_or_default();
                    escape_into(self.out, text).map_err(failed)?;
                    match e.error_len() {
                        None => {
                            self.pending.extend_from_slice(after);
                            break;
                        }
                        Some(bad) => {
                            self.out
                                .write_char(char::REPLACEMENT_CHARACTER)
                                .map_err(failed)?;
                            rest = &after[bad..];
                        }
                    }
                }
            }
        }
        Ok(buf.len())
    }
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
    use crate::report::StepError;
    use serde_json::json;

    fn step(index: usize, time_ms: f64) -> StepReport {
        StepReport {
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
        }
    }

    /// A report whose values are as unkind to HTML as text can be.
    fn hostile(value: &str) -> (Value, Report) {
        let mut first = step(0, 2.0);
        first.label = Some("<b>\"label\"</b>".into());
        first.input = Some(json!({"value": value}));
        first.value = Some(json!({"said": value, "n": 1.5}));
        first.content = vec![ContentItem::Text {
            text: value.to_owned(),
        }];
        let mut second = step(1, 1.0);
        second.status = StepStatus::Failed;
        second.error = Some(StepError {
            code: stephost_contract::FailureCode::from_text("not-found"),
            message: format!("no {value}"),
            input_fired: false,
            details: Some(json!({"why": value})),
        });
        let report = Report {
            steps: vec![first, second],
            time_ms: 3.0,
            notes: vec![format!("note {value}")],
            ..Report::invalid("b-1".into(), Some("s'1".into()), 3, Vec::new())
        };
        let request = json!({"steps": [{}, {}, {"plugin": "test<kit>", "verb": "echo"}]});
        (request, report)
    }

    fn html_escaped(text: &str) -> String {
        let mut out = String::new();
        let _ = escape_into(&mut out, text);
        out
    }

    #[test]
    fn a_page_is_built_in_one_buffer_of_its_exact_size() {
        let value = "\"quoted\" <tag> & 'single' é ✓ 🦀 \\ \n\t\u{1}";
        let (request, report) = hostile(value);
        let page = trace_page(&request, &report, &Limits::default(), usize::MAX).expect("built");
        assert_eq!(page.len(), page.capacity(), "sized before it was written");
        // Each value is its pretty JSON, escaped: as serde_json and an
        // escaping pass over its text would make it.
        for shown in [
            json!({"value": value}),
            json!({"said": value, "n": 1.5}),
            json!({"why": value}),
        ] {
            let expected = html_escaped(&serde_json::to_string_pretty(&shown).expect("json"));
            assert!(page.contains(&expected), "{expected}\n---\n{page}");
        }
        for text in [
            "&lt;b&gt;&quot;label&quot;&lt;/b&gt; (testkit.echo)",
            "s&#39;1",
            "3. test&lt;kit&gt;.echo <span class=\"badge\">never started</span>",
            "<span class=\"badge\">failed</span>",
        ] {
            assert!(page.contains(text), "{text}\n---\n{page}");
        }
        assert!(!page.contains("<tag>"), "{page}");
        assert_eq!(page.matches("class=\"bar").count(), 2);
    }

    #[test]
    fn a_page_past_the_cap_is_counted_not_built() {
        let (request, report) = hostile(&"\"".repeat(10_000));
        let full = trace_page(&request, &report, &Limits::default(), usize::MAX).expect("built");
        // 10,000 quotes are 20,000 bytes of JSON and 70,000 of HTML, each time
        // the value is shown.
        assert!(full.len() > 4 * 70_000, "{}", full.len());
        let refused = trace_page(&request, &report, &Limits::default(), full.len() - 1)
            .expect_err("past the cap");
        assert_eq!(
            refused,
            TooLarge {
                max: full.len() - 1
            }
        );
        let exact = trace_page(&request, &report, &Limits::default(), full.len()).expect("fits");
        assert_eq!(exact, full);
        let stand_in = not_built(&report, refused);
        assert!(stand_in.len() < 4096, "{stand_in}");
        assert!(
            stand_in.contains(&format!("would be more than the {} bytes", full.len() - 1)),
            "{stand_in}"
        );
        assert!(stand_in.contains("id=\"summary\""), "{stand_in}");
    }

    #[test]
    fn a_character_split_across_writes_is_put_together() {
        struct Pieces;
        impl Display for Pieces {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                use std::io::Write as _;
                let mut writer = EscapeWriter {
                    out: f,
                    pending: Vec::new(),
                    failed: false,
                };
                let bytes = "a🦀<é".as_bytes();
                for piece in [&bytes[..2], &bytes[2..4], &bytes[4..6], &bytes[6..]] {
                    let _ = writer.write(piece);
                }
                Ok(())
            }
        }
        assert_eq!(Pieces.to_string(), "a🦀&lt;é");
    }

    #[test]
    fn bars_stay_on_the_axis_whatever_the_times() {
        let mut out = String::new();
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
        timeline(&mut out, &report, 100.0).expect("written");
        assert_eq!(out.matches("class=\"bar").count(), 4, "{out}");
    }

    #[test]
    fn html_text_is_escaped() {
        assert_eq!(
            Esc("<b a=\"1\">&'").to_string(),
            "&lt;b a=&quot;1&quot;&gt;&amp;&#39;"
        );
    }
}
