//! The `webdriver` capability: this instance's WebDriver session.
//!
//! The host owns the driver and the browser; a plugin asks for its session here
//! and then speaks WebDriver to the session URL over `wasi:http` (the `wasi`
//! crate). Importing it means the plugin loads only where granted `webdriver`.
//! In a native build these calls go to [`crate::mock`] (no session unless a test
//! installs one).

pub use crate::bindings::stephost::plugin::webdriver::{SessionError, SessionInfo};

host_fn! {
    /// This instance's session: started on first use, the same one afterwards.
    webdriver::session() -> Result<SessionInfo, SessionError>
}

host_fn! {
    /// Ends this instance's session now (the browser closes); the next
    /// [`session`] starts a fresh one. Does nothing when there is none.
    webdriver::end_session() -> ()
}
