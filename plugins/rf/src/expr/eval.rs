//! Evaluation of parsed expressions with Python semantics.

use std::cmp::Ordering;

use super::parser::{CmpOp, Comp, Expr};
use super::{EvalError, Vars, builtins};
use crate::pynum::slice_indices;
use crate::value::{Num, PyObject, Value, py_cmp, py_contains, py_eq};

/// Largest sequence an expression may build (`'x' * n`, `range(n)`): beyond it the guest
/// would only exhaust its memory, so it fails the way Python does when memory runs out.
pub(crate) const MAX_ITEMS: usize = 10_000_000;

/// The evaluation environment: RF variables and local names.
pub(crate) struct Env<'a> {
    vars: &'a dyn Vars,
    locals: Vec<(String, Value)>,
}

fn type_err(msg: impl Into<String>) -> EvalError {
    EvalError::py("TypeError", msg)
}

/// What this evaluator raises for an object CPython holds: a Python exception, so
/// the expression goes to CPython, where the object's own methods and equality are.
fn cpython_object(o: &PyObject) -> EvalError {
    EvalError::py(
        "TypeError",
        format!("'{}' object is evaluated by CPython", o.class),
    )
}

fn overflow() -> EvalError {
    EvalError::py(
        "OverflowError",
        "integer result does not fit in 64 bits (this evaluator's int limit)",
    )
}

/// Whether an expression is a literal as `ast.literal_eval` accepts it.
pub(crate) fn is_literal(e: &Expr) -> bool {
    match e {
        Expr::Const(_) => true,
        Expr::List(items) | Expr::Tuple(items) => items.iter().all(is_literal),
        Expr::Dict(items) => items.iter().all(|(k, v)| is_literal(k) && is_literal(v)),
        Expr::Unary("-" | "+", inner) => {
            matches!(inner.as_ref(), Expr::Const(Value::Int(_) | Value::Float(_)))
        }
        _ => false,
    }
}

impl<'a> Env<'a> {
    pub(crate) fn new(vars: &'a dyn Vars, locals: Vec<(String, Value)>) -> Self {
        Self { vars, locals }
    }

