//! Recovery rounds between the runs of a failed step (`retry.recover`): what
//! the report records. The proposal a round draws on is the plugin's
//! ([`Proposal`](stephost_contract::Proposal)); the engine's escalation is
//! [`Proposal::pick`](stephost_contract::Proposal::pick).

use serde::Serialize;
use serde_json::Value;

/// One recovery round in a step's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Round {
    /// The run that failed (1-based); the next run follows this round.
    pub after_attempt: u32,
    /// `code: message` of that failure.
    pub error: String,
    /// The plugin's class of the failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classification: Option<String>,
    /// 1 or 2.
    pub tier: u8,
    /// Strategy name; `wait_and_retry` when only the backoff ran.
    pub strategy: String,
    /// What the strategy does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The calls made, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<ActionRecord>,
    /// The backoff wait after the actions, in ms.
    pub wait_ms: f64,
    /// Problems with the plugin's proposal (malformed entries).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One recovery call and how it went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionRecord {
    /// Verb called.
    pub verb: String,
    /// Input given.
    pub input: Value,
    /// What it was for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `passed` or `failed`.
    pub status: &'static str,
    /// `code: message` when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time in ms.
    pub time_ms: f64,
}
