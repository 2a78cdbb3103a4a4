//! Key names and combos: `ctrl+shift+t` to modifier and key keysyms, characters
//! to keysyms, the normal form the blocked list is compared in, and which spare
//! keycode a character missing from the keyboard map is lent.
//!
//! Pure (no X connection), so every rule here has a unit test.

use std::fmt;
use std::ops::Range;
use std::time::Instant;

/// An X keysym.
pub(crate) type Keysym = u32;

/// A modifier key of a combo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Modifier {
    /// Control.
    Ctrl,
    /// Shift.
    Shift,
    /// Alt (also `meta` and `option`).
    Alt,
    /// Super (also `win`, `cmd`).
    Super,
    /// AltGr (ISO Level 3 shift).
    AltGr,
}

impl Modifier {
    /// The keysym pressed for it.
    pub(crate) fn keysym(self) -> Keysym {
        match self {
            Self::Ctrl => 0xffe3,  // Control_L
            Self::Shift => 0xffe1, // Shift_L
            Self::Alt => 0xffe9,   // Alt_L
            Self::Super => 0xffeb, // Super_L
            Self::AltGr => 0xfe03, // ISO_Level3_Shift
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Ctrl => "ctrl",
            Self::Shift => "shift",
            Self::Alt => "alt",
            Self::Super => "super",
            Self::AltGr => "altgr",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "ctrl" | "control" | "ctl" => Self::Ctrl,
            "shift" => Self::Shift,
            "alt" | "meta" | "option" | "opt" => Self::Alt,
            "super" | "win" | "windows" | "cmd" | "command" | "logo" => Self::Super,
            "altgr" | "alt_gr" | "iso_level3_shift" => Self::AltGr,
            _ => return None,
        })
    }
}

/// A parsed combo: modifiers (sorted, no duplicates) and one key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Combo {
    /// Modifiers held while the key is pressed.
    pub(crate) modifiers: Vec<Modifier>,
    /// The key's keysym (lower-case for letters).
    pub(crate) key: Keysym,
}

impl fmt::Display for Combo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for m in &self.modifiers {
            write!(f, "{}+", m.name())?;
        }
        match name_of(self.key) {
            Some(name) => write!(f, "{name}"),
            None => match char::from_u32(self.key).filter(|c| !c.is_control()) {
                Some(c) if self.key < 0x100 => write!(f, "{c}"),
                _ => write!(f, "0x{:x}", self.key),
            },
        }
    }
}

/// A combo that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{combo}` is not a key combo: {reason} (write e.g. `ctrl+shift+t`, `alt+f4`, `Return`)")]
pub struct BadCombo {
    combo: String,
    reason: String,
}

/// Named keys, lower-case, with their keysyms. The first name of a keysym is how
/// it is printed.
const NAMED: &[(&str, Keysym)] = &[
    ("return", 0xff0d),
    ("enter", 0xff0d),
    ("tab", 0xff09),
    ("escape", 0xff1b),
    ("esc", 0xff1b),
    ("space", 0x20),
    ("backspace", 0xff08),
    ("delete", 0xffff),
    ("del", 0xffff),
    ("insert", 0xff63),
    ("ins", 0xff63),
    ("home", 0xff50),
    ("end", 0xff57),
    ("pageup", 0xff55),
    ("page_up", 0xff55),
    ("pgup", 0xff55),
    ("prior", 0xff55),
    ("pagedown", 0xff56),
    ("page_down", 0xff56),
    ("pgdn", 0xff56),
    ("next", 0xff56),
    ("left", 0xff51),
    ("up", 0xff52),
    ("right", 0xff53),
    ("down", 0xff54),
    ("menu", 0xff67),
    ("print", 0xff61),
    ("printscreen", 0xff61),
    ("pause", 0xff13),
    ("capslock", 0xffe5),
    ("caps_lock", 0xffe5),
    ("numlock", 0xff7f),
    ("num_lock", 0xff7f),
    ("scrolllock", 0xff14),
    ("scroll_lock", 0xff14),
    ("kp_enter", 0xff8d),
    ("plus", 0x2b),
    ("minus", 0x2d),
    ("comma", 0x2c),
    ("period", 0x2e),
    ("slash", 0x2f),
    ("backslash", 0x5c),
    ("semicolon", 0x3b),
    ("apostrophe", 0x27),
    ("grave", 0x60),
    ("equal", 0x3d),
    ("bracketleft", 0x5b),
    ("bracketright", 0x5d),
];

