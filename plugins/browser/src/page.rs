//! Calls into the page library (`page.js`): refs, the page tree, find, form
//! input, text. One WebDriver "execute script" round trip each.

use serde_json::{Value, json};

use crate::browser::Browser;
use stephost_plugin::Failure;

use crate::error::{Result, fail, failed, has_code, invalid, not_found, world_moved};

/// The page library, sent with every call (a few KiB on loopback).
// accname.js first: it defines ACC, the names and roles page.js reports.
const PAGE_JS: &str = concat!(include_str!("accname.js"), include_str!("page.js"));

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
    args: Value,
    asynchronous: bool,
) -> Result<Value> {
    let op = crate::frames::Op {
        name: op,
        what,
        acts,
        asynchronous,
    };
    // A ref read in a cross-origin frame is answered in that frame (frames.rs).
    match crate::frames::route_for(browser, tab, &args) {
        Some(path) => crate::frames::run(browser, tab, &path, op, args),
        None => run_here(browser, tab, op, args),
    }
}

/// Runs `op` in the document WebDriver addresses for `tab`: the top-level
/// one, or the frame `frames.rs` switched to.
pub(crate) fn run_here(
    browser: &mut Browser,
    tab: u32,
    op: crate::frames::Op<'_>,
    mut args: Value,
) -> Result<Value> {
    let crate::frames::Op {
        name: op,
        what,
        acts,
        asynchronous,
    } = op;
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

/// The element an action names: a ref an agent read, or a description the
/// page library resolves at the moment of acting (as `find` would, best match).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target<'a> {
    Ref(&'a str),
    Find(&'a str),
}

impl Target<'_> {
    /// The page library's arguments naming this element.
    fn args(self) -> Value {
        match self {
            Target::Ref(r) => json!({ "ref": r }),
            Target::Find(q) => json!({ "find": q }),
        }
    }

    /// The input field that named the element.
    fn field(self) -> &'static str {
        match self {
            Target::Ref(_) => "ref",
            Target::Find(_) => "find",
        }
    }

    /// How the element is named in messages: the ref, or the quoted description.
    fn label(self) -> String {
        match self {
            Target::Ref(r) => r.to_owned(),
            Target::Find(q) => format!("{q:?}"),
        }
    }
}

/// An element located for an action: where to press it, and which element
/// it is (its ref, and a short description for the report).
#[derive(Debug)]
pub(crate) struct Located {
    pub(crate) x: i64,
    pub(crate) y: i64,
    pub(crate) reference: Option<String>,
    pub(crate) element: String,
}

/// How long an action waits for its element to become actionable.
const ACTION_WAIT_NS: u64 = 5_000_000_000;
/// Pauses between looks while waiting, growing to the last (ns).
const ACTION_BACKOFF_NS: [u64; 5] = [0, 20_000_000, 50_000_000, 100_000_000, 200_000_000];

/// Where to press `target`: its centre, scrolled into view, once a press there
/// would reach it. Like a person, the plugin waits (at most 5 s) while the
/// element is hidden, outside the page, moving, covered, (with `enabled`)
/// disabled or, for a description, not there yet, and says which of these it
/// still was if the wait runs out.
pub(crate) fn point(
    browser: &mut Browser,
    tab: u32,
    target: Target<'_>,
    enabled: bool,
) -> Result<Located> {
    let label = target.label();
    let mut args = target.args();
    args["enabled"] = json!(enabled);
    let result = waiting(browser, tab, &label, |browser| {
        call_async(
            browser,
            tab,
            "point",
            &format!("locating {label}"),
            args.clone(),
        )
    })?;
    let x = result.get("x").and_then(Value::as_i64);
    let y = result.get("y").and_then(Value::as_i64);
    match (x, y) {
        (Some(x), Some(y)) => Ok(Located {
            x,
            y,
            reference: reference_in(&result),
            element: what(&result),
        }),
        _ => Err(failed(
            format!("the page gave no position for {label}"),
            false,
        )),
    }
}

