//! The DateTime library (robot/libraries/DateTime.py): dates as timestamps, custom
//! `strptime` formats, epoch seconds, `datetime` and `date` values; times as numbers, time
//! strings, timers and `timedelta` values; and their arithmetic, all with RF's rounding.
//!
//! RF keeps a date as a Python `datetime` (microseconds) and a time as unrounded float
//! seconds, converting a time to a `timedelta` (rounding to microseconds) only when adding
//! it to a date; results round to milliseconds only when formatted. This module follows
//! those steps one by one, since every shortcut changes some result in the last digit.
//!
//! The sandbox has no time zone database: "local" time is UTC, for `Get Current Date` and
//! for epoch seconds alike.

use super::Run;
use crate::args::Bound;
use crate::engine::Session;
use crate::error::{RfError, RfResult};
use crate::timefmt::dates::{DateTime, TimeDelta};
use crate::timefmt::{self, strftime, strptime};
use crate::value::Value;

/// The implementation of DateTime keyword `name`.
pub(super) fn lookup(name: &str) -> Option<Run> {
    Some(match name {
        "Get Current Date" => get_current_date,
        "Convert Date" => |_, b| {
            let date = to_date(&b.get("date"), b.opt("date_format"))?;
            convert_date(date, &b.text("result_format"), millis(b))
        },
        "Convert Time" => |_, b| convert_time(to_time(&b.get("time"))?, b, millis(b)),
        "Subtract Date From Date" => |_, b| {
            let date1 = to_date(&b.get("date1"), b.opt("date1_format"))?;
            let date2 = to_date(&b.get("date2"), b.opt("date2_format"))?;
            convert_time(date1.minus(date2).total_seconds(), b, millis(b))
        },
        "Add Time To Date" => |_, b| {
            let date = to_date(&b.get("date"), b.opt("date_format"))?;
            let time = to_time(&b.get("time"))?;
            let date = date.plus(TimeDelta::from_secs(time)?)?;
            convert_date(date, &b.text("result_format"), millis(b))
        },
        "Subtract Time From Date" => |_, b| {
            let date = to_date(&b.get("date"), b.opt("date_format"))?;
            let time = to_time(&b.get("time"))?;
            let delta = TimeDelta::from_secs(time)?;
            let date = date.plus(TimeDelta::from_micros(-delta.micros())?)?;
            convert_date(date, &b.text("result_format"), millis(b))
        },
        "Add Time To Time" => |_, b| {
            let secs = to_time(&b.get("time1"))? + to_time(&b.get("time2"))?;
            convert_time(secs, b, millis(b))
        },
        "Subtract Time From Time" => |_, b| {
            let secs = to_time(&b.get("time1"))? - to_time(&b.get("time2"))?;
            convert_time(secs, b, millis(b))
        },
        _ => return None,
    })
}

/// `millis=not exclude_millis`; RF has already converted the flag's text.
fn millis(b: &Bound) -> bool {
    !b.flag("exclude_millis")
}

fn get_current_date(_s: &mut Session, b: &Bound) -> RfResult<Value> {
    // "local" and "UTC" are the same clock here (see the module documentation).
    let now = timefmt::now_datetime()?;
    let increment = to_time(&b.get("increment"))?;
    let date = now.plus(TimeDelta::from_secs(increment)?)?;
    convert_date(date, &b.text("result_format"), millis(b))
}

/// RF's `Time(value).seconds`: unrounded seconds.
fn to_time(value: &Value) -> RfResult<f64> {
    timefmt::timestr_to_secs_unrounded(value).map_err(RfError::value)
}

/// RF's `Date(value, input_format).datetime`.
fn to_date(value: &Value, input_format: Option<Value>) -> RfResult<DateTime> {
    match value {
        Value::DateTime(d) => Ok(*d),
        Value::Date(d) => Ok(d.at_midnight()),
        Value::Int(i) => DateTime::from_epoch_parts(*i, 0),
        Value::Bool(b) => DateTime::from_epoch_parts(i64::from(*b), 0),
        Value::Float(f) => DateTime::from_timestamp(*f),
        Value::Str(s) => {
            if matches!(s.to_uppercase().as_str(), "TODAY" | "NOW") {
                return timefmt::now_datetime();
            }
            match input_format.map(|f| f.to_str()).filter(|f| !f.is_empty()) {
                Some(format) => strptime(s, &format),
                None => strptime(&normalize_timestamp(s)?, "%Y-%m-%d %H:%M:%S.%f"),
            }
        }
        other => Err(RfError::value(format!(
            "Unsupported input '{}'.",
            other.to_str()
        ))),
    }
}

