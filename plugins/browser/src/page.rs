//! Calls into the page library (`page.js`): refs, the page tree, find, form
//! input, text. One WebDriver "execute script" round trip each.

use serde_json::{Value, json};

use crate::browser::Browser;
use stephost_plugin::Failure;

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
    args: Value,
) -> Result<Value> {
    run(browser, tab, op, what, acts, args, false)
}

/// Like [`call`] for the operations that wait in the page (`point`, `ready`).
fn call_async(browser: &mut Browser, tab: u32, op: &str, what: &str, args: Value) -> Result<Value> {
    run(browser, tab, op, what, false, args, true)
}

fn run(
    browser: &mut Browser,
    tab: u32,
    op: &str,
    what: &str,
    acts: bool,
    mut args: Value,
    asynchronous: bool,
) -> Result<Value> {
    if let Some(map) = args.as_object_mut() {
        map.insert("start".into(), json!(browser.next_ref));
    }
    let result = if asynchronous {
        browser.script_async(tab, what, acts, PAGE_JS, json!([op, args]))?
    } else {
        browser.script(tab, what, acts, PAGE_JS, json!([op, args]))?
    };
    if let Some(next) = result.get("next").and_then(Value::as_u64) {
        browser.next_ref = browser.next_ref.max(next);
    }
    let status = result
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("bad-answer");
    let (field, reference) = match (args.get("ref"), args.get("ref_id")) {
        (Some(r), _) => ("ref", r.as_str().unwrap_or("the ref")),
        (None, Some(r)) => ("ref_id", r.as_str().unwrap_or("the ref")),
        (None, None) => ("ref", "the ref"),
    };
    match status {
        "ok" => Ok(result),
        "unknown" if !well_formed(reference) => Err(invalid(
            field,
            format!(
                "`{reference}` is not a ref: refs look like ref_12 and come from read_page or find"
            ),
        )),
        "unknown" => Err(world_moved(format!(
            "{reference} is not on the page in tab {tab}: refs last until the page navigates or \
             reloads, and this one was read on another page (or in another tab). Call read_page or \
             find again for fresh refs"
        ))),
        "detached" => Err(world_moved(format!(
            "{reference} has left the page in tab {tab} (the element was removed); call read_page \
             or find again"
        ))),
        "error" => Err(failed(
            format!(
                "{what}: the page script failed: {}",
                result
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message")
            ),
            acts,
        )),
        _ => Ok(result),
    }
}

/// `ref_` and a number: what the page library hands out.
fn well_formed(reference: &str) -> bool {
    reference
        .strip_prefix("ref_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
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

/// How long an action waits for its element to become actionable.
const ACTION_WAIT_NS: u64 = 5_000_000_000;
/// Pauses between looks while waiting, growing to the last (ns).
const ACTION_BACKOFF_NS: [u64; 5] = [0, 20_000_000, 50_000_000, 100_000_000, 200_000_000];

/// Where to press `reference`: its centre, scrolled into view, once a press there
/// would reach it. Like a person, the plugin waits (at most 5 s) while the
/// element is hidden, outside the page, moving, covered or (with `enabled`)
/// disabled, and says which of these it still was if the wait runs out.
pub(crate) fn point(
    browser: &mut Browser,
    tab: u32,
    reference: &str,
    enabled: bool,
) -> Result<(i64, i64)> {
    let started = crate::clock::now_ns();
    let mut round = 0;
    loop {
        let result = call_async(
            browser,
            tab,
            "point",
            &format!("locating {reference}"),
            json!({ "ref": reference, "enabled": enabled }),
        )?;
        let status = result.get("status").and_then(Value::as_str).unwrap_or("");
        if status == "ok" {
            let x = result.get("x").and_then(Value::as_i64);
            let y = result.get("y").and_then(Value::as_i64);
            return match (x, y) {
                (Some(x), Some(y)) => Ok((x, y)),
                _ => Err(failed(
                    format!("the page gave no position for {reference}"),
                    false,
                )),
            };
        }
        let elapsed = crate::clock::now_ns().saturating_sub(started);
        let waiting = matches!(
            status,
            "hidden" | "offscreen" | "covered" | "disabled" | "moving"
        );
        if !waiting || elapsed >= ACTION_WAIT_NS {
            return Err(not_actionable(&result, status, reference, tab, elapsed));
        }
        round += 1;
        let pause =
            ACTION_BACKOFF_NS[round.min(ACTION_BACKOFF_NS.len() - 1)].min(ACTION_WAIT_NS - elapsed);
        crate::clock::sleep_ns(pause);
    }
}

/// Why `reference` could not be pressed, after waiting `elapsed` ns.
fn not_actionable(
    result: &Value,
    status: &str,
    reference: &str,
    tab: u32,
    elapsed: u64,
) -> Failure {
    let target = what(result);
    let waited = if elapsed > 0 {
        format!(" (waited {} ms)", elapsed / 1_000_000)
    } else {
        String::new()
    };
    match status {
        "hidden" | "offscreen" => not_found(format!(
            "{target} is not visible in tab {tab} (hidden, zero-sized or outside the page){waited}, \
             so nothing was pressed"
        )),
        "disabled" => fail(
            "not-found",
            format!("{target} is disabled in tab {tab}{waited}; nothing was pressed"),
            false,
        ),
        "moving" => fail(
            "world-moved",
            format!(
                "{target} kept moving (an animation) in tab {tab}{waited}; nothing was pressed"
            ),
            false,
        ),
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
            fail(
                "world-moved",
                format!(
                    "{target} is covered by {by} at its centre in tab {tab}{waited}; nothing was \
                     pressed. Close or dismiss what covers it, or take a screenshot"
                ),
                false,
            )
        }
        other => failed(
            format!("locating {reference}: unexpected answer {other}"),
            false,
        ),
    }
}

/// Waits briefly for a tab whose page is still loading (see `ready` in
/// `page.js`); answers the page's age in ms. Errors are left to the call that
/// follows, which reports them in its own terms.
pub(crate) fn ready(browser: &mut Browser, tab: u32) -> Option<u64> {
    call_async(
        browser,
        tab,
        "ready",
        "waiting for the page to load",
        json!({ "max_ms": READY_WAIT_MS }),
    )
    .ok()
    .and_then(|r| r.get("age_ms").and_then(Value::as_u64))
}

/// Longest wait of [`ready`], in ms.
const READY_WAIT_MS: u64 = 2_000;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_page_library_spelling_is_a_ref() {
        assert!(well_formed("ref_1"));
        assert!(well_formed("ref_12345"));
        for bad in ["", "ref_", "Save", "ref_12a", "REF_1", "ref-1", " ref_1"] {
            assert!(!well_formed(bad), "{bad:?}");
        }
    }
}
