//! The desktop capabilities: `screen`, `windows`, `input` and `accessibility`, with their shared
//! types. Importing any of them means the plugin loads only where granted
//! `desktop = true`.
//!
//! The functions mirror the WIT interfaces one to one (see `wit/0.5.0/desktop.wit`
//! for what each guarantees). In a native build they go to [`crate::mock`], whose
//! default answers every call with `unsupported`, so a test reaches a capability
//! only when it installs a fake desktop.

pub use crate::bindings::stephost::plugin::desktop_types::{DesktopError, Rect};

/// Screen capture: monitors, the whole screen, one window or a region.
pub mod screen {
    pub use crate::bindings::stephost::plugin::screen::{Capture, ImageFormat, Monitor};

    use super::{DesktopError, Rect};

    host_fn! {
        /// Every monitor.
        screen::list_monitors() -> Result<Vec<Monitor>, DesktopError>
    }
    host_fn! {
        /// One monitor by id, or the primary one.
        screen::capture_screen(monitor: Option<u32>, format: ImageFormat) -> Result<Capture, DesktopError>
    }
    host_fn! {
        /// What is on screen where the window is, clipped to its monitor.
        screen::capture_window(window: u64, format: ImageFormat) -> Result<Capture, DesktopError>
    }
    host_fn! {
        /// A rectangle of the desktop, clipped to the monitor under its centre.
        screen::capture_region(region: Rect, format: ImageFormat) -> Result<Capture, DesktopError>
    }
    host_fn! {
        /// Encodes raw RGBA pixels (`width * height * 4` bytes) as PNG.
        screen::encode_png(width: u32, height: u32, rgba: &[u8]) -> Result<Vec<u8>, DesktopError>
    }
}

/// Top-level windows: list, inspect, activate, wait for.
pub mod windows {
    pub use crate::bindings::stephost::plugin::windows::{WindowInfo, WindowQuery};

    use super::DesktopError;

    host_fn! {
        /// Every mapped top-level window, bottom to top in stacking order.
        windows::list_windows() -> Result<Vec<WindowInfo>, DesktopError>
    }
    host_fn! {
        /// One window, fresh (`not-found` once it is gone).
        windows::get_window(id: u64) -> Result<WindowInfo, DesktopError>
    }
    host_fn! {
        /// The window that has the input focus, if any.
        windows::focused_window() -> Result<Option<WindowInfo>, DesktopError>
    }
    host_fn! {
        /// Raises the window and gives it the input focus; returns it once focus
        /// has arrived.
        windows::activate(id: u64) -> Result<WindowInfo, DesktopError>
    }
    host_fn! {
        /// Waits until a window matching `query` exists (`present`) or none does.
        windows::wait_for_window(query: &WindowQuery, present: bool, timeout_ms: u32) -> Result<Option<WindowInfo>, DesktopError>
    }
    host_fn! {
        /// Whether a window manager runs, and its name.
        windows::window_manager() -> Result<Option<String>, DesktopError>
    }
}

/// Synthetic input through XTEST, each call checked against an optional
/// expectation right before anything is sent.
pub mod input {
    pub use crate::bindings::stephost::plugin::input::{Expectation, MouseButton};

    use super::DesktopError;

    host_fn! {
        /// Moves the pointer to (x, y).
        input::move_pointer(x: i32, y: i32, expect: Option<Expectation>) -> Result<(), DesktopError>
    }
    host_fn! {
        /// Moves to (x, y) and clicks `count` times.
        input::click(x: i32, y: i32, button: MouseButton, count: u32, expect: Option<Expectation>) -> Result<(), DesktopError>
    }
    host_fn! {
        /// Presses at the start, moves in steps to the end, releases.
        input::drag(from_x: i32, from_y: i32, to_x: i32, to_y: i32, button: MouseButton, expect: Option<Expectation>) -> Result<(), DesktopError>
    }
    host_fn! {
        /// Moves to (x, y) and scrolls by wheel notches (positive: down, right).
        input::scroll(x: i32, y: i32, dx: i32, dy: i32, expect: Option<Expectation>) -> Result<(), DesktopError>
    }
    host_fn! {
        /// Types text into the focused window.
        input::type_text(text: &str, expect: Option<Expectation>) -> Result<(), DesktopError>
    }
    host_fn! {
        /// Presses key combos (`ctrl+a BackSpace`), each checked against the
        /// operator's blocked list first.
        input::key_combo(combo: &str, expect: Option<Expectation>) -> Result<(), DesktopError>
    }
    host_fn! {
        /// Checks key combos as `key_combo` would (key names, the blocked list),
        /// sending nothing.
        input::check_combo(combo: &str) -> Result<(), DesktopError>
    }
    host_fn! {
        /// Where the pointer is.
        input::pointer_position() -> Result<(i32, i32), DesktopError>
    }
}

/// The accessibility tree (AT-SPI): a window's elements by role and name,
/// actions and text on them by path.
pub mod accessibility {
    pub use crate::bindings::stephost::plugin::accessibility::{Element, Tree};

    use super::DesktopError;

    host_fn! {
        /// Whether the accessibility bus can be reached (`unsupported` naming
        /// what to start when not).
        accessibility::status() -> Result<(), DesktopError>
    }
    host_fn! {
        /// A top-level window's elements, depth first.
        accessibility::window_tree(window: u64, max_depth: u32, max_elements: u32) -> Result<Tree, DesktopError>
    }
    host_fn! {
        /// One element, read now.
        accessibility::get_element(window: u64, path: &str) -> Result<Element, DesktopError>
    }
    host_fn! {
        /// Runs an action of the element (its first when `action` is none);
        /// `world-moved` when its name is not `expect_name`.
        accessibility::do_action(window: u64, path: &str, action: Option<&str>, expect_name: Option<&str>) -> Result<Element, DesktopError>
    }
    host_fn! {
        /// Replaces the element's text (or sets its numeric value).
        accessibility::set_text(window: u64, path: &str, text: &str, expect_name: Option<&str>) -> Result<Element, DesktopError>
    }
}
