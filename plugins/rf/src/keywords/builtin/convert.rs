//! BuiltIn's conversion keywords and `Create Dictionary`.

use super::convert_to_integer;
use crate::args::Bound;
use crate::engine::Session;
use crate::error::{RfError, RfResult};
use crate::value::Value;
use crate::value::changed;
use crate::variables::Arg;
use crate::variables::search::{split_from_equals, whole_variable};

pub(super) fn convert_radix(_s: &mut Session, b: &Bound, spec: char) -> RfResult<Value> {
    let n = convert_to_integer(&b.get("item"), b.int("base"))?;
    let m = n.unsigned_abs();
    let digits = match spec {
        'b' => format!("{m:b}"),
        'o' => format!("{m:o}"),
        'x' => format!("{m:x}"),
        _ => format!("{m:X}"),
    };
    let mut prefix = b.text("prefix");
    if n < 0 {
        prefix = format!("-{prefix}");
    }
    let length = usize::try_from(b.int("length").unwrap_or(0)).unwrap_or(0);
    let padded = if digits.len() < length {
        format!("{}{digits}", "0".repeat(length - digits.len()))
    } else {
        digits
    };
    Ok(Value::Str(format!("{prefix}{padded}")))
}

pub(super) fn convert_to_boolean(_s: &mut Session, b: &Bound) -> RfResult<Value> {
    let item = b.get("item");
    if let Value::Str(t) = &item
        && crate::pystr::title(t) == "False"
    {
        return Ok(Value::Bool(false));
    }
    Ok(Value::Bool(item.truthy()))
}

pub(super) fn convert_to_bytes(_s: &mut Session, b: &Bound) -> RfResult<Value> {
    let input = b.get("input");
    let kind = b.text("input_type");
    let fail = |m: String| RfError::fail(format!("Creating bytes failed: {m}"));
    let ordinal = |o: i64, original: String, what: &str| {
        u8::try_from(o).map_err(|_| {
            fail(format!(
                "RuntimeError: {what} '{original}' cannot be represented as a byte."
            ))
        })
    };
    let tokens = |input: &Value, length: usize| -> RfResult<Vec<Value>> {
        match input {
            Value::Str(s) => {
                let joined: String = s.split_whitespace().collect();
                if !joined.chars().count().is_multiple_of(length) {
                    return Err(fail(format!(
                        "RuntimeError: Expected input to be multiple of {length}."
                    )));
                }
                let chars: Vec<char> = joined.chars().collect();
                Ok(chars
                    .chunks(length)
                    .map(|c| Value::Str(c.iter().collect()))
                    .collect())
            }
            other => Ok(other.iter_items().unwrap_or_default()),
        }
    };
    let mut out = Vec::new();
    match kind.as_str() {
        "text" => match &input {
            Value::Str(s) => {
                for c in s.chars() {
                    out.push(ordinal(
                        i64::from(u32::from(c)),
                        c.to_string(),
                        "Character",
                    )?);
                }
            }
            other => {
                for v in other.iter_items().unwrap_or_default() {
                    let o = match &v {
                        Value::Int(i) => *i,
                        Value::Str(c) => c.chars().next().map_or(0, |c| i64::from(u32::from(c))),
                        _ => 0,
                    };
                    out.push(ordinal(o, v.to_str(), "Character")?);
                }
            }
        },
        "int" => {
            let items = match &input {
                Value::Str(s) => s.split_whitespace().map(Value::str).collect(),
                Value::Int(_) => vec![input.clone()],
                other => other.iter_items().unwrap_or_default(),
            };
            for item in items {
                let o = convert_to_integer(&item, None).map_err(|e| fail(e.message))?;
                out.push(ordinal(o, item.to_str(), "Integer")?);
            }
        }
        "hex" | "bin" => {
            let (len, base, what) = if kind == "hex" {
                (2, 16, "Hex value")
            } else {
                (8, 2, "Binary value")
            };
            for t in tokens(&input, len)? {
                let o = convert_to_integer(&t, Some(base)).map_err(|e| fail(e.message))?;
                out.push(ordinal(o, t.to_str(), what)?);
            }
        }
        other => return Err(fail(format!("RuntimeError: Invalid input type '{other}'."))),
    }
    Ok(Value::Bytes(out))
}

/// `Create Dictionary`: leading `key    value` pairs, then `key=value` items and
/// `&{dict}` variables.
pub(super) fn create_dictionary(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let items = &b.rest;
    let split = items
        .iter()
        .position(|a| match a {
            Arg::Raw(r) => split_from_equals(r).is_some() || whole_variable(r, "&").is_some(),
            Arg::Value(_) => false,
        })
        .unwrap_or(items.len());
    let separate = s.store.replace_list(&items[..split])?;
    if separate.len() % 2 != 0 {
        return Err(RfError::data(format!(
            "Expected even number of keys and values, got {}.",
            separate.len()
        )));
    }
    let mut pairs: Vec<(Value, Value)> = Vec::new();
    for chunk in separate.chunks(2) {
        check_key(&chunk[0])?;
        pairs.push((chunk[0].clone(), chunk[1].clone()));
    }
    let dict = Value::dict(pairs, true);
    if let Value::Dict(d) = &dict {
        for (k, v) in dict_items(s, &items[split..])? {
            changed(d).insert(k, v);
        }
    }
    Ok(dict)
}

pub(super) fn check_key(k: &Value) -> RfResult<()> {
    if k.hashable() {
        Ok(())
    } else {
        Err(RfError::py("TypeError", unhashable(k)))
    }
}

fn unhashable(k: &Value) -> String {
    format!("unhashable type: '{}'", k.py_type())
}

/// RF's `DictVariableResolver`: `key=value` items and `&{dict}` variables.
pub(super) fn dict_items(s: &Session, items: &[Arg]) -> RfResult<Vec<(Value, Value)>> {
    let mut out = Vec::new();
    for item in items {
        match item {
            Arg::Raw(r) if whole_variable(r, "&").is_some() => {
                if let Value::Dict(d) = s.store.replace_scalar_str(r)? {
                    out.extend(d.borrow().items.iter().cloned());
                }
            }
            Arg::Raw(r) => match split_from_equals(r) {
                Some((k, v)) => {
                    let key = s.store.replace_scalar_str(&k)?;
                    if !key.hashable() {
                        return Err(RfError::data(format!(
                            "Creating dictionary variable failed: {}",
                            unhashable(&key)
                        )));
                    }
                    out.push((key, s.store.replace_scalar_str(&v)?));
                }
                None => {
                    return Err(RfError::data(format!(
                        "Invalid dictionary variable item '{r}'. Items must use 'name=value' syntax or be dictionary variables themselves."
                    )));
                }
            },
            Arg::Value(Value::Dict(d)) => out.extend(d.borrow().items.iter().cloned()),
            Arg::Value(v) => {
                return Err(RfError::data(format!(
                    "Invalid dictionary variable item '{}'. Items must use 'name=value' syntax or be dictionary variables themselves.",
                    v.to_str()
                )));
            }
        }
    }
    Ok(out)
}
