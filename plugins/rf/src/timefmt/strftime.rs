//! `datetime.strftime` as CPython on Linux does it: Python itself fills in `%f`, `%z` and
//! `%Z` (empty for naive datetimes), and glibc's `strftime` in the C locale does the rest,
//! with its flags (`-`, `_`, `0`, `^`, `#`), field widths and its habit of copying an
//! unknown directive through as text.

use super::dates::DateTime;
use crate::error::{RfError, RfResult};

const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Widths past this would only build huge strings; glibc would fail them too.
const MAX_WIDTH: usize = 1024;
/// Output past this fails: widths could otherwise multiply a bounded format into gigabytes.
const MAX_OUTPUT: usize = 16 << 20;

/// `dt.strftime(format)`.
pub fn strftime(dt: DateTime, format: &str) -> RfResult<String> {
    if format.contains('\0') {
        return Err(RfError::value("embedded null character"));
    }
    // Python's own pass: %f, %z and %Z; everything else goes to the C library.
    let mut for_libc = String::with_capacity(format.len());
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            for_libc.push(c);
            continue;
        }
        match chars.next() {
            None => for_libc.push('%'),
            Some('z' | 'Z') => {}
            Some('f') => for_libc.push_str(&format!("{:06}", dt.micro())),
            Some(other) => {
                for_libc.push('%');
                for_libc.push(other);
            }
        }
    }
    libc_strftime(dt, &for_libc).ok_or_else(|| {
        RfError::fail(format!(
            "Date format gives more than {} MiB of text, more than the rf sandbox builds.",
            MAX_OUTPUT >> 20
        ))
    })
}

fn libc_strftime(dt: DateTime, format: &str) -> Option<String> {
    let chars: Vec<char> = format.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while matches!(chars.get(i), Some('-' | '_' | '0' | '^' | '#')) {
            i += 1;
        }
        let flags = &chars[start + 1..i];
        let upper = flags.contains(&'^');
        let swap = flags.contains(&'#');
        // The last padding flag wins, as in glibc.
        let pad_flag = flags
            .iter()
            .rev()
            .find(|c| matches!(c, '-' | '_' | '0'))
            .copied();
        let mut width: Option<usize> = None;
        while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
            let w = width
                .unwrap_or(0)
                .saturating_mul(10)
                .saturating_add(d as usize);
            width = Some(w.min(MAX_WIDTH));
            i += 1;
        }
        if matches!(chars.get(i), Some('E' | 'O')) {
            i += 1;
        }
        let Some(&conv) = chars.get(i) else {
            // An unfinished directive is copied as it is.
            let text: String = chars[start..].iter().collect();
            out.push_str(&pad_text(&text, width, pad_flag));
            break;
        };
        i += 1;
        let spec = Spec {
            pad: pad_flag,
            width,
        };
        let piece = match directive(dt, conv, &spec, swap) {
            Some(p) => p,
            None => {
                let text: String = chars[start..i].iter().collect();
                pad_text(&text, width, pad_flag)
            }
        };
        if upper {
            out.push_str(&piece.to_uppercase());
        } else {
            out.push_str(&piece);
        }
        if out.len() > MAX_OUTPUT {
            return None;
        }
    }
    Some(out)
}

struct Spec {
    pad: Option<char>,
    width: Option<usize>,
}

impl Spec {
    /// A number with at least `digits` digits, padded with `default_pad` unless a flag says
    /// otherwise.
    fn num(&self, value: i64, digits: usize, default_pad: char) -> String {
        let text = value.unsigned_abs().to_string();
        let sign = if value < 0 { "-" } else { "" };
        // `-` drops the default padding; an explicit width still pads, with spaces.
        if self.pad == Some('-') && self.width.is_none() {
            return format!("{sign}{text}");
        }
        let pad = match self.pad {
            Some('_' | '-') => ' ',
            Some('0') => '0',
            _ => default_pad,
        };
        let width = self.width.unwrap_or(digits);
        let body_len = text.chars().count() + sign.len();
        let fill: String = std::iter::repeat_n(pad, width.saturating_sub(body_len)).collect();
        if pad == '0' {
            format!("{sign}{fill}{text}")
        } else {
            format!("{fill}{sign}{text}")
        }
    }

    fn text(&self, text: &str) -> String {
        pad_text(text, self.width, self.pad)
    }
}

fn pad_text(text: &str, width: Option<usize>, pad: Option<char>) -> String {
    let len = text.chars().count();
    let fill = if pad == Some('0') { '0' } else { ' ' };
    let missing = width.unwrap_or(0).saturating_sub(len);
    let mut out: String = std::iter::repeat_n(fill, missing).collect();
    out.push_str(text);
    out
}

/// (ISO year, ISO week).
fn iso_week(dt: DateTime) -> (i64, i64) {
    let date = dt.date();
    let wday = i64::from(date.weekday()); // Monday 0
    let thursday = date.ordinal() - wday + 3;
    let year = match super::dates::Date::from_ordinal(thursday) {
        Ok(d) => d.ymd().0,
        Err(_) => dt.fields().year + if thursday < 1 { -1 } else { 1 },
    };
    let jan1 = super::days_from_civil(year, 1, 1) + 719_163;
    (year, (thursday - jan1) / 7 + 1)
}

