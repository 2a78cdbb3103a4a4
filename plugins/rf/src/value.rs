//! Robot Framework values: the subset of Python objects that keywords pass around.
//!
//! RF keywords are Python functions, so what they return and what variables hold are Python
//! objects, and what users see (error messages, log lines, `Should Be Equal` failures) is
//! Python's `str()` and `repr()` of them. This module models those objects and reproduces
//! the Python behaviour the keywords depend on: equality across numeric types, ordering,
//! truthiness, `str`/`repr` (including float formatting), `len` and `in`.
//!
//! Lists and dictionaries are shared and mutable, as in Python: `Append To List  ${list}  x`
//! changes the list that `${list}` holds. Wasm guests are single-threaded, so `Rc<RefCell>`.

use std::cell::{Cell, RefCell, RefMut};
use std::cmp::Ordering;
use std::fmt::Write as _;
use std::rc::Rc;

use serde_json::{Map, Number, Value as Json};

use crate::timefmt::dates::{Date, DateTime, TimeDelta};

/// A shared, mutable Python list.
pub type List = Rc<RefCell<Vec<Value>>>;
/// A shared, mutable Python dict (insertion-ordered).
pub type Dict = Rc<RefCell<DictData>>;

/// A Python value.
#[derive(Debug, Clone)]
pub enum Value {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// `int` (limited to 64 bits).
    Int(i64),
    /// `float`.
    Float(f64),
    /// `str`.
    Str(String),
    /// `bytes`.
    Bytes(Vec<u8>),
    /// `list`.
    List(List),
    /// `tuple`.
    Tuple(Rc<Vec<Value>>),
    /// `dict`, or RF's `DotDict` (what `Create Dictionary` returns).
    Dict(Dict),
    /// A naive `datetime.datetime` (DateTime's `result_format=datetime`).
    DateTime(DateTime),
    /// A `datetime.date`.
    Date(Date),
    /// A `datetime.timedelta`.
    TimeDelta(TimeDelta),
    /// An object of a type this plugin has no model of (a class an expression made,
    /// a `Decimal`), held by the CPython evaluator and named here by its handle.
    Object(Rc<PyObject>),
}

/// An object CPython holds for this plugin instance. Keywords here see it through
/// the views the evaluator sent with it (its `str`, `repr`, `bool`, `len` and, for a
/// small collection, its items); an expression that names it gets the object
/// itself back, so its methods, identity and in-place changes are Python's.
#[derive(Debug)]
pub struct PyObject {
    /// The evaluator's handle, unique within the process.
    pub handle: String,
    /// `type(x).__name__`.
    pub class: String,
    /// `type(x).__module__`.
    pub module: String,
    /// RF's `type_name(x)`.
    pub type_name: String,
    /// Whether `hash(x)` works.
    pub hashable: bool,
    /// Whether its class defines `==` (else it is identity, `object.__eq__`).
    pub value_eq: bool,
    /// The `int` or `float` it equals exactly, for numbers of other types
    /// (`Decimal('0.5')`, `complex(1)`), so `==` with plain numbers is Python's.
    pub number: Option<Num>,
    /// What the object looked like when last seen by CPython.
    pub view: RefCell<ObjectView>,
}

/// The parts of an object that can change in place.
#[derive(Debug, Clone, Default)]
pub struct ObjectView {
    /// `str(x)`.
    pub text: String,
    /// `repr(x)`.
    pub repr: String,
    /// `bool(x)`.
    pub truthy: bool,
    /// `len(x)`, when it has one.
    pub len: Option<usize>,
    /// The items of a `collections.abc.Mapping`, as a plain dict would hold them.
    pub mapping: Option<Vec<(Value, Value)>>,
    /// The items of any other small collection (a `Sequence`, a `set`), in
    /// iteration order.
    pub items: Option<Vec<Value>>,
}

impl PyObject {
    /// A fresh dict of a mapping's items (what `dict(x)` gives), or `None`.
    pub fn as_dict(&self) -> Option<Value> {
        let items = self.view.borrow().mapping.clone()?;
        Some(Value::dict(items, false))
    }

    /// A fresh list of a collection's items (what `list(x)` gives), or `None`.
    pub fn as_list(&self) -> Option<Value> {
        let items = self.view.borrow().items.clone()?;
        Some(Value::list(items))
    }
}

