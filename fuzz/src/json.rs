//! JSON values from fuzz bytes, biased towards what the batch code parses.
//!
//! Uniformly random bytes rarely spell `${STEP_2.items[-1]}`; these generators glue
//! strings together from the reference grammar's own tokens and pick numbers at the
//! edges of the limits, so the scanner's and planner's corner cases come up often.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};

/// Pieces of the reference grammar and of things that look like it.
const FRAGMENTS: &[&str] = &[
    "${",
    "}",
    "\\${",
    "\\",
    "$",
    "{",
    ".",
    "[",
    "]",
    "\"",
    "'",
    "-",
    " ",
    "é",
    "\u{0}",
    "STEP_",
    "STEP_0",
    "STEP_1",
    "STEP_2",
    "STEP_3",
    "0",
    "1",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775808",
    "x",
    "items",
    "${STEP_1}",
    "${STEP_0}",
    "${STEP_2.items[0].name}",
    "${STEP_1[-1]}",
    "${STEP_1.0}",
    "${x}",
    "${x.y}",
    "${x[\"a b\"]}",
    "${x['k\\'s']}",
    "${x[\"\\\\\"]}",
    "${STEP_1[0]",
    "${{ len(${STEP_1}) }}",
    "${}",
    "${ STEP_1 }",
    "${STEP_1[99999999999999999999]}",
    "${STEP_1[-9223372036854775808]}",
    "@{list}",
    "&{dict}",
    "%{ENV}",
];

/// Names for variables (`assign_to`, `${name}`), labels and keys; valid and not.
pub const NAMES: &[&str] = &[
    "x",
    "v",
    "n",
    "user",
    "cart_count",
    "_",
    "a_b",
    "value",
    "items",
    "STEP_1",
    "STEP_",
    "STEP_01",
    "1abc",
    "a-b",
    "",
];

/// A string: either raw fuzz text or a concatenation of grammar fragments, names
/// and short raw pieces.
pub fn string(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(1, 4)? {
        return Ok(u.arbitrary::<&str>()?.to_owned());
    }
    let pieces = u.int_in_range(0..=6)?;
    let mut out = String::new();
    for _ in 0..pieces {
        match u.int_in_range(0..=3)? {
            0 | 1 => out.push_str(u.choose(FRAGMENTS)?),
            2 => out.push_str(u.choose(NAMES)?),
            _ => {
                let raw: &str = u.arbitrary()?;
                out.extend(raw.chars().take(8));
            }
        }
    }
    Ok(out)
}

/// A name for `assign_to` or `${name}`: mostly from [`NAMES`], sometimes raw text.
pub fn name(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(3, 4)? {
        Ok((*u.choose(NAMES)?).to_owned())
    } else {
        string(u)
    }
}

/// An integer in `min..=max` or just outside it, or at a well-known edge.
pub fn integer_near(u: &mut Unstructured<'_>, min: i128, max: i128) -> Result<Value> {
    let n = match u.int_in_range(0..=5)? {
        0 => min,
        1 => max,
        2 => min - 1,
        3 => max + 1,
        4 => {
            let (lo, hi) = (min.min(max), min.max(max));
            if hi - lo > i128::from(u64::MAX) {
                i128::from(u.arbitrary::<i64>()?)
            } else {
                lo + i128::from(u.int_in_range(0..=u64::try_from(hi - lo).unwrap_or(0))?)
            }
        }
        _ => return number(u),
    };
    Ok(int_value(n))
}

/// A JSON number: edges of the integer types and of the limits, or any finite one.
pub fn number(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=9)? {
        0 => int_value(0),
        1 => int_value(1),
        2 => int_value(-1),
        3 => int_value(i128::from(u64::MAX)),
        4 => int_value(i128::from(i64::MIN)),
        5 => int_value(i128::from(u.int_in_range(0..=700_000u64)?)),
        6 => Value::from(u.arbitrary::<u64>()?),
        7 => Value::from(u.arbitrary::<i64>()?),
        8 => Number::from_f64(u.arbitrary::<f64>()?).map_or(Value::Null, Value::Number),
        _ => Number::from_f64(f64::from(u.int_in_range(0..=4u8)?) + 0.5)
            .map_or(Value::Null, Value::Number),
    })
}

/// `n` as a JSON number; outside the u64/i64 range it becomes a float, as a JSON
/// parser would make it.
pub fn int_value(n: i128) -> Value {
    if let Ok(n) = u64::try_from(n) {
        Value::from(n)
    } else if let Ok(n) = i64::try_from(n) {
        Value::from(n)
    } else {
        Number::from_f64(n as f64).map_or(Value::Null, Value::Number)
    }
}

/// Any JSON value, at most `depth` levels deep.
pub fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 4 } else { 6 };
    Ok(match u.int_in_range(0..=kinds)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => number(u)?,
        3 | 4 => Value::String(string(u)?),
        5 => {
            let len = u.int_in_range(0..=4)?;
            let mut items = Vec::with_capacity(len);
            for _ in 0..len {
                items.push(value(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => {
            let len = u.int_in_range(0..=4)?;
            let mut map = Map::new();
            for _ in 0..len {
                let key = name(u)?;
                map.insert(key, value(u, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}

/// Parses `bytes` as JSON, or `None` when they are not JSON.
pub fn parse(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice(bytes).ok()
}
