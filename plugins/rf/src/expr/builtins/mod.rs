//! Builtin functions ([`functions`]) and methods ([`methods`]) the evaluator offers, and
//! their shared argument checks. Everything returns plain values:
//! `range()`, `dict.keys()`, `reversed()`, `zip()` and `enumerate()` give lists where
//! Python gives lazy objects, which only shows in their `repr()`.

mod functions;
mod methods;

pub(in crate::expr) use functions::{call_builtin, is_builtin};
pub(in crate::expr) use methods::{call_method, has_method};

use super::EvalError;
use crate::value::Value;

fn type_err(msg: impl Into<String>) -> EvalError {
    EvalError::py("TypeError", msg)
}

fn value_err(msg: impl Into<String>) -> EvalError {
    EvalError::py("ValueError", msg)
}

fn no_kwargs(name: &str, kwargs: &[(String, Value)]) -> Result<(), EvalError> {
    match kwargs.first() {
        Some((k, _)) => Err(type_err(format!(
            "{name}() got an unexpected keyword argument '{k}'"
        ))),
        None => Ok(()),
    }
}

fn kwarg<'a>(kwargs: &'a [(String, Value)], name: &str) -> Option<&'a Value> {
    kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

fn arity(name: &str, args: &[Value], min: usize, max: usize) -> Result<(), EvalError> {
    let n = args.len();
    if n < min || n > max {
        let msg = if min == max {
            match min {
                0 => format!("{name}() takes no arguments ({n} given)"),
                1 => format!("{name}() takes exactly one argument ({n} given)"),
                _ => format!("{name} expected {min} arguments, got {n}"),
            }
        } else if n < min {
            format!(
                "{name} expected at least {min} argument{}, got {n}",
                if min == 1 { "" } else { "s" }
            )
        } else {
            format!(
                "{name} expected at most {max} argument{}, got {n}",
                if max == 1 { "" } else { "s" }
            )
        };
        return Err(type_err(msg));
    }
    Ok(())
}

fn iterate(v: &Value) -> Result<Vec<Value>, EvalError> {
    v.iter_items()
        .ok_or_else(|| type_err(format!("'{}' object is not iterable", v.py_type())))
}

fn int_arg(v: &Value, what: &str) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(i64::from(*b)),
        other => Err(type_err(format!(
            "'{}' object cannot be interpreted as an integer{what}",
            other.py_type()
        ))),
    }
}

fn str_arg<'a>(v: &'a Value, what: &str) -> Result<&'a str, EvalError> {
    v.as_str()
        .ok_or_else(|| type_err(format!("{what} must be str, not {}", v.py_type())))
}
