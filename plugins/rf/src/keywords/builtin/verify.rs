//! BuiltIn's verification keywords: `Should Be Equal` and its variants, `Should
//! (Not) Contain`, `Should Start/End With`, `Should Match (Regexp)`, lengths and counts.

use super::{
    convert_to_integer, convert_to_number, format_with, get_length, get_msg, inequality, log_types,
    text_of, values_flag,
};
use crate::args::{Bound, Ty};
use crate::engine::Session;
use crate::error::{RfError, RfResult};
use crate::keywords::normalizer::Normalizer;
use crate::matching::glob_match;
use crate::regexp::{self, Flags};
use crate::value::{Value, plural, py_contains, py_eq, seq2str};

/// RF's `_should_be_equal` (without the multi-line diff, which falls back to the plain
/// `a != b` message).
pub(super) fn equal_or_fail(
    first: &Value,
    second: &Value,
    msg: Option<String>,
    values: bool,
    formatter: &str,
) -> RfResult<Value> {
    if py_eq(first, second) {
        return Ok(Value::None);
    }
    Err(RfError::fail(inequality(
        first, second, "!=", msg, values, formatter,
    )))
}

/// BuiltIn's `_ensure_bytes`: bytes as they are, anything else converted as RF's
/// `TypeInfo.convert` does (so its error names the value, not an argument).
pub(super) fn ensure_bytes(v: &Value) -> RfResult<Value> {
    crate::args::convert("", &crate::args::Ty::Bytes, v)
}

pub(super) fn normalizer(b: &Bound) -> Normalizer {
    Normalizer::new(
        &b.get("ignore_case"),
        &b.get("strip_spaces"),
        b.flag("collapse_spaces"),
    )
}

pub(super) fn should_be_equal(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let (mut first, mut second) = (b.get("first"), b.get("second"));
    log_types(s, &first, &second);
    if b.opt("type").is_some() || b.opt("types").is_some() {
        (first, second) = type_convert(&first, &second, b.opt("type"), b.opt("types"))?;
    } else if matches!(first, Value::Bytes(_)) {
        second = ensure_bytes(&second)?;
    }
    let n = normalizer(b);
    let first = n.normalize(&first, false)?;
    let second = n.normalize(&second, false)?;
    let values = values_flag(s, b);
    let formatter = b.text("formatter");
    if values
        && !py_eq(&first, &second)
        && let (Value::Str(x), Value::Str(y)) = (&first, &second)
        && let Some(message) = multiline_diff(s, x, y, b.msg(), &formatter)
    {
        return Err(RfError::fail(message));
    }
    equal_or_fail(&first, &second, b.msg(), values, &formatter)
}

