//! Python's string formatting: `str.format` (what String's `Format String` and
//! `'...'.format()` in expressions use), the format-spec mini-language, and `%` formatting.
//!
//! Errors are `(exception class, message)` pairs with Python's wording.

use crate::value::{Value, float_repr};

/// A Python exception: class name and message.
pub type PyErr = (&'static str, String);

fn value_err(msg: impl Into<String>) -> PyErr {
    ("ValueError", msg.into())
}

/// Python's `template.format(*args, **kwargs)`.
pub fn format(template: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<String, PyErr> {
    let mut auto = AutoNumbering::Unknown;
    format_inner(template, args, kwargs, &mut auto, 0)
}

#[derive(PartialEq)]
enum AutoNumbering {
    Unknown,
    Auto(usize),
    Manual,
}

fn format_inner(
    template: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    auto: &mut AutoNumbering,
    depth: usize,
) -> Result<String, PyErr> {
    if depth > 2 {
        return Err(value_err("Max string recursion exceeded"));
    }
    let chars: Vec<char> = template.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '{' {
            if chars.get(i + 1) == Some(&'{') {
                out.push('{');
                i += 2;
                continue;
            }
            // Find the matching '}', allowing one level of nesting in the spec.
            let mut level = 1;
            let mut j = i + 1;
            while j < chars.len() {
                match chars[j] {
                    '{' => level += 1,
                    '}' => {
                        level -= 1;
                        if level == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            if j >= chars.len() {
                return Err(value_err("expected '}' before end of string"));
            }
            let field: String = chars[i + 1..j].iter().collect();
            out.push_str(&render_field(&field, args, kwargs, auto, depth)?);
            i = j + 1;
        } else if c == '}' {
            if chars.get(i + 1) == Some(&'}') {
                out.push('}');
                i += 2;
                continue;
            }
            return Err(value_err("Single '}' encountered in format string"));
        } else {
            out.push(c);
            i += 1;
        }
    }
    Ok(out)
}

fn render_field(
    field: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    auto: &mut AutoNumbering,
    depth: usize,
) -> Result<String, PyErr> {
    // field_name [! conversion] [: spec]; the name part ends at the first '!' or ':'
    // outside brackets.
    let mut name_end = field.len();
    let mut in_bracket = false;
    for (i, c) in field.char_indices() {
        match c {
            '[' => in_bracket = true,
            ']' => in_bracket = false,
            '!' | ':' if !in_bracket => {
                name_end = i;
                break;
            }
            _ => {}
        }
    }
    let name = &field[..name_end];
    let rest = &field[name_end..];
    let (conversion, spec) = if let Some(r) = rest.strip_prefix('!') {
        let (conv, spec) = match r.split_once(':') {
            Some((c, s)) => (c, s),
            None => (r, ""),
        };
        if conv.chars().count() != 1 {
            return Err(value_err("expected ':' after conversion specifier"));
        }
        (conv.chars().next(), spec)
    } else {
        (None, rest.strip_prefix(':').unwrap_or(""))
    };
    let value = lookup_field(name, args, kwargs, auto)?;
    let value = match conversion {
        None => value,
        Some('r') => Value::Str(value.repr()),
        Some('s') => Value::Str(value.to_str()),
        Some('a') => Value::Str(ascii(&value.repr())),
        Some(c) => {
            return Err(value_err(format!("Unknown conversion specifier {c}")));
        }
    };
    let spec = if spec.contains('{') {
        format_inner(spec, args, kwargs, auto, depth + 1)?
    } else {
        spec.to_string()
    };
    format_value(&value, &spec)
}

fn lookup_field(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    auto: &mut AutoNumbering,
) -> Result<Value, PyErr> {
    let first_end = name.find(['.', '[']).unwrap_or(name.len());
    let first = &name[..first_end];
    let mut value = if first.is_empty() {
        let n = match auto {
            AutoNumbering::Manual => {
                return Err(value_err(
                    "cannot switch from manual field specification to automatic field numbering",
                ));
            }
            AutoNumbering::Unknown => 0,
            AutoNumbering::Auto(n) => *n,
        };
        *auto = AutoNumbering::Auto(n + 1);
        positional(args, n)?
    } else if let Ok(n) = first.parse::<usize>() {
        if matches!(auto, AutoNumbering::Auto(_)) {
            return Err(value_err(
                "cannot switch from automatic field numbering to manual field specification",
            ));
        }
        *auto = AutoNumbering::Manual;
        positional(args, n)?
    } else {
        kwargs
            .iter()
            .find(|(k, _)| k == first)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| ("KeyError", Value::str(first).repr()))?
    };
    // Attribute and index chain: `.key` works on dicts as RF's DotDict does; `[n]` indexes.
    let mut rest = &name[first_end..];
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let attr = &r[..end];
            value = match &value {
                Value::Dict(d) if d.borrow().dot => d
                    .borrow()
                    .get(&Value::str(attr))
                    .cloned()
                    .ok_or_else(|| ("AttributeError", attr.to_string()))?,
                other => {
                    return Err((
                        "AttributeError",
                        format!("'{}' object has no attribute '{attr}'", other.py_type()),
                    ));
                }
            };
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r
                .find(']')
                .ok_or_else(|| value_err("Missing ']' in format string"))?;
            let key = &r[..end];
            value = match (&value, key.parse::<i64>()) {
                (Value::Dict(d), _) => {
                    let k = Value::str(key);
                    d.borrow()
                        .get(&k)
                        .cloned()
                        .ok_or_else(|| ("KeyError", k.repr()))?
                }
                (Value::List(_) | Value::Tuple(_) | Value::Str(_), Ok(n)) => {
                    let items = value.iter_items().unwrap_or_default();
                    usize::try_from(n)
                        .ok()
                        .and_then(|i| items.get(i).cloned())
                        .ok_or_else(|| {
                            (
                                "IndexError",
                                format!("{} index out of range", value.py_type()),
                            )
                        })?
                }
                (other, _) => {
                    return Err((
                        "TypeError",
                        format!("'{}' object is not subscriptable", other.py_type()),
                    ));
                }
            };
            rest = &r[end + 1..];
        } else {
            return Err(value_err(
                "Only '.' or '[' may follow ']' in format field specifier",
            ));
        }
    }
    Ok(value)
}

fn positional(args: &[Value], n: usize) -> Result<Value, PyErr> {
    args.get(n).cloned().ok_or_else(|| {
        (
            "IndexError",
            format!("Replacement index {n} out of range for positional args tuple"),
        )
    })
}

/// `ascii()`: `repr()` with non-ASCII characters escaped.
pub fn ascii(repr: &str) -> String {
    let mut out = String::new();
    for c in repr.chars() {
        let n = u32::from(c);
        if n < 0x80 {
            out.push(c);
        } else if n < 0x100 {
            out.push_str(&format!("\\x{n:02x}"));
        } else if n < 0x10000 {
            out.push_str(&format!("\\u{n:04x}"));
        } else {
            out.push_str(&format!("\\U{n:08x}"));
        }
    }
    out
}

/// A parsed format spec.
#[derive(Debug, Default)]
struct Spec {
    fill: Option<char>,
    align: Option<char>,
    sign: Option<char>,
    alternate: bool,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    kind: Option<char>,
}

fn parse_spec(spec: &str) -> Result<Spec, PyErr> {
    let chars: Vec<char> = spec.chars().collect();
    let mut s = Spec::default();
    let mut i = 0;
    let is_align = |c: char| matches!(c, '<' | '>' | '=' | '^');
    if chars.len() >= 2 && is_align(chars[1]) {
        s.fill = Some(chars[0]);
        s.align = Some(chars[1]);
        i = 2;
    } else if !chars.is_empty() && is_align(chars[0]) {
        s.align = Some(chars[0]);
        i = 1;
    }
    if let Some(&c) = chars.get(i)
        && matches!(c, '+' | '-' | ' ')
    {
        s.sign = Some(c);
        i += 1;
    }
    if chars.get(i) == Some(&'z') {
        i += 1;
    }
    if chars.get(i) == Some(&'#') {
        s.alternate = true;
        i += 1;
    }
    if chars.get(i) == Some(&'0') {
        s.zero = true;
        i += 1;
    }
    let start = i;
    while chars.get(i).is_some_and(char::is_ascii_digit) {
        i += 1;
    }
    if i > start {
        let digits: String = chars[start..i].iter().collect();
        s.width = digits
            .parse()
            .map_err(|_| value_err("Too many decimal digits in format string"))?;
        s.width = s.width.min(1 << 20);
    }
    if let Some(&c) = chars.get(i)
        && (c == ',' || c == '_')
    {
        s.grouping = Some(c);
        i += 1;
    }
    if chars.get(i) == Some(&'.') {
        i += 1;
        let start = i;
        while chars.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return Err(value_err("Format specifier missing precision"));
        }
        let digits: String = chars[start..i].iter().collect();
        s.precision = Some(digits.parse::<usize>().unwrap_or(0).min(1000));
    }
    if let Some(&c) = chars.get(i) {
        s.kind = Some(c);
        i += 1;
    }
    if i < chars.len() {
        return Err(value_err("Invalid format specifier"));
    }
    Ok(s)
}

