//! `datetime.strptime` as CPython's `_strptime` module does it: the format becomes the same
//! regular expression Python builds (C locale names, case-insensitive, anchored at the
//! start), and the matched fields are combined with Python's rules: `%y` pivots at 69,
//! `%I` with `%p`, `%j` and week numbers with a weekday override month and day, a
//! missing year is 1900. The error messages are Python's.
//!
//! `regex` finds the same leftmost-first match as Python's backtracking engine for these
//! patterns, since they have no back-references or look-around.

use regex::RegexBuilder;

use super::dates::{Date, DateTime, is_leap};
use crate::error::{RfError, RfResult};
use crate::value::str_repr;

const F_WEEKDAY: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];
const F_MONTH: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// `_strptime`'s `__seqToRE`: longest names first.
fn names_re(names: &[String], directive: char) -> String {
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort_by_key(|n| std::cmp::Reverse(n.chars().count()));
    let alternatives: Vec<String> = sorted.iter().map(|n| regex::escape(n)).collect();
    format!("(?P<{directive}>{})", alternatives.join("|"))
}

fn directive_re(c: char) -> Option<String> {
    let abbr = |full: &[&str]| full.iter().map(|n| n[..3].to_string()).collect::<Vec<_>>();
    let full = |full: &[&str]| full.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    Some(match c {
        'd' => r"(?P<d>3[0-1]|[1-2]\d|0[1-9]|[1-9]| [1-9])".into(),
        'f' => r"(?P<f>[0-9]{1,6})".into(),
        'H' => r"(?P<H>2[0-3]|[0-1]\d|\d)".into(),
        'I' => r"(?P<I>1[0-2]|0[1-9]|[1-9])".into(),
        'G' => r"(?P<G>\d\d\d\d)".into(),
        'j' => r"(?P<j>36[0-6]|3[0-5]\d|[1-2]\d\d|0[1-9]\d|00[1-9]|[1-9]\d|0[1-9]|[1-9])".into(),
        'm' => r"(?P<m>1[0-2]|0[1-9]|[1-9])".into(),
        'M' => r"(?P<M>[0-5]\d|\d)".into(),
        'S' => r"(?P<S>6[0-1]|[0-5]\d|\d)".into(),
        'U' => r"(?P<U>5[0-3]|[0-4]\d|\d)".into(),
        'W' => r"(?P<W>5[0-3]|[0-4]\d|\d)".into(),
        'w' => r"(?P<w>[0-6])".into(),
        'u' => r"(?P<u>[1-7])".into(),
        'V' => r"(?P<V>5[0-3]|0[1-9]|[1-4]\d|\d)".into(),
        'y' => r"(?P<y>\d\d)".into(),
        'Y' => r"(?P<Y>\d\d\d\d)".into(),
        'z' => r"(?P<z>[+-]\d\d:?[0-5]\d(:?[0-5]\d(\.\d{1,6})?)?|(?-i:Z))".into(),
        'A' => names_re(&full(&F_WEEKDAY), 'A'),
        'a' => names_re(&abbr(&F_WEEKDAY), 'a'),
        'B' => names_re(&full(&F_MONTH), 'B'),
        'b' => names_re(&abbr(&F_MONTH), 'b'),
        'p' => names_re(&["am".into(), "pm".into()], 'p'),
        // Python's time zone names in UTC, the sandbox's only zone.
        'Z' => names_re(&["utc".into(), "gmt".into()], 'Z'),
        '%' => "%".into(),
        'c' => pattern("%a %b %d %H:%M:%S %Y").ok()?,
        'x' => pattern("%m/%d/%y").ok()?,
        'X' => pattern("%H:%M:%S").ok()?,
        _ => return None,
    })
}

/// Why a format has no pattern: a bad directive (the character) or a stray `%` at the end.
enum PatternError {
    Bad(char),
    Stray,
}

/// `TimeRE.pattern`: escape regex syntax, turn whitespace runs into `\s+`, replace the
/// directives.
fn pattern(format: &str) -> Result<String, PatternError> {
    let mut escaped = String::with_capacity(format.len() * 2);
    let mut in_space = false;
    for c in format.chars() {
        if c.is_whitespace() {
            if !in_space {
                escaped.push_str(r"\s+");
            }
            in_space = true;
            continue;
        }
        in_space = false;
        if "\\.^$*+?(){}[]|".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    let mut out = String::new();
    let mut chars = escaped.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(d) = chars.next() else {
            return Err(PatternError::Stray);
        };
        out.push_str(&directive_re(d).ok_or(PatternError::Bad(d))?);
    }
    Ok(out)
}

fn int_of(text: &str) -> RfResult<i64> {
    // `\d` also matches other scripts' digits, which Python's int() reads; Rust's parse
    // does not, so those fail plainly rather than as a wrong number.
    text.trim().parse::<i64>().map_err(|_| {
        RfError::value(format!(
            "the rf sandbox reads only ASCII digits in dates, got {}",
            str_repr(text)
        ))
    })
}

