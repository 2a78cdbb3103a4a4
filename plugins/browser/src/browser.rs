//! The instance's browser: its WebDriver session (opened on first use), the
//! mapping from small tab ids to WebDriver window handles, and which window
//! WebDriver is switched to (so a command on the same tab costs no switch).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::error::{Result, not_found};
use crate::webdriver::{self, CmdError, Doing, Session};

/// Browser state for this instance. The host gives every session its own
/// instance, so this lives exactly as long as the session's browser.
#[derive(Default)]
pub(crate) struct Browser {
    session: Option<Session>,
    /// Tab id -> window handle, for the windows known to be open.
    tabs: BTreeMap<u32, String>,
    /// The id the next new window gets; ids are never reused in one browser.
    next_tab: u32,
    /// The window WebDriver is switched to, when known.
    current: Option<String>,
    /// The number the next element ref gets. Refs are unique across tabs and
    /// documents of this browser, so a ref from one page never names an element
    /// of another.
    pub(crate) next_ref: u64,
    /// The text of a dialog the last input opened (an alert, confirm or
    /// prompt), for the step that opened it to report.
    pub(crate) opened_dialog: Option<String>,
    /// The download folder as the current acting verb found it.
    pub(crate) downloads: crate::downloads::Downloads,
    /// Which tabs run the console and network hook from document start.
    pub(crate) logs: crate::logs::Early,
    /// The frame WebDriver is in, and which refs live in cross-origin frames.
    pub(crate) frames: crate::frames::Frames,
}

/// Scripts at least this long are kept in the page (see [`Browser::script`]).
const CACHED_SCRIPT_MIN: usize = 4096;
/// The key of the stub's answer when the page does not hold the script yet.
const NO_LIB: &str = "__stephostNoLib";

