//! Methods of `str`, `bytes`, `list`, `tuple` and `dict` values.

use super::{
    arity, call_builtin, int_arg, iterate, kwarg, no_kwargs, str_arg, type_err, value_err,
};
use crate::expr::EvalError;
use crate::value::changed;
use crate::value::{Value, py_eq, py_sort};
use crate::{pyfmt, pystr};

pub(super) const STR_METHODS: &[&str] = &[
    "upper",
    "lower",
    "casefold",
    "title",
    "capitalize",
    "swapcase",
    "strip",
    "lstrip",
    "rstrip",
    "split",
    "rsplit",
    "splitlines",
    "replace",
    "startswith",
    "endswith",
    "find",
    "rfind",
    "index",
    "rindex",
    "count",
    "join",
    "format",
    "zfill",
    "center",
    "ljust",
    "rjust",
    "isdigit",
    "isnumeric",
    "isdecimal",
    "isalpha",
    "isalnum",
    "isspace",
    "islower",
    "isupper",
    "istitle",
    "encode",
    "partition",
    "rpartition",
    "removeprefix",
    "removesuffix",
];

pub(super) const LIST_METHODS: &[&str] = &[
    "index", "count", "copy", "append", "extend", "insert", "pop", "remove", "reverse", "sort",
    "clear",
];

pub(super) const DICT_METHODS: &[&str] = &[
    "get",
    "keys",
    "values",
    "items",
    "copy",
    "pop",
    "update",
    "setdefault",
    "clear",
];

/// Whether `v` has a method `name` here.
pub(in crate::expr) fn has_method(v: &Value, name: &str) -> bool {
    match v {
        Value::Str(_) => STR_METHODS.contains(&name),
        Value::List(_) => LIST_METHODS.contains(&name),
        Value::Tuple(_) => matches!(name, "index" | "count"),
        Value::Dict(_) => DICT_METHODS.contains(&name),
        Value::Bytes(_) => matches!(name, "decode"),
        _ => false,
    }
}

/// Calls `obj.method(*args, **kwargs)`.
pub(in crate::expr) fn call_method(
    obj: &Value,
    method: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value, EvalError> {
    if let Value::Dict(d) = obj
        && d.borrow().dot
        && !has_method(obj, method)
    {
        // A DotDict key holding a value is not callable.
        if let Some(v) = d.borrow().get(&Value::str(method)) {
            return Err(type_err(format!(
                "'{}' object is not callable",
                v.py_type()
            )));
        }
    }
    if !has_method(obj, method) {
        return Err(EvalError::py(
            "AttributeError",
            format!("'{}' object has no attribute '{method}'", obj.py_type()),
        ));
    }
    if method != "format"
        && !matches!(
            method,
            "split"
                | "rsplit"
                | "sort"
                | "get"
                | "encode"
                | "decode"
                | "splitlines"
                | "update"
                | "pop"
        )
    {
        no_kwargs(method, kwargs)?;
    }
    match obj {
        Value::Str(s) => str_method(s, method, args, kwargs),
        Value::List(_) | Value::Tuple(_) => list_method(obj, method, args, kwargs),
        Value::Dict(_) => dict_method(obj, method, args, kwargs),
        Value::Bytes(b) => {
            arity(method, args, 0, 2)?;
            let encoding = kwarg(kwargs, "encoding")
                .or(args.first())
                .and_then(Value::as_str)
                .unwrap_or("utf-8");
            decode(b, encoding)
        }
        _ => Err(EvalError::py("AttributeError", method)),
    }
}

pub(super) fn decode(b: &[u8], encoding: &str) -> Result<Value, EvalError> {
    match encoding.to_ascii_lowercase().replace('_', "-").as_str() {
        "utf-8" | "utf8" => String::from_utf8(b.to_vec()).map(Value::Str).map_err(|e| {
            EvalError::py(
                "UnicodeDecodeError",
                format!("'utf-8' codec can't decode bytes: {e}"),
            )
        }),
        "latin-1" | "latin1" | "iso-8859-1" => Ok(Value::Str(crate::value::latin1(b))),
        "ascii" => {
            if let Some(pos) = b.iter().position(|x| *x > 127) {
                return Err(EvalError::py(
                    "UnicodeDecodeError",
                    format!(
                        "'ascii' codec can't decode byte 0x{:02x} in position {pos}: ordinal not in range(128)",
                        b[pos]
                    ),
                ));
            }
            Ok(Value::Str(crate::value::latin1(b)))
        }
        other => Err(EvalError::py(
            "LookupError",
            format!("unknown encoding: {other}"),
        )),
    }
}

pub(super) fn opt_str<'a>(
    args: &'a [Value],
    i: usize,
    what: &str,
) -> Result<Option<&'a str>, EvalError> {
    match args.get(i) {
        None | Some(Value::None) => Ok(None),
        Some(v) => str_arg(v, what).map(Some),
    }
}

