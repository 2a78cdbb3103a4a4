//! The run-keyword family of BuiltIn: `Run Keyword`, `Run Keywords`, `Run Keyword If`,
//! `Run Keyword And Ignore Error`, `Run Keyword And Expect Error`, `Repeat Keyword`,
//! `Wait Until Keyword Succeeds` and friends.
//!
//! These keywords receive the keyword to run and its arguments unresolved (`Bound::rest`)
//! and hand them on, so that the inner keyword resolves its own variables, named
//! arguments and `@{lists}` exactly as if it had been called directly.

use std::time::{Duration, Instant};

use super::Run;
use super::builtin::{convert_to_integer, is_true};
use crate::args::Bound;
use crate::engine::{Level, Session};
use crate::error::{RfError, RfResult};
use crate::matching::{glob_match, normalize};
use crate::regexp::{self, Flags};
use crate::timefmt::{secs_to_timestr, timestr_to_secs};
use crate::value::{Value, plural};
use crate::variables::Arg;
use crate::variables::search::{escape, is_list_variable};

/// The implementation of run-keyword variant `name`, if it has one here.
pub(super) fn lookup(name: &str) -> Option<Run> {
    Some(match name {
        "Run Keyword" => |s, b| run_rest(s, &b.rest),
        "Run Keywords" => run_keywords,
        "Run Keyword If" => |s, b| run_keyword_if(s, b.get("condition"), &b.rest),
        "Run Keyword Unless" => |s, b| {
            if is_true(s, &b.get("condition"))? {
                return Ok(Value::None);
            }
            run_rest(s, &b.rest)
        },
        "Run Keyword And Ignore Error" => |s, b| {
            let (status, value) = ignore_error(s, &b.rest)?;
            Ok(Value::tuple(vec![Value::str(status), value]))
        },
        "Run Keyword And Warn On Failure" => |s, b| {
            let (status, value) = ignore_error(s, &b.rest)?;
            if status == "FAIL" {
                let name = b.rest.first().map(Arg::display).unwrap_or_default();
                s.log(
                    Level::Warn,
                    format!("Executing keyword '{name}' failed:\n{}", value.to_str()),
                );
            }
            Ok(Value::tuple(vec![Value::str(status), value]))
        },
        "Run Keyword And Return Status" => |s, b| {
            let (status, _) = ignore_error(s, &b.rest)?;
            Ok(Value::Bool(status == "PASS"))
        },
        "Run Keyword And Continue On Failure" => |s, b| {
            run_rest(s, &b.rest).map_err(|mut e| {
                if !e.fatal && !e.is_signal() {
                    e.continuable = true;
                }
                e
            })
        },
        "Run Keyword And Expect Error" => expect_error,
        "Repeat Keyword" => repeat_keyword,
        "Wait Until Keyword Succeeds" => wait_until_succeeds,
        _ => return None,
    })
}

/// Runs `rest[0]` with arguments `rest[1..]`.
fn run_rest(s: &mut Session, rest: &[Arg]) -> RfResult<Value> {
    let Some((name, args)) = rest.split_first() else {
        return Err(RfError::invalid("Keyword name missing."));
    };
    s.run_raw(name, args)
}

/// `('PASS', value)` or `('FAIL', message)`; fatal failures and `Pass Execution` go on.
fn ignore_error(s: &mut Session, rest: &[Arg]) -> RfResult<(&'static str, Value)> {
    match run_rest(s, rest) {
        Ok(v) => Ok(("PASS", v)),
        Err(e) if e.catchable() => Ok(("FAIL", Value::Str(e.message))),
        Err(e) => Err(e),
    }
}

/// RF's `ExecutionFailures`: one failure as is, several as "Several failures occurred".
pub(crate) fn failures(errors: Vec<RfError>) -> RfError {
    let mut flat: Vec<RfError> = Vec::new();
    for e in errors {
        if e.parts.is_empty() {
            flat.push(e);
        } else {
            flat.extend(e.parts);
        }
    }
    if flat.len() == 1 {
        return flat.remove(0);
    }
    let mut message = String::from("Several failures occurred:");
    for (i, e) in flat.iter().enumerate() {
        message.push_str(&format!("\n\n{}) {}", i + 1, e.message));
    }
    let mut out = RfError::fail(message);
    out.continuable = flat.iter().all(|e| e.continuable);
    out.fatal = flat.iter().any(|e| e.fatal);
    out.parts = flat;
    out
}

