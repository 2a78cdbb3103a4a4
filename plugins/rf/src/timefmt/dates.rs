//! Python's `datetime.datetime`, `datetime.date` and `datetime.timedelta`, as far as
//! Robot Framework's DateTime library uses them: construction with Python's range checks
//! and messages, arithmetic, epoch conversion (in UTC: the sandbox has no time zone
//! database) and Python's `str()` / `repr()`.
//!
//! A datetime is microseconds since 0001-01-01 00:00:00, a date days since 0001-01-01,
//! a timedelta microseconds; all three stay inside Python's own ranges (years 1 to 9999,
//! ±999999999 days), so no arithmetic here can overflow.

use super::{civil_from_days, days_from_civil};
use crate::error::{RfError, RfResult};

const US_PER_SEC: i64 = 1_000_000;
const US_PER_DAY: i64 = 86_400 * US_PER_SEC;
/// Days from 0001-01-01 to 1970-01-01.
const EPOCH_DAYS: i64 = 719_162;
/// Days from 0001-01-01 to 10000-01-01: the first day Python cannot represent.
const END_DAYS: i64 = 3_652_059;
/// Python's `timedelta.max.days`.
const MAX_DELTA_DAYS: i128 = 999_999_999;

/// A naive `datetime.datetime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime(i64);

/// A `datetime.date`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(i64);

/// A `datetime.timedelta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeDelta(i128);

/// The broken-down fields of a datetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub micro: u32,
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// `calendar.isleap`.
pub fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn value_error(message: impl Into<String>) -> RfError {
    RfError::value(message)
}

fn out_of_range() -> RfError {
    RfError::py("OverflowError", "date value out of range")
}

impl Date {
    /// `datetime.date(year, month, day)` with Python's checks, in Python's order.
    pub fn new(year: i64, month: i64, day: i64) -> RfResult<Date> {
        if !(1..=9999).contains(&year) {
            return Err(value_error(format!("year {year} is out of range")));
        }
        let month = u32::try_from(month).map_err(|_| value_error("month must be in 1..12"))?;
        if !(1..=12).contains(&month) {
            return Err(value_error("month must be in 1..12"));
        }
        match u32::try_from(day) {
            Ok(d) if d >= 1 && d <= days_in_month(year, month) => {
                Ok(Date(days_from_civil(year, month, d) + EPOCH_DAYS))
            }
            _ => Err(value_error("day is out of range for month")),
        }
    }

    /// `date.fromordinal(n)`.
    pub fn from_ordinal(n: i64) -> RfResult<Date> {
        if n < 1 {
            return Err(value_error("ordinal must be >= 1"));
        }
        if n > END_DAYS {
            return Err(value_error(format!("year {} is out of range", 10000)));
        }
        Ok(Date(n - 1))
    }

    /// `date.toordinal()`.
    pub fn ordinal(self) -> i64 {
        self.0 + 1
    }

    /// (year, month, day).
    pub fn ymd(self) -> (i64, u32, u32) {
        civil_from_days(self.0 - EPOCH_DAYS)
    }

    /// `date.weekday()`: Monday is 0.
    pub fn weekday(self) -> u32 {
        // 0001-01-01 was a Monday.
        u32::try_from(self.0.rem_euclid(7)).unwrap_or(0)
    }

    /// Day of the year, 1-based.
    pub fn yday(self) -> i64 {
        let (y, _, _) = self.ymd();
        self.0 - (days_from_civil(y, 1, 1) + EPOCH_DAYS) + 1
    }

    /// The datetime at midnight of this day.
    pub fn at_midnight(self) -> DateTime {
        DateTime(self.0 * US_PER_DAY)
    }

    /// Python's `str()`: `2014-04-24`.
    pub fn to_str(self) -> String {
        let (y, m, d) = self.ymd();
        format!("{y:04}-{m:02}-{d:02}")
    }

    /// Python's `repr()`.
    pub fn repr(self) -> String {
        let (y, m, d) = self.ymd();
        format!("datetime.date({y}, {m}, {d})")
    }
}