/// `datetime.strptime(data, format)`, naive datetimes only: `%z` (a UTC offset, which
/// makes Python return an aware datetime) fails.
pub fn strptime(data: &str, format: &str) -> RfResult<DateTime> {
    let regex_text = match pattern(format) {
        Ok(p) => p,
        Err(PatternError::Bad(c)) => {
            let shown = if c == '\\' { '%' } else { c };
            return Err(RfError::value(format!(
                "'{shown}' is a bad directive in format {}",
                str_repr(format)
            )));
        }
        Err(PatternError::Stray) => {
            return Err(RfError::value(format!(
                "stray % in format {}",
                str_repr(format)
            )));
        }
    };
    let regex = RegexBuilder::new(&format!("^(?:{regex_text})"))
        .case_insensitive(true)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => RfError::fail(format!(
                "Date format {} is too long for the rf sandbox.",
                str_repr(&format.chars().take(100).collect::<String>())
            )),
            _ => RfError::fail(format!(
                "Date format {} uses a directive more than once, which Python's strptime rejects (re.error); the rf sandbox does not reproduce that message.",
                str_repr(format)
            )),
        })?;
    let Some(caps) = regex.captures(data) else {
        return Err(RfError::value(format!(
            "time data {} does not match format {}",
            str_repr(data),
            str_repr(format)
        )));
    };
    let end = caps.get(0).map_or(0, |m| m.end());
    if end != data.len() {
        return Err(RfError::value(format!(
            "unconverted data remains: {}",
            &data[end..]
        )));
    }
    let get = |name: &str| caps.name(name).map(|m| m.as_str());
    if get("z").is_some() {
        return Err(RfError::fail(format!(
            "Date format {} has %z: Python would return a time-zone-aware datetime, which the rf sandbox (UTC only, naive dates) does not support.",
            str_repr(format)
        )));
    }
    let mut year: Option<i64> = None;
    let mut iso_year: Option<i64> = None;
    let (mut month, mut day, mut hour, mut minute, mut second, mut fraction) =
        (1i64, 1i64, 0i64, 0i64, 0i64, 0i64);
    let mut iso_week: Option<i64> = None;
    let mut week_of_year: Option<i64> = None;
    let mut week_starts_monday = false;
    let mut weekday: Option<i64> = None;
    let mut julian: Option<i64> = None;
    // Python walks the groups in pattern order; later directives override earlier ones.
    for name in regex.capture_names().flatten() {
        let Some(text) = get(name) else { continue };
        let lower = text.to_lowercase();
        match name {
            "y" => {
                let y = int_of(text)?;
                year = Some(if y <= 68 { y + 2000 } else { y + 1900 });
            }
            "Y" => year = Some(int_of(text)?),
            "G" => iso_year = Some(int_of(text)?),
            "m" => month = int_of(text)?,
            "B" => {
                month = F_MONTH
                    .iter()
                    .position(|m| *m == lower)
                    .map_or(0, |i| i as i64 + 1)
            }
            "b" => {
                month = F_MONTH
                    .iter()
                    .position(|m| m[..3] == lower)
                    .map_or(0, |i| i as i64 + 1)
            }
            "d" => day = int_of(text)?,
            "H" => hour = int_of(text)?,
            "I" => {
                hour = int_of(text)?;
                match get("p").map(str::to_lowercase).as_deref() {
                    // No AM/PM means AM: 12 is midnight.
                    None | Some("") | Some("am") if hour == 12 => hour = 0,
                    Some("pm") if hour != 12 => hour += 12,
                    _ => {}
                }
            }
            "M" => minute = int_of(text)?,
            "S" => second = int_of(text)?,
            "f" => fraction = int_of(&format!("{text:0<6}"))?,
            "A" => weekday = F_WEEKDAY.iter().position(|d| *d == lower).map(|i| i as i64),
            "a" => {
                weekday = F_WEEKDAY
                    .iter()
                    .position(|d| d[..3] == lower)
                    .map(|i| i as i64)
            }
            "w" => {
                let w = int_of(text)?;
                weekday = Some(if w == 0 { 6 } else { w - 1 });
            }
            "u" => weekday = Some(int_of(text)? - 1),
            "j" => julian = Some(int_of(text)?),
            "U" | "W" => {
                week_of_year = Some(int_of(text)?);
                week_starts_monday = name == "W";
            }
            "V" => iso_week = Some(int_of(text)?),
            _ => {}
        }
    }
    if year.is_none() && iso_year.is_some() {
        if iso_week.is_none() || weekday.is_none() {
            return Err(RfError::value(
                "ISO year directive '%G' must be used with the ISO week directive '%V' and a weekday directive ('%A', '%a', '%w', or '%u').",
            ));
        }
        if julian.is_some() {
            return Err(RfError::value(
                "Day of the year directive '%j' is not compatible with ISO year directive '%G'. Use '%Y' instead.",
            ));
        }
    } else if week_of_year.is_none() && iso_week.is_some() {
        return Err(RfError::value(if weekday.is_none() {
            "ISO week directive '%V' must be used with the ISO year directive '%G' and a weekday directive ('%A', '%a', '%w', or '%u')."
        } else {
            "ISO week directive '%V' is incompatible with the year directive '%Y'. Use the ISO year '%G' instead."
        }));
    }
    let mut leap_year_fix = false;
    let mut year = match year {
        Some(y) => y,
        None if month == 2 && day == 29 => {
            leap_year_fix = true;
            1904
        }
        None => 1900,
    };
    if julian.is_none()
        && let Some(wd) = weekday
    {
        if let Some(week) = week_of_year {
            julian = Some(julian_from_u_or_w(year, week, wd, week_starts_monday)?);
        } else if let (Some(iy), Some(iw)) = (iso_year, iso_week) {
            let (y, j) = julian_from_v(iy, iw, wd + 1)?;
            year = y;
            julian = Some(j);
        }
        if let Some(j) = julian
            && j <= 0
        {
            year -= 1;
            julian = Some(j + if is_leap(year) { 366 } else { 365 });
        }
    }
    let date = match julian {
        None => Date::new(year, month, day)?,
        Some(j) => Date::from_ordinal(j - 1 + Date::new(year, 1, 1)?.ordinal())?,
    };
    let date = if leap_year_fix {
        // Python sets the year back to 1900 after its computations, and 1900-02-29
        // then fails in the datetime constructor.
        let (_, m, d) = date.ymd();
        Date::new(1900, i64::from(m), i64::from(d))?
    } else {
        date
    };
    DateTime::new(date, hour, minute, second, fraction)
}