/// The ref of the element a page-library answer describes.
fn reference_in(result: &Value) -> Option<String> {
    result
        .get("what")
        .and_then(|w| w.get("ref"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Asks `look` until its answer is `ok`, waiting (at most 5 s, growing pauses)
/// while the answer says the element may yet become actionable; any other
/// answer, or the end of the wait, is the failure it describes.
fn waiting(
    browser: &mut Browser,
    tab: u32,
    label: &str,
    mut look: impl FnMut(&mut Browser) -> Result<Value>,
) -> Result<Value> {
    let started = crate::clock::now_ns();
    let mut round = 0;
    loop {
        let result = look(browser)?;
        let status = result.get("status").and_then(Value::as_str).unwrap_or("");
        if status == "ok" {
            return Ok(result);
        }
        let elapsed = crate::clock::now_ns().saturating_sub(started);
        // A description that fits nothing yet, or several elements equally,
        // may fit one once the page has rendered what it is still loading.
        let waiting = matches!(
            status,
            "hidden" | "offscreen" | "covered" | "disabled" | "moving" | "no-match" | "ambiguous"
        );
        if !waiting || elapsed >= ACTION_WAIT_NS {
            return Err(not_actionable(&result, status, label, tab, elapsed));
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
        "no-match" => {
            let near = candidates(result.get("near"));
            let near = if near.is_empty() {
                String::new()
            } else {
                format!("; the nearest partial matches: {near}")
            };
            not_found(format!(
                "nothing in tab {tab} matches every word of {reference}{waited}, so nothing was \
                 done{near}. Describe it by its visible name or label and kind (\"Save button\"), \
                 or use find or read_page for a ref"
            ))
        }
        "ambiguous" => Failure::invalid_input(format!(
            "{reference} fits several elements in tab {tab} equally well{waited}: {}; nothing was done. \
             Add words that tell them apart (its text, its row or section), or act by ref",
            candidates(result.get("matches"))
        ))
        .with_field("find"),
        "unknown" | "detached" => world_moved(format!(
            "{reference} is not on the page in tab {tab} (read on another page, or the element \
             went); call read_page or find again"
        )),
        other => failed(
            format!("locating {reference}: unexpected answer {other}"),
            false,
        ),
    }
}

/// Find matches as a short list for a message: `button "Save" [ref_3]`, ….
fn candidates(matches: Option<&Value>) -> String {
    matches
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .map(|m| {
                    let role = m.get("role").and_then(Value::as_str).unwrap_or("element");
                    let r = m.get("ref").and_then(Value::as_str).unwrap_or("");
                    let name = m
                        .get("name")
                        .and_then(Value::as_str)
                        .filter(|n| !n.is_empty())
                        .or_else(|| m.get("text").and_then(Value::as_str))
                        .or_else(|| m.get("context").and_then(Value::as_str))
                        .unwrap_or("");
                    match m.get("frame").and_then(Value::as_str) {
                        Some(f) => format!("{role} {name:?} [{r}] in frame {f}"),
                        None => format!("{role} {name:?} [{r}]"),
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
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

/// Scrolls `target` into view (a description: once something matches it).
pub(crate) fn scroll_to(browser: &mut Browser, tab: u32, target: Target<'_>) -> Result<Value> {
    let label = target.label();
    let result = waiting(browser, tab, &label, |browser| {
        call(
            browser,
            tab,
            "scroll_to",
            &format!("scrolling to {label}"),
            true,
            target.args(),
        )
    })?;
    let mut value = json!({ "scrolled_to": what(&result) });
    if let Some(r) = reference_in(&result) {
        value["ref"] = json!(r);
    }
    Ok(value)
}

/// What a screenshot of `target` covers (`shot` in the page library), once
/// the element is there and visible (waiting as [`scroll_to`] does); without
/// a target, the whole page's size.
pub(crate) fn shot(browser: &mut Browser, tab: u32, target: Option<Target<'_>>) -> Result<Value> {
    let Some(target) = target else {
        return call(browser, tab, "shot", "measuring the page", false, json!({}));
    };
    let label = target.label();
    waiting(browser, tab, &label, |browser| {
        call(
            browser,
            tab,
            "shot",
            &format!("locating {label}"),
            false,
            target.args(),
        )
    })
}

/// `form_input`: sets a field, select or checkbox.
pub(crate) fn form_input(
    browser: &mut Browser,
    tab: u32,
    field: Target<'_>,
    value: &Value,
) -> Result<Value> {
    let reference = field.label();
    let mut args = field.args();
    args["value"] = value.clone();
    let set = |browser: &mut Browser| {
        call(
            browser,
            tab,
            "form_input",
            &format!("setting {reference}"),
            true,
            args.clone(),
        )
    };
    let result = set(browser)?;
    // A description that matches nothing yet is looked for again, as a click's is.
    let result = match result.get("status").and_then(Value::as_str) {
        Some("no-match" | "ambiguous") => waiting(browser, tab, &reference, |browser| {
            let again = set(browser)?;
            // Only "not there yet" is waited out; the field's own answers are final.
            Ok(match again.get("status").and_then(Value::as_str) {
                Some("no-match" | "ambiguous") => again,
                _ => json!({ "status": "ok", "answer": again }),
            })
        })?
        .get("answer")
        .cloned()
        .unwrap_or(Value::Null),
        _ => result,
    };
    let status = result.get("status").and_then(Value::as_str).unwrap_or("");
    let target = what(&result);
    match status {
        "ok" => {
            let reference = reference_in(&result).unwrap_or(reference);
            // The app answers the events (a controlled field re-renders, a
            // data app reruns): read the value back once that is done.
            browser.after_input(tab);
            read_back(browser, tab, &reference, value, &result)
        }
        "slider" => {
            let reference = reference_in(&result).unwrap_or(reference);
            crate::slider::set(browser, tab, &reference, value, &result)
        }
        "bad-format" => {
            let format = result.get("format").and_then(Value::as_str).unwrap_or("");
            Err(invalid(
                "value",
                format!("{target} takes {format}; {value} is not one, so nothing was changed"),
            ))
        }
        "disabled" => Err(not_found(format!(
            "{target} is disabled; nothing was changed"
        ))),
        "readonly" => Err(invalid(
            field.field(),
            format!(
                "{target} is read-only: the page sets it from a widget of its own, so nothing \
                 was changed; set that widget instead (find it with read_page; a slider takes \
                 form_input, anything else computer)"
            ),
        )),
        "ambiguous" => Err(not_actionable(&result, status, &reference, tab, 0)),
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
            field.field(),
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

/// What `form_input` answers once the page settled: the field and the value
/// it holds now (`set`: the answer of the call that set it). When the field no
/// longer holds `asked` in any form the field or app legitimately makes of it
/// (see `keeps` in `page.js`), the app reverted or rewrote it: a `world-moved`
/// failure (input was sent) saying what it shows, since reporting the value as
/// set would be reporting something that did not happen.
pub(crate) fn read_back(
    browser: &mut Browser,
    tab: u32,
    reference: &str,
    asked: &Value,
    set: &Value,
) -> Result<Value> {
    let answer = call(
        browser,
        tab,
        "kept",
        &format!("reading {reference} back"),
        false,
        json!({ "ref": reference, "value": asked }),
    );
    let answer = match answer {
        Ok(answer) => answer,
        // The app replaced the field as it re-rendered: the set happened,
        // what the new field holds cannot be tied to it.
        Err(f) if has_code(&f, "world-moved") => {
            let mut out = field_value(tab, reference, set);
            out["note"] = json!(
                "the page replaced the field after the input, so its value was not read back; \
                 read_page shows what it holds"
            );
            return Ok(out);
        }
        Err(f) => return Err(f),
    };
    let out = field_value(tab, reference, &answer);
    if answer.get("keeps").and_then(Value::as_bool) != Some(false) {
        return Ok(out);
    }
    Err(not_kept(&what(&answer), asked, &answer))
}

/// The `form_input` result for a page-library answer describing the field.
fn field_value(tab: u32, reference: &str, answer: &Value) -> Value {
    let d = answer.get("what").cloned().unwrap_or(Value::Null);
    let mut out = json!({ "tabId": tab, "ref": reference, "element": what(answer) });
    if let Some(v) = d.get("value") {
        out["value"] = v.clone();
    }
    if let Some(c) = d.get("checked") {
        out["checked"] = c.clone();
    }
    out
}

/// The failure for a field that does not hold `asked` after the page settled.
pub(crate) fn not_kept(element: &str, asked: &Value, answer: &Value) -> Failure {
    let d = answer.get("what").cloned().unwrap_or(Value::Null);
    let shows = match (d.get("checked").and_then(Value::as_bool), d.get("value")) {
        (Some(true), _) => "it is checked".to_owned(),
        (Some(false), _) => "it is unchecked".to_owned(),
        (None, Some(v)) => format!("it shows {v}"),
        (None, None) => "it shows something else".to_owned(),
    };
    fail(
        "world-moved",
        format!(
            "{element} did not keep {asked}: the value was set and its events fired, but once the \
             page settled {shows}, so the app reverted or rewrote it. Set it as a person would \
             (click it and type, or keys), or read_page to see what the page expects"
        ),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_the_app_did_not_keep_fails_naming_both() {
        let answer = json!({"keeps": false, "what": {"ref": "ref_3", "role": "textbox", "name": "Age", "value": "42"}});
        let f = not_kept(&what(&answer), &json!("abc"), &answer);
        assert!(has_code(&f, "world-moved"), "{f:?}");
        assert!(f.input_fired);
        assert!(
            f.message
                .contains("textbox \"Age\" [ref_3] did not keep \"abc\"")
                && f.message.contains("it shows \"42\""),
            "{}",
            f.message
        );
        let boxed = json!({"keeps": false, "what": {"ref": "ref_4", "role": "checkbox", "name": "Terms", "checked": false}});
        let f = not_kept(&what(&boxed), &json!(true), &boxed);
        assert!(
            f.message.contains("did not keep true") && f.message.contains("it is unchecked"),
            "{}",
            f.message
        );
    }

    #[test]
    fn only_the_page_library_spelling_is_a_ref() {
        assert!(well_formed("ref_1"));
        assert!(well_formed("ref_12345"));
        for bad in ["", "ref_", "Save", "ref_12a", "REF_1", "ref-1", " ref_1"] {
            assert!(!well_formed(bad), "{bad:?}");
        }
    }
}