impl DateTime {
    /// `datetime.datetime(...)` with Python's checks and messages.
    pub fn new(date: Date, hour: i64, minute: i64, second: i64, micro: i64) -> RfResult<DateTime> {
        if !(0..=23).contains(&hour) {
            return Err(value_error("hour must be in 0..23"));
        }
        if !(0..=59).contains(&minute) {
            return Err(value_error("minute must be in 0..59"));
        }
        if !(0..=59).contains(&second) {
            return Err(value_error("second must be in 0..59"));
        }
        if !(0..=999_999).contains(&micro) {
            return Err(value_error("microsecond must be in 0..999999"));
        }
        Ok(DateTime(
            date.0 * US_PER_DAY + ((hour * 60 + minute) * 60 + second) * US_PER_SEC + micro,
        ))
    }

    /// The broken-down fields.
    pub fn fields(self) -> Fields {
        let date = self.date();
        let (year, month, day) = date.ymd();
        let rest = self.0.rem_euclid(US_PER_DAY);
        let secs = rest / US_PER_SEC;
        let part = |v: i64| u32::try_from(v).unwrap_or(0);
        Fields {
            year,
            month,
            day,
            hour: part(secs / 3600),
            minute: part(secs / 60 % 60),
            second: part(secs % 60),
            micro: part(rest % US_PER_SEC),
        }
    }

    /// The day.
    pub fn date(self) -> Date {
        Date(self.0.div_euclid(US_PER_DAY))
    }

    /// The microsecond field.
    pub fn micro(self) -> i64 {
        self.0.rem_euclid(US_PER_SEC)
    }

    /// `datetime.fromtimestamp(secs)` in UTC, with CPython's rounding (half to even on
    /// the microsecond) and its errors.
    pub fn from_timestamp(secs: f64) -> RfResult<DateTime> {
        if secs.is_nan() {
            return Err(value_error("Invalid value NaN (not a number)"));
        }
        let mut whole = secs.trunc();
        let mut frac = round_half_even((secs - whole) * 1e6);
        if frac >= 1e6 {
            frac -= 1e6;
            whole += 1.0;
        } else if frac < 0.0 {
            frac += 1e6;
            whole -= 1.0;
        }
        // The range of a 64-bit time_t.
        if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&whole) {
            return Err(RfError::py(
                "OverflowError",
                "timestamp out of range for platform time_t",
            ));
        }
        Self::from_epoch_parts(whole as i64, frac as i64)
    }

    /// `datetime.fromtimestamp(secs)` for an integer.
    pub fn from_epoch_parts(secs: i64, micro: i64) -> RfResult<DateTime> {
        let days = secs.div_euclid(86_400);
        let (year, _, _) = civil_from_days(days);
        // glibc's localtime keeps the year in a C int (counted from 1900).
        if i32::try_from(year - 1900).is_err() {
            return Err(RfError::py(
                "OSError",
                "[Errno 75] Value too large for defined data type",
            ));
        }
        if !(1..=9999).contains(&year) {
            return Err(value_error(format!("year {year} is out of range")));
        }
        // CPython probes the local time a day earlier to detect a DST fold, and that
        // probe fails on the first day of year 1.
        Self::probe_day_before(days)?;
        Ok(DateTime(
            (days + EPOCH_DAYS) * US_PER_DAY + secs.rem_euclid(86_400) * US_PER_SEC + micro,
        ))
    }

    /// `datetime.timestamp()` of a naive datetime, as local time (UTC here): CPython
    /// adds whole seconds and microseconds as doubles.
    pub fn timestamp(self) -> RfResult<f64> {
        Self::probe_day_before(self.0.div_euclid(US_PER_DAY) - EPOCH_DAYS)?;
        let secs = self.0.div_euclid(US_PER_SEC) - EPOCH_DAYS * 86_400;
        Ok(secs as f64 + self.micro() as f64 / 1e6)
    }

    /// CPython's conversions between local time and epoch seconds look at the local time
    /// one day earlier too (for DST folds); in year 0 that fails with this message.
    fn probe_day_before(days_since_epoch: i64) -> RfResult<()> {
        let (year, _, _) = civil_from_days(days_since_epoch - 1);
        if year < 1 {
            return Err(value_error(format!("year {year} is out of range")));
        }
        Ok(())
    }

    /// Whole seconds since the epoch (`%s`).
    pub fn epoch_secs(self) -> i64 {
        self.0.div_euclid(US_PER_SEC) - EPOCH_DAYS * 86_400
    }

    /// `self + delta`; `OverflowError: date value out of range` past year 1 or 9999.
    pub fn plus(self, delta: TimeDelta) -> RfResult<DateTime> {
        let total = i128::from(self.0) + delta.0;
        if total < 0 || total >= i128::from(END_DAYS) * i128::from(US_PER_DAY) {
            return Err(out_of_range());
        }
        i64::try_from(total)
            .map(DateTime)
            .map_err(|_| out_of_range())
    }

    /// `self - other`.
    pub fn minus(self, other: DateTime) -> TimeDelta {
        TimeDelta(i128::from(self.0) - i128::from(other.0))
    }

    /// Python's `str()`: `2014-04-24 21:45:12.123000`, the fraction only when non-zero.
    pub fn to_str(self) -> String {
        let f = self.fields();
        let mut out = format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            f.year, f.month, f.day, f.hour, f.minute, f.second
        );
        if f.micro != 0 {
            out.push_str(&format!(".{:06}", f.micro));
        }
        out
    }

    /// Python's `repr()`: trailing zero microseconds and seconds are left out.
    pub fn repr(self) -> String {
        let f = self.fields();
        let mut out = format!(
            "datetime.datetime({}, {}, {}, {}, {}",
            f.year, f.month, f.day, f.hour, f.minute
        );
        if f.micro != 0 {
            out.push_str(&format!(", {}, {}", f.second, f.micro));
        } else if f.second != 0 {
            out.push_str(&format!(", {}", f.second));
        }
        out.push(')');
        out
    }
}