    fn local(&self, name: &str) -> Option<&Value> {
        self.locals
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    pub(crate) fn eval(&mut self, e: &Expr) -> Result<Value, EvalError> {
        match e {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Name(n) => match self.local(n) {
                Some(Value::Object(o)) => Err(cpython_object(o)),
                Some(v) => Ok(v.clone()),
                None if builtins::is_builtin(n) => Err(EvalError::py(
                    "TypeError",
                    format!("builtin '{n}' can only be called in this evaluator"),
                )),
                None => Err(EvalError::py(
                    "NameError",
                    format!("name '{n}' is not defined nor importable as module"),
                )),
            },
            Expr::Var(n) => match self.vars.dollar(n).map_err(EvalError::Data)? {
                Value::Object(o) => Err(cpython_object(&o)),
                v => Ok(v),
            },
            Expr::List(items) => Ok(Value::list(self.eval_all(items)?)),
            Expr::Tuple(items) => Ok(Value::tuple(self.eval_all(items)?)),
            Expr::Dict(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (k, v) in items {
                    let k = self.eval(k)?;
                    if !k.hashable() {
                        return Err(type_err(format!("unhashable type: '{}'", k.py_type())));
                    }
                    out.push((k, self.eval(v)?));
                }
                Ok(Value::dict(out, false))
            }
            Expr::Unary(op, inner) => {
                let v = self.eval(inner)?;
                unary(op, &v)
            }
            Expr::Not(inner) => Ok(Value::Bool(!self.eval(inner)?.truthy())),
            Expr::Bin(op, a, b) => {
                let a = self.eval(a)?;
                let b = self.eval(b)?;
                binary(op, &a, &b)
            }
            Expr::And(items) => {
                let mut last = Value::Bool(true);
                for item in items {
                    last = self.eval(item)?;
                    if !last.truthy() {
                        break;
                    }
                }
                Ok(last)
            }
            Expr::Or(items) => {
                let mut last = Value::Bool(false);
                for item in items {
                    last = self.eval(item)?;
                    if last.truthy() {
                        break;
                    }
                }
                Ok(last)
            }
            Expr::Compare(first, chain) => {
                let mut left = self.eval(first)?;
                for (op, right) in chain {
                    let right = self.eval(right)?;
                    if !compare(*op, &left, &right)? {
                        return Ok(Value::Bool(false));
                    }
                    left = right;
                }
                Ok(Value::Bool(true))
            }
            Expr::IfElse(cond, body, other) => {
                if self.eval(cond)?.truthy() {
                    self.eval(body)
                } else {
                    self.eval(other)
                }
            }
            Expr::Attr(target, name) => {
                // `type(x).__name__` is the one attribute of a type this evaluator knows.
                if name == "__name__"
                    && let Expr::Call(f, args, _) = target.as_ref()
                    && matches!(f.as_ref(), Expr::Name(n) if n == "type" && self.local("type").is_none())
                    && args.len() == 1
                {
                    let v = self.eval(&args[0])?;
                    return Ok(Value::str(v.py_type()));
                }
                let v = self.eval(target)?;
                attribute(&v, name)
            }
            Expr::Call(func, args, kwargs) => self.call(func, args, kwargs),
            Expr::Index(target, index) => {
                let t = self.eval(target)?;
                let i = self.eval(index)?;
                subscript(&t, &i)
            }
            Expr::Slice(target, parts) => {
                let t = self.eval(target)?;
                let mut bounds = [None, None, None];
                for (slot, part) in bounds.iter_mut().zip(parts) {
                    if let Some(p) = part {
                        *slot = match self.eval(p)? {
                            Value::None => None,
                            Value::Int(i) => Some(i),
                            Value::Bool(b) => Some(i64::from(b)),
                            _ => {
                                return Err(type_err(
                                    "slice indices must be integers or None or have an __index__ method",
                                ));
                            }
                        };
                    }
                }
                slice(&t, bounds)
            }
            Expr::Star(_) => Err(EvalError::syntax("can't use starred expression here")),
            Expr::ListComp(elt, comp) => {
                let mut out = Vec::new();
                self.comprehend(comp, &mut |env| {
                    out.push(env.eval(elt)?);
                    Ok(())
                })?;
                Ok(Value::list(out))
            }
            Expr::DictComp(kv, comp) => {
                let mut out = Vec::new();
                self.comprehend(comp, &mut |env| {
                    let k = env.eval(&kv.0)?;
                    if !k.hashable() {
                        return Err(type_err(format!("unhashable type: '{}'", k.py_type())));
                    }
                    out.push((k, env.eval(&kv.1)?));
                    Ok(())
                })?;
                Ok(Value::dict(out, false))
            }
        }
    }

    fn eval_all(&mut self, items: &[Expr]) -> Result<Vec<Value>, EvalError> {
        items.iter().map(|i| self.eval(i)).collect()
    }

    /// Call arguments, with `*iterable` spread.
    fn eval_args(&mut self, items: &[Expr]) -> Result<Vec<Value>, EvalError> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Expr::Star(inner) => {
                    let v = self.eval(inner)?;
                    let items = v.iter_items().ok_or_else(|| {
                        type_err(format!(
                            "argument after * must be an iterable, not {}",
                            v.py_type()
                        ))
                    })?;
                    out.extend(items);
                }
                other => out.push(self.eval(other)?),
            }
        }
        Ok(out)
    }

    fn comprehend(
        &mut self,
        comp: &Comp,
        body: &mut dyn FnMut(&mut Self) -> Result<(), EvalError>,
    ) -> Result<(), EvalError> {
        let iterable = self.eval(&comp.iter)?;
        let items = iterable
            .iter_items()
            .ok_or_else(|| type_err(format!("'{}' object is not iterable", iterable.py_type())))?;
        let base = self.locals.len();
        for item in items {
            self.locals.truncate(base);
            if comp.targets.len() == 1 {
                self.locals.push((comp.targets[0].clone(), item));
            } else {
                let parts = item.iter_items().ok_or_else(|| {
                    type_err(format!(
                        "cannot unpack non-iterable {} object",
                        item.py_type()
                    ))
                })?;
                if parts.len() != comp.targets.len() {
                    let msg = if parts.len() > comp.targets.len() {
                        format!(
                            "too many values to unpack (expected {})",
                            comp.targets.len()
                        )
                    } else {
                        format!(
                            "not enough values to unpack (expected {}, got {})",
                            comp.targets.len(),
                            parts.len()
                        )
                    };
                    self.locals.truncate(base);
                    return Err(EvalError::py("ValueError", msg));
                }
                for (name, v) in comp.targets.iter().zip(parts) {
                    self.locals.push((name.clone(), v));
                }
            }
            let mut keep = true;
            for cond in &comp.conds {
                match self.eval(cond) {
                    Ok(v) if !v.truthy() => {
                        keep = false;
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        self.locals.truncate(base);
                        return Err(e);
                    }
                }
            }
            if keep && let Err(e) = body(self) {
                self.locals.truncate(base);
                return Err(e);
            }
        }
        self.locals.truncate(base);
        Ok(())
    }

    fn call(
        &mut self,
        func: &Expr,
        args: &[Expr],
        kwargs: &[(String, Expr)],
    ) -> Result<Value, EvalError> {
        match func {
            Expr::Attr(target, method) => {
                let obj = self.eval(target)?;
                let args = self.eval_args(args)?;
                let kwargs = self.eval_kwargs(kwargs)?;
                builtins::call_method(&obj, method, &args, &kwargs)
            }
            Expr::Name(name) if self.local(name).is_none() => {
                if name == "isinstance" {
                    return self.isinstance(args);
                }
                if !builtins::is_builtin(name) {
                    return Err(EvalError::py(
                        "NameError",
                        format!("name '{name}' is not defined nor importable as module"),
                    ));
                }
                let args = self.eval_args(args)?;
                let kwargs = self.eval_kwargs(kwargs)?;
                builtins::call_builtin(name, &args, &kwargs)
            }
            other => {
                let v = self.eval(other)?;
                Err(type_err(format!(
                    "'{}' object is not callable",
                    v.py_type()
                )))
            }
        }
    }

    /// Keyword arguments, with `**mapping` spread.
    fn eval_kwargs(
        &mut self,
        kwargs: &[(String, Expr)],
    ) -> Result<Vec<(String, Value)>, EvalError> {
        let mut out = Vec::with_capacity(kwargs.len());
        for (k, v) in kwargs {
            let value = self.eval(v)?;
            if k != "**" {
                out.push((k.clone(), value));
                continue;
            }
            let Value::Dict(d) = &value else {
                return Err(type_err(format!(
                    "argument after ** must be a mapping, not {}",
                    value.py_type()
                )));
            };
            for (key, item) in d.borrow().items.iter() {
                match key {
                    Value::Str(name) => out.push((name.clone(), item.clone())),
                    _ => return Err(type_err("keywords must be strings")),
                }
            }
        }
        Ok(out)
    }

    /// `isinstance(x, int)` / `isinstance(x, (int, float))`, with builtin type names.
    fn isinstance(&mut self, args: &[Expr]) -> Result<Value, EvalError> {
        let [value, types] = args else {
            return Err(type_err(format!(
                "isinstance expected 2 arguments, got {}",
                args.len()
            )));
        };
        let value = self.eval(value)?;
        let names: Vec<&str> = match types {
            Expr::Name(n) => vec![n.as_str()],
            Expr::Tuple(items) => items
                .iter()
                .map(|i| match i {
                    Expr::Name(n) => Ok(n.as_str()),
                    _ => Err(type_err(
                        "isinstance() arg 2 must be a type, a tuple of types, or a union",
                    )),
                })
                .collect::<Result<_, _>>()?,
            _ => {
                return Err(type_err(
                    "isinstance() arg 2 must be a type, a tuple of types, or a union",
                ));
            }
        };
        let mut hit = false;
        for n in names {
            hit |= match n {
                "int" => value.is_int_like(),
                "bool" => matches!(value, Value::Bool(_)),
                "float" => matches!(value, Value::Float(_)),
                "str" => matches!(value, Value::Str(_)),
                "bytes" => matches!(value, Value::Bytes(_)),
                "list" => matches!(value, Value::List(_)),
                "tuple" => matches!(value, Value::Tuple(_)),
                "dict" => matches!(value, Value::Dict(_)),
                "object" => true,
                other => {
                    return Err(EvalError::py(
                        "NameError",
                        format!("name '{other}' is not defined nor importable as module"),
                    ));
                }
            };
        }
        Ok(Value::Bool(hit))
    }
}

