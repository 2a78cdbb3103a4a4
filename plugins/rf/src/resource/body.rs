//! A resource keyword's body and how it runs: keyword calls, `RETURN`, and RF's
//! control structures (`IF`, `FOR`, `WHILE`, `TRY`, `VAR`, `BREAK`, `CONTINUE`,
//! `GROUP`), following robot/running/bodyrunner.py: the same conditions, loop
//! flavours, limits, pattern types and failure messages.

use std::time::Instant;

use crate::engine::{Level, Session, format_assign_message, returned};
use crate::error::{RfError, RfResult};
use crate::expr;
use crate::matching::{glob_match, normalize};
use crate::pylib::{list, text_of};
use crate::regexp::{self, Flags};
use crate::timefmt::{secs_to_timestr, timestr_to_secs};
use crate::value::{Value, seq2str, str_repr};
use crate::variables::search::split_from_equals;
use crate::variables::{Arg, is_list_like};

/// RF's `DEFAULT_WHILE_LIMIT`: iterations when a `WHILE` names no `limit`.
const DEFAULT_WHILE_LIMIT: u64 = 10_000;

/// One item of a body.
#[derive(Clone)]
pub(super) enum Step {
    Call {
        name: String,
        args: Vec<String>,
        assign: Vec<String>,
    },
    Return(Vec<String>),
    /// Branches in order: `IF`, `ELSE IF`..., `ELSE` (no condition).
    If(Vec<IfBranch>),
    For(Box<For>),
    While(Box<While>),
    /// Branches in order: `TRY`, `EXCEPT`..., `ELSE`, `FINALLY`.
    Try(Vec<TryBranch>),
    Var {
        name: String,
        values: Vec<String>,
        scope: Option<String>,
        separator: Option<String>,
    },
    Group(Vec<Step>),
    Break,
    Continue,
    /// What RF's parser found wrong here; it fails when reached, as in RF.
    Invalid(String),
    /// A structure this plugin does not know: its type and line.
    Unsupported(String, i64),
}

#[derive(Clone)]
pub(super) struct IfBranch {
    kind: String,
    condition: Option<String>,
    body: Vec<Step>,
}

#[derive(Clone)]
pub(super) struct For {
    flavor: String,
    assign: Vec<String>,
    values: Vec<String>,
    start: Option<String>,
    mode: Option<String>,
    fill: Option<String>,
    body: Vec<Step>,
}

#[derive(Clone)]
pub(super) struct While {
    condition: Option<String>,
    limit: Option<String>,
    on_limit: Option<String>,
    on_limit_message: Option<String>,
    body: Vec<Step>,
}

#[derive(Clone)]
pub(super) struct TryBranch {
    kind: String,
    patterns: Vec<String>,
    pattern_type: Option<String>,
    assign: Option<String>,
    body: Vec<Step>,
}

/// How a body ended when it did not fail.
pub(super) enum Flow {
    Normal,
    Return(Value),
    Break,
    Continue,
}

fn opt_text(value: Option<&Value>) -> Option<String> {
    match value {
        None | Some(Value::None) => None,
        Some(v) => Some(v.to_str()),
    }
}

fn texts(value: Option<&Value>) -> Vec<String> {
    list(value).iter().map(Value::to_str).collect()
}

/// A body as `stephost_libraries._body` lists it.
pub(super) fn steps_of(value: Option<&Value>) -> Vec<Step> {
    list(value).iter().filter_map(step_of).collect()
}

