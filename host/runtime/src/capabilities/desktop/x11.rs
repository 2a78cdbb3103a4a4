//! The host's own X connection (x11rb, pure Rust): atoms, properties, the
//! keyboard map, and a round trip to make sure requests were processed.

use x11rb::connection::{Connection as _, RequestConnection as _};
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, Keycode, Window};
use x11rb::protocol::xtest::{self, ConnectionExt as _};
use x11rb::rust_connection::RustConnection;

use super::error::{DesktopFailure, DesktopResult};
use super::keys::Keysym;

x11rb::atom_manager! {
    /// Atoms the desktop capabilities read and send.
    pub(crate) Atoms: AtomsCookie {
        _NET_SUPPORTING_WM_CHECK,
        _NET_CLIENT_LIST,
        _NET_CLIENT_LIST_STACKING,
        _NET_ACTIVE_WINDOW,
        _NET_WM_NAME,
        _NET_WM_PID,
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
                let syms = self.of(keycode);
                let at = match (level, syms) {
                    (0, [first, ..]) => *first,
                    // A second level left empty means "upper case of the first".
                    (1, [first, 0, ..]) => upper_keysym(*first),
                    (1, [_, second, ..]) => *second,
                    _ => 0,
                };
                if at == keysym && at != 0 {
                    return Some((keycode, level == 1));
                }
            }
        }
        None
    }

    /// Keycodes with no keysym at all: free to remap for a moment.
    pub(crate) fn spare_keycodes(&self) -> Vec<Keycode> {
        (self.min_keycode..=self.max_keycode)
            .rev()
            .filter(|&k| self.of(k).iter().all(|&s| s == 0))
            .collect()
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
    keymap: Option<Keymap>,
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
            keymap: None,
        })
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

    /// Sets the keysyms of one keycode (both levels to `keysym`, or all empty).
    pub(crate) fn remap(&mut self, keycode: Keycode, keysym: Keysym) -> DesktopResult<()> {
        let per = self.keymap()?.per_keycode;
        let mut syms = vec![0u32; usize::from(per)];
        if keysym != 0 {
            for s in syms.iter_mut().take(2) {
                *s = keysym;
            }
        }
        self.conn.change_keyboard_mapping(1, keycode, per, &syms)?;
        self.sync()?;
        if let Some(map) = &mut self.keymap {
            let per = usize::from(per);
            let start = usize::from(keycode - map.min_keycode) * per;
            if let Some(slot) = map.keysyms.get_mut(start..start + per) {
                slot.copy_from_slice(&syms);
            }
        }
        Ok(())
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
    }
}
