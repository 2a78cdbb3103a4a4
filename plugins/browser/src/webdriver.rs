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
    /// The session's download folder on the host (what agents are told; the
    /// plugin reads it at `/downloads`), when the host made one.
    pub(crate) download_dir: Option<String>,
    /// The folders the operator granted for uploads (`[browser] upload_dirs`).
    pub(crate) upload_dirs: Vec<String>,
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
        let (download_dir, upload_dirs) = host_facts(&session.capabilities);
        Ok(Self {
            authority: authority.to_owned(),
            base: format!("/{base}"),
            browser: session.browser,
            download_dir,
            upload_dirs,
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

/// The host's own entries in the session capabilities: the download folder and
/// the upload folders (absent from an older host: no downloads, no uploads).
fn host_facts(capabilities: &str) -> (Option<String>, Vec<String>) {
    let value: Value = serde_json::from_str(capabilities).unwrap_or(Value::Null);
    let downloads = value
        .get("stephost:downloadDir")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let uploads = value
        .get("stephost:uploadDirs")
        .and_then(Value::as_array)
        .map(|dirs| {
            dirs.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    (downloads, uploads)
}

/// A browser's network error, in plain words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NetError {
    /// The failure code.
    pub(crate) code: &'static str,
    /// What went wrong (`connection refused`).
    pub(crate) plain: &'static str,
    /// Whether the browser never reached a server (so nothing was sent).
    pub(crate) connect: bool,
    /// The browser's own name for it (`ERR_CONNECTION_REFUSED`, `connectionFailure`).
    pub(crate) raw: String,
}

impl NetError {
    /// `could not connect to URL: connection refused (ERR_CONNECTION_REFUSED)`.
    pub(crate) fn message(&self, url: &str) -> String {
        let verb = if self.connect {
            "could not connect to"
        } else {
            "could not load"
        };
        format!("{verb} {url}: {} ({})", self.plain, self.raw)
    }

    /// As a failure about `url`.
    pub(crate) fn failure(&self, url: &str) -> Failure {
        fail(self.code, self.message(url), !self.connect)
    }
}

/// A network error named the way Chromium (`net::ERR_CONNECTION_REFUSED`,
/// `ERR_CONNECTION_REFUSED`) or Firefox (the `e=` of its `about:neterror` page:
/// `connectionFailure`) names it.
pub(crate) fn net_error(name: &str) -> Option<NetError> {
    let raw = name.trim().trim_start_matches("net::");
    let (code, plain, connect) = match raw {
        "ERR_CONNECTION_REFUSED" | "connectionFailure" => {
            ("unavailable", "connection refused", true)
        }
        "ERR_NAME_NOT_RESOLVED" | "ERR_NAME_RESOLUTION_FAILED" | "dnsNotFound" => {
            ("not-found", "the host name does not resolve", true)
        }
        "ERR_ADDRESS_UNREACHABLE"
        | "ERR_NETWORK_UNREACHABLE"
        | "ERR_INTERNET_DISCONNECTED"
        | "netOffline" => ("unavailable", "the address is unreachable", true),
        "ERR_CONNECTION_TIMED_OUT" => ("timeout", "the connection timed out", true),
        "ERR_TIMED_OUT" | "netTimeout" => ("timeout", "the server did not answer in time", false),
        "ERR_CONNECTION_RESET"
        | "ERR_CONNECTION_CLOSED"
        | "ERR_EMPTY_RESPONSE"
        | "netReset"
        | "netInterrupt" => ("failed", "the server closed the connection", false),
        "ERR_UNSAFE_PORT" | "deniedPortAccess" => (
            "denied",
            "the browser refuses this port (reserved for other protocols)",
            true,
        ),
        "ERR_BLOCKED_BY_CLIENT"
        | "ERR_BLOCKED_BY_RESPONSE"
        | "ERR_BLOCKED_BY_ADMINISTRATOR"
        | "blockedByPolicy" => ("denied", "the browser blocked the load", true),
        "ERR_INVALID_URL" | "ERR_UNKNOWN_URL_SCHEME" | "malformedURI" | "unknownProtocolFound" => (
            "invalid-input",
            "the URL is not one the browser can load",
            true,
        ),
        "ERR_ABORTED" => ("failed", "the load was cancelled", false),
        other if other.starts_with("ERR_CERT_") || other.starts_with("ERR_SSL_") => {
            ("failed", "the TLS certificate or handshake failed", true)
        }
        "nssFailure2" | "nssBadCert" => ("failed", "the TLS certificate or handshake failed", true),
        other if other.starts_with("ERR_") => ("failed", "the browser could not load it", false),
        _ => return None,
    };
    Some(NetError {
        code,
        plain,
        connect,
        raw: raw.to_owned(),
    })
}

/// The network error a WebDriver error message reports, with the URL when it
/// says which: chromedriver's `net::ERR_*`, geckodriver's `Reached error page:
/// about:neterror?e=KIND&u=URL...`.
pub(crate) fn net_error_in(message: &str) -> Option<(NetError, Option<String>)> {
    if let Some(at) = message.find("net::ERR_") {
        let name: String = message[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        return net_error(&name).map(|e| (e, None));
    }
    let (_, query) = message.split_once("about:neterror?")?;
    let mut kind = None;
    let mut url = None;
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("e", v)) => kind = Some(v.to_owned()),
            Some(("u", v)) => url = Some(percent_decode(v)),
            _ => {}
        }
    }
    net_error(&kind?).map(|e| (e, url))
}

/// `%3A` -> `:`; a broken escape stays as it is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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
    // The host answers for the driver when it refuses a command itself (a file
    // path outside the upload folders); its message says why and what to set.
    if let Some(reason) = e.message.strip_prefix("stephost: ") {
        return fail(
            "denied",
            format!("{what}{tab}: the host refused it: {reason}"),
            false,
        );
    }
    if let Some((net, url)) = net_error_in(&e.message) {
        let url = url.unwrap_or_else(|| what.trim_start_matches("loading ").to_owned());
        return fail(
            net.code,
            format!("{what}{tab}: {}", net.message(&url)),
            !net.connect,
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chromium_and_firefox_network_errors_read_plainly() {
        let (net, url) = net_error_in(
            "unknown error: net::ERR_CONNECTION_REFUSED\n  (Session info: chrome=156)",
        )
        .expect("chromium");
        assert_eq!(url, None);
        assert_eq!(net.code, "unavailable");
        assert_eq!(
            net.message("http://127.0.0.1:9/"),
            "could not connect to http://127.0.0.1:9/: connection refused (ERR_CONNECTION_REFUSED)"
        );
        let (net, url) = net_error_in(
            "Reached error page: about:neterror?e=connectionFailure&u=http%3A//127.0.0.1%3A54259/x&c=UTF-8&d=Firefox",
        )
        .expect("firefox");
        assert_eq!(url.as_deref(), Some("http://127.0.0.1:54259/x"));
        assert_eq!(net.plain, "connection refused");
        let (net, _) =
            net_error_in("Reached error page: about:neterror?e=dnsNotFound&u=x").expect("dns");
        assert_eq!(net.code, "not-found");
        assert_eq!(net_error("ERR_UNSAFE_PORT").map(|e| e.code), Some("denied"));
        assert_eq!(
            net_error("ERR_CERT_DATE_INVALID").map(|e| e.code),
            Some("failed")
        );
        assert!(net_error("somethingElse").is_none());
        assert!(net_error_in("javascript error: x is not defined").is_none());
    }

    #[test]
    fn host_refusals_and_network_errors_become_plain_failures() {
        let doing = Doing {
            tab: Some(2),
            what: "loading http://127.0.0.1:9/",
            acts: true,
        };
        let wd = |error: &str, message: &str| {
            CmdError::Wd(WdError {
                error: error.into(),
                message: message.into(),
                data: Value::Null,
            })
        };
        let f = failure(
            wd(
                "unknown error",
                "unknown error: net::ERR_CONNECTION_REFUSED",
            ),
            &doing,
        );
        assert_eq!(f.code.as_str(), "unavailable");
        assert_eq!(
            f.message,
            "loading http://127.0.0.1:9/ in tab 2: could not connect to http://127.0.0.1:9/: connection refused (ERR_CONNECTION_REFUSED)"
        );
        assert!(!f.input_fired);
        let f = failure(
            wd(
                "invalid argument",
                "stephost: /etc/passwd is outside the folders granted for uploads",
            ),
            &doing,
        );
        assert_eq!(f.code.as_str(), "denied");
        assert!(
            f.message.contains("the host refused it: /etc/passwd"),
            "{}",
            f.message
        );
    }

    #[test]
    fn the_host_facts_come_from_the_capabilities() {
        let (downloads, uploads) = host_facts(
            r#"{"browserName":"chrome","stephost:downloadDir":"/tmp/d","stephost:uploadDirs":["/srv/up"]}"#,
        );
        assert_eq!(downloads.as_deref(), Some("/tmp/d"));
        assert_eq!(uploads, vec!["/srv/up".to_owned()]);
        assert_eq!(host_facts("{}"), (None, Vec::new()));
        assert_eq!(percent_decode("a%2Fb%zz"), "a/b%zz");
    }
}