fn step_of(item: &Value) -> Option<Step> {
    let f = item.list_items()?;
    let line = |at: usize| match f.get(at) {
        Some(Value::Int(n)) => *n,
        _ => 0,
    };
    Some(match text_of(f.first()).as_str() {
        "KEYWORD" => Step::Call {
            name: text_of(f.get(1)),
            args: texts(f.get(2)),
            assign: texts(f.get(3)),
        },
        "RETURN" => Step::Return(texts(f.get(1))),
        "IF" => Step::If(
            list(f.get(1))
                .iter()
                .filter_map(|b| {
                    let b = b.list_items()?;
                    Some(IfBranch {
                        kind: text_of(b.first()),
                        condition: opt_text(b.get(1)),
                        body: steps_of(b.get(2)),
                    })
                })
                .collect(),
        ),
        "FOR" => Step::For(Box::new(For {
            flavor: text_of(f.get(1)),
            assign: texts(f.get(2)),
            values: texts(f.get(3)),
            start: opt_text(f.get(4)),
            mode: opt_text(f.get(5)),
            fill: opt_text(f.get(6)),
            body: steps_of(f.get(7)),
        })),
        "WHILE" => Step::While(Box::new(While {
            condition: opt_text(f.get(1)),
            limit: opt_text(f.get(2)),
            on_limit: opt_text(f.get(3)),
            on_limit_message: opt_text(f.get(4)),
            body: steps_of(f.get(5)),
        })),
        "TRY" => Step::Try(
            list(f.get(1))
                .iter()
                .filter_map(|b| {
                    let b = b.list_items()?;
                    Some(TryBranch {
                        kind: text_of(b.first()),
                        patterns: texts(b.get(1)),
                        pattern_type: opt_text(b.get(2)),
                        assign: opt_text(b.get(3)),
                        body: steps_of(b.get(4)),
                    })
                })
                .collect(),
        ),
        "VAR" => Step::Var {
            name: text_of(f.get(1)),
            values: texts(f.get(2)),
            scope: opt_text(f.get(3)),
            separator: opt_text(f.get(4)),
        },
        "GROUP" => Step::Group(steps_of(f.get(2))),
        "BREAK" => Step::Break,
        "CONTINUE" => Step::Continue,
        "INVALID" => Step::Invalid(text_of(f.get(1))),
        other => Step::Unsupported(other.to_string(), line(1)),
    })
}

/// The first structure of `steps` (at any depth) that this plugin does not run.
pub(super) fn unsupported(steps: &[Step]) -> Option<(&str, i64)> {
    steps.iter().find_map(|step| match step {
        Step::Unsupported(kind, line) => Some((kind.as_str(), *line)),
        Step::If(branches) => branches.iter().find_map(|b| unsupported(&b.body)),
        Step::Try(branches) => branches.iter().find_map(|b| unsupported(&b.body)),
        Step::For(f) => unsupported(&f.body),
        Step::While(w) => unsupported(&w.body),
        Step::Group(body) => unsupported(body),
        _ => None,
    })
}

/// `${name} =`, `${name}`, `@{name}` -> `name`.
pub(super) fn base_of(target: &str) -> Option<String> {
    let t = target.trim().trim_end_matches('=').trim_end();
    let inner = t.get(2..t.len().checked_sub(1)?)?;
    (t.len() > 3 && t.ends_with('}')).then(|| inner.to_string())
}

/// The names a body sets in the keyword's own scope, at any depth: assignments,
/// loop variables, `EXCEPT ... AS`, and `VAR` without a wider scope.
pub(super) fn locals(steps: &[Step], out: &mut Vec<String>) {
    for step in steps {
        match step {
            Step::Call { assign, .. } => out.extend(assign.iter().filter_map(|a| base_of(a))),
            Step::If(branches) => branches.iter().for_each(|b| locals(&b.body, out)),
            Step::Try(branches) => {
                for b in branches {
                    out.extend(b.assign.as_deref().and_then(base_of));
                    locals(&b.body, out);
                }
            }
            Step::For(f) => {
                out.extend(f.assign.iter().filter_map(|a| base_of(a)));
                locals(&f.body, out);
            }
            Step::While(w) => locals(&w.body, out),
            Step::Group(body) => locals(body, out),
            Step::Var { name, scope, .. }
                if scope
                    .as_deref()
                    .is_none_or(|s| s.eq_ignore_ascii_case("local")) =>
            {
                out.extend(base_of(name));
            }
            _ => {}
        }
    }
}

/// Runs `steps` in order; a failure ends the body, as in RF.
pub(super) fn run_body(s: &mut Session, steps: &[Step]) -> RfResult<Flow> {
    for step in steps {
        let flow = run_step(s, step)?;
        if !matches!(flow, Flow::Normal) {
            return Ok(flow);
        }
    }
    Ok(Flow::Normal)
}

