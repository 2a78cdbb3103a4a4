//! Builtin functions: `len`, `int`, `str`, `sorted`, `range`, `min`, `max` ...

use super::{arity, int_arg, iterate, kwarg, no_kwargs, type_err, value_err};
use crate::expr::EvalError;
use crate::expr::eval::MAX_ITEMS;
use crate::pyfmt;
use crate::pynum::{parse_float, parse_int, round_float, round_to_int};
use crate::value::{Num, Value, bytes_repr, py_lt, py_sort};

pub(super) const BUILTINS: &[&str] = &[
    "len",
    "int",
    "float",
    "str",
    "bool",
    "abs",
    "min",
    "max",
    "sum",
    "round",
    "sorted",
    "reversed",
    "list",
    "tuple",
    "dict",
    "range",
    "any",
    "all",
    "repr",
    "ascii",
    "enumerate",
    "zip",
    "ord",
    "chr",
    "hex",
    "bin",
    "oct",
    "divmod",
    "pow",
    "isinstance",
    "type",
    "bytes",
];

/// Whether `name` is a builtin function here.
pub(in crate::expr) fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
}

/// Python's `int(x)` for a value.
pub(crate) fn to_int(v: &Value) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::Float(f) => {
            if f.is_nan() {
                return Err(value_err("cannot convert float NaN to integer"));
            }
            if f.is_infinite() {
                return Err(EvalError::py(
                    "OverflowError",
                    "cannot convert float infinity to integer",
                ));
            }
            if f.abs() >= 9.2e18 {
                return Err(EvalError::py(
                    "OverflowError",
                    "integer does not fit in 64 bits (this evaluator's int limit)",
                ));
            }
            Ok(f.trunc() as i64)
        }
        Value::Str(s) => parse_int(s, 10).map_err(value_err),
        Value::Bytes(b) => parse_int(&crate::value::latin1(b), 10).map_err(value_err),
        other => Err(type_err(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            other.py_type()
        ))),
    }
}

/// Python's `float(x)` for a value.
pub(crate) fn to_float(v: &Value) -> Result<f64, EvalError> {
    match v {
        Value::Str(s) => parse_float(s).map_err(value_err),
        other => other.as_number().map(Num::as_f64).ok_or_else(|| {
            type_err(format!(
                "float() argument must be a string or a real number, not '{}'",
                other.py_type()
            ))
        }),
    }
}

/// Python's `str(x)`: like RF's text, except that bytes show their repr.
pub(super) fn py_str(v: &Value) -> String {
    match v {
        Value::Bytes(b) => bytes_repr(b),
        other => other.to_str(),
    }
}

pub(super) fn min_max(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    want_max: bool,
) -> Result<Value, EvalError> {
    for (k, _) in kwargs {
        if k != "default" {
            return Err(type_err(format!(
                "'{k}' is an invalid keyword argument for {name}()"
            )));
        }
    }
    let items = match args {
        [] => {
            return Err(type_err(format!(
                "{name} expected at least 1 argument, got 0"
            )));
        }
        [one] => iterate(one)?,
        many => many.to_vec(),
    };
    let mut best: Option<Value> = None;
    for item in items {
        best = Some(match best {
            None => item,
            Some(b) => {
                let better = if want_max {
                    py_lt(&b, &item)
                } else {
                    py_lt(&item, &b)
                };
                if better.map_err(type_err)? { item } else { b }
            }
        });
    }
    match (best, kwarg(kwargs, "default")) {
        (Some(b), _) => Ok(b),
        (None, Some(d)) => Ok(d.clone()),
        (None, None) => Err(value_err(format!("{name}() arg is an empty sequence"))),
    }
}

