//! The Collections library (robot/libraries/Collections.py). Keywords that modify a list
//! or dictionary change the very object a variable holds, as in RF.

use std::cell::RefCell;
use std::rc::Rc;

use super::Run;
use super::builtin::{inequality, values_flag};
use super::normalizer::Normalizer;
use crate::args::Bound;
use crate::engine::{Level, Session};
use crate::error::{RfError, RfResult};
use crate::matching::glob_match;
use crate::pynum::slice_indices;
use crate::regexp::{self, Flags};
use crate::value::changed;
use crate::value::{Value, plural, py_contains, py_eq, py_sort, seq2str_default, seq2str2};

/// The implementation of Collections keyword `name`.
pub(super) fn lookup(name: &str) -> Option<Run> {
    Some(match name {
        "Convert To List" => |_, b| {
            let item = b.get("item");
            item.iter_items()
                .map(Value::list)
                .ok_or_else(|| not_iterable(&item))
        },
        "Append To List" => |_, b| {
            let list = b.get("list_");
            with_list(&list, |l| l.extend(b.varargs.iter().cloned()))?;
            Ok(list)
        },
        "Insert Into List" => |_, b| {
            let list = b.get("list_");
            let index = b.int("index").unwrap_or(0);
            let value = b.get("value");
            with_list(&list, |l| {
                let len = l.len() as i64;
                let pos = if index < 0 {
                    (index + len).max(0)
                } else {
                    index.min(len)
                };
                l.insert(pos as usize, value);
            })?;
            Ok(list)
        },
        "Combine Lists" => |_, b| {
            let mut out = Vec::new();
            for l in &b.varargs {
                out.extend(l.list_items().unwrap_or_default());
            }
            Ok(Value::list(out))
        },
        "Set List Value" => |_, b| {
            let list = b.get("list_");
            let index = b.int("index").unwrap_or(0);
            let pos = position(&list, index)?;
            with_list(&list, |l| l[pos] = b.get("value"))?;
            Ok(list)
        },
        "Remove Values From List" => |_, b| {
            let list = b.get("list_");
            with_list(&list, |l| {
                l.retain(|item| !b.varargs.iter().any(|v| py_eq(item, v)))
            })?;
            Ok(list)
        },
        "Remove From List" => |_, b| {
            let list = b.get("list_");
            let pos = position(&list, b.int("index").unwrap_or(0))?;
            let mut removed = Value::None;
            with_list(&list, |l| removed = l.remove(pos))?;
            Ok(removed)
        },
        "Remove Duplicates" => |s, b| {
            let items = items_of(&b.get("list_"));
            let mut out: Vec<Value> = Vec::new();
            for item in &items {
                if !out.iter().any(|o| py_eq(o, item)) {
                    out.push(item.clone());
                }
            }
            let removed = items.len() - out.len();
            s.info(format!("{removed} duplicate{} removed.", plural(removed)));
            Ok(Value::list(out))
        },
        "Get From List" => |_, b| {
            let list = b.get("list_");
            let pos = position(&list, b.int("index").unwrap_or(0))?;
            Ok(items_of(&list)[pos].clone())
        },
        "Get Slice From List" => |s, b| {
            let list = b.get("list_");
            let start = start_of(s, b, "Get Slice From List");
            slice(&list, start, b.int("end"))
        },
        "Count Values In List" => |_, b| {
            let list = b.get("list_");
            let part = slice(&list, b.int("start"), b.int("end"))?;
            let value = b.get("value");
            Ok(Value::Int(
                items_of(&part).iter().filter(|v| py_eq(v, &value)).count() as i64,
            ))
        },
        "Get Index From List" => |s, b| {
            let list = b.get("list_");
            let start = start_of(s, b, "Get Index From List").unwrap_or(0);
            let len = items_of(&list).len() as i64;
            let increment = if start < 0 {
                (start + len).max(0)
            } else {
                start
            };
            let part = slice(&list, Some(start), b.int("end"))?;
            let value = b.get("value");
            Ok(Value::Int(
                items_of(&part)
                    .iter()
                    .position(|v| py_eq(v, &value))
                    .map_or(-1, |i| i as i64 + increment),
            ))
        },
        "Copy List" => |_, b| {
            let list = b.get("list_");
            Ok(if b.flag("deepcopy") {
                list.deep_copy()
            } else {
                list.shallow_copy()
            })
        },
        "Reverse List" => |_, b| {
            let list = b.get("list_");
            with_list(&list, |l| l.reverse())?;
            Ok(list)
        },
        "Sort List" => |_, b| {
            let list = b.get("list_");
            let mut items = items_of(&list);
            py_sort(&mut items).map_err(|e| RfError::py("TypeError", e))?;
            match &list {
                Value::List(l) => {
                    *changed(l) = items;
                    Ok(list)
                }
                _ => Ok(Value::list(items)),
            }
        },
        "List Should Contain Value" => |_, b| list_contains(b, true),
        "List Should Not Contain Value" => |_, b| list_contains(b, false),
        "List Should Not Contain Duplicates" => |s, b| {
            let n = Normalizer::case(&b.get("ignore_case"));
            let items = items_of(&n.normalize(&b.get("list_"), false)?);
            let mut dupes: Vec<Value> = Vec::new();
            for item in &items {
                if dupes.iter().any(|d| py_eq(d, item)) {
                    continue;
                }
                let count = items.iter().filter(|v| py_eq(v, item)).count();
                if count > 1 {
                    s.info(format!("'{}' found {count} times.", item.to_str()));
                    dupes.push(item.clone());
                }
            }
            if !dupes.is_empty() {
                return Err(RfError::fail(b.msg().unwrap_or_else(|| {
                    format!("{} found multiple times.", seq2str_default(&dupes))
                })));
            }
            Ok(Value::None)
        },
        "Lists Should Be Equal" => lists_equal,
        "List Should Contain Sub List" => |s, b| {
            let values = values_flag(s, b);
            let n = Normalizer::case(&b.get("ignore_case"));
            let list1 = items_of(&n.normalize(&b.get("list1"), false)?);
            let list2 = items_of(&n.normalize(&b.get("list2"), false)?);
            let missing: Vec<Value> = list2
                .into_iter()
                .filter(|item| !list1.iter().any(|v| py_eq(v, item)))
                .collect();
            if !missing.is_empty() {
                return report(
                    format!(
                        "Following values are missing: {}",
                        seq2str_default(&missing)
                    ),
                    b.msg(),
                    values,
                );
            }
            Ok(Value::None)
        },
        "Log List" => |s, b| {
            let items = items_of(&b.get("list_"));
            let mut lines = Vec::new();
            match items.len() {
                0 => lines.push("List is empty.".to_string()),
                1 => {
                    lines.push("List has one item:".to_string());
                    lines.push(items[0].to_str());
                }
                n => {
                    lines.push(format!(
                        "List length is {n} and it contains following items:"
                    ));
                    for (i, item) in items.iter().enumerate() {
                        lines.push(format!("{i}: {}", item.to_str()));
                    }
                }
            }
            let level = Level::parse(&b.text("level")).unwrap_or(Level::Info);
            s.log(level, lines.join("\n"));
            Ok(Value::None)
        },
        "Convert To Dictionary" => |_, b| {
            let item = b.get("item");
            crate::expr::evaluate_with_cpython(
                "dict(_BASE_VAR_)",
                &crate::expr::NoVars,
                &[("_BASE_VAR_".into(), item)],
            )
            .map_err(RfError::fail)
        },
        "Set To Dictionary" => |_, b| {
            let dict = b.get("dictionary");
            if b.varargs.len() % 2 != 0 {
                return Err(RfError::value(
                    "Adding data to a dictionary failed. There should be even number of key-value-pairs.",
                ));
            }
            let d = dict_of(&dict)?;
            for pair in b.varargs.chunks(2) {
                hashable(&pair[0])?;
                changed(&d).insert(pair[0].clone(), pair[1].clone());
            }
            for (k, v) in &b.kwargs {
                changed(&d).insert(Value::str(k.as_str()), v.clone());
            }
            Ok(dict)
        },
        "Remove From Dictionary" => |s, b| {
            let dict = b.get("dictionary");
            let d = dict_of(&dict)?;
            for key in &b.varargs {
                let removed = changed(&d).remove(key);
                match removed {
                    Some(v) => s.info(format!(
                        "Removed item with key '{}' and value '{}'.",
                        key.to_str(),
                        v.to_str()
                    )),
                    None => s.info(format!("Key '{}' not found.", key.to_str())),
                }
            }
            Ok(dict)
        },
        "Pop From Dictionary" => |_, b| {
            let dict = b.get("dictionary");
            let d = dict_of(&dict)?;
            let key = b.get("key");
            hashable(&key)?;
            let removed = changed(&d).remove(&key);
            match removed {
                Some(v) => Ok(v),
                None if b.given("default") => Ok(b.get("default")),
                None => Err(RfError::fail(format!(
                    "Dictionary does not contain key '{}'.",
                    key.to_str()
                ))),
            }
        },
        "Keep In Dictionary" => |s, b| {
            let dict = b.get("dictionary");
            let d = dict_of(&dict)?;
            let remove: Vec<Value> = d
                .borrow()
                .items
                .iter()
                .map(|(k, _)| k.clone())
                .filter(|k| !b.varargs.iter().any(|keep| py_eq(keep, k)))
                .collect();
            for key in remove {
                let removed = changed(&d).remove(&key);
                if let Some(v) = removed {
                    s.info(format!(
                        "Removed item with key '{}' and value '{}'.",
                        key.to_str(),
                        v.to_str()
                    ));
                }
            }
            Ok(dict)
        },
        "Copy Dictionary" => |_, b| {
            let dict = b.get("dictionary");
            Ok(if b.flag("deepcopy") {
                dict.deep_copy()
            } else {
                dict.shallow_copy()
            })
        },
        "Get Dictionary Keys" => {
            |_, b| Ok(Value::list(keys(&b.get("dictionary"), b.flag("sort_keys"))))
        }
        "Get Dictionary Values" => |_, b| {
            let dict = b.get("dictionary");
            let d = dict_of(&dict)?;
            let values = keys(&dict, b.flag("sort_keys"))
                .iter()
                .filter_map(|k| d.borrow().get(k).cloned())
                .collect();
            Ok(Value::list(values))
        },
        "Get Dictionary Items" => |_, b| {
            let dict = b.get("dictionary");
            let d = dict_of(&dict)?;
            let mut out = Vec::new();
            for k in keys(&dict, b.flag("sort_keys")) {
                let v = d.borrow().get(&k).cloned().unwrap_or(Value::None);
                out.push(k);
                out.push(v);
            }
            Ok(Value::list(out))
        },
        "Get From Dictionary" => |_, b| {
            let dict = b.get("dictionary");
            let key = b.get("key");
            hashable(&key)?;
            let found = dict_of(&dict)?.borrow().get(&key).cloned();
            match found {
                Some(v) => Ok(v),
                None if b.given("default") => Ok(b.get("default")),
                None => Err(RfError::fail(format!(
                    "Dictionary does not contain key '{}'.",
                    key.to_str()
                ))),
            }
        },
        "Dictionary Should Contain Key" => |_, b| dict_key(b, true),
        "Dictionary Should Not Contain Key" => |_, b| dict_key(b, false),
        "Dictionary Should Contain Item" => |_, b| {
            dict_key(b, true)?;
            let n = Normalizer::case(&b.get("ignore_case"));
            let normalized = n.normalize(&b.get("dictionary"), false)?;
            let key = n.key(&b.get("key"))?;
            let actual = dict_of(&normalized)?
                .borrow()
                .get(&key)
                .cloned()
                .unwrap_or(Value::None);
            let expected = n.value(&b.get("value"))?;
            if !py_eq(&actual, &expected) {
                let msg = b.msg();
                let values = msg.is_none();
                let msg = msg.unwrap_or_else(|| {
                    format!(
                        "Value of dictionary key '{}' does not match",
                        b.get("key").to_str()
                    )
                });
                return Err(RfError::fail(inequality(
                    &actual,
                    &expected,
                    "!=",
                    Some(msg),
                    values,
                    "str",
                )));
            }
            Ok(Value::None)
        },
        "Dictionary Should Contain Value" => |_, b| dict_value(b, true),
        "Dictionary Should Not Contain Value" => |_, b| dict_value(b, false),
        "Dictionaries Should Be Equal" => |s, b| dicts_equal(s, b, true),
        "Dictionary Should Contain Sub Dictionary" => |s, b| dicts_equal(s, b, false),
        "Log Dictionary" => |s, b| {
            let dict = b.get("dictionary");
            let d = dict_of(&dict)?;
            let n = d.borrow().items.len();
            let mut lines = vec![match n {
                0 => "Dictionary is empty.".to_string(),
                1 => "Dictionary has one item:".to_string(),
                _ => format!("Dictionary size is {n} and it contains following items:"),
            }];
            for k in keys(&dict, true) {
                let v = d.borrow().get(&k).cloned().unwrap_or(Value::None);
                lines.push(format!("{}: {}", k.to_str(), v.to_str()));
            }
            let level = Level::parse(&b.text("level")).unwrap_or(Level::Info);
            s.log(level, lines.join("\n"));
            Ok(Value::None)
        },
        "Should Contain Match" => |s, b| contain_match(s, b, true),
        "Should Not Contain Match" => |s, b| contain_match(s, b, false),
        "Get Matches" => |s, b| Ok(Value::list(matches(s, b, false)?)),
        "Get Match Count" => |s, b| Ok(Value::Int(matches(s, b, false)?.len() as i64)),
        _ => return None,
    })
}

