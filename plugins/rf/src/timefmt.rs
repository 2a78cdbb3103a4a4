//! Robot Framework time strings and `Get Time`.
//!
//! `timestr_to_secs` reads `1.5`, `2 minutes 3s`, `1h 10min`, `01:02:03.5`, `-1d` and so
//! on; `secs_to_timestr` writes `1 minute 3 seconds` or, compact, `1min 3s`. Dates are in
//! UTC: the sandbox has no time zone database, and RF would use the machine's local time.

use std::time::{SystemTime, UNIX_EPOCH};

pub mod dates;
mod strftime;
mod strptime;

pub use strftime::strftime;
pub use strptime::strptime;

use crate::error::RfError;
use crate::matching::normalize;
use crate::pynum::round_float;
use crate::value::{Value, plural};

/// RF's `timestr_to_secs`, rounded to milliseconds. The error is RF's message.
pub fn timestr_to_secs(value: &Value) -> Result<f64, String> {
    let secs = timestr_to_secs_unrounded(value)?;
    // A timedelta's seconds are not rounded (RF returns `total_seconds()` as it is).
    Ok(match value {
        Value::TimeDelta(_) => secs,
        _ => round_float(secs, 3),
    })
}

/// RF's `timestr_to_secs(value, round_to=None)`, as the DateTime library reads times.
pub fn timestr_to_secs_unrounded(value: &Value) -> Result<f64, String> {
    let err = || format!("Invalid time string '{}'.", value.to_str());
    Ok(match value {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::TimeDelta(td) => td.total_seconds(),
        Value::Str(s) => {
            let s = s.as_str();
            number(s)
                .or_else(|| timer(s))
                .or_else(|| time_string(s))
                .ok_or_else(err)?
        }
        _ => return Err(err()),
    })
}

fn number(s: &str) -> Option<f64> {
    crate::pynum::parse_float(s).ok()
}

/// `[-]hh:mm:ss[.fff]` or `mm:ss`.
fn timer(s: &str) -> Option<f64> {
    let (sign, rest) = match s.as_bytes().first() {
        Some(b'-') => (-1.0, &s[1..]),
        Some(b'+') => (1.0, &s[1..]),
        _ => (1.0, s),
    };
    let (main, millis) = match rest.split_once('.') {
        Some((m, f)) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => (m, Some(f)),
        Some(_) => return None,
        None => (rest, None),
    };
    let parts: Vec<&str> = main.split(':').collect();
    if !(2..=3).contains(&parts.len())
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let nums: Vec<f64> = parts.iter().filter_map(|p| p.parse().ok()).collect();
    let mut secs = match nums.as_slice() {
        [m, s] => m * 60.0 + s,
        [h, m, s] => h * 3600.0 + m * 60.0 + s,
        _ => return None,
    };
    if let Some(f) = millis {
        secs += f.parse::<f64>().ok()? / 10f64.powi(i32::try_from(f.len()).ok()?);
    }
    Some(sign * secs)
}

/// `1 day 2 hours 3 minutes 4 seconds 5 milliseconds`, `1d 2h 3min 4s 5ms` ...
fn time_string(s: &str) -> Option<f64> {
    let mut t = normalize(s, &[], true, true);
    if t.is_empty() {
        return None;
    }
    let mut seen = Vec::new();
    for (spec, aliases) in [
        ('n', &["nanosecond", "ns"][..]),
        ('u', &["microsecond", "us", "μs"][..]),
        (
            'M',
            &["millisecond", "millisec", "millis", "msec", "ms"][..],
        ),
        ('s', &["second", "sec"][..]),
        ('m', &["minute", "min"][..]),
        ('h', &["hour"][..]),
        ('d', &["day"][..]),
        ('w', &["week"][..]),
    ] {
        let plurals: Vec<String> = aliases
            .iter()
            .filter(|a| !a.ends_with('s'))
            .map(|a| format!("{a}s"))
            .collect();
        for alias in plurals
            .iter()
            .map(String::as_str)
            .chain(aliases.iter().copied())
        {
            if t.contains(alias) {
                t = t.replace(alias, &spec.to_string());
            }
        }
        if t.contains(spec) {
            seen.push(spec);
        }
    }
    if seen.iter().any(|c| t.matches(*c).count() > 1) {
        return None;
    }
    let (sign, body) = match t.strip_prefix('-') {
        Some(b) => (-1.0, b.to_string()),
        None => (1.0, t),
    };
    // n u M s m h d w, combined below in RF's own order of operations: the last digit of
    // the float depends on it (`123 μs` is 123 / 1e6, not 123 * 1e-6).
    let mut values = [0.0f64; 8];
    let mut num = String::new();
    for c in body.chars() {
        let Some(slot) = "nuMsmhdw".find(c) else {
            num.push(c);
            continue;
        };
        values[slot] = crate::pynum::parse_float(&num).ok()?;
        num.clear();
    }
    if !num.is_empty() {
        return None;
    }
    let [nanos, micros, millis, secs, mins, hours, days, weeks] = values;
    Some(
        sign * (nanos / 1e9
            + micros / 1e6
            + millis / 1e3
            + secs
            + mins * 60.0
            + hours * 60.0 * 60.0
            + days * 60.0 * 60.0 * 24.0
            + weeks * 60.0 * 60.0 * 24.0 * 7.0),
    )
}