/// RF's `_run_keywords`: runs the calls one after another and stops at the first failure
/// that cannot continue. Calls come from a generator in RF, so a malformed call later in
/// the list (`AND` with nothing after it) fails only when reached.
fn run_sequence(
    s: &mut Session,
    calls: impl Iterator<Item = RfResult<(Arg, Vec<Arg>)>>,
) -> RfResult<Value> {
    let mut errors = Vec::new();
    for call in calls {
        let (name, args) = call?;
        match s.run_raw(&name, &args) {
            Ok(_) => {}
            Err(e) if e.is_signal() => return Err(e),
            Err(e) => {
                let stop = !e.continuable || e.fatal;
                errors.push(e);
                if stop {
                    break;
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(Value::None)
    } else {
        Err(failures(errors))
    }
}

fn run_keywords(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let is_and = |a: &Arg| matches!(a, Arg::Raw(r) if r == "AND");
    let mut calls: Vec<RfResult<(Arg, Vec<Arg>)>> = Vec::new();
    if !b.rest.iter().any(is_and) {
        for name in &b.rest {
            match name {
                Arg::Raw(r) if is_list_variable(r) => {
                    for n in s.store.replace_list(std::slice::from_ref(name))? {
                        let n = match n {
                            Value::Str(t) => Arg::Raw(escape(&t)),
                            other => Arg::Value(other),
                        };
                        calls.push(Ok((n, Vec::new())));
                    }
                }
                other => calls.push(Ok((other.clone(), Vec::new()))),
            }
        }
    } else {
        for group in b.rest.split(is_and) {
            calls.push(match group.split_first() {
                Some((name, args)) => Ok((name.clone(), args.to_vec())),
                None => Err(RfError::data("AND must have keyword before and after.")),
            });
        }
    }
    run_sequence(s, calls.into_iter())
}

fn run_keyword_if(s: &mut Session, condition: Value, rest: &[Arg]) -> RfResult<Value> {
    let is = |a: &Arg, w: &str| matches!(a, Arg::Raw(r) if r == w);
    enum Branch {
        ElseIf(Vec<Arg>),
        Else(Vec<Arg>),
        Nothing,
    }
    let (args, branch) = if let Some(i) = rest.iter().position(|a| is(a, "ELSE IF")) {
        let resolved = s.store.replace_list_until(&rest[i + 1..], 2)?;
        if resolved.len() < 2 {
            return Err(RfError::data("ELSE IF requires condition and keyword."));
        }
        (&rest[..i], Branch::ElseIf(resolved))
    } else if let Some(i) = rest.iter().position(|a| is(a, "ELSE")) {
        let resolved = s.store.replace_list_until(&rest[i + 1..], 1)?;
        if resolved.is_empty() {
            return Err(RfError::data("ELSE requires keyword."));
        }
        (&rest[..i], Branch::Else(resolved))
    } else {
        (rest, Branch::Nothing)
    };
    if is_true(s, &condition)? {
        return run_rest(s, args);
    }
    match branch {
        Branch::ElseIf(b) => {
            let condition = s.store.replace_scalar(&b[0])?;
            run_keyword_if(s, condition, &b[1..])
        }
        Branch::Else(b) => run_rest(s, &b),
        Branch::Nothing => Ok(Value::None),
    }
}

fn expect_error(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let expected = b.get("expected_error").to_str();
    let error = match run_rest(s, &b.rest) {
        Ok(_) => {
            return Err(RfError::fail(format!(
                "Expected error '{expected}' did not occur."
            )));
        }
        Err(e) if e.catchable() => e.message,
        Err(e) => return Err(e),
    };
    if !error_matches(&error, &expected)? {
        return Err(RfError::fail(format!(
            "Expected error '{expected}' but got '{error}'."
        )));
    }
    Ok(Value::Str(error))
}

/// `GLOB:` (the default), `EQUALS:`, `STARTS:` and `REGEXP:` matching of error messages.
fn error_matches(error: &str, expected: &str) -> RfResult<bool> {
    for prefix in ["GLOB:", "EQUALS:", "STARTS:", "REGEXP:"] {
        if let Some(pattern) = expected.strip_prefix(prefix) {
            let pattern = pattern.trim_start();
            return Ok(match prefix {
                "GLOB:" => glob_match(error, pattern, false, false),
                "EQUALS:" => error == pattern,
                "STARTS:" => error.starts_with(pattern),
                _ => {
                    let re =
                        regexp::compile_full(pattern, Flags::default()).map_err(RfError::fail)?;
                    re.is_match(error)
                }
            });
        }
    }
    Ok(glob_match(error, expected, false, false))
}

/// RF's `_get_repeat_count`: `3`, `3x`, `3 times`.
fn repeat_count(times: &Value, require_postfix: bool) -> Option<RfResult<i64>> {
    let text = normalize(&times.to_str(), &[], true, true);
    let number = if let Some(t) = text.strip_suffix("times") {
        t.to_string()
    } else if let Some(t) = text.strip_suffix('x') {
        t.to_string()
    } else if require_postfix {
        return None;
    } else {
        text
    };
    Some(convert_to_integer(&Value::Str(number), None))
}

fn repeat_keyword(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let repeat = b.get("repeat");
    let name = b.rest.first().map(Arg::display).unwrap_or_default();
    let call = || -> (Arg, Vec<Arg>) {
        match b.rest.split_first() {
            Some((n, a)) => (n.clone(), a.to_vec()),
            None => (Arg::Raw(String::new()), Vec::new()),
        }
    };
    let count = repeat_count(&repeat, false).unwrap_or(Ok(0));
    match count {
        Ok(count) => {
            if count <= 0 {
                s.info(format!("Keyword '{name}' repeated zero times."));
            }
            let mut errors = Vec::new();
            for i in 0..count.max(0) {
                s.info(format!("Repeating keyword, round {}/{count}.", i + 1));
                let (n, a) = call();
                if let Err(e) = s.run_raw(&n, &a) {
                    if e.is_signal() {
                        return Err(e);
                    }
                    let stop = !e.continuable || e.fatal;
                    errors.push(e);
                    if stop {
                        break;
                    }
                }
            }
            if errors.is_empty() {
                Ok(Value::None)
            } else {
                Err(failures(errors))
            }
        }
        Err(count_error) => {
            // Not a count: a timeout such as `2s`, unless it is a plain number.
            let text = repeat.to_str();
            if crate::pynum::parse_float(&text).is_ok() {
                return Err(count_error);
            }
            let Ok(timeout) = timestr_to_secs(&repeat) else {
                return Err(count_error);
            };
            if timeout <= 0.0 {
                s.info(format!("Keyword '{name}' repeated zero times."));
            }
            let start = Instant::now();
            let limit = seconds(timeout);
            let mut round = 0;
            let mut errors = Vec::new();
            while start.elapsed() < limit {
                round += 1;
                let remaining = limit.saturating_sub(start.elapsed()).as_secs_f64();
                s.info(format!(
                    "Repeating keyword, round {round}, {} remaining.",
                    secs_to_timestr(remaining, true)
                ));
                let (n, a) = call();
                if let Err(e) = s.run_raw(&n, &a) {
                    if e.is_signal() {
                        return Err(e);
                    }
                    let stop = !e.continuable || e.fatal;
                    errors.push(e);
                    if stop {
                        break;
                    }
                }
            }
            if errors.is_empty() {
                Ok(Value::None)
            } else {
                Err(failures(errors))
            }
        }
    }
}

fn wait_until_succeeds(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let retry = b.get("retry");
    let mut count: i64 = -1;
    let mut deadline: Option<Instant> = None;
    let message = match repeat_count(&retry, true) {
        Some(Ok(c)) => {
            if c <= 0 {
                return Err(RfError::value(format!("Retry count {c} is not positive.")));
            }
            count = c;
            format!("{c} time{}", plural(usize::try_from(c).unwrap_or(2)))
        }
        _ => {
            let timeout = timestr_to_secs(&retry).map_err(|_| {
                RfError::value(format!("Invalid retry value '{}'.", retry.to_str()))
            })?;
            deadline = Instant::now().checked_add(seconds(timeout));
            format!("for {}", secs_to_timestr(timeout, false))
        }
    };
    let mut interval = b.get("retry_interval");
    let mut strict = false;
    if let Value::Str(text) = &interval
        && normalize(text, &[], true, true).starts_with("strict:")
    {
        let rest = text
            .split_once(':')
            .map_or("", |(_, r)| r)
            .trim()
            .to_string();
        interval = Value::Str(rest);
        strict = true;
    }
    let interval = timestr_to_secs(&interval).map_err(RfError::value)?;
    let Some((name, args)) = b.rest.split_first() else {
        return Err(RfError::invalid("Keyword name missing."));
    };
    loop {
        let started = Instant::now();
        match s.run_raw(name, args) {
            Ok(v) => return Ok(v),
            Err(e) if !e.catchable() => return Err(e),
            Err(e) => {
                count -= 1;
                let expired = deadline.is_some_and(|d| Instant::now() > d);
                if expired || count == 0 {
                    let shown = match name {
                        Arg::Raw(r) => s.store.replace_scalar_str(r)?.to_str(),
                        Arg::Value(v) => v.to_str(),
                    };
                    return Err(RfError::fail(format!(
                        "Keyword '{shown}' failed after retrying {message}. The last error was: {}",
                        e.message
                    )));
                }
            }
        }
        let mut sleep = interval;
        if strict {
            let took = started.elapsed().as_secs_f64();
            sleep = interval - took;
            if sleep < 0.0 {
                s.log(
                    Level::Warn,
                    format!(
                        "Keyword execution time {} is longer than retry interval {}.",
                        secs_to_timestr(took, false),
                        secs_to_timestr(interval, false)
                    ),
                );
            }
        }
        if sleep > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(sleep.min(1e7)));
        }
    }
}

/// A time budget of `secs` seconds: negative and NaN are none, and the step's own
/// deadline ends anything past a year long before it would.
fn seconds(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs.clamp(0.0, 365.0 * 86_400.0)).unwrap_or_default()
}
