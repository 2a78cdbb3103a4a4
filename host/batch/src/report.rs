//! Report: the one answer a batch gets.

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use crate::plan::Problem;
use stephost_contract::LogLine;

/// How the batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchStatus {
    /// Every step passed.
    Passed,
    /// A step failed.
    Failed,
    /// A step or the batch ran out of time.
    TimedOut,
    /// The client cancelled the batch.
    Cancelled,
    /// The batch was rejected before anything ran.
    Invalid,
    /// A limit (busy, rate) refused the batch before anything ran.
    Rejected,
    /// A dry run: valid, checked, and not run; the plan is in the report.
    Planned,
}

/// How one step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// It returned a value.
    Passed,
    /// It failed.
    Failed,
    /// It ran out of time.
    TimedOut,
    /// The client cancelled it.
    Cancelled,
}

impl StepStatus {
    /// The status as a word in a sentence (`timed out`).
    pub fn word(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::TimedOut => "timed out",
            Self::Cancelled => "cancelled",
        }
    }
}

/// A failed step's error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepError {
    /// Machine-readable code (`not-found`, `timeout`, `trap`, ...).
    pub code: stephost_contract::FailureCode,
    /// What happened.
    pub message: String,
    /// False when the action provably never reached the outside world.
    pub input_fired: bool,
    /// Structured details from the plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// A text or image a step produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentItem {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// `image/png`, ...
        mime_type: String,
        /// Base64 of the image bytes.
        data: String,
        /// Which step made it, e.g. `step 3: screenshot`.
        label: String,
    },
}

impl ContentItem {
    /// An image item from raw bytes.
    pub fn image(mime_type: String, bytes: &[u8], label: String) -> Self {
        Self::Image {
            mime_type,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            label,
        }
    }
}

/// One executed step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepReport {
    /// 0-based position in the batch.
    pub index: usize,
    /// Caller's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Plugin name.
    pub plugin: String,
    /// Verb name.
    pub verb: String,
    /// How it ended.
    pub status: StepStatus,
    /// Runs taken (1 unless retried).
    pub attempts: u32,
    /// Wall time of all runs, in ms.
    pub time_ms: f64,
    /// The input after references were resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// The result value, when it passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The error, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<StepError>,
    /// Texts and images.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ContentItem>,
    /// What the plugin logged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<LogLine>,
    /// Recovery rounds between runs, when the step's retry asked to recover.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recovery: Vec<crate::recover::Round>,
    /// Things the caller should know: retries, instance resets, dropped logs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The report of a whole batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// How the batch ended.
    pub status: BatchStatus,
    /// Id of this batch run.
    pub batch_id: String,
    /// The session it ran in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Steps in the batch.
    pub steps_total: usize,
    /// Steps that ran (passed, failed or timed out).
    pub steps_executed: usize,
    /// Steps that never started.
    pub never_started: usize,
    /// Wall time, in ms.
    pub time_ms: f64,
    /// Executed steps, in order.
    pub steps: Vec<StepReport>,
    /// Validation problems, for `invalid`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Problem>,
    /// Why a limit refused the batch, for `rejected`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<StepError>,
    /// Batch-level remarks (why steps never started).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The plan, for a dry run (`planned`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::dry_run::PlanView>,
}

impl Report {
    /// The report of a batch rejected before anything ran.
    pub fn invalid(
        batch_id: String,
        session_id: Option<String>,
        steps_total: usize,
        errors: Vec<Problem>,
    ) -> Self {
        let errors = listed(errors);
        Self {
            status: BatchStatus::Invalid,
            batch_id,
            session_id,
            steps_total,
            steps_executed: 0,
            never_started: steps_total,
            time_ms: 0.0,
            steps: Vec::new(),
            errors,
            error: None,
            notes: Vec::new(),
            plan: None,
        }
    }

    /// The report of a dry run: `plan` instead of steps, nothing run.
    pub fn planned(
        batch_id: String,
        session_id: Option<String>,
        plan: crate::dry_run::PlanView,
    ) -> Self {
        let steps_total = plan.steps.len();
        Self {
            status: BatchStatus::Planned,
            notes: vec!["dry run: the batch is valid and was checked; no step ran".to_owned()],
            plan: Some(plan),
            ..Self::invalid(batch_id, session_id, steps_total, Vec::new())
        }
    }

    /// The report of a batch a limit refused before anything ran.
    pub fn rejected(
        batch_id: String,
        session_id: Option<String>,
        steps_total: usize,
        error: StepError,
    ) -> Self {
        Self {
            status: BatchStatus::Rejected,
            error: Some(error),
            ..Self::invalid(batch_id, session_id, steps_total, Vec::new())
        }
    }

