//! The host's own X connection (x11rb, pure Rust): atoms, properties, the
//! keyboard map with the spare keycodes lent to typed characters, and a round
//! trip to make sure requests were processed.

use std::collections::HashMap;
use std::time::Instant;

use x11rb::connection::{Connection as _, RequestConnection as _};
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, GetPropertyReply, ImageFormat, Keycode, Window,
};
use x11rb::protocol::xtest::{self, ConnectionExt as _};
use x11rb::rust_connection::RustConnection;

use super::Rect;
use super::error::{DesktopFailure, DesktopResult};
use super::input::Pacing;
use super::keys::{Keysym, Spares};

x11rb::atom_manager! {
    /// Atoms the desktop capabilities read and send.
    pub(crate) Atoms: AtomsCookie {
        _NET_SUPPORTING_WM_CHECK,
        _NET_CLIENT_LIST,
        _NET_CLIENT_LIST_STACKING,
        _NET_ACTIVE_WINDOW,
        _NET_WM_NAME,
        _NET_WM_PID,
        _NET_FRAME_EXTENTS,
        WM_STATE,
        UTF8_STRING,
    }
}

/// The keyboard map as the server holds it: `keysyms_per_keycode` keysyms for
/// each keycode from `min_keycode` on.
pub(crate) struct Keymap {
    pub(crate) min_keycode: Keycode,
    pub(crate) max_keycode: Keycode,
    pub(crate) per_keycode: u8,
    pub(crate) keysyms: Vec<Keysym>,
}

impl Keymap {
    /// The keysyms of one keycode.
    pub(crate) fn of(&self, keycode: Keycode) -> &[Keysym] {
        let per = usize::from(self.per_keycode);
        let start = usize::from(keycode.saturating_sub(self.min_keycode)) * per;
        self.keysyms.get(start..start + per).unwrap_or(&[])
    }

    /// Where `keysym` sits: its keycode and whether Shift is needed. Only the
    /// first two levels count: the others need Mode_switch or AltGr, whose
    /// modifiers differ between layouts.
    pub(crate) fn find(&self, keysym: Keysym) -> Option<(Keycode, bool)> {
        for level in 0..2usize {
            for keycode in self.min_keycode..=self.max_keycode {
                let at = level_sym(self.of(keycode), level);
                if at == keysym && at != 0 {
                    return Some((keycode, level == 1));
                }
            }
        }
        None
    }

    /// Every keysym of the first two levels with where it sits, as
    /// [`Keymap::find`] answers, passing over `skip`: one table for a whole
    /// text instead of a scan per character.
    pub(crate) fn index_except(&self, skip: &[Keycode]) -> HashMap<Keysym, (Keycode, bool)> {
        let mut out = HashMap::new();
        for level in 0..2usize {
            for keycode in self.min_keycode..=self.max_keycode {
                if skip.contains(&keycode) {
                    continue;
                }
                let at = level_sym(self.of(keycode), level);
                if at != 0 {
                    out.entry(at).or_insert((keycode, level == 1));
                }
            }
        }
        out
    }

    /// Keycodes with no keysym at all: free to remap for a moment.
    pub(crate) fn spare_keycodes(&self) -> Vec<Keycode> {
        (self.min_keycode..=self.max_keycode)
            .rev()
            .filter(|&k| self.of(k).iter().all(|&s| s == 0))
            .collect()
    }
}

/// The keysym a keycode's `syms` give at `level` (0 or 1); 0 for none.
fn level_sym(syms: &[Keysym], level: usize) -> Keysym {
    match (level, syms) {
        (0, [first, ..]) => *first,
        // A second level left empty means "upper case of the first".
        (1, [first, 0, ..]) => upper_keysym(*first),
        (1, [_, second, ..]) => *second,
        _ => 0,
    }
}

/// Upper case of a Latin-1 letter keysym (what X assumes for an empty level 2).
fn upper_keysym(keysym: Keysym) -> Keysym {
    match keysym {
        0x61..=0x7a => keysym - 0x20,
        0xe0..=0xfe if keysym != 0xf7 => keysym - 0x20,
        other => other,
    }
}