/// The contents of a dict: items in insertion order. Lookups are linear, which is fine for
/// the dictionaries test data uses and keeps Python's cross-type key equality (`1 == 1.0`).
#[derive(Debug, Clone, Default)]
pub struct DictData {
    /// The items, in insertion order, keys unique by Python equality.
    pub items: Vec<(Value, Value)>,
    /// True for RF's `DotDict`, false for a plain `dict`. Only the type name differs.
    pub dot: bool,
}

impl DictData {
    /// The index of `key`, by Python equality.
    pub fn position(&self, key: &Value) -> Option<usize> {
        self.items.iter().position(|(k, _)| py_eq(k, key))
    }

    /// The value for `key`.
    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.position(key).map(|i| &self.items[i].1)
    }

    /// Sets `key` to `value`, keeping the position of an existing key (like Python).
    pub fn insert(&mut self, key: Value, value: Value) {
        match self.position(&key) {
            Some(i) => self.items[i].1 = value,
            None => self.items.push((key, value)),
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &Value) -> Option<Value> {
        self.position(key).map(|i| self.items.remove(i).1)
    }
}

impl Value {
    /// A `str`.
    pub fn str(s: impl Into<String>) -> Self {
        Self::Str(s.into())
    }

    /// A new `list`.
    pub fn list(items: Vec<Value>) -> Self {
        Self::List(Rc::new(RefCell::new(items)))
    }

    /// A new `tuple`.
    pub fn tuple(items: Vec<Value>) -> Self {
        Self::Tuple(Rc::new(items))
    }

    /// A new dict; `dot` makes it RF's `DotDict`.
    pub fn dict(items: Vec<(Value, Value)>, dot: bool) -> Self {
        let mut data = DictData {
            items: Vec::with_capacity(items.len()),
            dot,
        };
        for (k, v) in items {
            data.insert(k, v);
        }
        Self::Dict(Rc::new(RefCell::new(data)))
    }

    /// The string, if this is a `str`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }

    /// True for `int` and `bool` (a Python `bool` is an `int`).
    pub fn is_int_like(&self) -> bool {
        matches!(self, Self::Int(_) | Self::Bool(_))
    }

    /// RF's "non-technical" type name, as in error messages (`robot.utils.type_name`).
    pub fn type_name(&self) -> &str {
        match self {
            Self::None => "None",
            Self::Bool(_) => "boolean",
            Self::Int(_) => "integer",
            Self::Float(_) => "float",
            Self::Str(_) => "string",
            Self::Bytes(_) => "bytes",
            Self::List(_) => "list",
            Self::Tuple(_) => "tuple",
            Self::Dict(d) => {
                if d.borrow().dot {
                    "DotDict"
                } else {
                    "dictionary"
                }
            }
            Self::DateTime(_) => "datetime",
            Self::Date(_) => "date",
            Self::TimeDelta(_) => "timedelta",
            Self::Object(o) => &o.type_name,
        }
    }

    /// Python's class name (`type(x).__name__`), as in Python error messages.
    pub fn py_type(&self) -> &str {
        match self {
            Self::None => "NoneType",
            Self::Bool(_) => "bool",
            Self::Int(_) => "int",
            Self::Float(_) => "float",
            Self::Str(_) => "str",
            Self::Bytes(_) => "bytes",
            Self::List(_) => "list",
            Self::Tuple(_) => "tuple",
            Self::Dict(d) => {
                if d.borrow().dot {
                    "DotDict"
                } else {
                    "dict"
                }
            }
            Self::DateTime(_) => "datetime",
            Self::Date(_) => "date",
            Self::TimeDelta(_) => "timedelta",
            Self::Object(o) => &o.class,
        }
    }

    /// `str(type(x))`, e.g. `<class 'str'>`, as in RF's "Argument types are" log lines.
    pub fn class_repr(&self) -> String {
        match self {
            Self::Dict(d) if d.borrow().dot => "<class 'robot.utils.dotdict.DotDict'>".into(),
            Self::DateTime(_) | Self::Date(_) | Self::TimeDelta(_) => {
                format!("<class 'datetime.{}'>", self.py_type())
            }
            Self::Object(o) if o.module != "builtins" => {
                format!("<class '{}.{}'>", o.module, o.class)
            }
            other => format!("<class '{}'>", other.py_type()),
        }
    }

