//! Keyword failures, shaped like Robot Framework's.
//!
//! RF shows a failure as the exception's message, prefixed with the exception's class name
//! unless the class is a generic one (`AssertionError`, `RuntimeError`, `Exception`,
//! `Error`) or one of RF's own errors (`DataError`, variable errors): `Fail  boom` fails
//! with `boom`, `Convert To Integer  x` with `ValueError: 'x' cannot be converted ...`.
//! [`RfError::message`] is always the text exactly as RF would show it.

use std::fmt;

/// What kind of failure, for the verb's failure code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// The keyword ran and failed (or a variable did not resolve).
    Failed,
    /// The call was wrong before the keyword could run: argument count, named
    /// arguments, argument conversion, invalid syntax.
    InvalidInput,
    /// No keyword with that name.
    NotFound,
    /// The host refused an outbound request (not on the allow-list); nothing was sent.
    Denied,
    /// `Skip`: the test stops with status SKIP (failure code `skip`).
    Skip,
}

/// A failure, or one of RF's control signals that travel like one.
#[derive(Debug, Clone)]
pub struct RfError {
    /// The message as RF shows it.
    pub message: String,
    /// The failure code for the verb result.
    pub code: Code,
    /// RF's `continuable` flag: the test goes on after this failure (remote keywords,
    /// `Run Keyword And Continue On Failure`).
    pub continuable: bool,
    /// RF's `fatal` flag: the whole run stops. Wrappers such as `Run Keyword And Ignore
    /// Error` do not swallow fatal failures.
    pub fatal: bool,
    /// RF's `syntax` flag: the data itself is invalid (`FOR IN RANGE` with four
    /// values, a `FOR` without `IN`), so `TRY` and the catching wrappers let it pass.
    pub syntax: bool,
    /// `Pass Execution`: not a failure; it unwinds through wrappers and the step passes.
    pub pass: bool,
    /// `Skip` / `Skip If`: not a failure either; it unwinds through wrappers and the
    /// test (the batch) ends SKIP with this message.
    pub skip: bool,
    /// A `RETURN` signal (`Return From Keyword`, `Run Keyword And Return`): a batch step
    /// is a test's body, not a user keyword, so it ends the step with RF's
    /// "Invalid 'RETURN' usage." after unwinding through wrappers as RF's does.
    pub returning: bool,
    /// A traceback, for remote keywords that send one.
    pub traceback: String,
    /// The individual failures when several were collected (`Run Keywords`).
    pub parts: Vec<RfError>,
}

impl RfError {
    fn new(message: String, code: Code) -> Self {
        Self {
            message,
            code,
            continuable: false,
            fatal: false,
            syntax: false,
            pass: false,
            skip: false,
            returning: false,
            traceback: String::new(),
            parts: Vec::new(),
        }
    }

    /// An `AssertionError` or `RuntimeError`: the message alone.
    pub fn fail(message: impl Into<String>) -> Self {
        Self::new(message.into(), Code::Failed)
    }

    /// A Python exception of class `class` (`ValueError`, `IndexError` ...): RF prefixes
    /// the class name, or shows the name alone when the message is empty.
    pub fn py(class: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        let text = if message.is_empty() {
            class.to_string()
        } else {
            format!("{class}: {message}")
        };
        Self::new(text, Code::Failed)
    }

    /// A `ValueError`.
    pub fn value(message: impl Into<String>) -> Self {
        Self::py("ValueError", message)
    }

    /// An error in the call itself (RF's `DataError` about arguments): `invalid-input`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(message.into(), Code::InvalidInput)
    }

    /// An argument conversion failure: a `ValueError`, and `invalid-input`.
    pub fn conversion(message: impl Into<String>) -> Self {
        let mut e = Self::value(message);
        e.code = Code::InvalidInput;
        e
    }

    /// RF's `DataError` / `VariableError` raised while running: the message alone.
    pub fn data(message: impl Into<String>) -> Self {
        Self::new(message.into(), Code::Failed)
    }

    /// No keyword with this name.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(message.into(), Code::NotFound)
    }

    /// The host refused an outbound HTTP request.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::new(message.into(), Code::Denied)
    }

    /// An error in the test data itself (RF's `DataError(..., syntax=True)`).
    pub fn syntax(message: impl Into<String>) -> Self {
        let mut e = Self::new(message.into(), Code::Failed);
        e.syntax = true;
        e
    }

    /// The signal `Pass Execution` raises.
    pub fn pass_execution(message: impl Into<String>) -> Self {
        let mut e = Self::new(message.into(), Code::Failed);
        e.pass = true;
        e
    }

    /// The signal `Skip` raises.
    pub fn skip_execution(message: impl Into<String>) -> Self {
        let mut e = Self::new(message.into(), Code::Skip);
        e.skip = true;
        e
    }

    /// The signal the `RETURN` family raises outside a user keyword.
    pub fn invalid_return() -> Self {
        let mut e = Self::new("Invalid 'RETURN' usage.".into(), Code::Failed);
        e.returning = true;
        e
    }

    /// Whether this is one of RF's execution-status signals rather than a failure:
    /// wrappers never catch, collect or continue past them.
    pub fn is_signal(&self) -> bool {
        self.pass || self.skip || self.returning
    }

    /// Whether wrappers that catch failures (`Run Keyword And Ignore Error`, `Wait Until
    /// Keyword Succeeds`) may catch this one.
    pub fn catchable(&self) -> bool {
        !self.fatal && !self.syntax && !self.is_signal()
    }
}

impl fmt::Display for RfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Result of anything that can fail like a keyword.
pub type RfResult<T> = Result<T, RfError>;