pub(super) fn str_method(
    s: &str,
    method: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value, EvalError> {
    let text = |t: String| Ok(Value::Str(t));
    let flag = |b: bool| Ok(Value::Bool(b));
    match method {
        "upper" => text(s.to_uppercase()),
        "lower" => text(s.to_lowercase()),
        "casefold" => text(crate::pystr::casefold(s)),
        "title" => text(pystr::title(s)),
        "capitalize" => text(pystr::capitalize(s)),
        "swapcase" => text(
            s.chars()
                .flat_map(|c| {
                    if c.is_uppercase() {
                        c.to_lowercase().collect::<Vec<_>>()
                    } else {
                        c.to_uppercase().collect::<Vec<_>>()
                    }
                })
                .collect(),
        ),
        "strip" | "lstrip" | "rstrip" => {
            arity(method, args, 0, 1)?;
            let chars = opt_str(args, 0, "strip arg")?;
            text(pystr::strip(
                s,
                chars,
                method != "rstrip",
                method != "lstrip",
            ))
        }
        "split" | "rsplit" => {
            arity(method, args, 0, 2)?;
            let sep = match kwarg(kwargs, "sep").or(args.first()) {
                None | Some(Value::None) => None,
                Some(v) => Some(str_arg(v, "must be str or None, not")?),
            };
            let maxsplit = kwarg(kwargs, "maxsplit")
                .or(args.get(1))
                .map(|v| int_arg(v, ""))
                .transpose()?
                .unwrap_or(-1);
            let parts = if method == "split" {
                pystr::split(s, sep, maxsplit)
            } else {
                pystr::rsplit(s, sep, maxsplit)
            }
            .map_err(value_err)?;
            Ok(Value::list(parts.into_iter().map(Value::Str).collect()))
        }
        "splitlines" => {
            let keep = kwarg(kwargs, "keepends")
                .or(args.first())
                .is_some_and(Value::truthy);
            Ok(Value::list(
                pystr::splitlines(s, keep)
                    .into_iter()
                    .map(Value::Str)
                    .collect(),
            ))
        }
        "replace" => {
            arity(method, args, 2, 3)?;
            let old = str_arg(&args[0], "replace() argument 1")?;
            let new = str_arg(&args[1], "replace() argument 2")?;
            let count = args
                .get(2)
                .map(|v| int_arg(v, ""))
                .transpose()?
                .unwrap_or(-1);
            text(pystr::replace(s, old, new, count))
        }
        "startswith" | "endswith" => {
            arity(method, args, 1, 1)?;
            let candidates = match &args[0] {
                Value::Str(p) => vec![p.clone()],
                Value::Tuple(t) => t
                    .iter()
                    .map(|v| str_arg(v, "tuple for startswith item").map(str::to_string))
                    .collect::<Result<_, _>>()?,
                other => {
                    return Err(type_err(format!(
                        "{method} first arg must be str or a tuple of str, not {}",
                        other.py_type()
                    )));
                }
            };
            flag(candidates.iter().any(|p| {
                if method == "startswith" {
                    s.starts_with(p.as_str())
                } else {
                    s.ends_with(p.as_str())
                }
            }))
        }
        "find" | "rfind" | "index" | "rindex" => {
            arity(method, args, 1, 1)?;
            let sub = str_arg(&args[0], "must be str, not")?;
            let pos = if method.starts_with('r') {
                pystr::rfind(s, sub)
            } else {
                pystr::find(s, sub)
            };
            match pos {
                Some(p) => Ok(Value::Int(p as i64)),
                None if method.ends_with("find") => Ok(Value::Int(-1)),
                None => Err(value_err("substring not found")),
            }
        }
        "count" => {
            arity(method, args, 1, 1)?;
            Ok(Value::Int(
                pystr::count(s, str_arg(&args[0], "must be str, not")?) as i64,
            ))
        }
        "join" => {
            arity(method, args, 1, 1)?;
            let items = iterate(&args[0])?;
            let mut parts = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::Str(t) => parts.push(t.clone()),
                    other => {
                        return Err(type_err(format!(
                            "sequence item {i}: expected str instance, {} found",
                            other.py_type()
                        )));
                    }
                }
            }
            text(parts.join(s))
        }
        "format" => pyfmt::format(s, args, kwargs)
            .map(Value::Str)
            .map_err(Into::into),
        "zfill" => {
            arity(method, args, 1, 1)?;
            let width = usize::try_from(int_arg(&args[0], "")?).unwrap_or(0);
            let len = s.chars().count();
            if len >= width {
                return text(s.to_string());
            }
            let (sign, rest) = match s.chars().next() {
                Some(c @ ('+' | '-')) => (c.to_string(), &s[1..]),
                _ => (String::new(), s),
            };
            text(format!("{sign}{}{rest}", "0".repeat(width - len)))
        }
        "center" | "ljust" | "rjust" => {
            arity(method, args, 1, 2)?;
            let width = usize::try_from(int_arg(&args[0], "")?).unwrap_or(0);
            let fill = match args.get(1) {
                Some(Value::Str(f)) if f.chars().count() == 1 => f.chars().next().unwrap_or(' '),
                Some(_) => {
                    return Err(type_err(
                        "The fill character must be exactly one character long",
                    ));
                }
                None => ' ',
            };
            let len = s.chars().count();
            if len >= width {
                return text(s.to_string());
            }
            let n = width - len;
            let fills = |k| std::iter::repeat_n(fill, k).collect::<String>();
            text(match method {
                "ljust" => format!("{s}{}", fills(n)),
                "rjust" => format!("{}{s}", fills(n)),
                // Python's center puts the odd extra fill on the left when the width is odd.
                _ => {
                    let left = n / 2 + (n & width & 1);
                    format!("{}{s}{}", fills(left), fills(n - left))
                }
            })
        }
        "isdigit" | "isnumeric" | "isdecimal" => {
            flag(!s.is_empty() && s.chars().all(char::is_numeric))
        }
        "isalpha" => flag(!s.is_empty() && s.chars().all(char::is_alphabetic)),
        "isalnum" => flag(!s.is_empty() && s.chars().all(char::is_alphanumeric)),
        "isspace" => flag(!s.is_empty() && s.chars().all(pystr::is_space)),
        "islower" => flag(pystr::is_lower(s)),
        "isupper" => flag(pystr::is_upper(s)),
        "istitle" => {
            flag(!s.is_empty() && pystr::title(s) == s && s.chars().any(char::is_alphabetic))
        }
        "encode" => {
            let encoding = kwarg(kwargs, "encoding")
                .or(args.first())
                .and_then(Value::as_str)
                .unwrap_or("utf-8");
            match encoding.to_ascii_lowercase().replace('_', "-").as_str() {
                "utf-8" | "utf8" => Ok(Value::Bytes(s.as_bytes().to_vec())),
                "latin-1" | "latin1" | "iso-8859-1" | "ascii" => {
                    let limit = if encoding.eq_ignore_ascii_case("ascii") {
                        0x80
                    } else {
                        0x100
                    };
                    s.chars()
                        .map(|c| {
                            u8::try_from(u32::from(c))
                                .ok()
                                .filter(|b| u32::from(*b) < limit)
                        })
                        .collect::<Option<Vec<u8>>>()
                        .map(Value::Bytes)
                        .ok_or_else(|| {
                            EvalError::py(
                                "UnicodeEncodeError",
                                format!("'{encoding}' codec can't encode character"),
                            )
                        })
                }
                other => Err(EvalError::py(
                    "LookupError",
                    format!("unknown encoding: {other}"),
                )),
            }
        }
        "partition" | "rpartition" => {
            arity(method, args, 1, 1)?;
            let sep = str_arg(&args[0], "must be str, not")?;
            if sep.is_empty() {
                return Err(value_err("empty separator"));
            }
            let found = if method == "partition" {
                s.find(sep)
            } else {
                s.rfind(sep)
            };
            let parts = match found {
                Some(i) => [&s[..i], sep, &s[i + sep.len()..]],
                None if method == "partition" => [s, "", ""],
                None => ["", "", s],
            };
            Ok(Value::tuple(parts.iter().map(|p| Value::str(*p)).collect()))
        }
        "removeprefix" => {
            arity(method, args, 1, 1)?;
            let p = str_arg(&args[0], "removeprefix() argument")?;
            text(s.strip_prefix(p).unwrap_or(s).to_string())
        }
        "removesuffix" => {
            arity(method, args, 1, 1)?;
            let p = str_arg(&args[0], "removesuffix() argument")?;
            text(s.strip_suffix(p).unwrap_or(s).to_string())
        }
        _ => Err(EvalError::py(
            "AttributeError",
            format!("'str' object has no attribute '{method}'"),
        )),
    }
}

