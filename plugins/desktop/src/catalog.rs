//! The verbs `describe` returns, with their input schemas.
//!
//! Schemas are built with `json!` from shared pieces so every verb that takes a
//! window (`target`) or a rectangle (`region`) describes it the same way.

use serde_json::{Map, Value, json};
use stephost_plugin::{Handler, Verb};

use crate::{MAX_SLEEP_MS, MAX_WAIT_MS, State, a11y, keyboard, look, pointer};

/// Fields that name a window.
fn target_fields() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "target".into(),
        json!({
            "description": "The window: a title substring (any case), or {title, class, id, exact}.",
            "anyOf": [
                {"type": "string", "minLength": 1},
                {"type": "object", "properties": {
                    "title": {"type": "string"},
                    "class": {"type": "string", "description": "WM_CLASS, e.g. XTerm."},
                    "id": {"type": "integer", "minimum": 1, "description": "From list_windows."},
                    "exact": {"type": "boolean", "description": "Whole-text match."}
                }, "additionalProperties": false}
            ]
        }),
    );
    m.insert(
        "title".into(),
        json!({"type": "string", "description": "= target.title"}),
    );
    m.insert(
        "windowTitle".into(),
        json!({"type": "string", "description": "= title"}),
    );
    m.insert(
        "class".into(),
        json!({"type": "string", "description": "= target.class"}),
    );
    m.insert(
        "exact".into(),
        json!({"type": "boolean", "description": "= target.exact"}),
    );
    m
}

