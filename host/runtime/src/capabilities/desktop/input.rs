//! Synthetic input through XTEST `FakeInput`, which the server turns into real
//! device events (never `SendEvent`, whose events many clients ignore).
//!
//! Every operation first checks the caller's [`Expectation`] on the same
//! connection, so nothing is sent to a window that moved, closed, lost the focus
//! or is covered at the point since the guest resolved it.

use std::thread;
use std::time::Duration;

use x11rb::CURRENT_TIME;
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::Keycode;
use x11rb::protocol::xtest::ConnectionExt as _;

use super::error::{DesktopFailure, DesktopResult};
use super::keys::{self, Combo, Keysym};
use super::x11::X11;
use super::{Expectation, MouseButton};

const KEY_PRESS: u8 = 2;
const KEY_RELEASE: u8 = 3;
const BUTTON_PRESS: u8 = 4;
const BUTTON_RELEASE: u8 = 5;
const MOTION_NOTIFY: u8 = 6;

/// Pause between the clicks of a multi-click: well inside any double-click
/// interval, long enough for toolkits that debounce.
const CLICK_GAP: Duration = Duration::from_millis(40);
/// Pointer moves of a drag, so toolkits see motion between press and release.
const DRAG_STEPS: i32 = 10;
/// How long a temporarily remapped keycode keeps its keysym after its last use.
/// A client re-reads the map lazily when it handles `MappingNotify`; restoring
/// too early makes it read the restored map and type the wrong character (the
/// race xdotool also sleeps around).
const REMAP_HOLD: Duration = Duration::from_millis(100);

impl MouseButton {
    fn detail(self) -> u8 {
        match self {
            Self::Left => 1,
            Self::Middle => 2,
            Self::Right => 3,
            Self::Back => 8,
            Self::Forward => 9,
        }
    }
}

impl X11 {
    /// Checks `expect`; `point` is where pointer input will land.
    pub(crate) fn check(
        &self,
        expect: &Expectation,
        point: Option<(i32, i32)>,
    ) -> DesktopResult<()> {
        let window = expect.window;
        let info = match self.window_info(window, None) {
            Ok(info) => info,
            Err(DesktopFailure::NotFound(_)) => {
                return Err(DesktopFailure::WorldMoved(format!(
                    "window 0x{window:x} closed since it was resolved; nothing was sent"
                )));
            }
            Err(e) => return Err(e),
        };
        if let Some(expected) = expect.geometry
            && expected != info.geometry
        {
            return Err(DesktopFailure::WorldMoved(format!(
                "window {:?} moved or resized since it was resolved (was {expected}, now {}); nothing was sent",
                info.title, info.geometry
            )));
        }
        if expect.focused {
            let focused = self.focused_client()?;
            if focused != Some(window) {
                let holder = match focused {
                    Some(w) => self
                        .window_info(w, None)
                        .map(|i| format!("window {:?}", i.title))
                        .unwrap_or_else(|_| format!("window 0x{w:x}")),
                    None => "no window".into(),
                };
                return Err(DesktopFailure::WorldMoved(format!(
                    "window {:?} lost the focus to {holder} since it was resolved; nothing was sent",
                    info.title
                )));
            }
        }
        if expect.point_on_window
            && let Some((x, y)) = point
        {
            let target = self.toplevel_of(window)?;
            let at = self.toplevel_at(x, y)?;
            if at != Some(target) {
                let what = match at {
                    Some(w) => format!("window 0x{w:x}"),
                    None => "no window".into(),
                };
                return Err(DesktopFailure::WorldMoved(format!(
                    "({x}, {y}) is covered by {what}, not window {:?}; nothing was sent",
                    info.title
                )));
            }
        }
        Ok(())
    }

    fn check_point(&self, x: i32, y: i32) -> DesktopResult<(i16, i16)> {
        let (w, h) = (i32::from(self.screen_width), i32::from(self.screen_height));
        if !(0..w).contains(&x) || !(0..h).contains(&y) {
            return Err(DesktopFailure::Invalid(format!(
                "({x}, {y}) is off the screen (0..{w}, 0..{h}); nothing was sent"
            )));
        }
        // In range of the screen, hence of i16.
        Ok((x as i16, y as i16))
    }