fn not_iterable(v: &Value) -> RfError {
    RfError::py(
        "TypeError",
        format!("'{}' object is not iterable", v.py_type()),
    )
}

fn items_of(v: &Value) -> Vec<Value> {
    v.list_items().unwrap_or_default()
}

fn with_list(list: &Value, f: impl FnOnce(&mut Vec<Value>)) -> RfResult<()> {
    match list {
        Value::List(l) => {
            f(&mut changed(l));
            Ok(())
        }
        other => Err(RfError::py(
            "AttributeError",
            format!("'{}' object is not a mutable list", other.py_type()),
        )),
    }
}

fn dict_of(v: &Value) -> RfResult<Rc<RefCell<crate::value::DictData>>> {
    match v {
        Value::Dict(d) => Ok(d.clone()),
        other => Err(RfError::py(
            "TypeError",
            format!("'{}' object is not a dictionary", other.py_type()),
        )),
    }
}

fn hashable(k: &Value) -> RfResult<()> {
    if k.hashable() {
        Ok(())
    } else {
        Err(RfError::py(
            "TypeError",
            format!("unhashable type: '{}'", k.py_type()),
        ))
    }
}

/// The position of `index` (negative counts from the end), or RF's index error.
fn position(list: &Value, index: i64) -> RfResult<usize> {
    let len = items_of(list).len();
    let pos = if index < 0 { index + len as i64 } else { index };
    usize::try_from(pos)
        .ok()
        .filter(|p| *p < len)
        .ok_or_else(|| {
            RfError::py(
                "IndexError",
                format!(
                    "Given index {index} is out of the range 0-{}.",
                    len as i64 - 1
                ),
            )
        })
}