fn run_step(s: &mut Session, step: &Step) -> RfResult<Flow> {
    match step {
        Step::Call { name, args, assign } => {
            let raw: Vec<Arg> = args.iter().map(|a| Arg::Raw(a.clone())).collect();
            let name = s.store.replace_string(name)?;
            let value = s.run(&name, &raw)?;
            s.assign_all(assign, value)?;
            Ok(Flow::Normal)
        }
        Step::Return(values) => {
            let raw: Vec<Arg> = values.iter().map(|a| Arg::Raw(a.clone())).collect();
            Ok(Flow::Return(returned(s.store.replace_list(&raw)?)))
        }
        Step::If(branches) => {
            for branch in branches {
                let run = match &branch.condition {
                    None => true,
                    Some(c) => condition(s, c, &format!("{} condition", branch.kind))?,
                };
                if run {
                    return run_body(s, &branch.body);
                }
            }
            Ok(Flow::Normal)
        }
        Step::For(f) => run_for(s, f),
        Step::While(w) => run_while(s, w),
        Step::Try(branches) => run_try(s, branches),
        Step::Var {
            name,
            values,
            scope,
            separator,
        } => {
            run_var(s, name, values, scope.as_deref(), separator.as_deref())?;
            Ok(Flow::Normal)
        }
        Step::Group(body) => run_body(s, body),
        Step::Break => Ok(Flow::Break),
        Step::Continue => Ok(Flow::Continue),
        Step::Invalid(message) => Err(RfError::syntax(message.clone())),
        // Refused before the body starts.
        Step::Unsupported(..) => Ok(Flow::Normal),
    }
}

/// RF's `evaluate_expression(condition, ..., resolve_variables=True)` as an IF or
/// WHILE reads it: a condition that is one variable is that value's truth.
fn condition(s: &Session, text: &str, what: &str) -> RfResult<bool> {
    let value = s.store.replace_scalar_str(text).map_err(|e| {
        RfError::data(format!(
            "Invalid {what}: Evaluating expression {} failed: {}",
            str_repr(text),
            e.message
        ))
    })?;
    match value {
        Value::Str(expression) => expr::rf_truth(&expression, &s.store)
            .map_err(|e| RfError::data(format!("Invalid {what}: {}", e.message))),
        other => Ok(other.truthy()),
    }
}

/// One round's values, or the error that ends the loop before it starts.
fn for_rounds(s: &mut Session, f: &For) -> RfResult<Vec<Vec<Value>>> {
    let per_round = f.assign.len();
    let is_dict = |v: &str| v.starts_with("&{") && v.ends_with('}');
    if f.values.iter().any(|v| is_dict(v)) {
        let items = dict_items(s, f)?;
        return match f.flavor.as_str() {
            "IN" if per_round > 2 => Err(RfError::syntax(format!(
                "Number of FOR loop variables must be 1 or 2 when iterating over dictionaries, got {per_round}."
            ))),
            // One variable takes the pair as a tuple (`run_for`).
            "IN" => Ok(items.into_iter().map(|(k, v)| vec![k, v]).collect()),
            "IN ENUMERATE" if per_round > 3 => Err(RfError::syntax(format!(
                "Number of FOR IN ENUMERATE loop variables must be 1-3 when iterating over dictionaries, got {per_round}."
            ))),
            "IN ENUMERATE" => {
                let start = enumerate_start(s, f)?;
                Ok(items
                    .into_iter()
                    .zip(start..)
                    // RF: two variables take the index and the pair, one or
                    // three the index, key and value.
                    .map(|((k, v), i)| {
                        if per_round == 2 {
                            vec![Value::Int(i), Value::tuple(vec![k, v])]
                        } else {
                            vec![Value::Int(i), k, v]
                        }
                    })
                    .collect())
            }
            other => Err(RfError::syntax(format!(
                "FOR {other} loops do not support iterating over dictionaries."
            ))),
        };
    }
    let raw: Vec<Arg> = f.values.iter().map(|v| Arg::Raw(v.clone())).collect();
    match f.flavor.as_str() {
        "IN RANGE" => {
            if !(1..=3).contains(&raw.len()) {
                return Err(RfError::syntax(format!(
                    "FOR IN RANGE expected 1-3 values, got {}.",
                    raw.len()
                )));
            }
            let values = s.store.replace_list(&raw)?;
            let numbers = values
                .iter()
                .map(number_with_arithmetic)
                .collect::<Result<Vec<_>, String>>()
                .map_err(|m| {
                    RfError::data(format!("Converting FOR IN RANGE values failed: {m}."))
                })?;
            let values = frange(&numbers)?;
            chunk(values, per_round, |n| wrong_count(per_round, n))
        }
        "IN ENUMERATE" => {
            let start = enumerate_start(s, f)?;
            let values = s.store.replace_list(&raw)?;
            let width = per_round.saturating_sub(1).max(1);
            let rounds = chunk(values, width, |n| {
                RfError::data(format!(
                    "Number of FOR IN ENUMERATE loop values should be multiple of its variables (excluding the index). Got {width} variables but {n} value{}.",
                    crate::value::plural(n)
                ))
            })?;
            Ok(rounds
                .into_iter()
                .zip(start..)
                .map(|(round, i)| {
                    let mut out = vec![Value::Int(i)];
                    out.extend(round);
                    out
                })
                .collect())
        }
        "IN ZIP" => zip_rounds(s, f, &raw),
        _ => {
            let values = s.store.replace_list(&raw)?;
            chunk(values, per_round, |n| wrong_count(per_round, n))
        }
    }
}

