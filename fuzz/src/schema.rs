//! JSON from fuzz bytes shaped by a JSON Schema: the schemas the host publishes for
//! its tools and verbs. Mostly valid instances (so the input reaches the mapping and
//! the planner), sometimes one rule broken (so the error paths run too).

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Value};
use stephost_batch::Catalog;

use crate::json;

/// Deepest nesting followed; below it, values are arbitrary leaves.
const MAX_DEPTH: u32 = 6;

/// An instance of `schema`.
pub fn instance(u: &mut Unstructured<'_>, schema: &Value) -> Result<Value> {
    at_depth(u, schema, MAX_DEPTH)
}

fn at_depth(u: &mut Unstructured<'_>, schema: &Value, depth: u32) -> Result<Value> {
    if depth == 0 {
        return json::value(u, 0);
    }
    // One value in sixteen ignores the schema altogether.
    if u.ratio(1, 16)? {
        return json::value(u, 2);
    }
    let Some(schema) = schema.as_object() else {
        return json::value(u, 2);
    };
    if let Some(Value::Array(choices)) = schema.get("enum")
        && !choices.is_empty()
    {
        return Ok(u.choose(choices)?.clone());
    }
    if let Some(value) = schema.get("const") {
        return Ok(value.clone());
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(choices)) = schema.get(key)
            && !choices.is_empty()
        {
            let choice = u.choose(choices)?;
            return at_depth(u, choice, depth - 1);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) if !types.is_empty() => u.choose(types)?.as_str().unwrap_or(""),
        _ if schema.contains_key("properties") => "object",
        _ if schema.contains_key("items") => "array",
        _ => "",
    };
    match ty {
        "object" => object(u, schema, depth),
        "array" => array(u, schema, depth),
        "string" => Ok(Value::String(json::string(u)?)),
        "integer" => {
            let min = bound(schema, "minimum").unwrap_or(i128::from(i64::MIN));
            let max = bound(schema, "maximum").unwrap_or(i128::from(u64::MAX));
            json::integer_near(u, min, max)
        }
        "number" => json::number(u),
        "boolean" => Ok(Value::Bool(u.arbitrary()?)),
        "null" => Ok(Value::Null),
        _ => json::value(u, depth.min(3)),
    }
}

fn bound(schema: &Map<String, Value>, key: &str) -> Option<i128> {
    let v = schema.get(key)?;
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
}

fn object(u: &mut Unstructured<'_>, schema: &Map<String, Value>, depth: u32) -> Result<Value> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (key, sub) in properties {
            let wanted = if required.contains(&key.as_str()) {
                !u.ratio(1, 32)?
            } else {
                u.arbitrary()?
            };
            if wanted {
                out.insert(key.clone(), at_depth(u, sub, depth - 1)?);
            }
        }
    }
    if u.ratio(1, 16)? {
        out.insert(json::name(u)?, json::value(u, 1)?);
    }
    Ok(Value::Object(out))
}

fn array(u: &mut Unstructured<'_>, schema: &Map<String, Value>, depth: u32) -> Result<Value> {
    let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
    let max = schema
        .get("maxItems")
        .and_then(Value::as_u64)
        .unwrap_or(min.saturating_add(4));
    let len = if u.ratio(1, 16)? {
        // Just outside the bounds.
        if u.arbitrary()? {
            min.saturating_sub(1)
        } else {
            max.saturating_add(1)
        }
    } else {
        u.int_in_range(min..=max.max(min).min(min.saturating_add(6)))?
    };
    let items = schema.get("items").cloned().unwrap_or(Value::Bool(true));
    let mut out = Vec::new();
    for _ in 0..len.min(16) {
        out.push(at_depth(u, &items, depth - 1)?);
    }
    Ok(Value::Array(out))
}

