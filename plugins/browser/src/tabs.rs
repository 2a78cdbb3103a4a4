//! Tabs and navigation: `tabs_context`, `tabs_create`, `tabs_close`,
//! `navigate`.

use serde_json::{Value, json};

use crate::args::{Args, BrowserArgs};
use crate::browser::Browser;
use crate::error::{Result, has_code, invalid};
use crate::webdriver::Doing;

/// Title and URL of the page in `tab`, through the page library (which also
/// sets up its navigation watch on a new document).
fn page_info(browser: &mut Browser, tab: u32, what: &str) -> Result<(String, String)> {
    let value = crate::page::call(browser, tab, "info", what, false, json!({}))?;
    let title = value
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let url = value.get("url").and_then(Value::as_str).unwrap_or_default();
    Ok((title.to_owned(), url.to_owned()))
}

/// `tabs_context`: every open tab with id, title and URL.
pub(crate) fn context(browser: &mut Browser) -> Result<Value> {
    let ids = browser.sync_tabs()?;
    let before = browser.current_tab();
    let mut tabs = Vec::new();
    for id in ids {
        match page_info(browser, id, "reading the tab") {
            Ok((title, url)) => tabs.push(json!({"tabId": id, "title": title, "url": url})),
            // A tab with a dialog open cannot run scripts; list it anyway.
            Err(f) if has_code(&f, "dialog-open") => {
                tabs.push(json!({"tabId": id, "dialog_open": true, "note": "a dialog is open; clear it with the dialog tool"}));
            }
            Err(f) if has_code(&f, "not-found") => continue,
            Err(f) => return Err(f),
        }
    }
    // Leave WebDriver on the tab it was on, so a later command without a switch
    // still goes where it went before.
    if let Some(tab) = before {
        browser.switch(tab)?;
    }
    Ok(json!({ "tabs": tabs, "browser": browser.kind()? }))
}

/// `tabs_create`: opens a tab, optionally at `url`.
pub(crate) fn create(browser: &mut Browser, args: &Args) -> Result<Value> {
    browser.sync_tabs()?;
    let doing = Doing {
        tab: None,
        what: "opening a tab",
        acts: true,
    };
    let created = browser.cmd(&doing, "POST", "/window/new", Some(json!({"type": "tab"})))?;
    let handle = created
        .get("handle")
        .and_then(Value::as_str)
        .ok_or_else(|| crate::error::failed("the browser opened a tab but gave no handle", true))?;
    let tab = browser.add_tab(handle.to_owned());
    match args.opt_str("url")? {
        Some(url) => {
            let (title, url) = go(browser, tab, url)?;
            Ok(json!({"tabId": tab, "title": title, "url": url}))
        }
        None => Ok(json!({"tabId": tab, "title": "", "url": "about:blank"})),
    }
}

/// `tabs_close`: closes a tab.
pub(crate) fn close(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    browser.switch(tab)?;
    let doing = Doing {
        tab: Some(tab),
        what: "closing the tab",
        acts: true,
    };
    let left = browser.cmd(&doing, "DELETE", "/window", None)?;
    browser.remove_tab(tab);
    if left.as_array().is_none_or(Vec::is_empty) {
        // WebDriver ends the session with its last window: the next call
        // starts a new browser.
        browser.forget();
        return Ok(
            json!({"closed": tab, "tabs_left": [], "note": "that was the last tab: the browser closed; the next call opens a new one"}),
        );
    }
    let ids = browser.sync_tabs()?;
    Ok(json!({"closed": tab, "tabs_left": ids}))
}

/// `navigate`: a URL, or `back` / `forward` in the tab's history.
pub(crate) fn navigate(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let url = args.str("url")?;
    let (title, url) = go(browser, tab, url)?;
    Ok(json!({"tabId": tab, "title": title, "url": url}))
}

fn go(browser: &mut Browser, tab: u32, url: &str) -> Result<(String, String)> {
    browser.switch(tab)?;
    let target = url.trim();
    let (path, body, what) = match target.to_ascii_lowercase().as_str() {
        "back" => ("/back", None, "going back".to_owned()),
        "forward" => ("/forward", None, "going forward".to_owned()),
        "reload" | "refresh" => ("/refresh", None, "reloading".to_owned()),
        _ => {
            let full = normalize(target)?;
            let what = format!("loading {full}");
            ("/url", Some(json!({"url": full})), what)
        }
    };
    let doing = Doing {
        tab: Some(tab),
        what: &what,
        acts: true,
    };
    browser.cmd(&doing, "POST", path, body)?;
    page_info(browser, tab, "reading the loaded page")
}

/// A URL as typed into an address bar: a scheme is added when missing.
fn normalize(url: &str) -> Result<String> {
    if url.is_empty() {
        return Err(invalid("url", "`url` is empty"));
    }
    let lower = url.to_ascii_lowercase();
    if lower.contains("://")
        || lower.starts_with("about:")
        || lower.starts_with("data:")
        || lower.starts_with("file:")
        || lower.starts_with("javascript:")
    {
        return Ok(url.to_owned());
    }
    let host = lower.split(['/', ':']).next().unwrap_or_default();
    let local = host == "localhost" || host.parse::<std::net::Ipv4Addr>().is_ok();
    Ok(format!(
        "{}{url}",
        if local { "http://" } else { "https://" }
    ))
}