fn name_of(keysym: Keysym) -> Option<String> {
    if (0xffbe..=0xffd5).contains(&keysym) {
        return Some(format!("f{}", keysym - 0xffbe + 1));
    }
    if keysym == 0x20 {
        return Some("space".into());
    }
    NAMED
        .iter()
        .find(|(_, k)| *k == keysym && keysym > 0xff)
        .map(|(n, _)| (*n).to_owned())
}

/// The keysym of one key name: a named key, `f1`..`f24`, or one character.
fn key_keysym(name: &str) -> Option<Keysym> {
    let lower = name.to_lowercase();
    if let Some((_, k)) = NAMED.iter().find(|(n, _)| *n == lower) {
        return Some(*k);
    }
    if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u32>().ok())
        && (1..=24).contains(&n)
    {
        return Some(0xffbe + n - 1);
    }
    let mut chars = name.chars();
    match (chars.next(), chars.next()) {
        // Letters are named by their lower-case keysym; shift is a modifier.
        (Some(c), None) => Some(char_keysym(c.to_lowercase().next().unwrap_or(c))),
        _ => None,
    }
}

/// Parses `ctrl+shift+t`. A literal `+` key is written `plus` or as the last
/// part (`ctrl++`).
pub(crate) fn parse_combo(text: &str) -> Result<Combo, BadCombo> {
    let bad = |reason: &str| BadCombo {
        combo: text.to_owned(),
        reason: reason.to_owned(),
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(bad("it is empty"));
    }
    let (mods_part, key_part) = if let Some(head) = trimmed.strip_suffix("++") {
        (head, "+")
    } else if trimmed == "+" {
        ("", "+")
    } else {
        match trimmed.rsplit_once('+') {
            Some((head, key)) => (head, key),
            None => ("", trimmed),
        }
    };
    let mut modifiers = Vec::new();
    for part in mods_part.split('+').filter(|p| !p.is_empty()) {
        let part = part.trim().to_lowercase();
        let m = Modifier::parse(&part).ok_or_else(|| {
            bad(&format!(
                "`{part}` is not a modifier (ctrl, shift, alt, super, altgr)"
            ))
        })?;
        if !modifiers.contains(&m) {
            modifiers.push(m);
        }
    }
    let key_part = key_part.trim();
    if key_part.is_empty() {
        return Err(bad("it has no key after the modifiers"));
    }
    // A lone modifier (`shift`) is a key of its own.
    let key = match Modifier::parse(&key_part.to_lowercase()) {
        Some(m) => m.keysym(),
        None => key_keysym(key_part).ok_or_else(|| bad(&format!("unknown key `{key_part}`")))?,
    };
    modifiers.sort();
    Ok(Combo { modifiers, key })
}

/// The keysym that types `c`: Latin-1 maps to itself, control characters to
/// their keys, everything else to the Unicode keysym range.
pub(crate) fn char_keysym(c: char) -> Keysym {
    match c {
        '\n' | '\r' => 0xff0d,
        '\t' => 0xff09,
        '\u{8}' => 0xff08,
        '\u{1b}' => 0xff1b,
        c if (' '..='~').contains(&c) || ('\u{a0}'..='\u{ff}').contains(&c) => c as u32,
        c => 0x0100_0000 + c as u32,
    }
}

/// The operator's blocked combos, compared in normal form (so `alt+ctrl+Del`
/// matches `ctrl+alt+delete`).
#[derive(Debug, Clone, Default)]
pub(crate) struct BlockedKeys(Vec<Combo>);

impl BlockedKeys {
    /// Parses the configured list.
    pub(crate) fn parse(list: &[String]) -> Result<Self, BadCombo> {
        list.iter()
            .map(|c| parse_combo(c))
            .collect::<Result<_, _>>()
            .map(Self)
    }

    /// Whether `combo` is blocked.
    pub(crate) fn blocks(&self, combo: &Combo) -> bool {
        self.0.iter().any(|b| b == combo)
    }
}

/// One spare keycode: what it is lent to (0: nothing) and when it was last
/// pressed.
#[derive(Debug, Clone, PartialEq)]
struct Slot {
    keycode: u8,
    keysym: Keysym,
    pressed_at: Option<Instant>,
}

