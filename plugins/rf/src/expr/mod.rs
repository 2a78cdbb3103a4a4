//! A safe evaluator for the Python expressions Robot Framework evaluates: `Should Be
//! True`, `Evaluate`, `Run Keyword If` conditions, `${{inline}}` and extended `${var.attr}`
//! variables.
//!
//! It covers literals (numbers, strings, bytes, lists, tuples, dicts), arithmetic,
//! comparisons (chained), boolean logic, conditional expressions, subscripts and slices,
//! comprehensions, common builtins (`len`, `int`, `str`, `float`, `bool`, `min`, `max`,
//! `sum`, `sorted`, `round`, `abs`, `range`, `any`, `all`, ...), common `str`/`list`/
//! `dict` methods, and RF variables written `$name`. It cannot import modules, define
//! functions or touch anything outside the values it is given: there is no arbitrary
//! Python here, only the value model of [`crate::value`].
//!
//! Errors carry Python's exception class and message, so RF's failure text
//! (`Evaluating expression '1/0' failed: ZeroDivisionError: division by zero`) matches.

mod builtins;
mod eval;
pub(crate) mod lexer;
mod parser;
pub mod python;

use crate::error::{RfError, RfResult};
use crate::value::{Value, str_repr};

/// Why an evaluation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// A Python exception: class name and message.
    Py(String, String),
    /// A Robot Framework error (an unknown `$variable`): the message alone.
    Data(String),
}

impl EvalError {
    /// A Python exception.
    pub fn py(class: &str, message: impl Into<String>) -> Self {
        Self::Py(class.to_string(), message.into())
    }

    /// A `SyntaxError`, with the location suffix Python adds to `eval()` errors.
    pub fn syntax(message: impl Into<String>) -> Self {
        Self::Py(
            "SyntaxError".into(),
            format!("{} (<string>, line 1)", message.into()),
        )
    }

    /// The text RF shows: `Class: message`, the class alone for an empty message, or the
    /// RF error's message.
    pub fn message(&self) -> String {
        match self {
            Self::Py(class, msg) if msg.is_empty() => class.clone(),
            Self::Py(class, msg) => format!("{class}: {msg}"),
            Self::Data(msg) => msg.clone(),
        }
    }
}

impl From<(&'static str, String)> for EvalError {
    fn from((class, msg): (&'static str, String)) -> Self {
        Self::py(class, msg)
    }
}

/// Where `$name` references are looked up.
pub trait Vars {
    /// The value of RF variable `name` (written `$name`), or RF's "not found" message.
    fn dollar(&self, name: &str) -> Result<Value, String>;
}

/// No variables at all (for literal evaluation and tests).
pub struct NoVars;

impl Vars for NoVars {
    fn dollar(&self, name: &str) -> Result<Value, String> {
        Err(format!("Variable '${name}' not found."))
    }
}

/// Evaluates `expression`; `locals` are bare names visible to it (the base of extended
/// variable syntax is bound this way).
pub fn evaluate(
    expression: &str,
    vars: &dyn Vars,
    locals: &[(String, Value)],
) -> Result<Value, EvalError> {
    let toks = lexer::tokenize(expression.trim())?;
    let ast = parser::parse(toks)?;
    let mut env = eval::Env::new(vars, locals.to_vec());
    env.eval(&ast)
}

/// [`evaluate`] with CPython behind it for what it raised on, as in
/// [`full_evaluate`], failing with Python's bare message (`AttributeError: ...`)
/// for callers that word the failure themselves.
pub fn evaluate_with_cpython(
    expression: &str,
    vars: &dyn Vars,
    locals: &[(String, Value)],
) -> Result<Value, String> {
    match evaluate(expression, vars, locals) {
        Ok(value) => Ok(value),
        Err(e @ EvalError::Py(..)) => match python::evaluate(expression, vars, locals, "") {
            None => Err(e.message()),
            Some(Ok(evaluated)) => Ok(evaluated.value),
            Some(Err(message)) => {
                let prefix = format!("Evaluating expression {} failed: ", str_repr(expression));
                Err(message
                    .strip_prefix(&prefix)
                    .map_or(message.clone(), str::to_string))
            }
        },
        Err(e) => Err(e.message()),
    }
}

/// RF's `evaluate_expression`: evaluates and wraps failures as RF does:
/// `Evaluating expression '...' failed: ...`.
pub fn rf_evaluate(expression: &str, vars: &dyn Vars) -> RfResult<Value> {
    if expression.is_empty() {
        return Err(RfError::data(format!(
            "Evaluating expression {} failed: ValueError: Expression cannot be empty.",
            str_repr(expression)
        )));
    }
    full_evaluate(expression, vars, &[], "")
        .map(|e| e.value)
        .map_err(RfError::data)
}

/// RF's `evaluate_expression` for a condition (`Should Be True`, `Run Keyword
/// If`): Python's `bool()` of the value.
pub fn rf_truth(expression: &str, vars: &dyn Vars) -> RfResult<bool> {
    if expression.is_empty() {
        return rf_evaluate(expression, vars).map(|v| v.truthy());
    }
    full_evaluate(expression, vars, &[], "")
        .map(|e| e.truthy)
        .map_err(RfError::data)
}

/// This evaluator first, then CPython (see [`python`]) for what it raised on;
/// `modules` (RF's `Evaluate` argument) goes to CPython at once. The error is
/// RF's message, `Evaluating expression '...' failed: ...`.
pub fn full_evaluate(
    expression: &str,
    vars: &dyn Vars,
    namespace: &[(String, Value)],
    modules: &str,
) -> Result<python::Evaluated, String> {
    let wrap = |e: EvalError| {
        format!(
            "Evaluating expression {} failed: {}",
            str_repr(expression),
            e.message()
        )
    };
    if !modules.is_empty() {
        return python::evaluate(expression, vars, namespace, modules).unwrap_or_else(|| {
            Err(format!(
                "Evaluating expression {} failed: importing modules needs the host's Python evaluator, which this host does not have.",
                str_repr(expression)
            ))
        });
    }
    match evaluate(expression, vars, namespace) {
        Ok(value) => Ok(python::Evaluated {
            truthy: value.truthy(),
            value,
        }),
        Err(e @ EvalError::Py(..)) => {
            python::evaluate(expression, vars, namespace, "").unwrap_or_else(|| Err(wrap(e)))
        }
        Err(e) => Err(wrap(e)),
    }
}

/// Python's `ast.literal_eval`: literals and containers of literals only. The error is
/// RF's argument-conversion wording (`Invalid expression.`).
pub fn literal_eval(text: &str) -> Result<Value, String> {
    let toks = lexer::tokenize(text.trim()).map_err(|_| "Invalid expression.".to_string())?;
    let ast = parser::parse(toks).map_err(|_| "Invalid expression.".to_string())?;
    if !eval::is_literal(&ast) {
        return Err("Invalid expression.".into());
    }
    let mut env = eval::Env::new(&NoVars, Vec::new());
    env.eval(&ast)
        .map_err(|e| format!("Evaluating expression failed: {}", e.message()))
}

/// Calls a method of a value (`Call Method`), with the methods the evaluator knows.
pub fn call_method(
    object: &Value,
    method: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value, EvalError> {
    builtins::call_method(object, method, args, kwargs)
}

#[cfg(test)]
mod tests;
