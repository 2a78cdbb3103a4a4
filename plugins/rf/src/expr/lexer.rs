//! Tokens of the Python expression subset.

use super::EvalError;

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// An identifier or keyword (`len`, `and`, `None`).
    Name(String),
    /// `$name`: a Robot Framework variable as a Python object.
    Var(String),
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A string literal (adjacent literals are joined by the parser).
    Str(String),
    /// A bytes literal.
    Bytes(Vec<u8>),
    /// An operator or delimiter.
    Op(&'static str),
    /// End of input.
    End,
}

/// Operators, longest first so that `**` wins over `*`.
const OPS: &[&str] = &[
    "**", "//", "==", "!=", "<=", ">=", "<<", ">>", "(", ")", "[", "]", "{", "}", ",", ":", ".",
    "+", "-", "*", "/", "%", "<", ">", "~", "&", "|", "^", "=",
];

/// Splits `src` into tokens.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Tok>, EvalError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    // Brackets are counted only to report an unclosed one the way Python does.
    let mut open: Vec<char> = Vec::new();
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '#' {
            // A comment runs to the end of the line.
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let (tok, next) = number(&chars, i)?;
            out.push(tok);
            i = next;
            continue;
        }
        if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // String prefixes: r'', b'', rb'', u'', f''.
            if let Some(&q) = chars.get(i)
                && (q == '\'' || q == '"')
                && is_string_prefix(&word)
            {
                let lower = word.to_ascii_lowercase();
                if lower.contains('f') {
                    return Err(EvalError::syntax(
                        "f-strings are not supported in this evaluator",
                    ));
                }
                let (text, next) = string(&chars, i, lower.contains('r'))?;
                i = next;
                if lower.contains('b') {
                    let bytes = text
                        .chars()
                        .map(|c| u8::try_from(u32::from(c)).ok())
                        .collect::<Option<Vec<u8>>>()
                        .ok_or_else(|| {
                            EvalError::syntax("bytes can only contain ASCII literal characters")
                        })?;
                    out.push(Tok::Bytes(bytes));
                } else {
                    out.push(Tok::Str(text));
                }
                continue;
            }
            out.push(Tok::Name(word));
            continue;
        }
        if c == '\'' || c == '"' {
            let (text, next) = string(&chars, i, false)?;
            out.push(Tok::Str(text));
            i = next;
            continue;
        }
        if c == '$' {
            let start = i + 1;
            let mut j = start;
            if j < chars.len() && is_ident_start(chars[j]) {
                while j < chars.len() && is_ident_char(chars[j]) {
                    j += 1;
                }
                out.push(Tok::Var(chars[start..j].iter().collect()));
                i = j;
                continue;
            }
            return Err(EvalError::syntax("invalid syntax"));
        }
        let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
        let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) else {
            return Err(EvalError::syntax("invalid syntax"));
        };
        match *op {
            "(" | "[" | "{" => open.push(c),
            ")" | "]" | "}" => {
                let expected = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                match open.pop() {
                    Some(o) if o == expected => {}
                    Some(o) => {
                        return Err(EvalError::syntax(format!(
                            "closing parenthesis '{c}' does not match opening parenthesis '{o}'"
                        )));
                    }
                    None => return Err(EvalError::syntax(format!("unmatched '{c}'"))),
                }
            }
            _ => {}
        }
        out.push(Tok::Op(op));
        i += op.len();
    }
    if let Some(o) = open.first() {
        return Err(EvalError::syntax(format!("'{o}' was never closed")));
    }
    out.push(Tok::End);
    Ok(out)
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn is_string_prefix(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "r" | "b" | "rb" | "br" | "u" | "f" | "fr" | "rf"
    )
}

