//! Finding `${var}`, `@{list}`, `&{dict}`, `%{ENV}` and their `[item]` parts in text, and
//! Robot Framework's backslash escapes. A port of `robot.variables.search` and
//! `robot.utils.escaping`, kept byte-for-byte in behaviour because test data relies on
//! the corner cases (`\${not a var}`, nested `${a_${b}}`, `${x}[${i}]`).

use crate::error::{RfError, RfResult};

/// One variable found in a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarMatch {
    /// `$`, `@`, `&` or `%`.
    pub identifier: char,
    /// The text between the braces, unresolved (may hold nested variables).
    pub base: String,
    /// The `[item]` parts, unresolved.
    pub items: Vec<String>,
    /// Byte offset of the identifier.
    pub start: usize,
    /// Byte offset just past the variable (and its items).
    pub end: usize,
}

impl VarMatch {
    /// `${base}`, without items.
    pub fn name(&self) -> String {
        format!("{}{{{}}}", self.identifier, self.base)
    }

    /// The whole reference as RF prints it: `${base}[item]`.
    pub fn display(&self) -> String {
        let mut s = self.name();
        for item in &self.items {
            s.push('[');
            s.push_str(item);
            s.push(']');
        }
        s
    }
}

/// Whether the character at byte `index` is escaped by an odd number of backslashes.
fn escaped_at(bytes: &[u8], mut index: usize) -> bool {
    let mut escaped = false;
    while index > 0 && bytes[index - 1] == b'\\' {
        index -= 1;
        escaped = !escaped;
    }
    escaped
}

fn find_start(s: &str, identifiers: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut from = 1;
    loop {
        let brace = from + s.get(from..)?.find('{')?;
        let index = brace - 1;
        if identifiers.as_bytes().contains(&bytes[index]) && !escaped_at(bytes, index) {
            return Some(index);
        }
        from = brace + 1;
    }
}

/// The first variable in `s`, or `None`. With `ignore_errors`, an unclosed variable is
/// treated as no variable; otherwise it is RF's "was not closed properly" error.
pub fn search(s: &str, identifiers: &str, ignore_errors: bool) -> RfResult<Option<VarMatch>> {
    if !s.contains('{') {
        return Ok(None);
    }
    let Some(start) = find_start(s, identifiers) else {
        return Ok(None);
    };
    let bytes = s.as_bytes();
    let identifier = char::from(bytes[start]);
    let (mut left, mut right) = (b'{', b'}');
    let mut open = 1;
    let mut escaped = false;
    let mut items = Vec::new();
    let mut base = None;
    let mut part_start = start;
    let mut end = None;
    let mut i = start + 2;
    while i < bytes.len() {
        let c = bytes[i];
        if c == right && !escaped {
            open -= 1;
            if open == 0 {
                let next = bytes.get(i + 1).copied();
                if left == b'{' {
                    base = Some(s[start + 2..i].to_string());
                    if next != Some(b'[') || !"$@&".contains(identifier) {
                        end = Some(i + 1);
                        break;
                    }
                    left = b'[';
                    right = b']';
                } else {
                    items.push(s[part_start + 1..i].to_string());
                    if next != Some(b'[') {
                        end = Some(i + 1);
                        break;
                    }
                }
                // The next character, '[', is consumed here as in RF's parser.
                part_start = i + 1;
                open = 1;
                i += 2;
                continue;
            }
        } else if c == left && !escaped {
            open += 1;
        } else {
            escaped = c == b'\\' && !escaped;
        }
        i += 1;
    }
    let Some(end) = end else {
        if ignore_errors {
            return Ok(None);
        }
        let incomplete = &s[start..];
        return Err(RfError::invalid(if left == b'{' {
            format!("Variable '{incomplete}' was not closed properly.")
        } else {
            format!("Variable item '{incomplete}' was not closed properly.")
        }));
    };
    Ok(Some(VarMatch {
        identifier,
        base: base.unwrap_or_default(),
        items,
        start,
        end,
    }))
}

/// The variable that is the whole of `s`, if `s` is exactly one variable.
pub fn whole_variable(s: &str, identifiers: &str) -> Option<VarMatch> {
    search(s, identifiers, true)
        .ok()
        .flatten()
        .filter(|m| m.start == 0 && m.end == s.len() && !m.base.is_empty())
}

/// Whether `s` is exactly `@{name}` (possibly with items).
pub fn is_list_variable(s: &str) -> bool {
    whole_variable(s, "@").is_some()
}

/// Whether `s` is exactly `&{name}`.
pub fn is_dict_variable(s: &str) -> bool {
    whole_variable(s, "&").is_some()
}