/// Python's `format(value, spec)`.
pub fn format_value(value: &Value, spec: &str) -> Result<String, PyErr> {
    if spec.is_empty() {
        return Ok(value.to_str());
    }
    let s = parse_spec(spec)?;
    match value {
        Value::Str(text) => format_str(text, &s, "str"),
        Value::Bool(b) if s.kind.is_none() => {
            format_str(if *b { "True" } else { "False" }, &s, "bool")
        }
        Value::Int(_) | Value::Bool(_) => {
            let i = match value {
                Value::Int(i) => *i,
                Value::Bool(b) => i64::from(*b),
                _ => 0,
            };
            match s.kind {
                None | Some('d' | 'n' | 'b' | 'o' | 'x' | 'X' | 'c') => format_int(i, &s),
                Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%') => format_float(i as f64, &s),
                Some(k) => Err(value_err(format!(
                    "Unknown format code '{k}' for object of type '{}'",
                    value.py_type()
                ))),
            }
        }
        Value::Float(f) => match s.kind {
            None | Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%' | 'n') => format_float(*f, &s),
            Some(k) => Err(value_err(format!(
                "Unknown format code '{k}' for object of type 'float'"
            ))),
        },
        other => Err((
            "TypeError",
            format!(
                "unsupported format string passed to {}.__format__",
                other.py_type()
            ),
        )),
    }
}