fn too_large_for_c_int() -> RfError {
    RfError::py("OverflowError", "Python int too large to convert to C int")
}

/// `_PyTime_Round` with half-to-even.
fn round_half_even(x: f64) -> f64 {
    x.round_ties_even()
}

impl TimeDelta {
    /// A timedelta of `micros` microseconds, if Python's range holds it.
    pub fn from_micros(micros: i128) -> RfResult<TimeDelta> {
        let days = micros.div_euclid(i128::from(US_PER_DAY));
        if i32::try_from(days).is_err() {
            return Err(too_large_for_c_int());
        }
        if days.abs() > MAX_DELTA_DAYS {
            return Err(RfError::py(
                "OverflowError",
                format!("days={days}; must have magnitude <= 999999999"),
            ));
        }
        Ok(TimeDelta(micros))
    }

    /// `timedelta(seconds=secs)`: CPython splits the float into whole seconds, whole
    /// microseconds and a leftover that is rounded half to even against the total.
    pub fn from_secs(secs: f64) -> RfResult<TimeDelta> {
        if secs.is_nan() {
            return Err(value_error("cannot convert float NaN to integer"));
        }
        if secs.is_infinite() {
            return Err(RfError::py(
                "OverflowError",
                "cannot convert float infinity to integer",
            ));
        }
        // Beyond this the days do not fit a C int, which is how Python fails too.
        if secs.abs() > 1e17 {
            return Err(too_large_for_c_int());
        }
        let whole = secs.trunc();
        let mut micros = (whole as i128) * i128::from(US_PER_SEC);
        let frac = secs - whole;
        if frac != 0.0 {
            let scaled = frac * 1e6;
            let us = scaled.trunc();
            micros += us as i128;
            let leftover = scaled - us;
            if leftover != 0.0 {
                let mut rounded = leftover.round();
                if (rounded - leftover).abs() == 0.5 {
                    let odd = (micros & 1) as f64;
                    rounded = 2.0 * ((leftover + odd) * 0.5).round() - odd;
                }
                micros += rounded as i128;
            }
        }
        Self::from_micros(micros)
    }

    /// The microseconds.
    pub fn micros(self) -> i128 {
        self.0
    }

    /// `timedelta.total_seconds()`: the exact quotient, correctly rounded as Python's
    /// integer true division is.
    pub fn total_seconds(self) -> f64 {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let text = format!("{sign}{}.{:06}", abs / 1_000_000, abs % 1_000_000);
        text.parse().unwrap_or(f64::NAN)
    }

    fn parts(self) -> (i128, i128, i128) {
        let per_day = i128::from(US_PER_DAY);
        let days = self.0.div_euclid(per_day);
        let rest = self.0.rem_euclid(per_day);
        (days, rest / 1_000_000, rest % 1_000_000)
    }

