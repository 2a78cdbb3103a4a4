//! Python's `str` methods whose exact behaviour keywords depend on: `split`/`rsplit`
//! (whitespace runs versus an explicit separator, `maxsplit`), `splitlines`, `strip` with
//! characters, `title`, `islower`/`isupper`, `replace` with a count.

/// Python's `str.isspace()` for one character.
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{1c}'..='\u{1f}')
}

/// `s.split(sep, maxsplit)`; `maxsplit < 0` means no limit. `Err` for an empty separator.
pub fn split(s: &str, sep: Option<&str>, maxsplit: i64) -> Result<Vec<String>, String> {
    let limit = usize::try_from(maxsplit).ok();
    match sep {
        Some("") => Err("empty separator".into()),
        Some(sep) => {
            let mut out: Vec<String> = Vec::new();
            let mut rest = s;
            while limit.is_none_or(|l| out.len() < l) {
                match rest.find(sep) {
                    Some(i) => {
                        out.push(rest[..i].to_string());
                        rest = &rest[i + sep.len()..];
                    }
                    None => break,
                }
            }
            out.push(rest.to_string());
            Ok(out)
        }
        None => {
            let mut out = Vec::new();
            let mut rest = s.trim_start_matches(is_space);
            while !rest.is_empty() {
                if limit.is_some_and(|l| out.len() >= l) {
                    out.push(rest.to_string());
                    break;
                }
                let end = rest.find(is_space).unwrap_or(rest.len());
                out.push(rest[..end].to_string());
                rest = rest[end..].trim_start_matches(is_space);
            }
            Ok(out)
        }
    }
}

/// `s.rsplit(sep, maxsplit)`.
pub fn rsplit(s: &str, sep: Option<&str>, maxsplit: i64) -> Result<Vec<String>, String> {
    let limit = usize::try_from(maxsplit).ok();
    match sep {
        Some("") => Err("empty separator".into()),
        Some(sep) => {
            let mut out: Vec<String> = Vec::new();
            let mut rest = s;
            while limit.is_none_or(|l| out.len() < l) {
                match rest.rfind(sep) {
                    Some(i) => {
                        out.push(rest[i + sep.len()..].to_string());
                        rest = &rest[..i];
                    }
                    None => break,
                }
            }
            out.push(rest.to_string());
            out.reverse();
            Ok(out)
        }
        None => {
            let mut out = Vec::new();
            let mut rest = s.trim_end_matches(is_space);
            while !rest.is_empty() {
                if limit.is_some_and(|l| out.len() >= l) {
                    out.push(rest.to_string());
                    break;
                }
                let start = rest.rfind(is_space).map_or(0, |i| {
                    i + rest[i..].chars().next().map_or(1, char::len_utf8)
                });
                out.push(rest[start..].to_string());
                rest = rest[..start].trim_end_matches(is_space);
            }
            out.reverse();
            Ok(out)
        }
    }
}

/// Python's line boundaries for `splitlines`.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{b}'
            | '\u{c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// `s.splitlines(keepends)`.
pub fn splitlines(s: &str, keepends: bool) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut line = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_line_break(c) {
            let mut end = c.to_string();
            if c == '\r' && chars.get(i + 1) == Some(&'\n') {
                end.push('\n');
                i += 1;
            }
            if keepends {
                line.push_str(&end);
            }
            out.push(std::mem::take(&mut line));
        } else {
            line.push(c);
        }
        i += 1;
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}

/// `s.strip(chars)` / `lstrip` / `rstrip`; `None` strips whitespace.
pub fn strip(s: &str, chars: Option<&str>, left: bool, right: bool) -> String {
    let matches = |c: char| match chars {
        Some(set) => set.contains(c),
        None => is_space(c),
    };
    let mut t = s;
    if left {
        t = t.trim_start_matches(matches);
    }
    if right {
        t = t.trim_end_matches(matches);
    }
    t.to_string()
}