/// RF's `_raise_multi_diff`: strings of three or more lines each fail with a unified diff.
pub(super) fn multiline_diff(
    s: &mut Session,
    first: &str,
    second: &str,
    msg: Option<String>,
    formatter: &str,
) -> Option<String> {
    let a = crate::pystr::splitlines(first, true);
    let b = crate::pystr::splitlines(second, true);
    if a.len() < 3 || b.len() < 3 {
        return None;
    }
    s.info(format!(
        "{}\n\n!=\n\n{}",
        first.trim_end(),
        second.trim_end()
    ));
    let mut diffs = crate::matching::unified_diff(&a, &b, "first", "second");
    for line in diffs.iter_mut().skip(3) {
        let (tag, rest) = line.split_at(1);
        let formatted = format_with(formatter, &Value::str(rest));
        *line = format!("{tag}{}", formatted.trim_end());
    }
    let prefix = match msg {
        Some(m) if !m.is_empty() => format!("{m}: Multiline strings are different:"),
        _ => "Multiline strings are different:".to_string(),
    };
    Some(
        std::iter::once(prefix)
            .chain(diffs)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// `type=` / `types=` of `Should Be Equal`, for the common types.
pub(super) fn type_convert(
    first: &Value,
    second: &Value,
    ty: Option<Value>,
    types: Option<Value>,
) -> RfResult<(Value, Value)> {
    if ty.is_some() && types.is_some() {
        return Err(RfError::py(
            "TypeError",
            "Cannot use both 'type' and 'types' arguments.",
        ));
    }
    let name = ty
        .clone()
        .or(types.clone())
        .map(|v| type_text(&v))
        .unwrap_or_default();
    if types.is_some() && name.eq_ignore_ascii_case("auto") {
        return Err(unrecognized(&name));
    }
    let target = if name.eq_ignore_ascii_case("auto") {
        first.py_type().to_string()
    } else {
        name.clone()
    };
    let parsed = match parametrized(&target) {
        Some(t) => t,
        None => Target::Plain(match target.to_lowercase().as_str() {
            "int" | "integer" => Ty::Int,
            "float" => Ty::Float,
            "str" | "string" => Ty::Str,
            "bool" | "boolean" => Ty::Bool,
            "list" => Ty::MutSeq,
            "dict" | "dictionary" | "mapping" => Ty::Map,
            "bytes" => Ty::Bytes,
            "none" | "nonetype" => Ty::NoneT,
            other if !known_type(other) => return Err(unrecognized(&name)),
            _ => {
                return Err(RfError::py(
                    "TypeError",
                    format!("Type '{name}' is not supported by the rf sandbox's Should Be Equal."),
                ));
            }
        }),
    };
    // `Mapping` is an abstract type: `first` matches it by being one (a dict, or an
    // object of a Mapping class), and stays what it is.
    let abstract_mapping = target.eq_ignore_ascii_case("mapping");
    let first = if types.is_some() {
        parsed.convert("first", first, &name)?
    } else if abstract_mapping
        && match first {
            Value::Dict(_) => true,
            Value::Object(o) => o.view.borrow().mapping.is_some(),
            _ => false,
        }
    {
        first.clone()
    } else {
        let converted = parsed.convert("first", first, &name).ok();
        match converted {
            Some(c) if py_eq(&c, first) && same_types(&c, first) => c,
            _ => {
                return Err(RfError::value(format!(
                    "Argument 'first' got value {} that does not match type '{name}'.",
                    first.repr()
                )));
            }
        }
    };
    Ok((first, parsed.convert("second", second, &name)?))
}

/// The type `type=` names: its text, or for a type object (`${{str}}`,
/// `${{typing.Literal['a', 'b']}}`) the name it would be written with.
fn type_text(v: &Value) -> String {
    let Value::Object(o) = v else {
        return v.to_str();
    };
    let repr = o.view.borrow().repr.clone();
    if let Some(class) = repr
        .strip_prefix("<class '")
        .and_then(|r| r.strip_suffix("'>"))
    {
        return class.rsplit('.').next().unwrap_or(class).to_string();
    }
    repr.replace("typing.", "")
}

/// What `type=` names: a plain type, or `list[...]` of one (unions and literals too).
enum Target {
    Plain(Ty),
    ListOf(Ty),
}

impl Target {
    fn convert(&self, arg: &str, v: &Value, shown: &str) -> RfResult<Value> {
        match self {
            Target::Plain(ty) => crate::args::convert(arg, ty, v),
            Target::ListOf(item) => {
                let fail = || {
                    RfError::value(format!(
                        "Argument '{arg}' got value '{}' that cannot be converted to {shown}.",
                        v.to_str()
                    ))
                };
                let list = crate::args::convert(arg, &Ty::MutSeq, v).map_err(|_| fail())?;
                let items = list.list_items().ok_or_else(fail)?;
                let converted = items
                    .iter()
                    .map(|i| item.convert(i).map_err(|_| fail()))
                    .collect::<RfResult<Vec<_>>>()?;
                Ok(Value::list(converted))
            }
        }
    }
}

/// `list[X]`, `Literal[...]` and `A | B` over the types the converter knows; `None` for
/// anything else.
fn parametrized(target: &str) -> Option<Target> {
    let t = target.trim();
    let simple = |ty: &Ty| match ty {
        Ty::Union(members) => members.iter().all(|m| !matches!(m, Ty::Any | Ty::Union(_))),
        Ty::Any => false,
        _ => true,
    };
    if let Some(inner) = t.strip_prefix("list[").and_then(|r| r.strip_suffix(']')) {
        let item = Ty::parse(inner);
        return (simple(&item) && !inner.contains('[')).then_some(Target::ListOf(item));
    }
    if t.starts_with("Literal[") || (t.contains('|') && !t.contains('[')) {
        let ty = Ty::parse(t);
        return simple(&ty).then_some(Target::Plain(ty));
    }
    None
}

/// Whether `a` and `b` have the same Python type, item by item for lists.
fn same_types(a: &Value, b: &Value) -> bool {
    match (a.list_items(), b.list_items()) {
        (Some(x), Some(y)) if a.py_type() == b.py_type() => {
            x.len() == y.len() && x.iter().zip(&y).all(|(p, q)| same_types(p, q))
        }
        _ => a.py_type() == b.py_type(),
    }
}

fn unrecognized(name: &str) -> RfError {
    RfError::py("TypeError", format!("Unrecognized type '{name}'."))
}

/// Whether RF's type names include `name` (lower case; `list[int]` by its `list`, a union
/// by its `|`): RF fails "Unrecognized type" for the rest, and so do we.
fn known_type(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "any",
        "object",
        "str",
        "string",
        "int",
        "integer",
        "float",
        "double",
        "decimal",
        "bool",
        "boolean",
        "bytes",
        "bytearray",
        "datetime",
        "date",
        "timedelta",
        "path",
        "pathlike",
        "none",
        "nonetype",
        "list",
        "sequence",
        "tuple",
        "dict",
        "dictionary",
        "map",
        "mapping",
        "set",
        "frozenset",
        "literal",
        "union",
        "optional",
        "secret",
    ];
    let base = name.split('[').next().unwrap_or(name).trim();
    name.contains('|') || NAMES.contains(&base)
}

pub(super) fn should_not_be_equal(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let (mut first, mut second) = (b.get("first"), b.get("second"));
    log_types(s, &first, &second);
    if matches!(first, Value::Bytes(_)) {
        second = ensure_bytes(&second)?;
    }
    let n = normalizer(b);
    first = n.normalize(&first, false)?;
    second = n.normalize(&second, false)?;
    let values = values_flag(s, b);
    not_equal_or_fail(&first, &second, b.msg(), values)
}

pub(super) fn not_equal_or_fail(
    first: &Value,
    second: &Value,
    msg: Option<String>,
    values: bool,
) -> RfResult<Value> {
    if py_eq(first, second) {
        return Err(RfError::fail(inequality(
            first, second, "==", msg, values, "str",
        )));
    }
    Ok(Value::None)
}

pub(super) fn as_integers(s: &mut Session, b: &Bound, equal: bool) -> RfResult<Value> {
    let (first, second) = (b.get("first"), b.get("second"));
    log_types(s, &first, &second);
    let base = b.int("base");
    let first = Value::Int(convert_to_integer(&first, base)?);
    let second = Value::Int(convert_to_integer(&second, base)?);
    let values = values_flag(s, b);
    if equal {
        equal_or_fail(&first, &second, b.msg(), values, "str")
    } else {
        not_equal_or_fail(&first, &second, b.msg(), values)
    }
}

pub(super) fn as_numbers(s: &mut Session, b: &Bound, equal: bool) -> RfResult<Value> {
    let (first, second) = (b.get("first"), b.get("second"));
    log_types(s, &first, &second);
    let precision = b.int("precision");
    let first = Value::Float(convert_to_number(&first, precision)?);
    let second = Value::Float(convert_to_number(&second, precision)?);
    let values = values_flag(s, b);
    if equal {
        equal_or_fail(&first, &second, b.msg(), values, "str")
    } else {
        not_equal_or_fail(&first, &second, b.msg(), values)
    }
}

pub(super) fn as_strings(s: &mut Session, b: &Bound, equal: bool) -> RfResult<Value> {
    let (first, second) = (b.get("first"), b.get("second"));
    log_types(s, &first, &second);
    let n = normalizer(b);
    let first = n.normalize(&Value::Str(first.safe_str()), false)?;
    let second = n.normalize(&Value::Str(second.safe_str()), false)?;
    let values = values_flag(s, b);
    if equal {
        let formatter = b.text("formatter");
        if values
            && !py_eq(&first, &second)
            && let (Value::Str(x), Value::Str(y)) = (&first, &second)
            && let Some(message) = multiline_diff(s, x, y, b.msg(), &formatter)
        {
            return Err(RfError::fail(message));
        }
        equal_or_fail(&first, &second, b.msg(), values, &formatter)
    } else {
        not_equal_or_fail(&first, &second, b.msg(), values)
    }
}

pub(super) fn text_ops(b: &Bound, a: &str, c: &str) -> RfResult<(Value, Value)> {
    let first = b.get(a);
    let mut second = b.get(c);
    if matches!(first, Value::Bytes(_)) {
        second = ensure_bytes(&second)?;
    }
    let n = normalizer(b);
    Ok((n.normalize(&first, false)?, n.normalize(&second, false)?))
}

pub(super) fn affix(b: &Bound, start: bool, should: bool) -> RfResult<Value> {
    let (s1, s2) = text_ops(b, "str1", "str2")?;
    let hit = match (&s1, &s2) {
        (Value::Str(x), Value::Str(y)) => {
            if start {
                x.starts_with(y.as_str())
            } else {
                x.ends_with(y.as_str())
            }
        }
        (Value::Bytes(x), Value::Bytes(y)) => {
            if start {
                x.starts_with(y)
            } else {
                x.ends_with(y)
            }
        }
        _ => false,
    };
    if hit != should {
        let delimiter = match (start, should) {
            (true, true) => "does not start with",
            (true, false) => "starts with",
            (false, true) => "does not end with",
            (false, false) => "ends with",
        };
        let values = b.get("values").truthy()
            && !matches!(b.get("values"), Value::Str(ref t) if t.to_uppercase() == "NO VALUES");
        return Err(RfError::fail(get_msg(
            &s1,
            &s2,
            b.msg(),
            values,
            delimiter,
            true,
            true,
        )));
    }
    Ok(Value::None)
}

pub(super) fn contains(container: &Value, item: &Value) -> RfResult<bool> {
    py_contains(container, item).map_err(|e| RfError::py("TypeError", e))
}

pub(super) fn contain(b: &Bound, should: bool) -> RfResult<Value> {
    let orig = b.get("container");
    let mut item = b.get("item");
    if matches!(orig, Value::Bytes(_)) {
        item = ensure_bytes(&item)?;
    }
    let n = normalizer(b);
    let container = n.normalize(&orig, true)?;
    let item = n.normalize(&item, false)?;
    if contains(&container, &item)? != should {
        let values = b.get("values").truthy();
        let delimiter = if should {
            "does not contain"
        } else {
            "contains"
        };
        return Err(RfError::fail(get_msg(
            &orig,
            &item,
            b.msg(),
            values,
            delimiter,
            true,
            true,
        )));
    }
    Ok(Value::None)
}

pub(super) fn contain_any(b: &Bound, should: bool) -> RfResult<Value> {
    if b.varargs.is_empty() {
        return Err(RfError::fail("One or more item required."));
    }
    let orig = b.get("container");
    let mut items = b.varargs.clone();
    if matches!(orig, Value::Bytes(_)) {
        items = items.iter().map(ensure_bytes).collect::<RfResult<_>>()?;
    }
    let n = normalizer(b);
    let container = n.normalize(&orig, true)?;
    let items: Vec<Value> = match n.normalize(&Value::list(items.clone()), false)? {
        Value::List(l) => l.borrow().clone(),
        _ => items,
    };
    let mut any = false;
    for item in &items {
        if contains(&container, item)? {
            any = true;
            break;
        }
    }
    if any != should {
        let listed = Value::str(seq2str(
            &items.iter().map(Value::to_str).collect::<Vec<_>>(),
            "'",
            ", ",
            " or ",
        ));
        let delimiter = if should {
            "does not contain any of"
        } else {
            "contains one or more of"
        };
        let values = b.get("values").truthy();
        return Err(RfError::fail(get_msg(
            &orig,
            &listed,
            b.msg(),
            values,
            delimiter,
            true,
            false,
        )));
    }
    Ok(Value::None)
}

/// `bytes.count(sub)`: non-overlapping occurrences; an empty `sub` counts every gap.
fn bytes_count(data: &[u8], sub: &[u8]) -> usize {
    if sub.is_empty() {
        return data.len() + 1;
    }
    let (mut n, mut at) = (0, 0);
    while at + sub.len() <= data.len() {
        if &data[at..at + sub.len()] == sub {
            n += 1;
            at += sub.len();
        } else {
            at += 1;
        }
    }
    n
}

pub(super) fn count_in(s: &mut Session, container: &Value, item: &Value) -> RfResult<usize> {
    let count = match container {
        Value::Bytes(data) => match item {
            Value::Bytes(sub) => bytes_count(data, sub),
            Value::Int(n) => data.iter().filter(|&&b| i64::from(b) == *n).count(),
            other => {
                return Err(RfError::py(
                    "TypeError",
                    format!(
                        "argument should be integer or bytes-like object, not '{}'",
                        other.py_type()
                    ),
                ));
            }
        },
        Value::Str(text) => match item {
            Value::Str(sub) => crate::pystr::count(text, sub),
            other => {
                return Err(RfError::py(
                    "TypeError",
                    format!("must be str, not {}", other.py_type()),
                ));
            }
        },
        other => {
            let items = other.iter_items().ok_or_else(|| {
                RfError::fail(format!(
                    "Converting '{}' to list failed: TypeError: '{}' object is not iterable",
                    other.to_str(),
                    other.py_type()
                ))
            })?;
            items.iter().filter(|v| py_eq(v, item)).count()
        }
    };
    s.info(format!(
        "Item found from container {count} time{}.",
        plural(count)
    ));
    Ok(count)
}

pub(super) fn get_count(s: &mut Session, b: &Bound) -> RfResult<Value> {
    count_in(s, &b.get("container"), &b.get("item")).map(|n| Value::Int(n as i64))
}

pub(super) fn contain_x_times(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let count = convert_to_integer(&b.get("count"), None)?;
    let orig = b.get("container");
    let mut item = b.get("item");
    if matches!(orig, Value::Bytes(_)) {
        item = ensure_bytes(&item)?;
    }
    let n = normalizer(b);
    let container = n.normalize(&orig, true)?;
    let item = n.normalize(&item, false)?;
    let x = count_in(s, &container, &item)?;
    let msg = b.msg().unwrap_or_else(|| {
        // An f-string shows bytes as their repr.
        let shown = match &item {
            Value::Bytes(_) => item.repr(),
            other => other.to_str(),
        };
        format!(
            "{} contains '{shown}' {x} time{}, not {count} time{}.",
            orig.repr(),
            plural(x),
            plural(usize::try_from(count).unwrap_or(2))
        )
    });
    if x as i64 != count {
        return Err(RfError::fail(msg));
    }
    Ok(Value::None)
}

pub(super) fn should_match(b: &Bound, should: bool) -> RfResult<Value> {
    let (string, pattern) = (text_of(&b.get("string")), text_of(&b.get("pattern")));
    let hit = glob_match(&string, &pattern, b.flag("ignore_case"), false);
    if hit != should {
        let values = b.get("values").truthy();
        let delimiter = if should { "does not match" } else { "matches" };
        return Err(RfError::fail(get_msg(
            &Value::Str(string),
            &Value::Str(pattern),
            b.msg(),
            values,
            delimiter,
            true,
            true,
        )));
    }
    Ok(Value::None)
}

pub(super) fn compile(pattern: &str, flags: Option<String>) -> RfResult<regex::Regex> {
    let flags = Flags::parse(flags.as_deref()).map_err(RfError::value)?;
    regexp::compile(pattern, flags).map_err(RfError::fail)
}

pub(super) fn match_regexp(b: &Bound, should: bool) -> RfResult<Value> {
    let string = text_of(&b.get("string"));
    let pattern = text_of(&b.get("pattern"));
    let re = compile(&pattern, b.opt("flags").map(|f| f.to_str()))?;
    let caps = re.captures(&string);
    let values = b.get("values").truthy();
    match (caps, should) {
        (Some(caps), true) => {
            let whole = Value::str(caps.get(0).map_or("", |m| m.as_str()));
            if caps.len() == 1 {
                return Ok(whole);
            }
            let mut out = vec![whole];
            for g in caps.iter().skip(1) {
                out.push(g.map_or(Value::None, |m| Value::str(m.as_str())));
            }
            Ok(Value::list(out))
        }
        (None, false) => Ok(Value::None),
        (None, true) => Err(RfError::fail(get_msg(
            &Value::Str(string),
            &Value::Str(pattern),
            b.msg(),
            values,
            "does not match",
            true,
            true,
        ))),
        (Some(_), false) => Err(RfError::fail(get_msg(
            &Value::Str(string),
            &Value::Str(pattern),
            b.msg(),
            values,
            "matches",
            true,
            true,
        ))),
    }
}

pub(super) fn length_should_be(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let item = b.get("item");
    let length = b.int("length").unwrap_or(0);
    let actual = get_length(s, &item)?;
    if actual as i64 != length {
        return Err(RfError::fail(b.msg().unwrap_or_else(|| {
            format!(
                "Length of '{}' should be {length} but is {actual}.",
                item.to_str()
            )
        })));
    }
    Ok(Value::None)
}
