//! Key names (`ctrl+a`, `Return`, `Page_Down`, `F5`) to W3C WebDriver key
//! values, and text to key actions.

use serde_json::{Value, json};

/// The WebDriver key value for a key name, or `None` when unknown. Names are
/// matched ignoring case, `_` and `-`, so xdotool-style (`BackSpace`,
/// `Page_Up`, `KP_Enter`) and DOM-style (`Backspace`, `PageUp`) both work.
pub(crate) fn key_value(name: &str) -> Option<String> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        // A single character types itself.
        return Some(c.to_string());
    }
    let norm: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    let code: u32 = match norm.as_str() {
        "cancel" => 0xE001,
        "help" => 0xE002,
        "backspace" | "bs" => 0xE003,
        "tab" => 0xE004,
        "clear" => 0xE005,
        "return" => 0xE006,
        "enter" | "kpenter" => 0xE007,
        "shift" | "shiftl" | "lshift" => 0xE008,
        "ctrl" | "control" | "controll" | "ctrll" | "lctrl" => 0xE009,
        "alt" | "altl" | "option" | "opt" => 0xE00A,
        "pause" => 0xE00B,
        "escape" | "esc" => 0xE00C,
        "space" | "spacebar" => 0xE00D,
        "pageup" | "pgup" | "prior" => 0xE00E,
        "pagedown" | "pgdn" | "next" => 0xE00F,
        "end" => 0xE010,
        "home" => 0xE011,
        "left" | "arrowleft" => 0xE012,
        "up" | "arrowup" => 0xE013,
        "right" | "arrowright" => 0xE014,
        "down" | "arrowdown" => 0xE015,
        "insert" | "ins" => 0xE016,
        "delete" | "del" => 0xE017,
        "semicolon" => 0xE018,
        "equals" | "equal" => 0xE019,
        "kp0" | "numpad0" => 0xE01A,
        "kp1" | "numpad1" => 0xE01B,
        "kp2" | "numpad2" => 0xE01C,
        "kp3" | "numpad3" => 0xE01D,
        "kp4" | "numpad4" => 0xE01E,
        "kp5" | "numpad5" => 0xE01F,
        "kp6" | "numpad6" => 0xE020,
        "kp7" | "numpad7" => 0xE021,
        "kp8" | "numpad8" => 0xE022,
        "kp9" | "numpad9" => 0xE023,
        "kpmultiply" | "multiply" => 0xE024,
        "kpadd" | "add" | "plus" => 0xE025,
        "kpsubtract" | "subtract" | "minus" => 0xE027,
        "kpdecimal" | "decimal" => 0xE028,
        "kpdivide" | "divide" => 0xE029,
        "meta" | "cmd" | "command" | "super" | "superl" | "win" | "windows" | "metal" => 0xE03D,
        "shiftr" | "rshift" => 0xE050,
        "controlr" | "ctrlr" | "rctrl" => 0xE051,
        "altr" | "ralt" | "altgr" => 0xE052,
        "metar" | "superr" => 0xE053,
        f if f.starts_with('f') => {
            let n: u32 = f[1..].parse().ok()?;
            if !(1..=12).contains(&n) {
                return None;
            }
            0xE031 + n - 1
        }
        _ => return None,
    };
    char::from_u32(code).map(String::from)
}

/// Whether a key value is a modifier (held across a combo).
fn is_modifier(value: &str) -> bool {
    matches!(
        value.chars().next().map(u32::from),
        Some(0xE008..=0xE00A | 0xE03D | 0xE050..=0xE053)
    )
}

/// Key actions for `combos`: space-separated combos such as `ctrl+a Delete`,
/// each pressed and released in turn. `Err` names the key that is unknown.
pub(crate) fn combo_actions(combos: &str) -> Result<Vec<Value>, String> {
    let mut actions = Vec::new();
    let words: Vec<&str> = combos.split_whitespace().collect();
    if words.is_empty() {
        return Err("no key given".into());
    }
    for word in words {
        // `ctrl++` presses ctrl and `+`: a trailing empty part is the plus key.
        let mut parts: Vec<&str> = word.split('+').collect();
        if word.ends_with("++") || word == "+" {
            parts.retain(|p| !p.is_empty());
            parts.push("+");
        }
        let mut values = Vec::new();
        for part in parts.iter().filter(|p| !p.is_empty()) {
            let value = key_value(part).ok_or_else(|| {
                format!("unknown key `{part}` in `{word}` (use names like ctrl, shift, alt, meta, Enter, Tab, Escape, Backspace, Delete, ArrowUp, PageDown, Home, F5, or a single character)")
            })?;
            values.push(value);
        }
        let (mods, keys): (Vec<&String>, Vec<&String>) = values
            .iter()
            .partition(|v| is_modifier(v) && values.len() > 1);
        for m in &mods {
            actions.push(json!({"type": "keyDown", "value": m}));
        }
        for k in &keys {
            actions.push(json!({"type": "keyDown", "value": k}));
            actions.push(json!({"type": "keyUp", "value": k}));
        }
        for m in mods.iter().rev() {
            actions.push(json!({"type": "keyUp", "value": m}));
        }
    }
    Ok(actions)
}

/// Key actions that type `text` character by character (a newline presses
/// Enter, a tab presses Tab).
pub(crate) fn text_actions(text: &str) -> Vec<Value> {
    let mut actions = Vec::with_capacity(text.len() * 2);
    for c in text.chars() {
        let value = match c {
            '\n' => "\u{E007}".to_owned(),
            '\t' => "\u{E004}".to_owned(),
            '\r' => continue,
            c => c.to_string(),
        };
        actions.push(json!({"type": "keyDown", "value": value}));
        actions.push(json!({"type": "keyUp", "value": value}));
    }
    actions
}

/// Modifier key values for a `modifiers` string such as `ctrl+shift`.
pub(crate) fn modifiers(text: &str) -> Result<Vec<String>, String> {
    text.split(['+', ' '])
        .filter(|p| !p.is_empty())
        .map(|p| {
            key_value(p)
                .filter(|v| is_modifier(v))
                .ok_or_else(|| format!("`{p}` is not a modifier (use ctrl, shift, alt or meta)"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_webdriver_keys() {
        assert_eq!(key_value("Return").as_deref(), Some("\u{E006}"));
        assert_eq!(key_value("page_down").as_deref(), Some("\u{E00F}"));
        assert_eq!(key_value("F5").as_deref(), Some("\u{E035}"));
        assert_eq!(key_value("a").as_deref(), Some("a"));
        assert!(key_value("F13").is_none());
        assert!(key_value("nokey").is_none());
    }

    #[test]
    fn combos_hold_modifiers_around_keys() {
        let actions = combo_actions("ctrl+a Delete").expect("valid");
        let kinds: Vec<&str> = actions
            .iter()
            .map(|a| a["type"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            kinds,
            ["keyDown", "keyDown", "keyUp", "keyUp", "keyDown", "keyUp"]
        );
        assert_eq!(actions[0]["value"], "\u{E009}");
        assert_eq!(actions[1]["value"], "a");
        assert!(combo_actions("ctrl+nokey").is_err());
        assert_eq!(combo_actions("shift").expect("lone modifier").len(), 2);
    }
}