/// RF's `unescape`: `\\` is a backslash, `\n` `\r` `\t` `\xHH` `\uHHHH` `\UHHHHHHHH` are
/// characters, and a backslash before anything else just disappears.
pub fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '\\' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run_start = i;
        while i < chars.len() && chars[i] == '\\' {
            i += 1;
        }
        let run = i - run_start;
        out.extend(std::iter::repeat_n('\\', run / 2));
        if run % 2 == 0 {
            continue;
        }
        // An odd run escapes what follows.
        match chars.get(i) {
            Some('n') => {
                out.push('\n');
                i += 1;
            }
            Some('r') => {
                out.push('\r');
                i += 1;
            }
            Some('t') => {
                out.push('\t');
                i += 1;
            }
            Some(&m @ ('x' | 'u' | 'U')) => {
                let len = match m {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = chars.iter().skip(i + 1).take(len).collect();
                if hex.len() == len && hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    let code = u32::from_str_radix(&hex, 16).unwrap_or(0);
                    match char::from_u32(code) {
                        Some(c) => out.push(c),
                        // Beyond Unicode RF keeps the text after the backslash.
                        None => {
                            out.push(m);
                            out.push_str(&hex);
                        }
                    }
                    i += 1 + len;
                }
                // Without valid hex digits the backslash just disappears.
            }
            _ => {}
        }
    }
    out
}

/// RF's `unescape_variable_syntax`, used on variable bases before resolving nested
/// variables: drops one backslash of an odd run only before `{`, `}` or a variable.
pub fn unescape_variable_syntax(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            let ch = s[i..].chars().next().unwrap_or('\0');
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        let run_start = i;
        while i < bytes.len() && bytes[i] == b'\\' {
            i += 1;
        }
        let run = i - run_start;
        let rest = &s[i..];
        let drop_one = run % 2 == 1
            && !rest.is_empty()
            && (rest.starts_with('{')
                || rest.starts_with('}')
                || search(rest, "$@&%", true)
                    .ok()
                    .flatten()
                    .is_some_and(|m| m.start == 0));
        let keep = if drop_one { run - 1 } else { run };
        out.extend(std::iter::repeat_n('\\', keep));
    }
    out
}

/// RF's `escape`: makes a value safe to pass on as unresolved keyword data.
pub fn escape(s: &str) -> String {
    if matches!(s, "ELSE" | "ELSE IF" | "AND" | "WITH NAME" | "AS") {
        return format!("\\{s}");
    }
    let mut out = s.replace('\\', "\\\\");
    for seq in ["${", "@{", "%{", "&{", "*{", "="] {
        out = out.replace(seq, &format!("\\{seq}"));
    }
    out
}

/// RF's `split_from_equals`: `name=value` split at the first `=` that is neither escaped
/// nor inside a variable. `None` when there is no such `=`.
pub fn split_from_equals(s: &str) -> Option<(String, String)> {
    if !s.contains('=') {
        return None;
    }
    let has_var = search(s, "$@&%", true).ok().flatten().is_some();
    if !has_var && !s.contains('\\') {
        return s
            .split_once('=')
            .map(|(a, b)| (a.to_string(), b.to_string()));
    }
    let mut offset = 0;
    let mut rest = s;
    loop {
        let m = search(rest, "$@&%", true).ok().flatten();
        let before = match &m {
            Some(m) => &rest[..m.start],
            None => rest,
        };
        if let Some(i) = unescaped_equals(before) {
            let at = offset + i;
            return Some((s[..at].to_string(), s[at + 1..].to_string()));
        }
        match m {
            Some(m) => {
                offset += m.end;
                rest = &rest[m.end..];
            }
            None => return None,
        }
    }
}

fn unescaped_equals(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(i) = s[from..].find('=').map(|i| from + i) {
        if !escaped_at(bytes, i) {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(s: &str) -> VarMatch {
        search(s, "$@&%", false).unwrap().unwrap()
    }

    #[test]
    fn finds_variables_and_items() {
        let m = find("a ${x} b");
        assert_eq!(
            (m.identifier, m.base.as_str(), m.start, m.end),
            ('$', "x", 2, 6)
        );
        let m = find("${d}[key][0]");
        assert_eq!(m.items, vec!["key", "0"]);
        assert_eq!(m.end, 12);
        let m = find("${a_${b}}");
        assert_eq!(m.base, "a_${b}");
        let m = find("${x}[${i}]");
        assert_eq!(m.items, vec!["${i}"]);
        assert!(search("\\${x}", "$", false).unwrap().is_none());
        assert!(search("\\\\${x}", "$", false).unwrap().is_some());
        assert_eq!(
            search("${x", "$", false).unwrap_err().message,
            "Variable '${x' was not closed properly."
        );
        // `%{}` takes no items.
        assert_eq!(find("%{HOME}[0]").end, 7);
    }

    #[test]
    fn unescapes_like_rf() {
        assert_eq!(unescape("a\\nb"), "a\nb");
        assert_eq!(unescape("\\\\n"), "\\n");
        assert_eq!(unescape("\\${x}"), "${x}");
        assert_eq!(unescape("\\x41\\u00e4"), "Aä");
        assert_eq!(unescape("\\a"), "a");
        assert_eq!(unescape("trailing\\"), "trailing");
    }

    #[test]
    fn splits_named_arguments() {
        assert_eq!(split_from_equals("a=b=c"), Some(("a".into(), "b=c".into())));
        assert_eq!(split_from_equals("a\\=b"), None);
        assert_eq!(
            split_from_equals("${x=1}=2"),
            Some(("${x=1}".into(), "2".into()))
        );
        assert_eq!(split_from_equals("plain"), None);
    }
}
