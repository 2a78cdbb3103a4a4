//! Python regular expressions on Rust's `regex` crate.
//!
//! RF keywords take Python `re` patterns. The two dialects share most syntax; this module
//! translates the differences that come up in test data and rejects what `regex` cannot
//! do, with a message that says so:
//! - `\Z` is `\z`; a `{` that does not start a valid repetition is a literal;
//! - inside `[...]`, `[`, `&` and `~` are literals (Rust gives them set-operation meaning);
//! - back-references (`\1`, `(?P=name)`) and look-around (`(?=`, `(?<!` ...) are not
//!   supported by `regex` and fail with an explanatory error;
//! - without MULTILINE, Python's `$` also matches before a final newline; here it only
//!   matches at the very end.
//!
//! Replacement strings use Python syntax (`\1`, `\g<1>`, `\g<name>`, `\n`), translated to
//! `regex`'s `${1}`.

use regex::{Regex, RegexBuilder};

/// Python `re` flags as RF's `flags` argument gives them (`IGNORECASE|MULTILINE`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    ignore_case: bool,
    multi_line: bool,
    dot_all: bool,
    verbose: bool,
}

impl Flags {
    /// RF's `parse_re_flags`; the error is RF's `Unknown regexp flag: X`.
    pub fn parse(flags: Option<&str>) -> Result<Flags, String> {
        let mut out = Flags::default();
        let Some(flags) = flags.filter(|f| !f.is_empty()) else {
            return Ok(out);
        };
        for flag in flags.split('|') {
            match flag.trim().to_uppercase().as_str() {
                "I" | "IGNORECASE" => out.ignore_case = true,
                "M" | "MULTILINE" => out.multi_line = true,
                "S" | "DOTALL" => out.dot_all = true,
                "X" | "VERBOSE" => out.verbose = true,
                // Unicode is the default in both; ASCII-only classes, locale and debug
                // output have no equivalent here and are accepted without effect.
                "U" | "UNICODE" | "A" | "ASCII" | "L" | "LOCALE" | "DEBUG" | "NOFLAG" => {}
                _ => return Err(format!("Unknown regexp flag: {flag}")),
            }
        }
        Ok(out)
    }

    /// Only the IGNORECASE flag.
    pub fn ignore_case() -> Flags {
        Flags {
            ignore_case: true,
            ..Flags::default()
        }
    }
}

/// Compiles a Python pattern for `re.fullmatch`: anchored at both ends, so a full
/// match may use another alternative than the leftmost-first match would.
pub fn compile_full(pattern: &str, flags: Flags) -> Result<Regex, String> {
    compile(&format!("^(?:{pattern})$"), flags)
}

/// Compiles a Python pattern. The error names what is not supported or, for an invalid
/// pattern, carries `regex`'s explanation.
pub fn compile(pattern: &str, flags: Flags) -> Result<Regex, String> {
    let translated = translate(pattern)?;
    RegexBuilder::new(&translated)
        .case_insensitive(flags.ignore_case)
        .multi_line(flags.multi_line)
        .dot_matches_new_line(flags.dot_all)
        .ignore_whitespace(flags.verbose)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| {
            let text = e.to_string();
            let last = text.lines().last().unwrap_or("invalid pattern").trim();
            format!("error: {last}")
        })
}