fn format_str(text: &str, s: &Spec, type_name: &str) -> Result<String, PyErr> {
    if let Some(k) = s.kind
        && k != 's'
    {
        return Err(value_err(format!(
            "Unknown format code '{k}' for object of type '{type_name}'"
        )));
    }
    if s.sign.is_some() {
        return Err(value_err("Sign not allowed in string format specifier"));
    }
    if s.align == Some('=') {
        return Err(value_err(
            "'=' alignment not allowed in string format specifier",
        ));
    }
    let text: String = match s.precision {
        Some(p) => text.chars().take(p).collect(),
        None => text.to_string(),
    };
    let fill = s.fill.unwrap_or(if s.zero { '0' } else { ' ' });
    Ok(pad(&text, "", s.width, fill, s.align.unwrap_or('<')))
}

fn pad(body: &str, sign: &str, width: usize, fill: char, align: char) -> String {
    let len = body.chars().count() + sign.chars().count();
    if len >= width {
        return format!("{sign}{body}");
    }
    let n = width - len;
    let fills = |k: usize| std::iter::repeat_n(fill, k).collect::<String>();
    match align {
        '<' => format!("{sign}{body}{}", fills(n)),
        '^' => format!("{}{sign}{body}{}", fills(n / 2), fills(n - n / 2)),
        '=' => format!("{sign}{}{body}", fills(n)),
        _ => format!("{}{sign}{body}", fills(n)),
    }
}

