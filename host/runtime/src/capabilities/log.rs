//! The `log` capability: guest log lines go to the host's tracing output and to
//! the step's report.

use stephost_contract::LogLine;

use super::HostState;

/// Longest log message kept, in bytes; longer ones are cut with a marker.
const MAX_MESSAGE_BYTES: usize = 4096;

/// The same implementation for every contract version's `log`.
macro_rules! log_host {
    ($version:ident) => {
        mod $version {
            use super::{HostState, LogLine, MAX_MESSAGE_BYTES, truncate};
            use crate::bindings::$version::stephost::plugin::log::{Host, Level};

            impl Host for HostState {
                async fn log(&mut self, level: Level, message: String) {
                    let plugin = &*self.plugin;
                    let level = match level {
                        Level::Trace => {
                            tracing::trace!(plugin, "{message}");
                            "trace"
                        }
                        Level::Debug => {
                            tracing::debug!(plugin, "{message}");
                            "debug"
                        }
                        Level::Info => {
                            tracing::info!(plugin, "{message}");
                            "info"
                        }
                        Level::Warn => {
                            tracing::warn!(plugin, "{message}");
                            "warn"
                        }
                        Level::Error => {
                            tracing::error!(plugin, "{message}");
                            "error"
                        }
                    };
                    if self.logs.len() >= self.max_logs {
                        self.logs_dropped += 1;
                        return;
                    }
                    let message = truncate(message, MAX_MESSAGE_BYTES);
                    self.logs.push(LogLine { level, message });
                }
            }
        }
    };
}

log_host!(v0_1);
log_host!(v0_2);
log_host!(v0_3);
log_host!(v0_4);
log_host!(v0_5);

/// Cuts `text` to at most `max` bytes on a character boundary.
pub(crate) fn truncate(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str("… [truncated]");
    text
}