/// A script's name in the page: FNV-1a of its text, so a plugin built with
/// another page library never calls an older one a page still holds.
fn script_key(script: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in script.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

impl Browser {
    /// The session, opened on first use; its first window becomes tab 1.
    fn session(&mut self) -> Result<&Session> {
        if self.session.is_none() {
            let session = Session::open()?;
            self.session = Some(session);
            self.current = None;
            if self.next_tab == 0 {
                self.next_tab = 1;
            }
            if self.next_ref == 0 {
                self.next_ref = 1;
            }
            self.sync_tabs()?;
        }
        match &self.session {
            Some(session) => Ok(session),
            None => Err(crate::error::failed("no browser session", false)),
        }
    }

    /// `chromium` or `firefox`.
    pub(crate) fn kind(&mut self) -> Result<String> {
        Ok(self.session()?.browser.clone())
    }

    /// The session's download folder on the host, once a session is open.
    pub(crate) fn download_dir(&self) -> Option<String> {
        self.session.as_ref()?.download_dir.clone()
    }

    /// The folders granted for uploads (opening the session to learn them).
    pub(crate) fn upload_dirs(&mut self) -> Result<Vec<String>> {
        Ok(self.session()?.upload_dirs.clone())
    }

    /// Sends a command; a failure is mapped for `doing`, and a session that is
    /// gone is forgotten (the next call starts a new browser).
    pub(crate) fn cmd(
        &mut self,
        doing: &Doing<'_>,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value> {
        let result = self.session()?.cmd(method, path, body);
        result.map_err(|error| self.fail(error, doing))
    }

    /// Maps an error and updates what is known about the browser.
    fn fail(&mut self, error: CmdError, doing: &Doing<'_>) -> stephost_plugin::Failure {
        if webdriver::session_gone(&error) {
            self.forget();
        } else if matches!(&error, CmdError::Wd(e) if e.error == "no such window") {
            self.current = None;
            if let Some(tab) = doing.tab {
                self.tabs.remove(&tab);
            }
        }
        webdriver::failure(error, doing)
    }

    /// Drops the session and its tabs; the host ends its side too.
    pub(crate) fn forget(&mut self) {
        if self.session.take().is_some() {
            webdriver::end_session();
        }
        self.tabs.clear();
        self.current = None;
        self.frames.lost();
    }

    /// Reads the open windows, giving new ones ids and dropping closed ones.
    /// Returns the ids in order.
    pub(crate) fn sync_tabs(&mut self) -> Result<Vec<u32>> {
        let doing = Doing {
            tab: None,
            what: "listing the tabs",
            acts: false,
        };
        let handles = self.cmd(&doing, "GET", "/window/handles", None)?;
        let handles: Vec<String> = handles
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        self.tabs.retain(|_, handle| handles.contains(handle));
        for handle in handles {
            if !self.tabs.values().any(|h| *h == handle) {
                let id = self.next_tab;
                self.next_tab += 1;
                self.tabs.insert(id, handle);
            }
        }
        if self
            .current
            .as_ref()
            .is_some_and(|c| !self.tabs.values().any(|h| h == c))
        {
            self.current = None;
        }
        Ok(self.tabs.keys().copied().collect())
    }

    /// Registers a window opened by `tabs_create`.
    pub(crate) fn add_tab(&mut self, handle: String) -> u32 {
        let id = self.next_tab;
        self.next_tab += 1;
        self.tabs.insert(id, handle);
        id
    }

    /// Forgets a closed tab.
    pub(crate) fn remove_tab(&mut self, tab: u32) {
        if let Some(handle) = self.tabs.remove(&tab)
            && self.current.as_ref() == Some(&handle)
        {
            self.current = None;
        }
    }

    /// The id of the tab WebDriver is switched to, if known.
    pub(crate) fn current_tab(&self) -> Option<u32> {
        let current = self.current.as_ref()?;
        self.tabs
            .iter()
            .find(|(_, h)| *h == current)
            .map(|(id, _)| *id)
    }

    /// Makes `tab` the window WebDriver commands go to.
    pub(crate) fn switch(&mut self, tab: u32) -> Result<()> {
        self.session()?;
        if !self.tabs.contains_key(&tab) {
            // A window the page opened since we last looked gets its id here.
            self.sync_tabs()?;
        }
        let Some(handle) = self.tabs.get(&tab).cloned() else {
            let open: Vec<String> = self.tabs.keys().map(u32::to_string).collect();
            return Err(not_found(format!(
                "there is no tab {tab} (open tabs: {}); tabs_context lists them, tabs_create opens one",
                if open.is_empty() {
                    "none".to_owned()
                } else {
                    open.join(", ")
                }
            )));
        };
        if self.current.as_ref() == Some(&handle) {
            // Back to the top-level document if a frame was left entered.
            return crate::frames::sync(self, tab);
        }
        let doing = Doing {
            tab: Some(tab),
            what: "switching to the tab",
            acts: false,
        };
        self.cmd(&doing, "POST", "/window", Some(json!({ "handle": handle })))?;
        self.current = Some(handle);
        self.frames.landed();
        crate::frames::sync(self, tab)
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in `tab`.
    pub(crate) fn script(
        &mut self,
        tab: u32,
        what: &str,
        acts: bool,
        script: &str,
        args: Value,
    ) -> Result<Value> {
        self.run_script(tab, what, acts, script, args, "/execute/sync")
    }

    /// Like [`Browser::script`] for a script that calls its last argument
    /// (the callback) with its result.
    pub(crate) fn script_async(
        &mut self,
        tab: u32,
        what: &str,
        acts: bool,
        script: &str,
        args: Value,
    ) -> Result<Value> {
        self.run_script(tab, what, acts, script, args, "/execute/async")
    }

    /// Runs a script; a large one (the page library) is kept in the page as a
    /// function and later calls send only a stub that calls it: the browser
    /// then parses a few hundred bytes per call instead of the whole library.
    /// A document that does not hold it yet (a new page) answers the stub
    /// with a marker, and the script goes whole, installing itself.
    fn run_script(
        &mut self,
        tab: u32,
        what: &str,
        acts: bool,
        script: &str,
        args: Value,
        endpoint: &str,
    ) -> Result<Value> {
        self.switch(tab)?;
        let doing = Doing {
            tab: Some(tab),
            what,
            acts,
        };
        if script.len() < CACHED_SCRIPT_MIN {
            return self.cmd(
                &doing,
                "POST",
                endpoint,
                Some(json!({ "script": script, "args": args })),
            );
        }
        let key = script_key(script);
        let stub = if endpoint == "/execute/async" {
            format!(
                "const f = (window.__stephostLib || {{}})['{key}']; \
                 if (typeof f !== 'function') {{ arguments[arguments.length - 1]({{ {NO_LIB}: true }}); return; }} \
                 f.apply(null, arguments);"
            )
        } else {
            format!(
                "const f = (window.__stephostLib || {{}})['{key}']; \
                 if (typeof f !== 'function') return {{ {NO_LIB}: true }}; \
                 return f.apply(null, arguments);"
            )
        };
        let answer = self.cmd(
            &doing,
            "POST",
            endpoint,
            Some(json!({ "script": stub, "args": args })),
        )?;
        if answer.get(NO_LIB).is_none() {
            return Ok(answer);
        }
        let install = format!(
            "const f = function () {{\n{script}\n}}; \
             if (!window.__stephostLib) Object.defineProperty(window, '__stephostLib', \
               {{ value: {{}}, configurable: true, enumerable: false }}); \
             window.__stephostLib['{key}'] = f; \
             return f.apply(null, arguments);"
        );
        self.cmd(
            &doing,
            "POST",
            endpoint,
            Some(json!({ "script": install, "args": args })),
        )
    }

    /// Sends W3C input actions to `tab`.
    pub(crate) fn actions(&mut self, tab: u32, what: &str, actions: Value) -> Result<()> {
        self.opened_dialog = None;
        self.switch(tab)?;
        // Firefox takes input for a cross-origin frame only from inside it.
        let actions = crate::frames::input_context(self, tab, actions);
        // A wheel scrolls over several frames; what it reveals (the next page of
        // a feed) is asked for once the scrolling has run.
        let scrolled = actions
            .as_array()
            .is_some_and(|sources| sources.iter().any(|s| s["type"] == "wheel"));
        let doing = Doing {
            tab: Some(tab),
            what,
            acts: true,
        };
        let sent = self.cmd(
            &doing,
            "POST",
            "/actions",
            Some(json!({ "actions": actions })),
        );
        // The quiet wait ends with the navigation probe's answer, so an input
        // that started no navigation costs one round trip after the actions.
        if sent.is_ok() && self.quiet(tab, scrolled) != Some(true) {
            self.settle(tab);
        }
        crate::frames::leave(self, tab);
        sent.map(|_| ())
    }

    /// Settles `tab` after input the page library made itself (`form_input`
    /// sets a value and fires its events from a script): as after
    /// [`Browser::actions`].
    pub(crate) fn after_input(&mut self, tab: u32) {
        if self.quiet(tab, false) != Some(true) {
            self.settle(tab);
        }
    }

    /// Lets the page handle the input it was just sent before the next command:
    /// work a handler deferred to a later task or frame (a framework's render,
    /// say) runs; short timeouts the input started (a debounced search, a menu
    /// that opens after 300 ms) finish, for at most `WORK_MAX_MS`; requests it
    /// started (the next page of a feed) for at most `FETCH_MAX_MS`, since what
    /// they bring is usually what the agent acts on next and a loaded machine
    /// can take over a second; a websocket message the page sent is answered
    /// (a notebook's kernel, a data app's rerun), for at most `APP_MAX_MS`; and
    /// once anything changed (the DOM, a request ended, a message arrived) the
    /// plugin waits until nothing has for `QUIET_MS`, for at most
    /// `QUIET_MAX_MS`: an app renders what a request brought a few tasks after
    /// it ended. The page-realm hook watches the DOM from the document's start,
    /// so what the input's own handlers changed counts; a page that had been
    /// changing without a `QUIET_MS` pause for 300 ms up to the input (a
    /// ticker, a JS animation; a settled page was still for `QUIET_MS`) is
    /// background, waited on for 20 ms of quiet and at most 300 ms, as before.
    /// After a wheel (`scrolled`) it first waits for the scrolling to stop (80
    /// ms without a scroll event, at most 1 s), so what the scroll asks for is
    /// counted. An input that changed nothing costs one
    /// task turn (about a millisecond). Without this, `type "A"`, `key
    /// Return`, `type "B"` on a framework's list reaches the input before it
    /// was cleared and makes one item "AB". Errors end the wait quietly (a
    /// navigation replaced the document): `settle` and the next command see the
    /// page as it is. The page library's hook (`page.js`) counts the timeouts,
    /// frame callbacks, requests, messages and changes. Answers whether the
    /// page is settled for [`Browser::settle`] too (loaded, no navigation or
    /// download marked), so an input that starts neither costs no second round
    /// trip; `None` when the script could not tell, or when the focus went into
    /// a frame (keys typed next must wait for a cross-origin frame to take the
    /// focus, which Chromium hands over asynchronously: the settle probe's
    /// round trip is that wait).
    fn quiet(&mut self, tab: u32, scrolled: bool) -> Option<bool> {
        const QUIET_JS: &str = "const done = arguments[arguments.length - 1]; \
            const [quiet, maxBusy, maxWork, maxFetch, scrolled, maxApp] = arguments; const t0 = performance.now(), since = t0 - 250; \
            const raw = window.wrappedJSObject || window; const n = raw.__stephostNet; let last = -1; \
            const mo = new MutationObserver(() => { last = performance.now(); }); \
            mo.observe(document, { subtree: true, childList: true, attributes: true, characterData: true }); \
            const num = (v) => Number(v) || 0; \
            const background = n ? num(n.input) >= since && num(n.preRun) >= 300 : false; \
            const task = () => new Promise((r) => { const c = new MessageChannel(); c.port1.onmessage = () => r(); c.port2.postMessage(0); }); \
            const later = (ms) => new Promise((r) => setTimeout(r, ms)); \
            const frame = () => new Promise((r) => { const t = setTimeout(r, 50); requestAnimationFrame(() => { clearTimeout(t); r(); }); }); \
            (async () => { await task(); await later(0); let framed = false; \
              if (scrolled) { let moved = performance.now(); const seen = () => { moved = performance.now(); }; \
                document.addEventListener('scroll', seen, { capture: true, passive: true }); \
                while (performance.now() - moved < 80 && performance.now() - t0 < 1000) await later(16); \
                document.removeEventListener('scroll', seen, { capture: true }); } \
              for (;;) { const now = performance.now(); \
                const due = n ? num(n.due(since)) : 0; /* a timer runs a little after it is due: pending until it ran */ \
                const fetching = n ? n.inflight > 0 && num(n.recent(since)) > 0 : false; \
                const awaiting = n ? num(n.sent) >= since && num(n.heard) < num(n.sent) : false; \
                const at = (t) => (t >= since ? t : -1); \
                const changed = Math.max(last, n && !background ? at(num(n.mutated)) : -1); \
                const lastWork = Math.max(changed, n ? Math.max(at(num(n.heard)), at(num(n.last))) : -1); \
                const changing = lastWork >= 0 && now - lastWork < (background ? 20 : quiet); \
                const drawing = n ? num(n.pendingFrames(since)) > 0 : false; \
                if ((changed >= 0 || drawing) && !framed) { framed = true; await frame(); continue; } \
                const working = due > 0 || fetching; \
                if (!working && !awaiting && !changing) break; \
                if (now - t0 >= (fetching ? maxFetch : awaiting ? maxApp : working ? maxWork : background ? 300 : maxBusy)) break; \
                await later(due > now ? Math.max(1, Math.min(20, due - now + 1)) : 5); } \
              mo.disconnect(); done((() => {\
                if (document.activeElement && /^I?FRAME$/.test(document.activeElement.tagName)) return null; \
                const reg = window.__stephostRefs; \
                const recent = (t) => t && performance.now() - t < 3000; \
                if (reg && reg.doc === document && (recent(reg.navigating) || recent(reg.downloading))) return false; \
                return document.readyState === 'complete' && \
                  !(location.href === 'about:blank' && performance.now() < 1000 && \
                    !(document.body && document.body.childElementCount)); })()); })();";
        let doing = Doing {
            tab: Some(tab),
            what: "letting the page settle",
            acts: false,
        };
        let body = json!({ "script": QUIET_JS, "args": [QUIET_MS, QUIET_MAX_MS, WORK_MAX_MS, FETCH_MAX_MS, scrolled, APP_MAX_MS] });
        match self.cmd(&doing, "POST", "/execute/async", Some(body)) {
            Ok(Value::Bool(settled)) => Some(settled),
            Ok(_) => None,
            Err(f) => {
                if crate::error::has_code(&f, "dialog-open") {
                    let text = self
                        .cmd(&doing, "GET", "/alert/text", None)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned));
                    self.opened_dialog = Some(text.unwrap_or_default());
                }
                None
            }
        }
    }

    /// Waits until a navigation that input may have started has a loaded
    /// document, so the next command reads the new page, not the old one in
    /// the moment before it goes. chromedriver waits for a navigation once it
    /// has begun, but a form submitted by a click begins a moment later;
    /// geckodriver does not wait at all, and for a moment shows a fresh
    /// `about:blank`. The page library marks its document when a navigation
    /// away from it starts. Errors end the wait quietly (a dialog the click
    /// opened, say): the next command reports them.
    fn settle(&mut self, tab: u32) {
        const PROBE: &str = "const reg = window.__stephostRefs; \
            if (reg && reg.doc === document && reg.navigating && performance.now() - reg.navigating < 3000) return false; \
            if (reg && reg.doc === document && reg.downloading && performance.now() - reg.downloading < 3000) return false; \
            return document.readyState === 'complete' && \
              !(location.href === 'about:blank' && performance.now() < 1000 && \
                !(document.body && document.body.childElementCount));";
        let doing = Doing {
            tab: Some(tab),
            what: "waiting for the page",
            acts: false,
        };
        let mut errors = 0;
        for _ in 0..SETTLE_POLLS {
            let body = json!({ "script": PROBE, "args": [] });
            match self.cmd(&doing, "POST", "/execute/sync", Some(body)) {
                Ok(Value::Bool(false)) => {
                    // A download started: the navigation the page library
                    // marked will not come.
                    if self.downloads.started() {
                        crate::downloads::clear_marks(self, tab);
                        return;
                    }
                    crate::clock::sleep_ns(SETTLE_POLL_NS);
                }
                // A navigation under way (or one turning into a download) makes
                // a script fail for a moment; answering then would report a
                // click before the page or the file it started. A dialog, or
                // failures that last, end the wait: the next command says why.
                Err(f) if !crate::error::has_code(&f, "dialog-open") && errors < SETTLE_ERRORS => {
                    errors += 1;
                    if self.downloads.started() {
                        return;
                    }
                    crate::clock::sleep_ns(SETTLE_POLL_NS);
                }
                _ => return,
            }
        }
    }
}

/// How long the page must stay unchanged after input changed it, and the
/// longest wait for that, in ms (see `Browser::quiet`). 100 ms: the gaps
/// between an app's steps (a request ends, its JSON is parsed, the view
/// renders, the next request starts) on a loaded machine; an input that
/// changes nothing never waits for it.
const QUIET_MS: u64 = 100;
const QUIET_MAX_MS: u64 = 1_500;
/// The longest wait for the answer to a websocket message the input sent.
const APP_MAX_MS: u64 = 1_500;
/// The longest wait for timeouts and requests the input started, in ms.
const WORK_MAX_MS: u64 = 1_000;
/// The longest wait for requests the input started, in ms.
const FETCH_MAX_MS: u64 = 3_000;

/// How often, and how many times, `settle` looks (about 5 s in all).
const SETTLE_POLL_NS: u64 = 10_000_000;
const SETTLE_POLLS: u32 = 500;
/// How many failed looks `settle` takes as a navigation under way (about 0.3 s).
const SETTLE_ERRORS: u32 = 30;