fn group(digits: &str, sep: char, every: usize) -> String {
    let chars: Vec<char> = digits.chars().collect();
    let mut out = String::new();
    for (i, c) in chars.iter().enumerate() {
        if i > 0 && (chars.len() - i).is_multiple_of(every) {
            out.push(sep);
        }
        out.push(*c);
    }
    out
}

fn sign_of(negative: bool, s: &Spec) -> &'static str {
    match (negative, s.sign) {
        (true, _) => "-",
        (false, Some('+')) => "+",
        (false, Some(' ')) => " ",
        _ => "",
    }
}

fn finish_number(body: String, negative: bool, s: &Spec) -> String {
    let sign = sign_of(negative, s);
    let (fill, align) = if s.zero && s.fill.is_none() && s.align.is_none() {
        ('0', '=')
    } else {
        (s.fill.unwrap_or(' '), s.align.unwrap_or('>'))
    };
    pad(&body, sign, s.width, fill, align)
}

fn format_int(i: i64, s: &Spec) -> Result<String, PyErr> {
    if s.precision.is_some() {
        return Err(value_err(
            "Precision not allowed in integer format specifier",
        ));
    }
    let negative = i < 0;
    let m = i.unsigned_abs();
    let (digits, prefix, every) = match s.kind {
        Some('b') => (format!("{m:b}"), "0b", 4),
        Some('o') => (format!("{m:o}"), "0o", 4),
        Some('x') => (format!("{m:x}"), "0x", 4),
        Some('X') => (format!("{m:X}"), "0X", 4),
        Some('c') => {
            let c = u32::try_from(i)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| ("OverflowError", "%c arg not in range(0x110000)".to_string()))?;
            return Ok(pad(
                &c.to_string(),
                "",
                s.width,
                s.fill.unwrap_or(' '),
                s.align.unwrap_or('<'),
            ));
        }
        _ => (m.to_string(), "", 3),
    };
    let digits = match s.grouping {
        Some(sep) => group(&digits, sep, every),
        None => digits,
    };
    let body = if s.alternate {
        format!("{prefix}{digits}")
    } else {
        digits
    };
    Ok(finish_number(body, negative, s))
}

fn exp_notation(f: f64, precision: usize, upper: bool) -> String {
    let text = format!("{f:.precision$e}");
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let e = if upper { 'E' } else { 'e' };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}{e}{sign}{:02}", exp.abs())
}

/// Python's 'g' formatting of a non-negative finite float.
fn general(f: f64, precision: usize, alternate: bool, upper: bool) -> String {
    let p = precision.max(1);
    if f == 0.0 {
        return if alternate {
            format!("{:.*}", p - 1, 0.0)
        } else {
            "0".into()
        };
    }
    // The exponent after rounding to p significant digits.
    let sci = format!("{:.*e}", p - 1, f);
    let exp: i64 = sci
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    let p = i64::try_from(p).unwrap_or(17);
    let body = if -4 <= exp && exp < p {
        let decimals = usize::try_from(p - 1 - exp).unwrap_or(0);
        format!("{f:.decimals$}")
    } else {
        exp_notation(f, usize::try_from(p - 1).unwrap_or(0), upper)
    };
    if alternate {
        return body;
    }
    // Strip trailing zeros of the fraction (and a bare point).
    let (num, exp_part) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], &body[i..]),
        None => (&body[..], ""),
    };
    let num = if num.contains('.') {
        num.trim_end_matches('0').trim_end_matches('.')
    } else {
        num
    };
    format!("{num}{exp_part}")
}

