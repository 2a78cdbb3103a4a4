//! Calls into the page library (`page.js`): refs, the page tree, find, form
//! input, text. One WebDriver "execute script" round trip each.

use serde_json::{Value, json};

use crate::browser::Browser;
use crate::error::{Result, fail, failed, invalid, not_found, world_moved};

/// The page library, sent with every call (a few KiB on loopback).
const PAGE_JS: &str = include_str!("page.js");

/// Runs `op` in `tab`; a ref that no longer resolves becomes `world-moved`.
pub(crate) fn call(
    browser: &mut Browser,
    tab: u32,
    op: &str,
    what: &str,
    acts: bool,
    mut args: Value,
) -> Result<Value> {
    if let Some(map) = args.as_object_mut() {
        map.insert("start".into(), json!(browser.next_ref));
    }
    let result = browser.script(tab, what, acts, PAGE_JS, json!([op, args]))?;
    if let Some(next) = result.get("next").and_then(Value::as_u64) {
        browser.next_ref = browser.next_ref.max(next);
    }
    let status = result
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("bad-answer");
    let reference = args
        .get("ref")
        .or_else(|| args.get("ref_id"))
        .and_then(Value::as_str)
        .unwrap_or("the ref");
    match status {
        "ok" => Ok(result),
        "unknown" => Err(world_moved(format!(
            "{reference} is not on the page in tab {tab}: refs last until the page navigates or \
             reloads, and this one was read on another page (or in another tab). Call read_page or \
             find again for fresh refs"
        ))),
        "detached" => Err(world_moved(format!(
            "{reference} has left the page in tab {tab} (the element was removed); call read_page \
             or find again"
        ))),
        _ => Ok(result),
    }
}

/// A short description of the element in a page-library answer.
pub(crate) fn what(result: &Value) -> String {
    let Some(d) = result.get("what") else {
        return "the element".into();
    };
    let role = d.get("role").and_then(Value::as_str).unwrap_or("element");
    let reference = d.get("ref").and_then(Value::as_str).unwrap_or("");
    match d
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        Some(name) => format!("{role} {name:?} [{reference}]"),
        None => format!("{role} [{reference}]"),
    }
}

/// Where to click `reference`: its centre, scrolled into view, checked to be
/// the element that a click there would hit.
pub(crate) fn point(browser: &mut Browser, tab: u32, reference: &str) -> Result<(i64, i64)> {
    let result = call(
        browser,
        tab,
        "point",
        &format!("locating {reference}"),
        false,
        json!({ "ref": reference }),
    )?;
    let status = result.get("status").and_then(Value::as_str).unwrap_or("");
    let target = what(&result);
    match status {
        "ok" => {
            let x = result.get("x").and_then(Value::as_i64);
            let y = result.get("y").and_then(Value::as_i64);
            match (x, y) {
                (Some(x), Some(y)) => Ok((x, y)),
                _ => Err(failed(
                    format!("the page gave no position for {reference}"),
                    false,
                )),
            }
        }
        "hidden" | "offscreen" => Err(not_found(format!(
            "{target} is not visible in tab {tab} (hidden, zero-sized or outside the page), so \
             nothing was clicked"
        ))),
        "covered" => {
            let by = result
                .get("by")
                .map(|b| {
                    let role = b.get("role").and_then(Value::as_str).unwrap_or("element");
                    let name = b.get("name").and_then(Value::as_str).unwrap_or("");
                    let r = b.get("ref").and_then(Value::as_str).unwrap_or("");
                    format!("{role} {name:?} [{r}]")
                })
                .unwrap_or_else(|| "another element".into());
            Err(fail(
                "world-moved",
                format!(
                    "{target} is covered by {by} at its centre in tab {tab}; nothing was clicked. \
                     Close or dismiss what covers it, or take a screenshot"
                ),
                false,
            ))
        }
        other => Err(failed(
            format!("locating {reference}: unexpected answer {other}"),
            false,
        )),
    }
}

/// Scrolls `reference` into view.
pub(crate) fn scroll_to(browser: &mut Browser, tab: u32, reference: &str) -> Result<Value> {
    let result = call(
        browser,
        tab,
        "scroll_to",
        &format!("scrolling to {reference}"),
        true,
        json!({ "ref": reference }),
    )?;
    Ok(json!({ "scrolled_to": what(&result) }))
}

/// `form_input`: sets a field, select or checkbox.
pub(crate) fn form_input(
    browser: &mut Browser,
    tab: u32,
    reference: &str,
    value: &Value,
) -> Result<Value> {
    let result = call(
        browser,
        tab,
        "form_input",
        &format!("setting {reference}"),
        true,
        json!({ "ref": reference, "value": value }),
    )?;
    let status = result.get("status").and_then(Value::as_str).unwrap_or("");
    let target = what(&result);
    match status {
        "ok" => {
            let d = result.get("what").cloned().unwrap_or(Value::Null);
            let mut out = json!({ "tabId": tab, "ref": reference, "element": target });
            if let Some(v) = d.get("value") {
                out["value"] = v.clone();
            }
            if let Some(c) = d.get("checked") {
                out["checked"] = c.clone();
            }
            Ok(out)
        }
        "disabled" => Err(not_found(format!(
            "{target} is disabled; nothing was changed"
        ))),
        "no-option" => {
            let options = result.get("options").cloned().unwrap_or(Value::Null);
            Err(invalid(
                "value",
                format!("{target} has no option {value}; its options are {options}"),
            ))
        }
        "unsupported" => Err(fail(
            "unsupported",
            format!("{target} is a file input, which form_input cannot fill"),
            false,
        )),
        "not-a-field" => Err(invalid(
            "ref",
            format!(
                "{target} is not a text field, select, checkbox or radio button; click it with \
                 computer instead"
            ),
        )),
        other => Err(failed(
            format!("setting {reference}: unexpected answer {other}"),
            true,
        )),
    }
}
