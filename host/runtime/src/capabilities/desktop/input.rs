//! Synthetic input through XTEST `FakeInput`, which the server turns into real
//! device events (never `SendEvent`, whose events many clients ignore).
//!
//! Every operation first checks the caller's [`Expectation`] on the same
//! connection, so nothing is sent to a window that moved, closed, lost the focus
//! or is covered at the point since the guest resolved it.
//!
//! Pointer input is paced like a person's ([`Pacing`]): a click sent as one
//! burst (move, press, release, next move) loses clicks under a window manager.
//! The manager holds a synchronous grab on its clients' buttons (to focus and
//! raise on click) and the pointer stays frozen until it lets the press
//! through; XTEST events that arrive meanwhile are queued behind the grab, and
//! Xt buttons (xcalc) missed about one click in three that way under openbox.
//! So every press waits until the server reports the pointer where it was
//! sent (a frozen pointer does not move), then the settle time; the button is
//! held for a moment; and the call returns only once the server reports the
//! button up again, so the next click cannot overtake this one.

use std::collections::HashMap;
use std::thread;
use std::time::{Duration, Instant};

use x11rb::CURRENT_TIME;
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{ConnectionExt as _, KeyButMask, Keycode};
use x11rb::protocol::xtest::ConnectionExt as _;

use super::error::{DesktopFailure, DesktopResult};
use super::keys::{self, Combo, Keysym};
use super::x11::X11;
use super::{DesktopConfig, Expectation, MouseButton};

const KEY_PRESS: u8 = 2;
const KEY_RELEASE: u8 = 3;
const BUTTON_PRESS: u8 = 4;
const BUTTON_RELEASE: u8 = 5;
const MOTION_NOTIFY: u8 = 6;

/// Pointer moves of a drag, so toolkits see motion between press and release.
const DRAG_STEPS: i32 = 10;
/// Pause between the moves of a drag.
const DRAG_STEP_PAUSE: Duration = Duration::from_millis(10);
/// Longest wait for the server to report the pointer where it was sent, or a
/// button up: past it a window manager (or a real hand on the mouse) keeps
/// it, and the input goes on as sent.
const POINTER_WAIT: Duration = Duration::from_millis(250);
/// Longest a client is given to catch up with typed keys before a spare
/// keycode it may still be reading is lent to another character.
const CATCH_UP_MAX: Duration = Duration::from_secs(3);
/// How long the focused window must stay unchanged to count as caught up.
const CATCH_UP_QUIET: Duration = Duration::from_millis(120);
/// How often the focused window is looked at while waiting for it.
const CATCH_UP_POLL: Duration = Duration::from_millis(15);
/// Keys sent longer ago than this are taken as read by every client, so
/// keycodes are remapped without waiting for the focused window first.
const REUSE_AFTER: Duration = Duration::from_secs(5);
/// After a remap, how long the (idle) client gets to handle the
/// `MappingNotify` before a key that needs the new mapping is sent. Tk looks
/// keys up as it reads them but refreshes its keymap only when it handles the
/// notify; a key read in the same batch as the notify was typed with the old
/// map (lost, or the previous character). 10 ms sufficed on an idle Xvfb.
const REMAP_SETTLE: Duration = Duration::from_millis(40);
/// Lent keycodes not pressed for this long get their empty mapping back (at
/// the next keyboard call), so the pool does not stay spread over the map.
const GIVE_BACK_AFTER: Duration = Duration::from_secs(10);

/// How pointer input is paced: `[desktop]` `pointer_settle_ms`,
/// `button_hold_ms`, `click_interval_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pacing {
    /// After the pointer has arrived, before a button goes down.
    pub(crate) settle: Duration,
    /// Between a button's press and its release.
    pub(crate) hold: Duration,
    /// Between the clicks of a double or triple click (after the release).
    pub(crate) interval: Duration,
}

impl From<&DesktopConfig> for Pacing {
    fn from(c: &DesktopConfig) -> Self {
        Self {
            settle: Duration::from_millis(u64::from(c.pointer_settle_ms)),
            hold: Duration::from_millis(u64::from(c.button_hold_ms)),
            interval: Duration::from_millis(u64::from(c.click_interval_ms)),
        }
    }
}

