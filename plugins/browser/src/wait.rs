//! `wait_for_page`: polls a tab until an element shows or goes, or its URL
//! matches, so a batch waits for what it needs instead of sleeping a guessed
//! time.
//!
//! The poll runs here, one script per round, rather than as one long script in
//! the page: a navigation while waiting (the usual reason to wait) destroys a
//! page script, and WebDriver's script timeout would cap the wait.

use serde_json::{Value, json};
use stephost_plugin::{Failure, FailureCode};

use crate::args::{Args, BrowserArgs};
use crate::browser::Browser;
use crate::error::{Result, has_code, invalid};

/// Longest wait, in ms.
pub(crate) const MAX_WAIT_MS: i64 = 60_000;
const DEFAULT_WAIT_MS: i64 = 5_000;
const DEFAULT_INTERVAL_MS: i64 = 200;

/// What the caller waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Condition {
    /// A visible element matches.
    Appears,
    /// No visible element matches.
    Gone,
    /// The tab's URL matches.
    UrlMatches,
}

impl Condition {
    fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "appears" => Self::Appears,
            "gone" => Self::Gone,
            "url_matches" => Self::UrlMatches,
            other => {
                return Err(invalid(
                    "condition",
                    format!("`condition` is appears, gone or url_matches; got `{other}`"),
                ));
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Appears => "appears",
            Self::Gone => "gone",
            Self::UrlMatches => "url_matches",
        }
    }
}

/// How an element is matched against `pattern`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    Text,
    Regex,
    Role,
    AriaLabel,
    Selector,
}

impl By {
    fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "text" => Self::Text,
            "regex" => Self::Regex,
            "role" => Self::Role,
            "aria_label" | "ariaLabel" => Self::AriaLabel,
            "selector" => Self::Selector,
            other => {
                return Err(invalid(
                    "by",
                    format!("`by` is text, regex, role, aria_label or selector; got `{other}`"),
                ));
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Regex => "regex",
            Self::Role => "role",
            Self::AriaLabel => "aria_label",
            Self::Selector => "selector",
        }
    }

    /// The condition in words, for the timeout message.
    fn describe(self, pattern: &str) -> String {
        match self {
            Self::Text => format!("whose own text contains {pattern:?}"),
            Self::Regex => format!("whose own text matches /{pattern}/"),
            Self::Role => format!("with role {pattern:?}"),
            Self::AriaLabel => format!("whose aria-label contains {pattern:?}"),
            Self::Selector => format!("matching the selector {pattern:?}"),
        }
    }
}

/// One look at the page: the arguments are the probe's, the answer is
/// `{url, found, match?, scope_missing?, bad?}`.
const PROBE_JS: &str = r#"
const a = arguments[0];
const out = { url: location.href, found: false };
if (a.condition === 'url_matches') {
  if (a.regex) {
    let re;
    try { re = new RegExp(a.pattern); } catch (e) { return { bad: String(e.message || e) }; }
    out.found = re.test(location.href);
  } else {
    out.found = location.href.includes(a.pattern);
  }
  return out;
}
let root = document;
if (a.scope) {
  try { root = document.querySelector(a.scope); } catch (e) { return { bad: 'scope is not a CSS selector: ' + (e.message || e) }; }
  if (!root) { out.scope_missing = true; return out; }
}
const cs = !!a.case_sensitive;
let test = null;
if (a.by === 'regex') {
  let re;
  try { re = new RegExp(a.pattern, cs ? '' : 'i'); } catch (e) { return { bad: String(e.message || e) }; }
  test = (s) => re.test(s);
} else {
  const needle = cs ? a.pattern : a.pattern.toLowerCase();
  test = (s) => (cs ? s : s.toLowerCase()).includes(needle);
}
const visible = (el) => {
  const s = getComputedStyle(el);
  if (s.display === 'none' || s.visibility === 'hidden' || s.opacity === '0') return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
};
const own = (el) => Array.from(el.childNodes).filter((n) => n.nodeType === 3)
  .map((n) => n.textContent || '').join('').trim();
