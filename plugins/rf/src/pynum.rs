//! Python's number parsing and rounding: `int(text, base)`, `float(text)`, `round(x, n)`
//! and slice index arithmetic, with Python's error messages.

use crate::value::str_repr;

/// Python's `int(text, base)`: surrounding whitespace, a sign, `_` between digits, and
/// with base 0 or a matching base a `0x`/`0o`/`0b` prefix. The error is Python's
/// `ValueError` message.
pub fn parse_int(text: &str, base: u32) -> Result<i64, String> {
    let err = || {
        format!(
            "invalid literal for int() with base {base}: {}",
            str_repr(text)
        )
    };
    if base == 1 || base > 36 {
        return Err("int() base must be >= 2 and <= 36, or 0".into());
    }
    let s = text.trim();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = s.to_ascii_lowercase();
    let prefixed = |p: &str| lower.starts_with(p);
    let (radix, digits) = if (base == 0 || base == 16) && prefixed("0x") {
        (16, &s[2..])
    } else if (base == 0 || base == 8) && prefixed("0o") {
        (8, &s[2..])
    } else if (base == 0 || base == 2) && prefixed("0b") {
        (2, &s[2..])
    } else if base == 0 {
        // Base 0 without a prefix: decimal, and no leading zeros except for zero itself.
        if s.len() > 1 && s.starts_with('0') && s.bytes().any(|b| b != b'0' && b != b'_') {
            return Err(err());
        }
        (10, s)
    } else {
        (base, s)
    };
    // After a prefix a single underscore may come first (`0x_ff`).
    let digits = if radix != 10 && digits.len() != s.len() {
        digits.strip_prefix('_').unwrap_or(digits)
    } else {
        digits
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return Err(err());
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    if !clean.chars().all(|c| c.is_digit(radix)) {
        return Err(err());
    }
    let magnitude = u64::from_str_radix(&clean, radix).map_err(|_| {
        "integer is too large for this sandbox (Robot Framework would use an arbitrary-precision integer)".to_string()
    })?;
    let value = if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    };
    value.ok_or_else(|| {
        "integer is too large for this sandbox (Robot Framework would use an arbitrary-precision integer)".to_string()
    })
}

/// Python's `float(text)`.
pub fn parse_float(text: &str) -> Result<f64, String> {
    let err = || format!("could not convert string to float: {}", str_repr(text));
    let s = text.trim();
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if matches!(unsigned, "inf" | "infinity" | "nan") {
        return lower.parse::<f64>().map_err(|_| err());
    }
    // Underscores only between digits.
    let bytes = s.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'_' {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let after = bytes.get(i + 1);
            if !before.is_some_and(|c| c.is_ascii_digit()) || !after.is_some_and(u8::is_ascii_digit)
            {
                return Err(err());
            }
        }
    }
    let clean: String = s.chars().filter(|c| *c != '_').collect();
    if clean.is_empty()
        || !clean
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        || !clean.chars().any(|c| c.is_ascii_digit())
    {
        return Err(err());
    }
    clean.parse::<f64>().map_err(|_| err())
}

/// Python's `round(x, ndigits)` for floats: the nearest value with `ndigits` decimals,
/// ties to even on the exact binary value (so `round(2.675, 2)` is 2.67, as in Python).
pub fn round_float(x: f64, ndigits: i64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    if ndigits >= 0 {
        // Formatting rounds the exact binary value correctly, as Python's round does.
        let digits = usize::try_from(ndigits.min(340)).unwrap_or(340);
        format!("{x:.digits$}").parse().unwrap_or(x)
    } else {
        let factor = 10f64.powi(i32::try_from((-ndigits).min(308)).unwrap_or(308));
        (x / factor).round_ties_even() * factor
    }
}

/// Python's `round(x)`: to the nearest integer, ties to even.
pub fn round_to_int(x: f64) -> Result<i64, String> {
    if x.is_nan() {
        return Err("cannot convert float NaN to integer".into());
    }
    if x.is_infinite() {
        return Err("cannot convert float infinity to integer".into());
    }
    let r = x.round_ties_even();
    if r.abs() >= 9.2e18 {
        return Err("integer is too large for this sandbox".into());
    }
    Ok(r as i64)
}

/// The positions a Python slice `[start:stop:step]` selects from a sequence of `len`
/// items, or Python's error for a zero step.
pub fn slice_indices(
    len: usize,
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
) -> Result<Vec<usize>, String> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err("slice step cannot be zero".into());
    }
    let adjust = |v: i64, lower: i64, upper: i64| {
        let v = if v < 0 { v.saturating_add(len) } else { v };
        v.clamp(lower, upper)
    };
    let mut out = Vec::new();
    if step > 0 {
        let start = start.map_or(0, |s| adjust(s, 0, len));
        let stop = stop.map_or(len, |s| adjust(s, 0, len));
        let mut i = start;
        while i < stop {
            out.push(i as usize);
            i += step;
        }
    } else {
        let start = start.map_or(len - 1, |s| adjust(s, -1, len - 1));
        let stop = stop.map_or(-1, |s| adjust(s, -1, len - 1));
        let mut i = start;
        while i > stop {
            out.push(i as usize);
            i += step;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_parse_like_python() {
        assert_eq!(parse_int(" 12 ", 10), Ok(12));
        assert_eq!(parse_int("1_000", 10), Ok(1000));
        assert_eq!(parse_int("-0x1f", 16), Ok(-31));
        assert_eq!(parse_int("ff", 16), Ok(255));
        assert_eq!(parse_int("0b101", 0), Ok(5));
        assert_eq!(
            parse_int("1.5", 10).unwrap_err(),
            "invalid literal for int() with base 10: '1.5'"
        );
        assert!(parse_int("1__0", 10).is_err());
        assert!(parse_int("", 10).is_err());
    }

    #[test]
    fn floats_parse_like_python() {
        assert_eq!(parse_float("1e3"), Ok(1000.0));
        assert_eq!(parse_float(" -1.5 "), Ok(-1.5));
        assert_eq!(parse_float("1_0.5"), Ok(10.5));
        assert!(parse_float("inf").unwrap().is_infinite());
        assert_eq!(
            parse_float("abc").unwrap_err(),
            "could not convert string to float: 'abc'"
        );
    }

    #[test]
    fn rounding_matches_python() {
        assert_eq!(round_float(2.675, 2), 2.67);
        assert_eq!(round_float(1.23456, 3), 1.235);
        assert_eq!(round_float(1250.0, -2), 1200.0);
        assert_eq!(round_to_int(2.5), Ok(2));
        assert_eq!(round_to_int(3.5), Ok(4));
    }

    #[test]
    fn slices_follow_python() {
        assert_eq!(slice_indices(5, Some(1), Some(3), None), Ok(vec![1, 2]));
        assert_eq!(slice_indices(3, None, None, Some(-1)), Ok(vec![2, 1, 0]));
        assert_eq!(slice_indices(5, Some(-2), None, None), Ok(vec![3, 4]));
        assert_eq!(slice_indices(5, Some(10), None, None), Ok(vec![]));
        assert!(slice_indices(5, None, None, Some(0)).is_err());
    }
}
