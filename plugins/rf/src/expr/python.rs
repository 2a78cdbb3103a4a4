//! Real CPython for what this evaluator does not cover: the host's `python`
//! capability (contract 0.5.0), Robot Framework's own `evaluate_expression` run
//! in a sandboxed interpreter of this instance's own.
//!
//! The evaluator here answers first: it is exact for what it covers and costs
//! microseconds, where a call out costs a tenth of a millisecond or more. Only
//! a Python exception from it (a name it does not know, `lambda`, a type object,
//! a method it lacks) sends the expression to CPython, whose answer, value or
//! exception, is then the one RF would give. A variable the expression changes
//! in place there (`$items.append(3)`) is changed here too, so aliases see it.

use stephost_plugin::python::{self as host, EvaluationError};

use super::Vars;
use crate::pyjson;
use crate::value::{Value, changed, str_repr};

/// What CPython made of an expression.
pub struct Evaluated {
    /// The value.
    pub value: Value,
    /// Python's `bool()` of it.
    pub truthy: bool,
}

/// The `$name` references in `expression`, each once, in order. A `$` inside a
/// string literal is picked up too; the evaluator ignores names it is sent but
/// not asked for, so that only costs the encoding.
fn dollar_names(expression: &str) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    let mut rest = expression;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        let len = after
            .char_indices()
            .find(|&(i, c)| !(c == '_' || c.is_alphanumeric()) || (i == 0 && c.is_numeric()))
            .map_or(after.len(), |(i, _)| i);
        if len > 0 && !names.contains(&&after[..len]) {
            names.push(&after[..len]);
        }
        rest = &after[len..];
    }
    names
}

/// Evaluates `expression` with CPython: `None` when the host has no evaluator
/// (the caller keeps its own answer), else the value or RF's failure message.
pub fn evaluate(
    expression: &str,
    vars: &dyn Vars,
    namespace: &[(String, Value)],
    modules: &str,
) -> Option<Result<Evaluated, String>> {
    let failed = |why: &str| {
        format!(
            "Evaluating expression {} failed: {why}",
            str_repr(expression)
        )
    };
    let variables: Vec<(String, Value)> = dollar_names(expression)
        .into_iter()
        .filter_map(|name| Some((name.to_string(), vars.dollar(name).ok()?)))
        .collect();
    let too_deep = |_| failed("a value nests deeper than 64 levels");
    let encoded_vars = match pyjson::encode_pairs(&variables).map_err(too_deep) {
        Ok(text) => text,
        Err(message) => return Some(Err(message)),
    };
    let encoded_ns = match pyjson::encode_pairs(namespace).map_err(too_deep) {
        Ok(text) => text,
        Err(message) => return Some(Err(message)),
    };
    match host::evaluate(expression, &encoded_vars, &encoded_ns, modules) {
        Ok(answer) => {
            let value = match serde_json::from_str(&answer.value) {
                Ok(json) => pyjson::decode(&json),
                Err(e) => {
                    return Some(Err(failed(&format!(
                        "the evaluator's answer is unreadable: {e}"
                    ))));
                }
            };
            write_back(&answer.changed, &variables);
            Some(Ok(Evaluated {
                value,
                truthy: answer.truthy,
            }))
        }
        Err(EvaluationError::Failed(message)) => Some(Err(message)),
        Err(EvaluationError::Unavailable(why)) => Some(Err(failed(&why))),
        Err(EvaluationError::NoEvaluator(_)) => None,
    }
}

/// Puts what the expression changed in place into the variables' own lists,
/// dicts and object views, which other variables may share.
fn write_back(changes: &str, variables: &[(String, Value)]) {
    let Ok(serde_json::Value::Array(pairs)) = serde_json::from_str::<serde_json::Value>(changes)
    else {
        return;
    };
    for pair in &pairs {
        let (Some(name), Some(json)) = (pair.get(0).and_then(|n| n.as_str()), pair.get(1)) else {
            continue;
        };
        let Some((_, old)) = variables.iter().find(|(n, _)| n == name) else {
            continue;
        };
        match (old, pyjson::decode(json)) {
            (Value::List(old), Value::List(new)) => {
                let items = new.borrow().clone();
                *changed(old) = items;
            }
            (Value::Dict(old), Value::Dict(new)) => {
                let items = new.borrow().items.clone();
                changed(old).items = items;
            }
            (Value::Object(old), Value::Object(new)) if old.handle == new.handle => {
                let view = new.view.borrow().clone();
                *changed(&old.view) = view;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_names_are_found_once_each() {
        assert_eq!(dollar_names("$a + $b_2 * $a"), ["a", "b_2"]);
        assert_eq!(dollar_names("'$' + $ä"), ["ä"]);
        assert_eq!(dollar_names("$1 + $"), Vec::<&str>::new());
    }

    #[test]
    fn without_an_evaluator_the_caller_keeps_its_answer() {
        stephost_plugin::mock::reset();
        assert!(evaluate("math.pi", &super::super::NoVars, &[], "").is_none());
    }
}