const roleOf = (el) => {
  const explicit = (el.getAttribute('role') || '').trim().toLowerCase();
  if (explicit) return explicit;
  const tag = el.tagName.toLowerCase();
  const type = (el.getAttribute('type') || '').toLowerCase();
  if (tag === 'button' || (tag === 'input' && /^(button|submit|reset|image)$/.test(type))) return 'button';
  if (tag === 'a' && el.hasAttribute('href')) return 'link';
  if (tag === 'input' && type === 'checkbox') return 'checkbox';
  if (tag === 'input' && type === 'radio') return 'radio';
  if (tag === 'textarea' || (tag === 'input' && !/^(hidden|range|color|file)$/.test(type))) return 'textbox';
  if (tag === 'select') return 'combobox';
  if (/^h[1-6]$/.test(tag)) return 'heading';
  if (tag === 'img') return 'img';
  if (tag === 'ul' || tag === 'ol') return 'list';
  if (tag === 'li') return 'listitem';
  if (tag === 'nav') return 'navigation';
  if (tag === 'main') return 'main';
  if (tag === 'dialog') return 'dialog';
  return '';
};
let candidates = [];
if (a.by === 'selector') {
  try { candidates = Array.from(root.querySelectorAll(a.pattern)); } catch (e) { return { bad: 'not a CSS selector: ' + (e.message || e) }; }
} else {
  const want = a.pattern.trim().toLowerCase();
  for (const el of root.querySelectorAll('*')) {
    let hit = false;
    if (a.by === 'text' || a.by === 'regex') { const t = own(el); hit = t !== '' && test(t); }
    else if (a.by === 'aria_label') { const l = el.getAttribute('aria-label') || ''; hit = l !== '' && test(l); }
    else if (a.by === 'role') { hit = roleOf(el) === want; }
    if (hit) { candidates.push(el); if (candidates.length >= 200) break; }
  }
}
const el = candidates.find(visible);
if (el) {
  out.found = true;
  const text = (own(el) || el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 120);
  out.match = { tag: el.tagName.toLowerCase(), text };
  if (el.id) out.match.id = el.id;
  const role = roleOf(el);
  if (role) out.match.role = role;
}
return out;
"#;

/// `wait_for_page`.
pub(crate) fn wait_for_page(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let condition = Condition::parse(args.str("condition")?)?;
    let by = By::parse(args.str_or("by", "text")?)?;
    let pattern = args.str("pattern")?;
    if pattern.is_empty() {
        return Err(invalid("pattern", "`pattern` is empty"));
    }
    let scope = args.opt_str("scope")?;
    let case_sensitive = args.boolean("case_sensitive", false)?;
    let regex = args.boolean("regex", false)?;
    let timeout_ms = args
        .opt_int("timeout_ms", 0..=MAX_WAIT_MS)?
        .unwrap_or(DEFAULT_WAIT_MS);
    let interval_ms = args
        .opt_int("interval_ms", 50..=5_000)?
        .unwrap_or(DEFAULT_INTERVAL_MS);
    let probe_args = json!({
        "condition": condition.name(),
        "by": by.name(),
        "pattern": pattern,
        "scope": scope,
        "case_sensitive": case_sensitive,
        "regex": regex,
    });
    let started = now_ns();
    let limit_ns = ms_to_ns(timeout_ms);
    let mut last: Option<Value> = None;
    let mut last_error: Option<String>;
    loop {
        match browser.script(
            tab,
            "waiting on the page",
            false,
            PROBE_JS,
            json!([probe_args]),
        ) {
            Ok(answer) => {
                if let Some(bad) = answer.get("bad").and_then(Value::as_str) {
                    let field = if bad.starts_with("scope") {
                        "scope"
                    } else {
                        "pattern"
                    };
                    return Err(invalid(field, format!("`{field}`: {bad}")));
                }
                let found = answer.get("found").and_then(Value::as_bool) == Some(true);
                if found != (condition == Condition::Gone) {
                    let elapsed = ns_to_ms(now_ns().saturating_sub(started));
                    return Ok(success(tab, condition, elapsed, &answer));
                }
                last = Some(answer);
                last_error = None;
            }
            // A navigation under way makes a script fail for a moment; only
            // what cannot get better ends the wait early.
            Err(f) if transient(&f) => last_error = Some(f.message),
            Err(f) => return Err(f),
        }
        let elapsed = now_ns().saturating_sub(started);
        if elapsed >= limit_ns {
            return Err(timed_out(
                tab,
                condition,
                by,
                pattern,
                ns_to_ms(elapsed),
                last.as_ref(),
                last_error.as_deref(),
            ));
        }
        let pause = ms_to_ns(interval_ms).min(limit_ns - elapsed);
        wasi::clocks::monotonic_clock::subscribe_duration(pause).block();
    }
}

/// Whether a failed probe may succeed on the next round.
fn transient(f: &Failure) -> bool {
    f.code == FailureCode::Failed || has_code(f, "timeout")
}

fn success(tab: u32, condition: Condition, elapsed_ms: u64, answer: &Value) -> Value {
    let mut value = json!({
        "tabId": tab,
        "condition": condition.name(),
        "elapsed_ms": elapsed_ms,
        "url": answer.get("url"),
    });
    match condition {
        Condition::Appears => value["match"] = answer.get("match").cloned().unwrap_or(Value::Null),
        Condition::Gone => value["gone"] = json!(true),
        Condition::UrlMatches => {}
    }
    value
}