/// Calls builtin `name`.
pub(in crate::expr) fn call_builtin(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value, EvalError> {
    match name {
        "len" => {
            no_kwargs(name, kwargs)?;
            arity(name, args, 1, 1)?;
            let n = args[0].len().ok_or_else(|| {
                type_err(format!(
                    "object of type '{}' has no len()",
                    args[0].py_type()
                ))
            })?;
            Ok(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)))
        }
        "int" => {
            arity(name, args, 0, 2)?;
            let base = kwarg(kwargs, "base").or(args.get(1));
            match (args.first(), base) {
                (None, _) => Ok(Value::Int(0)),
                (Some(v), None) => to_int(v).map(Value::Int),
                (Some(Value::Str(s)), Some(b)) => {
                    let b = int_arg(b, "")?;
                    let b = u32::try_from(b)
                        .map_err(|_| value_err("int() base must be >= 2 and <= 36, or 0"))?;
                    parse_int(s, b).map(Value::Int).map_err(value_err)
                }
                (Some(_), Some(_)) => Err(type_err(
                    "int() can't convert non-string with explicit base",
                )),
            }
        }
        "float" => {
            no_kwargs(name, kwargs)?;
            arity(name, args, 0, 1)?;
            match args.first() {
                None => Ok(Value::Float(0.0)),
                Some(v) => to_float(v).map(Value::Float),
            }
        }
        "str" => {
            no_kwargs(name, kwargs)?;
            arity(name, args, 0, 1)?;
            Ok(Value::Str(args.first().map(py_str).unwrap_or_default()))
        }
        "bool" => {
            no_kwargs(name, kwargs)?;
            arity(name, args, 0, 1)?;
            Ok(Value::Bool(args.first().is_some_and(Value::truthy)))
        }
        "repr" => {
            arity(name, args, 1, 1)?;
            Ok(Value::Str(args[0].repr()))
        }
        "ascii" => {
            arity(name, args, 1, 1)?;
            Ok(Value::Str(pyfmt::ascii(&args[0].repr())))
        }
        "abs" => {
            arity(name, args, 1, 1)?;
            match args[0].as_number() {
                Some(Num::Int(i)) => i.checked_abs().map(Value::Int).ok_or_else(|| {
                    EvalError::py("OverflowError", "integer does not fit in 64 bits")
                }),
                Some(Num::Float(f)) => Ok(Value::Float(f.abs())),
                None => Err(type_err(format!(
                    "bad operand type for abs(): '{}'",
                    args[0].py_type()
                ))),
            }
        }
        "min" => min_max(name, args, kwargs, false),
        "max" => min_max(name, args, kwargs, true),
        "sum" => {
            arity(name, args, 1, 2)?;
            let items = iterate(&args[0])?;
            let mut total = kwarg(kwargs, "start")
                .or(args.get(1))
                .cloned()
                .unwrap_or(Value::Int(0));
            if matches!(total, Value::Str(_)) {
                return Err(type_err(
                    "sum() can't sum strings [use ''.join(seq) instead]",
                ));
            }
            for item in items {
                total = crate::expr::eval::binary("+", &total, &item)?;
            }
            Ok(total)
        }
        "round" => {
            arity(name, args, 1, 2)?;
            let ndigits = kwarg(kwargs, "ndigits")
                .or(args.get(1))
                .filter(|v| !matches!(v, Value::None));
            match (args[0].as_number(), ndigits) {
                (Some(Num::Int(i)), None) => Ok(Value::Int(i)),
                (Some(Num::Float(f)), None) => round_to_int(f).map(Value::Int).map_err(value_err),
                (Some(Num::Int(i)), Some(n)) => {
                    let n = int_arg(n, "")?;
                    if n >= 0 {
                        Ok(Value::Int(i))
                    } else {
                        Ok(Value::Int(round_float(i as f64, n) as i64))
                    }
                }
                (Some(Num::Float(f)), Some(n)) => Ok(Value::Float(round_float(f, int_arg(n, "")?))),
                (None, _) => Err(type_err(format!(
                    "type {} doesn't define __round__ method",
                    args[0].py_type()
                ))),
            }
        }
        "sorted" => {
            arity(name, args, 1, 1)?;
            for (k, _) in kwargs {
                if k != "reverse" {
                    return Err(type_err(format!(
                        "sorted() keyword '{k}' is not supported in this evaluator"
                    )));
                }
            }
            let mut items = iterate(&args[0])?;
            py_sort(&mut items).map_err(type_err)?;
            if kwarg(kwargs, "reverse").is_some_and(Value::truthy) {
                items.reverse();
            }
            Ok(Value::list(items))
        }
        "reversed" => {
            arity(name, args, 1, 1)?;
            if matches!(args[0], Value::Dict(_)) {
                let mut items = iterate(&args[0])?;
                items.reverse();
                return Ok(Value::list(items));
            }
            let mut items = iterate(&args[0])?;
            items.reverse();
            Ok(Value::list(items))
        }
        "list" => {
            arity(name, args, 0, 1)?;
            Ok(Value::list(match args.first() {
                Some(v) => iterate(v)?,
                None => Vec::new(),
            }))
        }
        "tuple" => {
            arity(name, args, 0, 1)?;
            Ok(Value::tuple(match args.first() {
                Some(v) => iterate(v)?,
                None => Vec::new(),
            }))
        }
        "dict" => {
            arity(name, args, 0, 1)?;
            let mut items = Vec::new();
            match args.first() {
                Some(Value::Dict(d)) => items.extend(d.borrow().items.iter().cloned()),
                Some(other) => {
                    for (i, pair) in iterate(other)?.into_iter().enumerate() {
                        let parts = pair.iter_items().ok_or_else(|| {
                            type_err(format!(
                                "cannot convert dictionary update sequence element #{i} to a sequence"
                            ))
                        })?;
                        let [k, v]: [Value; 2] = parts.try_into().map_err(|p: Vec<Value>| {
                            value_err(format!(
                                "dictionary update sequence element #{i} has length {}; 2 is required",
                                p.len()
                            ))
                        })?;
                        items.push((k, v));
                    }
                }
                None => {}
            }
            for (k, v) in kwargs {
                items.push((Value::str(k.as_str()), v.clone()));
            }
            Ok(Value::dict(items, false))
        }
        "range" => {
            no_kwargs(name, kwargs)?;
            arity(name, args, 1, 3)?;
            let ints: Vec<i64> = args
                .iter()
                .map(|a| int_arg(a, ""))
                .collect::<Result<_, _>>()?;
            let (start, stop, step) = match ints.as_slice() {
                [stop] => (0, *stop, 1),
                [start, stop] => (*start, *stop, 1),
                [start, stop, step] => (*start, *stop, *step),
                _ => (0, 0, 1),
            };
            if step == 0 {
                return Err(value_err("range() arg 3 must not be zero"));
            }
            let mut out = Vec::new();
            let mut i = start;
            while (step > 0 && i < stop) || (step < 0 && i > stop) {
                if out.len() >= MAX_ITEMS {
                    return Err(EvalError::py("MemoryError", ""));
                }
                out.push(Value::Int(i));
                i = match i.checked_add(step) {
                    Some(n) => n,
                    None => break,
                };
            }
            Ok(Value::list(out))
        }
        "any" | "all" => {
            arity(name, args, 1, 1)?;
            let items = iterate(&args[0])?;
            Ok(Value::Bool(if name == "any" {
                items.iter().any(Value::truthy)
            } else {
                items.iter().all(Value::truthy)
            }))
        }
        "enumerate" => {
            arity(name, args, 1, 2)?;
            let start = kwarg(kwargs, "start")
                .or(args.get(1))
                .map(|v| int_arg(v, ""))
                .transpose()?
                .unwrap_or(0);
            Ok(Value::list(
                iterate(&args[0])?
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| Value::tuple(vec![Value::Int(start + i as i64), v]))
                    .collect(),
            ))
        }
        "zip" => {
            no_kwargs(name, kwargs)?;
            let lists: Vec<Vec<Value>> = args.iter().map(iterate).collect::<Result<_, _>>()?;
            let n = lists.iter().map(Vec::len).min().unwrap_or(0);
            Ok(Value::list(
                (0..n)
                    .map(|i| Value::tuple(lists.iter().map(|l| l[i].clone()).collect()))
                    .collect(),
            ))
        }
        "ord" => {
            arity(name, args, 1, 1)?;
            match &args[0] {
                Value::Str(s) if s.chars().count() == 1 => Ok(Value::Int(i64::from(u32::from(
                    s.chars().next().unwrap_or('\0'),
                )))),
                Value::Str(s) => Err(type_err(format!(
                    "ord() expected a character, but string of length {} found",
                    s.chars().count()
                ))),
                other => Err(type_err(format!(
                    "ord() expected string of length 1, but {} found",
                    other.py_type()
                ))),
            }
        }
        "chr" => {
            arity(name, args, 1, 1)?;
            let i = int_arg(&args[0], "")?;
            u32::try_from(i)
                .ok()
                .and_then(char::from_u32)
                .map(|c| Value::Str(c.to_string()))
                .ok_or_else(|| value_err("chr() arg not in range(0x110000)"))
        }
        "hex" | "bin" | "oct" => {
            arity(name, args, 1, 1)?;
            let i = int_arg(&args[0], "")?;
            let m = i.unsigned_abs();
            let body = match name {
                "hex" => format!("0x{m:x}"),
                "bin" => format!("0b{m:b}"),
                _ => format!("0o{m:o}"),
            };
            Ok(Value::Str(if i < 0 { format!("-{body}") } else { body }))
        }
        "divmod" => {
            arity(name, args, 2, 2)?;
            let q = crate::expr::eval::binary("//", &args[0], &args[1])?;
            let r = crate::expr::eval::binary("%", &args[0], &args[1])?;
            Ok(Value::tuple(vec![q, r]))
        }
        "pow" => {
            arity(name, args, 2, 2)?;
            crate::expr::eval::binary("**", &args[0], &args[1])
        }
        "type" => Err(type_err(
            "type objects are not supported in this evaluator (use type(x).__name__)",
        )),
        "bytes" => to_bytes(args, kwargs),
        other => Err(EvalError::py(
            "NameError",
            format!("name '{other}' is not defined nor importable as module"),
        )),
    }
}

