//! Failures: every way a verb can go wrong, as the `failure` record the host
//! reports. The codes follow the contract's well-known ones, plus `dialog-open`.

use stephost_plugin::{Failure, FailureCode};

/// A verb's result.
pub(crate) type Result<T> = std::result::Result<T, Failure>;

/// A failure with `code`; `fired` says whether input may have reached the page.
pub(crate) fn fail(code: &str, message: impl Into<String>, fired: bool) -> Failure {
    Failure::new(code, message).with_input_fired(fired)
}

/// `invalid-input` about `field`.
pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Failure {
    Failure::invalid_input(message).with_field(field)
}

/// Whether `failure` has this code (`not-found`, or a plugin code such as
/// `dialog-open`).
pub(crate) fn has_code(failure: &Failure, code: &str) -> bool {
    failure.code == FailureCode::from_name(code)
}

/// `not-found`: nothing there; nothing was sent to the page.
pub(crate) fn not_found(message: impl Into<String>) -> Failure {
    fail("not-found", message, false)
}

/// `world-moved`: what the caller read is no longer what is there; nothing was
/// sent to the page.
pub(crate) fn world_moved(message: impl Into<String>) -> Failure {
    fail("world-moved", message, false)
}

/// `failed`: anything else.
pub(crate) fn failed(message: impl Into<String>, fired: bool) -> Failure {
    fail("failed", message, fired)
}