fn format_float(f: f64, s: &Spec) -> Result<String, PyErr> {
    let negative = f.is_sign_negative() && !f.is_nan();
    let a = f.abs();
    let upper = matches!(s.kind, Some('E' | 'F' | 'G'));
    let body = if !a.is_finite() {
        let t = if a.is_nan() { "nan" } else { "inf" };
        if upper {
            t.to_uppercase()
        } else {
            t.to_string()
        }
    } else {
        match s.kind {
            Some('f' | 'F') => format!("{a:.*}", s.precision.unwrap_or(6)),
            Some('e' | 'E') => exp_notation(a, s.precision.unwrap_or(6), upper),
            Some('g' | 'G' | 'n') => general(a, s.precision.unwrap_or(6), s.alternate, upper),
            Some('%') => format!("{:.*}%", s.precision.unwrap_or(6), a * 100.0),
            _ => match s.precision {
                // No type: like 'g' but always with a point or an exponent.
                Some(p) => {
                    let g = general(a, p, s.alternate, false);
                    if g.contains(['.', 'e']) {
                        g
                    } else {
                        format!("{g}.0")
                    }
                }
                None => float_repr(a),
            },
        }
    };
    let body = match s.grouping {
        Some(sep) if a.is_finite() => {
            let (int, rest) = match body.find(|c: char| !c.is_ascii_digit()) {
                Some(i) => (&body[..i], &body[i..]),
                None => (&body[..], ""),
            };
            format!("{}{rest}", group(int, sep, 3))
        }
        _ => body,
    };
    Ok(finish_number(body, negative, s))
}

