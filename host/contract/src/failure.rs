//! Failure codes: the machine-readable half of every failed step.
//!
//! The host's own codes and the contract's well-known plugin codes are cases of
//! one enum so the engine matches on them instead of comparing text; a plugin's
//! own code travels as [`FailureCode::Other`]. On the wire (reports, `retry.on`)
//! every code is its kebab-case text, so the enum changes no JSON.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! codes {
    ($( $(#[$doc:meta])* $case:ident = $text:literal, )*) => {
        /// Why a step, a call or a batch failed.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum FailureCode {
            $( $(#[$doc])* $case, )*
            /// A plugin's own code (kebab-case), passed through as it is.
            Other(String),
        }

        impl FailureCode {
            /// The code's text, as reports and `retry.on` spell it.
            pub fn as_str(&self) -> &str {
                match self {
                    $( FailureCode::$case => $text, )*
                    FailureCode::Other(code) => code,
                }
            }

            /// The code spelled `text`; unknown text is a plugin's own code and an
            /// empty one is `failed`.
            pub fn from_text(text: &str) -> Self {
                match text {
                    "" => FailureCode::Failed,
                    $( $text => FailureCode::$case, )*
                    other => FailureCode::Other(other.to_owned()),
                }
            }
        }
    };
}

codes! {
    // Well-known plugin codes (the contract's `failure-code`).
    /// The input was wrong in a way the schema could not say.
    InvalidInput = "invalid-input",
    /// What the step addressed is not there.
    NotFound = "not-found",
    /// The world changed under the step (a stale element, a moved window).
    WorldMoved = "world-moved",
    /// The plugin's own wait ran out, or the step passed its deadline.
    Timeout = "timeout",
    /// The plugin or the host refused the action.
    Denied = "denied",
    /// The verb cannot do this here.
    Unsupported = "unsupported",
    /// Any other failure.
    Failed = "failed",
    // The host's codes.
    /// The client cancelled the batch.
    Cancelled = "cancelled",
    /// The step burned all its fuel.
    OutOfFuel = "out-of-fuel",
    /// The plugin asked for more memory than an instance may have.
    MemoryLimit = "memory-limit",
    /// The plugin trapped (a panic, `unreachable`, a bad access).
    Trap = "trap",
    /// No instance slot was free, or the tenant runs its maximum of batches.
    Busy = "busy",
    /// The tenant sent batches faster than its rate allows.
    RateLimited = "rate-limited",
    /// The host is draining and takes no new batches.
    ShuttingDown = "shutting-down",
    /// The plugin broke the contract (a value that is not JSON).
    PluginError = "plugin-error",
    /// A `${...}` reference had no value when the step ran.
    UnresolvedReference = "unresolved-reference",
    /// A resolved input passed `limits.max_input_bytes`.
    InputTooLarge = "input-too-large",
    /// A resolved input passed `limits.max_input_depth`.
    InputTooDeep = "input-too-deep",
    /// A result passed `limits.max_result_bytes`.
    ResultTooLarge = "result-too-large",
    /// The batch's results passed `limits.max_report_bytes`.
    ReportTooLarge = "report-too-large",
    /// An `assign_to` passed `limits.max_session_vars_bytes`.
    SessionVarsTooLarge = "session-vars-too-large",
}

impl FailureCode {
    /// Whether a plugin may send this code without it being mistaken for one the
    /// host reports about the plugin (a plugin saying `trap` is still a plugin
    /// saying something: it becomes `Other`).
    pub fn from_plugin(text: &str) -> Self {
        match Self::from_text(text) {
            code @ (FailureCode::InvalidInput
            | FailureCode::NotFound
            | FailureCode::WorldMoved
            | FailureCode::Timeout
            | FailureCode::Denied
            | FailureCode::Unsupported
            | FailureCode::Failed
            | FailureCode::Other(_)) => code,
            _ => FailureCode::Other(text.to_owned()),
        }
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FailureCode {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::from_text(s))
    }
}

impl PartialEq<str> for FailureCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for FailureCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for FailureCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|text| Self::from_text(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_text() {
        for code in [
            FailureCode::WorldMoved,
            FailureCode::SessionVarsTooLarge,
            FailureCode::Other("element-detached".into()),
        ] {
            assert_eq!(FailureCode::from_text(code.as_str()), code);
            let json = serde_json::to_string(&code).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
        assert_eq!(FailureCode::from_text(""), FailureCode::Failed);
    }

    #[test]
    fn a_plugin_cannot_claim_a_host_code() {
        assert_eq!(
            FailureCode::from_plugin("out-of-fuel"),
            FailureCode::Other("out-of-fuel".into())
        );
        assert_eq!(FailureCode::from_plugin("not-found"), FailureCode::NotFound);
    }
}