/// One X connection with what the capabilities need from it.
pub(crate) struct X11 {
    pub(crate) conn: RustConnection,
    pub(crate) root: Window,
    pub(crate) atoms: Atoms,
    pub(crate) screen_width: u16,
    pub(crate) screen_height: u16,
    /// How pointer input is paced (the operator's `[desktop]` settings).
    pub(crate) pacing: Pacing,
    keymap: Option<Keymap>,
    /// The spare keycodes and what they are lent to, kept across calls so a
    /// keycode just typed is the last to be lent again.
    spares: Option<Spares>,
    /// When the last key was sent: a client may still be reading keys for a
    /// while after.
    pub(crate) last_key_at: Option<Instant>,
}

impl X11 {
    /// Connects to `$DISPLAY` and checks for XTEST.
    pub(crate) fn connect() -> DesktopResult<Self> {
        let (conn, screen_num) = RustConnection::connect(None)?;
        let screen = conn.setup().roots.get(screen_num).ok_or_else(|| {
            DesktopFailure::Unsupported(format!("X screen {screen_num} does not exist"))
        })?;
        let (root, screen_width, screen_height) =
            (screen.root, screen.width_in_pixels, screen.height_in_pixels);
        if conn
            .extension_information(xtest::X11_EXTENSION_NAME)?
            .is_none()
        {
            return Err(DesktopFailure::Unsupported(
                "the X server has no XTEST extension, which synthetic input needs".into(),
            ));
        }
        conn.xtest_get_version(2, 2)?.reply()?;
        let atoms = Atoms::new(&conn)?.reply()?;
        tracing::debug!(
            root,
            screen_width,
            screen_height,
            "connected to the X display"
        );
        Ok(Self {
            conn,
            root,
            atoms,
            screen_width,
            screen_height,
            pacing: Pacing::default(),
            keymap: None,
            spares: None,
            last_key_at: None,
        })
    }

    /// The connection with the operator's pointer pacing.
    pub(crate) fn paced(mut self, pacing: Pacing) -> Self {
        self.pacing = pacing;
        self
    }

    /// The screen as a rectangle.
    pub(crate) fn screen(&self) -> Rect {
        Rect {
            x: 0,
            y: 0,
            width: u32::from(self.screen_width),
            height: u32::from(self.screen_height),
        }
    }