/// RF's `secs_to_timestr`: `1 hour 2 minutes 3 seconds` or, compact, `1h 2min 3s`.
/// Seconds past what an `i128` holds (and infinities) saturate; [`try_secs_to_timestr`]
/// fails for them instead.
pub fn secs_to_timestr(secs: f64, compact: bool) -> String {
    let sign = if secs < 0.0 { "- " } else { "" };
    let secs = secs.abs();
    let (int_secs, millis) = secs_and_millis(secs);
    let parts: [(i128, &str, &str); 5] = [
        (int_secs / 86400, "d", "day"),
        (int_secs / 3600 % 24, "h", "hour"),
        (int_secs / 60 % 60, "min", "minute"),
        (int_secs % 60, "s", "second"),
        (i128::from(millis), "ms", "millisecond"),
    ];
    let items: Vec<String> = parts
        .iter()
        .filter(|(v, _, _)| *v != 0)
        .map(|(v, short, long)| {
            if compact {
                format!("{v}{short}")
            } else {
                format!("{v} {long}{}", plural(usize::try_from(*v).unwrap_or(2)))
            }
        })
        .collect();
    if items.is_empty() {
        return if compact { "0s" } else { "0 seconds" }.into();
    }
    format!("{sign}{}", items.join(" "))
}

/// RF's `_float_secs_to_secs_and_millis` of a non-negative number: whole seconds and
/// milliseconds rounded half to even, carrying 1000 ms into a second.
fn secs_and_millis(secs: f64) -> (i128, i64) {
    let whole = secs.trunc();
    let millis = ((secs - whole) * 1000.0).round_ties_even() as i64;
    if millis >= 1000 {
        (whole as i128 + 1, 0)
    } else {
        (whole as i128, millis)
    }
}

/// Python's errors for `int(x)` (and `round(x)`) of a float that is NaN or infinite.
pub(crate) fn check_float_to_int(secs: f64) -> Result<(), RfError> {
    if secs.is_nan() {
        return Err(RfError::value("cannot convert float NaN to integer"));
    }
    if secs.is_infinite() {
        return Err(RfError::py(
            "OverflowError",
            "cannot convert float infinity to integer",
        ));
    }
    Ok(())
}

/// Python's errors for `int(x)` of a float, and the sandbox's for one too large for an
/// `i128` (Python's integers have no limit).
fn check_int_range(secs: f64) -> Result<(), RfError> {
    check_float_to_int(secs)?;
    if secs.abs() >= 1.7e38 {
        return Err(RfError::fail(format!(
            "Time {} is too large for the rf sandbox (its integers have 128 bits; Robot Framework's have no limit).",
            crate::value::float_repr(secs)
        )));
    }
    Ok(())
}

/// [`secs_to_timestr`] with Python's errors for NaN and infinity.
pub fn try_secs_to_timestr(secs: f64, compact: bool) -> Result<String, RfError> {
    check_int_range(secs)?;
    Ok(secs_to_timestr(secs, compact))
}

/// RF's `elapsed_time_to_string(secs, include_millis, seconds=True)`: `-01:02:03.004`,
/// hours not wrapped at 24.
pub fn elapsed_time_to_string(secs: f64, include_millis: bool) -> Result<String, RfError> {
    check_int_range(secs)?;
    let prefix = if secs < 0.0 { "-" } else { "" };
    let elapsed = secs.abs();
    if include_millis {
        let elapsed = round_float(elapsed, 3);
        check_int_range(elapsed)?;
        let whole = elapsed.trunc();
        let millis = ((elapsed - whole) * 1000.0).round_ties_even() as i128;
        let whole = whole as i128;
        let (mins, s) = (whole / 60, whole % 60);
        let (hours, mins) = (mins / 60, mins % 60);
        Ok(format!("{prefix}{hours:02}:{mins:02}:{s:02}.{millis:03}"))
    } else {
        let whole = elapsed.round_ties_even();
        check_int_range(whole)?;
        let whole = whole as i128;
        let (mins, s) = (whole / 60, whole % 60);
        let (hours, mins) = (mins / 60, mins % 60);
        Ok(format!("{prefix}{hours:02}:{mins:02}:{s:02}"))
    }
}

/// Seconds since the epoch, now.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Now as a naive UTC datetime (`datetime.now()` has microseconds, rounded down).
pub fn now_datetime() -> Result<dates::DateTime, RfError> {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| RfError::fail("The clock is before 1970."))?;
    let secs = i64::try_from(since.as_secs())
        .map_err(|_| RfError::fail("The clock is past year 9999."))?;
    dates::DateTime::from_epoch_parts(secs, i64::from(since.subsec_micros()))
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) to days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn valid_date(y: i64, m: u32, d: u32) -> bool {
    let days_in = |m: u32| match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 0,
    };
    (1..=9999).contains(&y) && (1..=12).contains(&m) && d >= 1 && d <= days_in(m)
}