    /// Python truthiness (`bool(x)`).
    pub fn truthy(&self) -> bool {
        match self {
            Self::None => false,
            Self::Bool(b) => *b,
            Self::Int(i) => *i != 0,
            Self::Float(f) => *f != 0.0,
            Self::Str(s) => !s.is_empty(),
            Self::Bytes(b) => !b.is_empty(),
            Self::List(l) => !l.borrow().is_empty(),
            Self::Tuple(t) => !t.is_empty(),
            Self::Dict(d) => !d.borrow().items.is_empty(),
            Self::DateTime(_) | Self::Date(_) => true,
            Self::TimeDelta(t) => t.micros() != 0,
            Self::Object(o) => o.view.borrow().truthy,
        }
    }

    /// `len(x)`, or `None` for objects without a length.
    #[allow(clippy::len_without_is_empty)] // Python's len() may not exist; `is_empty` would mislead.
    pub fn len(&self) -> Option<usize> {
        match self {
            Self::Str(s) => Some(s.chars().count()),
            Self::Bytes(b) => Some(b.len()),
            Self::List(l) => Some(l.borrow().len()),
            Self::Tuple(t) => Some(t.len()),
            Self::Dict(d) => Some(d.borrow().items.len()),
            Self::Object(o) => o.view.borrow().len,
            Self::None
            | Self::Bool(_)
            | Self::Int(_)
            | Self::Float(_)
            | Self::DateTime(_)
            | Self::Date(_)
            | Self::TimeDelta(_) => None,
        }
    }

    /// The items of a list-like value (list, tuple; a dict gives its keys), or `None`.
    /// Strings are iterable in Python but RF does not treat them as list-like.
    pub fn list_items(&self) -> Option<Vec<Value>> {
        match self {
            Self::List(l) => Some(l.borrow().clone()),
            Self::Tuple(t) => Some(t.as_ref().clone()),
            Self::Dict(d) => Some(d.borrow().items.iter().map(|(k, _)| k.clone()).collect()),
            Self::Object(o) => {
                let view = o.view.borrow();
                match (&view.items, &view.mapping) {
                    (Some(items), _) => Some(items.clone()),
                    (None, Some(items)) => Some(items.iter().map(|(k, _)| k.clone()).collect()),
                    (None, None) => None,
                }
            }
            _ => None,
        }
    }

    /// The items of anything Python can iterate (strings give characters, bytes give ints).
    pub fn iter_items(&self) -> Option<Vec<Value>> {
        match self {
            Self::Str(s) => Some(s.chars().map(|c| Value::Str(c.to_string())).collect()),
            Self::Bytes(b) => Some(b.iter().map(|&x| Value::Int(i64::from(x))).collect()),
            other => other.list_items(),
        }
    }

    /// Python's `str(x)` as RF shows it (`robot.utils.safe_str`): bytes decode as Latin-1.
    pub fn to_str(&self) -> String {
        match self {
            Self::Str(s) => s.clone(),
            Self::Bytes(b) => latin1(b),
            Self::DateTime(d) => d.to_str(),
            Self::Date(d) => d.to_str(),
            Self::TimeDelta(t) => t.to_str(),
            Self::Object(o) => o.view.borrow().text.clone(),
            other => other.repr(),
        }
    }

    /// RF's `safe_str(x)` itself: [`Value::to_str`] in NFC, as RF converts, compares as
    /// strings and formats values for messages.
    pub fn safe_str(&self) -> String {
        crate::pystr::nfc(&self.to_str())
    }

    /// Python's `repr(x)`.
    pub fn repr(&self) -> String {
        let mut out = String::new();
        self.write_repr(&mut out, 0);
        out
    }