    fn fake(&self, kind: u8, detail: u8, x: i16, y: i16) -> DesktopResult<()> {
        self.conn
            .xtest_fake_input(kind, detail, CURRENT_TIME, self.root, x, y, 0)?;
        Ok(())
    }

    fn motion(&self, x: i16, y: i16) -> DesktopResult<()> {
        // detail 0: absolute coordinates on `root`.
        self.fake(MOTION_NOTIFY, 0, x, y)
    }

    /// Moves the pointer.
    pub(crate) fn move_pointer(
        &self,
        x: i32,
        y: i32,
        expect: Option<&Expectation>,
    ) -> DesktopResult<()> {
        let (px, py) = self.check_point(x, y)?;
        if let Some(e) = expect {
            self.check(e, Some((x, y)))?;
        }
        self.motion(px, py)?;
        self.sync()
    }

    /// Moves and clicks `count` times.
    pub(crate) fn click(
        &self,
        x: i32,
        y: i32,
        button: MouseButton,
        count: u32,
        expect: Option<&Expectation>,
    ) -> DesktopResult<()> {
        let (px, py) = self.check_point(x, y)?;
        if let Some(e) = expect {
            self.check(e, Some((x, y)))?;
        }
        self.motion(px, py)?;
        for i in 0..count.max(1) {
            if i > 0 {
                self.conn.flush()?;
                thread::sleep(CLICK_GAP);
            }
            self.fake(BUTTON_PRESS, button.detail(), px, py)?;
            self.fake(BUTTON_RELEASE, button.detail(), px, py)?;
        }
        self.sync()
    }

    /// Press, move in steps, release.
    pub(crate) fn drag(
        &self,
        from: (i32, i32),
        to: (i32, i32),
        button: MouseButton,
        expect: Option<&Expectation>,
    ) -> DesktopResult<()> {
        let (fx, fy) = self.check_point(from.0, from.1)?;
        self.check_point(to.0, to.1)?;
        if let Some(e) = expect {
            self.check(e, Some(from))?;
        }
        self.motion(fx, fy)?;
        self.fake(BUTTON_PRESS, button.detail(), fx, fy)?;
        self.conn.flush()?;
        let mut last = (fx, fy);
        for step in 1..=DRAG_STEPS {
            let x = from.0 + (to.0 - from.0) * step / DRAG_STEPS;
            let y = from.1 + (to.1 - from.1) * step / DRAG_STEPS;
            last = self.check_point(x, y)?;
            self.motion(last.0, last.1)?;
            self.conn.flush()?;
            thread::sleep(Duration::from_millis(10));
        }
        self.fake(BUTTON_RELEASE, button.detail(), last.0, last.1)?;
        self.sync()
    }

    /// Scrolls with wheel buttons (4/5 vertical, 6/7 horizontal).
    pub(crate) fn scroll(
        &self,
        x: i32,
        y: i32,
        dx: i32,
        dy: i32,
        expect: Option<&Expectation>,
    ) -> DesktopResult<()> {
        let (px, py) = self.check_point(x, y)?;
        if let Some(e) = expect {
            self.check(e, Some((x, y)))?;
        }
        self.motion(px, py)?;
        let vertical = if dy < 0 { 4 } else { 5 };
        let horizontal = if dx < 0 { 6 } else { 7 };
        for (button, notches) in [
            (vertical, dy.unsigned_abs()),
            (horizontal, dx.unsigned_abs()),
        ] {
            for _ in 0..notches.min(1000) {
                self.fake(BUTTON_PRESS, button, px, py)?;
                self.fake(BUTTON_RELEASE, button, px, py)?;
            }
        }
        self.sync()
    }

    /// Presses a combo: modifiers down, key down and up, modifiers up in reverse.
    pub(crate) fn key_combo(
        &mut self,
        combo: &Combo,
        expect: Option<&Expectation>,
    ) -> DesktopResult<()> {
        if let Some(e) = expect {
            self.check(e, None)?;
        }
        let mut modifiers = Vec::new();
        for m in &combo.modifiers {
            let (code, _) = self.keymap()?.find(m.keysym()).ok_or_else(|| {
                DesktopFailure::Unsupported(format!(
                    "the keyboard map has no key for the {m:?} modifier; nothing was sent"
                ))
            })?;
            modifiers.push(code);
        }
        let mut typer = Typer::new(self)?;
        let result = typer.press(self, combo.key, &modifiers);
        typer.restore(self, result.is_ok())?;
        result?;
        self.sync()
    }

