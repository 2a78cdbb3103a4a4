//! Values as JSON text for the host's Python processes: the variable-file loader
//! (`rf-library.load-variables`) and the CPython evaluator (`python.evaluate`).
//!
//! JSON holds `None`, booleans, strings, 64-bit integers, finite floats and lists
//! as they are; every other type is a one-key object (`{"tuple": [...]}`,
//! `{"bytes": "latin-1 text"}`, `{"dict": [[key, value], ...], "dot": bool}`, ...;
//! the full list is in `wit/0.5.0/python.wit`). What the sandbox has no value for
//! (integers past 64 bits, a `complex`, a `set`) comes back as its text.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Map, Number, Value as Json};

use crate::timefmt::dates::{Date, DateTime, TimeDelta};
use crate::value::{ObjectView, PyObject, Value};

/// Deepest nesting encoded: deeper (or a list that contains itself) is refused,
/// as the evaluator refuses it.
const MAX_DEPTH: usize = 64;

const US_PER_SEC: i128 = 1_000_000;
const US_PER_DAY: i128 = 86_400 * US_PER_SEC;

/// Why a value could not be encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct TooDeep;

fn one(key: &str, value: Json) -> Json {
    let mut map = Map::with_capacity(1);
    map.insert(key.to_string(), value);
    Json::Object(map)
}

fn latin1(bytes: &[u8]) -> Json {
    Json::String(bytes.iter().map(|&b| char::from(b)).collect())
}

/// `value` in the encoding.
pub fn encode(value: &Value) -> Result<Json, TooDeep> {
    encode_at(value, 0)
}