/// Python's `bytes(...)`: of nothing, a size, bytes, an iterable of ints, or text with
/// an encoding (`utf-8`, `ascii`, `latin-1`).
fn to_bytes(args: &[Value], kwargs: &[(String, Value)]) -> Result<Value, EvalError> {
    arity("bytes", args, 0, 3)?;
    let encoding = kwarg(kwargs, "encoding").or(args.get(1));
    let source = args.first().or(kwarg(kwargs, "source"));
    let bytes = match (source, encoding) {
        (None, None) => Vec::new(),
        (Some(Value::Str(text)), Some(enc)) => encode(text, &py_str(enc))?,
        (Some(Value::Str(_)), None) => return Err(type_err("string argument without an encoding")),
        (_, Some(_)) => return Err(type_err("encoding without a string argument")),
        (Some(Value::Bytes(b)), None) => b.clone(),
        (Some(Value::Int(n)), None) => {
            let n = usize::try_from(*n).map_err(|_| value_err("negative count"))?;
            // The evaluator's values live in the plugin's memory: a size past its
            // budget fails like Python's MemoryError, not by aborting the plugin.
            if n > 1 << 24 {
                return Err(EvalError::py("MemoryError", ""));
            }
            vec![0; n]
        }
        (Some(Value::Bool(b)), None) => vec![0; usize::from(*b)],
        (Some(other), None) => {
            let items = iterate(other).map_err(|_| {
                type_err(format!(
                    "cannot convert '{}' object to bytes",
                    other.py_type()
                ))
            })?;
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let n = match item {
                    Value::Int(n) => n,
                    Value::Bool(b) => i64::from(b),
                    other => {
                        return Err(type_err(format!(
                            "'{}' object cannot be interpreted as an integer",
                            other.py_type()
                        )));
                    }
                };
                out.push(u8::try_from(n).map_err(|_| value_err("bytes must be in range(0, 256)"))?);
            }
            out
        }
    };
    Ok(Value::Bytes(bytes))
}

