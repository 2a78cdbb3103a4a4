//! BuiltIn keywords other than the run-keyword family ([`super::run`]), following
//! robot/libraries/BuiltIn.py: the name-to-implementation table and the helpers the
//! other libraries share; the keywords themselves live in the submodules.

mod context;
mod convert;
mod misc;
mod variables;
mod verify;

// The submodules' keyword functions, for the table below.
use context::*;
use convert::*;
use misc::*;
use variables::*;
use verify::*;

use super::Run;
use crate::args::Bound;
use crate::engine::{Level, Session};
use crate::error::{RfError, RfResult};
use crate::expr;
use crate::pynum::{parse_float, parse_int, round_float};
use crate::value::{Value, latin1};

pub(crate) use context::RunContext;

/// The implementation of BuiltIn keyword `name`, if it has one here.
pub(super) fn lookup(name: &str) -> Option<Run> {
    Some(match name {
        "Call Method" => call_method,
        "Catenate" => catenate,
        "Comment" | "No Operation" => no_operation,
        // There are no loops, tests or suites in a plugin session, so these fail with the
        // error RF gives outside a loop or teardown.
        "Continue For Loop" => |_, _| Err(outside_loop("Continue For Loop")),
        "Continue For Loop If" => |_, _| Err(outside_loop("Continue For Loop If")),
        "Exit For Loop" => |_, _| Err(outside_loop("Exit For Loop")),
        "Exit For Loop If" => |_, _| Err(outside_loop("Exit For Loop If")),
        "Convert To Binary" => |s, b| convert_radix(s, b, 'b'),
        "Convert To Octal" => |s, b| convert_radix(s, b, 'o'),
        "Convert To Hex" => |s, b| {
            let spec = if b.flag("lowercase") { 'x' } else { 'X' };
            convert_radix(s, b, spec)
        },
        "Convert To Boolean" => convert_to_boolean,
        "Convert To Bytes" => convert_to_bytes,
        "Convert To Integer" => |_, b| {
            Ok(Value::Int(convert_to_integer(
                &b.get("item"),
                b.int("base"),
            )?))
        },
        "Convert To Number" => |_, b| {
            Ok(Value::Float(convert_to_number(
                &b.get("item"),
                b.int("precision"),
            )?))
        },
        "Convert To String" => |_, b| Ok(Value::Str(b.get("item").safe_str())),
        "Create Dictionary" => create_dictionary,
        "Create List" => |_, b| Ok(Value::list(b.varargs.clone())),
        "Evaluate" => evaluate,
        "Fail" => |_, b| Err(assertion(b.opt("msg").map(|m| m.to_str()))),
        "Fatal Error" => |_, b| {
            let mut e = assertion(b.opt("msg").map(|m| m.to_str()).filter(|m| !m.is_empty()));
            e.fatal = true;
            Err(e)
        },
        "Get Count" => get_count,
        "Get Length" => |s, b| get_length(s, &b.get("item")).map(|n| Value::Int(n as i64)),
        "Get Time" => get_time,
        "Get Variable Value" => get_variable_value,
        "Get Variables" => get_variables,
        "Import Library" => import_library,
        "Keyword Should Exist" => keyword_should_exist,
        "Length Should Be" => length_should_be,
        "Log" => log,
        "Log Many" => log_many,
        "Log To Console" => log_to_console,
        "Log Variables" => log_variables,
        "Pass Execution" => |s, b| pass_execution(s, &b.text("message")),
        "Pass Execution If" => pass_execution_if,
        "Skip" => skip,
        "Skip If" => skip_if,
        "Return From Keyword" => |s, b| {
            let values = s.store.replace_list(&b.rest)?;
            return_from_keyword(s, values)
        },
        "Return From Keyword If" => |s, b| {
            if is_true(s, &b.get("condition"))? {
                let values = s.store.replace_list(&b.rest)?;
                return return_from_keyword(s, values);
            }
            Ok(Value::None)
        },
        "Run Keyword And Return" => |s, b| run_keyword_and_return(s, &b.rest),
        "Run Keyword And Return If" => |s, b| {
            if is_true(s, &b.get("condition"))? {
                return run_keyword_and_return(s, &b.rest);
            }
            Ok(Value::None)
        },
        "Import Resource" => |s, b| import_resource(s, &b.rest),
        "Import Variables" => |s, b| import_variables(s, &b.rest),
        "Regexp Escape" => regexp_escape,
        "Replace Variables" => |s, b| s.store.replace_scalar_str(&b.text("text")),
        "Reset Log Level" => |s, _| {
            let old = s.set_log_level(Level::Info);
            Ok(Value::str(old.name()))
        },
        "Set Library Search Order" => |s, b| {
            let order: Vec<String> = b.varargs.iter().map(Value::to_str).collect();
            let old = s.set_search_order(order);
            Ok(Value::tuple(old.into_iter().map(Value::Str).collect()))
        },
        "Set Log Level" => set_log_level,
        "Set Global Variable"
        | "Set Local Variable"
        | "Set Suite Variable"
        | "Set Task Variable"
        | "Set Test Variable" => set_scoped_variable,
        "Set Tags" => set_tags,
        "Get Library Instance" => get_library_instance,
        "Reload Library" => reload_library,
        "Remove Tags" => remove_tags,
        "Set Test Message" => set_test_message,
        "Set Test Documentation" => set_test_documentation,
        "Set Suite Documentation" => set_suite_documentation,
        "Set Test Metadata" | "Set Task Metadata" => set_test_metadata,
        "Set Suite Metadata" => set_suite_metadata,
        "Set Variable" => |_, b| {
            Ok(match b.varargs.len() {
                0 => Value::str(""),
                1 => b.varargs[0].clone(),
                _ => Value::list(b.varargs.clone()),
            })
        },
        "Set Variable If" => set_variable_if,
        "Should Be Empty" => |s, b| {
            let item = b.get("item");
            if get_length(s, &item)? > 0 {
                return Err(RfError::fail(b.msg().unwrap_or_else(|| {
                    format!("'{}' should be empty.", item.to_str())
                })));
            }
            Ok(Value::None)
        },
        "Should Not Be Empty" => |s, b| {
            let item = b.get("item");
            if get_length(s, &item)? == 0 {
                return Err(RfError::fail(b.msg().unwrap_or_else(|| {
                    format!("'{}' should not be empty.", item.to_str())
                })));
            }
            Ok(Value::None)
        },
        "Should Be Equal" => should_be_equal,
        "Should Not Be Equal" => should_not_be_equal,
        "Should Be Equal As Integers" => |s, b| as_integers(s, b, true),
        "Should Not Be Equal As Integers" => |s, b| as_integers(s, b, false),
        "Should Be Equal As Numbers" => |s, b| as_numbers(s, b, true),
        "Should Not Be Equal As Numbers" => |s, b| as_numbers(s, b, false),
        "Should Be Equal As Strings" => |s, b| as_strings(s, b, true),
        "Should Not Be Equal As Strings" => |s, b| as_strings(s, b, false),
        "Should Be True" => |s, b| {
            let condition = b.get("condition");
            if !is_true(s, &condition)? {
                return Err(RfError::fail(b.msg().unwrap_or_else(|| {
                    format!("'{}' should be true.", condition.to_str())
                })));
            }
            Ok(Value::None)
        },
        "Should Not Be True" => |s, b| {
            let condition = b.get("condition");
            if is_true(s, &condition)? {
                return Err(RfError::fail(b.msg().unwrap_or_else(|| {
                    format!("'{}' should not be true.", condition.to_str())
                })));
            }
            Ok(Value::None)
        },
        "Should Start With" => |_, b| affix(b, true, true),
        "Should Not Start With" => |_, b| affix(b, true, false),
        "Should End With" => |_, b| affix(b, false, true),
        "Should Not End With" => |_, b| affix(b, false, false),
        "Should Contain" => |_, b| contain(b, true),
        "Should Not Contain" => |_, b| contain(b, false),
        "Should Contain Any" => |_, b| contain_any(b, true),
        "Should Not Contain Any" => |_, b| contain_any(b, false),
        "Should Contain X Times" => contain_x_times,
        "Should Match" => |_, b| should_match(b, true),
        "Should Not Match" => |_, b| should_match(b, false),
        "Should Match Regexp" => |_, b| match_regexp(b, true),
        "Should Not Match Regexp" => |_, b| match_regexp(b, false),
        "Sleep" => sleep,
        "Variable Should Exist" => |s, b| variable_should(s, b, true),
        "Variable Should Not Exist" => |s, b| variable_should(s, b, false),
        "Run Keyword If Test Failed" => {
            |_, _| Err(teardown_only("Run Keyword If Test Failed", "test"))
        }
        "Run Keyword If Test Passed" => {
            |_, _| Err(teardown_only("Run Keyword If Test Passed", "test"))
        }
        "Run Keyword If Timeout Occurred" => {
            |_, _| Err(teardown_only("Run Keyword If Timeout Occurred", "test"))
        }
        "Run Keyword If All Tests Passed" => {
            |_, _| Err(teardown_only("Run Keyword If All Tests Passed", "suite"))
        }
        "Run Keyword If Any Tests Failed" => {
            |_, _| Err(teardown_only("Run Keyword If Any Tests Failed", "suite"))
        }
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// Shared helpers (also used by the other libraries).

/// An `AssertionError`: the message, or `AssertionError` when there is none.
pub(crate) fn assertion(msg: Option<String>) -> RfError {
    match msg {
        Some(m) => RfError::fail(m),
        None => RfError::py("AssertionError", ""),
    }
}

/// RF's `_get_msg`: `'a' does not contain 'b'`, the custom message, or both.
pub(crate) fn get_msg(
    item1: &Value,
    item2: &Value,
    custom: Option<String>,
    values: bool,
    delimiter: &str,
    quote1: bool,
    quote2: bool,
) -> String {
    if let Some(c) = &custom
        && !values
    {
        return c.clone();
    }
    let q = |v: &Value, quote: bool| {
        if quote {
            format!("'{}'", v.to_str())
        } else {
            v.to_str()
        }
    };
    let default = format!("{} {delimiter} {}", q(item1, quote1), q(item2, quote2));
    match custom {
        Some(c) if !c.is_empty() => format!("{c}: {default}"),
        _ => default,
    }
}

/// RF's handling of `values`: `NO VALUES` is the deprecated spelling of false.
pub(crate) fn values_flag(s: &mut Session, b: &Bound) -> bool {
    let v = b.get("values");
    if let Value::Str(text) = &v
        && text.to_uppercase() == "NO VALUES"
    {
        s.log(
            Level::Warn,
            format!(
                "Using '{text}' for disabling the 'values' argument is deprecated. Use 'values=False' instead."
            ),
        );
        return false;
    }
    v.truthy()
}

/// `Argument types are:` at INFO when the types differ (DEBUG otherwise).
fn log_types(s: &mut Session, first: &Value, second: &Value) {
    let level = if first.py_type() == second.py_type() {
        Level::Debug
    } else {
        Level::Info
    };
    s.log(
        level,
        format!(
            "Argument types are:\n{}\n{}",
            first.class_repr(),
            second.class_repr()
        ),
    );
}

/// RF's `_is_true`: strings are evaluated as Python expressions, other values by truth.
pub(crate) fn is_true(s: &Session, condition: &Value) -> RfResult<bool> {
    match condition {
        Value::Str(text) => expr::rf_truth(text, &s.store),
        other => Ok(other.truthy()),
    }
}

/// RF's `_convert_to_integer`.
pub(crate) fn convert_to_integer(item: &Value, base: Option<i64>) -> RfResult<i64> {
    let orig = item.to_str();
    let fail =
        |err: String| RfError::value(format!("'{orig}' cannot be converted to an integer: {err}"));
    let mut base = base.filter(|b| *b != 0);
    match item {
        Value::Str(text) => {
            let mut t = crate::matching::normalize(text, &["_"], true, true);
            if base.is_none() {
                let (sign, rest) = match t.chars().next() {
                    Some(c @ ('-' | '+')) => (c.to_string(), t[1..].to_string()),
                    _ => (String::new(), t.clone()),
                };
                for (prefix, b) in [("0b", 2), ("0o", 8), ("0x", 16)] {
                    if let Some(r) = rest.strip_prefix(prefix) {
                        t = format!("{sign}{r}");
                        base = Some(b);
                        break;
                    }
                }
            }
            let b = u32::try_from(base.unwrap_or(10))
                .map_err(|_| fail("int() base must be >= 2 and <= 36, or 0".into()))?;
            parse_int(&t, b).map_err(fail)
        }
        Value::Bytes(bytes) => {
            let b = u32::try_from(base.unwrap_or(10)).unwrap_or(10);
            parse_int(&latin1(bytes), b).map_err(fail)
        }
        _ if base.is_some() => Err(fail(format!(
            "{} objects do not support base.",
            item.type_name()
        ))),
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::Float(f) => {
            if f.is_nan() {
                Err(fail("cannot convert float NaN to integer".into()))
            } else if f.is_infinite() {
                Err(fail("cannot convert float infinity to integer".into()))
            } else {
                Ok(f.trunc() as i64)
            }
        }
        other => Err(fail(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            other.py_type()
        ))),
    }
}

/// RF's `_convert_to_number`.
pub(crate) fn convert_to_number(item: &Value, precision: Option<i64>) -> RfResult<f64> {
    let item = match item {
        Value::Str(s) => Value::Str(crate::matching::normalize(s, &["_"], true, true)),
        other => other.clone(),
    };
    let float = match &item {
        Value::Str(s) => parse_float(s),
        other => other.as_number().map(|n| n.as_f64()).ok_or_else(|| {
            format!(
                "float() argument must be a string or a real number, not '{}'",
                other.py_type()
            )
        }),
    };
    let number = match float {
        Ok(f) => f,
        Err(err) => match convert_to_integer(&item, None) {
            Ok(i) => i as f64,
            Err(_) => {
                return Err(RfError::value(format!(
                    "'{}' cannot be converted to a floating point number: {err}",
                    item.to_str()
                )));
            }
        },
    };
    Ok(match precision {
        Some(p) => round_float(number, p),
        None => number,
    })
}

/// `len()` with RF's log line and error.
pub(crate) fn get_length(s: &mut Session, item: &Value) -> RfResult<usize> {
    let n = item
        .len()
        .ok_or_else(|| RfError::fail(format!("Could not get length of '{}'.", item.to_str())))?;
    s.info(format!("Length is {n}."));
    Ok(n)
}

/// RF's formatters for `formatter=`.
fn format_with(formatter: &str, v: &Value) -> String {
    match formatter.to_lowercase().as_str() {
        // RF's `prepr` and `safe_str` give NFC text; `ascii` escapes what it would join.
        "repr" => crate::pystr::nfc(&v.repr()),
        "ascii" => crate::pyfmt::ascii(&v.repr()),
        "len" => v.len().map(|n| n.to_string()).unwrap_or_default(),
        "type" => v.py_type().to_string(),
        _ => v.safe_str(),
    }
}

/// RF's `_report_inequality` message.
pub(crate) fn inequality(
    first: &Value,
    second: &Value,
    delim: &str,
    msg: Option<String>,
    values: bool,
    formatter: &str,
) -> String {
    let (s1, s2) = (
        format_with(formatter, first),
        format_with(formatter, second),
    );
    let plain = if delim == "!=" && s1 == s2 {
        format!(
            "{s1} ({}) != {s2} ({})",
            first.type_name(),
            second.type_name()
        )
    } else {
        format!("{s1} {delim} {s2}")
    };
    match msg {
        None => plain,
        Some(m) if m.is_empty() => plain,
        Some(m) if values => format!("{m}: {plain}"),
        Some(m) => m,
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Bytes(b) => latin1(b),
        other => other.to_str(),
    }
}