fn directive(dt: DateTime, conv: char, spec: &Spec, swap: bool) -> Option<String> {
    let f = dt.fields();
    let date = dt.date();
    let wday = i64::from(date.weekday()); // Monday 0
    let sunday_wday = (wday + 1) % 7; // Sunday 0
    let yday = date.yday(); // 1-based
    let hour12 = match f.hour % 12 {
        0 => 12,
        h => i64::from(h),
    };
    let name = |s: &str| {
        if swap {
            spec.text(&s.to_uppercase())
        } else {
            spec.text(s)
        }
    };
    let month_name = MONTHS[(f.month.clamp(1, 12) - 1) as usize];
    let day_name = DAYS[usize::try_from(wday).unwrap_or(0)];
    // The composite formats are short and fixed, so their output is small.
    let sub = |format: &str| spec.text(&libc_strftime(dt, format).unwrap_or_default());
    Some(match conv {
        'a' => name(&day_name[..3]),
        'A' => name(day_name),
        'b' | 'h' => name(&month_name[..3]),
        'B' => name(month_name),
        'c' => sub("%a %b %e %H:%M:%S %Y"),
        'C' => spec.num(f.year.div_euclid(100), 1, '0'),
        'd' => spec.num(i64::from(f.day), 2, '0'),
        'D' | 'x' => sub("%m/%d/%y"),
        'e' => spec.num(i64::from(f.day), 2, ' '),
        'F' => sub("%Y-%m-%d"),
        'G' => spec.num(iso_week(dt).0, 1, '0'),
        'g' => spec.num(iso_week(dt).0.rem_euclid(100), 2, '0'),
        'H' => spec.num(i64::from(f.hour), 2, '0'),
        'I' => spec.num(hour12, 2, '0'),
        'j' => spec.num(yday, 3, '0'),
        'k' => spec.num(i64::from(f.hour), 2, ' '),
        'l' => spec.num(hour12, 2, ' '),
        'm' => spec.num(i64::from(f.month), 2, '0'),
        'M' => spec.num(i64::from(f.minute), 2, '0'),
        'n' => spec.text("\n"),
        'p' => {
            let text = if f.hour < 12 { "AM" } else { "PM" };
            spec.text(&if swap {
                text.to_lowercase()
            } else {
                text.into()
            })
        }
        'P' => spec.text(if f.hour < 12 { "am" } else { "pm" }),
        'r' => sub("%I:%M:%S %p"),
        'R' => sub("%H:%M"),
        's' => spec.num(dt.epoch_secs(), 1, '0'),
        'S' => spec.num(i64::from(f.second), 2, '0'),
        't' => spec.text("\t"),
        'T' | 'X' => sub("%H:%M:%S"),
        'u' => spec.num(wday + 1, 1, '0'),
        'U' => spec.num((yday - 1 + 7 - sunday_wday) / 7, 2, '0'),
        'V' => spec.num(iso_week(dt).1, 2, '0'),
        'w' => spec.num(sunday_wday, 1, '0'),
        'W' => spec.num((yday - 1 + 7 - wday) / 7, 2, '0'),
        'y' => spec.num(f.year.rem_euclid(100), 2, '0'),
        'Y' => spec.num(f.year, 1, '0'),
        '%' => spec.text("%"),
        // Python hands the C library a time without a zone name.
        'Z' => spec.text(""),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::dates::{Date, DateTime};
    use super::*;

    fn fmt(y: i64, mo: i64, d: i64, h: i64, f: &str) -> String {
        let dt = DateTime::new(Date::new(y, mo, d).unwrap(), h, 5, 7, 1).unwrap();
        strftime(dt, f).unwrap()
    }

    #[test]
    fn like_glibc() {
        // Expected values from CPython 3.11 on glibc.
        assert_eq!(
            fmt(1, 1, 1, 0, "%Y|%4Y|%_6Y|%F|%C|%G|%g|%V|%U|%W"),
            "1|0001|     1|1-01-01|0|1|01|01|00|01"
        );
        assert_eq!(
            fmt(1, 1, 1, 0, "%e|%-d|%k|%l|%I|%p|%P|%^a|%#b|%#p"),
            " 1|1| 0|12|12|AM|am|MON|JAN|am"
        );
        assert_eq!(
            fmt(1, 1, 1, 0, "%10A|%-10A|%_5m|%c|%s"),
            "    Monday|    Monday|    1|Mon Jan  1 00:05:07 1|-62135596493"
        );
        assert_eq!(
            fmt(1, 1, 1, 0, "%Q|%E|%Ey|%f|%z%Z|%:z|%3f"),
            "%Q|%E|01|000001||%:z|%3f"
        );
        for (f, want) in [("%", "%"), ("%5", "   %5"), ("%-", "%-"), ("%E", "%E")] {
            assert_eq!(fmt(1, 1, 1, 0, f), want);
        }
        assert_eq!(
            fmt(
                2014,
                4,
                24,
                21,
                "%5|%-5Q|%05Q|%^q|%10%|%-_5d|%-3e|%05e|%#A|%#Z"
            ),
            "  %5| %-5Q|0%05Q|%^Q|         %|   24| 24|00024|THURSDAY|"
        );
        assert_eq!(
            fmt(2021, 1, 3, 12, "%G|%g|%V|%U|%W|%j|%u|%w"),
            "2020|20|53|01|00|003|7|0"
        );
        assert_eq!(
            fmt(999, 12, 31, 13, "%C|%G|%g|%V|%U|%y|%l"),
            "9|1000|00|01|52|99| 1"
        );
        assert_eq!(
            fmt(2014, 4, 24, 21, "%V|%U|%W|%j|%r|%x"),
            "17|16|16|114|09:05:07 PM|04/24/14"
        );
    }
}
