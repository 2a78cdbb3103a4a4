//! `read_console_messages` and `read_network_requests`: what a tab's page
//! logged and requested.
//!
//! The page library's hook (`page.js`, between `HOOK-START` and `HOOK-END`)
//! runs in the page's own realm and keeps, for the life of the document, the
//! last 500 console messages (the five console levels, failed asserts,
//! uncaught errors, unhandled rejections) and the last 500 fetch/XHR requests
//! (method, status, failure). Requests of every other kind come from resource
//! timing, which covers the whole document from its navigation on. A new
//! document starts empty.
//!
//! When capture starts is the hard part. On Chromium the plugin registers the
//! hook for every new document of a tab before the tab's first navigation
//! (DevTools `Page.addScriptToEvaluateOnNewDocument`, the one command of the
//! DevTools passthrough the host's gate lets through for this; see the host's
//! `capabilities/webdriver/vendor.rs`), so it runs before the page's first
//! script. Elsewhere (Firefox, a tab the page opened, the document that was
//! already there) capture starts when the page library first runs in the
//! document: at the latest when `navigate` returns. Every reply says which
//! (`since`), so an empty list never claims more than was watched.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};
use stephost_plugin::{Level, log};

use crate::args::{Args, BrowserArgs};
use crate::browser::Browser;
use crate::error::{Result, has_code, invalid};
use crate::webdriver::Doing;

/// The page library, whose hook part is registered for new documents.
const PAGE_JS: &str = include_str!("page.js");

/// The matches a reply lists unless `limit` says otherwise, and the most.
const DEFAULT_LIMIT: i64 = 100;
const MAX_LIMIT: i64 = 500;
/// How many bytes of JSON the listed messages or requests may take; older
/// matches beyond it are left out, and the reply says how many.
const MAX_REPLY_BYTES: usize = 32_000;
/// What the page keeps per document (the hook's `RING`).
const RING: u64 = 500;

/// chromedriver's DevTools passthrough, under the session.
const CDP_EXECUTE: &str = "/goog/cdp/execute";
const ADD_SCRIPT: &str = "Page.addScriptToEvaluateOnNewDocument";

/// Which tabs have the hook registered for their new documents.
#[derive(Default)]
pub(crate) struct Early {
    registered: BTreeSet<u32>,
    /// Registration is not possible in this browser (Firefox, or a host
    /// whose gate refuses it): not tried again.
    unavailable: bool,
}

impl Early {
    /// Whether `tab`'s documents run the hook before their own scripts, so
    /// the hook's request count covers everything the page started.
    pub(crate) fn hooked_from_start(&self, tab: u32) -> bool {
        self.registered.contains(&tab)
    }
}