fn unary(op: &str, v: &Value) -> Result<Value, EvalError> {
    match (op, v.as_number()) {
        ("-", Some(Num::Int(i))) => i.checked_neg().map(Value::Int).ok_or_else(overflow),
        ("-", Some(Num::Float(f))) => Ok(Value::Float(-f)),
        ("+", Some(n)) => Ok(n.into_value()),
        ("~", Some(Num::Int(i))) => Ok(Value::Int(!i)),
        _ => Err(type_err(format!(
            "bad operand type for unary {op}: '{}'",
            v.py_type()
        ))),
    }
}

fn unsupported(op: &str, a: &Value, b: &Value) -> EvalError {
    type_err(format!(
        "unsupported operand type(s) for {op}: '{}' and '{}'",
        a.py_type(),
        b.py_type()
    ))
}

fn repeat_count(n: i64, len: usize) -> Result<usize, EvalError> {
    let n = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
    if len.saturating_mul(n) > MAX_ITEMS * 10 {
        return Err(EvalError::py("MemoryError", ""));
    }
    Ok(n)
}

/// A binary operator.
pub(crate) fn binary(op: &str, a: &Value, b: &Value) -> Result<Value, EvalError> {
    use Value as V;
    // Sequences first: concatenation and repetition.
    match (op, a, b) {
        ("+", V::Str(x), V::Str(y)) => return Ok(V::Str(format!("{x}{y}"))),
        ("+", V::Str(_), other) => {
            return Err(type_err(format!(
                "can only concatenate str (not \"{}\") to str",
                other.py_type()
            )));
        }
        ("+", V::Bytes(x), V::Bytes(y)) => return Ok(V::Bytes([x.as_slice(), y].concat())),
        ("+", V::List(x), V::List(y)) => {
            let mut items = x.borrow().clone();
            items.extend(y.borrow().iter().cloned());
            return Ok(V::list(items));
        }
        ("+", V::List(_), other) => {
            return Err(type_err(format!(
                "can only concatenate list (not \"{}\") to list",
                other.py_type()
            )));
        }
        ("+", V::Tuple(x), V::Tuple(y)) => {
            let mut items = x.as_ref().clone();
            items.extend(y.iter().cloned());
            return Ok(V::tuple(items));
        }
        ("+", V::Tuple(_), other) => {
            return Err(type_err(format!(
                "can only concatenate tuple (not \"{}\") to tuple",
                other.py_type()
            )));
        }
        ("*", V::Str(s), n) | ("*", n, V::Str(s)) if n.is_int_like() => {
            let count = repeat_count(int_of(n), s.len())?;
            return Ok(V::Str(s.repeat(count)));
        }
        ("*", V::List(l), n) | ("*", n, V::List(l)) if n.is_int_like() => {
            let items = l.borrow();
            let count = repeat_count(int_of(n), items.len())?;
            let mut out = Vec::with_capacity(items.len() * count);
            for _ in 0..count {
                out.extend(items.iter().cloned());
            }
            return Ok(V::list(out));
        }
        ("*", V::Tuple(t), n) | ("*", n, V::Tuple(t)) if n.is_int_like() => {
            let count = repeat_count(int_of(n), t.len())?;
            let mut out = Vec::with_capacity(t.len() * count);
            for _ in 0..count {
                out.extend(t.iter().cloned());
            }
            return Ok(V::tuple(out));
        }
        ("*", V::Str(_) | V::List(_) | V::Tuple(_), other)
        | ("*", other, V::Str(_) | V::List(_) | V::Tuple(_)) => {
            return Err(type_err(format!(
                "can't multiply sequence by non-int of type '{}'",
                other.py_type()
            )));
        }
        ("%", V::Str(t), args) => {
            return crate::pyfmt::percent(t, args)
                .map(V::Str)
                .map_err(Into::into);
        }
        _ => {}
    }
    let (Some(x), Some(y)) = (a.as_number(), b.as_number()) else {
        return Err(unsupported(op, a, b));
    };
    let both_bool = matches!((a, b), (V::Bool(_), V::Bool(_)));
    match (x, y) {
        (Num::Int(i), Num::Int(j)) => int_op(op, i, j, both_bool),
        _ => float_op(op, x.as_f64(), y.as_f64(), a, b),
    }
}

