//! The rest of BuiltIn: logging, `Catenate`, `Sleep`, `Get Time`, `Evaluate`,
//! `Import Library`, `Pass Execution` and the keywords that need a loop or a teardown.

use super::{format_with, is_true, text_of};
use crate::args::Bound;
use crate::engine::{Level, Session};
use crate::error::{RfError, RfResult};
use crate::regexp;
use crate::value::Value;
use crate::variables::Arg;
use crate::variables::search::whole_variable;
use crate::{expr, timefmt};

pub(super) fn catenate(_s: &mut Session, b: &Bound) -> RfResult<Value> {
    let items: Vec<String> = b.varargs.iter().map(Value::to_str).collect();
    let Some(first) = items.first() else {
        return Ok(Value::str(""));
    };
    Ok(Value::Str(match first.strip_prefix("SEPARATOR=") {
        Some(sep) => items[1..].join(sep),
        None => items.join(" "),
    }))
}

pub(super) fn log(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let message = b.get("message");
    if b.text("formatter").eq_ignore_ascii_case("len") && message.len().is_none() {
        return Err(RfError::py(
            "TypeError",
            format!("object of type '{}' has no len()", message.py_type()),
        ));
    }
    let repr_arg = b.get("repr");
    let text = if matches!(&repr_arg, Value::Str(t) if t == "DEPRECATED") {
        format_with(&b.text("formatter"), &message)
    } else {
        s.log(
            Level::Warn,
            "The 'repr' argument of 'BuiltIn.Log' is deprecated. Use 'formatter=repr' instead.",
        );
        if repr_arg.truthy() {
            message.repr()
        } else {
            format_with(&b.text("formatter"), &message)
        }
    };
    let level = Level::parse(&b.text("level")).unwrap_or(Level::Info);
    s.log(level, text);
    Ok(Value::None)
}

pub(super) fn log_many(s: &mut Session, b: &Bound) -> RfResult<Value> {
    for arg in b.rest.clone() {
        let value = s.store.replace_scalar(&arg)?;
        match arg.raw() {
            Some(r) if whole_variable(r, "@").is_some() => {
                for item in value.list_items().unwrap_or_default() {
                    s.info(item.to_str());
                }
            }
            Some(r) if whole_variable(r, "&").is_some() => {
                if let Value::Dict(d) = &value {
                    for (k, v) in d.borrow().items.iter() {
                        s.info(format!("{}={}", k.to_str(), v.to_str()));
                    }
                }
            }
            _ => s.info(value.to_str()),
        }
    }
    Ok(Value::None)
}

pub(super) fn log_to_console(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let message = b.get("message");
    let text = match b.opt("format") {
        Some(f) => crate::pyfmt::format_value(&message, &f.to_str())
            .map_err(|(class, m)| RfError::py(class, m))?,
        None => message.to_str(),
    };
    // There is no console in the sandbox: the line goes to the log instead.
    s.info(text);
    Ok(Value::None)
}

pub(super) fn set_log_level(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let name = b.text("level");
    let level = Level::parse(&name).unwrap_or(Level::Info);
    let old = s.set_log_level(level);
    s.log(
        Level::Debug,
        format!("Log level changed from {} to {}.", old.name(), level.name()),
    );
    Ok(Value::str(old.name()))
}

pub(super) fn sleep(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let secs = b
        .get("time_")
        .as_number()
        .map_or(0.0, |n| n.as_f64())
        .max(0.0);
    // On wasip2 this blocks in a wasi:clocks poll, where the host can time the step out.
    std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(1e7)));
    s.info(format!("Slept {}.", timefmt::secs_to_timestr(secs, false)));
    if let Some(reason) = b.opt("reason") {
        s.info(reason.to_str());
    }
    Ok(Value::None)
}

pub(super) fn get_time(_s: &mut Session, b: &Bound) -> RfResult<Value> {
    let time = b.get("time_");
    if let Value::DateTime(_) | Value::Date(_) | Value::TimeDelta(_) = time {
        // RF's parse_time starts with float(time), which raises this for them.
        return Err(RfError::py(
            "TypeError",
            format!(
                "float() argument must be a string or a real number, not 'datetime.{}'",
                time.py_type()
            ),
        ));
    }
    let epoch = timefmt::parse_time(&time).map_err(RfError::value)?;
    Ok(timefmt::get_time(&b.text("format"), epoch))
}