/// The keycodes with no keysym of their own, lent to characters the keyboard
/// map lacks.
///
/// Why lending needs care: Xlib looks a key event up in the map as it is when
/// the client *reads* the event, not as it was when the key was pressed, and a
/// client may be seconds behind (500 characters into a Tk entry). A keycode
/// remapped while presses of it still wait in a client's queue retypes them as
/// the new character. So a keycode keeps its keysym after use (the next call
/// typing the same character needs no remap at all), keycodes are lent least
/// recently pressed first, and the caller remaps only once the client has
/// caught up (`input.rs`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spares {
    slots: Vec<Slot>,
}

/// One keycode to remap, to `keysym`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Lend {
    pub(crate) keycode: u8,
    pub(crate) keysym: Keysym,
}

impl Spares {
    /// A pool of `keycodes`, all free.
    pub(crate) fn new(keycodes: Vec<u8>) -> Self {
        Self {
            slots: keycodes
                .into_iter()
                .map(|keycode| Slot {
                    keycode,
                    keysym: 0,
                    pressed_at: None,
                })
                .collect(),
        }
    }

    /// How many distinct missing keysyms can be mapped at once.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Every spare keycode, lent or not (the keyboard map's own lookups skip them).
    pub(crate) fn keycodes(&self) -> Vec<u8> {
        self.slots.iter().map(|s| s.keycode).collect()
    }

    /// The keycode lent to `keysym`, if any.
    pub(crate) fn lent(&self, keysym: Keysym) -> Option<u8> {
        self.slots
            .iter()
            .find(|s| s.keysym == keysym && keysym != 0)
            .map(|s| s.keycode)
    }

    /// The keycodes lent to something.
    pub(crate) fn lent_keycodes(&self) -> Vec<u8> {
        self.slots
            .iter()
            .filter(|s| s.keysym != 0)
            .map(|s| s.keycode)
            .collect()
    }

    /// What to remap so every keysym of `wanted` (distinct, at most
    /// [`Spares::capacity`]) has a keycode: keysyms already lent keep theirs;
    /// the others take a free keycode, else the one pressed least recently
    /// among those `wanted` does not need. Changes nothing until
    /// [`Spares::lend`].
    pub(crate) fn plan(&self, wanted: &[Keysym]) -> Vec<Lend> {
        let mut taken: Vec<u8> = wanted.iter().filter_map(|&k| self.lent(k)).collect();
        let mut out = Vec::new();
        for &keysym in wanted {
            if self.lent(keysym).is_some() || out.iter().any(|l: &Lend| l.keysym == keysym) {
                continue;
            }
            let candidate = self
                .slots
                .iter()
                .filter(|s| !taken.contains(&s.keycode))
                // Free first (never pressed sorts first too), then least recently pressed.
                .min_by_key(|s| (s.keysym != 0, s.pressed_at));
            let Some(slot) = candidate else { break };
            taken.push(slot.keycode);
            out.push(Lend {
                keycode: slot.keycode,
                keysym,
            });
        }
        out
    }

    /// Records that `keycode` now maps `keysym` (0: given back).
    pub(crate) fn lend(&mut self, keycode: u8, keysym: Keysym) {
        if let Some(slot) = self.slots.iter_mut().find(|s| s.keycode == keycode) {
            slot.keysym = keysym;
            if keysym == 0 {
                slot.pressed_at = None;
            }
        }
    }

    /// Records a press of `keycode`.
    pub(crate) fn pressed(&mut self, keycode: u8, at: Instant) {
        if let Some(slot) = self.slots.iter_mut().find(|s| s.keycode == keycode) {
            slot.pressed_at = Some(at);
        }
    }

    /// Lent keycodes not pressed since `cutoff`: safe to give back.
    pub(crate) fn idle_since(&self, cutoff: Instant) -> Vec<u8> {
        self.slots
            .iter()
            .filter(|s| s.keysym != 0 && s.pressed_at.is_none_or(|t| t < cutoff))
            .map(|s| s.keycode)
            .collect()
    }
}