impl Default for Pacing {
    fn default() -> Self {
        Self::from(&DesktopConfig::default())
    }
}

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

    /// Its bit in the pointer state, for the buttons the core protocol reports.
    fn mask(self) -> Option<KeyButMask> {
        match self {
            Self::Left => Some(KeyButMask::BUTTON1),
            Self::Middle => Some(KeyButMask::BUTTON2),
            Self::Right => Some(KeyButMask::BUTTON3),
            Self::Back | Self::Forward => None,
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
            // The title bar and borders a manager draws belong to the window
            // (a drag on the title bar moves it), so the point is checked
            // against the frame.
            let frame = self.frame_of(window, info.geometry)?;
            if !frame.contains(x, y) {
                return Err(DesktopFailure::NotFound(format!(
                    "({x}, {y}) is not on window {:?}, which is {} ({frame} with its frame); nothing was sent",
                    info.title, info.geometry
                )));
            }
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

    /// Waits until the server reports the pointer at (x, y), then the settle
    /// time. A window manager's synchronous grab freezes the pointer, and a
    /// frozen pointer does not move until the manager lets it go.
    fn arrive(&self, x: i16, y: i16, settle: bool) -> DesktopResult<()> {
        let deadline = Instant::now() + POINTER_WAIT;
        loop {
            let p = self.conn.query_pointer(self.root)?.reply()?;
            if (p.root_x, p.root_y) == (x, y) {
                break;
            }
            if Instant::now() >= deadline {
                tracing::debug!(
                    x,
                    y,
                    at_x = p.root_x,
                    at_y = p.root_y,
                    "the pointer did not arrive; going on"
                );
                break;
            }
            thread::sleep(Duration::from_millis(1));
        }
        if settle && !self.pacing.settle.is_zero() {
            thread::sleep(self.pacing.settle);
        }
        Ok(())
    }

    /// Waits until the server reports `button` up (the release got through
    /// any grab); a round trip in any case.
    fn released(&self, button: MouseButton) -> DesktopResult<()> {
        let Some(mask) = button.mask() else {
            return self.sync();
        };
        let deadline = Instant::now() + POINTER_WAIT;
        loop {
            let p = self.conn.query_pointer(self.root)?.reply()?;
            if !p.mask.contains(mask) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                tracing::debug!(?button, "the button still reads as down; going on");
                return Ok(());
            }
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// One press and release where the pointer is.
    fn press_release(&self, button: MouseButton, x: i16, y: i16) -> DesktopResult<()> {
        self.fake(BUTTON_PRESS, button.detail(), x, y)?;
        self.conn.flush()?;
        if !self.pacing.hold.is_zero() {
            thread::sleep(self.pacing.hold);
        }
        self.fake(BUTTON_RELEASE, button.detail(), x, y)?;
        self.released(button)
    }

    /// Moves the pointer, and returns once the server has it there.
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
        self.arrive(px, py, false)
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
        self.arrive(px, py, true)?;
        for i in 0..count.max(1) {
            if i > 0 && !self.pacing.interval.is_zero() {
                thread::sleep(self.pacing.interval);
            }
            self.press_release(button, px, py)?;
        }
        Ok(())
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
        self.arrive(fx, fy, true)?;
        self.fake(BUTTON_PRESS, button.detail(), fx, fy)?;
        self.conn.flush()?;
        thread::sleep(self.pacing.hold.max(DRAG_STEP_PAUSE));
        let mut last = (fx, fy);
        for step in 1..=DRAG_STEPS {
            let x = from.0 + (to.0 - from.0) * step / DRAG_STEPS;
            let y = from.1 + (to.1 - from.1) * step / DRAG_STEPS;
            last = self.check_point(x, y)?;
            self.motion(last.0, last.1)?;
            self.conn.flush()?;
            thread::sleep(DRAG_STEP_PAUSE);
        }
        // A manager moving the window on a title-bar drag follows the motion
        // it has processed; the release must not overtake the last move.
        self.arrive(last.0, last.1, true)?;
        self.fake(BUTTON_RELEASE, button.detail(), last.0, last.1)?;
        self.released(button)
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
        self.arrive(px, py, true)?;
        let vertical = if dy < 0 { 4 } else { 5 };
        let horizontal = if dx < 0 { 6 } else { 7 };
        for (button, notches) in [
            (vertical, dy.unsigned_abs()),
            (horizontal, dx.unsigned_abs()),
        ] {
            // A wheel notch is a press and release together, as a real wheel
            // sends it.
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
        self.type_keysyms(&[combo.key], &modifiers)
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
        let keysyms: Vec<Keysym> = text.chars().map(keys::char_keysym).collect();
        self.type_keysyms(&keysyms, &[])
    }

    /// Presses each keysym with `modifiers` held, lending spare keycodes to
    /// the ones the keyboard map lacks (see [`keys::Spares`] for why with care):
    /// the text is cut into runs that each fit the pool, every keycode of a run
    /// is mapped before its first key, a remap soon after keys waits until the
    /// focused window has caught up with them, and keys follow a remap only
    /// after [`REMAP_SETTLE`].
    fn type_keysyms(&mut self, keysyms: &[Keysym], modifiers: &[Keycode]) -> DesktopResult<()> {
        self.give_back_idle()?;
        let spare_codes = self.spares()?.keycodes();
        let capacity = self.spares()?.capacity();
        let fixed = self.keymap()?.index_except(&spare_codes);
        let shift = fixed.get(&keys::Modifier::Shift.keysym()).map(|&(k, _)| k);
        let runs = keys::runs(keysyms, |k| !fixed.contains_key(&k), capacity);
        // The focused window as it was before the run just typed, to tell
        // when the client has drawn it (so read it).
        let mut before_run: Option<Vec<u8>> = None;
        for (n, run) in runs.iter().enumerate() {
            let keys = &keysyms[run.clone()];
            let mut wanted: Vec<Keysym> = Vec::new();
            for &k in keys {
                if !fixed.contains_key(&k) && !wanted.contains(&k) {
                    wanted.push(k);
                }
            }
            let plan = self.spares()?.plan(&wanted);
            if let Some(&missing) = wanted.iter().find(|&&k| {
                self.spares_if_known().is_none_or(|s| s.lent(k).is_none())
                    && !plan.iter().any(|l| l.keysym == k)
            }) {
                // Only with no spare keycode at all, so in the first run,
                // before anything was sent.
                return Err(DesktopFailure::Unsupported(format!(
                    "keysym 0x{missing:x} is not on the keyboard map and the map has no empty \
                     keycode to lend it; nothing was sent"
                )));
            }
            if !plan.is_empty() {
                // A remap must reach a client with nothing queued: keys still
                // waiting would be read with the new map (a keycode lent again
                // retypes them), and so would the keys behind the notify.
                if self.last_key_at.is_some_and(|t| t.elapsed() < REUSE_AFTER) {
                    self.catch_up(before_run.take())?;
                }
                let changes: Vec<(Keycode, Keysym)> =
                    plan.iter().map(|l| (l.keycode, l.keysym)).collect();
                self.remap(&changes)?;
                for (code, keysym) in changes {
                    self.spares()?.lend(code, keysym);
                }
                thread::sleep(REMAP_SETTLE);
            }
            // Only a run followed by more lending needs the comparison.
            before_run = if n + 1 < runs.len() {
                Some(self.focus_pixels()?)
            } else {
                None
            };
            for &k in keys {
                self.press_keysym(k, &fixed, modifiers, shift)?;
            }
            self.conn.flush()?;
        }
        self.sync()
    }

    fn press_keysym(
        &mut self,
        keysym: Keysym,
        fixed: &HashMap<Keysym, (Keycode, bool)>,
        modifiers: &[Keycode],
        shift: Option<Keycode>,
    ) -> DesktopResult<()> {
        let (code, shifted, lent) = match fixed.get(&keysym) {
            Some(&(code, shifted)) => (code, shifted, false),
            None => {
                let code = self.spares()?.lent(keysym).ok_or_else(|| {
                    DesktopFailure::Failed(format!("keysym 0x{keysym:x} lost its keycode"))
                })?;
                (code, false, true)
            }
        };
        let mut held: Vec<Keycode> = modifiers.to_vec();
        if shifted {
            let shift = shift.ok_or_else(|| {
                DesktopFailure::Unsupported("the keyboard map has no Shift key".into())
            })?;
            if !held.contains(&shift) {
                held.push(shift);
            }
        }
        let result = (|| {
            for &m in &held {
                self.fake(KEY_PRESS, m, 0, 0)?;
            }
            self.fake(KEY_PRESS, code, 0, 0)?;
            self.fake(KEY_RELEASE, code, 0, 0)?;
            for &m in held.iter().rev() {
                self.fake(KEY_RELEASE, m, 0, 0)?;
            }
            Ok(())
        })();
        if result.is_err() {
            let mut all = held;
            all.push(code);
            let _ = self.release_all(&all);
        }
        let now = Instant::now();
        self.last_key_at = Some(now);
        if lent {
            self.spares()?.pressed(code, now);
        }
        result
    }

    /// Where the focused window is, else the whole screen.
    fn focus_area(&self) -> DesktopResult<super::Rect> {
        let Some(window) = self.focused_client()? else {
            return Ok(self.screen());
        };
        match self.window_info(window, None) {
            Ok(info) => Ok(info.geometry),
            Err(DesktopFailure::NotFound(_)) => Ok(self.screen()),
            Err(e) => Err(e),
        }
    }

    /// The focused window's pixels; empty when they cannot be read (then
    /// waiting falls back to time).
    fn focus_pixels(&self) -> DesktopResult<Vec<u8>> {
        let area = self.focus_area()?;
        match self.pixels(area) {
            Err(DesktopFailure::Failed(why)) => {
                tracing::debug!("cannot read the focused window: {why}");
                Ok(Vec::new())
            }
            other => other,
        }
    }

    /// Waits until the focused window has caught up with the keys sent: it
    /// has changed since `before` (when given: the keys draw something), then
    /// stayed unchanged for [`CATCH_UP_QUIET`]. Toolkits redraw once their
    /// queue is empty (Tk at idle) or as they go (xterm, GTK), so a window that
    /// changed and then held still has read its keys. At most
    /// [`CATCH_UP_MAX`]; past it typing goes on, logged.
    fn catch_up(&self, before: Option<Vec<u8>>) -> DesktopResult<()> {
        let started = Instant::now();
        let mut last = self.focus_pixels()?;
        let differs = |px: &Vec<u8>| before.as_ref().is_none_or(|b| b != px);
        let mut changed = differs(&last);
        let mut still_since = Instant::now();
        loop {
            if changed && still_since.elapsed() >= CATCH_UP_QUIET {
                tracing::debug!(
                    waited_ms = started.elapsed().as_secs_f64() * 1e3,
                    "the focused window caught up; lending keycodes again"
                );
                return Ok(());
            }
            if started.elapsed() >= CATCH_UP_MAX {
                tracing::warn!(
                    "the focused window did not settle within {} ms of typing; lending keycodes again anyway",
                    CATCH_UP_MAX.as_millis()
                );
                return Ok(());
            }
            thread::sleep(CATCH_UP_POLL);
            let now = self.focus_pixels()?;
            if now != last {
                still_since = Instant::now();
                changed = changed || differs(&now);
                last = now;
            }
        }
    }

    /// Gives lent keycodes idle for [`GIVE_BACK_AFTER`] their empty mapping back.
    fn give_back_idle(&mut self) -> DesktopResult<()> {
        let Some(cutoff) = Instant::now().checked_sub(GIVE_BACK_AFTER) else {
            return Ok(());
        };
        let idle = match self.spares_if_known() {
            Some(spares) => spares.idle_since(cutoff),
            None => return Ok(()),
        };
        if idle.is_empty() {
            return Ok(());
        }
        let changes: Vec<(Keycode, Keysym)> = idle.iter().map(|&k| (k, 0)).collect();
        self.remap(&changes)?;
        for k in idle {
            self.spares()?.lend(k, 0);
        }
        Ok(())
    }

    /// Gives every lent keycode its empty mapping back, once the focused
    /// window has caught up with recent keys: `stephost run` exits right after
    /// its last step, and a key the client has not read yet would be read with
    /// the restored map and lost.
    pub(crate) fn give_back_all(&mut self) -> DesktopResult<()> {
        let lent = match self.spares_if_known() {
            Some(spares) => spares.lent_keycodes(),
            None => return Ok(()),
        };
        if lent.is_empty() {
            return Ok(());
        }
        if self.last_key_at.is_some_and(|t| t.elapsed() < REUSE_AFTER) {
            self.catch_up(None)?;
        }
        let changes: Vec<(Keycode, Keysym)> = lent.iter().map(|&k| (k, 0)).collect();
        self.remap(&changes)?;
        for k in lent {
            self.spares()?.lend(k, 0);
        }
        Ok(())
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
