//! Keyword arguments the way Robot Framework handles them for library keywords: argument
//! specs (in libdoc syntax, `name: int | None = None, *items, **named`), named arguments
//! (`name=value`, `&{dict}`), variable substitution, argument-count validation and type
//! conversion, all with RF's error messages.

use crate::error::{RfError, RfResult};
use crate::expr::literal_eval;
use crate::matching::normalize;
use crate::pynum::{parse_float, parse_int};
use crate::value::{Value, plural, seq2str};
use crate::variables::search::{is_dict_variable, split_from_equals};
use crate::variables::{Arg, Store};

/// An argument type, as far as conversion is concerned.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// No conversion (`object`, `Any`, `Collection`, `Expression`, ...).
    Any,
    /// `str`: anything converts with `str()`.
    Str,
    /// `bytes`.
    Bytes,
    /// `int`.
    Int,
    /// `float`.
    Float,
    /// `bool`: `true`/`yes`/`on`/`1` and `false`/`no`/`off`/`0`/empty; other text stays text.
    Bool,
    /// `None`: `None` or an empty string.
    NoneT,
    /// `Literal['a', 'b']`.
    Lit(Vec<String>),
    /// `Sequence`: strings are read as Python literals.
    Seq,
    /// `MutableSequence`: like `Seq`, but tuples become lists.
    MutSeq,
    /// `Mapping` / `MutableMapping`.
    Map,
    /// `Set`.
    Set,
    /// `timedelta`: RF time strings, converted to seconds.
    TimeDelta,
    /// `datetime`: only datetime values are accepted as they are (the DateTime library's
    /// unions also take strings and numbers, which the library itself reads).
    DateTime,
    /// `date`.
    Date,
    /// `A | B | ...`.
    Union(Vec<Ty>),
}

impl Ty {
    /// Parses a libdoc type.
    pub(crate) fn parse(text: &str) -> Ty {
        let members = split_top(text, '|');
        if members.len() > 1 {
            return Ty::Union(members.iter().map(|m| Ty::parse(m)).collect());
        }
        let t = text.trim();
        if let Some(inner) = t.strip_prefix("Literal[").and_then(|r| r.strip_suffix(']')) {
            return Ty::Lit(
                split_top(inner, ',')
                    .iter()
                    .map(|o| o.trim().trim_matches(['\'', '"']).to_string())
                    .collect(),
            );
        }
        let base = t.split('[').next().unwrap_or(t);
        match base {
            "str" | "KeywordName" => Ty::Str,
            "bytes" => Ty::Bytes,
            "int" => Ty::Int,
            "float" => Ty::Float,
            "bool" => Ty::Bool,
            "None" => Ty::NoneT,
            "Sequence" | "list" => Ty::Seq,
            "MutableSequence" => Ty::MutSeq,
            "Mapping" | "MutableMapping" | "dict" => Ty::Map,
            "Set" => Ty::Set,
            "timedelta" => Ty::TimeDelta,
            "datetime" => Ty::DateTime,
            "date" => Ty::Date,
            _ => Ty::Any,
        }
    }

    /// The name RF uses for the type in conversion errors.
    fn name(&self) -> String {
        match self {
            Ty::Any => "object".into(),
            Ty::Str => "string".into(),
            Ty::Bytes => "bytes".into(),
            Ty::Int => "integer".into(),
            Ty::Float => "float".into(),
            Ty::Bool => "boolean".into(),
            Ty::NoneT => "None".into(),
            Ty::Lit(options) => {
                let quoted: Vec<String> = options.iter().map(|o| format!("'{o}'")).collect();
                seq2str(&quoted, "", ", ", " or ")
            }
            Ty::Seq | Ty::MutSeq => "Sequence".into(),
            Ty::Map => "Mapping".into(),
            Ty::Set => "set".into(),
            Ty::TimeDelta => "timedelta".into(),
            Ty::DateTime => "datetime".into(),
            Ty::Date => "date".into(),
            Ty::Union(members) => {
                let names: Vec<String> = members.iter().map(Ty::name).collect();
                seq2str(&names, "", ", ", " or ")
            }
        }
    }

