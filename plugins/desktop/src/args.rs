//! The desktop's own input helpers, on top of the SDK's [`Args`] (which reads the
//! generic types and names the field in every complaint).

pub(crate) use stephost_plugin::Args;
use stephost_plugin::Failure;

/// An `invalid-input` failure about `field` (empty: the input as a whole).
pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Failure {
    Failure::invalid_input(message).with_field(field)
}

/// Readers for fields several desktop verbs share.
pub(crate) trait DesktopArgs {
    /// A required coordinate (screen pixels).
    fn coord(&self, field: &str) -> Result<i32, Failure>;
}

impl DesktopArgs for Args {
    fn coord(&self, field: &str) -> Result<i32, Failure> {
        // Bounded to i32 by the range.
        self.int(field, -100_000..=100_000).map(|n| n as i32)
    }
}