fn region_schema(description: &str) -> Value {
    json!({
        "description": description,
        "anyOf": [
            {"type": "object", "properties": {
                "x": {"type": "integer"}, "y": {"type": "integer"},
                "width": {"type": "integer", "minimum": 1}, "height": {"type": "integer", "minimum": 1}
            }, "required": ["x", "y", "width", "height"], "additionalProperties": false},
            {"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4}
        ]
    })
}

/// A coordinate. Undescribed: each verb's description says what its
/// coordinates are, once.
fn coord() -> Value {
    json!({"type": "integer", "minimum": -100000, "maximum": 100000})
}

fn button() -> Value {
    json!({"enum": ["left", "middle", "right", "back", "forward"], "default": "left"})
}

fn relative() -> Value {
    json!({"type": "boolean", "default": false, "description": "x, y from the target window's top-left corner."})
}

/// An object schema: `fields`, then the target fields when `with_target`.
fn object(fields: Value, required: &[&str], with_target: bool) -> Value {
    let mut props = match fields {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if with_target {
        props.extend(target_fields());
    }
    let mut schema = json!({
        "type": "object",
        "properties": props,
        "additionalProperties": false
    });
    // An empty `required` says nothing, and every character is sent to the model.
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn verb(
    name: &str,
    handler: Handler<State>,
    description: &str,
    acts: bool,
    schema: Value,
) -> Verb<State> {
    Verb::new(name, description, schema, handler).acts_on_world(acts)
}

fn pointer(extra: Value) -> Value {
    let mut base = json!({
        "x": coord(),
        "y": coord(),
        "window_relative": relative(),
    });
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

/// Every verb, in listing order.
pub(crate) fn verbs() -> Vec<Verb<State>> {
    let target_note = "With a target the window is activated first, and the input is refused with \
        world-moved if the window moved, closed, lost focus or got covered since.";
    let click_desc = format!(
        "Click at (x, y) in screen pixels. {target_note} Fails not-found when the target is missing \
         (nothing was clicked)."
    );
    vec![
        verb(
            "list_windows",
            crate::list_windows,
            "List top-level windows, bottom to top: id, title, class, pid, geometry, focused. \
             Optional title/class filter.",
            false,
            object(json!({}), &[], true),
        ),
        verb(
            "focus_window",
            crate::activate,
            "Raise a window and give it the keyboard focus (through the window manager when one runs). \
             Fails not-found when no window matches.",
            true,
            object(json!({}), &[], true),
        ),
        verb(
            "activate",
            crate::activate,
            "Same as focus_window: raise a window and give it the keyboard focus.",
            true,
            object(json!({}), &[], true),
        ),
        verb(
            "click",
            pointer::click,
            &click_desc,
            true,
            object(
                pointer(json!({
                    "button": button(),
                    "count": {"type": "integer", "minimum": 1, "maximum": 3, "default": 1}
                })),
                &["x", "y"],
                true,
            ),
        ),
        verb(
            "double_click",
            pointer::double_click,
            "Double-click the left button at (x, y). Same target rules as click.",
            true,
            object(pointer(json!({})), &["x", "y"], true),
        ),
        verb(
            "right_click",
            pointer::right_click,
            "Click the right button at (x, y). Same target rules as click.",
            true,
            object(pointer(json!({})), &["x", "y"], true),
        ),
        verb(
            "move",
            pointer::move_to,
            "Move the pointer to (x, y).",
            true,
            object(pointer(json!({})), &["x", "y"], true),
        ),
        verb(
            "drag",
            pointer::drag,
            "Press at (from_x, from_y), move to (to_x, to_y), release.",
            true,
            object(
                json!({
                    "from_x": coord(), "from_y": coord(),
                    "to_x": coord(), "to_y": coord(),
                    "button": button(), "window_relative": relative()
                }),
                &["from_x", "from_y", "to_x", "to_y"],
                true,
            ),
        ),
        verb(
            "scroll",
            pointer::scroll,
            "Scroll at (x, y) by wheel notches dy and dx.",
            true,
            object(
                pointer(json!({
                    "dy": {"type": "integer", "minimum": -100, "maximum": 100, "default": 0, "description": "Down notches (< 0: up)."},
                    "dx": {"type": "integer", "minimum": -100, "maximum": 100, "default": 0, "description": "Right notches (< 0: left)."}
                })),
                &["x", "y"],
                true,
            ),
        ),
        verb(
            "type",
            keyboard::type_text,
            &format!(
                "Type text into the target window (or the focused one). Any Unicode character works: \
                 characters missing from the keyboard map are typed through a temporarily remapped key. \
                 \\n presses Return, \\t Tab. {target_note}"
            ),
            true,
            object(
                json!({"text": {"type": "string", "maxLength": 10000}}),
                &["text"],
                true,
            ),
        ),
        verb(
            "key",
            keyboard::key,
            &format!(
                "Press a key combo such as ctrl+shift+t, alt+f4, Return, or several separated by spaces \
                 (\"ctrl+a BackSpace\"). Combos the operator blocked fail with denied and nothing is \
                 sent. {target_note}"
            ),
            true,
            object(
                json!({"combo": {"type": "string", "minLength": 1, "maxLength": 200}}),
                &["combo"],
                true,
            ),
        )
        .checked_by(a11y::check_combo),
        verb(
            "screenshot",
            crate::screenshot,
            "Capture the target window, a region, or the screen, as a PNG image. detail \"text\" \
             describes the window by its accessibility elements instead (no image, far fewer tokens); \
             \"meta\" gives only its title and geometry.",
            false,
            object(
                json!({
                    "region": region_schema("In screen pixels."),
                    "monitor": {"type": "integer", "minimum": 0, "description": "Default: the primary."},
                    "detail": {"enum": ["image", "text", "meta"], "default": "image"}
                }),
                &[],
                true,
            ),
        )
        .checked_by(a11y::check_screenshot),
        verb(
            "wait_for",
            crate::wait_for,
            "Wait for a condition: window_appears / window_gone (target), screen_settles (the screen, \
             a region or a window stops changing), region_changes (anything in the region or window \
             changes, compared with how it looked right before the last pointer or keyboard step), \
             element_appears / element_gone / element_matches (an accessibility element of \
             the window, by element {path, name, role, text}), value_changes (that element's value). \
             Fails with timeout when the time runs out.",
            false,
            wait_schema(),
        )
        .checked_by(a11y::check_wait),
        verb(
            "wait_until",
            crate::wait_for,
            "Same as wait_for.",
            false,
            wait_schema(),
        )
        .checked_by(a11y::check_wait),
        verb(
            "sleep",
            crate::sleep,
            "Pause for ms milliseconds. Prefer wait_for with a condition over a guessed duration.",
            false,
            object(
                json!({"ms": {"type": "integer", "minimum": 0, "maximum": MAX_SLEEP_MS, }}),
                &["ms"],
                false,
            ),
        ),
        verb(
            "ui_elements",
            a11y::ui_elements,
            "List a window's accessibility elements (AT-SPI): path, role, name, value, states, \
             actions, bounds, depth first. Filter by name or role substring, or interactive only. \
             The paths are what press and set_text take. Needs an application that exports its tree \
             (GTK does; Xt and Tk do not).",
            false,
            object(
                json!({
                    "name": {"type": "string", "description": "Name contains (any case)."},
                    "role": {"type": "string", "description": "Role, e.g. push button, text, menu item."},
                    "interactive": {"type": "boolean", "default": false, "description": "Only elements with actions or editable text."},
                    "max_depth": {"type": "integer", "minimum": 0, "maximum": 64, "default": 16},
                    "max_elements": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 400}
                }),
                &[],
                true,
            ),
        )
        .checked_by(a11y::check_bus),
        verb(
            "press",
            a11y::press,
            "Press an accessibility element: by path (from ui_elements; pass the name you saw as \
             expect_name, and a changed tree fails world-moved with nothing pressed), or by name \
             (and role) in the target window. Runs its first action, or the one named by action. \
             Independent of where it is drawn: works on covered windows too.",
            true,
            object(
                json!({
                    "path": {"type": "string", "minLength": 1, "description": "e.g. 0x1a00003/0/2/1"},
                    "expect_name": {"type": "string"},
                    "name": {"type": "string", "description": "Find by name instead of path."},
                    "role": {"type": "string"},
                    "action": {"type": "string", "description": "Default: the element's first action."}
                }),
                &[],
                true,
            ),
        )
        .checked_by(a11y::check_bus),
        verb(
            "set_text",
            a11y::set_text,
            "Replace an accessibility element's text (a text field), by path (with expect_name) or \
             by name (and role) in the target window; a label's name finds the field after it. \
             Sets a numeric value for sliders and spin buttons.",
            true,
            object(
                json!({
                    "path": {"type": "string", "minLength": 1},
                    "text": {"type": "string", "maxLength": 100000},
                    "expect_name": {"type": "string"},
                    "name": {"type": "string"},
                    "role": {"type": "string"}
                }),
                &["text"],
                true,
            ),
        )
        .checked_by(a11y::check_bus),
        verb(
            "look_begin",
            look::begin,
            "Remember what the screen looks like now, for a later look with mode auto (do_steps uses \
             it before its first step).",
            false,
            object(json!({}), &[], false),
        ),
        verb(
            "look",
            look::look,
            "Wait for the screen to settle, then show it: auto = the affected window, only if anything \
             changed since look_begin (and say so when nothing did); window = the last window acted \
             on or the focused one; screen; region.",
            false,
            object(
                json!({
                    "mode": {"enum": ["auto", "window", "screen", "region"], "default": "auto"},
                    "region": region_schema("For mode region."),
                    "settle_max_ms": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS, "default": 2000,
                                      "description": "Longest wait for the screen to stop changing; 0 captures at once."}
                }),
                &[],
                false,
            ),
        ),
    ]
}

fn wait_schema() -> Value {
    object(
        json!({
            "condition": {"enum": [
                "window_appears", "window_gone", "screen_settles", "region_changes",
                "window_exists", "window_closed", "settled", "changed",
                "element_appears", "element_gone", "element_matches", "value_changes"
            ]},
            "element": {
                "type": "object",
                "description": "For element_* and value_changes: which element.",
                "properties": {
                    "path": {"type": "string"},
                    "name": {"type": "string"},
                    "role": {"type": "string"},
                    "text": {"type": "string", "description": "Name or value contains (element_matches)."}
                },
                "additionalProperties": false
            },
            "region": region_schema("To watch (default: the target window, else the screen)."),
            "timeout_ms": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS, "default": 10000},
            "timeout": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_MS / 1000, "description": "timeout_ms in seconds."},
            "threshold": {"type": "number", "minimum": 0, "maximum": 1, "description": "region_changes: share of the area that must change (default: any)."},
            "quiet_ms": {"type": "integer", "minimum": 50, "maximum": 10000, "default": 300, "description": "screen_settles: how long nothing may change."}
        }),
        &["condition"],
        true,
    )
}