    fn accepts(&self, v: &Value) -> bool {
        match self {
            Ty::Any => true,
            Ty::Str => matches!(v, Value::Str(_)),
            Ty::Bytes => matches!(v, Value::Bytes(_)),
            Ty::Int => v.is_int_like(),
            Ty::Float => v.as_number().is_some(),
            Ty::Bool => matches!(v, Value::Bool(_)),
            Ty::NoneT => matches!(v, Value::None),
            Ty::Lit(options) => v.as_str().is_some_and(|s| options.iter().any(|o| o == s)),
            Ty::Seq => matches!(v, Value::List(_) | Value::Tuple(_)),
            Ty::MutSeq => matches!(v, Value::List(_)),
            Ty::Map => matches!(v, Value::Dict(_)),
            Ty::Set | Ty::TimeDelta => false,
            Ty::DateTime => matches!(v, Value::DateTime(_)),
            Ty::Date => matches!(v, Value::Date(_)),
            Ty::Union(members) => members.iter().any(|m| *m != Ty::Any && m.accepts(v)),
        }
    }

    /// Converts `v`; `Err(Some(detail))` and `Err(None)` are failures with and without
    /// a detail for the message.
    pub(crate) fn convert(&self, v: &Value) -> Result<Value, Option<String>> {
        if self.accepts(v) {
            return Ok(v.clone());
        }
        match self {
            Ty::Any => Ok(v.clone()),
            Ty::Str => Ok(Value::Str(v.to_str())),
            Ty::Bytes => match v {
                Value::Str(s) => s
                    .chars()
                    .map(|c| u8::try_from(u32::from(c)).ok())
                    .collect::<Option<Vec<u8>>>()
                    .map(Value::Bytes)
                    .ok_or_else(|| {
                        let bad = s.chars().find(|c| u32::from(*c) > 255).unwrap_or('?');
                        Some(format!("Character '{bad}' cannot be mapped to a byte."))
                    }),
                Value::Int(i) => u8::try_from(*i)
                    .map(|b| Value::Bytes(vec![b]))
                    .map_err(|_| Some(format!("{i} is not in range 0-255."))),
                Value::List(_) | Value::Tuple(_) => {
                    let mut out = Vec::new();
                    for item in v.list_items().unwrap_or_default() {
                        match item {
                            Value::Int(i) => out.push(
                                u8::try_from(i)
                                    .map_err(|_| Some(format!("{i} is not in range 0-255.")))?,
                            ),
                            other => {
                                return Err(Some(format!("{} is not an integer.", other.repr())));
                            }
                        }
                    }
                    Ok(Value::Bytes(out))
                }
                _ => Err(None),
            },
            Ty::Int => match v {
                Value::Float(f) => {
                    if f.fract() == 0.0 && f.is_finite() {
                        Ok(Value::Int(*f as i64))
                    } else {
                        Err(Some("Conversion would lose precision.".into()))
                    }
                }
                Value::Str(s) => convert_int_text(s),
                _ => Err(None),
            },
            Ty::Float => match v {
                Value::Str(s) => parse_float(&remove_separators(s))
                    .map(Value::Float)
                    .map_err(|_| None),
                _ => Err(None),
            },
            Ty::Bool => match v {
                Value::Str(s) => {
                    let title = crate::pystr::title(s);
                    Ok(match title.as_str() {
                        "None" => Value::None,
                        "True" | "Yes" | "On" | "1" => Value::Bool(true),
                        "False" | "No" | "Off" | "0" | "" => Value::Bool(false),
                        _ => v.clone(),
                    })
                }
                Value::Int(_) | Value::Float(_) | Value::None => Ok(v.clone()),
                _ => Err(None),
            },
            Ty::NoneT => match v {
                Value::Str(s) if s.eq_ignore_ascii_case("none") || s.is_empty() => Ok(Value::None),
                _ => Err(None),
            },
            Ty::Lit(options) => {
                let text = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_str());
                let norm = |s: &str| normalize(s, &["_", "-"], true, true);
                options
                    .iter()
                    .find(|o| norm(o) == norm(&text))
                    .map(|o| Value::str(o.as_str()))
                    .ok_or(None)
            }
            Ty::Seq | Ty::MutSeq | Ty::Set => match v {
                Value::Str(s) => {
                    let parsed = literal_eval(s).map_err(Some)?;
                    match &parsed {
                        Value::List(_) => Ok(parsed),
                        Value::Tuple(_) if *self == Ty::Seq => Ok(parsed),
                        Value::Tuple(t) => Ok(Value::list(t.as_ref().clone())),
                        other if *self == Ty::Set => {
                            Err(Some(format!("Value is {}, not set.", other.type_name())))
                        }
                        other => Err(Some(format!(
                            "Value is {}, not {}.",
                            other.type_name(),
                            if *self == Ty::MutSeq {
                                "list"
                            } else {
                                "Sequence"
                            }
                        ))),
                    }
                }
                Value::Tuple(t) => Ok(Value::list(t.as_ref().clone())),
                Value::List(_) => Ok(v.clone()),
                // A collection of CPython's: its items, as RF's conversion to list.
                Value::Object(o) => o.as_list().ok_or(None),
                _ => Err(None),
            },
            Ty::Map => match v {
                // A `Mapping` of CPython's (a class an expression made): its items in a
                // dict of their own, so the keyword's changes do not reach the object.
                Value::Object(o) => o.as_dict().ok_or(None),
                Value::Str(s) => {
                    let parsed = literal_eval(s).map_err(Some)?;
                    match parsed {
                        Value::Dict(_) => Ok(parsed),
                        other => Err(Some(format!(
                            "Value is {}, not Mapping.",
                            other.type_name()
                        ))),
                    }
                }
                _ => Err(None),
            },
            Ty::TimeDelta => match v {
                Value::Str(_) | Value::Int(_) | Value::Float(_) => {
                    crate::timefmt::timestr_to_secs(v)
                        .map(Value::Float)
                        .map_err(Some)
                }
                // Keywords taking a timedelta work on seconds here, as RF's do on
                // `total_seconds()`.
                Value::TimeDelta(t) => Ok(Value::Float(t.total_seconds())),
                _ => Err(None),
            },
            // Text is converted by the DateTime keywords themselves (their unions take
            // `str`), so only datetime and date values themselves pass.
            Ty::DateTime | Ty::Date => Err(None),
            Ty::Union(members) => {
                if members.contains(&Ty::Any) {
                    // RF passes values through when the union has a type it cannot convert to.
                    for m in members.iter().filter(|m| **m != Ty::Any) {
                        if let Ok(c) = m.convert(v) {
                            return Ok(c);
                        }
                    }
                    return Ok(v.clone());
                }
                for m in members {
                    if let Ok(c) = m.convert(v) {
                        return Ok(c);
                    }
                }
                Err(None)
            }
        }
    }
}

