//! A catalog for the engine's own tests: a `testkit` plugin described the way
//! the built-in one describes itself, without loading any component.

use std::sync::Arc;

use stephost_contract::{ContractVersion, PluginSpec, RawDescription, RawVerb};

use crate::Catalog;

/// `testkit` with `echo {value}` and `sleep {ms}`.
pub(crate) fn catalog() -> Catalog {
    let verb = |name: &str, schema: &str| RawVerb {
        name: name.into(),
        description: String::new(),
        input_schema: schema.into(),
        output_schema: String::new(),
        acts_on_world: false,
        checked: false,
    };
    let raw = RawDescription {
        name: "testkit".into(),
        version: "0.1.0".into(),
        description: "test verbs".into(),
        bare_tool_names: false,
        verbs: vec![
            verb(
                "echo",
                r#"{"type":"object","properties":{"value":{}},"required":["value"],"additionalProperties":false}"#,
            ),
            verb(
                "sleep",
                r#"{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"],"additionalProperties":false}"#,
            ),
        ],
    };
    match PluginSpec::new(raw, "builtin:testkit", "00", ContractVersion::LATEST) {
        Ok(spec) => Catalog::new([Arc::new(spec)], []),
        Err(e) => panic!("the test catalog is valid: {e}"),
    }
}

/// A plugin spec from `(verb, acts_on_world, input schema)`s.
fn spec(name: &str, bare: bool, verbs: Vec<(&str, bool, serde_json::Value)>) -> Arc<PluginSpec> {
    let raw = RawDescription {
        name: name.into(),
        version: "0.1.0".into(),
        description: format!("{name} for tests"),
        bare_tool_names: bare,
        verbs: verbs
            .into_iter()
            .map(|(verb, acts, schema)| RawVerb {
                name: verb.into(),
                description: String::new(),
                input_schema: schema.to_string(),
                output_schema: String::new(),
                acts_on_world: acts,
                checked: false,
            })
            .collect(),
    };
    match PluginSpec::new(
        raw,
        &format!("builtin:{name}"),
        "00",
        ContractVersion::LATEST,
    ) {
        Ok(spec) => Arc::new(spec),
        Err(e) => panic!("the test plugin {name} is valid: {e}"),
    }
}