/// Python's `template % args` for strings.
pub fn percent(template: &str, args: &Value) -> Result<String, PyErr> {
    let (items, mapping): (Vec<Value>, Option<&Value>) = match args {
        Value::Tuple(t) => (t.as_ref().clone(), None),
        Value::Dict(_) => (vec![args.clone()], Some(args)),
        other => (vec![other.clone()], None),
    };
    let chars: Vec<char> = template.chars().collect();
    let mut out = String::new();
    let mut next = 0;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        let mut key = None;
        if chars.get(i) == Some(&'(') {
            let end = chars[i..]
                .iter()
                .position(|c| *c == ')')
                .ok_or_else(|| value_err("incomplete format key"))?;
            key = Some(chars[i + 1..i + end].iter().collect::<String>());
            i += end + 1;
        }
        let start = i;
        while i < chars.len() && "-+ #0123456789.".contains(chars[i]) {
            i += 1;
        }
        let flags: String = chars[start..i].iter().collect();
        let Some(&conv) = chars.get(i) else {
            return Err(value_err("incomplete format"));
        };
        i += 1;
        if conv == '%' {
            out.push('%');
            continue;
        }
        let value = match &key {
            Some(k) => {
                let Some(Value::Dict(d)) = mapping else {
                    return Err(("TypeError", "format requires a mapping".into()));
                };
                d.borrow()
                    .get(&Value::str(k.as_str()))
                    .cloned()
                    .ok_or_else(|| ("KeyError", Value::str(k.as_str()).repr()))?
            }
            None => {
                let v = items.get(next).cloned().ok_or_else(|| {
                    (
                        "TypeError",
                        "not enough arguments for format string".to_string(),
                    )
                })?;
                next += 1;
                v
            }
        };
        // Translate printf flags into a format spec.
        let left = flags.contains('-');
        let zero = flags.contains('0') && !left;
        let sign = if flags.contains('+') {
            "+"
        } else if flags.contains(' ') {
            " "
        } else {
            ""
        };
        let width_prec = flags.trim_start_matches(['-', '+', ' ', '#', '0']);
        let align = if left { "<" } else { ">" };
        let spec_tail = |kind: &str| {
            format!(
                "{align}{sign}{}{}{width_prec}{kind}",
                if flags.contains('#') { "#" } else { "" },
                if zero { "0" } else { "" }
            )
        };
        let text = match conv {
            's' | 'r' | 'a' => {
                let t = match conv {
                    's' => value.to_str(),
                    'r' => value.repr(),
                    _ => ascii(&value.repr()),
                };
                format_value(&Value::Str(t), &format!("{align}{width_prec}"))?
            }
            'd' | 'i' | 'u' => {
                let n = value.as_number().ok_or_else(|| {
                    (
                        "TypeError",
                        format!(
                            "%{conv} format: a real number is required, not {}",
                            value.py_type()
                        ),
                    )
                })?;
                let i = match n {
                    crate::value::Num::Int(i) => i,
                    crate::value::Num::Float(f) => f.trunc() as i64,
                };
                format_value(&Value::Int(i), &spec_tail("d"))?
            }
            'x' | 'X' | 'o' => {
                let Some(crate::value::Num::Int(i)) = value.as_number() else {
                    return Err((
                        "TypeError",
                        format!(
                            "%{conv} format: an integer is required, not {}",
                            value.py_type()
                        ),
                    ));
                };
                format_value(&Value::Int(i), &spec_tail(&conv.to_string()))?
            }
            'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
                let n = value.as_number().ok_or_else(|| {
                    (
                        "TypeError",
                        format!("must be real number, not {}", value.py_type()),
                    )
                })?;
                let prec = if width_prec.contains('.') { "" } else { ".6" };
                let spec = format!("{}{prec}{conv}", spec_tail(""));
                format_value(&Value::Float(n.as_f64()), &spec)?
            }
            'c' => match &value {
                Value::Str(s) if s.chars().count() == 1 => s.clone(),
                Value::Int(i) => format_value(&Value::Int(*i), "c")?,
                _ => return Err(("TypeError", "%c requires int or char".into())),
            },
            other => {
                return Err(value_err(format!(
                    "unsupported format character '{other}' (0x{:x}) at index {}",
                    u32::from(other),
                    i - 1
                )));
            }
        };
        out.push_str(&text);
    }
    // A mapping argument may go unused ('abc' % {'a': 1} is fine); extra positional
    // arguments may not.
    if mapping.is_none() && next < items.len() {
        return Err((
            "TypeError",
            "not all arguments converted during string formatting".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(t: &str, args: &[Value]) -> String {
        format(t, args, &[]).unwrap()
    }

    #[test]
    fn format_fields_and_specs() {
        assert_eq!(f("{} and {}", &[Value::Int(1), Value::str("x")]), "1 and x");
        assert_eq!(f("{1}{0}", &[Value::Int(1), Value::Int(2)]), "21");
        assert_eq!(
            f(
                "{:>5}|{:<4}|{:^5}",
                &[Value::str("a"), Value::str("b"), Value::str("c")]
            ),
            "    a|b   |  c  "
        );
        assert_eq!(f("{:.2f}", &[Value::Float(1.23456)]), "1.23");
        assert_eq!(f("{:05d}", &[Value::Int(42)]), "00042");
        assert_eq!(f("{:,}", &[Value::Int(1234567)]), "1,234,567");
        assert_eq!(
            f("{:x} {:#o}", &[Value::Int(255), Value::Int(8)]),
            "ff 0o10"
        );
        assert_eq!(f("{:e}", &[Value::Float(12345.678)]), "1.234568e+04");
        assert_eq!(
            f("{:g} {:g}", &[Value::Float(0.0001), Value::Float(1e20)]),
            "0.0001 1e+20"
        );
        assert_eq!(f("{:.1%}", &[Value::Float(0.256)]), "25.6%");
        assert_eq!(f("{!r}", &[Value::str("x")]), "'x'");
        assert_eq!(f("{{}}", &[]), "{}");
        let kw = [("name".to_string(), Value::str("Ada"))];
        assert_eq!(format("Hi {name}!", &[], &kw).unwrap(), "Hi Ada!");
    }

    #[test]
    fn format_errors_are_pythons() {
        assert_eq!(
            format("{} {}", &[Value::Int(1)], &[]).unwrap_err(),
            (
                "IndexError",
                "Replacement index 1 out of range for positional args tuple".into()
            )
        );
        assert_eq!(
            format("{x}", &[], &[]).unwrap_err(),
            ("KeyError", "'x'".into())
        );
        assert_eq!(
            format("{:d}", &[Value::str("a")], &[]).unwrap_err(),
            (
                "ValueError",
                "Unknown format code 'd' for object of type 'str'".into()
            )
        );
    }

    #[test]
    fn percent_formatting() {
        assert_eq!(
            percent("%s-%d", &Value::tuple(vec![Value::str("a"), Value::Int(3)])).unwrap(),
            "a-3"
        );
        assert_eq!(percent("%.2f", &Value::Float(1.005)).unwrap(), "1.00");
        assert_eq!(percent("%5s|", &Value::str("ab")).unwrap(), "   ab|");
        assert_eq!(percent("%x", &Value::Int(255)).unwrap(), "ff");
    }
}