    fn write_repr(&self, out: &mut String, depth: usize) {
        // Self-containing lists print as `[...]` in Python; a depth cap stands in for that.
        if depth > 64 {
            out.push_str("...");
            return;
        }
        match self {
            Self::None => out.push_str("None"),
            Self::Bool(true) => out.push_str("True"),
            Self::Bool(false) => out.push_str("False"),
            Self::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Self::Float(f) => out.push_str(&float_repr(*f)),
            Self::Str(s) => out.push_str(&str_repr(s)),
            Self::Bytes(b) => out.push_str(&bytes_repr(b)),
            Self::DateTime(d) => out.push_str(&d.repr()),
            Self::Date(d) => out.push_str(&d.repr()),
            Self::TimeDelta(t) => out.push_str(&t.repr()),
            Self::Object(o) => out.push_str(&o.view.borrow().repr),
            Self::List(l) => {
                out.push('[');
                for (i, v) in l.borrow().iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write_repr(out, depth + 1);
                }
                out.push(']');
            }
            Self::Tuple(t) => {
                out.push('(');
                for (i, v) in t.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write_repr(out, depth + 1);
                }
                if t.len() == 1 {
                    out.push(',');
                }
                out.push(')');
            }
            Self::Dict(d) => {
                out.push('{');
                for (i, (k, v)) in d.borrow().items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    k.write_repr(out, depth + 1);
                    out.push_str(": ");
                    v.write_repr(out, depth + 1);
                }
                out.push('}');
            }
        }
    }

    /// A numeric view for arithmetic and comparisons: bool and int as integers.
    pub fn as_number(&self) -> Option<Num> {
        match self {
            Self::Bool(b) => Some(Num::Int(i64::from(*b))),
            Self::Int(i) => Some(Num::Int(*i)),
            Self::Float(f) => Some(Num::Float(*f)),
            _ => None,
        }
    }

    /// A deep copy: new lists and dicts all the way down (Python's `copy.deepcopy`).
    pub fn deep_copy(&self) -> Value {
        match self {
            Self::List(l) => Value::list(l.borrow().iter().map(Value::deep_copy).collect()),
            Self::Tuple(t) => Value::tuple(t.iter().map(Value::deep_copy).collect()),
            Self::Dict(d) => {
                let d = d.borrow();
                let items = d
                    .items
                    .iter()
                    .map(|(k, v)| (k.deep_copy(), v.deep_copy()))
                    .collect();
                Value::dict(items, d.dot)
            }
            other => other.clone(),
        }
    }

    /// A shallow copy (`copy.copy`, `list[:]`).
    pub fn shallow_copy(&self) -> Value {
        match self {
            Self::List(l) => Value::list(l.borrow().clone()),
            Self::Dict(d) => {
                let d = d.borrow();
                Value::dict(d.items.clone(), d.dot)
            }
            other => other.clone(),
        }
    }

    /// Whether Python could use this as a dict key (`hash(x)` works).
    pub fn hashable(&self) -> bool {
        match self {
            Self::List(_) | Self::Dict(_) => false,
            Self::Tuple(t) => t.iter().all(Value::hashable),
            Self::Object(o) => o.hashable,
            _ => true,
        }
    }

    /// The value as JSON: `None` is null, tuples are arrays, dict keys are `str(key)`,
    /// bytes are Latin-1 text, and NaN or infinite floats (which JSON cannot hold) are
    /// their Python text.
    pub fn to_json(&self) -> Json {
        match self {
            Self::None => Json::Null,
            Self::Bool(b) => Json::Bool(*b),
            Self::Int(i) => Json::Number((*i).into()),
            Self::Float(f) => Number::from_f64(*f)
                .map(Json::Number)
                .unwrap_or_else(|| Json::String(float_repr(*f))),
            Self::Str(s) => Json::String(s.clone()),
            Self::Bytes(b) => Json::String(latin1(b)),
            Self::DateTime(_) | Self::Date(_) | Self::TimeDelta(_) | Self::Object(_) => {
                Json::String(self.to_str())
            }
            Self::List(l) => Json::Array(l.borrow().iter().map(Value::to_json).collect()),
            Self::Tuple(t) => Json::Array(t.iter().map(Value::to_json).collect()),
            Self::Dict(d) => {
                let mut map = Map::new();
                for (k, v) in &d.borrow().items {
                    map.insert(k.to_str(), v.to_json());
                }
                Json::Object(map)
            }
        }
    }

    /// A value from JSON: objects become plain dicts, whole numbers ints.
    pub fn from_json(json: &Json) -> Value {
        match json {
            Json::Null => Value::None,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => Value::Str(s.clone()),
            Json::Array(items) => Value::list(items.iter().map(Value::from_json).collect()),
            Json::Object(map) => Value::dict(
                map.iter()
                    .map(|(k, v)| (Value::Str(k.clone()), Value::from_json(v)))
                    .collect(),
                false,
            ),
        }
    }
}

/// A number for arithmetic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// An `int` (or `bool`).
    Int(i64),
    /// A `float`.
    Float(f64),
}