/// The desktop plugin's verbs as the run_macro tests need them: the built-in
/// ones with their schemas' shape, plus `ui_elements`, element `press` and
/// `set_text`, screenshot `detail` and the element waits.
fn desktop() -> Arc<PluginSpec> {
    use serde_json::{Map, Value, json};
    let target = json!({
        "target": {"anyOf": [
            {"type": "string", "minLength": 1},
            {"type": "object", "properties": {
                "title": {"type": "string"}, "class": {"type": "string"},
                "id": {"type": "integer", "minimum": 1}, "exact": {"type": "boolean"}
            }, "additionalProperties": false}
        ]},
        "title": {"type": "string"},
        "windowTitle": {"type": "string"},
        "class": {"type": "string"},
        "exact": {"type": "boolean"}
    });
    let object = |props: Value, required: &[&str], with_target: bool| {
        let mut p: Map<String, Value> = props.as_object().cloned().unwrap_or_default();
        if with_target {
            p.extend(target.as_object().cloned().unwrap_or_default());
        }
        let mut s = json!({"type": "object", "properties": p, "additionalProperties": false});
        if !required.is_empty() {
            s["required"] = json!(required);
        }
        s
    };
    let coord = json!({"type": "integer", "minimum": -100000, "maximum": 100000});
    let point = json!({"x": coord, "y": coord, "window_relative": {"type": "boolean"}});
    let with = |base: &Value, extra: Value| {
        let mut m = base.as_object().cloned().unwrap_or_default();
        m.extend(extra.as_object().cloned().unwrap_or_default());
        Value::Object(m)
    };
    let region = json!({"anyOf": [
        {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"},
            "width": {"type": "integer", "minimum": 1}, "height": {"type": "integer", "minimum": 1}},
         "required": ["x", "y", "width", "height"], "additionalProperties": false},
        {"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4}
    ]});
    let button = json!({"enum": ["left", "middle", "right", "back", "forward"]});
    let element = json!({"type": "object", "properties": {
        "path": {"type": "string"}, "name": {"type": "string"},
        "role": {"type": "string"}, "text": {"type": "string"}
    }, "additionalProperties": false});
    let wait = object(
        json!({
            "condition": {"enum": ["window_appears", "window_gone", "screen_settles", "region_changes",
                "window_exists", "window_closed", "settled", "changed",
                "element_appears", "element_gone", "element_matches", "value_changes"]},
            "region": region,
            "timeout_ms": {"type": "integer", "minimum": 0, "maximum": 600000},
            "timeout": {"type": "number", "minimum": 0, "maximum": 600},
            "threshold": {"type": "number", "minimum": 0, "maximum": 1},
            "quiet_ms": {"type": "integer", "minimum": 50, "maximum": 10000},
            "element": element
        }),
        &["condition"],
        true,
    );
    spec(
        "desktop",
        true,
        vec![
            ("list_windows", false, object(json!({}), &[], true)),
            ("focus_window", true, object(json!({}), &[], true)),
            ("activate", true, object(json!({}), &[], true)),
            (
                "click",
                true,
                object(
                    with(
                        &point,
                        json!({"button": button, "count": {"type": "integer", "minimum": 1, "maximum": 3}}),
                    ),
                    &["x", "y"],
                    true,
                ),
            ),
            (
                "double_click",
                true,
                object(point.clone(), &["x", "y"], true),
            ),
            (
                "right_click",
                true,
                object(point.clone(), &["x", "y"], true),
            ),
            ("move", true, object(point.clone(), &["x", "y"], true)),
            (
                "drag",
                true,
                object(
                    json!({"from_x": coord, "from_y": coord, "to_x": coord, "to_y": coord,
                           "button": button, "window_relative": {"type": "boolean"}}),
                    &["from_x", "from_y", "to_x", "to_y"],
                    true,
                ),
            ),
            (
                "scroll",
                true,
                object(
                    with(
                        &point,
                        json!({"dy": {"type": "integer", "minimum": -100, "maximum": 100},
                                        "dx": {"type": "integer", "minimum": -100, "maximum": 100}}),
                    ),
                    &["x", "y"],
                    true,
                ),
            ),
            (
                "type",
                true,
                object(
                    json!({"text": {"type": "string", "maxLength": 10000}}),
                    &["text"],
                    true,
                ),
            ),
            (
                "key",
                true,
                object(
                    json!({"combo": {"type": "string", "minLength": 1, "maxLength": 200}}),
                    &["combo"],
                    true,
                ),
            ),
            (
                "screenshot",
                false,
                object(
                    json!({"region": region, "monitor": {"type": "integer", "minimum": 0},
                           "detail": {"enum": ["image", "text", "meta"]}}),
                    &[],
                    true,
                ),
            ),
            ("wait_for", false, wait.clone()),
            ("wait_until", false, wait),
            (
                "sleep",
                false,
                object(
                    json!({"ms": {"type": "integer", "minimum": 0, "maximum": 60000}}),
                    &["ms"],
                    false,
                ),
            ),
            (
                "press",
                true,
                object(
                    json!({"path": {"type": "string"}, "name": {"type": "string"}, "role": {"type": "string"},
                           "expect_name": {"type": "string"}, "action": {"type": "string"}}),
                    &[],
                    true,
                ),
            ),
            (
                "set_text",
                true,
                object(
                    json!({"path": {"type": "string"}, "name": {"type": "string"}, "role": {"type": "string"},
                           "text": {"type": "string"}, "expect_name": {"type": "string"}}),
                    &["text"],
                    true,
                ),
            ),
            (
                "ui_elements",
                false,
                object(
                    json!({"max_depth": {"type": "integer", "minimum": 1, "maximum": 50},
                           "max_elements": {"type": "integer", "minimum": 1, "maximum": 5000},
                           "name": {"type": "string"}, "role": {"type": "string"},
                           "interactive": {"type": "boolean"}}),
                    &[],
                    true,
                ),
            ),
            ("look_begin", false, object(json!({}), &[], false)),
            (
                "look",
                false,
                object(
                    json!({"mode": {"enum": ["auto", "window", "screen", "region"]}, "region": region,
                           "settle_max_ms": {"type": "integer", "minimum": 0, "maximum": 600000}}),
                    &[],
                    false,
                ),
            ),
        ],
    )
}