    /// Types `text` into whatever has the focus.
    pub(crate) fn type_text(
        &mut self,
        text: &str,
        expect: Option<&Expectation>,
    ) -> DesktopResult<()> {
        if let Some(e) = expect {
            self.check(e, None)?;
        }
        let mut typer = Typer::new(self)?;
        let mut result = Ok(());
        for c in text.chars() {
            result = typer.press(self, keys::char_keysym(c), &[]);
            if result.is_err() {
                break;
            }
        }
        typer.restore(self, result.is_ok())?;
        result?;
        self.sync()
    }

    /// Releases every key and button this connection may hold down: after a
    /// failure part-way, a stuck Ctrl would poison all later input.
    fn release_all(&self, keycodes: &[Keycode]) -> DesktopResult<()> {
        for &k in keycodes {
            self.fake(KEY_RELEASE, k, 0, 0)?;
        }
        self.sync()
    }
}

/// Presses keysyms, borrowing spare keycodes for the ones not on the keymap.
struct Typer {
    shift: Option<Keycode>,
    spares: Vec<Keycode>,
    /// Spare keycodes in use: (keycode, keysym).
    borrowed: Vec<(Keycode, Keysym)>,
}

impl Typer {
    fn new(x: &mut X11) -> DesktopResult<Self> {
        let map = x.keymap()?;
        Ok(Self {
            shift: map.find(keys::Modifier::Shift.keysym()).map(|(k, _)| k),
            spares: map.spare_keycodes(),
            borrowed: Vec::new(),
        })
    }

    /// The keycode for `keysym` and whether it needs Shift, remapping a spare
    /// keycode when the keymap has none.
    fn keycode(&mut self, x: &mut X11, keysym: Keysym) -> DesktopResult<(Keycode, bool)> {
        if let Some(found) = x.keymap()?.find(keysym) {
            return Ok(found);
        }
        if self.spares.is_empty() {
            // Every spare is in use: give them back (after the hold) and reuse.
            self.restore(x, true)?;
            self.spares = x.keymap()?.spare_keycodes();
        }
        let Some(code) = self.spares.pop() else {
            return Err(DesktopFailure::Unsupported(format!(
                "keysym 0x{keysym:x} is not on the keyboard map and no keycode is free to map it"
            )));
        };
        x.remap(code, keysym)?;
        self.borrowed.push((code, keysym));
        Ok((code, false))
    }

    fn press(&mut self, x: &mut X11, keysym: Keysym, modifiers: &[Keycode]) -> DesktopResult<()> {
        let (code, shifted) = self.keycode(x, keysym)?;
        let mut held: Vec<Keycode> = modifiers.to_vec();
        if shifted {
            let shift = self.shift.ok_or_else(|| {
                DesktopFailure::Unsupported("the keyboard map has no Shift key".into())
            })?;
            if !held.contains(&shift) {
                held.push(shift);
            }
        }
        let result = (|| {
            for &m in &held {
                x.fake(KEY_PRESS, m, 0, 0)?;
            }
            x.fake(KEY_PRESS, code, 0, 0)?;
            x.fake(KEY_RELEASE, code, 0, 0)?;
            for &m in held.iter().rev() {
                x.fake(KEY_RELEASE, m, 0, 0)?;
            }
            x.conn.flush()?;
            Ok(())
        })();
        if result.is_err() {
            let mut all = held;
            all.push(code);
            let _ = x.release_all(&all);
        }
        result
    }

    /// Gives borrowed keycodes their empty mapping back, after the hold.
    fn restore(&mut self, x: &mut X11, wait: bool) -> DesktopResult<()> {
        if self.borrowed.is_empty() {
            return Ok(());
        }
        x.sync()?;
        if wait {
            thread::sleep(REMAP_HOLD);
        }
        for (code, _) in self.borrowed.drain(..) {
            x.remap(code, 0)?;
        }
        Ok(())
    }
}