fn wrong_count(per_round: usize, values: usize) -> RfError {
    RfError::data(format!(
        "Number of FOR loop values should be multiple of its variables. Got {per_round} variables but {values} value{}.",
        crate::value::plural(values)
    ))
}

fn chunk(
    values: Vec<Value>,
    per_round: usize,
    wrong: impl Fn(usize) -> RfError,
) -> RfResult<Vec<Vec<Value>>> {
    let per_round = per_round.max(1);
    if !values.len().is_multiple_of(per_round) {
        return Err(wrong(values.len()));
    }
    Ok(values.chunks(per_round).map(<[Value]>::to_vec).collect())
}

fn dict_items(s: &mut Session, f: &For) -> RfResult<Vec<(Value, Value)>> {
    let mut items: Vec<(Value, Value)> = Vec::new();
    for item in &f.values {
        if item.starts_with("&{") {
            let dict = s.store.replace_scalar_str(item)?;
            let pairs = match &dict {
                Value::Dict(d) => d.borrow().items.clone(),
                Value::Object(o) => o.view.borrow().mapping.clone().unwrap_or_default(),
                _ => Vec::new(),
            };
            for (k, v) in pairs {
                upsert(&mut items, k, v);
            }
        } else {
            let Some((key, value)) = split_from_equals(item) else {
                return Err(RfError::syntax(format!(
                    "Invalid FOR loop value '{item}'. When iterating over dictionaries, values must be '&{{dict}}' variables or use 'key=value' syntax."
                )));
            };
            let k = s.store.replace_scalar_str(&key)?;
            let v = s.store.replace_scalar_str(&value)?;
            upsert(&mut items, k, v);
        }
    }
    Ok(items)
}

fn upsert(items: &mut Vec<(Value, Value)>, key: Value, value: Value) {
    match items.iter_mut().find(|(k, _)| crate::value::py_eq(k, &key)) {
        Some(slot) => slot.1 = value,
        None => items.push((key, value)),
    }
}

fn enumerate_start(s: &Session, f: &For) -> RfResult<i64> {
    let Some(start) = &f.start else {
        return Ok(0);
    };
    let text = s.store.replace_string(start).map_err(|e| {
        RfError::data(format!(
            "Invalid FOR IN ENUMERATE start value: {}",
            e.message
        ))
    })?;
    text.trim().replace('_', "").parse::<i64>().map_err(|_| {
        RfError::data(format!(
            "Invalid FOR IN ENUMERATE start value: Value must be an integer, got '{text}'."
        ))
    })
}

/// RF's `_to_number_with_arithmetic`: numbers as they are, text evaluated.
fn number_with_arithmetic(value: &Value) -> Result<Value, String> {
    if matches!(value, Value::Int(_) | Value::Float(_)) {
        return Ok(value.clone());
    }
    let text = value.to_str();
    let number = expr::rf_evaluate(&text, &expr::NoVars).map_err(|e| {
        // RF's own `eval()` shows the exception alone, not the evaluator's frame.
        let prefix = format!("Evaluating expression {} failed: ", str_repr(&text));
        e.message
            .strip_prefix(&prefix)
            .map_or(e.message.clone(), str::to_string)
    })?;
    match number {
        Value::Int(_) | Value::Float(_) => Ok(number),
        Value::Bool(b) => Ok(Value::Int(i64::from(b))),
        _ => Err(format!("Expected number, got {}", value.type_name())),
    }
}

