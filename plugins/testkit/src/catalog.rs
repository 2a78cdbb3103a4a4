//! The verb catalogue that `describe` returns: names, descriptions and JSON Schemas.
//!
//! Schemas are built with `json!` rather than kept as text so that their bounds come
//! from the same constants the verbs check at run time.

use serde_json::{Value, json};
use stephost_plugin::{Handler, Verb};

use crate::{
    MAX_ALLOC_MIB, MAX_FLAKY_FAILURES, MAX_IMAGE_SIDE, MAX_SLEEP_MS, State, alloc_verb, count,
    echo, fail, flaky, image, log_verb, panic_verb, sleep, spin_verb,
};

/// The verbs, in listing order, with their schemas and handlers: the SDK derives both
/// `describe` and the dispatch (and its unknown-verb message) from this one list.
pub(crate) fn verbs() -> Vec<Verb<State>> {
    let channel = json!({ "type": "integer", "minimum": 0, "maximum": 255 });
    vec![
        verb(
            "echo",
            echo,
            "Returns `value` unchanged: as the output value and as one text item with its \
             compact JSON.",
            false,
            input(
                json!({ "value": { "description": "Any JSON value." } }),
                &["value"],
            ),
            Some(json!({ "description": "The input value, unchanged." })),
        ),
        verb(
            "sleep",
            sleep,
            "Sleeps `ms` milliseconds blocked in a WASI clock wait (not spinning), then \
             returns `{\"slept_ms\": ms}`.",
            false,
            input(
                json!({ "ms": int(0, MAX_SLEEP_MS, "How long to sleep, in milliseconds.") }),
                &["ms"],
            ),
            Some(output_object(json!({ "slept_ms": { "type": "integer" } }))),
        ),
        verb(
            "spin",
            spin_verb,
            "Busy-loops forever without calling the host. Never returns: only the host's \
             step timeout ends it.",
            false,
            input(json!({}), &[]),
            None,
        ),
        verb(
            "alloc",
            alloc_verb,
            "Allocates `mib` MiB, writes to every 4 KiB page, frees it and returns \
             `{\"allocated_mib\": mib}`. Fails with `out-of-memory` when the allocation is \
             refused; past the host's memory limit the host may stop the step instead.",
            false,
            input(
                json!({ "mib": int(1, MAX_ALLOC_MIB, "How much memory to allocate, in MiB.") }),
                &["mib"],
            ),
            Some(output_object(
                json!({ "allocated_mib": { "type": "integer" } }),
            )),
        ),
        verb(
            "fail",
            fail,
            "Always fails with the given `code` and `message`. Declared as acting on the \
             world so tests can use it as a stand-in for an acting verb.",
            true,
            input(
                json!({
                    "code": text("failed", "Failure code, kebab-case."),
                    "message": text("requested failure", "Failure message."),
                    "input_fired": input_fired(true),
                    "details": {"type": "object", "description": "Structured details to fail with (for example `recovery` strategies)."},
                }),
                &[],
            ),
            None,
        ),
        verb(
            "flaky",
            flaky,
            "Fails the first `failures` calls in this session with `code`, then succeeds \
             with `{\"calls\": n}` (n = calls so far) and starts counting from zero again.",
            false,
            input(
                json!({
                    "failures": int(0, MAX_FLAKY_FAILURES, "How many calls fail before a success."),
                    "code": text("world-moved", "Failure code of the failing calls."),
                    "input_fired": input_fired(false),
                }),
                &["failures"],
            ),
            Some(output_object(
                json!({ "calls": { "type": "integer", "minimum": 1 } }),
            )),
        ),
        verb(
            "count",
            count,
            "Adds one to a counter kept for this session and returns the new value \
             (1, 2, 3, ...).",
            false,
            input(json!({}), &[]),
            Some(json!({ "type": "integer", "minimum": 1 })),
        ),
        verb(
            "panic",
            panic_verb,
            "Panics with `message`: the plugin traps and the step fails as a crash.",
            false,
            input(
                json!({ "message": text("testkit panic requested", "Panic message.") }),
                &[],
            ),
            None,
        ),
        verb(
            "log",
            log_verb,
            "Writes `message` to the host's log at `level` and returns null.",
            false,
            input(
                json!({
                    "message": { "type": "string", "description": "The line to log." },
                    "level": {
                        "enum": ["trace", "debug", "info", "warn", "error"],
                        "default": "info",
                        "description": "Severity.",
                    },
                }),
                &["message"],
            ),
            Some(json!({ "type": "null" })),
        ),
        verb(
            "image",
            image,
            "Returns a `width` x `height` PNG filled with `color` as image content, plus a \
             text item; the value is `{\"width\": w, \"height\": h}`.",
            false,
            input(
                json!({
                    "width": int(1, MAX_IMAGE_SIDE, "Width in pixels."),
                    "height": int(1, MAX_IMAGE_SIDE, "Height in pixels."),
                    "color": {
                        "type": "array",
                        "items": channel,
                        "minItems": 3,
                        "maxItems": 3,
                        "default": [255, 0, 0],
                        "description": "Fill colour as [red, green, blue], each 0-255.",
                    },
                }),
                &["width", "height"],
            ),
            Some(output_object(json!({
                "width": { "type": "integer" },
                "height": { "type": "integer" },
            }))),
        ),
    ]
}

/// Builds one verb; `output` is `None` for verbs that never succeed.
fn verb(
    name: &str,
    handler: Handler<State>,
    description: &str,
    acts_on_world: bool,
    input: Value,
    output: Option<Value>,
) -> Verb<State> {
    let verb = Verb::new(name, description, input, handler).acts_on_world(acts_on_world);
    match output {
        Some(schema) => verb.with_output_schema(with_dialect(schema)),
        None => verb,
    }
}

/// A closed input object schema with these properties and required fields.
fn input(properties: Value, required: &[&str]) -> Value {
    let mut schema =
        json!({ "type": "object", "properties": properties, "additionalProperties": false });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    with_dialect(schema)
}

/// An output object schema whose listed properties are all present.
fn output_object(properties: Value) -> Value {
    let required: Vec<&String> = properties
        .as_object()
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    json!({ "type": "object", "properties": properties, "required": required })
}

/// Marks a schema as JSON Schema draft 2020-12.
fn with_dialect(mut schema: Value) -> Value {
    schema["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    schema
}

/// An integer property from `min` to `max`.
fn int(min: u64, max: u64, description: &str) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max, "description": description })
}

/// A string property with a default.
fn text(default: &str, description: &str) -> Value {
    json!({ "type": "string", "default": default, "description": description })
}

/// The `input_fired` property of the verbs that fail on request.
fn input_fired(default: bool) -> Value {
    json!({
        "type": "boolean",
        "default": default,
        "description": "The failure's input-fired flag: whether the action may have reached \
                        the outside world.",
    })
}