fn start_of(s: &mut Session, b: &Bound, keyword: &str) -> Option<i64> {
    if matches!(b.get("start"), Value::Str(ref t) if t.is_empty()) {
        s.log(
            Level::Warn,
            format!(
                "Using an empty string as a start index with the '{keyword}' keyword is deprecated. Use '0' instead."
            ),
        );
        return Some(0);
    }
    b.int("start")
}

fn slice(list: &Value, start: Option<i64>, end: Option<i64>) -> RfResult<Value> {
    let items = items_of(list);
    let picks = slice_indices(items.len(), start, end, None).map_err(RfError::value)?;
    let picked: Vec<Value> = picks.into_iter().map(|i| items[i].clone()).collect();
    Ok(match list {
        Value::Tuple(_) => Value::tuple(picked),
        _ => Value::list(picked),
    })
}

/// RF's `report_error`.
fn report(default: String, msg: Option<String>, values: bool) -> RfResult<Value> {
    Err(RfError::fail(match msg {
        None => default,
        Some(m) if m.is_empty() => default,
        Some(m) if values => format!("{m}\n{default}"),
        Some(m) => m,
    }))
}

fn list_contains(b: &Bound, should: bool) -> RfResult<Value> {
    let list = b.get("list_");
    let value = b.get("value");
    let n = Normalizer::case(&b.get("ignore_case"));
    let container = n.normalize(&list, false)?;
    let hit = py_contains(&container, &n.normalize(&value, false)?)
        .map_err(|e| RfError::py("TypeError", e))?;
    if hit != should {
        let verb = if should {
            "does not contain"
        } else {
            "contains"
        };
        return report(
            format!(
                "{} {verb} value '{}'.",
                seq2str2(&items_of(&list)),
                value.to_str()
            ),
            b.msg(),
            false,
        );
    }
    Ok(Value::None)
}

