//! `wait_for_page` (`wait_for` in `browser_batch`): polls a tab until an
//! element shows or goes, its URL matches, or its network goes idle, so a batch
//! waits for what it needs instead of sleeping a guessed time. Each look is the
//! page library's `probe`, so an element is matched with the same roles, names
//! and visibility that `read_page` and `find` use.
//!
//! The poll runs here, one script per round, rather than as one long script in
//! the page: a navigation while waiting (the usual reason to wait) destroys a
//! page script, and WebDriver's script timeout would cap the wait.

use serde_json::{Value, json};
use stephost_plugin::{Failure, FailureCode};

use crate::args::{Args, BrowserArgs};
use crate::browser::Browser;
use crate::error::{Result, has_code, invalid};
use crate::page;

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
    /// The page has loaded and no request of it finished or ran for a while.
    NetworkIdle,
}

impl Condition {
    fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "appears" => Self::Appears,
            "gone" => Self::Gone,
            "url_matches" => Self::UrlMatches,
            "network_idle" => Self::NetworkIdle,
            other => {
                return Err(invalid(
                    "condition",
                    format!(
                        "`condition` is appears, gone, url_matches or network_idle; got `{other}`"
                    ),
                ));
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Appears => "appears",
            Self::Gone => "gone",
            Self::UrlMatches => "url_matches",
            Self::NetworkIdle => "network_idle",
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
    /// A ref from read_page or find.
    Ref,
    /// What `find` would answer first for the pattern as a description.
    Description,
}

impl By {
    fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "text" => Self::Text,
            "regex" => Self::Regex,
            "role" => Self::Role,
            "aria_label" | "ariaLabel" => Self::AriaLabel,
            "selector" => Self::Selector,
            "ref" => Self::Ref,
            "description" => Self::Description,
            other => {
                return Err(invalid(
                    "by",
                    format!(
                        "`by` is text, regex, role, aria_label, selector, ref or description; \
                         got `{other}`"
                    ),
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
            Self::Ref => "ref",
            Self::Description => "description",
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
            Self::Ref => pattern.to_owned(),
            Self::Description => format!("matching the description {pattern:?}"),
        }
    }
}

/// What to wait for, read from the arguments: `condition` + `by` + `pattern`,
/// or one of the shortcuts an agent reaches for first (`text`, `text_gone`,
/// `ref`, `url`).
fn goal(args: &Args) -> Result<(Condition, By, String)> {
    let shortcut = [
        ("text", Condition::Appears, By::Text),
        ("text_gone", Condition::Gone, By::Text),
        ("ref", Condition::Appears, By::Ref),
        ("url", Condition::UrlMatches, By::Text),
    ]
    .into_iter()
    .find(|(field, _, _)| args.get(field).is_some());
    if let Some((field, appears, by)) = shortcut {
        let pattern = args.str(field)?;
        if pattern.is_empty() {
            return Err(invalid(field, format!("`{field}` is empty")));
        }
        // `ref` may come with condition gone: wait for the element to go.
        let condition = match args.opt_str("condition")? {
            Some(c) if field == "ref" => Condition::parse(c)?,
            _ => appears,
        };
        return Ok((condition, by, pattern.to_owned()));
    }
    let Some(condition) = args.opt_str("condition")? else {
        return Err(invalid(
            "condition",
            "say what to wait for: text (or text_gone) with the words, ref, url, or condition \
             appears / gone / url_matches / network_idle with by and pattern",
        ));
    };
    let condition = Condition::parse(condition)?;
    let by = By::parse(args.str_or("by", "text")?)?;
    if condition == Condition::NetworkIdle {
        return Ok((condition, by, String::new()));
    }
    let pattern = args.str("pattern")?;
    if pattern.is_empty() {
        return Err(invalid("pattern", "`pattern` is empty"));
    }
    Ok((condition, by, pattern.to_owned()))
}

/// `wait_for_page`.
pub(crate) fn wait_for_page(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let (condition, by, pattern) = goal(args)?;
    let scope = args.opt_str("scope")?;
    let case_sensitive = args.boolean("case_sensitive", false)?;
    let regex = args.boolean("regex", false)?;
    let timeout_ms = args
        .opt_int("timeout_ms", 0..=MAX_WAIT_MS)?
        .unwrap_or(DEFAULT_WAIT_MS);
    let interval_ms = args
        .opt_int("interval_ms", 50..=5_000)?
        .unwrap_or(DEFAULT_INTERVAL_MS);
    let idle_ms = args.opt_int("idle_ms", 0..=10_000)?.unwrap_or(500);
    let probe_args = json!({
        "condition": condition.name(),
        "by": by.name(),
        "pattern": pattern,
        "scope": scope,
        "case_sensitive": case_sensitive,
        "regex": regex,
        "idle_ms": idle_ms,
    });
    let started = crate::clock::now_ns();
    let limit_ns = ms_to_ns(timeout_ms);
    let mut last: Option<Value> = None;
    let mut last_error: Option<String>;
    loop {
        match page::call(
            browser,
            tab,
            "probe",
            "waiting on the page",
            false,
            probe_args.clone(),
        ) {
            Ok(answer) => {
                if let Some(field) = answer.get("bad").and_then(Value::as_str) {
                    let field = if field == "scope" { "scope" } else { "pattern" };
                    let message = answer.get("message").and_then(Value::as_str).unwrap_or("");
                    return Err(invalid(field, format!("`{field}`: {message}")));
                }
                let found = answer.get("found").and_then(Value::as_bool) == Some(true);
                if found != (condition == Condition::Gone) {
                    let elapsed = ns_to_ms(crate::clock::now_ns().saturating_sub(started));
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
        let elapsed = crate::clock::now_ns().saturating_sub(started);
        if elapsed >= limit_ns {
            return Err(timed_out(
                tab,
                condition,
                by,
                &pattern,
                ns_to_ms(elapsed),
                last.as_ref(),
                last_error.as_deref(),
            ));
        }
        let pause = ms_to_ns(interval_ms).min(limit_ns - elapsed);
        crate::clock::sleep_ns(pause);
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
        Condition::UrlMatches | Condition::NetworkIdle => {}
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
        Condition::NetworkIdle => {
            let running = last
                .and_then(|l| l.get("inflight"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            format!("the network of tab {tab} did not go idle ({running} requests still running)")
        }
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
            e.message
                .contains("appears, gone, url_matches or network_idle"),
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

    fn goal_of(input: Value) -> Result<(Condition, By, String)> {
        goal(&Args::parse(&input.to_string()).expect("args"))
    }

    #[test]
    fn shortcuts_say_what_to_wait_for() {
        let text = goal_of(json!({"tabId": 1, "text": "Report ready"})).expect("text");
        assert_eq!(text, (Condition::Appears, By::Text, "Report ready".into()));
        let gone = goal_of(json!({"tabId": 1, "text_gone": "Loading"})).expect("gone");
        assert_eq!(gone.0, Condition::Gone);
        let r = goal_of(json!({"tabId": 1, "ref": "ref_3", "condition": "gone"})).expect("ref");
        assert_eq!(r, (Condition::Gone, By::Ref, "ref_3".into()));
        let url = goal_of(json!({"tabId": 1, "url": "/done"})).expect("url");
        assert_eq!(url.0, Condition::UrlMatches);
        let idle = goal_of(json!({"tabId": 1, "condition": "network_idle"})).expect("idle");
        assert_eq!(idle.0, Condition::NetworkIdle);
        let none = goal_of(json!({"tabId": 1})).expect_err("nothing to wait for");
        assert!(
            none.message.contains("say what to wait for"),
            "{}",
            none.message
        );
        let empty = goal_of(json!({"tabId": 1, "text": ""})).expect_err("empty");
        assert!(
            empty.message.contains("`text` is empty"),
            "{}",
            empty.message
        );
        let no_pattern = goal_of(json!({"tabId": 1, "condition": "appears"})).expect_err("pattern");
        assert!(
            no_pattern.message.contains("pattern"),
            "{}",
            no_pattern.message
        );
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