/// `_calc_julian_from_U_or_W`.
fn julian_from_u_or_w(year: i64, week: i64, weekday: i64, monday_first: bool) -> RfResult<i64> {
    let mut first = i64::from(Date::new(year, 1, 1)?.weekday());
    let mut weekday = weekday;
    if !monday_first {
        first = (first + 1) % 7;
        weekday = (weekday + 1) % 7;
    }
    let week_0_length = (7 - first) % 7;
    Ok(if week == 0 {
        1 + weekday - first
    } else {
        1 + week_0_length + 7 * (week - 1) + weekday
    })
}

/// `_calc_julian_from_V`.
fn julian_from_v(iso_year: i64, iso_week: i64, iso_weekday: i64) -> RfResult<(i64, i64)> {
    let correction = i64::from(Date::new(iso_year, 1, 4)?.weekday()) + 1 + 3;
    let mut ordinal = iso_week * 7 + iso_weekday - correction;
    let mut year = iso_year;
    if ordinal < 1 {
        ordinal += Date::new(year, 1, 1)?.ordinal();
        year -= 1;
        ordinal -= Date::new(year, 1, 1)?.ordinal();
    }
    Ok((year, ordinal))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(data: &str, format: &str) -> String {
        match strptime(data, format) {
            Ok(dt) => dt.to_str(),
            Err(e) => e.message,
        }
    }

    #[test]
    fn like_python() {
        assert_eq!(
            parse("24.4.2014 21:45:12-123", "%d.%m.%Y %H:%M:%S-%f"),
            "2014-04-24 21:45:12.123000"
        );
        assert_eq!(
            parse("04/24/2014T21.45.12", "%m/%d/%YT%H.%M.%S"),
            "2014-04-24 21:45:12"
        );
        assert_eq!(
            parse("thu APR 24  9:45 pm 14", "%a %b %d %I:%M %p %y"),
            "2014-04-24 21:45:00"
        );
        assert_eq!(parse("2014 115", "%Y %j"), "2014-04-25 00:00:00");
        assert_eq!(parse("2014 16 4", "%Y %W %w"), "2014-04-24 00:00:00");
        assert_eq!(parse("2020 53 7", "%G %V %u"), "2021-01-03 00:00:00");
        assert_eq!(
            parse("29.02.", "%d.%m."),
            "ValueError: day is out of range for month"
        );
        assert_eq!(
            parse("2015-xxx", "%Y-%f"),
            "ValueError: time data '2015-xxx' does not match format '%Y-%f'"
        );
        assert_eq!(
            parse("2015-1x", "%Y-%f"),
            "ValueError: unconverted data remains: x"
        );
        assert_eq!(parse("2015", "%Y%"), "ValueError: stray % in format '%Y%'");
        assert_eq!(
            parse("2015", "%Q"),
            "ValueError: 'Q' is a bad directive in format '%Q'"
        );
        assert_eq!(
            parse("2015", "%."),
            "ValueError: '%' is a bad directive in format '%.'"
        );
        assert_eq!(
            parse("2015 31 02", "%Y %d %m"),
            "ValueError: day is out of range for month"
        );
        assert_eq!(parse("0000", "%Y"), "ValueError: year 0 is out of range");
        assert_eq!(
            parse("12:61", "%H:%S"),
            "ValueError: second must be in 0..59"
        );
    }
}
