//! The desktop capabilities: `screen` (capture), `windows` (list, activate,
//! wait) and `input` (synthetic pointer and keyboard), on X11.
//!
//! - [`Desktop`] is the host-wide service ([`super::Services::desktop`]): one X
//!   connection (opened on first use, re-opened after it breaks) behind a lock,
//!   so input from different sessions never interleaves, plus the operator's
//!   blocked key combos.
//! - `host.rs` implements the WIT interfaces for [`super::HostState`]. Every
//!   function first checks the instance's `desktop` grant (the describe probe
//!   has it linked but not granted) and runs the blocking X work on tokio's
//!   blocking pool.
//! - `x11.rs`, `windows.rs` and `input.rs` speak X11 with x11rb; `screen.rs`
//!   captures with xcap; `keys.rs` parses combos.

mod accessibility;
mod bindings;
mod error;
mod host;
mod input;
mod keys;
mod screen;
mod windows;
mod x11;

use std::fmt;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use wasmtime::component::{HasSelf, Linker};

pub(crate) use error::DesktopFailure;
pub(crate) use keys::{BadCombo, BlockedKeys};

use super::HostState;
use error::DesktopResult;
use x11::X11;

/// `[desktop]` in the host configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DesktopConfig {
    /// Key combos refused with `denied` before anything is sent, e.g.
    /// `"ctrl+alt+backspace"`. Compared in normal form, so `alt+ctrl+del`
    /// matches `ctrl+alt+delete`. Setting the list replaces the default.
    pub blocked_keys: Vec<String>,
    /// After a pointer move has arrived, how long to wait before a button
    /// goes down (ms), so the window under it and the window manager see the
    /// move first.
    pub pointer_settle_ms: u32,
    /// How long a clicked button stays down (ms).
    pub button_hold_ms: u32,
    /// Between the clicks of a double or triple click (ms); keep it under the
    /// toolkits' double-click time (Xt 200, GTK 400).
    pub click_interval_ms: u32,
}

impl Default for DesktopConfig {
    fn default() -> Self {
        // Combos that end the X session, reboot, or switch to a text console.
        let mut blocked = vec![
            "ctrl+alt+backspace".to_owned(),
            "ctrl+alt+delete".to_owned(),
        ];
        blocked.extend((1..=12).map(|n| format!("ctrl+alt+f{n}")));
        Self {
            blocked_keys: blocked,
            pointer_settle_ms: 10,
            button_hold_ms: 8,
            click_interval_ms: 40,
        }
    }
}

impl DesktopConfig {
    /// Checks that every blocked combo parses.
    pub fn validate(&self) -> Result<(), BadCombo> {
        BlockedKeys::parse(&self.blocked_keys).map(|_| ())
    }
}

/// A rectangle in desktop pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub(crate) x: i32,
    pub(crate) y: i32,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

impl Rect {
    fn right(&self) -> i64 {
        i64::from(self.x) + i64::from(self.width)
    }

    fn bottom(&self) -> i64 {
        i64::from(self.y) + i64::from(self.height)
    }

    pub(crate) fn center(&self) -> (i32, i32) {
        (
            ((i64::from(self.x) + self.right()) / 2) as i32,
            ((i64::from(self.y) + self.bottom()) / 2) as i32,
        )
    }

    pub(crate) fn contains(&self, x: i32, y: i32) -> bool {
        (i64::from(self.x)..self.right()).contains(&i64::from(x))
            && (i64::from(self.y)..self.bottom()).contains(&i64::from(y))
    }

    /// The overlap of two rectangles, if any.
    pub(crate) fn intersect(&self, other: &Rect) -> Option<Rect> {
        let left = self.x.max(other.x);
        let top = self.y.max(other.y);
        let right = self.right().min(other.right());
        let bottom = self.bottom().min(other.bottom());
        (right > i64::from(left) && bottom > i64::from(top)).then(|| Rect {
            x: left,
            y: top,
            width: (right - i64::from(left)) as u32,
            height: (bottom - i64::from(top)) as u32,
        })
    }
}

impl fmt::Display for Rect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{} at ({}, {})",
            self.width, self.height, self.x, self.y
        )
    }
}

/// One top-level window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WindowInfo {
    pub(crate) id: u32,
    pub(crate) title: String,
    pub(crate) class: String,
    pub(crate) instance: String,
    pub(crate) pid: Option<u32>,
    pub(crate) geometry: Rect,
    pub(crate) focused: bool,
}

/// What must hold when input is sent (see the WIT `expectation`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expectation {
    pub(crate) window: u32,
    pub(crate) geometry: Option<Rect>,
    pub(crate) focused: bool,
    pub(crate) point_on_window: bool,
}

/// A mouse button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MouseButton {
    Left,
    Middle,
    Right,
    Back,
    Forward,
}

/// The host-wide desktop service: the X connection and the blocked combos.
pub struct Desktop {
    x: Mutex<Option<X11>>,
    blocked: BlockedKeys,
    pacing: input::Pacing,
    accessibility: accessibility::Accessibility,
}