/// RF's `frange`: `range()` for integers; for floats, integer steps scaled by the
/// digits the values are written with.
fn frange(numbers: &[Value]) -> RfResult<Vec<Value>> {
    let ints: Option<Vec<i64>> = numbers
        .iter()
        .map(|n| match n {
            Value::Int(i) => Some(*i),
            _ => None,
        })
        .collect();
    let (start, stop, step) = match numbers.len() {
        1 => (Value::Int(0), numbers[0].clone(), Value::Int(1)),
        2 => (numbers[0].clone(), numbers[1].clone(), Value::Int(1)),
        _ => (numbers[0].clone(), numbers[1].clone(), numbers[2].clone()),
    };
    let int_range = |start: i64, stop: i64, step: i64| -> RfResult<Vec<i64>> {
        if step == 0 {
            return Err(RfError::py("ValueError", "range() arg 3 must not be zero"));
        }
        let count = if step > 0 {
            (i128::from(stop) - i128::from(start) + i128::from(step) - 1) / i128::from(step)
        } else {
            (i128::from(start) - i128::from(stop) - i128::from(step) - 1) / -i128::from(step)
        };
        // A range the step budget could never finish is refused before it is made.
        if count > i128::from(u32::MAX) {
            return Err(RfError::fail(format!(
                "FOR IN RANGE of {count} rounds is more than this plugin iterates."
            )));
        }
        Ok((0..count.max(0))
            .filter_map(|k| i64::try_from(i128::from(start) + k * i128::from(step)).ok())
            .collect())
    };
    if ints.is_some() {
        let as_int = |v: &Value| match v {
            Value::Int(i) => *i,
            _ => 0,
        };
        return Ok(int_range(as_int(&start), as_int(&stop), as_int(&step))?
            .into_iter()
            .map(Value::Int)
            .collect());
    }
    let f = |v: &Value| match v {
        Value::Int(i) => *i as f64,
        Value::Float(x) => *x,
        _ => 0.0,
    };
    let digits = [&start, &stop, &step]
        .iter()
        .map(|v| digits(&v.repr()))
        .max()
        .unwrap_or(0);
    let factor = 10f64.powi(i32::try_from(digits).unwrap_or(0));
    let scaled = |v: &Value| (f(v) * factor).round() as i64;
    Ok(int_range(scaled(&start), scaled(&stop), scaled(&step))?
        .into_iter()
        .map(|x| Value::Float(x as f64 / factor))
        .collect())
}

fn digits(number: &str) -> usize {
    if let Some((mantissa, exponent)) = number.split_once('e') {
        let exponent: i64 = exponent.parse().unwrap_or(0);
        return usize::try_from((digits(mantissa) as i64 - exponent).max(0)).unwrap_or(0);
    }
    match number.split_once('.') {
        Some((_, "0")) | None => 0,
        Some((_, fractional)) => fractional.len(),
    }
}