pub(super) fn evaluate(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let expression = b.get("expression");
    let Value::Str(text) = &expression else {
        return Err(RfError::fail(format!(
            "Evaluating expression {} failed: TypeError: Expression must be string, got {}.",
            expression.repr(),
            expression.type_name()
        )));
    };
    let modules = match b.opt("modules") {
        Some(Value::None) | None => String::new(),
        Some(m) => m.to_str(),
    };
    let namespace: Vec<(String, Value)> = match b.opt("namespace") {
        Some(Value::Dict(d)) => d
            .borrow()
            .items
            .iter()
            .map(|(k, v)| (k.to_str(), v.clone()))
            .collect(),
        _ => Vec::new(),
    };
    if text.is_empty() {
        return expr::rf_evaluate(text, &s.store);
    }
    expr::full_evaluate(text, &s.store, &namespace, &modules)
        .map(|e| e.value)
        .map_err(RfError::fail)
}

pub(super) fn call_method(_s: &mut Session, b: &Bound) -> RfResult<Value> {
    let object = b.get("object");
    let method = b.text("method_name");
    expr::call_method(&object, &method, &b.varargs, &b.kwargs).map_err(|e| match e {
        expr::EvalError::Py(class, _) if class == "AttributeError" => RfError::fail(format!(
            "{} object does not have method '{method}'.",
            object.py_type()
        )),
        other => RfError::fail(format!(
            "Calling method '{method}' failed: {}",
            other.message()
        )),
    })
}

pub(super) fn regexp_escape(_s: &mut Session, b: &Bound) -> RfResult<Value> {
    let escaped: Vec<Value> = b
        .varargs
        .iter()
        .map(|v| Value::Str(regexp::escape(&text_of(v))))
        .collect();
    Ok(match escaped.len() {
        0 => Value::str(""),
        1 => escaped.into_iter().next().unwrap_or(Value::None),
        _ => Value::list(escaped),
    })
}

pub(super) fn import_library(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let Some((name, args)) = b.rest.split_first() else {
        return Ok(Value::None);
    };
    let name = match name {
        Arg::Raw(r) => s.store.replace_string(r)?,
        Arg::Value(v) => v.to_str(),
    };
    let mut raw: Vec<Arg> = args.to_vec();
    let mut alias = None;
    if raw.len() > 1 {
        let marker = raw[raw.len() - 2].display();
        let marker: String = marker
            .chars()
            .map(|c| if c.is_whitespace() { ' ' } else { c })
            .collect();
        if marker == "WITH NAME" || marker == "AS" {
            let a = raw.pop().map(|a| a.display()).unwrap_or_default();
            raw.pop();
            alias = Some(s.store.replace_string(&a)?);
        }
    }
    let values = s.store.replace_list(&raw)?;
    s.import_library(&name, &values, alias)?;
    Ok(Value::None)
}

pub(super) fn keyword_should_exist(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let name = b.text("name");
    match s.keyword_exists(&name) {
        Ok(()) => Ok(Value::None),
        Err(e) => Err(RfError::fail(b.msg().unwrap_or(e.message))),
    }
}

pub(super) fn pass_execution(s: &mut Session, message: &str) -> RfResult<Value> {
    let message = message.trim();
    if message.is_empty() {
        return Err(RfError::fail("Message cannot be empty."));
    }
    s.info(format!("Execution passed with message:\n{message}"));
    Err(RfError::pass_execution(message))
}

/// `Skip`: the test, which a batch is, stops with status SKIP.
pub(super) fn skip(_s: &mut Session, b: &Bound) -> RfResult<Value> {
    Err(RfError::skip_execution(b.text("msg")))
}

/// `Skip If`: RF's `msg or condition`, so without a message the condition as written
/// is the reason.
pub(super) fn skip_if(s: &mut Session, b: &Bound) -> RfResult<Value> {
    let condition = b.get("condition");
    if !is_true(s, &condition)? {
        return Ok(Value::None);
    }
    let reason = match b.opt("msg") {
        Some(m) if m.truthy() => m.to_str(),
        _ => condition.to_str(),
    };
    Err(RfError::skip_execution(reason))
}

/// The `RETURN` signal: RF logs that it returns; a resource keyword it unwinds to
/// returns `values` (none: `None`, one: it, more: a list), and the test body it reaches
/// (a batch step is one) fails it.
pub(super) fn return_from_keyword(s: &mut Session, values: Vec<Value>) -> RfResult<Value> {
    s.info("Returning from the enclosing user keyword.");
    s.returned = Some(Ok(crate::engine::returned(values)));
    Err(RfError::invalid_return())
}