    /// The first failed or timed-out step.
    pub fn first_failure(&self) -> Option<&StepReport> {
        self.steps.iter().find(|s| s.status != StepStatus::Passed)
    }

    /// A one-line summary for people.
    pub fn summary(&self) -> String {
        let passed = self
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Passed)
            .count();
        match self.status {
            BatchStatus::Rejected => format!(
                "rejected: {}",
                self.error
                    .as_ref()
                    .map(|e| e.message.as_str())
                    .unwrap_or("refused by a limit")
            ),
            BatchStatus::Planned => format!(
                "planned: {} step(s), valid and checked; nothing ran (dry run)",
                self.plan.as_ref().map_or(0, |p| p.steps.len())
            ),
            BatchStatus::Invalid => format!(
                "invalid batch: {} problem(s); nothing ran. First: {}",
                self.errors.len(),
                self.errors
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            ),
            _ => {
                let mut text = format!(
                    "{}: {passed}/{} steps passed, {} never started, {:.1} ms",
                    match self.status {
                        BatchStatus::Passed => "passed",
                        BatchStatus::Failed => "failed",
                        BatchStatus::TimedOut => "timed out",
                        BatchStatus::Cancelled => "cancelled",
                        BatchStatus::Invalid => "invalid",
                        BatchStatus::Rejected => "rejected",
                        BatchStatus::Planned => "planned",
                    },
                    self.steps_total,
                    self.never_started,
                    self.time_ms
                );
                if let Some(step) = self.first_failure()
                    && let Some(error) = &step.error
                {
                    text.push_str(&format!(
                        "; step {} ({}.{}) {}: {}",
                        step.index + 1,
                        step.plugin,
                        step.verb,
                        error.code,
                        error.message
                    ));
                }
                text
            }
        }
    }
}
/// Most problems an invalid report lists: a request of 4 MiB can hold a
/// hundred thousand bad references, and an answer listing each would be
/// several times the request; the first ones say what is wrong.
pub(crate) const MAX_LISTED_PROBLEMS: usize = 50;
/// Longest field or message of a listed problem, in bytes: a message may
/// quote what the caller sent (a 4 MiB verb name), and the caller has it.
pub(crate) const MAX_PROBLEM_TEXT: usize = 1_000;

/// `errors` as an invalid report lists them: at most
/// [`MAX_LISTED_PROBLEMS`], each cut to [`MAX_PROBLEM_TEXT`], and a last
/// one saying how many more there were.
fn listed(mut errors: Vec<Problem>) -> Vec<Problem> {
    let more = errors.len().saturating_sub(MAX_LISTED_PROBLEMS);
    errors.truncate(MAX_LISTED_PROBLEMS);
    for problem in &mut errors {
        clip(&mut problem.field, MAX_PROBLEM_TEXT);
        clip(&mut problem.message, MAX_PROBLEM_TEXT);
        if let Some(label) = &mut problem.label {
            clip(label, MAX_PROBLEM_TEXT);
        }
    }
    if more > 0 {
        errors.push(Problem {
            step: None,
            label: None,
            field: "(batch)".into(),
            message: format!(
                "{more} more problems not listed (the first {MAX_LISTED_PROBLEMS} are); fix these and check again"
            ),
        });
    }
    errors
}

/// Cuts `text` to at most `max` bytes at a character boundary, saying so.
pub(crate) fn clip(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let all = text.len();
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!("... ({all} bytes in all)"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_report_lists_a_bounded_number_of_short_problems() {
        let problems: Vec<Problem> = (0..100_000)
            .map(|i| Problem {
                step: Some(i),
                label: None,
                field: format!("steps[{i}].verb"),
                message: format!("no verb `{}`", "v".repeat(4 * 1024 * 1024 / 100_000)),
            })
            .chain(std::iter::once(Problem {
                step: None,
                label: None,
                field: "verb".into(),
                message: "é".repeat(3_000),
            }))
            .collect();
        let report = Report::invalid("b".into(), None, 100_001, problems);
        assert_eq!(report.errors.len(), MAX_LISTED_PROBLEMS + 1);
        assert!(
            report.errors[MAX_LISTED_PROBLEMS]
                .message
                .starts_with("99951 more problems not listed"),
            "{}",
            report.errors[MAX_LISTED_PROBLEMS].message
        );
        let mut long = "é".repeat(3_000);
        clip(&mut long, MAX_PROBLEM_TEXT);
        assert!(long.len() < MAX_PROBLEM_TEXT + 40, "{}", long.len());
        assert!(long.ends_with("(6000 bytes in all)"), "{long}");
    }
}