/// RF's `parse_time`: epoch seconds, a timestamp (`2024-01-31 12:00:00`), or `NOW` / `UTC`
/// with an optional `+ 1 day` style offset. Returns whole epoch seconds.
pub fn parse_time(value: &Value) -> Result<i64, String> {
    let text = value.to_str();
    let err = || format!("Invalid time format '{text}'.");
    if let Some(n) = value
        .as_number()
        .map(|n| n.as_f64())
        .or_else(|| crate::pynum::parse_float(&text).ok())
    {
        if n < 0.0 {
            return Err(format!("Epoch time must be positive, got '{text}'."));
        }
        return Ok(n as i64);
    }
    if let Some(t) = parse_timestamp(&text) {
        return Ok(t);
    }
    let lower: String = text.replace(' ', "").to_lowercase();
    if lower.len() >= 3 && (lower.starts_with("now") || lower.starts_with("utc")) {
        let base = now();
        let extra = &lower[3..];
        let offset = if extra.is_empty() {
            0.0
        } else {
            let sign = match extra.as_bytes()[0] {
                b'+' => 1.0,
                b'-' => -1.0,
                _ => return Err(err()),
            };
            sign * timestr_to_secs(&Value::str(&extra[1..])).map_err(|_| err())?
        };
        return Ok((base + offset) as i64);
    }
    Err(err())
}

/// `YYYY-MM-DD hh:mm:ss(.ffffff)` in any of RF's separator styles, as UTC epoch seconds.
fn parse_timestamp(text: &str) -> Option<i64> {
    let digits: String = text
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | ' ' | 'T' | ':' | '.'))
        .collect();
    if digits.len() < 8 || digits.len() > 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let padded = format!("{digits:0<20}");
    let num = |a: usize, b: usize| padded[a..b].parse::<i64>().ok();
    let (y, mo, d) = (num(0, 4)?, num(4, 6)?, num(6, 8)?);
    let (h, mi, s) = (num(8, 10)?, num(10, 12)?, num(12, 14)?);
    let (mo, d) = (u32::try_from(mo).ok()?, u32::try_from(d).ok()?);
    if !valid_date(y, mo, d) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s)
}

/// RF's `get_time(format, time)`: epoch seconds, the requested parts, or a timestamp.
pub fn get_time(format: &str, epoch: i64) -> Value {
    let format = format.to_lowercase();
    if format.contains("epoch") {
        return Value::Int(epoch);
    }
    let days = epoch.div_euclid(86400);
    let secs = epoch.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let parts: Vec<Value> = [
        (y, "year"),
        (i64::from(m), "month"),
        (i64::from(d), "day"),
        (h, "hour"),
        (mi, "min"),
        (s, "sec"),
    ]
    .iter()
    .filter(|(_, name)| format.contains(name))
    .map(|(v, _)| Value::Str(format!("{v:02}")))
    .collect();
    match parts.len() {
        0 => Value::Str(format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02}")),
        1 => parts.into_iter().next().unwrap_or(Value::None),
        _ => Value::list(parts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: &str) -> f64 {
        timestr_to_secs(&Value::str(s)).unwrap()
    }

    #[test]
    fn time_strings() {
        assert_eq!(secs("1.5"), 1.5);
        assert_eq!(secs("2 minutes 3s"), 123.0);
        assert_eq!(secs("1h 10min"), 4200.0);
        assert_eq!(secs("01:02:03.5"), 3723.5);
        assert_eq!(secs("100ms"), 0.1);
        assert_eq!(secs("-1d"), -86400.0);
        assert_eq!(
            timestr_to_secs(&Value::str("abc")).unwrap_err(),
            "Invalid time string 'abc'."
        );
        assert!(timestr_to_secs(&Value::str("1s 1s")).is_err());
    }

    #[test]
    fn time_to_text() {
        assert_eq!(secs_to_timestr(63.0, false), "1 minute 3 seconds");
        assert_eq!(secs_to_timestr(0.5, false), "500 milliseconds");
        assert_eq!(secs_to_timestr(3661.0, true), "1h 1min 1s");
        assert_eq!(secs_to_timestr(0.0, false), "0 seconds");
    }

    #[test]
    fn get_time_formats() {
        assert_eq!(get_time("epoch", 1_700_000_000).repr(), "1700000000");
        assert_eq!(
            get_time("timestamp", 1_700_000_000).repr(),
            "'2023-11-14 22:13:20'"
        );
        assert_eq!(
            get_time("year month day", 1_700_000_000).repr(),
            "['2023', '11', '14']"
        );
        assert_eq!(get_time("hour", 1_700_000_000).repr(), "'22'");
        assert_eq!(
            parse_time(&Value::str("2023-11-14 22:13:20")),
            Ok(1_700_000_000)
        );
        assert_eq!(
            parse_time(&Value::str("20231114 221320")),
            Ok(1_700_000_000)
        );
    }
}
