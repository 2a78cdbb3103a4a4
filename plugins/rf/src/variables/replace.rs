//! Substituting variables into arguments: a port of RF's `VariableReplacer` and
//! `VariableFinder` (stored, number, empty, inline-Python, environment and extended
//! variables, in that order).

use super::search::{VarMatch, search, unescape, unescape_variable_syntax};
use super::{Arg, Store};
use crate::error::{RfError, RfResult};
use crate::expr;
use crate::matching::normalize;
use crate::pynum::{parse_float, parse_int, slice_indices};
use crate::value::Value;

/// RF's `is_list_like`: iterable and not a string.
pub fn is_list_like(v: &Value) -> bool {
    matches!(v, Value::List(_) | Value::Tuple(_) | Value::Dict(_))
}

/// RF's `is_dict_like`: a mapping.
pub fn is_dict_like(v: &Value) -> bool {
    matches!(v, Value::Dict(_))
}

const IDENTIFIERS: &str = "$@&%";

impl Store {
    /// RF's `replace_scalar`: a string that is exactly one variable becomes that
    /// variable's value; anything else becomes text.
    pub fn replace_scalar(&self, arg: &Arg) -> RfResult<Value> {
        match arg {
            Arg::Value(v) => Ok(v.clone()),
            Arg::Raw(s) => self.replace(s, unescape),
        }
    }

    /// [`Store::replace_scalar`] for raw text.
    pub fn replace_scalar_str(&self, s: &str) -> RfResult<Value> {
        self.replace(s, unescape)
    }

    /// RF's `replace_string`: always text.
    pub fn replace_string(&self, s: &str) -> RfResult<String> {
        Ok(self.replace(s, unescape)?.to_str())
    }