fn lists_equal(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let values = values_flag(s, b);
    let (list1, list2) = (b.get("list1"), b.get("list2"));
    let (len1, len2) = (items_of(&list1).len(), items_of(&list2).len());
    if len1 != len2 {
        return report(
            format!("Lengths are different: {len1} != {len2}"),
            b.msg(),
            values,
        );
    }
    let names: Vec<(i64, String)> = match b.opt("names") {
        Some(Value::Dict(d)) => d
            .borrow()
            .items
            .iter()
            .filter_map(|(k, v)| match k {
                Value::Int(i) => Some((*i, v.to_str())),
                Value::Str(t) => t.parse().ok().map(|i| (i, v.to_str())),
                _ => None,
            })
            .collect(),
        Some(other) => items_of(&other)
            .iter()
            .enumerate()
            .map(|(i, v)| (i as i64, v.to_str()))
            .collect(),
        None => Vec::new(),
    };
    let n = Normalizer::case(&b.get("ignore_case")).with_order(b.flag("ignore_order"));
    let a = items_of(&n.normalize(&list1, false)?);
    let c = items_of(&n.normalize(&list2, false)?);
    let mut diffs = Vec::new();
    for (i, (x, y)) in a.iter().zip(&c).enumerate() {
        if !py_eq(x, y) {
            let name = names
                .iter()
                .find(|(k, _)| *k == i as i64)
                .map(|(_, n)| format!(" ({n})"))
                .unwrap_or_default();
            diffs.push(inequality(
                x,
                y,
                "!=",
                Some(format!("Index {i}{name}")),
                true,
                "str",
            ));
        }
    }
    if !diffs.is_empty() {
        return report(
            format!("Lists are different:\n{}", diffs.join("\n")),
            b.msg(),
            values,
        );
    }
    Ok(Value::None)
}