    /// Python's `str()`: `1 day, 2:03:04.500000`, `-1 day, 23:59:59`.
    pub fn to_str(self) -> String {
        let (days, secs, micros) = self.parts();
        let mut out = String::new();
        if days != 0 {
            let s = if days.abs() == 1 { "" } else { "s" };
            out.push_str(&format!("{days} day{s}, "));
        }
        out.push_str(&format!(
            "{}:{:02}:{:02}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        ));
        if micros != 0 {
            out.push_str(&format!(".{micros:06}"));
        }
        out
    }

    /// Python's `repr()`: `datetime.timedelta(days=1, seconds=5)`, `datetime.timedelta(0)`.
    pub fn repr(self) -> String {
        let (days, secs, micros) = self.parts();
        let parts: Vec<String> = [(days, "days"), (secs, "seconds"), (micros, "microseconds")]
            .iter()
            .filter(|(v, _)| *v != 0)
            .map(|(v, name)| format!("{name}={v}"))
            .collect();
        if parts.is_empty() {
            return "datetime.timedelta(0)".into();
        }
        format!("datetime.timedelta({})", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64, us: i64) -> DateTime {
        DateTime::new(Date::new(y, mo, d).unwrap(), h, mi, s, us).unwrap()
    }

    #[test]
    fn text_like_python() {
        let x = dt(2014, 4, 24, 21, 45, 12, 123000);
        assert_eq!(x.to_str(), "2014-04-24 21:45:12.123000");
        assert_eq!(
            x.repr(),
            "datetime.datetime(2014, 4, 24, 21, 45, 12, 123000)"
        );
        assert_eq!(
            dt(2014, 4, 24, 21, 0, 0, 0).repr(),
            "datetime.datetime(2014, 4, 24, 21, 0)"
        );
        assert_eq!(dt(1, 1, 1, 0, 0, 0, 0).to_str(), "0001-01-01 00:00:00");
        let td = TimeDelta::from_secs(-62.3).unwrap();
        assert_eq!(td.to_str(), "-1 day, 23:58:57.700000");
        assert_eq!(
            td.repr(),
            "datetime.timedelta(days=-1, seconds=86337, microseconds=700000)"
        );
        assert_eq!(
            TimeDelta::from_secs(0.0).unwrap().repr(),
            "datetime.timedelta(0)"
        );
        assert_eq!(
            TimeDelta::from_secs(172800.0).unwrap().to_str(),
            "2 days, 0:00:00"
        );
        assert_eq!(
            Date::new(2023, 12, 18).unwrap().repr(),
            "datetime.date(2023, 12, 18)"
        );
    }

    #[test]
    fn epochs_and_ranges() {
        let x = DateTime::from_timestamp(1542892422.123).unwrap();
        assert_eq!(x.to_str(), "2018-11-22 13:13:42.123000");
        assert_eq!(x.timestamp().unwrap(), 1542892422.123);
        assert_eq!(
            DateTime::from_timestamp(-62135596800.0)
                .unwrap_err()
                .message,
            "ValueError: year 0 is out of range"
        );
        assert!(DateTime::from_timestamp(-62135596800.0 + 86400.0).is_ok());
        assert_eq!(
            DateTime::from_timestamp(-1.0).unwrap().to_str(),
            "1969-12-31 23:59:59"
        );
        assert_eq!(
            DateTime::from_timestamp(1e12).unwrap_err().message,
            "ValueError: year 33658 is out of range"
        );
        assert!(DateTime::from_timestamp(1e300).is_err());
        assert!(DateTime::from_timestamp(f64::INFINITY).is_err());
        assert_eq!(
            Date::new(2015, 2, 29).unwrap_err().message,
            "ValueError: day is out of range for month"
        );
        let end = dt(9999, 12, 31, 23, 59, 59, 999_999);
        assert_eq!(
            end.plus(TimeDelta::from_secs(1e-6).unwrap())
                .unwrap_err()
                .message,
            "OverflowError: date value out of range"
        );
        assert!(TimeDelta::from_secs(1e20).is_err());
        assert!(TimeDelta::from_secs(8.64e13 + 86400.0).is_err());
    }

    #[test]
    fn timedelta_rounding() {
        assert_eq!(TimeDelta::from_secs(0.123456789).unwrap().micros(), 123457);
        assert_eq!(TimeDelta::from_secs(1.5).unwrap().micros(), 1_500_000);
        assert_eq!(TimeDelta::from_secs(2.5e-6).unwrap().micros(), 2);
        assert_eq!(TimeDelta::from_secs(3.5e-6).unwrap().micros(), 4);
        assert_eq!(
            TimeDelta::from_micros(1_234_567).unwrap().total_seconds(),
            1.234567
        );
    }
}