/// The browser plugin's verbs, with the schemas' shape of the built-in ones.
fn browser() -> Arc<PluginSpec> {
    use serde_json::{Value, json};
    let object = |props: Value, required: &[&str]| {
        let mut s = json!({"type": "object", "properties": props, "additionalProperties": false});
        if !required.is_empty() {
            s["required"] = json!(required);
        }
        s
    };
    let tab = json!({"type": "integer", "minimum": 1});
    let point = json!({"type": "array", "items": {"type": "number", "minimum": 0}, "minItems": 2, "maxItems": 2});
    spec(
        "browser",
        true,
        vec![
            ("tabs_context", false, object(json!({}), &[])),
            (
                "tabs_create",
                true,
                object(json!({"url": {"type": "string"}}), &[]),
            ),
            (
                "tabs_close",
                true,
                object(json!({"tabId": tab}), &["tabId"]),
            ),
            (
                "navigate",
                true,
                object(
                    json!({"tabId": tab, "url": {"type": "string", "minLength": 1}}),
                    &["tabId", "url"],
                ),
            ),
            (
                "computer",
                true,
                object(
                    json!({"tabId": tab, "action": {"type": "string"}, "coordinate": point,
                           "start_coordinate": point, "ref": {"type": "string"}, "text": {"type": "string"},
                           "modifiers": {"type": "string"}, "scroll_direction": {"type": "string"},
                           "scroll_amount": {"type": "integer"}, "duration": {"type": "number"}}),
                    &["tabId", "action"],
                ),
            ),
            (
                "read_page",
                false,
                object(
                    json!({"tabId": tab, "filter": {"type": "string"}}),
                    &["tabId"],
                ),
            ),
            (
                "find",
                false,
                object(
                    json!({"tabId": tab, "query": {"type": "string"}}),
                    &["tabId", "query"],
                ),
            ),
            (
                "get_page_text",
                false,
                object(json!({"tabId": tab}), &["tabId"]),
            ),
            (
                "javascript_tool",
                true,
                object(
                    json!({"tabId": tab, "text": {"type": "string", "minLength": 1}, "action": {"type": "string"}}),
                    &["tabId", "text"],
                ),
            ),
            (
                "wait_for_page",
                false,
                object(
                    json!({"tabId": tab, "condition": {"enum": ["appears", "gone", "url_matches"]},
                           "by": {"enum": ["text", "regex", "role", "aria_label", "selector"]},
                           "pattern": {"type": "string", "minLength": 1}, "scope": {"type": "string"},
                           "case_sensitive": {"type": "boolean"}, "regex": {"type": "boolean"},
                           "timeout_ms": {"type": "integer", "minimum": 0, "maximum": 60000},
                           "interval_ms": {"type": "integer", "minimum": 50, "maximum": 5000}}),
                    &["tabId", "condition", "pattern"],
                ),
            ),
        ],
    )
}

/// The desktop and browser plugins with `testkit`, for the desktop dialects.
pub(crate) fn desktop_catalog() -> Catalog {
    let testkit = catalog().plugins().cloned().collect::<Vec<_>>();
    Catalog::new(testkit.into_iter().chain([desktop(), browser()]), [])
}