/// `sorted(dict)` when the keys can be sorted, insertion order otherwise.
fn keys(dict: &Value, sort: bool) -> Vec<Value> {
    let Value::Dict(d) = dict else {
        return Vec::new();
    };
    let mut keys: Vec<Value> = d.borrow().items.iter().map(|(k, _)| k.clone()).collect();
    if sort {
        let mut sorted = keys.clone();
        if py_sort(&mut sorted).is_ok() {
            keys = sorted;
        }
    }
    keys
}

fn dict_key(b: &Bound, should: bool) -> RfResult<Value> {
    let key = b.get("key");
    let n = Normalizer::case(&b.get("ignore_case"));
    let nk = n.key(&key)?;
    hashable(&nk)?;
    let normalized = n.normalize(&b.get("dictionary"), false)?;
    let hit = dict_of(&normalized)?.borrow().get(&nk).is_some();
    if hit != should {
        let verb = if should {
            "does not contain"
        } else {
            "contains"
        };
        return report(
            format!("Dictionary {verb} key '{}'.", key.to_str()),
            b.msg(),
            false,
        );
    }
    Ok(Value::None)
}

fn dict_value(b: &Bound, should: bool) -> RfResult<Value> {
    let value = b.get("value");
    let n = Normalizer::case(&b.get("ignore_case"));
    let nv = n.value(&value)?;
    let normalized = n.normalize(&b.get("dictionary"), false)?;
    let hit = dict_of(&normalized)?
        .borrow()
        .items
        .iter()
        .any(|(_, v)| py_eq(v, &nv));
    if hit != should {
        let verb = if should {
            "does not contain"
        } else {
            "contains"
        };
        return report(
            format!("Dictionary {verb} value '{}'.", value.to_str()),
            b.msg(),
            false,
        );
    }
    Ok(Value::None)
}