fn encode_at(value: &Value, depth: usize) -> Result<Json, TooDeep> {
    if depth > MAX_DEPTH {
        return Err(TooDeep);
    }
    let all = |items: &[Value]| -> Result<Json, TooDeep> {
        items
            .iter()
            .map(|v| encode_at(v, depth + 1))
            .collect::<Result<Vec<_>, _>>()
            .map(Json::Array)
    };
    Ok(match value {
        Value::None => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::Number((*i).into()),
        Value::Float(f) => match Number::from_f64(*f) {
            Some(n) => Json::Number(n),
            None => one(
                "float",
                Json::String(
                    if f.is_nan() {
                        "nan"
                    } else if *f > 0.0 {
                        "inf"
                    } else {
                        "-inf"
                    }
                    .into(),
                ),
            ),
        },
        Value::Str(s) => Json::String(s.clone()),
        Value::Bytes(b) => one("bytes", latin1(b)),
        Value::List(items) => all(&items.borrow())?,
        Value::Tuple(items) => one("tuple", all(items)?),
        Value::Dict(d) => {
            let d = d.borrow();
            let items = d
                .items
                .iter()
                .map(|(k, v)| {
                    Ok(Json::Array(vec![
                        encode_at(k, depth + 1)?,
                        encode_at(v, depth + 1)?,
                    ]))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut map = Map::with_capacity(2);
            map.insert("dict".into(), Json::Array(items));
            map.insert("dot".into(), Json::Bool(d.dot));
            Json::Object(map)
        }
        Value::DateTime(dt) => {
            let f = dt.fields();
            one(
                "datetime",
                Json::Array(vec![
                    f.year.into(),
                    f.month.into(),
                    f.day.into(),
                    f.hour.into(),
                    f.minute.into(),
                    f.second.into(),
                    f.micro.into(),
                ]),
            )
        }
        Value::Date(d) => {
            let (y, m, day) = d.ymd();
            one("date", Json::Array(vec![y.into(), m.into(), day.into()]))
        }
        Value::TimeDelta(td) => {
            // Python's normal form: days may be negative, seconds and
            // microseconds never are.
            let micros = td.micros();
            let days = micros.div_euclid(US_PER_DAY);
            let rest = micros.rem_euclid(US_PER_DAY);
            let as_json = |n: i128| Json::Number(Number::from(i64::try_from(n).unwrap_or(0)));
            one(
                "timedelta",
                Json::Array(vec![
                    as_json(days),
                    as_json(rest / US_PER_SEC),
                    as_json(rest % US_PER_SEC),
                ]),
            )
        }
        // The evaluator finds the object itself by its handle.
        Value::Object(o) => one("object", one("handle", Json::String(o.handle.clone()))),
    })
}

/// `[[name, value], ...]` as JSON text.
pub fn encode_pairs(pairs: &[(String, Value)]) -> Result<String, TooDeep> {
    let items = pairs
        .iter()
        .map(|(name, value)| {
            Ok(Json::Array(vec![
                Json::String(name.clone()),
                encode(value)?,
            ]))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Json::Array(items).to_string())
}

/// A value from the encoding. Forms this plugin has no type for decode to the
/// nearest one it has: `bytearray` to bytes, big integers and `{"text"}` to
/// their text, a date or time out of range to its text.
pub fn decode(json: &Json) -> Value {
    decode_at(json, 0)
}

fn decode_at(json: &Json, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return Value::None;
    }
    let Json::Object(map) = json else {
        return match json {
            Json::Array(items) => {
                Value::list(items.iter().map(|v| decode_at(v, depth + 1)).collect())
            }
            other => Value::from_json(other),
        };
    };
    if let Some(Json::Array(items)) = map.get("dict") {
        let dot = map.get("dot").and_then(Json::as_bool).unwrap_or(false);
        let items = items
            .iter()
            .filter_map(|pair| {
                Some((
                    decode_at(pair.get(0)?, depth + 1),
                    decode_at(pair.get(1)?, depth + 1),
                ))
            })
            .collect();
        return Value::dict(items, dot);
    }
    if let Some(Json::Array(items)) = map.get("tuple") {
        return Value::Tuple(Rc::new(
            items.iter().map(|v| decode_at(v, depth + 1)).collect(),
        ));
    }
    if let Some(Json::Object(object)) = map.get("object") {
        return decode_object(object, depth);
    }
    let text = |key: &str| map.get(key).and_then(Json::as_str);
    if let Some(latin1) = text("bytes").or_else(|| text("bytearray")) {
        // Each char is one byte (the bytes were decoded as latin-1).
        return Value::Bytes(latin1.chars().map(|c| c as u32 as u8).collect());
    }
    if let Some(f) = text("float") {
        return Value::Float(match f {
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => f64::NAN,
        });
    }
    let ints = |key: &str| -> Option<Vec<i64>> {
        map.get(key)?
            .as_array()?
            .iter()
            .map(Json::as_i64)
            .collect::<Option<Vec<_>>>()
    };
    if let Some(parts) = ints("datetime")
        && let [y, mo, d, h, mi, s, us] = parts[..]
        && let Ok(dt) = Date::new(y, mo, d).and_then(|date| DateTime::new(date, h, mi, s, us))
    {
        return Value::DateTime(dt);
    }
    if let Some(parts) = ints("date")
        && let [y, m, d] = parts[..]
        && let Ok(date) = Date::new(y, m, d)
    {
        return Value::Date(date);
    }
    if let Some(parts) = ints("timedelta")
        && let [days, secs, micros] = parts[..]
        && let Ok(td) = TimeDelta::from_micros(
            i128::from(days) * US_PER_DAY + i128::from(secs) * US_PER_SEC + i128::from(micros),
        )
    {
        return Value::TimeDelta(td);
    }
    Value::Str(
        text("int")
            .or_else(|| text("text"))
            .unwrap_or_default()
            .to_string(),
    )
}

/// `{"object": {"handle", "class", "module", "type_name", "hashable", "value_eq",
/// "number", "str", "repr", "truthy", "len", "mapping", "items"}}`: an object the evaluator
/// holds, with the views of it that keywords here read.
fn decode_object(object: &Map<String, Json>, depth: usize) -> Value {
    let text = |key: &str| field_text(object, key);
    let flag = |key: &str| object.get(key).and_then(Json::as_bool).unwrap_or(false);
    Value::Object(Rc::new(PyObject {
        handle: text("handle"),
        class: text("class"),
        module: text("module"),
        type_name: text("type_name"),
        hashable: flag("hashable"),
        value_eq: flag("value_eq"),
        number: object.get("number").and_then(|n| {
            n.as_i64()
                .map(crate::value::Num::Int)
                .or_else(|| n.as_f64().map(crate::value::Num::Float))
        }),
        view: RefCell::new(decode_view(object, depth)),
    }))
}

fn field_text(object: &Map<String, Json>, key: &str) -> String {
    object
        .get(key)
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The changeable part of an object's form.
fn decode_view(object: &Map<String, Json>, depth: usize) -> ObjectView {
    let text = |key: &str| field_text(object, key);
    ObjectView {
        text: text("str"),
        repr: text("repr"),
        truthy: object.get("truthy").and_then(Json::as_bool).unwrap_or(true),
        len: object
            .get("len")
            .and_then(Json::as_u64)
            .and_then(|n| usize::try_from(n).ok()),
        mapping: object.get("mapping").and_then(Json::as_array).map(|pairs| {
            pairs
                .iter()
                .filter_map(|pair| {
                    Some((
                        decode_at(pair.get(0)?, depth + 2),
                        decode_at(pair.get(1)?, depth + 2),
                    ))
                })
                .collect()
        }),
        items: object
            .get("items")
            .and_then(Json::as_array)
            .map(|items| items.iter().map(|v| decode_at(v, depth + 2)).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::py_eq;

    fn round_trip(value: &Value) -> String {
        decode(&encode(value).expect("encodes")).repr()
    }

    fn object(form: serde_json::Value) -> Value {
        decode(&serde_json::json!({ "object": form }))
    }

    #[test]
    fn objects_keep_their_handle_and_views() {
        let m = object(serde_json::json!({
            "handle": "ab-1", "class": "Frozen", "module": "abc", "type_name": "Frozen",
            "hashable": false, "value_eq": true, "str": "<Frozen>", "repr": "<Frozen>",
            "truthy": true, "len": 2, "mapping": [["x", 1], ["y", {"tuple": [2]}]],
        }));
        assert_eq!(m.to_str(), "<Frozen>");
        assert_eq!(m.py_type(), "Frozen");
        assert_eq!(m.class_repr(), "<class 'abc.Frozen'>");
        assert_eq!(m.len(), Some(2));
        assert!(!m.hashable());
        let plain = crate::expr::literal_eval("{'y': (2,), 'x': 1}").expect("a dict");
        assert!(py_eq(&m, &plain), "a Mapping equals a dict of its items");
        assert_eq!(
            encode(&m).expect("encodes"),
            serde_json::json!({"object": {"handle": "ab-1"}}),
            "only the handle goes back: the evaluator holds the object"
        );
        let Value::Object(o) = &m else {
            panic!("an object")
        };
        assert_eq!(
            o.as_dict().map(|d| d.repr()).as_deref(),
            Some("{'x': 1, 'y': (2,)}")
        );
    }

    #[test]
    fn object_equality_follows_the_views() {
        let number = |handle: &str, repr: &str, n: serde_json::Value| {
            object(serde_json::json!({
                "handle": handle, "class": "Decimal", "module": "decimal", "value_eq": true,
                "repr": repr, "number": n,
            }))
        };
        let half = number("h-1", "Decimal('0.5')", serde_json::json!(0.5));
        assert!(py_eq(&half, &Value::Float(0.5)));
        assert!(py_eq(
            &number("h-2", "Decimal('2')", serde_json::json!(2)),
            &Value::Int(2)
        ));
        assert!(!py_eq(&half, &Value::Float(0.25)));
        let set = |handle: &str, items: serde_json::Value| {
            object(serde_json::json!({
                "handle": handle, "class": "set", "module": "builtins", "value_eq": true,
                "repr": handle, "items": items,
            }))
        };
        assert!(py_eq(
            &set("s-1", serde_json::json!([1, 2])),
            &set("s-2", serde_json::json!([2, 1]))
        ));
        assert!(!py_eq(
            &set("s-1", serde_json::json!([1, 2])),
            &set("s-3", serde_json::json!([1, 3]))
        ));
        let plain = |handle: &str| {
            object(
                serde_json::json!({"handle": handle, "class": "C", "module": "m", "repr": "<C>"}),
            )
        };
        assert!(py_eq(&plain("p-1"), &plain("p-1")), "an object is itself");
        assert!(
            !py_eq(&plain("p-1"), &plain("p-2")),
            "identity, when the class has no =="
        );
    }

    #[test]
    fn every_type_of_the_plugin_survives_the_trip() {
        let date = Date::new(2024, 2, 29).expect("a date");
        let values = [
            Value::None,
            Value::Bool(true),
            Value::Int(i64::MIN),
            Value::Float(0.1),
            Value::Float(f64::NEG_INFINITY),
            Value::Str("ä\n".into()),
            Value::Bytes(vec![0, 255]),
            Value::list(vec![
                Value::Int(1),
                Value::tuple(vec![Value::Str("x".into())]),
            ]),
            Value::dict(vec![(Value::Int(1), Value::list(vec![]))], true),
            Value::Date(date),
            Value::DateTime(DateTime::new(date, 23, 59, 1, 999_999).expect("a datetime")),
            Value::TimeDelta(TimeDelta::from_micros(-1).expect("a timedelta")),
        ];
        for value in values {
            assert_eq!(round_trip(&value), value.repr());
        }
    }

    #[test]
    fn a_negative_timedelta_is_in_pythons_normal_form() {
        let td = TimeDelta::from_micros(-1).expect("a timedelta");
        assert_eq!(
            encode(&Value::TimeDelta(td)).expect("encodes").to_string(),
            r#"{"timedelta":[-1,86399,999999]}"#
        );
    }

    #[test]
    fn a_list_that_contains_itself_is_refused_not_followed() {
        let list = Value::list(vec![]);
        if let Value::List(items) = &list {
            items.borrow_mut().push(list.clone());
        }
        assert_eq!(encode(&list), Err(TooDeep));
        // Break the cycle so the test does not leak it.
        if let Value::List(items) = &list {
            items.borrow_mut().clear();
        }
    }

    #[test]
    fn forms_without_a_type_here_decode_to_the_nearest() {
        let json: Json = serde_json::from_str(
            r#"[{"bytearray": "\u00ff"}, {"int": "18446744073709551616"}, {"text": "(1+0j)"}]"#,
        )
        .expect("json");
        assert_eq!(
            decode(&json).repr(),
            "[b'\\xff', '18446744073709551616', '(1+0j)']"
        );
    }
}