/// `Run Keyword And Return`: the keyword runs first; its value is returned, its
/// failure fails the enclosing keyword, as RF does, and only other signals (`Pass
/// Execution`, a nested return) go on as they are.
pub(super) fn run_keyword_and_return(s: &mut Session, rest: &[Arg]) -> RfResult<Value> {
    let Some((name, args)) = rest.split_first() else {
        return Err(RfError::invalid("Keyword name missing."));
    };
    match s.run_raw(name, args) {
        Err(e) if e.pass || e.returning => Err(e),
        Ok(value) => return_from_keyword(s, vec![value]),
        Err(e) => {
            let signal = return_from_keyword(s, Vec::new());
            s.returned = Some(Err(e));
            signal
        }
    }
}

/// `Import Variables`: Robot Framework itself reads the file (a Python variable file
/// is code), in the host's Python environment, from a folder granted to the plugin.
/// The keyword resolves nothing itself (RF resolves the path and arguments when
/// importing), so they come raw.
pub(super) fn import_variables(s: &mut Session, rest: &[Arg]) -> RfResult<Value> {
    use stephost_plugin::rf_library;

    use crate::keywords::operating_system::{paths, sandbox};
    let Some((path, args)) = rest.split_first() else {
        return Err(RfError::invalid(
            "Keyword 'BuiltIn.Import Variables' expected at least 1 argument, got 0.",
        ));
    };
    let path = match path {
        Arg::Raw(p) => s.store.replace_string(p)?,
        Arg::Value(v) => v.to_str(),
    };
    let args: Vec<String> = s
        .store
        .replace_list(args)?
        .iter()
        .map(Value::to_str)
        .collect();
    let path = paths::absnorm(&path, &sandbox::cwd());
    s.reached_out = true;
    let loaded = rf_library::load_variables(&path, &args).map_err(|error| {
        crate::remote::host_refusal(&format!("variable file '{path}'"), error, "")
    })?;
    let pairs: Vec<(String, Value)> = match serde_json::from_str::<serde_json::Value>(&loaded) {
        Ok(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|pair| {
                let name = pair.get(0)?.as_str()?.to_string();
                Some((name, crate::pyjson::decode(pair.get(1)?)))
            })
            .collect(),
        _ => {
            return Err(RfError::fail(format!(
                "Importing variable file '{path}' failed: the host answered no variables"
            )));
        }
    };
    let count = pairs.len();
    for (name, value) in pairs {
        s.store.set(&name, value);
    }
    let with = if args.is_empty() {
        String::new()
    } else {
        format!(" with arguments [ {} ]", args.join(" | "))
    };
    s.info(format!(
        "Imported variable file '{path}'{with} ({count} variables)."
    ));
    Ok(Value::None)
}

/// `Import Resource    path`: a resource file in the plugin's granted folders. It is
/// a run-keyword variant that resolves nothing itself (RF resolves the path when
/// importing), so the path comes raw. Resource text given in place of a path is
/// parsed as written: its `${name}`s are the keywords' own.
pub(super) fn import_resource(s: &mut Session, rest: &[Arg]) -> RfResult<Value> {
    let path = match rest.first() {
        Some(Arg::Raw(p)) if crate::resource::is_inline(p) => p.clone(),
        Some(Arg::Raw(p)) => s.store.replace_string(p)?,
        Some(Arg::Value(v)) => v.to_str(),
        None => {
            return Err(RfError::invalid(
                "Keyword 'BuiltIn.Import Resource' expected 1 argument, got 0.",
            ));
        }
    };
    crate::resource::import(s, &path, 0)?;
    Ok(Value::None)
}

pub(super) fn pass_execution_if(s: &mut Session, b: &Bound) -> RfResult<Value> {
    if is_true(s, &b.get("condition"))? {
        let message = match b.rest.first() {
            Some(Arg::Raw(m)) => s.store.replace_string(m)?,
            Some(Arg::Value(v)) => v.to_str(),
            None => String::new(),
        };
        return pass_execution(s, &message);
    }
    Ok(Value::None)
}

pub(super) fn no_operation(_s: &mut Session, _b: &Bound) -> RfResult<Value> {
    Ok(Value::None)
}

pub(super) fn outside_loop(name: &str) -> RfError {
    RfError::data(format!("'{name}' can only be used inside a loop."))
}

pub(super) fn teardown_only(name: &str, what: &str) -> RfError {
    RfError::fail(format!(
        "Keyword '{name}' can only be used in {what} teardown."
    ))
}