/// Python pattern syntax to `regex` syntax.
fn translate(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    let unsupported = |what: &str| {
        Err(format!(
            "error: {what} is not supported by the sandbox's regular expression engine"
        ))
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            let Some(&n) = chars.get(i + 1) else {
                return Err("error: bad escape (end of pattern)".into());
            };
            match n {
                'Z' if !in_class => out.push_str("\\z"),
                '1'..='9' if !in_class => return unsupported("a back-reference"),
                _ => {
                    out.push('\\');
                    out.push(n);
                }
            }
            i += 2;
            continue;
        }
        if in_class {
            match c {
                ']' => {
                    // A `]` right after `[` or `[^` is a literal in both dialects.
                    in_class = false;
                    out.push(c);
                }
                '[' | '&' | '~' => {
                    out.push('\\');
                    out.push(c);
                }
                _ => out.push(c),
            }
            i += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                out.push('[');
                i += 1;
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
            }
            '(' if chars.get(i + 1) == Some(&'?') => {
                let rest: String = chars[i + 2..].iter().take(3).collect();
                if rest.starts_with('=')
                    || rest.starts_with('!')
                    || rest.starts_with("<=")
                    || rest.starts_with("<!")
                {
                    return unsupported("look-around");
                }
                if rest.starts_with("P=") {
                    return unsupported("a back-reference");
                }
                if rest.starts_with('#') {
                    // A comment group: drop it.
                    while i < chars.len() && chars[i] != ')' {
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                if rest.starts_with('(') {
                    return unsupported("a conditional group");
                }
                out.push('(');
                i += 1;
            }
            '{' => {
                // Python reads `{` as a literal unless it starts `{m}`, `{m,}`, `{,n}` or `{m,n}`.
                let close = chars[i..].iter().position(|&x| x == '}');
                let valid = close.is_some_and(|end| {
                    let inner: String = chars[i + 1..i + end].iter().collect();
                    let (a, b) = inner.split_once(',').unwrap_or((&inner, ""));
                    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
                    !inner.is_empty() && digits(a) && digits(b) && inner != ","
                });
                match (valid, close) {
                    (true, Some(end)) => {
                        // `{,n}` means `{0,n}` in Python.
                        out.push('{');
                        if chars.get(i + 1) == Some(&',') {
                            out.push('0');
                        }
                        out.extend(&chars[i + 1..=i + end]);
                        i += end + 1;
                    }
                    _ => {
                        out.push_str("\\{");
                        i += 1;
                    }
                }
            }
            '}' => {
                out.push_str("\\}");
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// A Python replacement template in `regex` syntax.
pub fn replacement(repl: &str) -> Result<String, String> {
    let chars: Vec<char> = repl.chars().collect();
    let mut out = String::with_capacity(repl.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '$' {
            out.push_str("$$");
            i += 1;
            continue;
        }
        if c != '\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let Some(&n) = chars.get(i + 1) else {
            return Err("error: bad escape (end of pattern)".into());
        };
        i += 2;
        match n {
            'g' => {
                if chars.get(i) != Some(&'<') {
                    return Err("error: missing <".into());
                }
                let end = chars[i..]
                    .iter()
                    .position(|&x| x == '>')
                    .ok_or("error: missing >, unterminated name")?;
                let name: String = chars[i + 1..i + end].iter().collect();
                out.push_str(&format!("${{{name}}}"));
                i += end + 1;
            }
            '0'..='9' => {
                let mut num = n.to_string();
                if let Some(&d) = chars.get(i)
                    && d.is_ascii_digit()
                {
                    num.push(d);
                    i += 1;
                }
                out.push_str(&format!("${{{num}}}"));
            }
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'f' => out.push('\u{c}'),
            'v' => out.push('\u{b}'),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            '\\' => out.push('\\'),
            c if c.is_ascii_alphabetic() => return Err(format!("error: bad escape \\{c}")),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

/// Python's `re.escape`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_alphanumeric() || c == '_' || !c.is_ascii() {
            out.push(c);
        } else if c == '\n' {
            out.push_str("\\\n");
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(p: &str) -> Regex {
        compile(p, Flags::default()).unwrap()
    }

    #[test]
    fn python_syntax_translates() {
        assert!(re("^a\\d+\\Z").is_match("a12"));
        assert!(re("x{2}").is_match("xx"));
        assert!(re("a{b").is_match("a{b"));
        assert!(re("[[]x").is_match("[x"));
        assert!(re("(?P<word>\\w+)").is_match("hi"));
        assert!(
            compile("(?=x)", Flags::default())
                .unwrap_err()
                .contains("look-around")
        );
        assert!(compile("(a)\\1", Flags::default()).is_err());
        let ci = compile("abc", Flags::parse(Some("IGNORECASE")).unwrap()).unwrap();
        assert!(ci.is_match("ABC"));
        assert_eq!(
            Flags::parse(Some("nope")).unwrap_err(),
            "Unknown regexp flag: nope"
        );
    }

    #[test]
    fn replacements_translate() {
        assert_eq!(replacement("\\1-\\g<name>$").unwrap(), "${1}-${name}$$");
        let r = re("(\\w+)@(\\w+)");
        assert_eq!(
            r.replace_all("a@b", replacement("\\2 at \\1").unwrap().as_str()),
            "b at a"
        );
        assert_eq!(escape("a.b*c"), "a\\.b\\*c");
    }
}
