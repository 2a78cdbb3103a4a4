//! Failures as the contract types them, with builders.
//!
//! These are the generated WIT types themselves (not a parallel set converted at
//! the boundary), so a test sees exactly what the host will. The builders exist to
//! keep the rules of the contract in one place:
//! - `input_fired` defaults to **true** in [`Failure::new`]: the contract says to
//!   claim "nothing fired" only when the plugin can prove it, and a default that
//!   errs the other way would let the host re-run an action that already happened.
//!   [`Failure::invalid_input`] is the one constructor that defaults to false,
//!   since rejecting the input proves nothing ran.
//! - `details` is JSON text; [`Failure::with_details`] takes a JSON value so it
//!   cannot be anything else.
//! - Classification and recovery proposals have their own fields in 0.2.0; in
//!   0.1.0 they were keys of `details`.

use std::fmt;

use serde_json::{Value, json};

pub use crate::bindings::stephost::plugin::types::{
    Failure, FailureCode, RecoveryAction, RecoveryStrategy,
};

impl FailureCode {
    /// The kebab-case name: `invalid-input`, ..., or the plugin's own code.
    pub fn as_str(&self) -> &str {
        match self {
            FailureCode::InvalidInput => "invalid-input",
            FailureCode::NotFound => "not-found",
            FailureCode::WorldMoved => "world-moved",
            FailureCode::Timeout => "timeout",
            FailureCode::Denied => "denied",
            FailureCode::Unsupported => "unsupported",
            FailureCode::Failed => "failed",
            FailureCode::Other(code) => code,
        }
    }

    /// The code with this name: the well-known case when the name is one (so that
    /// `other("timeout")` never reaches the host), else `other(name)`.
    pub fn from_name(name: &str) -> Self {
        match name {
            "invalid-input" => FailureCode::InvalidInput,
            "not-found" => FailureCode::NotFound,
            "world-moved" => FailureCode::WorldMoved,
            "timeout" => FailureCode::Timeout,
            "denied" => FailureCode::Denied,
            "unsupported" => FailureCode::Unsupported,
            "failed" => FailureCode::Failed,
            other => FailureCode::Other(other.to_owned()),
        }
    }
}

impl From<&str> for FailureCode {
    fn from(name: &str) -> Self {
        FailureCode::from_name(name)
    }
}

impl From<String> for FailureCode {
    fn from(name: String) -> Self {
        FailureCode::from_name(&name)
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Failure {
    /// A failure with `code` and `message`, no details and no recovery. Input is
    /// assumed to have fired: say [`with_input_fired(false)`](Self::with_input_fired)
    /// only when the action provably never reached the outside world.
    pub fn new(code: impl Into<FailureCode>, message: impl Into<String>) -> Self {
        Failure {
            code: code.into(),
            message: message.into(),
            input_fired: true,
            details: String::new(),
            classification: None,
            recovery: Vec::new(),
        }
    }

    /// `invalid-input`: the input was wrong, so nothing ran (`input_fired` false).
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Failure::new(FailureCode::InvalidInput, message).with_input_fired(false)
    }

    /// Sets whether the action may have reached the outside world.
    pub fn with_input_fired(mut self, fired: bool) -> Self {
        self.input_fired = fired;
        self
    }

    /// Sets the structured details; `null` means none.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = if details.is_null() {
            String::new()
        } else {
            details.to_string()
        };
        self
    }

    /// Details `{"field": field}`, naming the input field at fault so callers need
    /// not parse the message. An empty `field` (the input as a whole) sets none.
    pub fn with_field(self, field: &str) -> Self {
        if field.is_empty() {
            self
        } else {
            self.with_details(json!({ "field": field }))
        }
    }

    /// Sets the plugin's class of this failure (`element-not-found`).
    pub fn with_classification(mut self, classification: impl Into<String>) -> Self {
        self.classification = Some(classification.into());
        self
    }

    /// Adds a recovery strategy after those already proposed.
    pub fn with_recovery(mut self, strategy: RecoveryStrategy) -> Self {
        self.recovery.push(strategy);
        self
    }

    /// The details as JSON (`null` when there are none or they are not JSON).
    pub fn details_json(&self) -> Value {
        serde_json::from_str(&self.details).unwrap_or(Value::Null)
    }
}

impl RecoveryStrategy {
    /// A strategy named `name` (unique within one failure) of `tier`: 1 for a
    /// local, cheap fix tried first, 2 for one that changes context.
    pub fn new(name: impl Into<String>, tier: u8) -> Self {
        RecoveryStrategy {
            name: name.into(),
            tier,
            description: None,
            actions: Vec::new(),
        }
    }

    /// Says what the strategy does, for the report.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds an action after those already there.
    pub fn with_action(mut self, action: RecoveryAction) -> Self {
        self.actions.push(action);
        self
    }
}

impl RecoveryAction {
    /// A call of this plugin's `verb` with `input` (a JSON object).
    pub fn new(verb: impl Into<String>, input: Value) -> Self {
        RecoveryAction {
            verb: verb.into(),
            input: input.to_string(),
            description: None,
        }
    }

    /// Says what the call does, for the report.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The input as JSON (`null` if it is not JSON).
    pub fn input_json(&self) -> Value {
        serde_json::from_str(&self.input).unwrap_or(Value::Null)
    }
}