/// The hook's text: the template literal between the markers in `page.js`,
/// which holds no escapes or substitutions, so its source is its value;
/// without its comment lines (the whole line a `//` comment: the hook has no
/// multi-line strings), which the registration's size bound need not carry.
fn hook() -> Option<String> {
    let (_, rest) = PAGE_JS.split_once("/* HOOK-START */`")?;
    let (text, _) = rest.split_once("`/* HOOK-END */")?;
    Some(
        text.lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// Has `tab` run the hook at the start of each of its new documents, on
/// Chromium, once per tab. Errors are only logged: the verbs then capture
/// from when the page library first runs, and say so.
pub(crate) fn prepare(browser: &mut Browser, tab: u32) {
    if browser.logs.unavailable || browser.logs.registered.contains(&tab) {
        return;
    }
    match browser.kind() {
        Ok(kind) if kind == "chromium" => {}
        Ok(_) => {
            browser.logs.unavailable = true;
            return;
        }
        Err(_) => return,
    }
    let Some(source) = hook() else {
        browser.logs.unavailable = true;
        return;
    };
    if browser.switch(tab).is_err() {
        return;
    }
    let doing = Doing {
        tab: Some(tab),
        what: "registering the console hook",
        acts: false,
    };
    let body = json!({"cmd": ADD_SCRIPT, "params": {"source": source}});
    match browser.cmd(&doing, "POST", CDP_EXECUTE, Some(body)) {
        Ok(_) => {
            browser.logs.registered.insert(tab);
        }
        // An open dialog blocks the command: the next verb on the tab tries again.
        Err(f) if has_code(&f, "dialog-open") => {}
        Err(f) => {
            log(
                Level::Info,
                &format!("console capture from document start is off: {}", f.message),
            );
            browser.logs.unavailable = true;
        }
    }
}

/// `read_console_messages`.
pub(crate) fn console(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let page_args = json!({
        "kind": "console",
        "pattern": args.opt_str("pattern")?.filter(|p| !p.is_empty()),
        "only_errors": args.boolean("onlyErrors", false)?,
        "limit": args.opt_int("limit", 1..=MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT),
        "clear": args.boolean("clear", false)?,
    });
    let answer = read(browser, tab, page_args, "reading the console")?;
    Ok(shape(tab, &answer, Kind::Console))
}

/// `read_network_requests`.
pub(crate) fn network(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let page_args = json!({
        "kind": "requests",
        "url_pattern": args.opt_str("urlPattern")?.filter(|p| !p.is_empty()),
        "only_errors": args.boolean("onlyErrors", false)?,
        "limit": args.opt_int("limit", 1..=MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT),
        "clear": args.boolean("clear", false)?,
    });
    let answer = read(browser, tab, page_args, "reading the requests")?;
    Ok(shape(tab, &answer, Kind::Requests))
}

fn read(browser: &mut Browser, tab: u32, page_args: Value, what: &str) -> Result<Value> {
    // Registered now, the hook covers the tab's next documents from their start.
    prepare(browser, tab);
    let answer = crate::page::call(browser, tab, "logs", what, false, page_args)?;
    if answer.get("bad").is_some() {
        let message = answer
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("invalid");
        return Err(invalid(
            "pattern",
            format!("`pattern` is not a regular expression: {message}"),
        ));
    }
    Ok(answer)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Console,
    Requests,
}

impl Kind {
    fn list(self) -> &'static str {
        match self {
            Kind::Console => "messages",
            Kind::Requests => "requests",
        }
    }
}

/// The reply: the page library's answer with times as ISO 8601, the list cut
/// to [`MAX_REPLY_BYTES`], and notes saying what is not in it.
fn shape(tab: u32, answer: &Value, kind: Kind) -> Value {
    let url = answer.get("url").and_then(Value::as_str).unwrap_or("");
    let items: Vec<Value> = answer
        .get("items")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(|item| entry(item, url, kind)).collect())
        .unwrap_or_default();
    let matched = answer
        .get("matched")
        .and_then(Value::as_u64)
        .unwrap_or(items.len() as u64);
    let (kept, _) = fit(items, MAX_REPLY_BYTES);
    let shown = kept.len() as u64;
    let dropped = answer.get("dropped").and_then(Value::as_u64).unwrap_or(0);
    let mut out = Map::new();
    out.insert("tabId".into(), json!(tab));
    out.insert("url".into(), json!(url));
    out.insert(kind.list().into(), Value::Array(kept));
    out.insert("matched".into(), json!(matched));
    let mut notes = Vec::new();
    if shown < matched {
        notes.push(format!(
            "the last {shown} of {matched} matching {} are listed; narrow with {} or limit",
            kind.list(),
            match kind {
                Kind::Console => "pattern, onlyErrors",
                Kind::Requests => "urlPattern, onlyErrors",
            }
        ));
    }
    if dropped > 0 {
        out.insert("dropped".into(), json!(dropped));
        notes.push(format!(
            "{dropped} older {} were dropped: the page keeps its last {RING}",
            kind.list()
        ));
    }
    let (since, note) = coverage(answer, kind);
    out.insert("since".into(), json!(since));
    notes.extend(note);
    if !notes.is_empty() {
        out.insert("note".into(), json!(notes.join("; ")));
    }
    Value::Object(out)
}