/// RF removes spaces and underscores from numbers (`1 000`, `1_000`).
fn remove_separators(s: &str) -> String {
    s.replace([' ', '_'], "")
}

/// RF's integer conversion of text: separators, `0x`/`0o`/`0b` prefixes, and decimals
/// that are whole numbers (`1.0`, `1e3`).
fn convert_int_text(s: &str) -> Result<Value, Option<String>> {
    let v = remove_separators(s).to_lowercase();
    let mut base = 10;
    let mut digits = v.clone();
    for (prefix, b) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if v.contains(prefix) {
            let parts: Vec<&str> = v.split(prefix).collect();
            if parts.len() == 2 && matches!(parts[0], "" | "-" | "+") {
                digits = parts.concat();
                base = b;
                break;
            }
        }
    }
    if let Ok(i) = parse_int(&digits, base) {
        return Ok(Value::Int(i));
    }
    if base == 10
        && let Ok(f) = parse_float(&digits)
        && f.is_finite()
        && !digits.contains("inf")
        && !digits.contains("nan")
    {
        if f.fract() != 0.0 {
            return Err(Some("Conversion would lose precision.".into()));
        }
        if f.abs() < 9.2e18 {
            return Ok(Value::Int(f as i64));
        }
    }
    Err(None)
}

/// Splits at `sep` outside brackets and quotes.
fn split_top(text: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut cur = String::new();
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => depth -= 1,
            (None, c) if c == sep && depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() || !out.is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// One parameter.
#[derive(Debug, Clone)]
pub struct Param {
    /// The name.
    pub name: String,
    /// Its type.
    pub ty: Ty,
    /// The default; `None` when the parameter is required. `Some(None)` is RF's "not set"
    /// sentinel (a default that is "no value", as in `Get From Dictionary`).
    pub default: Option<Option<Value>>,
}

/// A keyword's argument spec.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// Parameters that can be given by position.
    pub positional: Vec<Param>,
    /// How many leading `positional` ones cannot be given by name.
    pub positional_only: usize,
    /// `*varargs`.
    pub varargs: Option<Param>,
    /// Parameters after `*varargs` (or `*`): by name only.
    pub named_only: Vec<Param>,
    /// `**kwargs`.
    pub kwargs: Option<Param>,
}