    /// The pixels of `area` (clipped to the screen) as the server holds them:
    /// for telling whether a window is still being redrawn, not for showing.
    pub(crate) fn pixels(&self, area: Rect) -> DesktopResult<Vec<u8>> {
        let Some(r) = area.intersect(&self.screen()) else {
            return Ok(Vec::new());
        };
        // Inside the screen, so the casts are exact.
        let reply = self
            .conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                self.root,
                r.x as i16,
                r.y as i16,
                r.width as u16,
                r.height as u16,
                !0,
            )?
            .reply()?;
        Ok(reply.data)
    }

    /// Drops the events queued on this connection: it selects none, but every
    /// client gets `MappingNotify`, and x11rb keeps what nobody reads.
    pub(crate) fn drain_events(&self) -> DesktopResult<()> {
        while self.conn.poll_for_event()?.is_some() {}
        Ok(())
    }

    /// Waits until the server has processed every request sent so far.
    pub(crate) fn sync(&self) -> DesktopResult<()> {
        self.conn.get_input_focus()?.reply()?;
        Ok(())
    }

    /// A property as 32-bit values (windows, cardinals); empty when unset.
    pub(crate) fn prop32(&self, window: Window, atom: u32) -> DesktopResult<Vec<u32>> {
        let reply = self
            .conn
            .get_property(false, window, atom, AtomEnum::ANY, 0, 4096)?
            .reply()?;
        Ok(reply.value32().map(Iterator::collect).unwrap_or_default())
    }

    /// A request for a property's first bytes (enough to tell it is set),
    /// sent without waiting, to ask about many windows in one round trip.
    pub(crate) fn prop_cookie(
        &self,
        window: Window,
        atom: u32,
    ) -> DesktopResult<x11rb::cookie::Cookie<'_, RustConnection, GetPropertyReply>> {
        Ok(self
            .conn
            .get_property(false, window, atom, AtomEnum::ANY, 0, 1)?)
    }

    /// A property as bytes; empty when unset.
    pub(crate) fn prop_bytes(&self, window: Window, atom: u32) -> DesktopResult<Vec<u8>> {
        let reply = self
            .conn
            .get_property(false, window, atom, AtomEnum::ANY, 0, 16 * 1024)?
            .reply()?;
        Ok(reply.value)
    }

    /// A text property: UTF-8 for `_NET_*` names, Latin-1 for the ICCCM ones.
    pub(crate) fn prop_text(&self, window: Window, atom: u32, utf8: bool) -> DesktopResult<String> {
        let bytes = self.prop_bytes(window, atom)?;
        let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
        Ok(if utf8 {
            String::from_utf8_lossy(bytes).into_owned()
        } else {
            bytes.iter().map(|&b| char::from(b)).collect()
        })
    }

    /// The keyboard map, fetched once and again after a change.
    pub(crate) fn keymap(&mut self) -> DesktopResult<&Keymap> {
        if self.keymap.is_none() {
            let setup = self.conn.setup();
            let (min, max) = (setup.min_keycode, setup.max_keycode);
            let reply = self
                .conn
                .get_keyboard_mapping(min, max - min + 1)?
                .reply()?;
            self.keymap = Some(Keymap {
                min_keycode: min,
                max_keycode: max,
                per_keycode: reply.keysyms_per_keycode,
                keysyms: reply.keysyms,
            });
        }
        self.keymap
            .as_ref()
            .ok_or_else(|| DesktopFailure::Failed("keyboard map unavailable".into()))
    }

    /// The spare keycodes (those with no keysym when first asked), fetched once.
    pub(crate) fn spares(&mut self) -> DesktopResult<&mut Spares> {
        if self.spares.is_none() {
            let free = self.keymap()?.spare_keycodes();
            self.spares = Some(Spares::new(free));
        }
        self.spares
            .as_mut()
            .ok_or_else(|| DesktopFailure::Failed("spare keycodes unavailable".into()))
    }

    /// The spare keycodes, if they were ever asked for (none is lent otherwise).
    pub(crate) fn spares_if_known(&mut self) -> Option<&mut Spares> {
        self.spares.as_mut()
    }

    /// Sets the keysyms of each keycode (both levels to the keysym, or all
    /// empty for 0) and waits until the server has applied every change, so the
    /// `MappingNotify` of each has gone out before any key is pressed on it.
    pub(crate) fn remap(&mut self, changes: &[(Keycode, Keysym)]) -> DesktopResult<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let per = self.keymap()?.per_keycode;
        for &(keycode, keysym) in changes {
            let syms = Self::level_syms(per, keysym);
            self.conn.change_keyboard_mapping(1, keycode, per, &syms)?;
        }
        self.sync()?;
        self.drain_events()?;
        if let Some(map) = &mut self.keymap {
            let per = usize::from(per);
            for &(keycode, keysym) in changes {
                let start = usize::from(keycode.saturating_sub(map.min_keycode)) * per;
                if let Some(slot) = map.keysyms.get_mut(start..start + per) {
                    slot.copy_from_slice(&Self::level_syms(map.per_keycode, keysym));
                }
            }
        }
        Ok(())
    }

    fn level_syms(per: u8, keysym: Keysym) -> Vec<Keysym> {
        let mut syms = vec![0u32; usize::from(per)];
        if keysym != 0 {
            for s in syms.iter_mut().take(2) {
                *s = keysym;
            }
        }
        syms
    }
}

impl Drop for X11 {
    /// Gives lent keycodes their empty mapping back (`give_back_all`). Best
    /// effort: the host is going away, and a keycode left lent only shrinks
    /// the next host's pool.
    fn drop(&mut self) {
        if let Err(e) = self.give_back_all() {
            tracing::debug!("could not give the spare keycodes back: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keymap_finds_levels_and_spares() {
        // keycode 10: a/A, 11: 1/!, 12: nothing, 13: b/(empty).
        let map = Keymap {
            min_keycode: 10,
            max_keycode: 13,
            per_keycode: 2,
            keysyms: vec![0x61, 0x41, 0x31, 0x21, 0, 0, 0x62, 0],
        };
        assert_eq!(map.find(0x61), Some((10, false)));
        assert_eq!(map.find(0x41), Some((10, true)));
        assert_eq!(map.find(0x21), Some((11, true)));
        assert_eq!(
            map.find(0x42),
            Some((13, true)),
            "empty level 2 is upper case"
        );
        assert_eq!(map.find(0xe9), None);
        assert_eq!(map.spare_keycodes(), vec![12]);
        let index = map.index_except(&[]);
        for keysym in [0x61, 0x41, 0x21, 0x42, 0x31] {
            assert_eq!(
                index.get(&keysym).copied(),
                map.find(keysym),
                "0x{keysym:x}"
            );
        }
        assert_eq!(map.index_except(&[10]).get(&0x61), None);
    }
}
