//! A stand-in host for native builds (`cargo test`), where there is no host.
//!
//! The generated import stubs abort the test binary when called natively, so the
//! SDK's wrappers ([`crate::log()`], [`crate::webdriver`], [`crate::desktop`],
//! [`crate::rf_library`], [`crate::python`])
//! come here instead on every non-wasm target:
//! - log lines are kept in a per-thread buffer: read them with [`take_logs`];
//! - capability calls go to the [`MockHost`] a test installed with [`install`];
//!   every method it does not override (and every call when none is installed)
//!   answers as a host without that capability would: no WebDriver session,
//!   `unsupported` from the desktop, `not-granted` from rf-library,
//!   `unavailable` from python.
//!
//! Everything here is per thread, like the plugin state, so tests running in
//! parallel do not see each other. This module does not exist in the component.

use std::cell::RefCell;

use crate::Level;
use crate::desktop::accessibility::{Element, Tree};
use crate::desktop::input::{Expectation, MouseButton};
use crate::desktop::screen::{Capture, ImageFormat, Monitor};
use crate::desktop::windows::{WindowInfo, WindowQuery};
use crate::desktop::{DesktopError, Rect};
use crate::python::{Evaluation, EvaluationError};
use crate::rf_library::{LibraryError, LibraryServer};
use crate::webdriver::{SessionError, SessionInfo};

/// What a native test says in place of the host's capabilities. Override the
/// methods the code under test calls; the rest answer "not available".
#[allow(unused_variables)]
pub trait MockHost {
    /// `webdriver.session`.
    fn session(&mut self) -> Result<SessionInfo, SessionError> {
        Err(SessionError::Unavailable(NO_HOST.into()))
    }
    /// `webdriver.end-session`.
    fn end_session(&mut self) {}

