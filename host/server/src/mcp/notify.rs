//! Notifications sent while a batch runs: progress after each step, and the
//! step's plugin log lines as MCP log messages.

// Logging is deprecated by the 2026-07-28 revision (SEP-2577) but part of
// 2025-11-25, which this server also serves.
#![allow(deprecated)]

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::mpsc;

use stephost_batch::{Observer, PlannedStep, StepReport, StepStatus};

/// Sends, after each step and in order, a progress notification (when the
/// client gave a progress token) and the step's plugin log lines at or above the
/// client's level (when it set one with `logging/setLevel`).
pub(super) struct Notifier {
    tx: mpsc::UnboundedSender<Note>,
    task: tokio::task::JoinHandle<()>,
    progress: Option<ProgressToken>,
    min_level: Option<LoggingLevel>,
}

enum Note {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
}

impl Notifier {
    /// A notifier, or `None` when the client asked for neither kind.
    pub(super) fn start(
        peer: Peer<RoleServer>,
        progress: Option<ProgressToken>,
        min_level: Option<LoggingLevel>,
    ) -> Option<Self> {
        if progress.is_none() && min_level.is_none() {
            return None;
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<Note>();
        let task = tokio::spawn(async move {
            while let Some(note) = rx.recv().await {
                let sent = match note {
                    Note::Progress(param) => peer.notify_progress(param).await,
                    Note::Log(param) => peer.notify_logging_message(param).await,
                };
                if let Err(error) = sent {
                    tracing::debug!(%error, "notification not delivered");
                    break;
                }
            }
        });
        Some(Self {
            tx,
            task,
            progress,
            min_level,
        })
    }

    /// Waits until every notification is handed to the transport, so they all
    /// arrive before the result.
    pub(super) async fn finish(self) {
        drop(self.tx);
        let _ = self.task.await;
    }
}

/// MCP's syslog-style level for a plugin log level, with its severity rank.
fn mcp_level(level: &str) -> (LoggingLevel, u8) {
    match level {
        "error" => (LoggingLevel::Error, 4),
        "warn" => (LoggingLevel::Warning, 3),
        "info" => (LoggingLevel::Info, 1),
        _ => (LoggingLevel::Debug, 0),
    }
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl Observer for Notifier {
    fn step_started(&self, _step: &PlannedStep, _total: usize) {}

    fn step_finished(&self, step: &StepReport, done: usize, total: usize) {
        if let Some(min) = self.min_level {
            for line in &step.logs {
                let (level, severity) = mcp_level(line.level);
                if severity >= rank(min) {
                    let mut param = LoggingMessageNotificationParam::new(
                        level,
                        Value::String(format!("step {}: {}", step.index + 1, line.message)),
                    );
                    param.logger = Some(step.plugin.clone());
                    let _ = self.tx.send(Note::Log(param));
                }
            }
        }
        let Some(token) = &self.progress else { return };
        let status = match step.status {
            StepStatus::Passed => "passed",
            StepStatus::Failed => "failed",
            StepStatus::TimedOut => "timed out",
            StepStatus::Cancelled => "cancelled",
        };
        let name = step
            .label
            .clone()
            .unwrap_or_else(|| format!("{}.{}", step.plugin, step.verb));
        let mut message = format!("step {}: {name} {status}", step.index + 1);
        if let Some(error) = &step.error {
            message.push_str(&format!(" ({})", error.code));
        }
        let param = ProgressNotificationParam::new(token.clone(), done as f64)
            .with_total(total as f64)
            .with_message(message);
        let _ = self.tx.send(Note::Progress(param));
    }
}