fn timed_out(
    tab: u32,
    condition: Condition,
    by: By,
    pattern: &str,
    elapsed_ms: u64,
    last: Option<&Value>,
    last_error: Option<&str>,
) -> Failure {
    let url = last
        .and_then(|l| l.get("url"))
        .and_then(Value::as_str)
        .map(|u| format!(" (at {u})"))
        .unwrap_or_default();
    let what = match condition {
        Condition::UrlMatches => format!("the URL of tab {tab} did not match {pattern:?}"),
        Condition::Appears => format!(
            "no visible element {} appeared in tab {tab}",
            by.describe(pattern)
        ),
        Condition::Gone => format!(
            "a visible element {} was still in tab {tab}",
            by.describe(pattern)
        ),
    };
    let mut message = format!("after {elapsed_ms} ms {what}{url}");
    if last
        .and_then(|l| l.get("scope_missing"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        message.push_str("; the scope selector matched nothing");
    }
    if let Some(e) = last_error {
        message.push_str(&format!("; the last look failed: {e}"));
    }
    Failure::new(FailureCode::Timeout, message).with_input_fired(false)
}

fn now_ns() -> u64 {
    wasi::clocks::monotonic_clock::now()
}

fn ms_to_ns(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000)
}

fn ns_to_ms(ns: u64) -> u64 {
    ns / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_and_axes_parse_and_refuse_the_rest() {
        assert_eq!(Condition::parse("appears").ok(), Some(Condition::Appears));
        assert_eq!(Condition::parse("gone").ok(), Some(Condition::Gone));
        assert_eq!(
            Condition::parse("url_matches").ok(),
            Some(Condition::UrlMatches)
        );
        let e = Condition::parse("visible").expect_err("unknown");
        assert!(
            e.message.contains("appears, gone or url_matches"),
            "{}",
            e.message
        );
        assert_eq!(By::parse("ariaLabel").ok(), Some(By::AriaLabel));
        assert_eq!(By::parse("aria_label").ok(), Some(By::AriaLabel));
        assert!(By::parse("xpath").is_err());
        for by in [By::Text, By::Regex, By::Role, By::AriaLabel, By::Selector] {
            assert_eq!(By::parse(by.name()).ok(), Some(by));
        }
    }

    #[test]
    fn a_timeout_says_what_was_awaited_and_where() {
        let last = json!({"url": "http://x/", "found": false, "scope_missing": true});
        let f = timed_out(
            2,
            Condition::Appears,
            By::Text,
            "Example Domain",
            5003,
            Some(&last),
            None,
        );
        assert_eq!(f.code, FailureCode::Timeout);
        assert!(!f.input_fired);
        assert!(
            f.message.contains("after 5003 ms no visible element whose own text contains \"Example Domain\" appeared in tab 2 (at http://x/)"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("scope selector matched nothing"),
            "{}",
            f.message
        );
        let f = timed_out(
            1,
            Condition::UrlMatches,
            By::Text,
            "/done",
            10,
            None,
            Some("boom"),
        );
        assert!(
            f.message.contains("URL of tab 1 did not match \"/done\""),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("the last look failed: boom"),
            "{}",
            f.message
        );
    }

    #[test]
    fn success_carries_the_match_or_the_url() {
        let answer =
            json!({"url": "http://x/", "found": true, "match": {"tag": "h1", "text": "Hi"}});
        let v = success(1, Condition::Appears, 12, &answer);
        assert_eq!(v["match"]["tag"], "h1");
        assert_eq!(v["elapsed_ms"], 12);
        let v = success(1, Condition::Gone, 0, &json!({"url": "u", "found": false}));
        assert_eq!(v["gone"], true);
        let v = success(
            3,
            Condition::UrlMatches,
            5,
            &json!({"url": "u", "found": true}),
        );
        assert_eq!(v["url"], "u");
        assert!(v.get("match").is_none());
    }

    #[test]
    fn only_failures_that_may_pass_keep_the_wait_going() {
        assert!(transient(&Failure::new(
            FailureCode::Failed,
            "script threw"
        )));
        assert!(!transient(&Failure::new(
            FailureCode::NotFound,
            "tab closed"
        )));
        assert!(!transient(&Failure::new(
            FailureCode::from_name("dialog-open"),
            "dialog"
        )));
        assert!(!transient(&Failure::new(
            FailureCode::WorldMoved,
            "session gone"
        )));
    }
}
