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
    let mut value = json!({ "tabs": tabs, "browser": browser.kind()? });
    let downloads = crate::downloads::all(browser);
    if !downloads.is_empty() {
        value["downloads"] = Value::Array(downloads);
    }
    Ok(value)
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
            let loaded = go(browser, tab, url)?;
            Ok(loaded.value(tab))
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
    Ok(go(browser, tab, url)?.value(tab))
}

/// What a navigation ended on.
struct Loaded {
    title: String,
    /// Where the tab ended up, after redirects.
    url: String,
    /// The HTTP status of the document's response, when the browser says.
    status: Option<u64>,
}

impl Loaded {
    fn value(&self, tab: u32) -> Value {
        json!({"tabId": tab, "title": self.title, "url": self.url, "status": self.status})
    }
}

/// How a document loaded, read from the page: the navigation entry's
/// response status (Chromium and Firefox both fill it), the final URL, and
/// a network error page's own code (Chromium shows `chrome-error://` with the
/// `ERR_*` name on it, Firefox `about:neterror?e=KIND`).
const REPORT_JS: &str = "const e = performance.getEntriesByType('navigation')[0]; \
    const status = e && typeof e.responseStatus === 'number' && e.responseStatus > 0 ? e.responseStatus : null; \
    let net = null; \
    if (location.protocol === 'chrome-error:') { const c = document.querySelector('.error-code'); net = c ? c.textContent.trim() : 'ERR_FAILED'; } \
    const uri = document.documentURI || ''; \
    if (uri.startsWith('about:neterror') || uri.startsWith('about:certerror')) { net = new URLSearchParams(uri.slice(uri.indexOf('?') + 1)).get('e') || 'netError'; } \
    return { status, net, requested: e && /^[a-z]+:/.test(e.name) ? e.name : null };";

fn go(browser: &mut Browser, tab: u32, url: &str) -> Result<Loaded> {
    browser.switch(tab)?;
    // The console and network capture of the document about to load starts
    // with it where the browser allows (logs.rs).
    crate::logs::prepare(browser, tab);
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
    let asked = body
        .as_ref()
        .and_then(|b| b.get("url"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let sent = browser.cmd(&doing, "POST", path, body);
    // A URL that downloads leaves the page where it was; the driver may call
    // that an aborted load. The download is the result (the caller reports it).
    if sent.is_err() && browser.downloads.started() {
        crate::downloads::clear_marks(browser, tab);
    } else if let Err(failure) = sent {
        // Chromium and Firefox report a network failure as an "unknown error"
        // whose text names it; the page shows it too. Say it plainly.
        if let Some(report) = report(browser, tab)
            && let Some(plain) = net_failure(&report, asked.as_deref())
        {
            return Err(plain);
        }
        return Err(failure);
    }
    let report = report(browser, tab).unwrap_or(Value::Null);
    // Chromium loads some refusals (a port it will not use) as an error page
    // without failing the command.
    if let Some(plain) = net_failure(&report, asked.as_deref()) {
        return Err(plain);
    }
    requests_of_the_load(browser, tab);
    let (title, url) = page_info(browser, tab, "reading the loaded page")?;
    Ok(Loaded {
        title,
        url,
        status: report.get("status").and_then(Value::as_u64),
    })
}

/// Waits, briefly, for the requests the page's own scripts started while it
/// loaded (a shop's `fetch` of its cart at load, say): the load event does
/// not wait for them, and what they bring, or their failure in
/// `read_network_requests`, is what the agent reads next. Where the hook ran
/// from the document's start (Chromium) its count of running requests is
/// exact; elsewhere (Firefox) requests started before the page library came
/// are invisible until they end, so the wait lasts until nothing has ended
/// for `LOAD_QUIET_MS`. A page that keeps a request open (a long poll) costs
/// at most `LOAD_REQUESTS_MAX_MS`. Errors end the wait quietly.
fn requests_of_the_load(browser: &mut Browser, tab: u32) {
    const IDLE_JS: &str = "const done = arguments[arguments.length - 1]; \
        const [early, maxMs, quietMs] = arguments; \
        const raw = window.wrappedJSObject || window; const t0 = performance.now(); \
        const ended = () => { let t = 0; const nav = performance.getEntriesByType('navigation')[0]; \
          if (nav) t = Math.max(nav.responseEnd, nav.loadEventEnd); \
          for (const e of performance.getEntriesByType('resource')) t = Math.max(t, e.responseEnd); return t; }; \
        const busy = () => { const n = raw.__stephostNet; if (n && Number(n.inflight) > 0) return true; \
          return !early && performance.now() - ended() < quietMs; }; \
        (async () => { while (busy() && performance.now() - t0 < maxMs) \
          await new Promise((r) => setTimeout(r, 10)); done(null); })();";
    let early = browser.logs.hooked_from_start(tab);
    let doing = Doing {
        tab: Some(tab),
        what: "waiting for the requests the page started",
        acts: false,
    };
    let body = json!({ "script": IDLE_JS, "args": [early, LOAD_REQUESTS_MAX_MS, LOAD_QUIET_MS] });
    let _ = browser.cmd(&doing, "POST", "/execute/async", Some(body));
}

/// The longest wait for a loaded page's own requests, in ms.
const LOAD_REQUESTS_MAX_MS: u64 = 2_000;
/// Where running requests cannot be counted: how long nothing must have
/// ended, in ms.
const LOAD_QUIET_MS: u64 = 150;

/// A network failure the page's load report names, said plainly for the URL
/// asked for (or the one the page says it requested).
fn net_failure(report: &Value, asked: Option<&str>) -> Option<stephost_plugin::Failure> {
    let net = report
        .get("net")
        .and_then(Value::as_str)
        .and_then(crate::webdriver::net_error)?;
    let url = asked
        .or_else(|| report.get("requested").and_then(Value::as_str))
        .unwrap_or_default();
    Some(net.failure(url))
}

/// The page's own account of how it loaded ([`REPORT_JS`]); `None` when it
/// cannot run (a dialog is open, the tab went).
fn report(browser: &mut Browser, tab: u32) -> Option<Value> {
    browser
        .script(
            tab,
            "reading how the page loaded",
            false,
            REPORT_JS,
            json!([]),
        )
        .ok()
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
