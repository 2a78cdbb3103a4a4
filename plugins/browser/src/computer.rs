//! `computer`: mouse, keyboard, scrolling, screenshots and waits, sent as W3C
//! input actions (trusted events, as a person's would be).

use serde_json::{Value, json};

use crate::args::{Args, BrowserArgs};
use crate::browser::Browser;
use crate::error::{Result, invalid};
use crate::keys;
use crate::page::{self, Located};
use stephost_plugin::Output;

/// Longest `wait`, in seconds.
pub(crate) const MAX_WAIT_S: f64 = 30.0;
/// Pixels per `scroll_amount` tick.
const SCROLL_TICK: i64 = 100;

/// Runs one `computer` action.
pub(crate) fn run(browser: &mut Browser, args: &Args) -> Result<Output> {
    let tab = args.tab()?;
    let action = args.str("action")?;
    let value = match action {
        "screenshot" => return crate::screenshot::run(browser, args, tab),
        "wait" => {
            let seconds = args
                .opt_number("duration", f64::MIN..=f64::MAX)?
                .unwrap_or(1.0);
            if !(0.0..=MAX_WAIT_S).contains(&seconds) {
                return Err(invalid(
                    "duration",
                    format!("duration must be between 0 and {MAX_WAIT_S} seconds"),
                ));
            }
            let ns = (seconds * 1e9) as u64;
            crate::clock::sleep_ns(ns);
            json!({ "action": "wait", "tabId": tab, "waited_s": seconds })
        }
        "left_click" | "right_click" | "double_click" | "triple_click" => {
            let (x, y, target) = target(browser, args, tab, true)?;
            let (button, count) = match action {
                "right_click" => (2, 1),
                "double_click" => (0, 2),
                "triple_click" => (0, 3),
                _ => (0, 1),
            };
            let mut pointer = vec![move_to(x, y)];
            for _ in 0..count {
                pointer.push(json!({"type": "pointerDown", "button": button}));
                pointer.push(json!({"type": "pointerUp", "button": button}));
            }
            let mods = modifiers(args)?;
            let what = format!("{} at ({x}, {y})", action.replace('_', " "));
            browser.actions(tab, &what, with_modifiers(pointer, &mods))?;
            done(action, tab, x, y, target)
        }
        "hover" => {
            let (x, y, target) = target(browser, args, tab, false)?;
            browser.actions(
                tab,
                &format!("hovering at ({x}, {y})"),
                json!([mouse(vec![move_to(x, y)])]),
            )?;
            done(action, tab, x, y, target)
        }
        "left_click_drag" => {
            let (x0, y0) = drag_end(
                browser,
                args,
                tab,
                ["start_ref", "start_find", "start_coordinate"],
            )?;
            let (x1, y1) = drag_end(browser, args, tab, ["ref", "find", "coordinate"])?;
            let pointer = vec![
                move_to(x0, y0),
                json!({"type": "pointerDown", "button": 0}),
                // Intermediate moves: drag code often waits for movement past a
                // threshold before it starts.
                json!({"type": "pointerMove", "duration": 100, "x": (x0 + x1) / 2, "y": (y0 + y1) / 2, "origin": "viewport"}),
                json!({"type": "pointerMove", "duration": 100, "x": x1, "y": y1, "origin": "viewport"}),
                json!({"type": "pointerUp", "button": 0}),
            ];
            let mods = modifiers(args)?;
            browser.actions(
                tab,
                &format!("dragging from ({x0}, {y0}) to ({x1}, {y1})"),
                with_modifiers(pointer, &mods),
            )?;
            json!({"action": action, "tabId": tab, "from": [x0, y0], "to": [x1, y1]})
        }
        "type" => {
            let text = args.str("text")?;
            // Into a named element: click it first, as a person puts the caret there.
            let into = match args.target("ref", "find")? {
                Some(named) => {
                    let located = page::point(browser, tab, named, true)?;
                    let (x, y) = (located.x, located.y);
                    browser.actions(
                        tab,
                        &format!("clicking at ({x}, {y}) to type"),
                        json!([mouse(vec![
                            move_to(x, y),
                            json!({"type": "pointerDown", "button": 0}),
                            json!({"type": "pointerUp", "button": 0}),
                        ])]),
                    )?;
                    Some(located)
                }
                None => None,
            };
            // The text field that takes the keys, noted in the page so that
            // what it holds once the page settled can be checked.
            let field = page::call(
                browser,
                tab,
                "type_begin",
                "noting the focused field",
                false,
                json!({}),
            )
            .ok()
            .and_then(|r| r.get("field").and_then(Value::as_bool))
                == Some(true);
            browser.actions(
                tab,
                "typing",
                json!([{"type": "key", "id": "keyboard", "actions": keys::text_actions(text)}]),
            )?;
            let mut value =
                json!({"action": "type", "tabId": tab, "typed_chars": text.chars().count()});
            if let Some(located) = into {
                if let Some(reference) = located.reference {
                    value["ref"] = json!(reference);
                }
                value["element"] = json!(located.element);
            }
            if field {
                typed_kept(browser, tab, text, &mut value)?;
            }
            value
        }
        "key" => {
            let text = args.str("text")?;
            let actions = keys::combo_actions(text).map_err(|m| invalid("text", m))?;
            browser.actions(
                tab,
                &format!("pressing {text}"),
                json!([{"type": "key", "id": "keyboard", "actions": actions}]),
            )?;
            json!({"action": "key", "tabId": tab, "keys": text})
        }
        "scroll" => return scroll(browser, args, tab),
        other => {
            return Err(invalid(
                "action",
                format!(
                    "unknown action `{other}` (left_click, right_click, double_click, triple_click, hover, left_click_drag, type, key, scroll, screenshot, wait)"
                ),
            ));
        }
    };
    let mut value = value;
    if let Some(text) = browser.opened_dialog.take() {
        value["dialog_opened"] = json!({
            "text": text,
            "note": "a dialog is open in this tab; answer it with the dialog tool (accept or dismiss) before acting on the tab again",
        });
    }
    Ok(Output::new(value))
}