fn zip_rounds(s: &mut Session, f: &For, raw: &[Arg]) -> RfResult<Vec<Vec<Value>>> {
    let per_round = f.assign.len();
    let mode = match &f.mode {
        None => None,
        Some(m) => {
            let m = s
                .store
                .replace_string(m)
                .map_err(|e| RfError::data(format!("Invalid FOR IN ZIP mode: {}", e.message)))?;
            let upper = m.to_uppercase();
            if !["STRICT", "SHORTEST", "LONGEST"].contains(&upper.as_str()) {
                return Err(RfError::data(format!(
                    "Invalid FOR IN ZIP mode: Value '{m}' is not accepted. Valid values are 'STRICT', 'SHORTEST' and 'LONGEST'."
                )));
            }
            Some(upper)
        }
    };
    let fill = match &f.fill {
        None => Value::None,
        Some(fill) => s
            .store
            .replace_scalar_str(fill)
            .map_err(|e| RfError::data(format!("Invalid FOR IN ZIP fill value: {}", e.message)))?,
    };
    let values = s.store.replace_list(raw)?;
    let mut lists = Vec::new();
    for (index, item) in values.iter().enumerate() {
        if !is_list_like(item) {
            return Err(RfError::data(format!(
                "FOR IN ZIP items must be list-like, but item {} is {}.",
                index + 1,
                item.type_name()
            )));
        }
        lists.push(item.iter_items().unwrap_or_default());
    }
    if !lists.len().is_multiple_of(per_round.max(1)) {
        return Err(wrong_count(per_round, lists.len()));
    }
    let lengths: Vec<usize> = lists.iter().map(Vec::len).collect();
    let uneven = lengths.windows(2).any(|w| w[0] != w[1]);
    let strict = || {
        format!(
            "FOR IN ZIP items must have equal lengths in the STRICT mode, but lengths are {}.",
            seq2str(
                &lengths.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "",
                ", ",
                " and "
            )
        )
    };
    match mode.as_deref() {
        Some("STRICT") if uneven => return Err(RfError::data(strict())),
        None if uneven => s.log(
            Level::Warn,
            format!(
                "FOR IN ZIP default mode will be changed from SHORTEST to STRICT in Robot Framework 8.0. Use 'mode=SHORTEST' to keep using the SHORTEST mode. If the mode is not changed, execution will fail like this in the future: {}",
                strict()
            ),
        ),
        _ => {}
    }
    let rounds = if mode.as_deref() == Some("LONGEST") {
        lengths.iter().copied().max().unwrap_or(0)
    } else {
        lengths.iter().copied().min().unwrap_or(0)
    };
    Ok((0..rounds)
        .map(|i| {
            lists
                .iter()
                .map(|l| l.get(i).cloned().unwrap_or_else(|| fill.clone()))
                .collect()
        })
        .collect())
}

fn run_for(s: &mut Session, f: &For) -> RfResult<Flow> {
    let rounds = for_rounds(s, f)?;
    for round in rounds {
        // RF's `_run_one_round`: one variable takes a round of several values
        // as a tuple.
        let round = if f.assign.len() == 1 && round.len() != 1 {
            vec![Value::tuple(round)]
        } else {
            round
        };
        for (target, value) in f.assign.iter().zip(round) {
            if let Some(name) = base_of(target) {
                s.store.set(&name, value);
            }
        }
        match run_body(s, &f.body)? {
            Flow::Break => break,
            Flow::Normal | Flow::Continue => {}
            flow @ Flow::Return(_) => return Ok(flow),
        }
    }
    Ok(Flow::Normal)
}

enum Limit {
    Count(u64),
    Time(f64, Instant),
    None,
}

fn while_limit(s: &Session, w: &While) -> RfResult<(Limit, String, bool, Option<String>)> {
    let on_limit = match &w.on_limit {
        None => None,
        Some(text) => {
            let value = s.store.replace_string(text).map_err(|e| {
                RfError::data(format!("Invalid WHILE loop 'on_limit': {}", e.message))
            })?;
            let upper = value.to_uppercase();
            if upper != "PASS" && upper != "FAIL" {
                return Err(RfError::data(format!(
                    "Invalid WHILE loop 'on_limit': Value '{value}' is not accepted. Valid values are 'PASS' and 'FAIL'."
                )));
            }
            Some(upper)
        }
    };
    let message = match &w.on_limit_message {
        None => None,
        Some(text) => Some(s.store.replace_string(text).map_err(|e| {
            RfError::data(format!(
                "Invalid WHILE loop 'on_limit_message': '{}",
                e.message
            ))
        })?),
    };
    let pass = on_limit.as_deref() == Some("PASS");
    let Some(limit) = &w.limit else {
        return Ok((
            Limit::Count(DEFAULT_WHILE_LIMIT),
            format!("{DEFAULT_WHILE_LIMIT} iterations"),
            pass,
            message,
        ));
    };
    let limit = s
        .store
        .replace_string(limit)
        .map_err(|e| RfError::data(format!("Invalid WHILE loop limit: {}", e.message)))?;
    if limit.eq_ignore_ascii_case("NONE") {
        return Ok((Limit::None, String::new(), pass, message));
    }
    let norm = normalize(&limit, &[], true, true);
    let count = norm
        .strip_suffix("times")
        .or_else(|| norm.strip_suffix('x'))
        .unwrap_or(&norm)
        .to_string();
    if let Ok(count) = count.parse::<i64>() {
        if count <= 0 {
            return Err(RfError::data(format!(
                "Invalid WHILE loop limit: Iteration count must be a positive integer, got '{count}'."
            )));
        }
        let count = u64::try_from(count).unwrap_or(u64::MAX);
        return Ok((
            Limit::Count(count),
            format!("{count} iterations"),
            pass,
            message,
        ));
    }
    let secs = timestr_to_secs(&Value::str(limit.clone()))
        .map_err(|e| RfError::data(format!("Invalid WHILE loop limit: {e}")))?;
    Ok((
        Limit::Time(secs, Instant::now()),
        secs_to_timestr(secs, false),
        pass,
        message,
    ))
}