fn encode(text: &str, encoding: &str) -> Result<Vec<u8>, EvalError> {
    match encoding.to_lowercase().replace('_', "-").as_str() {
        "utf-8" | "utf8" => Ok(text.as_bytes().to_vec()),
        enc @ ("ascii" | "latin-1" | "latin1" | "iso-8859-1") => {
            let limit = if enc == "ascii" { 0x80 } else { 0x100 };
            let name = if enc == "ascii" { "ascii" } else { "latin-1" };
            text.chars()
                .enumerate()
                .map(|(i, c)| {
                    u8::try_from(u32::from(c))
                        .ok()
                        .filter(|&b| u32::from(b) < limit)
                        .ok_or_else(|| {
                            EvalError::py(
                                "UnicodeEncodeError",
                                format!(
                                    "'{name}' codec can't encode character '{}' in position {i}: ordinal not in range({limit})",
                                    char_escape(c)
                                ),
                            )
                        })
                })
                .collect()
        }
        other => Err(EvalError::py(
            "LookupError",
            format!("unknown encoding: {other}"),
        )),
    }
}

/// How Python's codec errors show a character: `\xe4`, `\u0666`, `\U0001f600`.
fn char_escape(c: char) -> String {
    match u32::from(c) {
        n @ 0..=0xff => format!("\\x{n:02x}"),
        n @ 0x100..=0xffff => format!("\\u{n:04x}"),
        n => format!("\\U{n:08x}"),
    }
}