/// Checks, once the page settled after `type`, that the field the keys went
/// into holds the text (`type_check` in `page.js`: as typed, or the same
/// letters and digits through an input mask, or cut at maxlength), adding its
/// value to `value`; a field that reverted or rewrote it fails `world-moved`
/// (the keys were sent) naming what it shows. A field that could not be read
/// back (a navigation, the focus moved on) is left unchecked.
fn typed_kept(browser: &mut Browser, tab: u32, text: &str, value: &mut Value) -> Result<()> {
    let Ok(check) = page::call(
        browser,
        tab,
        "type_check",
        "reading the field back",
        false,
        json!({ "text": text }),
    ) else {
        return Ok(());
    };
    if check.get("checked").and_then(Value::as_bool) != Some(true) {
        return Ok(());
    }
    let element = page::what(&check);
    let shows = check.get("what").and_then(|w| w.get("value")).cloned();
    if check.get("keeps").and_then(Value::as_bool) == Some(true) {
        if value.get("element").is_none() {
            value["element"] = json!(element);
        }
        if let Some(shows) = shows {
            value["value"] = shows;
        }
        if check.get("taken").and_then(Value::as_bool) == Some(true) {
            value["note"] = json!(
                "the field does not hold the typed text; the page shows it elsewhere (the app took it)"
            );
        }
        return Ok(());
    }
    let secret = check.get("secret").and_then(Value::as_bool) == Some(true);
    let typed = if secret {
        format!("{} characters", text.chars().count())
    } else {
        format!("{text:?}")
    };
    let shows = shows.map_or_else(|| "something else".to_owned(), |v| v.to_string());
    let how = if check.get("reverted").and_then(Value::as_bool) == Some(true) {
        "the app put back what it held before"
    } else {
        "the app rewrote it"
    };
    Err(crate::error::fail(
        "world-moved",
        format!(
            "{element} did not keep the typed {typed}: once the page settled it shows {shows} \
             ({how}). read_page or a screenshot shows what it expects"
        ),
        true,
    ))
}

/// The point to act on: `coordinate`, or the centre of the element `ref` or
/// `find` names once it is actionable (`enabled`: a click also waits for the
/// element to be enabled); with the element's ref and description.
fn target(
    browser: &mut Browser,
    args: &Args,
    tab: u32,
    enabled: bool,
) -> Result<(i64, i64, Option<Located>)> {
    if let Some(named) = args.target("ref", "find")? {
        let located = page::point(browser, tab, named, enabled)?;
        return Ok((located.x, located.y, Some(located)));
    }
    match args.point("coordinate")? {
        Some((x, y)) => Ok((x, y, None)),
        None => Err(invalid(
            "coordinate",
            "this action needs coordinate [x, y] (from a screenshot), ref (from read_page or \
             find) or find (a description, \"Save button\")",
        )),
    }
}

