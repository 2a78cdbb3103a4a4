//! What can go wrong on the desktop, before it becomes the WIT `desktop-error`.

use x11rb::errors::{ConnectError, ConnectionError, ReplyError, ReplyOrIdError};

/// A desktop operation that did not happen as asked. All but [`Failed`] and
/// [`Connection`] guarantee that no input was sent.
///
/// [`Failed`]: DesktopFailure::Failed
/// [`Connection`]: DesktopFailure::Connection
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum DesktopFailure {
    /// The window, monitor or key is not there.
    #[error("{0}")]
    NotFound(String),
    /// The window moved, closed, lost focus or is covered since it was resolved.
    #[error("{0}")]
    WorldMoved(String),
    /// Arguments that make no sense.
    #[error("{0}")]
    Invalid(String),
    /// The display cannot do it.
    #[error("{0}")]
    Unsupported(String),
    /// An X request failed; the connection is still usable.
    #[error("{0}")]
    Failed(String),
    /// The X connection broke; the host drops it and reconnects on next use.
    #[error("the X connection failed: {0}")]
    Connection(String),
}

/// Shorthand for results of desktop operations.
pub(crate) type DesktopResult<T> = Result<T, DesktopFailure>;

impl From<ConnectionError> for DesktopFailure {
    fn from(e: ConnectionError) -> Self {
        Self::Connection(e.to_string())
    }
}

impl From<ReplyError> for DesktopFailure {
    fn from(e: ReplyError) -> Self {
        match e {
            ReplyError::ConnectionError(e) => e.into(),
            ReplyError::X11Error(e) => {
                Self::Failed(format!("X request failed: {:?}", e.error_kind))
            }
        }
    }
}

impl From<ReplyOrIdError> for DesktopFailure {
    fn from(e: ReplyOrIdError) -> Self {
        match e {
            ReplyOrIdError::ConnectionError(e) => e.into(),
            ReplyOrIdError::X11Error(e) => {
                Self::Failed(format!("X request failed: {:?}", e.error_kind))
            }
            ReplyOrIdError::IdsExhausted => Self::Connection("X resource ids exhausted".into()),
        }
    }
}

impl From<ConnectError> for DesktopFailure {
    fn from(e: ConnectError) -> Self {
        let display = std::env::var("DISPLAY").unwrap_or_default();
        if display.is_empty() {
            Self::Unsupported(format!(
                "no X display: DISPLAY is not set in the host's environment ({e})"
            ))
        } else {
            Self::Unsupported(format!("cannot connect to the X display {display:?}: {e}"))
        }
    }
}