fn int_of(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

fn int_op(op: &str, i: i64, j: i64, both_bool: bool) -> Result<Value, EvalError> {
    let int = |r: Option<i64>| r.map(Value::Int).ok_or_else(overflow);
    match op {
        "+" => int(i.checked_add(j)),
        "-" => int(i.checked_sub(j)),
        "*" => int(i.checked_mul(j)),
        "/" => {
            if j == 0 {
                return Err(EvalError::py("ZeroDivisionError", "division by zero"));
            }
            Ok(Value::Float(i as f64 / j as f64))
        }
        "//" => {
            if j == 0 {
                return Err(EvalError::py(
                    "ZeroDivisionError",
                    "integer division or modulo by zero",
                ));
            }
            int(floor_div(i, j))
        }
        "%" => {
            if j == 0 {
                return Err(EvalError::py("ZeroDivisionError", "integer modulo by zero"));
            }
            int(py_mod(i, j))
        }
        "**" => {
            if j < 0 {
                if i == 0 {
                    return Err(EvalError::py(
                        "ZeroDivisionError",
                        "0.0 cannot be raised to a negative power",
                    ));
                }
                return Ok(Value::Float((i as f64).powf(j as f64)));
            }
            int(u32::try_from(j).ok().and_then(|e| i.checked_pow(e)))
        }
        "&" | "|" | "^" => {
            let r = match op {
                "&" => i & j,
                "|" => i | j,
                _ => i ^ j,
            };
            Ok(if both_bool {
                Value::Bool(r != 0)
            } else {
                Value::Int(r)
            })
        }
        "<<" | ">>" => {
            if j < 0 {
                return Err(EvalError::py("ValueError", "negative shift count"));
            }
            let s = u32::try_from(j).unwrap_or(u32::MAX);
            if op == "<<" {
                let r = i.checked_shl(s).filter(|r| r >> s == i);
                int(r)
            } else {
                Ok(Value::Int(if s >= 64 {
                    if i < 0 { -1 } else { 0 }
                } else {
                    i >> s
                }))
            }
        }
        _ => Err(EvalError::syntax("invalid syntax")),
    }
}

fn floor_div(i: i64, j: i64) -> Option<i64> {
    let q = i.checked_div(j)?;
    if (i % j != 0) && ((i < 0) != (j < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

fn py_mod(i: i64, j: i64) -> Option<i64> {
    let r = i.checked_rem(j)?;
    if r != 0 && ((r < 0) != (j < 0)) {
        Some(r + j)
    } else {
        Some(r)
    }
}

fn float_op(op: &str, x: f64, y: f64, a: &Value, b: &Value) -> Result<Value, EvalError> {
    let f = |v: f64| Ok(Value::Float(v));
    match op {
        "+" => f(x + y),
        "-" => f(x - y),
        "*" => f(x * y),
        "/" => {
            if y == 0.0 {
                return Err(EvalError::py("ZeroDivisionError", "float division by zero"));
            }
            f(x / y)
        }
        "//" => {
            if y == 0.0 {
                return Err(EvalError::py(
                    "ZeroDivisionError",
                    "float floor division by zero",
                ));
            }
            f((x / y).floor())
        }
        "%" => {
            if y == 0.0 {
                return Err(EvalError::py("ZeroDivisionError", "float modulo"));
            }
            let r = x % y;
            f(if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                r + y
            } else {
                r
            })
        }
        "**" => {
            if x == 0.0 && y < 0.0 {
                return Err(EvalError::py(
                    "ZeroDivisionError",
                    "0.0 cannot be raised to a negative power",
                ));
            }
            f(x.powf(y))
        }
        _ => Err(unsupported(op, a, b)),
    }
}

/// A comparison.
pub(crate) fn compare(op: CmpOp, a: &Value, b: &Value) -> Result<bool, EvalError> {
    let ord = |a: &Value, b: &Value| py_cmp(a, b, op.symbol()).map_err(type_err);
    Ok(match op {
        CmpOp::Eq => py_eq(a, b),
        CmpOp::Ne => !py_eq(a, b),
        CmpOp::Lt => ord(a, b)? == Some(Ordering::Less),
        CmpOp::Le => matches!(ord(a, b)?, Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => ord(a, b)? == Some(Ordering::Greater),
        CmpOp::Ge => matches!(ord(a, b)?, Some(Ordering::Greater | Ordering::Equal)),
        CmpOp::In => py_contains(b, a).map_err(type_err)?,
        CmpOp::NotIn => !py_contains(b, a).map_err(type_err)?,
        CmpOp::Is => identical(a, b),
        CmpOp::IsNot => !identical(a, b),
    })
}

fn identical(a: &Value, b: &Value) -> bool {
    use Value as V;
    match (a, b) {
        (V::None, V::None) => true,
        (V::Bool(x), V::Bool(y)) => x == y,
        // CPython caches small ints and interns short strings; equality stands in.
        (V::Int(x), V::Int(y)) => x == y,
        (V::Str(x), V::Str(y)) => x == y,
        (V::List(x), V::List(y)) => std::rc::Rc::ptr_eq(x, y),
        (V::Dict(x), V::Dict(y)) => std::rc::Rc::ptr_eq(x, y),
        (V::Tuple(x), V::Tuple(y)) => std::rc::Rc::ptr_eq(x, y),
        _ => false,
    }
}

/// `target[index]`.
pub(crate) fn subscript(target: &Value, index: &Value) -> Result<Value, EvalError> {
    use Value as V;
    if let V::Dict(d) = target {
        if !index.hashable() {
            return Err(type_err(format!("unhashable type: '{}'", index.py_type())));
        }
        return d
            .borrow()
            .get(index)
            .cloned()
            .ok_or_else(|| EvalError::py("KeyError", index.repr()));
    }
    let (len, kind) = match target {
        V::List(l) => (l.borrow().len(), "list"),
        V::Tuple(t) => (t.len(), "tuple"),
        V::Str(s) => (s.chars().count(), "string"),
        V::Bytes(b) => (b.len(), "index"),
        other => {
            return Err(type_err(format!(
                "'{}' object is not subscriptable",
                other.py_type()
            )));
        }
    };
    let i = match index {
        V::Int(i) => *i,
        V::Bool(b) => i64::from(*b),
        other => {
            return Err(type_err(match target {
                V::Str(_) => format!("string indices must be integers, not '{}'", other.py_type()),
                V::Bytes(_) => format!(
                    "byte indices must be integers or slices, not {}",
                    other.py_type()
                ),
                _ => format!(
                    "{} indices must be integers or slices, not {}",
                    target.py_type(),
                    other.py_type()
                ),
            }));
        }
    };
    let pos = if i < 0 { i + len as i64 } else { i };
    let out_of_range = || EvalError::py("IndexError", format!("{kind} index out of range"));
    let pos = usize::try_from(pos)
        .ok()
        .filter(|p| *p < len)
        .ok_or_else(out_of_range)?;
    Ok(match target {
        V::List(l) => l.borrow()[pos].clone(),
        V::Tuple(t) => t[pos].clone(),
        V::Str(s) => V::Str(s.chars().nth(pos).map(String::from).unwrap_or_default()),
        V::Bytes(b) => V::Int(i64::from(b[pos])),
        _ => V::None,
    })
}

/// `target[start:stop:step]`.
pub(crate) fn slice(
    target: &Value,
    [start, stop, step]: [Option<i64>; 3],
) -> Result<Value, EvalError> {
    use Value as V;
    let len = target.len().unwrap_or(0);
    let picks =
        |len| slice_indices(len, start, stop, step).map_err(|e| EvalError::py("ValueError", e));
    match target {
        V::List(l) => {
            let items = l.borrow();
            Ok(V::list(
                picks(len)?.into_iter().map(|i| items[i].clone()).collect(),
            ))
        }
        V::Tuple(t) => Ok(V::tuple(
            picks(len)?.into_iter().map(|i| t[i].clone()).collect(),
        )),
        V::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            Ok(V::Str(
                picks(chars.len())?.into_iter().map(|i| chars[i]).collect(),
            ))
        }
        V::Bytes(b) => Ok(V::Bytes(
            picks(b.len())?.into_iter().map(|i| b[i]).collect(),
        )),
        V::Dict(_) => Err(type_err("unhashable type: 'slice'")),
        other => Err(type_err(format!(
            "'{}' object is not subscriptable",
            other.py_type()
        ))),
    }
}

/// `value.name` for a non-call attribute: RF's DotDict exposes its keys this way.
fn attribute(v: &Value, name: &str) -> Result<Value, EvalError> {
    if let Value::Dict(d) = v
        && d.borrow().dot
    {
        return d
            .borrow()
            .get(&Value::str(name))
            .cloned()
            .ok_or_else(|| EvalError::py("AttributeError", name));
    }
    if builtins::has_method(v, name) {
        return Err(type_err(format!(
            "method '{name}' of '{}' objects can only be called in this evaluator",
            v.py_type()
        )));
    }
    Err(EvalError::py(
        "AttributeError",
        format!("'{}' object has no attribute '{name}'", v.py_type()),
    ))
}