    /// RF's `replace_list`: like `replace_scalar` for each argument, except that an
    /// argument that is exactly `@{list}` expands to the list's items.
    pub fn replace_list(&self, items: &[Arg]) -> RfResult<Vec<Value>> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Arg::Value(v) => out.push(v.clone()),
                Arg::Raw(s) => {
                    let whole_list = search(s, IDENTIFIERS, false)?
                        .is_some_and(|m| m.identifier == '@' && is_whole(&m, s));
                    let value = self.replace(s, unescape)?;
                    match (whole_list, value.list_items()) {
                        (true, Some(items)) => out.extend(items),
                        _ => out.push(value),
                    }
                }
            }
        }
        Ok(out)
    }

    /// RF's `replace_list` with `replace_until`: resolves arguments from the front until
    /// `limit` values are resolved, and leaves the rest raw. Run-keyword variants use this
    /// so that the keyword they run resolves its own arguments.
    pub fn replace_list_until(&self, items: &[Arg], limit: usize) -> RfResult<Vec<Arg>> {
        let mut resolved: Vec<Value> = Vec::new();
        let mut rest = items.iter();
        while resolved.len() < limit {
            let Some(item) = rest.next() else { break };
            resolved.extend(self.replace_list(std::slice::from_ref(item))?);
        }
        let mut out: Vec<Arg> = resolved.into_iter().map(Arg::Value).collect();
        out.extend(rest.cloned());
        Ok(out)
    }

    /// RF's `_replace`: substitutes every variable in `s`; text between variables goes
    /// through `unescaper`.
    fn replace(&self, s: &str, unescaper: fn(&str) -> String) -> RfResult<Value> {
        let Some(first) = search(s, IDENTIFIERS, false)? else {
            return Ok(Value::Str(unescaper(s)));
        };
        if is_whole(&first, s) {
            return self.variable_value(&first);
        }
        let mut parts: Vec<Value> = Vec::new();
        let mut rest = s;
        let mut current = Some(first);
        while let Some(m) = current {
            if m.start > 0 {
                parts.push(Value::Str(unescaper(&rest[..m.start])));
            }
            parts.push(self.variable_value(&m)?);
            rest = &rest[m.end..];
            current = search(rest, IDENTIFIERS, false)?;
        }
        if !rest.is_empty() {
            parts.push(Value::Str(unescaper(rest)));
        }
        if parts.iter().all(|p| matches!(p, Value::Bytes(_))) {
            let mut bytes = Vec::new();
            for p in parts {
                if let Value::Bytes(b) = p {
                    bytes.extend(b);
                }
            }
            return Ok(Value::Bytes(bytes));
        }
        Ok(Value::Str(parts.iter().map(Value::to_str).collect()))
    }

    /// The value of one found variable, items and `@`/`&` validation included.
    fn variable_value(&self, m: &VarMatch) -> RfResult<Value> {
        let base = self.resolve_base(&m.base)?;
        let resolved = VarMatch { base, ..m.clone() };
        let mut value = self.find(&resolved)?;
        if !resolved.items.is_empty() {
            value = self.items(&resolved, value)?;
        }
        validate(&resolved, value)
    }

    /// Resolves variables nested in a variable's name (`${item_${i}}`).
    pub(super) fn resolve_base(&self, base: &str) -> RfResult<String> {
        if search(base, IDENTIFIERS, true)?.is_none() {
            return Ok(unescape_variable_syntax(base));
        }
        Ok(self.replace(base, unescape_variable_syntax)?.to_str())
    }

    /// RF's `VariableFinder.find`.
    fn find(&self, m: &VarMatch) -> RfResult<Value> {
        let name = m.name();
        let base = m.base.as_str();
        if m.identifier == '%' {
            // The sandbox has no process environment, only the session's own
            // (set with OperatingSystem's keywords), then `%{NAME=default}`.
            let (env_name, default) = match base.split_once('=') {
                Some((n, d)) => (n, Some(d)),
                None => (base, None),
            };
            if let Some(value) = self.env.get(env_name) {
                return Ok(Value::str(value));
            }
            if let Some(default) = default {
                return Ok(Value::str(default));
            }
            return Err(RfError::data(format!(
                "Environment variable '{name}' not found."
            )));
        }
        if let Some(v) = self.get(base) {
            return Ok(v.clone());
        }
        if m.identifier == '$'
            && let Some(n) = number(base)
        {
            return Ok(n);
        }
        if normalize(base, &["_"], true, true) == "empty" {
            return Ok(match m.identifier {
                '@' => Value::tuple(Vec::new()),
                '&' => Value::dict(Vec::new(), false),
                _ => Value::str(""),
            });
        }
        if base.len() >= 2 && base.starts_with('{') && base.ends_with('}') {
            return expr::rf_evaluate(base[1..base.len() - 1].trim(), self).map_err(|e| {
                RfError::data(format!("Resolving variable '{name}' failed: {}", e.message))
            });
        }
        if let Some((base_name, extended)) = split_extended(base) {
            let base_value = self
                .find(&VarMatch {
                    identifier: '$',
                    base: base_name.to_string(),
                    items: Vec::new(),
                    start: 0,
                    end: 0,
                })
                .map_err(|e| {
                    RfError::data(format!("Resolving variable '{name}' failed: {}", e.message))
                })?;
            let locals = [("_BASE_VAR_".to_string(), base_value)];
            return expr::evaluate_with_cpython(&format!("_BASE_VAR_{extended}"), self, &locals)
                .map_err(|e| RfError::data(format!("Resolving variable '{name}' failed: {e}")));
        }
        Err(self.not_found(&name, true))
    }

    /// `${var}[item][item]`.
    fn items(&self, m: &VarMatch, mut value: Value) -> RfResult<Value> {
        let mut name = m.name();
        for item in &m.items {
            value = match &value {
                Value::Dict(d) => {
                    let key = self.replace_scalar_str(item)?;
                    if !key.hashable() {
                        return Err(RfError::data(format!(
                            "Dictionary '{name}' used with invalid key: unhashable type: '{}'",
                            key.py_type()
                        )));
                    }
                    let found = d.borrow().get(&key).cloned();
                    found.ok_or_else(|| {
                        RfError::data(format!(
                            "Dictionary '{name}' has no key '{}'.",
                            key.to_str()
                        ))
                    })?
                }
                Value::Str(_) | Value::Bytes(_) | Value::List(_) | Value::Tuple(_) => {
                    let index = self.replace_scalar_str(item)?;
                    sequence_item(&name, &value, &index)?
                }
                other => {
                    return Err(RfError::data(format!(
                        "Variable '{name}' is {}, which is not subscriptable, and thus accessing item '{item}' from it is not possible. To use '[{item}]' as a literal value, it needs to be escaped like '\\[{item}]'.",
                        other.type_name()
                    )));
                }
            };
            name = format!("{name}[{item}]");
        }
        Ok(value)
    }
}

fn is_whole(m: &VarMatch, s: &str) -> bool {
    m.start == 0 && m.end == s.len() && !m.base.is_empty()
}