fn run_while(s: &mut Session, w: &While) -> RfResult<Flow> {
    let holds = |s: &Session| match &w.condition {
        None => Ok(true),
        Some(c) => condition(s, c, "WHILE loop condition"),
    };
    if !holds(s)? {
        return Ok(Flow::Normal);
    }
    let (limit, shown, pass, message) = while_limit(s, w)?;
    let mut done = 0u64;
    loop {
        let exceeded = match &limit {
            Limit::Count(n) => done >= *n,
            Limit::Time(secs, started) => started.elapsed().as_secs_f64() > *secs,
            Limit::None => false,
        };
        if exceeded {
            let text = message.clone().unwrap_or_else(|| {
                format!(
                    "WHILE loop was aborted because it did not finish within the limit of {shown}. Use the 'limit' argument to increase or remove the limit if needed."
                )
            });
            if pass {
                s.info(text);
                return Ok(Flow::Normal);
            }
            return Err(RfError::fail(text));
        }
        done += 1;
        match run_body(s, &w.body)? {
            Flow::Break => return Ok(Flow::Normal),
            Flow::Normal | Flow::Continue => {}
            flow @ Flow::Return(_) => return Ok(flow),
        }
        if !holds(s)? {
            return Ok(Flow::Normal);
        }
    }
}

/// Whether an `EXCEPT` branch takes failure `message`.
fn except_matches(s: &Session, branch: &TryBranch, message: &str) -> RfResult<bool> {
    if branch.patterns.is_empty() {
        return Ok(true);
    }
    let kind = match &branch.pattern_type {
        Some(t) => s.store.replace_string(t)?,
        None => "LITERAL".to_string(),
    };
    let upper = kind.to_uppercase();
    if !["GLOB", "REGEXP", "START", "LITERAL"].contains(&upper.as_str()) {
        return Err(RfError::data(format!(
            "Invalid EXCEPT pattern type '{kind}'. Valid values are 'GLOB', 'REGEXP', 'START' and 'LITERAL'."
        )));
    }
    for pattern in &branch.patterns {
        let pattern = s.store.replace_string(pattern)?;
        let hit = match upper.as_str() {
            "GLOB" => glob_match(message, &pattern, false, false),
            "REGEXP" => regexp::compile_full(&pattern, Flags::default())
                .map_err(RfError::fail)?
                .is_match(message),
            "START" => message.starts_with(&pattern),
            _ => message == pattern,
        };
        if hit {
            return Ok(true);
        }
    }
    Ok(false)
}

fn run_try(s: &mut Session, branches: &[TryBranch]) -> RfResult<Flow> {
    fn of<'a>(branches: &'a [TryBranch], kind: &'a str) -> impl Iterator<Item = &'a TryBranch> {
        branches.iter().filter(move |b| b.kind == kind)
    }
    let mut outcome = match of(branches, "TRY").next() {
        Some(b) => run_body(s, &b.body),
        None => Ok(Flow::Normal),
    };
    match &outcome {
        Err(e) if e.catchable() => {
            let message = e.message.clone();
            for branch in of(branches, "EXCEPT") {
                match except_matches(s, branch, &message) {
                    Ok(false) => continue,
                    Ok(true) => {
                        if let Some(name) = branch.assign.as_deref().and_then(base_of) {
                            s.store.set(&name, Value::str(message.clone()));
                        }
                        outcome = run_body(s, &branch.body);
                    }
                    Err(pattern_error) => outcome = Err(pattern_error),
                }
                break;
            }
        }
        // RETURN, BREAK and CONTINUE in TRY skip ELSE, as RF's signals do.
        Ok(Flow::Normal) => {
            if let Some(b) = of(branches, "ELSE").next() {
                outcome = run_body(s, &b.body);
            }
        }
        _ => {}
    }
    if let Some(b) = of(branches, "FINALLY").next() {
        match run_body(s, &b.body) {
            Ok(Flow::Normal) => {}
            other => outcome = other,
        }
    }
    outcome
}