impl Num {
    /// As a float.
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// Back to a value.
    pub fn into_value(self) -> Value {
        match self {
            Num::Int(i) => Value::Int(i),
            Num::Float(f) => Value::Float(f),
        }
    }
}

/// Decodes bytes as Latin-1, as RF's `safe_str` does.
pub fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// Python's `==`.
pub fn py_eq(a: &Value, b: &Value) -> bool {
    use Value as V;
    match (a, b) {
        (V::None, V::None) => true,
        (V::Str(x), V::Str(y)) => x == y,
        (V::Bytes(x), V::Bytes(y)) => x == y,
        (V::DateTime(x), V::DateTime(y)) => x == y,
        (V::Date(x), V::Date(y)) => x == y,
        (V::TimeDelta(x), V::TimeDelta(y)) => x == y,
        (V::List(x), V::List(y)) => Rc::ptr_eq(x, y) || seq_eq(&x.borrow(), &y.borrow()),
        (V::Tuple(x), V::Tuple(y)) => seq_eq(x, y),
        (V::Object(o), other) | (other, V::Object(o)) => object_eq(o, other),
        (V::Dict(x), V::Dict(y)) => {
            if Rc::ptr_eq(x, y) {
                return true;
            }
            let (x, y) = (x.borrow(), y.borrow());
            x.items.len() == y.items.len()
                && x.items
                    .iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => match (a.as_number(), b.as_number()) {
            (Some(x), Some(y)) => num_eq(x, y),
            _ => false,
        },
    }
}

/// `==` with an object CPython holds, as far as its views tell: the same object;
/// a `Mapping` equal to any mapping with equal items (`Mapping.__eq__`); a number
/// equal to the numbers it equals; a set to a set of the same items; otherwise an
/// object of the same class and a value-comparing `==` by its `repr`. Expressions
/// that compare objects are evaluated by CPython itself.
fn object_eq(o: &PyObject, other: &Value) -> bool {
    if let Value::Object(p) = other
        && p.handle == o.handle
    {
        return true;
    }
    if let Some(mine) = o.as_dict() {
        return match other {
            Value::Dict(_) => py_eq(&mine, other),
            Value::Object(p) => p.as_dict().is_some_and(|theirs| py_eq(&mine, &theirs)),
            _ => false,
        };
    }
    let their_number = match other {
        Value::Object(p) => p.number,
        v => v.as_number(),
    };
    if let (Some(x), Some(y)) = (o.number, their_number) {
        return num_eq(x, y);
    }
    let Value::Object(p) = other else {
        return false;
    };
    if !o.value_eq || o.class != p.class || o.module != p.module {
        return false;
    }
    let (mine, theirs) = (o.view.borrow(), p.view.borrow());
    if o.module == "builtins"
        && matches!(o.class.as_str(), "set" | "frozenset")
        && let (Some(a), Some(b)) = (&mine.items, &theirs.items)
    {
        return a.len() == b.len() && a.iter().all(|x| b.iter().any(|y| py_eq(x, y)));
    }
    mine.repr == theirs.repr
}

fn seq_eq(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| py_eq(x, y))
}

fn num_eq(a: Num, b: Num) -> bool {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x == y,
        _ => a.as_f64() == b.as_f64(),
    }
}

/// Python's ordering (`<`), or the `TypeError` message Python gives for `op`.
pub fn py_cmp(a: &Value, b: &Value, op: &str) -> Result<Option<Ordering>, String> {
    use Value as V;
    let unsupported = || {
        Err(format!(
            "'{op}' not supported between instances of '{}' and '{}'",
            a.py_type(),
            b.py_type()
        ))
    };
    match (a, b) {
        (V::Str(x), V::Str(y)) => Ok(Some(x.as_str().cmp(y.as_str()))),
        (V::Bytes(x), V::Bytes(y)) => Ok(Some(x.cmp(y))),
        (V::DateTime(x), V::DateTime(y)) => Ok(Some(x.cmp(y))),
        (V::Date(x), V::Date(y)) => Ok(Some(x.cmp(y))),
        (V::TimeDelta(x), V::TimeDelta(y)) => Ok(Some(x.cmp(y))),
        (V::List(x), V::List(y)) => seq_cmp(&x.borrow(), &y.borrow(), op),
        (V::Tuple(x), V::Tuple(y)) => seq_cmp(x, y, op),
        _ => match (a.as_number(), b.as_number()) {
            (Some(Num::Int(x)), Some(Num::Int(y))) => Ok(Some(x.cmp(&y))),
            (Some(x), Some(y)) => Ok(x.as_f64().partial_cmp(&y.as_f64())),
            _ => unsupported(),
        },
    }
}