/// `s.replace(old, new, count)`; `count < 0` replaces all.
pub fn replace(s: &str, old: &str, new: &str, count: i64) -> String {
    let Ok(limit) = usize::try_from(count) else {
        if old.is_empty() {
            return replace_empty(s, new, usize::MAX);
        }
        return s.replace(old, new);
    };
    if old.is_empty() {
        return replace_empty(s, new, limit);
    }
    s.replacen(old, new, limit)
}

/// Python inserts `new` around every character when `old` is empty.
fn replace_empty(s: &str, new: &str, limit: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    for c in s.chars() {
        if n < limit {
            out.push_str(new);
            n += 1;
        }
        out.push(c);
    }
    if n < limit {
        out.push_str(new);
    }
    out
}

/// `s.casefold()`: Unicode full case folding (`Straße` and `STRASSE` fold alike), which
/// RF's `ignore_case` and name normalization use where `lower()` would keep `ß`.
pub fn casefold(s: &str) -> String {
    caseless::default_case_fold_str(s)
}

/// NFC normalization, as RF's `safe_str` applies to every string it shows or compares
/// as text (`A` + combining ring and `Å` are one string there).
pub fn nfc(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    if unicode_normalization::is_nfc_quick(s.chars()) == unicode_normalization::IsNormalized::Yes {
        return s.to_string();
    }
    s.nfc().collect()
}

/// `s.title()`: the first letter of every run of letters upper case, the rest lower.
pub fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_cased = false;
    for c in s.chars() {
        if prev_cased {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        prev_cased = c.is_alphabetic();
    }
    out
}

/// `s.capitalize()`.
pub fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

/// `s.islower()`: at least one cased character and no upper-case ones.
pub fn is_lower(s: &str) -> bool {
    s.chars().any(char::is_lowercase) && !s.chars().any(char::is_uppercase)
}

/// `s.isupper()`.
pub fn is_upper(s: &str) -> bool {
    s.chars().any(char::is_uppercase) && !s.chars().any(char::is_lowercase)
}

/// The character index of `sub` in `s` (Python counts characters, not bytes).
pub fn find(s: &str, sub: &str) -> Option<usize> {
    s.find(sub).map(|b| s[..b].chars().count())
}

/// The last character index of `sub` in `s`.
pub fn rfind(s: &str, sub: &str) -> Option<usize> {
    s.rfind(sub).map(|b| s[..b].chars().count())
}

/// `s.count(sub)`: non-overlapping occurrences; an empty `sub` counts len + 1.
pub fn count(s: &str, sub: &str) -> usize {
    if sub.is_empty() {
        return s.chars().count() + 1;
    }
    s.matches(sub).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn split_like_python() {
        assert_eq!(split("  a b  c ", None, -1).unwrap(), v(&["a", "b", "c"]));
        assert_eq!(split("  a b  c ", None, 1).unwrap(), v(&["a", "b  c "]));
        assert_eq!(
            split("a,b,,c", Some(","), -1).unwrap(),
            v(&["a", "b", "", "c"])
        );
        assert_eq!(split("a,b,c", Some(","), 1).unwrap(), v(&["a", "b,c"]));
        assert_eq!(split("", None, -1).unwrap(), Vec::<String>::new());
        assert_eq!(split("", Some(","), -1).unwrap(), v(&[""]));
        assert_eq!(rsplit("a,b,c", Some(","), 1).unwrap(), v(&["a,b", "c"]));
        assert_eq!(rsplit(" a b c ", None, 1).unwrap(), v(&[" a b", "c"]));
    }

    #[test]
    fn lines_and_case() {
        assert_eq!(splitlines("a\nb\r\nc\n", false), v(&["a", "b", "c"]));
        assert_eq!(splitlines("a\n\nb", true), v(&["a\n", "\n", "b"]));
        assert_eq!(title("they're bill's"), "They'Re Bill'S");
        assert!(is_lower("abc1") && !is_lower("123") && is_upper("AB-C"));
        assert_eq!(replace("aaa", "a", "b", 2), "bba");
        assert_eq!(replace("ab", "", "-", -1), "-a-b-");
    }
}
