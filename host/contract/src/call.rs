//! One call of a verb: the budget it runs under and what comes back.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{FailureCode, Proposal};

/// One item of a step's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Text for the reader.
    Text(String),
    /// An encoded image (a screenshot).
    Image {
        /// MIME type, e.g. `image/png`.
        mime: String,
        /// The encoded bytes.
        data: Vec<u8>,
    },
}

impl Content {
    /// Bytes this item takes in a report (images as base64: 4 bytes per 3).
    pub fn report_bytes(&self) -> u64 {
        match self {
            Content::Text(text) => text.len() as u64,
            Content::Image { data, .. } => (data.len() as u64).div_ceil(3) * 4,
        }
    }
}

/// A verb's successful result.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// JSON text of the value; empty means `null`.
    pub value: String,
    /// Text and images to show alongside it.
    pub content: Vec<Content>,
}

/// A verb's failure as the plugin reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The code; a plugin never gets one of the host's own.
    pub code: FailureCode,
    /// What was wrong.
    pub message: String,
    /// False only when the plugin can prove nothing reached the world.
    pub input_fired: bool,
    /// Structured details for the caller, if any.
    pub details: Option<Value>,
    /// How the failure might heal, if the plugin said.
    pub proposal: Proposal,
}

/// Why a call did not return normally. Every fault leaves the instance
/// unusable (wasmtime cannot re-enter a component after a trap or a dropped
/// call), so the instance is dropped and a fresh one made on next use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Fault {
    /// The step's deadline passed.
    #[error("the step ran past its deadline of {0} ms")]
    Timeout(u64),
    /// The client cancelled.
    #[error("the step was cancelled by the client")]
    Cancelled,
    /// The step used all of its fuel.
    #[error("the step used all of its fuel (limits.fuel_per_step = {0})")]
    OutOfFuel(u64),
    /// Linear memory would have grown past the limit.
    #[error(
        "the plugin exceeded its memory limit of {limit_mib} MiB per instance (limits.memory_mib), asking for {asked_mib} MiB"
    )]
    MemoryLimit {
        /// Limit in MiB.
        limit_mib: u64,
        /// What the guest asked for, in MiB.
        asked_mib: u64,
    },
    /// Any other trap: a panic, `unreachable`, a bad memory access.
    #[error("the plugin crashed: {0}")]
    Trap(String),
    /// No instance could be made: every slot of the engine's pool is in use.
    #[error(
        "no plugin instance slot is free (engine.max_instances reached); retry after other sessions end"
    )]
    Busy,
    /// No instance could be made: the tenant holds its whole share of the
    /// instance pool. The text names the share, its config key and what frees it.
    #[error("{0}")]
    ShareExhausted(String),
}

impl Fault {
    /// The failure code reported for this fault.
    pub fn code(&self) -> FailureCode {
        match self {
            Fault::Timeout(_) => FailureCode::Timeout,
            Fault::Cancelled => FailureCode::Cancelled,
            Fault::OutOfFuel(_) => FailureCode::OutOfFuel,
            Fault::MemoryLimit { .. } => FailureCode::MemoryLimit,
            Fault::Trap(_) => FailureCode::Trap,
            Fault::Busy | Fault::ShareExhausted(_) => FailureCode::Busy,
        }
    }
}

/// One line a plugin logged during a step.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LogLine {
    /// `trace` .. `error`.
    pub level: &'static str,
    /// The text.
    pub message: String,
}

/// An outbound connection the host refused during a call, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Denial {
    /// The destination is not in the plugin's `http` grant.
    NotGranted {
        /// `host:port` as asked.
        destination: String,
        /// The grant, described (`example.com:443, *.test:*`).
        grant: String,
    },
    /// The destination is reachable by this instance only under its own scope
    /// (its browser session's URL), and the request left that scope.
    OutsideScope {
        /// `host:port/path` as asked.
        destination: String,
        /// The grant, described.
        grant: String,
    },
    /// The destination is one of the host's own addresses (its driver, browser
    /// or MCP server), which no grant opens.
    HostAddress {
        /// `host:port` as asked.
        destination: String,
    },
}

/// Time, CPU and cancellation for one call. Computed by the batch engine (the
/// step's timeout against what is left of the batch), enforced by the runtime.
#[derive(Debug, Clone)]
pub struct CallBudget {
    /// Absolute deadline.
    pub deadline: Instant,
    /// The timeout the deadline came from, for messages.
    pub timeout: Duration,
    /// Fuel for the call.
    pub fuel: u64,
    /// Client cancellation.
    pub cancel: CancellationToken,
}

/// What came back from one call, with what the host saw during it.
#[derive(Debug)]
pub struct CallOutcome {
    /// The plugin's answer, or why there is none.
    pub result: Result<Result<Output, Failure>, Fault>,
    /// Lines the plugin logged during the call.
    pub logs: Vec<LogLine>,
    /// Log lines dropped past the per-step cap.
    pub logs_dropped: usize,
    /// Outbound connections the host refused.
    pub denied: Vec<Denial>,
    /// Whether the fault dropped the session's instance (its state is gone).
    pub instance_dropped: bool,
    /// Whether a host capability cut its work short because the call's time was
    /// running out, so the plugin could still answer (and its instance live on):
    /// a failure then is the step's timeout.
    pub time_ran_out: bool,
}

impl CallOutcome {
    /// An outcome with no call behind it: the instance could not be made.
    pub fn fault(fault: Fault) -> Self {
        Self {
            result: Err(fault),
            logs: Vec::new(),
            logs_dropped: 0,
            denied: Vec::new(),
            instance_dropped: false,
            time_ran_out: false,
        }
    }
}