impl Spec {
    /// Parses a libdoc argument spec such as `item: object, base: int | None = None`.
    pub fn parse(text: &str) -> Spec {
        let mut spec = Spec::default();
        let mut after_star = false;
        for item in split_top(text, ',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            if item == "/" {
                spec.positional_only = spec.positional.len();
                continue;
            }
            if item == "*" {
                after_star = true;
                continue;
            }
            let (decl, default) = match item.find(" = ") {
                Some(i) => (&item[..i], Some(&item[i + 3..])),
                None => match item.strip_suffix(" =") {
                    Some(d) => (d, Some("")),
                    // An untyped default prints without spaces (`case_normalize=False`).
                    None => match item.split_once('=') {
                        Some((n, d)) if !n.contains(':') => (n, Some(d)),
                        _ => (item, None),
                    },
                },
            };
            let (name, ty) = match decl.split_once(':') {
                Some((n, t)) => (n.trim(), Ty::parse(t)),
                None => (decl.trim(), Ty::Any),
            };
            if let Some(n) = name.strip_prefix("**") {
                spec.kwargs = Some(Param {
                    name: n.into(),
                    ty,
                    default: None,
                });
            } else if let Some(n) = name.strip_prefix('*') {
                spec.varargs = Some(Param {
                    name: n.into(),
                    ty,
                    default: None,
                });
                after_star = true;
            } else {
                let default = default.map(|d| parse_default(d, &ty));
                let param = Param {
                    name: name.into(),
                    ty,
                    default,
                };
                if after_star {
                    spec.named_only.push(param);
                } else {
                    spec.positional.push(param);
                }
            }
        }
        spec
    }

    fn min_args(&self) -> usize {
        self.positional
            .iter()
            .filter(|p| p.default.is_none())
            .count()
    }

    fn max_args(&self) -> usize {
        if self.varargs.is_some() {
            usize::MAX
        } else {
            self.positional.len()
        }
    }

    /// Names that `name=value` can set.
    fn is_named(&self, name: &str) -> bool {
        self.positional[self.positional_only..]
            .iter()
            .chain(&self.named_only)
            .any(|p| p.name == name)
    }
}