/// Cuts `keysyms` into runs that each need at most `capacity` distinct keysyms
/// for which `missing` holds, so no keycode is lent twice within a run.
/// `capacity` 0 gives one run of everything (the caller fails on the first
/// missing keysym).
pub(crate) fn runs(
    keysyms: &[Keysym],
    missing: impl Fn(Keysym) -> bool,
    capacity: usize,
) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut distinct: Vec<Keysym> = Vec::new();
    for (i, &k) in keysyms.iter().enumerate() {
        if capacity > 0 && missing(k) && !distinct.contains(&k) {
            if distinct.len() == capacity {
                out.push(start..i);
                start = i;
                distinct.clear();
            }
            distinct.push(k);
        }
    }
    if start < keysyms.len() || out.is_empty() {
        out.push(start..keysyms.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn combo(text: &str) -> Combo {
        parse_combo(text).expect("parses")
    }

    #[test]
    fn combos_parse_to_sorted_modifiers_and_a_keysym() {
        let c = combo("ctrl+shift+t");
        assert_eq!(c.modifiers, [Modifier::Ctrl, Modifier::Shift]);
        assert_eq!(c.key, u32::from(b't'));
        assert_eq!(combo("Shift+Ctrl+T"), c, "order and case do not matter");
        assert_eq!(combo("alt+F4").key, 0xffc1);
        assert_eq!(combo("Return").key, 0xff0d);
        assert_eq!(combo("ctrl++").key, u32::from(b'+'));
        assert_eq!(combo("ctrl+plus").key, u32::from(b'+'));
        assert_eq!(combo("shift").key, 0xffe1);
        assert_eq!(combo("ctrl+alt+del").to_string(), "ctrl+alt+delete");
    }

    #[test]
    fn bad_combos_say_why() {
        for (text, why) in [
            ("", "empty"),
            ("ctrl+", "no key"),
            ("hyper+x", "not a modifier"),
            ("ctrl+nosuchkey", "unknown key"),
        ] {
            let err = parse_combo(text).expect_err(text).to_string();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn blocked_list_matches_in_normal_form() {
        let blocked = BlockedKeys::parse(&["ctrl+alt+backspace".into(), "ctrl+alt+delete".into()])
            .expect("parses");
        assert!(blocked.blocks(&combo("alt+ctrl+BackSpace")));
        assert!(blocked.blocks(&combo("ctrl+alt+del")));
        assert!(!blocked.blocks(&combo("ctrl+backspace")));
    }

    #[test]
    fn characters_map_to_keysyms() {
        assert_eq!(char_keysym('a'), 0x61);
        assert_eq!(char_keysym('é'), 0xe9);
        assert_eq!(char_keysym('\n'), 0xff0d);
        assert_eq!(char_keysym('€'), 0x0100_20ac);
    }

    #[test]
    fn runs_cut_before_the_pool_overflows() {
        let missing = |k: Keysym| k >= 0x100;
        // a, X1, X2, b, X1, X3 with room for 2: X3 starts a new run.
        let keys = [0x61, 0x101, 0x102, 0x62, 0x101, 0x103];
        assert_eq!(runs(&keys, missing, 2), vec![0..5, 5..6]);
        assert_eq!(runs(&keys, missing, 3), vec![0..6]);
        assert_eq!(runs(&[], missing, 3), vec![0..0]);
        assert_eq!(runs(&keys, missing, 0), vec![0..6]);
    }

    #[test]
    fn spares_keep_lent_keysyms_and_lend_the_least_recently_pressed() {
        let mut pool = Spares::new(vec![90, 91, 92]);
        let plan = pool.plan(&[0x101, 0x102]);
        assert_eq!(
            plan.iter().map(|l| l.keysym).collect::<Vec<_>>(),
            vec![0x101, 0x102]
        );
        for l in &plan {
            pool.lend(l.keycode, l.keysym);
        }
        let (k1, k2) = (
            pool.lent(0x101).expect("lent"),
            pool.lent(0x102).expect("lent"),
        );
        let t0 = Instant::now();
        pool.pressed(k1, t0);
        pool.pressed(k2, t0 + std::time::Duration::from_millis(5));
        // 0x101 is still lent: nothing to do for it.
        assert!(pool.plan(&[0x101]).is_empty());
        // Two new keysyms: the free keycode, then the older of the lent ones
        // that is not wanted; 0x102 stays because it is wanted.
        let plan = pool.plan(&[0x102, 0x103, 0x104]);
        assert_eq!(plan.len(), 2);
        assert!(
            ![k1, k2].contains(&plan[0].keycode),
            "the free keycode first"
        );
        assert_eq!(plan[1].keycode, k1, "then the least recently pressed");
        assert_eq!(
            pool.idle_since(t0 + std::time::Duration::from_millis(1)),
            vec![k1]
        );
        pool.lend(k1, 0);
        assert_eq!(pool.lent_keycodes(), vec![k2]);
    }
}