/// One message or request as listed: `time` in ISO 8601, the document's URL
/// only when the entry's differs (a single-page app that changed its route).
fn entry(item: &Value, page_url: &str, kind: Kind) -> Value {
    let mut out = Map::new();
    let Some(fields) = item.as_object() else {
        return Value::Object(out);
    };
    let order: &[&str] = match kind {
        Kind::Console => &["level", "text", "time", "url", "source", "stack"],
        Kind::Requests => &[
            "method",
            "url",
            "status",
            "type",
            "duration_ms",
            "size",
            "failed",
            "pending",
            "time",
        ],
    };
    for &key in order {
        let Some(value) = fields.get(key) else {
            continue;
        };
        match key {
            "time" => {
                if let Some(ms) = value.as_f64() {
                    out.insert("time".into(), json!(iso(ms)));
                }
            }
            "url" if kind == Kind::Console && value.as_str() == Some(page_url) => {}
            _ if value.is_null() => {}
            _ => {
                out.insert(key.into(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// The newest `items` whose JSON fits `budget` bytes (at least the newest
/// one), oldest first, and how many older ones were left out.
fn fit(items: Vec<Value>, budget: usize) -> (Vec<Value>, usize) {
    let mut used = 0;
    let mut start = items.len();
    while start > 0 {
        let size = items[start - 1].to_string().len() + 1;
        if used + size > budget && start < items.len() {
            break;
        }
        used += size;
        start -= 1;
    }
    let left_out = start;
    (items.into_iter().skip(start).collect(), left_out)
}

/// From when the page was watched (`since`: "document start", or the time
/// capture began) and what that leaves out.
fn coverage(answer: &Value, kind: Kind) -> (String, Option<String>) {
    let hooked = answer
        .get("hooked")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let early = answer
        .get("early")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let since = answer.get("since").and_then(Value::as_f64);
    let origin = answer.get("origin").and_then(Value::as_f64);
    match (hooked, early, since) {
        (true, true, _) => ("document start".into(), None),
        (true, false, Some(since)) => {
            let after = origin.map_or(0.0, |o| (since - o).max(0.0));
            let missing = match kind {
                Kind::Console => "earlier messages were not captured",
                Kind::Requests => {
                    "requests before it are listed from resource timing (finished ones, fetch/XHR without method or failure)"
                }
            };
            (
                iso(since),
                Some(format!(
                    "capture began {} after this page started loading; {missing}",
                    duration(after)
                )),
            )
        }
        _ => (
            "not captured".into(),
            Some(match kind {
                Kind::Console => "the page keeps the capture script out (its Content Security Policy forbids inline scripts): its console cannot be read".into(),
                Kind::Requests => "the page keeps the capture script out (its Content Security Policy forbids inline scripts): only finished requests, from resource timing, without methods or failures".into(),
            }),
        ),
    }
}

/// `1234.5` ms as "1.2 s", under a second as "350 ms".
fn duration(ms: f64) -> String {
    if ms < 1000.0 {
        format!("{} ms", ms.round() as u64)
    } else {
        format!("{:.1} s", ms / 1000.0)
    }
}

/// Epoch milliseconds as ISO 8601 UTC with milliseconds
/// (`2023-11-14T22:13:20.123Z`).
fn iso(epoch_ms: f64) -> String {
    let total = if epoch_ms.is_finite() && epoch_ms > 0.0 {
        epoch_ms.round() as i64
    } else {
        0
    };
    let (days, ms_of_day) = (total.div_euclid(86_400_000), total.rem_euclid(86_400_000));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, ms) = (
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000,
    );
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_is_plain_text_between_its_markers() {
        let text = hook().expect("markers in page.js");
        assert!(text.starts_with("(() => {") && text.trim_end().ends_with("})();"));
        assert!(text.contains("__stephostNet") && text.contains("net.take"));
        // Registered as source, it must read the same as the template literal's
        // value: no escapes, no substitutions.
        assert!(!text.contains('\\'), "a backslash in the hook");
        assert!(!text.contains("${"), "a substitution in the hook");
        assert!(!text.contains('`'));
        // The host's gate reads DevTools bodies of at most 16 KiB
        // (host/runtime/src/capabilities/webdriver/vendor.rs, MAX_CDP_BODY).
        let body = json!({"cmd": ADD_SCRIPT, "params": {"source": text}}).to_string();
        assert!(body.len() < 15 * 1024, "the hook is {} bytes", body.len());
    }

    #[test]
    fn times_read_as_iso_8601() {
        assert_eq!(iso(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_700_000_000_123.4), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso(951_782_400_000.0), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso(f64::NAN), "1970-01-01T00:00:00.000Z");
        assert_eq!(duration(349.6), "350 ms");
        assert_eq!(duration(1234.0), "1.2 s");
    }

    #[test]
    fn the_newest_entries_that_fit_are_kept() {
        let items: Vec<Value> = (0..10)
            .map(|i| json!({"text": "x".repeat(90), "i": i}))
            .collect();
        let one = items[0].to_string().len() + 1;
        let (kept, left_out) = fit(items.clone(), one * 3);
        assert_eq!(left_out, 7);
        assert_eq!(
            kept.iter()
                .map(|v| v["i"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            [7, 8, 9]
        );
        // The newest is kept even when it alone is over budget.
        let (kept, left_out) = fit(items.clone(), 5);
        assert_eq!((kept.len(), left_out), (1, 9));
        assert_eq!(fit(items, usize::MAX).0.len(), 10);
        assert_eq!(fit(Vec::new(), 5), (Vec::new(), 0));
    }

    fn answer(items: Vec<Value>, matched: u64) -> Value {
        json!({
            "status": "ok", "url": "http://127.0.0.1/app", "hooked": true, "early": true,
            "since": 1_700_000_000_000.0, "origin": 1_700_000_000_000.0, "dropped": 0,
            "matched": matched, "items": items,
        })
    }

    #[test]
    fn console_replies_are_bounded_and_say_what_they_leave_out() {
        let message = |i: u64| json!({"level": "log", "text": format!("{i} {}", "y".repeat(1990)), "time": 1_700_000_000_500.0 + i as f64, "url": "http://127.0.0.1/app"});
        let items: Vec<Value> = (0..100).map(message).collect();
        let mut page = answer(items, 3000);
        page["dropped"] = json!(2500);
        let out = shape(1, &page, Kind::Console);
        let listed = out["messages"].as_array().unwrap();
        assert!(
            out.to_string().len() < MAX_REPLY_BYTES + 1000,
            "{}",
            out.to_string().len()
        );
        assert!(listed.len() > 5 && listed.len() < 20, "{}", listed.len());
        // The newest last, with its time in ISO 8601 and no repeated page URL.
        let last = listed.last().unwrap();
        assert!(last["text"].as_str().unwrap().starts_with("99 "));
        assert_eq!(last["time"], "2023-11-14T22:13:20.599Z");
        assert!(last.get("url").is_none());
        assert_eq!(out["matched"], 3000);
        assert_eq!(out["dropped"], 2500);
        assert_eq!(out["since"], "document start");
        let note = out["note"].as_str().unwrap();
        assert!(
            note.contains(&format!(
                "the last {} of 3000 matching messages",
                listed.len()
            )),
            "{note}"
        );
        assert!(note.contains("2500 older messages were dropped"), "{note}");
    }

    #[test]
    fn an_entry_keeps_its_own_url_when_the_route_changed() {
        let item = json!({"level": "error", "text": "Uncaught Error: boom", "time": 0.0, "url": "http://127.0.0.1/app#/cart", "source": "http://127.0.0.1/app.js:3:9", "kind": "exception"});
        let out = entry(&item, "http://127.0.0.1/app", Kind::Console);
        assert_eq!(out["url"], "http://127.0.0.1/app#/cart");
        assert_eq!(out["source"], "http://127.0.0.1/app.js:3:9");
        assert!(out.get("kind").is_none());
        let request = json!({"method": "GET", "url": "http://127.0.0.1/missing", "status": 404, "type": "fetch", "duration_ms": 3, "time": 0.0, "pending": null});
        let out = entry(&request, "http://127.0.0.1/app", Kind::Requests);
        let mut keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            ["duration_ms", "method", "status", "time", "type", "url"]
        );
    }

    #[test]
    fn late_or_missing_capture_is_said_plainly() {
        let mut page = answer(Vec::new(), 0);
        page["early"] = json!(false);
        page["since"] = json!(1_700_000_001_500.0);
        let out = shape(2, &page, Kind::Console);
        assert_eq!(out["since"], "2023-11-14T22:13:21.500Z");
        let note = out["note"].as_str().unwrap();
        assert!(
            note.contains("capture began 1.5 s after this page started loading"),
            "{note}"
        );
        assert!(
            note.contains("earlier messages were not captured"),
            "{note}"
        );
        let out = shape(2, &page, Kind::Requests);
        assert!(out["requests"].as_array().unwrap().is_empty());
        assert!(out["note"].as_str().unwrap().contains("resource timing"));

        page["hooked"] = json!(false);
        let out = shape(2, &page, Kind::Console);
        assert_eq!(out["since"], "not captured");
        assert!(
            out["note"]
                .as_str()
                .unwrap()
                .contains("Content Security Policy")
        );
    }
}