fn run_var(
    s: &mut Session,
    name: &str,
    values: &[String],
    scope: Option<&str>,
    separator: Option<&str>,
) -> RfResult<()> {
    if let Some(scope) = scope {
        let given = s
            .store
            .replace_string(scope)
            .map_err(|e| RfError::data(format!("Invalid VAR scope: {}", e.message)))?;
        if !["LOCAL", "TEST", "TASK", "SUITE", "SUITES", "GLOBAL"]
            .contains(&given.to_uppercase().as_str())
        {
            return Err(RfError::data(format!(
                "Invalid VAR scope: Value '{given}' is not accepted. Valid values are 'LOCAL', 'TEST', 'TASK', 'SUITE', 'SUITES' and 'GLOBAL'."
            )));
        }
    }
    let (base, value) = super::variable_value(s, name, values, separator)
        .map_err(|e| RfError::data(format!("Setting variable '{name}' failed: {}", e.message)))?;
    s.info(format_assign_message(name, &value));
    s.store.set(&base, value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(values: &[Value]) -> Vec<i64> {
        values
            .iter()
            .map(|v| match v {
                Value::Int(i) => *i,
                _ => i64::MIN,
            })
            .collect()
    }

    #[test]
    fn frange_is_range_for_integers_and_scaled_for_floats() {
        let r = |v: &[Value]| frange(v).expect("a range");
        assert_eq!(ints(&r(&[Value::Int(3)])), [0, 1, 2]);
        assert_eq!(
            ints(&r(&[Value::Int(10), Value::Int(2), Value::Int(-3)])),
            [10, 7, 4]
        );
        assert!(r(&[Value::Int(5), Value::Int(1)]).is_empty());
        let floats: Vec<f64> = r(&[Value::Float(0.1), Value::Float(0.4), Value::Float(0.1)])
            .iter()
            .map(|v| match v {
                Value::Float(x) => *x,
                _ => f64::NAN,
            })
            .collect();
        // Scaled by the digits written, so no 0.30000000000000004.
        assert_eq!(floats, [0.1, 0.2, 0.3]);
        let zero = frange(&[Value::Int(0), Value::Int(5), Value::Int(0)]).err();
        assert_eq!(
            zero.map(|e| e.message).as_deref(),
            Some("ValueError: range() arg 3 must not be zero")
        );
        // Never materialized: refused before any round runs.
        assert!(frange(&[Value::Int(i64::MAX)]).is_err());
    }

    #[test]
    fn locals_are_found_at_any_depth_and_wider_scopes_are_not() {
        let call = |target: &str| Step::Call {
            name: "Set Variable".into(),
            args: vec!["x".into()],
            assign: vec![format!("{target} =")],
        };
        let steps = vec![
            Step::For(Box::new(For {
                flavor: "IN".into(),
                assign: vec!["${i}".into()],
                values: vec!["a".into()],
                start: None,
                mode: None,
                fill: None,
                body: vec![call("${inner}")],
            })),
            Step::Try(vec![TryBranch {
                kind: "EXCEPT".into(),
                patterns: vec![],
                pattern_type: None,
                assign: Some("${err}".into()),
                body: vec![call("@{list}")],
            }]),
            Step::Var {
                name: "${mine}".into(),
                values: vec![],
                scope: None,
                separator: None,
            },
            Step::Var {
                name: "${shared}".into(),
                values: vec![],
                scope: Some("SUITE".into()),
                separator: None,
            },
        ];
        let mut out = Vec::new();
        locals(&steps, &mut out);
        assert_eq!(out, ["i", "inner", "err", "list", "mine"]);
    }
}