/// RF's `_normalize_timestamp`: the digits, whatever separates them, as
/// `YYYY-MM-DD hh:mm:ss.ffffff` with missing time parts zero.
fn normalize_timestamp(timestamp: &str) -> RfResult<String> {
    if let Some(c) = timestamp.chars().find(|c| !c.is_ascii() && c.is_numeric()) {
        // Python's isdigit() takes digits of every script; which ones exactly is
        // Unicode data the sandbox does not carry.
        return Err(RfError::fail(format!(
            "Timestamp '{timestamp}' has the non-ASCII digit '{c}', which the rf sandbox does not read; use ASCII digits."
        )));
    }
    let digits: String = timestamp.chars().filter(char::is_ascii_digit).collect();
    if !(8..=20).contains(&digits.len()) {
        return Err(RfError::value(format!("Invalid timestamp '{timestamp}'.")));
    }
    let (d, t) = digits.split_at(8);
    let t = format!("{t:0<12}");
    Ok(format!(
        "{}-{}-{} {}:{}:{}.{}",
        &d[..4],
        &d[4..6],
        &d[6..8],
        &t[..2],
        &t[2..4],
        &t[4..6],
        &t[6..]
    ))
}

/// RF's `Date.convert(format, millis)`.
fn convert_date(date: DateTime, format: &str, millis: bool) -> RfResult<Value> {
    let mut date = date;
    if !millis {
        // Half a second or more rounds up, unlike the half-to-even rounding elsewhere.
        let micro = date.micro();
        let carry = if micro >= 500_000 { 1_000_000 } else { 0 };
        date = date.plus(TimeDelta::from_micros(i128::from(carry - micro))?)?;
    }
    if format.contains('%') {
        return strftime(date, format).map(Value::Str);
    }
    let format = format.to_lowercase();
    match format.as_str() {
        "timestamp" => {
            if !millis {
                return strftime(date, "%Y-%m-%d %H:%M:%S").map(Value::Str);
            }
            let mut ms = (date.micro() as f64 / 1000.0).round_ties_even() as i64;
            if ms == 1000 {
                date = date.plus(TimeDelta::from_micros(1_000_000)?)?;
                ms = 0;
            }
            Ok(Value::Str(format!(
                "{}.{ms:03}",
                strftime(date, "%Y-%m-%d %H:%M:%S")?
            )))
        }
        "datetime" => Ok(Value::DateTime(date)),
        "date" => Ok(Value::Date(date.date())),
        "epoch" => Ok(Value::Float(date.timestamp()?)),
        _ => Err(RfError::value(format!("Unknown format '{format}'."))),
    }
}

/// RF's `Time.convert(format, millis)`; `result_format` is already one of the literals.
fn convert_time(secs: f64, b: &Bound, millis: bool) -> RfResult<Value> {
    let secs = if millis {
        secs
    } else {
        // float(round(secs)): half to even, with Python's errors for NaN and infinity.
        timefmt::check_float_to_int(secs)?;
        secs.round_ties_even()
    };
    let format = b.text("result_format").to_lowercase();
    Ok(match format.as_str() {
        "number" => Value::Float(secs),
        "verbose" => Value::Str(timefmt::try_secs_to_timestr(secs, false)?),
        "compact" => Value::Str(timefmt::try_secs_to_timestr(secs, true)?),
        "timer" => Value::Str(timefmt::elapsed_time_to_string(secs, millis)?),
        "timedelta" => Value::TimeDelta(TimeDelta::from_secs(secs)?),
        _ => return Err(RfError::value(format!("Unknown format '{format}'."))),
    })
}
