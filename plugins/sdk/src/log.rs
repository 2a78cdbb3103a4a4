//! The `log` import, granted to every plugin.
//!
//! In the component it calls the host, which attaches the line to the running
//! step's report. In a native build there is no host: the generated import is a
//! stub that aborts the test binary, so the line goes to [`crate::mock`]'s buffer
//! instead, where tests can read it.

pub use crate::bindings::stephost::plugin::log::Level;

/// Records one log line at `level`.
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::bindings::stephost::plugin::log::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    crate::mock::record_log(level, message);
}

impl Level {
    /// The level's name in the contract: `trace`, `debug`, `info`, `warn`, `error`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Trace => "trace",
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }

    /// The level named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "trace" => Some(Level::Trace),
            "debug" => Some(Level::Debug),
            "info" => Some(Level::Info),
            "warn" => Some(Level::Warn),
            "error" => Some(Level::Error),
            _ => None,
        }
    }
}
