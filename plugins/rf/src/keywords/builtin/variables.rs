//! BuiltIn's variable keywords: `Set Test/Suite/Global Variable`, `Get Variable Value`,
//! `Variable Should (Not) Exist`, `Set Variable If` and friends.

use super::convert::dict_items;
use super::is_true;
use crate::args::Bound;
use crate::engine::{Level, Session, format_assign_message};
use crate::error::{RfError, RfResult};
use crate::value::Value;
use crate::variables::Arg;
use crate::variables::search::{is_list_variable, search, whole_variable};

/// RF's `_get_var_name`: the decorated name a `Set ... Variable` keyword writes to.
pub(super) fn var_name(s: &Session, original: &Arg, require_assign: bool) -> RfResult<String> {
    let original = match original {
        Arg::Raw(r) => r.clone(),
        Arg::Value(v) => v.to_str(),
    };
    let replaced = s
        .store
        .replace_string(&original)
        .unwrap_or_else(|_| original.clone());
    let name = resolve_var_name(s, &replaced).unwrap_or_else(|| original.clone());
    let valid = whole_variable(&name, "$@&").filter(|m| !require_assign || m.items.is_empty());
    match valid {
        Some(m) => {
            let base = if search(&m.base, "$@&%", true)?.is_some() {
                s.store.replace_string(&m.base)?
            } else {
                m.base.clone()
            };
            let items: String = m.items.iter().map(|i| format!("[{i}]")).collect();
            Ok(format!("{}{{{base}}}{items}", m.identifier))
        }
        None => Err(RfError::data(format!("Invalid variable name '{name}'."))),
    }
}

pub(super) fn resolve_var_name(_s: &Session, name: &str) -> Option<String> {
    let name = name.strip_prefix('\\').unwrap_or(name);
    let mut chars = name.chars();
    let first = chars.next()?;
    if name.chars().count() < 2 || !"$@&".contains(first) {
        return None;
    }
    let name = if chars.next() != Some('{') {
        format!("{first}{{{}}}", &name[1..])
    } else {
        name.to_string()
    };
    whole_variable(&name, "$@&")
        .filter(|m| m.items.is_empty())
        .map(|m| m.display())
}

pub(super) fn undecorated(name: &str) -> &str {
    &name[2..name.len() - 1]
}

pub(super) fn set_scoped_variable(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let Some((name_arg, values)) = b.rest.split_first() else {
        return Err(RfError::invalid("Variable name missing."));
    };
    let name = var_name(s, name_arg, true)?;
    let mut values = values.to_vec();
    // `children=` only means something for suite scopes; there is one scope here.
    if let Some(Arg::Raw(last)) = values.last()
        && last.starts_with("children=")
    {
        values.pop();
    }
    let value = var_value(s, &name, &values)?;
    s.info(format_assign_message(&name, &value));
    s.store.set(undecorated(&name), value);
    Ok(Value::None)
}

/// RF's `_get_var_value`.
pub(super) fn var_value(s: &Session, name: &str, values: &[Arg]) -> RfResult<Value> {
    if values.is_empty() {
        let existing = s.store.replace_scalar_str(name)?;
        return Ok(existing);
    }
    match name.chars().next() {
        Some('$') => {
            if values.len() != 1 || values[0].raw().is_some_and(is_list_variable) {
                return Err(RfError::data(format!(
                    "Setting list value to scalar variable '{name}' is not supported anymore. Create list variable '@{}' instead.",
                    &name[1..]
                )));
            }
            s.store.replace_scalar(&values[0])
        }
        Some('@') => Ok(Value::list(s.store.replace_list(values)?)),
        _ => Ok(Value::dict(dict_items(s, values)?, true)),
    }
}

pub(super) fn get_variable_value(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let Some((name_arg, rest)) = b.rest.split_first() else {
        return Ok(Value::None);
    };
    // An invalid name fails, as in RF; a variable that is not there, or one inside the
    // name that does not resolve (RF's `VariableError`), gives the default.
    let found = match var_name(s, name_arg, false) {
        Err(e) if e.message.starts_with("Invalid variable name") => return Err(e),
        Err(e) => Err(e),
        Ok(name) => s.store.replace_scalar_str(&name),
    };
    match found {
        Ok(v) => Ok(v),
        Err(_) => match rest.first() {
            Some(default) => s.store.replace_scalar(default),
            None => Ok(Value::None),
        },
    }
}

pub(super) fn variable_should(s: &mut Session, b: &Bound, exist: bool) -> RfResult<Value> {
    let Some((name_arg, rest)) = b.rest.split_first() else {
        return Ok(Value::None);
    };
    let name = var_name(s, name_arg, true)?;
    let exists = s.store.replace_scalar_str(&name).is_ok();
    if exists == exist {
        return Ok(Value::None);
    }
    let message = match rest.first() {
        Some(Arg::Raw(m)) => s.store.replace_string(m)?,
        Some(Arg::Value(v)) => v.to_str(),
        None if exist => format!("Variable '{name}' does not exist."),
        None => format!("Variable '{name}' exists."),
    };
    Err(RfError::fail(message))
}

pub(super) fn get_variables(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let decorate = !b.flag("no_decoration");
    let items = s
        .store
        .iter()
        .map(|(name, v)| {
            // RF decorates lists as `@{name}` and dictionaries as `&{name}`.
            let key = match (decorate, v) {
                (false, _) => name.to_string(),
                (true, Value::List(_)) => format!("@{{{name}}}"),
                (true, Value::Dict(_)) => format!("&{{{name}}}"),
                (true, _) => format!("${{{name}}}"),
            };
            (Value::Str(key), v.clone())
        })
        .collect();
    Ok(Value::dict(items, false))
}

pub(super) fn log_variables(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let level = Level::parse(&b.text("level")).unwrap_or(Level::Info);
    let mut vars: Vec<(String, Value)> = s
        .store
        .iter()
        .map(|(n, v)| (n.to_string(), v.clone()))
        .collect();
    vars.sort_by_key(|(n, _)| n.to_lowercase());
    for (name, value) in vars {
        let line = format_assign_message(&format!("${{{name}}}"), &value);
        s.log(level, line);
    }
    Ok(Value::None)
}

pub(super) fn set_variable_if(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let mut condition = b.get("condition");
    let mut values: Vec<Arg> = b.rest.clone();
    loop {
        values = expand_first_list(s, values)?;
        if is_true(s, &condition)? {
            return s.store.replace_scalar(&values[0]);
        }
        match values.len() {
            1 => return Ok(Value::None),
            2 => return s.store.replace_scalar(&values[1]),
            _ => {
                condition = s.store.replace_scalar(&values[1])?;
                values = values[2..].to_vec();
            }
        }
    }
}

pub(super) fn expand_first_list(s: &Session, mut values: Vec<Arg>) -> RfResult<Vec<Arg>> {
    loop {
        let Some(first) = values.first() else {
            return Err(RfError::fail("At least one value is required."));
        };
        match first.raw() {
            Some(r) if is_list_variable(r) => {
                let items = s.store.replace_list(std::slice::from_ref(first))?;
                let mut expanded: Vec<Arg> = items.into_iter().map(Arg::Value).collect();
                expanded.extend(values.drain(1..));
                values = expanded;
            }
            _ => return Ok(values),
        }
    }
}