fn dicts_equal(s: &mut Session, b: &Bound, both: bool) -> RfResult<Value> {
    let values = values_flag(s, b);
    let mut n = Normalizer::case(&b.get("ignore_case")).with_order(b.flag("ignore_value_order"));
    if both && let Some(ignored) = b.opt("ignore_keys") {
        n = n.with_ignored_keys(items_of(&ignored))?;
    }
    let d1 = dict_of(&n.normalize(&b.get("dict1"), false)?)?;
    let d2 = dict_of(&n.normalize(&b.get("dict2"), false)?)?;
    let (d1, d2) = (d1.borrow(), d2.borrow());
    let names = |ks: Vec<&Value>| {
        let strs: Vec<String> = ks.iter().map(|k| k.to_str()).collect();
        crate::value::seq2str(&strs, "'", ", ", " and ")
    };
    let missing1: Vec<&Value> = d2
        .items
        .iter()
        .map(|(k, _)| k)
        .filter(|k| d1.get(k).is_none())
        .collect();
    let mut error = String::new();
    if !missing1.is_empty() {
        error = format!(
            "Following keys missing from first dictionary: {}",
            names(missing1)
        );
    }
    if both {
        let missing2: Vec<&Value> = d1
            .items
            .iter()
            .map(|(k, _)| k)
            .filter(|k| d2.get(k).is_none())
            .collect();
        if !missing2.is_empty() {
            error.push_str(&format!(
                "\nFollowing keys missing from second dictionary: {}",
                names(missing2)
            ));
        }
    }
    if !error.is_empty() {
        return report(error.trim().to_string(), b.msg(), values);
    }
    let mut errors = Vec::new();
    for (k, v2) in &d2.items {
        let v1 = d1.get(k).cloned().unwrap_or(Value::None);
        if !py_eq(&v1, v2) {
            errors.push(inequality(
                &v1,
                v2,
                "!=",
                Some(format!("Key {}", k.to_str())),
                true,
                "str",
            ));
        }
    }
    if !errors.is_empty() {
        return report(
            format!(
                "Following keys have different values:\n{}",
                errors.join("\n")
            ),
            b.msg(),
            values,
        );
    }
    Ok(Value::None)
}

/// RF's `_get_matches`: glob (default, or `glob=`) or `regexp=` patterns, optionally
/// case- and whitespace-insensitive, over the string items of a list.
fn matches(s: &mut Session, b: &Bound, warn_bool_only: bool) -> RfResult<Vec<Value>> {
    let ignore_case = match b.opt("case_insensitive") {
        Some(v) => v.truthy(),
        None => b.flag("ignore_case"),
    };
    let ignore_space = match b.opt("whitespace_insensitive") {
        Some(v) => v.truthy(),
        None => b.flag("ignore_whitespace"),
    };
    let pattern = match b.get("pattern") {
        Value::Str(p) => p,
        other => {
            return Err(RfError::py(
                "TypeError",
                format!("Pattern must be string, got '{}'.", other.type_name()),
            ));
        }
    };
    let items: Vec<String> = items_of(&b.get("list"))
        .into_iter()
        .filter_map(|v| match v {
            Value::Str(t) => Some(t),
            _ => None,
        })
        .collect();
    let norm = |t: &str| crate::matching::normalize(t, &[], ignore_case, ignore_space);
    if let Some(p) = pattern.strip_prefix("regexp=") {
        let flags = if ignore_case {
            Flags::ignore_case()
        } else {
            Flags::default()
        };
        let prefix =
            regexp::compile(&format!("(?s)^(?:{})", norm(p)), flags).map_err(RfError::fail)?;
        let full =
            regexp::compile(&format!("(?s)^(?:{})$", norm(p)), flags).map_err(RfError::fail)?;
        let hits: Vec<&String> = items.iter().filter(|i| prefix.is_match(&norm(i))).collect();
        let full_hits = items.iter().filter(|i| full.is_match(&norm(i))).count();
        let differs = if warn_bool_only {
            hits.is_empty() != (full_hits == 0)
        } else {
            hits.len() != full_hits
        };
        if differs {
            s.log(
                Level::Warn,
                format!(
                    "Matching list items with regular expressions will change. Currently patterns only need to match the beginning, but a full match is required in the future. The used pattern '{p}' currently matches {} item{}, but in the future it will match {full_hits} item{}. Change the pattern to '{p}.*' if you want to preserve the current behavior, or to '{p}$' if you want to require a full match already now.",
                    hits.len(),
                    plural(hits.len()),
                    plural(full_hits)
                ),
            );
        }
        return Ok(hits.into_iter().map(|h| Value::Str(h.clone())).collect());
    }
    let p = pattern.strip_prefix("glob=").unwrap_or(&pattern);
    Ok(items
        .iter()
        .filter(|i| glob_match(i, p, ignore_case, ignore_space))
        .map(|i| Value::Str(i.clone()))
        .collect())
}

fn contain_match(s: &mut Session, b: &Bound, should: bool) -> RfResult<Value> {
    let found = !matches(s, b, true)?.is_empty();
    if found != should {
        let verb = if should {
            "does not contain"
        } else {
            "contains"
        };
        return report(
            format!(
                "{} {verb} match for pattern '{}'.",
                seq2str2(&items_of(&b.get("list"))),
                b.get("pattern").to_str()
            ),
            b.msg(),
            false,
        );
    }
    Ok(Value::None)
}
