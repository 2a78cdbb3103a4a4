//! One WebDriver session: commands, and WebDriver errors turned into failures
//! an agent can act on.

use serde_json::{Value, json};

use crate::error::{Result, fail, failed, not_found, world_moved};
use crate::http::{self, HttpError};
use stephost_plugin::Failure;
use stephost_plugin::webdriver as host;

/// A WebDriver error answer.
pub(crate) struct WdError {
    /// The W3C error code (`no such window`, `unexpected alert open`, ...).
    pub(crate) error: String,
    /// The driver's message (first line).
    pub(crate) message: String,
    /// The driver's `data`, when any (geckodriver puts the prompt text there).
    pub(crate) data: Value,
}

/// A command's outcome before it is mapped to a failure.
pub(crate) enum CmdError {
    /// The driver answered with a WebDriver error.
    Wd(WdError),
    /// No WebDriver answer at all.
    Transport(HttpError),
}

/// The session the host opened for this instance.
pub(crate) struct Session {
    /// `127.0.0.1:PORT`.
    authority: String,
    /// `/session/ID`.
    base: String,
    /// `chromium` or `firefox`.
    pub(crate) browser: String,
}

impl Session {
    /// Asks the host for this instance's session (the host starts the driver
    /// and the browser on first use).
    pub(crate) fn open() -> Result<Self> {
        let session = host::session().map_err(|e| match e {
            host::SessionError::NotGranted(m) => fail("denied", m, false),
            host::SessionError::Unavailable(m) => fail(
                "unavailable",
                format!("no browser could be started: {m}"),
                false,
            ),
        })?;
        let rest = session.url.strip_prefix("http://").ok_or_else(|| {
            failed(
                format!("the host gave an unusable session URL {}", session.url),
                false,
            )
        })?;
        let (authority, base) = rest.split_once('/').ok_or_else(|| {
            failed(
                format!("the host gave an unusable session URL {}", session.url),
                false,
            )
        })?;
        Ok(Self {
            authority: authority.to_owned(),
            base: format!("/{base}"),
            browser: session.browser,
        })
    }

    /// Sends `METHOD /session/ID{path}` and returns the answer's `value`.
    pub(crate) fn cmd(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> std::result::Result<Value, CmdError> {
        // WebDriver wants a JSON object on every POST, even an empty one.
        let body = match (method, body) {
            ("POST", None) => Some(json!({})),
            (_, body) => body,
        };
        let full = format!("{}{path}", self.base);
        let (status, answer) = http::request(method, &self.authority, &full, body.as_ref())
            .map_err(CmdError::Transport)?;
        let value = match answer {
            Value::Object(mut map) => map.remove("value").unwrap_or(Value::Null),
            _ => Value::Null,
        };
        // Only the status marks an error: a script's result may well be an
        // object with an `error` field of its own.
        if status >= 400 {
            let error = value.get("error").and_then(Value::as_str);
            let message = value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Err(CmdError::Wd(WdError {
                error: error.unwrap_or("unknown error").to_owned(),
                message: message.lines().next().unwrap_or_default().to_owned(),
                data: value.get("data").cloned().unwrap_or(Value::Null),
            }));
        }
        Ok(value)
    }
}

/// Ends the host-side session (after the browser went away under us).
pub(crate) fn end_session() {
    host::end_session();
}

/// What was being done when a command failed, for the message and for
/// whether input may have reached the page.
pub(crate) struct Doing<'a> {
    /// Tab id, when the command was about a tab.
    pub(crate) tab: Option<u32>,
    /// `clicking at (10, 20)`, `reading the page`, ...
    pub(crate) what: &'a str,
    /// Whether the command itself sends input to the page (so a failure
    /// part-way may have fired).
    pub(crate) acts: bool,
}

/// Turns a command error into a failure. `dialog-open` names the way out.
pub(crate) fn failure(error: CmdError, doing: &Doing<'_>) -> Failure {
    let tab = doing
        .tab
        .map(|t| format!(" in tab {t}"))
        .unwrap_or_default();
    let what = doing.what;
    let e = match error {
        CmdError::Transport(HttpError::Denied) => {
            return fail(
                "denied",
                format!("{what}{tab}: the host refused the request to the browser driver"),
                false,
            );
        }
        CmdError::Transport(HttpError::Failed(m)) => {
            return failed(
                format!("{what}{tab}: the browser driver did not answer ({m})"),
                doing.acts,
            );
        }
        CmdError::Wd(e) => e,
    };
    match e.error.as_str() {
        "unexpected alert open" => {
            let text = dialog_text(&e);
            fail(
                "dialog-open",
                format!(
                    "a modal dialog is open{tab}{text}, so {what} did not happen. Clear it first with the \
                     `dialog` tool (also named `firefox_dialog`): {{\"tabId\": {}, \"action\": \"accept\"}} \
                     or \"dismiss\" (with \"text\" to answer a prompt).",
                    doing.tab.unwrap_or(0)
                ),
                false,
            )
        }
        "no such alert" => not_found(format!("no dialog is open{tab}")),
        "no such window" => not_found(format!(
            "{what}: the tab{tab} is closed; tabs_context lists the open tabs"
        )),
        "invalid session id" => world_moved(format!(
            "{what}: the browser session ended (the browser closed or crashed); a new browser starts \
             on the next call, with new tab ids (call tabs_context)"
        )),
        "move target out of bounds" => not_found(format!(
            "{what}{tab}: the point is outside the visible page (viewport); take a screenshot and \
             use coordinates inside it, or scroll first"
        )),
        "stale element reference" | "no such element" | "detached shadow root" => world_moved(
            format!("{what}{tab}: the element left the page ({})", e.message),
        ),
        "javascript error" => failed(
            format!("{what}{tab}: the script threw: {}", e.message),
            doing.acts,
        ),
        "timeout" | "script timeout" => fail(
            "timeout",
            format!("{what}{tab}: the browser timed out: {}", e.message),
            doing.acts,
        ),
        "invalid argument" => fail(
            "invalid-input",
            format!(
                "{what}{tab}: the browser refused the arguments: {}",
                e.message
            ),
            false,
        ),
        "unknown command" | "unsupported operation" => fail(
            "unsupported",
            format!("{what}{tab}: this browser cannot do that: {}", e.message),
            false,
        ),
        _ => failed(
            format!("{what}{tab}: {}: {}", e.error, e.message),
            doing.acts,
        ),
    }
}

/// ` ("Delete this?")` from an unexpected-alert error, when the driver says.
fn dialog_text(e: &WdError) -> String {
    if let Some(text) = e.data.get("text").and_then(Value::as_str) {
        return format!(" (it says {text:?})");
    }
    // chromedriver: "unexpected alert open: {Alert text : Delete this?}"
    e.message
        .split_once("Alert text : ")
        .and_then(|(_, rest)| rest.strip_suffix('}'))
        .map(|text| format!(" (it says {text:?})"))
        .unwrap_or_default()
}

/// Whether the error means the browser session is gone.
pub(crate) fn session_gone(error: &CmdError) -> bool {
    matches!(error, CmdError::Wd(e) if e.error == "invalid session id")
}