pub(super) fn list_method(
    obj: &Value,
    method: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value, EvalError> {
    let items = obj.list_items().unwrap_or_default();
    match method {
        "index" => {
            arity(method, args, 1, 1)?;
            items
                .iter()
                .position(|v| py_eq(v, &args[0]))
                .map(|i| Value::Int(i as i64))
                .ok_or_else(|| {
                    value_err(if matches!(obj, Value::Tuple(_)) {
                        "tuple.index(x): x not in tuple".to_string()
                    } else {
                        format!("{} is not in list", args[0].repr())
                    })
                })
        }
        "count" => {
            arity(method, args, 1, 1)?;
            Ok(Value::Int(
                items.iter().filter(|v| py_eq(v, &args[0])).count() as i64,
            ))
        }
        _ => {
            let Value::List(list) = obj else {
                return Err(EvalError::py(
                    "AttributeError",
                    format!("'tuple' object has no attribute '{method}'"),
                ));
            };
            match method {
                "copy" => Ok(Value::list(items)),
                "append" => {
                    arity(method, args, 1, 1)?;
                    changed(list).push(args[0].clone());
                    Ok(Value::None)
                }
                "extend" => {
                    arity(method, args, 1, 1)?;
                    let more = iterate(&args[0])?;
                    changed(list).extend(more);
                    Ok(Value::None)
                }
                "insert" => {
                    arity(method, args, 2, 2)?;
                    let len = items.len() as i64;
                    let i = int_arg(&args[0], "")?;
                    let pos = if i < 0 { (i + len).max(0) } else { i.min(len) };
                    changed(list).insert(pos as usize, args[1].clone());
                    Ok(Value::None)
                }
                "pop" => {
                    arity(method, args, 0, 1)?;
                    if items.is_empty() {
                        return Err(EvalError::py("IndexError", "pop from empty list"));
                    }
                    let len = items.len() as i64;
                    let i = args
                        .first()
                        .map(|v| int_arg(v, ""))
                        .transpose()?
                        .unwrap_or(-1);
                    let pos = if i < 0 { i + len } else { i };
                    if pos < 0 || pos >= len {
                        return Err(EvalError::py("IndexError", "pop index out of range"));
                    }
                    Ok(changed(list).remove(pos as usize))
                }
                "remove" => {
                    arity(method, args, 1, 1)?;
                    let pos = items
                        .iter()
                        .position(|v| py_eq(v, &args[0]))
                        .ok_or_else(|| value_err("list.remove(x): x not in list"))?;
                    changed(list).remove(pos);
                    Ok(Value::None)
                }
                "reverse" => {
                    changed(list).reverse();
                    Ok(Value::None)
                }
                "sort" => {
                    let mut sorted = items;
                    py_sort(&mut sorted).map_err(type_err)?;
                    if kwarg(kwargs, "reverse").is_some_and(Value::truthy) {
                        sorted.reverse();
                    }
                    *changed(list) = sorted;
                    Ok(Value::None)
                }
                "clear" => {
                    changed(list).clear();
                    Ok(Value::None)
                }
                _ => Err(EvalError::py(
                    "AttributeError",
                    format!("'list' object has no attribute '{method}'"),
                )),
            }
        }
    }
}

pub(super) fn dict_method(
    obj: &Value,
    method: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value, EvalError> {
    let Value::Dict(d) = obj else {
        return Err(EvalError::py("AttributeError", method));
    };
    let hashable = |k: &Value| {
        if k.hashable() {
            Ok(())
        } else {
            Err(type_err(format!("unhashable type: '{}'", k.py_type())))
        }
    };
    match method {
        "get" => {
            arity(method, args, 1, 2)?;
            hashable(&args[0])?;
            Ok(d.borrow()
                .get(&args[0])
                .cloned()
                .unwrap_or_else(|| args.get(1).cloned().unwrap_or(Value::None)))
        }
        "keys" => Ok(Value::list(
            d.borrow().items.iter().map(|(k, _)| k.clone()).collect(),
        )),
        "values" => Ok(Value::list(
            d.borrow().items.iter().map(|(_, v)| v.clone()).collect(),
        )),
        "items" => Ok(Value::list(
            d.borrow()
                .items
                .iter()
                .map(|(k, v)| Value::tuple(vec![k.clone(), v.clone()]))
                .collect(),
        )),
        "copy" => Ok(obj.shallow_copy()),
        "pop" => {
            arity(method, args, 1, 2)?;
            hashable(&args[0])?;
            let removed = changed(d).remove(&args[0]);
            match (removed, args.get(1)) {
                (Some(v), _) => Ok(v),
                (None, Some(default)) => Ok(default.clone()),
                (None, None) => Err(EvalError::py("KeyError", args[0].repr())),
            }
        }
        "setdefault" => {
            arity(method, args, 1, 2)?;
            hashable(&args[0])?;
            let existing = d.borrow().get(&args[0]).cloned();
            match existing {
                Some(v) => Ok(v),
                None => {
                    let v = args.get(1).cloned().unwrap_or(Value::None);
                    changed(d).insert(args[0].clone(), v.clone());
                    Ok(v)
                }
            }
        }
        "update" => {
            arity(method, args, 0, 1)?;
            if let Some(other) = args.first() {
                let pairs = call_builtin("dict", std::slice::from_ref(other), &[])?;
                if let Value::Dict(p) = pairs {
                    for (k, v) in p.borrow().items.iter() {
                        changed(d).insert(k.clone(), v.clone());
                    }
                }
            }
            for (k, v) in kwargs {
                changed(d).insert(Value::str(k.as_str()), v.clone());
            }
            Ok(Value::None)
        }
        "clear" => {
            changed(d).items.clear();
            Ok(Value::None)
        }
        _ => Err(EvalError::py(
            "AttributeError",
            format!("'{}' object has no attribute '{method}'", obj.py_type()),
        )),
    }
}