    /// `rf-library.start`.
    fn start(&mut self, name: &str, args: &[String]) -> Result<LibraryServer, LibraryError> {
        Err(LibraryError::NotGranted(format!(
            "library '{name}' is not enabled: {NO_HOST}"
        )))
    }
    /// `rf-library.granted`.
    fn granted(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// `rf-library.load-variables`.
    fn load_variables(&mut self, path: &str, args: &[String]) -> Result<String, LibraryError> {
        Err(LibraryError::NotGranted(format!(
            "variable file '{path}' cannot be loaded: {NO_HOST}"
        )))
    }

    /// `python.evaluate`.
    fn evaluate(
        &mut self,
        expression: &str,
        variables: &str,
        namespace: &str,
        modules: &str,
    ) -> Result<Evaluation, EvaluationError> {
        Err(EvaluationError::NoEvaluator(
            "the native mock host has no Python evaluator".into(),
        ))
    }

    /// `screen.list-monitors`.
    fn list_monitors(&mut self) -> Result<Vec<Monitor>, DesktopError> {
        Err(no_desktop())
    }
    /// `screen.capture-screen`.
    fn capture_screen(
        &mut self,
        monitor: Option<u32>,
        format: ImageFormat,
    ) -> Result<Capture, DesktopError> {
        Err(no_desktop())
    }
    /// `screen.capture-window`.
    fn capture_window(
        &mut self,
        window: u64,
        format: ImageFormat,
    ) -> Result<Capture, DesktopError> {
        Err(no_desktop())
    }
    /// `screen.capture-region`.
    fn capture_region(
        &mut self,
        region: Rect,
        format: ImageFormat,
    ) -> Result<Capture, DesktopError> {
        Err(no_desktop())
    }
    /// `screen.encode-png`.
    fn encode_png(
        &mut self,
        width: u32,
        height: u32,
        rgba: &[u8],
    ) -> Result<Vec<u8>, DesktopError> {
        Err(no_desktop())
    }

    /// `windows.list-windows`.
    fn list_windows(&mut self) -> Result<Vec<WindowInfo>, DesktopError> {
        Err(no_desktop())
    }
    /// `windows.get-window`.
    fn get_window(&mut self, id: u64) -> Result<WindowInfo, DesktopError> {
        Err(no_desktop())
    }
    /// `windows.focused-window`.
    fn focused_window(&mut self) -> Result<Option<WindowInfo>, DesktopError> {
        Err(no_desktop())
    }
    /// `windows.activate`.
    fn activate(&mut self, id: u64) -> Result<WindowInfo, DesktopError> {
        Err(no_desktop())
    }
    /// `windows.wait-for-window`.
    fn wait_for_window(
        &mut self,
        query: &WindowQuery,
        present: bool,
        timeout_ms: u32,
    ) -> Result<Option<WindowInfo>, DesktopError> {
        Err(no_desktop())
    }
    /// `windows.window-manager`.
    fn window_manager(&mut self) -> Result<Option<String>, DesktopError> {
        Err(no_desktop())
    }

    /// `input.move-pointer`.
    fn move_pointer(
        &mut self,
        x: i32,
        y: i32,
        expect: Option<Expectation>,
    ) -> Result<(), DesktopError> {
        Err(no_desktop())
    }
    /// `input.click`.
    fn click(
        &mut self,
        x: i32,
        y: i32,
        button: MouseButton,
        count: u32,
        expect: Option<Expectation>,
    ) -> Result<(), DesktopError> {
        Err(no_desktop())
    }
    /// `input.drag`.
    #[allow(clippy::too_many_arguments)]
    fn drag(
        &mut self,
        from_x: i32,
        from_y: i32,
        to_x: i32,
        to_y: i32,
        button: MouseButton,
        expect: Option<Expectation>,
    ) -> Result<(), DesktopError> {
        Err(no_desktop())
    }
    /// `input.scroll`.
    fn scroll(
        &mut self,
        x: i32,
        y: i32,
        dx: i32,
        dy: i32,
        expect: Option<Expectation>,
    ) -> Result<(), DesktopError> {
        Err(no_desktop())
    }
    /// `input.type-text`.
    fn type_text(&mut self, text: &str, expect: Option<Expectation>) -> Result<(), DesktopError> {
        Err(no_desktop())
    }
    /// `input.key-combo`.
    fn key_combo(&mut self, combo: &str, expect: Option<Expectation>) -> Result<(), DesktopError> {
        Err(no_desktop())
    }
    /// `input.pointer-position`.
    fn pointer_position(&mut self) -> Result<(i32, i32), DesktopError> {
        Err(no_desktop())
    }
    /// `input.check-combo`.
    fn check_combo(&mut self, combo: &str) -> Result<(), DesktopError> {
        Err(no_desktop())
    }
    /// `accessibility.status`.
    fn status(&mut self) -> Result<(), DesktopError> {
        Err(no_desktop())
    }
    /// `accessibility.window-tree`.
    fn window_tree(
        &mut self,
        window: u64,
        max_depth: u32,
        max_elements: u32,
    ) -> Result<Tree, DesktopError> {
        Err(no_desktop())
    }
    /// `accessibility.get-element`.
    fn get_element(&mut self, window: u64, path: &str) -> Result<Element, DesktopError> {
        Err(no_desktop())
    }
    /// `accessibility.do-action`.
    fn do_action(
        &mut self,
        window: u64,
        path: &str,
        action: Option<&str>,
        expect_name: Option<&str>,
    ) -> Result<Element, DesktopError> {
        Err(no_desktop())
    }
    /// `accessibility.set-text`.
    fn set_text(
        &mut self,
        window: u64,
        path: &str,
        text: &str,
        expect_name: Option<&str>,
    ) -> Result<Element, DesktopError> {
        Err(no_desktop())
    }
}

/// What the default answers say.
const NO_HOST: &str = "no stephost host: this is a native build (install a mock::MockHost)";

fn no_desktop() -> DesktopError {
    DesktopError::Unsupported(NO_HOST.into())
}

/// The host when a test installed none: every default answer.
struct NoHost;

impl MockHost for NoHost {}

thread_local! {
    static HOST: RefCell<Box<dyn MockHost>> = RefCell::new(Box::new(NoHost));
    static LOGS: RefCell<Vec<(Level, String)>> = const { RefCell::new(Vec::new()) };
}

/// Makes `host` answer this thread's capability calls from now on.
pub fn install(host: impl MockHost + 'static) {
    HOST.with(|cell| *cell.borrow_mut() = Box::new(host));
}

/// The log lines recorded on this thread since the last call, oldest first.
pub fn take_logs() -> Vec<(Level, String)> {
    LOGS.with(|cell| std::mem::take(&mut *cell.borrow_mut()))
}

/// Starts over on this thread: a fresh plugin instance (its state dropped), no
/// log lines, no installed host.
pub fn reset() {
    crate::plugin::drop_instance();
    LOGS.with(|cell| cell.borrow_mut().clear());
    HOST.with(|cell| *cell.borrow_mut() = Box::new(NoHost));
}

pub(crate) fn record_log(level: Level, message: &str) {
    LOGS.with(|cell| cell.borrow_mut().push((level, message.to_owned())));
}

pub(crate) fn with_host<R>(call: impl FnOnce(&mut dyn MockHost) -> R) -> R {
    HOST.with(|cell| call(&mut **cell.borrow_mut()))
}
