//! Batch reports from fuzz bytes, for the dialects' `render`.
//!
//! A dialect renders whatever the engine reports, and the engine reports what
//! plugins return, so every string and value here is attacker-shaped: plugin
//! output, error codes and messages, log lines, labels and images.

use arbitrary::{Result, Unstructured};
use stephost_batch::{
    ActionRecord, BatchStatus, ContentItem, Problem, Report, Round, StepError, StepReport,
    StepStatus,
};
use stephost_contract::{FailureCode, LogLine};

use crate::json;

const BATCH_STATUSES: [BatchStatus; 6] = [
    BatchStatus::Passed,
    BatchStatus::Failed,
    BatchStatus::TimedOut,
    BatchStatus::Cancelled,
    BatchStatus::Invalid,
    BatchStatus::Rejected,
];
const STEP_STATUSES: [StepStatus; 4] = [
    StepStatus::Passed,
    StepStatus::Failed,
    StepStatus::TimedOut,
    StepStatus::Cancelled,
];
/// Largest step index a report may carry: the largest `max_steps_per_batch` a
/// config can reasonably set.
const MAX_STEP_INDEX: usize = 1_000_000;
const LEVELS: [&str; 5] = ["trace", "debug", "info", "warn", "error"];
const CODES: [&str; 9] = [
    "busy",
    "not-found",
    "world-moved",
    "invalid-input",
    "timeout",
    "denied",
    "trap",
    "memory-limit",
    "out-of-fuel",
];

/// A report as the engine could produce it, with fuzz-chosen contents.
pub fn report(u: &mut Unstructured<'_>, plugins: &[&str]) -> Result<Report> {
    let steps_len = u.int_in_range(0..=5)?;
    let mut steps = Vec::with_capacity(steps_len);
    for index in 0..steps_len {
        steps.push(step(u, index, plugins)?);
    }
    let steps_total = steps_len + u.int_in_range(0..=3)?;
    let mut errors = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        errors.push(Problem {
            step: if u.arbitrary()? {
                Some(u.int_in_range(0..=steps_total)?)
            } else {
                None
            },
            label: optional_string(u)?,
            field: json::string(u)?,
            message: json::string(u)?,
        });
    }
    // Built from `Report::invalid` and filled in, so fields the engine adds later
    // keep their defaults here instead of breaking the build.
    let mut report = Report::invalid(json::string(u)?, optional_string(u)?, steps_total, errors);
    report.status = *u.choose(&BATCH_STATUSES)?;
    report.steps_executed = steps_len;
    report.never_started = steps_total - steps_len;
    report.time_ms = time(u)?;
    report.steps = steps;
    report.error = if report.status == BatchStatus::Rejected || u.ratio(1, 16)? {
        Some(step_error(u)?)
    } else {
        None
    };
    report.notes = strings(u)?;
    Ok(report)
}

fn step(u: &mut Unstructured<'_>, index: usize, plugins: &[&str]) -> Result<StepReport> {
    let status = *u.choose(&STEP_STATUSES)?;
    let plugin = if plugins.is_empty() || u.ratio(1, 8)? {
        json::string(u)?
    } else {
        (*u.choose(plugins)?).to_owned()
    };
    let error = if status == StepStatus::Passed && !u.ratio(1, 16)? {
        None
    } else {
        Some(step_error(u)?)
    };
    let mut content = Vec::new();
    for _ in 0..u.int_in_range(0..=2)? {
        content.push(if u.arbitrary()? {
            ContentItem::Text {
                text: json::string(u)?,
            }
        } else {
            let bytes: &[u8] = u.arbitrary()?;
            ContentItem::image(json::string(u)?, bytes, json::string(u)?)
        });
    }
    let mut logs = Vec::new();
    for _ in 0..u.int_in_range(0..=2)? {
        logs.push(LogLine {
            level: u.choose(&LEVELS)?,
            message: json::string(u)?,
        });
    }
    Ok(StepReport {
        // The engine numbers executed steps below the batch's step count, which
        // the limits bound; an index near usize::MAX is not a report it makes.
        index: if u.ratio(1, 16)? {
            u.int_in_range(0..=MAX_STEP_INDEX)?
        } else {
            index
        },
        label: optional_string(u)?,
        plugin,
        verb: json::string(u)?,
        status,
        attempts: u.int_in_range(0..=11)?,
        time_ms: time(u)?,
        input: if u.arbitrary()? {
            Some(json::value(u, 3)?)
        } else {
            None
        },
        value: if status == StepStatus::Passed || u.ratio(1, 16)? {
            Some(json::value(u, 4)?)
        } else {
            None
        },
        error,
        content,
        logs,
        recovery: recovery_rounds(u)?,
        notes: strings(u)?,
    })
}

/// Recovery rounds as the engine records them (`retry.recover`).
fn recovery_rounds(u: &mut Unstructured<'_>) -> Result<Vec<Round>> {
    let mut rounds = Vec::new();
    for after in 1..=u.int_in_range(0..=2)? {
        let mut actions = Vec::new();
        for _ in 0..u.int_in_range(0..=2)? {
            let passed: bool = u.arbitrary()?;
            actions.push(ActionRecord {
                verb: json::string(u)?,
                input: json::value(u, 2)?,
                description: optional_string(u)?,
                status: if passed { "passed" } else { "failed" },
                error: if passed { None } else { Some(json::string(u)?) },
                time_ms: time(u)?,
            });
        }
        rounds.push(Round {
            after_attempt: after,
            error: json::string(u)?,
            classification: optional_string(u)?,
            tier: u.int_in_range(1..=2)?,
            strategy: json::string(u)?,
            description: optional_string(u)?,
            actions,
            wait_ms: time(u)?,
            notes: strings(u)?,
        });
    }
    Ok(rounds)
}

fn step_error(u: &mut Unstructured<'_>) -> Result<StepError> {
    Ok(StepError {
        code: if u.ratio(3, 4)? {
            FailureCode::from_text(u.choose(&CODES)?)
        } else {
            // A plugin's own code, as the engine takes it from a plugin.
            FailureCode::from_plugin(&json::string(u)?)
        },
        message: json::string(u)?,
        input_fired: u.arbitrary()?,
        details: if u.arbitrary()? {
            Some(json::value(u, 3)?)
        } else {
            None
        },
    })
}

fn optional_string(u: &mut Unstructured<'_>) -> Result<Option<String>> {
    Ok(if u.arbitrary()? {
        Some(json::string(u)?)
    } else {
        None
    })
}

fn strings(u: &mut Unstructured<'_>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for _ in 0..u.int_in_range(0..=2)? {
        out.push(json::string(u)?);
    }
    Ok(out)
}

/// A duration in ms; the engine never reports NaN or a negative time, but a
/// renderer must not panic on odd floats either.
fn time(u: &mut Unstructured<'_>) -> Result<f64> {
    Ok(match u.int_in_range(0..=3)? {
        0 => 0.0,
        1 => f64::from(u.int_in_range(0..=600_000u32)?),
        2 => u.arbitrary::<f64>()?,
        _ => f64::from(u.arbitrary::<u32>()?) / 7.0,
    })
}