/// A default value as libdoc prints it.
fn parse_default(text: &str, ty: &Ty) -> Option<Value> {
    if text.is_empty() {
        return None;
    }
    let wants_int = match ty {
        Ty::Int => true,
        Ty::Union(m) => m.contains(&Ty::Int),
        Ty::Any => true,
        _ => false,
    };
    Some(match text {
        "None" => Value::None,
        "True" => Value::Bool(true),
        "False" => Value::Bool(false),
        "\\ \\" => Value::str(" "),
        t => match (wants_int, parse_int(t, 10)) {
            (true, Ok(i)) => Value::Int(i),
            _ => Value::str(t),
        },
    })
}

/// Arguments bound to a keyword's parameters, after conversion.
#[derive(Debug, Clone, Default)]
pub struct Bound {
    /// Positional and named-only parameters: name, value (or default), and whether the
    /// caller gave it.
    params: Vec<(String, Option<Value>, bool)>,
    /// `*varargs`.
    pub varargs: Vec<Value>,
    /// `**kwargs`, in the order given.
    pub kwargs: Vec<(String, Value)>,
    /// For run-keyword variants: the arguments after the resolved ones, untouched.
    pub rest: Vec<Arg>,
}

impl Bound {
    /// The value of parameter `name` (its default when not given; `None` for RF's "not
    /// set" sentinel).
    pub fn get(&self, name: &str) -> Value {
        self.opt_raw(name).unwrap_or(Value::None)
    }

    fn opt_raw(&self, name: &str) -> Option<Value> {
        self.params
            .iter()
            .find(|(n, _, _)| n == name)
            .and_then(|(_, v, _)| v.clone())
    }

    /// The value of `name`, or `None` when it is Python `None` (or unset).
    pub fn opt(&self, name: &str) -> Option<Value> {
        self.opt_raw(name).filter(|v| !matches!(v, Value::None))
    }

    /// Whether the caller gave `name`.
    pub fn given(&self, name: &str) -> bool {
        self.params.iter().any(|(n, _, g)| n == name && *g)
    }

    /// `name` as text (`str()` of the value); empty for `None`.
    pub fn text(&self, name: &str) -> String {
        self.opt(name).map(|v| v.to_str()).unwrap_or_default()
    }

    /// `name` as a bool (Python truthiness; RF has already converted it).
    pub fn flag(&self, name: &str) -> bool {
        self.opt(name).is_some_and(|v| v.truthy())
    }

    /// `name` as an integer, if it is one.
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.opt(name) {
            Some(Value::Int(i)) => Some(i),
            Some(Value::Bool(b)) => Some(i64::from(b)),
            _ => None,
        }
    }

    /// The message argument (`msg`) or `None`.
    pub fn msg(&self) -> Option<String> {
        self.opt("msg").map(|v| v.to_str())
    }
}

/// Named arguments as given: name and value, in order.
pub type NamedValues = Vec<(String, Value)>;

/// How to resolve a keyword's arguments.
pub struct Resolve<'a> {
    /// The keyword's full name, for messages (`BuiltIn.Should Be Equal`).
    pub full_name: &'a str,
    /// Its spec.
    pub spec: &'a Spec,
    /// For run-keyword variants, how many leading arguments to resolve; the rest stay raw
    /// and named-argument syntax is not interpreted.
    pub resolve_until: Option<usize>,
}

enum Named {
    Pair(String, Arg),
    Dict(String),
}