fn seq_cmp(a: &[Value], b: &[Value], op: &str) -> Result<Option<Ordering>, String> {
    for (x, y) in a.iter().zip(b) {
        if !py_eq(x, y) {
            return py_cmp(x, y, op);
        }
    }
    Ok(Some(a.len().cmp(&b.len())))
}

/// Python's `x < y`, or the `TypeError` message.
pub fn py_lt(x: &Value, y: &Value) -> Result<bool, String> {
    Ok(py_cmp(x, y, "<")? == Some(Ordering::Less))
}

/// Sorts like Python's `list.sort()`: stable, and the same `TypeError` message for mixed
/// types. Short lists follow CPython's own path (a run count, then binary insertion), so
/// the first failing comparison, and so the message, is the one Python reports.
pub fn py_sort(items: &mut Vec<Value>) -> Result<(), String> {
    let n = items.len();
    if n < 2 {
        return Ok(());
    }
    if n >= 64 {
        let mut error = None;
        items.sort_by(|a, b| match py_lt(b, a) {
            Ok(true) => Ordering::Greater,
            Ok(false) => match py_lt(a, b) {
                Ok(true) => Ordering::Less,
                _ => Ordering::Equal,
            },
            Err(e) => {
                error.get_or_insert(e);
                Ordering::Equal
            }
        });
        return error.map_or(Ok(()), Err);
    }
    // count_run: the initial ascending (or strictly descending, then reversed) run.
    let mut run = 2;
    if py_lt(&items[1], &items[0])? {
        while run < n && py_lt(&items[run], &items[run - 1])? {
            run += 1;
        }
        items[..run].reverse();
    } else {
        while run < n && !py_lt(&items[run], &items[run - 1])? {
            run += 1;
        }
    }
    // binarysort of the rest.
    for start in run..n {
        let (mut l, mut r) = (0, start);
        while l < r {
            let p = l + ((r - l) >> 1);
            if py_lt(&items[start], &items[p])? {
                r = p;
            } else {
                l = p + 1;
            }
        }
        let pivot = items.remove(start);
        items.insert(l, pivot);
    }
    Ok(())
}

/// Python's `item in container`, or the `TypeError` message.
pub fn py_contains(container: &Value, item: &Value) -> Result<bool, String> {
    match container {
        Value::Str(s) => match item {
            Value::Str(sub) => Ok(s.contains(sub.as_str())),
            other => Err(format!(
                "'in <string>' requires string as left operand, not {}",
                other.py_type()
            )),
        },
        Value::Bytes(b) => match item {
            Value::Bytes(sub) => Ok(sub.is_empty() || b.windows(sub.len()).any(|w| w == sub)),
            Value::Int(i) => Ok(u8::try_from(*i).is_ok_and(|x| b.contains(&x))),
            other => Err(format!(
                "a bytes-like object is required, not '{}'",
                other.py_type()
            )),
        },
        Value::List(l) => Ok(l.borrow().iter().any(|v| py_eq(v, item))),
        Value::Tuple(t) => Ok(t.iter().any(|v| py_eq(v, item))),
        Value::Dict(d) => {
            if !item.hashable() {
                return Err(format!("unhashable type: '{}'", item.py_type()));
            }
            Ok(d.borrow().position(item).is_some())
        }
        Value::Object(o)
            if o.view.borrow().mapping.is_some() || o.view.borrow().items.is_some() =>
        {
            Ok(container
                .list_items()
                .is_some_and(|items| items.iter().any(|v| py_eq(v, item))))
        }
        other => Err(format!(
            "argument of type '{}' is not iterable",
            other.py_type()
        )),
    }
}

/// Python's `repr()` of a float: the shortest text that reads back as the same float,
/// positional for exponents -4..16 and scientific (`1e+16`, `1.5e-05`) outside.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits as Python's repr.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let body = if exp >= 0 {
            let int_len = (exp + 1) as usize;
            if digits.len() <= int_len {
                format!("{digits}{}.0", "0".repeat(int_len - digits.len()))
            } else {
                format!("{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{body}")
    } else {
        let mant = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mant}e{esign}{:02}", exp.abs())
    }
}