/// `@{x}` must hold a list-like value (its items are returned as a list), `&{x}` a dict
/// (returned as a DotDict copy).
fn validate(m: &VarMatch, value: Value) -> RfResult<Value> {
    match m.identifier {
        '@' => match value.list_items() {
            Some(items) => Ok(Value::list(items)),
            None => Err(RfError::data(format!(
                "Value of variable '{}' is not list or list-like.",
                m.display()
            ))),
        },
        '&' => match &value {
            Value::Dict(d) => Ok(Value::dict(d.borrow().items.clone(), true)),
            _ => Err(RfError::data(format!(
                "Value of variable '{}' is not dictionary or dictionary-like.",
                m.display()
            ))),
        },
        _ => Ok(value),
    }
}

/// RF's `NumberFinder`: `${5}`, `${-1.5}`, `${0x1F}`, `${1e3}`.
fn number(base: &str) -> Option<Value> {
    let n = normalize(base, &[], true, true);
    for (prefix, radix) in [("0b", 2), ("0o", 8), ("0x", 16)] {
        if let Some(digits) = n.strip_prefix(prefix) {
            return parse_int(digits, radix).ok().map(Value::Int);
        }
    }
    if let Ok(i) = parse_int(&n, 10) {
        return Some(Value::Int(i));
    }
    parse_float(&n).ok().map(Value::Float)
}

/// RF's extended-variable split: the shortest base name followed by a character that is
/// neither whitespace nor a word character, and at least one more character.
fn split_extended(base: &str) -> Option<(&str, &str)> {
    if base.contains('\n') {
        return None;
    }
    for (i, c) in base.char_indices().skip(1) {
        let word_or_space = c.is_whitespace() || c.is_alphanumeric() || c == '_';
        if !word_or_space {
            let after = i + c.len_utf8();
            if after < base.len() {
                return Some((&base[..i], &base[i..]));
            }
            return None;
        }
    }
    None
}

/// `${seq}[index]` and `${seq}[start:stop:step]`.
fn sequence_item(name: &str, value: &Value, index: &Value) -> RfResult<Value> {
    let type_name = capitalize(value.type_name());
    let invalid = |shown: &str| {
        RfError::data(format!(
            "{type_name} '{name}' used with invalid index '{shown}'. To use '[{shown}]' as a literal value, it needs to be escaped like '\\[{shown}]'."
        ))
    };
    let parse = |s: &str| parse_int(s, 10).ok();
    enum Index {
        One(i64),
        Slice([Option<i64>; 3]),
    }
    let parsed = match index {
        Value::Int(i) => Index::One(*i),
        Value::Bool(b) => Index::One(i64::from(*b)),
        Value::Str(s) if !s.contains(':') => Index::One(parse(s).ok_or_else(|| invalid(s))?),
        Value::Str(s) => {
            let parts: Vec<&str> = s.split(':').collect();
            if parts.len() > 3 {
                return Err(invalid(s));
            }
            let mut bounds = [None, None, None];
            for (slot, part) in bounds.iter_mut().zip(&parts) {
                if !part.is_empty() {
                    *slot = Some(parse(part).ok_or_else(|| invalid(s))?);
                }
            }
            Index::Slice(bounds)
        }
        other => return Err(invalid(&other.to_str())),
    };
    let items: Vec<Value> = match value {
        Value::Str(s) => s.chars().map(|c| Value::Str(c.to_string())).collect(),
        Value::Bytes(b) => b.iter().map(|x| Value::Int(i64::from(*x))).collect(),
        other => other.list_items().unwrap_or_default(),
    };
    match parsed {
        Index::One(i) => {
            let len = items.len() as i64;
            let pos = if i < 0 { i + len } else { i };
            usize::try_from(pos)
                .ok()
                .and_then(|p| items.get(p).cloned())
                .ok_or_else(|| {
                    RfError::data(format!(
                        "{type_name} '{name}' has no item in index {}.",
                        index.to_str()
                    ))
                })
        }
        Index::Slice([start, stop, step]) => {
            let picks = slice_indices(items.len(), start, stop, step).map_err(RfError::value)?;
            let picked: Vec<Value> = picks.into_iter().map(|i| items[i].clone()).collect();
            Ok(match value {
                Value::Str(_) => Value::Str(picked.iter().map(Value::to_str).collect()),
                Value::Bytes(_) => Value::Bytes(
                    picked
                        .iter()
                        .map(|v| match v {
                            Value::Int(i) => u8::try_from(*i).unwrap_or(0),
                            _ => 0,
                        })
                        .collect(),
                ),
                Value::Tuple(_) => Value::tuple(picked),
                _ => Value::list(picked),
            })
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