/// Reads a number starting at `i`.
fn number(chars: &[char], mut i: usize) -> Result<(Tok, usize), EvalError> {
    let start = i;
    if chars[i] == '0'
        && let Some(&p) = chars.get(i + 1)
        && matches!(p, 'x' | 'X' | 'o' | 'O' | 'b' | 'B')
    {
        let radix = match p.to_ascii_lowercase() {
            'x' => 16,
            'o' => 8,
            _ => 2,
        };
        i += 2;
        let digits_start = i;
        while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
            i += 1;
        }
        let digits: String = chars[digits_start..i]
            .iter()
            .filter(|c| **c != '_')
            .collect();
        return i64::from_str_radix(&digits, radix)
            .map(|n| (Tok::Int(n), i))
            .map_err(|_| EvalError::syntax("invalid syntax"));
    }
    while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '_') {
        i += 1;
    }
    let mut is_float = false;
    if i < chars.len() && chars[i] == '.' {
        is_float = true;
        i += 1;
        while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '_') {
            i += 1;
        }
    }
    if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
        let mut j = i + 1;
        if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
            j += 1;
        }
        if j < chars.len() && chars[j].is_ascii_digit() {
            is_float = true;
            i = j;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    if i < chars.len() && (chars[i] == 'j' || chars[i] == 'J') {
        return Err(EvalError::syntax("complex numbers are not supported"));
    }
    if i < chars.len() && is_ident_char(chars[i]) {
        return Err(EvalError::syntax("invalid decimal literal"));
    }
    let text: String = chars[start..i].iter().filter(|c| **c != '_').collect();
    if is_float {
        text.parse::<f64>()
            .map(|f| (Tok::Float(f), i))
            .map_err(|_| EvalError::syntax("invalid syntax"))
    } else {
        // Python ints are unbounded; beyond 64 bits this evaluator uses a float.
        match text.parse::<i64>() {
            Ok(n) => Ok((Tok::Int(n), i)),
            Err(_) => text
                .parse::<f64>()
                .map(|f| (Tok::Float(f), i))
                .map_err(|_| EvalError::syntax("invalid syntax")),
        }
    }
}

/// Reads a string literal whose opening quote is at `i`.
fn string(chars: &[char], i: usize, raw: bool) -> Result<(String, usize), EvalError> {
    let q = chars[i];
    let triple = chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q);
    let mut j = if triple { i + 3 } else { i + 1 };
    let mut out = String::new();
    loop {
        let Some(&c) = chars.get(j) else {
            return Err(EvalError::syntax(if triple {
                "unterminated triple-quoted string literal (detected at line 1)"
            } else {
                "unterminated string literal (detected at line 1)"
            }));
        };
        if c == q {
            if !triple {
                return Ok((out, j + 1));
            }
            if chars.get(j + 1) == Some(&q) && chars.get(j + 2) == Some(&q) {
                return Ok((out, j + 3));
            }
        }
        if c == '\n' && !triple {
            return Err(EvalError::syntax(
                "unterminated string literal (detected at line 1)",
            ));
        }
        if c == '\\' {
            let Some(&n) = chars.get(j + 1) else {
                j += 1;
                continue;
            };
            if raw {
                out.push('\\');
                out.push(n);
                j += 2;
                continue;
            }
            j += 2;
            match n {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0'..='7' => {
                    let mut value = n.to_digit(8).unwrap_or(0);
                    let mut k = 0;
                    while k < 2 && chars.get(j).is_some_and(|c| c.is_digit(8)) {
                        value = value * 8 + chars[j].to_digit(8).unwrap_or(0);
                        j += 1;
                        k += 1;
                    }
                    out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
                }
                'a' => out.push('\u{7}'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'v' => out.push('\u{b}'),
                '\\' | '\'' | '"' => out.push(n),
                '\n' => {}
                'x' | 'u' | 'U' => {
                    let len = match n {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex: String = chars.iter().skip(j).take(len).collect();
                    let code = (hex.len() == len)
                        .then(|| u32::from_str_radix(&hex, 16).ok())
                        .flatten()
                        .and_then(char::from_u32)
                        .ok_or_else(|| {
                            EvalError::syntax(format!(
                                "(unicode error) 'unicodeescape' codec can't decode bytes: truncated \\{n}XXXX escape"
                            ))
                        })?;
                    out.push(code);
                    j += len;
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
            continue;
        }
        out.push(c);
        j += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let toks = tokenize("len($x) >= 0x10 and 'a\\n' + r'\\d' ** 1.5e2").unwrap();
        assert_eq!(toks[0], Tok::Name("len".into()));
        assert_eq!(toks[2], Tok::Var("x".into()));
        assert_eq!(toks[4], Tok::Op(">="));
        assert_eq!(toks[5], Tok::Int(16));
        assert_eq!(toks[7], Tok::Str("a\n".into()));
        assert_eq!(toks[9], Tok::Str("\\d".into()));
        assert_eq!(toks[11], Tok::Float(150.0));
    }

    #[test]
    fn unclosed_brackets_are_reported_like_python() {
        let e = tokenize("foo(1").unwrap_err();
        assert_eq!(
            e.message(),
            "SyntaxError: '(' was never closed (<string>, line 1)"
        );
    }
}