/// Python's `repr()` of a str.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !is_printable(c) => {
                let n = u32::from(c);
                let _ = if n < 0x100 {
                    write!(out, "\\x{n:02x}")
                } else if n < 0x10000 {
                    write!(out, "\\u{n:04x}")
                } else {
                    write!(out, "\\U{n:08x}")
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// An approximation of Python's `str.isprintable()` per character: controls, format
/// characters and separators other than the space are not printable.
fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(u32::from(c), 0xad | 0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x2064 | 0xfeff))
}

/// Python's `repr()` of bytes.
pub fn bytes_repr(b: &[u8]) -> String {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    let mut out = String::from("b");
    out.push(char::from(quote));
    for &x in b {
        match x {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            x if x == quote => {
                out.push('\\');
                out.push(char::from(x));
            }
            0x20..=0x7e => out.push(char::from(x)),
            x => {
                let _ = write!(out, "\\x{x:02x}");
            }
        }
    }
    out.push(char::from(quote));
    out
}

/// RF's `seq2str`: `'a', 'b' and 'c'`.
pub fn seq2str(items: &[String], quote: &str, sep: &str, lastsep: &str) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("{quote}{i}{quote}")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => {
            let last_two = format!("{}{lastsep}{}", quoted[n - 2], quoted[n - 1]);
            let mut head = quoted[..n - 2].to_vec();
            head.push(last_two);
            head.join(sep)
        }
    }
}

/// RF's `seq2str` with its defaults.
pub fn seq2str_default(items: &[Value]) -> String {
    let items: Vec<String> = items.iter().map(Value::to_str).collect();
    seq2str(&items, "'", ", ", " and ")
}

/// RF's `seq2str2`: `[ a | b | c ]`.
pub fn seq2str2(items: &[Value]) -> String {
    if items.is_empty() {
        return "[ ]".into();
    }
    let items: Vec<String> = items.iter().map(Value::to_str).collect();
    format!("[ {} ]", items.join(" | "))
}

/// `s` for plurals, as RF's `plural_or_not`.
pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python() {
        for (f, s) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (123.456, "123.456"),
            (1.5e300, "1.5e+300"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(float_repr(f), s);
        }
    }

    #[test]
    fn reprs_follow_python() {
        assert_eq!(str_repr("it's"), "\"it's\"");
        assert_eq!(str_repr("a\nb'\""), "'a\\nb\\'\"'");
        let v = Value::list(vec![
            Value::Int(1),
            Value::str("x"),
            Value::None,
            Value::tuple(vec![Value::Bool(true)]),
        ]);
        assert_eq!(v.repr(), "[1, 'x', None, (True,)]");
        assert_eq!(v.to_str(), v.repr());
        assert_eq!(Value::str("x").to_str(), "x");
    }

    #[test]
    fn equality_crosses_numeric_types() {
        assert!(py_eq(&Value::Int(1), &Value::Float(1.0)));
        assert!(py_eq(&Value::Bool(true), &Value::Int(1)));
        assert!(!py_eq(&Value::str("1"), &Value::Int(1)));
        let a = Value::dict(vec![(Value::str("a"), Value::Int(1))], true);
        let b = Value::dict(vec![(Value::str("a"), Value::Float(1.0))], false);
        assert!(py_eq(&a, &b));
    }

    #[test]
    fn mixed_sorting_is_a_type_error() {
        let mut items = vec![Value::Int(2), Value::str("a")];
        assert_eq!(
            py_sort(&mut items).unwrap_err(),
            "'<' not supported between instances of 'str' and 'int'"
        );
    }
}

thread_local! {
    // One instance is one session on one thread, so a thread-local counts its changes.
    static CHANGES: Cell<u64> = const { Cell::new(0) };
}

/// Counts a change to the session's state: a variable set or removed, a list or
/// dictionary changed in place, a test field set. A failed call during which nothing
/// changed (and nothing outside was reached) fails the same way when run again.
pub(crate) fn note_change() {
    CHANGES.with(|c| c.set(c.get().wrapping_add(1)));
}

/// How many changes [`note_change`] has counted so far.
pub(crate) fn changes() -> u64 {
    CHANGES.with(Cell::get)
}

/// A list's or dictionary's contents, to change in place (counted by [`note_change`]).
pub(crate) fn changed<T>(cell: &RefCell<T>) -> RefMut<'_, T> {
    note_change();
    cell.borrow_mut()
}