impl Desktop {
    /// A service with `config`'s blocked combos. Connects lazily, so a host
    /// without a display starts and only desktop calls fail.
    pub fn new(config: &DesktopConfig) -> Self {
        let mut combos = Vec::new();
        for text in &config.blocked_keys {
            match keys::parse_combo(text) {
                Ok(_) => combos.push(text.clone()),
                // Config::validate refuses these; a host built without it keeps the rest.
                Err(e) => tracing::warn!("ignoring blocked key: {e}"),
            }
        }
        Self {
            x: Mutex::new(None),
            blocked: BlockedKeys::parse(&combos).unwrap_or_default(),
            pacing: input::Pacing::from(config),
            accessibility: accessibility::Accessibility::default(),
        }
    }

    /// Runs `f` on the X connection, holding the lock. A broken connection is
    /// dropped so the next call reconnects.
    pub(crate) fn with_x<T>(
        &self,
        f: impl FnOnce(&mut X11) -> DesktopResult<T>,
    ) -> DesktopResult<T> {
        let mut guard = self.x.lock().unwrap_or_else(|e| e.into_inner());
        let x = match guard.as_mut() {
            Some(x) => x,
            None => guard.insert(X11::connect()?.paced(self.pacing)),
        };
        let result = f(x);
        if let Err(DesktopFailure::Connection(why)) = &result {
            tracing::warn!("dropping the X connection: {why}");
            *guard = None;
        }
        result
    }

    pub(crate) fn blocked(&self) -> &BlockedKeys {
        &self.blocked
    }

    pub(crate) fn accessibility(&self) -> &accessibility::Accessibility {
        &self.accessibility
    }
}

/// Whether the X display the desktop capabilities would use answers (with
/// XTEST) within `timeout`; why not, otherwise. The MCP front asks once at
/// start, to leave desktop tools out where they could only fail. It opens the
/// connection [`Desktop`] would open and drops it. The connect runs on a
/// thread of its own because x11rb's connect has no timeout: a `DISPLAY`
/// naming an unreachable TCP host would otherwise hold start-up; past
/// `timeout` that thread is left to finish on its own.
pub fn probe_display(timeout: std::time::Duration) -> Result<(), String> {
    let display = std::env::var("DISPLAY").unwrap_or_default();
    if display.trim().is_empty() {
        return Err("DISPLAY is not set".to_owned());
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("x11-probe".into())
        .spawn(move || {
            let _ = tx.send(X11::connect().map(drop).map_err(|e| e.to_string()));
        })
        .map_err(|e| format!("cannot start the X probe: {e}"))?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(why)) => Err(format!("DISPLAY={display}: {why}")),
        Err(_) => Err(format!(
            "DISPLAY={display}: the X server did not answer within {} ms",
            timeout.as_millis()
        )),
    }
}

impl fmt::Debug for Desktop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Desktop").finish_non_exhaustive()
    }
}

/// Links `screen`, `windows` and `input` (and their shared types).
pub(crate) fn add_to_linker(
    linker: &mut Linker<HostState>,
    contract: stephost_contract::ContractVersion,
) -> wasmtime::Result<()> {
    match contract {
        stephost_contract::ContractVersion::V0_1 => {
            bindings::v0_1::DesktopCapabilities::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        stephost_contract::ContractVersion::V0_2 => {
            bindings::v0_2::DesktopCapabilities::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        stephost_contract::ContractVersion::V0_3 => {
            bindings::v0_3::DesktopCapabilities::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        stephost_contract::ContractVersion::V0_4 => {
            bindings::v0_4::DesktopCapabilities::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        stephost_contract::ContractVersion::V0_5 => {
            bindings::v0_5::DesktopCapabilities::add_to_linker::<HostState, HasSelf<HostState>>(
                linker,
                |s| s,
            )
        }
        other => Err(wasmtime::Error::msg(format!(
            "contract version {other} has no host interfaces in this build"
        ))),
    }
}

/// Whether `name` (unversioned) is one of the desktop interfaces.
pub(crate) fn is_desktop_import(name: &str) -> bool {
    matches!(
        name,
        "stephost:plugin/desktop-types"
            | "stephost:plugin/screen"
            | "stephost:plugin/windows"
            | "stephost:plugin/input"
            | "stephost:plugin/accessibility"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rects_clip_and_contain() {
        let screen = Rect {
            x: 0,
            y: 0,
            width: 100,
            height: 50,
        };
        let r = Rect {
            x: 90,
            y: -10,
            width: 20,
            height: 20,
        };
        assert_eq!(
            r.intersect(&screen),
            Some(Rect {
                x: 90,
                y: 0,
                width: 10,
                height: 10
            })
        );
        assert!(screen.contains(0, 0) && !screen.contains(100, 0));
        let off = Rect {
            x: 200,
            y: 0,
            width: 5,
            height: 5,
        };
        assert_eq!(off.intersect(&screen), None);
    }

    #[test]
    fn default_blocked_keys_parse() {
        DesktopConfig::default().validate().expect("defaults parse");
    }
}