impl Resolve<'_> {
    fn error(&self, message: String) -> RfError {
        RfError::invalid(format!("Keyword '{}' {message}.", self.full_name))
    }

    /// Resolves `args` against the spec: named arguments, variables, validation, binding
    /// and conversion.
    pub fn bind(&self, store: &Store, args: &[Arg]) -> RfResult<Bound> {
        if let Some(limit) = self.resolve_until {
            let resolved = store.replace_list_until(args, limit)?;
            self.validate(resolved.len(), 0, &[])?;
            let split = limit.min(resolved.len());
            let mut values = Vec::with_capacity(split);
            for a in &resolved[..split] {
                values.push(store.replace_scalar(a)?);
            }
            let mut bound = self.assign(values, Vec::new())?;
            bound.rest = resolved[split..].to_vec();
            return Ok(bound);
        }
        let (positional, named) = self.resolve_dynamic(store, args)?;
        self.assign(positional, named)
    }

    /// Resolves named arguments and variables and validates the call, returning the
    /// positional and named values as given (no defaults filled in, no conversion). This
    /// is what RF sends to a dynamic (remote) library.
    pub fn resolve_dynamic(
        &self,
        store: &Store,
        args: &[Arg],
    ) -> RfResult<(Vec<Value>, NamedValues)> {
        let (positional, named) = self.split_named(store, args)?;
        let positional = store.replace_list(&positional)?;
        let mut named_values: Vec<(String, Value)> = Vec::new();
        for n in named {
            match n {
                Named::Pair(name, value) => {
                    let name = store.replace_string(&name)?;
                    named_values.push((name, store.replace_scalar(&value)?));
                }
                Named::Dict(var) => match store.replace_scalar_str(&var)? {
                    Value::Dict(d) => {
                        for (k, v) in d.borrow().items.iter() {
                            let Value::Str(k) = k else {
                                return Err(RfError::invalid("Argument names must be strings."));
                            };
                            named_values.push((k.clone(), v.clone()));
                        }
                    }
                    _ => {
                        return Err(RfError::data(format!(
                            "Value of variable '{var}' is not dictionary or dictionary-like."
                        )));
                    }
                },
            }
        }
        let names: Vec<String> = named_values.iter().map(|(n, _)| n.clone()).collect();
        self.validate_multiple(positional.len(), &names)?;
        let named_positional = names
            .iter()
            .filter(|n| {
                self.spec.positional[self.spec.positional_only..]
                    .iter()
                    .any(|p| &p.name == *n)
            })
            .count();
        self.validate(positional.len(), named_positional, &names)?;
        Ok((positional, named_values))
    }

    /// RF's `NamedArgumentResolver`.
    fn split_named(&self, store: &Store, args: &[Arg]) -> RfResult<(Vec<Arg>, Vec<Named>)> {
        let known = self.spec.positional_only.min(args.len());
        let mut positional: Vec<Arg> = args[..known].to_vec();
        let mut named: Vec<Named> = Vec::new();
        for arg in &args[known..] {
            if let Arg::Raw(s) = arg {
                if is_dict_variable(s) {
                    named.push(Named::Dict(s.clone()));
                    continue;
                }
                if let Some((name, value)) = split_from_equals(s)
                    && self.is_named(store, &name, !named.is_empty())
                {
                    named.push(Named::Pair(name, Arg::Raw(value)));
                    continue;
                }
            }
            if !named.is_empty() {
                return Err(self.error("got positional argument after named arguments".into()));
            }
            positional.push(arg.clone());
        }
        Ok((positional, named))
    }

    fn is_named(&self, store: &Store, name: &str, previous_named: bool) -> bool {
        if previous_named || self.spec.kwargs.is_some() {
            return true;
        }
        match store.replace_scalar_str(name) {
            Ok(v) => self.spec.is_named(&v.to_str()),
            Err(_) => false,
        }
    }

    fn validate_multiple(&self, positional: usize, names: &[String]) -> RfResult<()> {
        for p in self
            .spec
            .positional
            .iter()
            .take(positional)
            .skip(self.spec.positional_only)
        {
            if names.contains(&p.name) {
                return Err(self.error(format!("got multiple values for argument '{}'", p.name)));
            }
        }
        Ok(())
    }

    /// Argument counts, missing and unexpected arguments, in RF's order of checks.
    fn validate(
        &self,
        positional: usize,
        named_positional: usize,
        names: &[String],
    ) -> RfResult<()> {
        let spec = self.spec;
        let count = positional + named_positional;
        let (min, max) = (spec.min_args(), spec.max_args());
        if count < min || count > max {
            let mut expected = if min == max {
                format!("{min} argument{}", plural(min))
            } else if spec.varargs.is_none() {
                format!("{min} to {max} arguments")
            } else {
                format!("at least {min} argument{}", plural(min))
            };
            if spec.kwargs.is_some() || !spec.named_only.is_empty() {
                expected = expected.replace("argument", "non-named argument");
            }
            return Err(self.error(format!("expected {expected}, got {count}")));
        }
        if self.resolve_until.is_some() {
            return Ok(());
        }
        for p in spec.positional.iter().skip(positional) {
            if p.default.is_none() && !names.contains(&p.name) {
                return Err(self.error(format!("missing value for argument '{}'", p.name)));
            }
        }
        let missing: Vec<String> = spec
            .named_only
            .iter()
            .filter(|p| p.default.is_none() && !names.contains(&p.name))
            .map(|p| p.name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(self.error(format!(
                "missing named-only argument{} {}",
                plural(missing.len()),
                seq2str(&missing, "'", ", ", " and ")
            )));
        }
        if spec.kwargs.is_none() {
            let mut extra: Vec<String> = names
                .iter()
                .filter(|n| !spec.is_named(n))
                .cloned()
                .collect();
            extra.sort();
            extra.dedup();
            if !extra.is_empty() {
                return Err(self.error(format!(
                    "got unexpected named argument{} {}",
                    plural(extra.len()),
                    seq2str(&extra, "'", ", ", " and ")
                )));
            }
        }
        Ok(())
    }

    /// Maps values to parameters and converts them.
    fn assign(&self, positional: Vec<Value>, named: Vec<(String, Value)>) -> RfResult<Bound> {
        let spec = self.spec;
        let mut bound = Bound::default();
        let mut given: Vec<Option<Value>> = vec![None; spec.positional.len()];
        let mut named_only: Vec<Option<Value>> = vec![None; spec.named_only.len()];
        let mut pos = positional.into_iter();
        for slot in given.iter_mut() {
            match pos.next() {
                Some(v) => *slot = Some(v),
                None => break,
            }
        }
        bound.varargs = pos.collect();
        for (name, value) in named {
            if let Some(i) = spec
                .positional
                .iter()
                .enumerate()
                .skip(spec.positional_only)
                .find(|(_, p)| p.name == name)
                .map(|(i, _)| i)
            {
                given[i] = Some(value);
            } else if let Some(i) = spec.named_only.iter().position(|p| p.name == name) {
                named_only[i] = Some(value);
            } else {
                bound.kwargs.push((name, value));
            }
        }
        for (p, v) in spec.positional.iter().zip(given) {
            bound.params.push(self.finish(p, v)?);
        }
        for (p, v) in spec.named_only.iter().zip(named_only) {
            bound.params.push(self.finish(p, v)?);
        }
        if let Some(p) = &spec.varargs {
            bound.varargs = bound
                .varargs
                .iter()
                .map(|v| convert(&p.name, &p.ty, v))
                .collect::<RfResult<_>>()?;
        }
        if let Some(p) = &spec.kwargs {
            bound.kwargs = bound
                .kwargs
                .iter()
                .map(|(n, v)| Ok((n.clone(), convert(n, &p.ty, v)?)))
                .collect::<RfResult<_>>()?;
        }
        Ok(bound)
    }

    fn finish(&self, p: &Param, v: Option<Value>) -> RfResult<(String, Option<Value>, bool)> {
        Ok(match v {
            Some(v) => (p.name.clone(), Some(convert(&p.name, &p.ty, &v)?), true),
            None => (p.name.clone(), p.default.clone().flatten(), false),
        })
    }
}