/// A generic batch (`{"steps": [...], ...}`) whose steps mostly name real plugins and
/// verbs of `catalog`, with inputs shaped by each verb's own schema and strings that
/// reference earlier, later and missing steps and names.
pub fn batch(u: &mut Unstructured<'_>, catalog: &Catalog, max_steps: usize) -> Result<Value> {
    let mut out = Map::new();
    if !u.ratio(1, 32)? {
        let len = if u.ratio(1, 64)? {
            // Just past the step limit: the planner must refuse it by count.
            max_steps + 1
        } else {
            u.int_in_range(0..=6)?
        };
        let mut steps = Vec::with_capacity(len);
        for index in 0..len {
            steps.push(step(u, catalog, index, len)?);
        }
        out.insert("steps".into(), Value::Array(steps));
    }
    if u.ratio(1, 4)? {
        let policy = match u.int_in_range(0..=3)? {
            0 => Value::from("stop"),
            1 => Value::from("continue"),
            2 => Value::from("recover"),
            _ => json::value(u, 1)?,
        };
        out.insert("on_failure".into(), policy);
    }
    if u.ratio(1, 4)? {
        out.insert("timeout_ms".into(), json::number(u)?);
    }
    if u.ratio(1, 4)? {
        out.insert("session_id".into(), Value::String(json::string(u)?));
    }
    if u.ratio(1, 16)? {
        out.insert(json::name(u)?, json::value(u, 1)?);
    }
    Ok(Value::Object(out))
}

/// One step at `index` of a batch of `total`.
fn step(u: &mut Unstructured<'_>, catalog: &Catalog, index: usize, total: usize) -> Result<Value> {
    if total > 64 {
        // The oversized batch: its steps are never looked at.
        return Ok(Value::Null);
    }
    if u.ratio(1, 32)? {
        return json::value(u, 2);
    }
    let plugins: Vec<_> = catalog.plugins().collect();
    let mut out = Map::new();
    let plugin = if plugins.is_empty() || u.ratio(1, 16)? {
        None
    } else {
        Some(u.choose(&plugins)?)
    };
    match plugin {
        Some(p) => out.insert("plugin".into(), Value::from(p.name())),
        None => out.insert("plugin".into(), json::value(u, 0)?),
    };
    let verbs: Vec<&str> = plugin.map(|p| p.verb_names().collect()).unwrap_or_default();
    let verb = if verbs.is_empty() || u.ratio(1, 16)? {
        None
    } else {
        Some(*u.choose(&verbs)?)
    };
    match verb {
        Some(v) => out.insert("verb".into(), Value::from(v)),
        None => out.insert("verb".into(), json::value(u, 0)?),
    };
    let schema = plugin
        .zip(verb)
        .and_then(|(p, v)| p.verb(v))
        .map(|v| v.info.input_schema.clone());
    let mut input = match &schema {
        Some(schema) => instance(u, schema)?,
        None => json::value(u, 2)?,
    };
    // A reference in place of one field: to an earlier step (fine), this or a later
    // one (refused up front), or a name (known only if assigned earlier).
    if let Value::Object(map) = &mut input
        && u.arbitrary()?
    {
        let target = match u.int_in_range(0..=3)? {
            0 => format!("STEP_{index}"),
            1 => format!("STEP_{}", index + 1),
            2 => format!("STEP_{}", u.int_in_range(0..=total + 1)?),
            _ => json::name(u)?,
        };
        let key = match map.keys().next() {
            Some(k) if u.arbitrary()? => k.clone(),
            _ => json::name(u)?,
        };
        let text = if u.arbitrary()? {
            format!("${{{target}}}")
        } else {
            format!("{}${{{target}}}{}", json::string(u)?, json::string(u)?)
        };
        map.insert(key, Value::String(text));
    }
    out.insert("input".into(), input);
    if u.ratio(1, 4)? {
        out.insert("label".into(), Value::String(json::string(u)?));
    }
    if u.ratio(1, 4)? {
        out.insert("timeout_ms".into(), json::number(u)?);
    }
    if u.ratio(1, 3)? {
        out.insert("assign_to".into(), Value::String(json::name(u)?));
    }
    if u.ratio(1, 4)? {
        let mut retry = Map::new();
        if u.arbitrary()? {
            retry.insert("attempts".into(), json::integer_near(u, 1, 10)?);
        }
        if u.arbitrary()? {
            retry.insert("on".into(), json::value(u, 1)?);
        }
        out.insert("retry".into(), Value::Object(retry));
    }
    if u.ratio(1, 16)? {
        out.insert(json::name(u)?, json::value(u, 1)?);
    }
    Ok(Value::Object(out))
}