/// One end of a drag: the centre of the element in `ref_field` or
/// `find_field` (actionable), or the point in `point_field`.
fn drag_end(
    browser: &mut Browser,
    args: &Args,
    tab: u32,
    [ref_field, find_field, point_field]: [&str; 3],
) -> Result<(i64, i64)> {
    if let Some(named) = args.target(ref_field, find_field)? {
        let located = page::point(browser, tab, named, false)?;
        return Ok((located.x, located.y));
    }
    args.point(point_field)?.ok_or_else(|| {
        invalid(
            point_field,
            "left_click_drag needs where to start (start_ref, start_find or start_coordinate \
             [x, y]) and where to drop (ref, find or coordinate [x, y])",
        )
    })
}

fn done(action: &str, tab: u32, x: i64, y: i64, target: Option<Located>) -> Value {
    let mut value = json!({"action": action, "tabId": tab, "x": x, "y": y});
    if let Some(located) = target {
        if let Some(reference) = located.reference {
            value["ref"] = json!(reference);
        }
        value["element"] = json!(located.element);
    }
    value
}

fn move_to(x: i64, y: i64) -> Value {
    json!({"type": "pointerMove", "duration": 0, "x": x, "y": y, "origin": "viewport"})
}

fn mouse(actions: Vec<Value>) -> Value {
    json!({"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": actions})
}

fn modifiers(args: &Args) -> Result<Vec<String>> {
    match args.opt_str("modifiers")? {
        Some(text) => keys::modifiers(text).map_err(|m| invalid("modifiers", m)),
        None => Ok(Vec::new()),
    }
}

/// The pointer actions, with `mods` held down around them. Sources advance
/// tick by tick together, so each side pauses while the other acts.
fn with_modifiers(pointer: Vec<Value>, mods: &[String]) -> Value {
    if mods.is_empty() {
        return json!([mouse(pointer)]);
    }
    let pause = json!({"type": "pause", "duration": 0});
    let mut keyboard = Vec::new();
    let mut mouse_side = Vec::new();
    for m in mods {
        keyboard.push(json!({"type": "keyDown", "value": m}));
        mouse_side.push(pause.clone());
    }
    for action in pointer {
        keyboard.push(pause.clone());
        mouse_side.push(action);
    }
    for m in mods.iter().rev() {
        keyboard.push(json!({"type": "keyUp", "value": m}));
        mouse_side.push(pause.clone());
    }
    json!([{"type": "key", "id": "keyboard", "actions": keyboard}, mouse(mouse_side)])
}

fn scroll(browser: &mut Browser, args: &Args, tab: u32) -> Result<Output> {
    let direction = args.opt_str("scroll_direction")?.unwrap_or("down");
    let amount = args
        .opt_int("scroll_amount", i64::MIN..=i64::MAX)?
        .unwrap_or(3);
    if let Some(named) = args.target("ref", "find")?
        && args.point("coordinate")?.is_none()
        && args.opt_str("scroll_direction")?.is_none()
    {
        // An element alone: bring it into view.
        let value = page::scroll_to(browser, tab, named)?;
        return Ok(Output::new(value));
    }
    let (dx, dy) = match direction {
        "up" => (0, -amount * SCROLL_TICK),
        "down" => (0, amount * SCROLL_TICK),
        "left" => (-amount * SCROLL_TICK, 0),
        "right" => (amount * SCROLL_TICK, 0),
        other => {
            return Err(invalid(
                "scroll_direction",
                format!("unknown direction `{other}` (up, down, left, right)"),
            ));
        }
    };
    let (x, y) = match args.point("coordinate")? {
        Some(point) => point,
        None => {
            let info = page::call(
                browser,
                tab,
                "info",
                "reading the viewport",
                false,
                json!({}),
            )?;
            let w = info.get("width").and_then(Value::as_i64).unwrap_or(800);
            let h = info.get("height").and_then(Value::as_i64).unwrap_or(600);
            (w / 2, h / 2)
        }
    };
    let wheel = json!([{"type": "wheel", "id": "wheel", "actions": [
        {"type": "scroll", "x": x, "y": y, "deltaX": dx, "deltaY": dy, "duration": 0, "origin": "viewport"}
    ]}]);
    browser.actions(tab, &format!("scrolling {direction} at ({x}, {y})"), wheel)?;
    Ok(Output::new(
        json!({"action": "scroll", "tabId": tab, "x": x, "y": y, "direction": direction, "amount": amount}),
    ))
}