/// Converts argument `name` to `ty` with RF's error; an empty `name` words the error as
/// RF does for a value converted on its own.
pub fn convert(name: &str, ty: &Ty, v: &Value) -> RfResult<Value> {
    ty.convert(v).map_err(|detail| {
        let typ = if matches!(v, Value::Str(_)) {
            String::new()
        } else {
            format!(" ({})", v.type_name())
        };
        let ending = match detail {
            Some(d) => format!(": {d}"),
            None => ".".into(),
        };
        // Without a name (RF's `TypeInfo.convert(value)`), the value stands in for it.
        let what = if name.is_empty() {
            format!("Argument '{}'{typ} cannot", v.to_str())
        } else {
            format!(
                "Argument '{name}' got value '{}'{typ} that cannot",
                v.to_str()
            )
        };
        RfError::conversion(format!("{what} be converted to {}{ending}", ty.name()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(spec: &str, args: &[&str]) -> RfResult<Bound> {
        let spec = Spec::parse(spec);
        let r = Resolve {
            full_name: "BuiltIn.Test",
            spec: &spec,
            resolve_until: None,
        };
        let args: Vec<Arg> = args.iter().map(|a| Arg::Raw(a.to_string())).collect();
        r.bind(&Store::new(), &args)
    }

    const EQ: &str = "first: object, second: object, msg: str | None = None, values: bool = True, ignore_case: bool = False";

    #[test]
    fn positional_named_and_defaults() {
        let b = bind(EQ, &["a", "b", "ignore_case=yes"]).unwrap();
        assert_eq!(b.get("first").repr(), "'a'");
        assert_eq!(b.get("values").repr(), "True");
        assert_eq!(b.get("ignore_case").repr(), "True");
        assert!(b.given("ignore_case") && !b.given("msg"));
        let b = bind(EQ, &["a=1", "b"]).unwrap();
        assert_eq!(b.get("first").repr(), "'a=1'");
    }

    #[test]
    fn errors_are_rfs() {
        let msg = |r: RfResult<Bound>| r.unwrap_err().message;
        assert_eq!(
            msg(bind(EQ, &["a"])),
            "Keyword 'BuiltIn.Test' expected 2 to 5 arguments, got 1."
        );
        assert_eq!(
            msg(bind(EQ, &["a", "b", "msg=x", "c"])),
            "Keyword 'BuiltIn.Test' got positional argument after named arguments."
        );
        assert_eq!(
            msg(bind(
                "item: object, base: int | None = None",
                &["1", "base=x"]
            )),
            "ValueError: Argument 'base' got value 'x' that cannot be converted to integer or None."
        );
        assert_eq!(
            msg(bind("list_: Sequence, index: int", &["[1]", "1.5"])),
            "ValueError: Argument 'index' got value '1.5' that cannot be converted to integer: Conversion would lose precision."
        );
        assert_eq!(
            msg(bind("a: str, sep: str = x", &["1", "sep=2", "nope=3"])),
            "Keyword 'BuiltIn.Test' got unexpected named argument 'nope'."
        );
    }

    #[test]
    fn conversions() {
        let b = bind(
            "a: int, b: float, c: Sequence, d: Mapping, e: timedelta",
            &["0x10", "1_000.5", "[1, 2]", "{'k': 1}", "1 min"],
        )
        .unwrap();
        assert_eq!(b.get("a").repr(), "16");
        assert_eq!(b.get("b").repr(), "1000.5");
        assert_eq!(b.get("c").repr(), "[1, 2]");
        assert_eq!(b.get("d").repr(), "{'k': 1}");
        assert_eq!(b.get("e").repr(), "60.0");
        let b = bind("mode: Literal['left', 'right'] = left", &["RIGHT"]).unwrap();
        assert_eq!(b.get("mode").repr(), "'right'");
    }

    #[test]
    fn varargs_and_kwargs() {
        let b = bind(
            "template: str, /, *positional: object, **named: object",
            &["t", "a", "x=1"],
        )
        .unwrap();
        assert_eq!(b.varargs.len(), 1);
        assert_eq!(b.kwargs[0].0, "x");
    }
}
