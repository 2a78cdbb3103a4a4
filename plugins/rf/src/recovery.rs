//! Recovery strategies for failed keywords, for the host's `execute_batch` with
//! `on_failure: "recover"` (rf-mcp's tiered recovery).
//!
//! The host knows no keyword by name, so a `run_keyword` failure (code `failed`) proposes
//! what to try: the failure gets a `classification` of the error message and a
//! `recovery` list of strategies, each a list of `run_keyword` inputs. The host runs one
//! strategy's actions, waits its backoff and re-runs the failed step.
//!
//! - The classification follows rf-mcp 0.36's error patterns and their priorities
//!   ([`classify`]).
//! - Strategies are offered only when they can run in this session: a keyword of an
//!   imported remote library tagged `recovery` (any recognized recoverable class, not
//!   `unknown`) or `recovery:<classification>` (that class only, even an
//!   unrecoverable one), and
//!   rf-mcp's well-known keyword strategies when an imported library has the keyword
//!   (SeleniumLibrary's `Handle Alert`, `Execute Javascript`, `Go Back`, `Reload Page`).
//! - rf-mcp's strategies that only sleep (`wait_and_retry`, `stale_retry`,
//!   `extended_timeout`, the desktop ones) and the `Sleep` after its other actions are
//!   left out: waiting is the host's tier-1 backoff before every retry.
//! - Order: tier 1 first, then the libraries' own strategies (the failed keyword's
//!   library first), then the well-known tier 2 ones; an action already proposed is not
//!   proposed again, and the failed keyword never is. A fatal failure gets none: RF stops
//!   the run after it.
//! - Action arguments are RF cells, escaped where RF would read them otherwise (`\=`,
//!   `\${`), so that they arrive as rf-mcp wrote them.

use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};
use serde_json::json;
use stephost_plugin::{RecoveryAction, RecoveryStrategy};

use crate::engine::{LibKind, Session};
use crate::error::RfError;
use crate::matching::{normalize, normalize_name};

/// What kind of error a failure message describes (rf-mcp's `ErrorClassification`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// RF's `Variable '${x}' not found.`: the test data is wrong; retrying cannot help.
    VariableNotFound,
    /// No element matched the locator.
    ElementNotFound,
    /// The element exists but cannot be used (hidden, disabled).
    ElementNotInteractable,
    /// Another element (an overlay) would receive the click.
    ElementClickIntercepted,
    /// Something did not happen in time.
    Timeout,
    /// An alert dialog blocks the page.
    UnexpectedAlert,
    /// The element left the DOM.
    StaleElement,
    /// The browser is on another page than expected.
    NavigationDrift,
    /// The page is an HTTP error page.
    ErrorPage,
    /// The login or browser session is gone; retrying cannot help.
    SessionLoss,
    /// Anything else.
    Unknown,
}

impl Class {
    /// The kebab-case name used as the failure's classification and in
    /// `recovery:<name>` tags.
    pub fn name(self) -> &'static str {
        match self {
            Class::VariableNotFound => "variable-not-found",
            Class::ElementNotFound => "element-not-found",
            Class::ElementNotInteractable => "element-not-interactable",
            Class::ElementClickIntercepted => "element-click-intercepted",
            Class::Timeout => "timeout",
            Class::UnexpectedAlert => "unexpected-alert",
            Class::StaleElement => "stale-element",
            Class::NavigationDrift => "navigation-drift",
            Class::ErrorPage => "error-page",
            Class::SessionLoss => "session-loss",
            Class::Unknown => "unknown",
        }
    }

    /// Whether general strategies (a bare `recovery` tag, the well-known keywords)
    /// apply; the other classes get only the strategies a library tags for them
    /// explicitly. `unknown` is one of those: an error no pattern recognizes (a
    /// `KeyError` in a library) says nothing about the page, and a keyword that resets
    /// state (clears data, logs out) must not run for it unless it declares that class.
    pub fn recoverable(self) -> bool {
        !matches!(
            self,
            Class::VariableNotFound | Class::SessionLoss | Class::Unknown
        )
    }
}

/// rf-mcp's patterns (`RecoveryEngine._register_default_patterns`), sorted by its
/// priorities (15, 12, 10, 8, 7, 5; registration order within one), matched
/// case-insensitively; the first match wins. One deviation: rf-mcp's session-loss pattern
/// has a bare `401`, which also matches inside numbers such as `14010 != 14011`; here it
/// is `\b401\b`, like its `\b404\b` and `\b500\b`.
const PATTERNS: &[(Class, &str)] = &[
    // Before element-not-found, which "Variable '${x}' not found" would match too.
    (Class::VariableNotFound, r"Variable\s+'[^']+'\s+not found"),
    // Desktop (PlatynUI) lookup failures mention a timeout: they outrank `timeout`.
    (
        Class::ElementNotFound,
        r"No UiNode found|ElementNotFoundError|UiNodeDescriptor",
    ),
    (
        Class::ElementNotFound,
        r"(?:element|locator|selector).*not found|unable to locate|did not match|no element|cannot find",
    ),
    (
        Class::ElementNotInteractable,
        r"not interactable|not visible|not enabled|element is not",
    ),
    (
        Class::ElementClickIntercepted,
        r"click intercepted|intercepts pointer|other element would receive",
    ),
    (
        Class::UnexpectedAlert,
        r"unexpected alert|alert open|UnexpectedAlertPresentException",
    ),
    (
        Class::StaleElement,
        r"stale element|not attached to page|StaleElementReferenceException",
    ),
    (
        Class::Timeout,
        r"timeout|timed out|Timeout exceeded|TimeoutError",
    ),
    (
        Class::SessionLoss,
        r"session expired|login redirect|unauthorized|session not found|\b401\b",
    ),
    (
        Class::NavigationDrift,
        r"unexpected url|unexpected page|unexpected redirect|wrong page",
    ),
    (
        Class::ErrorPage,
        r"\b404\b|\b500\b|internal server error|page not found|service unavailable",
    ),
];

static COMPILED: LazyLock<Vec<(Class, Regex)>> = LazyLock::new(|| {
    PATTERNS
        .iter()
        .map(|(class, pattern)| {
            let re = RegexBuilder::new(pattern)
                .case_insensitive(true)
                .build()
                .expect("recovery patterns are valid");
            (*class, re)
        })
        .collect()
});

/// Classifies a failure message.
pub fn classify(message: &str) -> Class {
    COMPILED
        .iter()
        .find(|(_, re)| re.is_match(message))
        .map_or(Class::Unknown, |(class, _)| *class)
}

/// One of rf-mcp's strategies that runs a library keyword.
struct WellKnown {
    name: &'static str,
    tier: u8,
    classes: &'static [Class],
    description: &'static str,
    keyword: &'static str,
    args: &'static [&'static str],
    action: &'static str,
}

/// rf-mcp's `_register_default_strategies` that do more than sleep, in its order, minus
/// their `Sleep` actions (see the module documentation).
const WELL_KNOWN: &[WellKnown] = &[
    WellKnown {
        name: "handle_alert",
        tier: 1,
        classes: &[Class::UnexpectedAlert],
        description: "Dismiss the alert, then retry",
        keyword: "Handle Alert",
        args: &["DISMISS"],
        action: "Dismiss unexpected alert",
    },
    WellKnown {
        name: "scroll_and_wait",
        tier: 1,
        classes: &[Class::ElementNotInteractable],
        description: "Scroll the element into view, then retry",
        keyword: "Execute Javascript",
        args: &["window.scrollBy(0, 300)"],
        action: "Scroll down",
    },
    WellKnown {
        name: "dismiss_overlay",
        tier: 1,
        classes: &[Class::ElementClickIntercepted],
        description: "Remove overlays blocking clicks, then retry",
        keyword: "Execute Javascript",
        args: &[
            "document.querySelectorAll('[class*=overlay],[class*=modal],[class*=popup],[class*=cookie],[class*=banner]').forEach(e => e.remove())",
        ],
        action: "Remove overlay/modal/popup elements from DOM",
    },
    WellKnown {
        name: "navigate_back",
        tier: 2,
        classes: &[Class::NavigationDrift, Class::ElementNotFound],
        description: "Navigate back, then retry",
        keyword: "Go Back",
        args: &[],
        action: "Navigate back",
    },
    WellKnown {
        name: "reload_page",
        tier: 2,
        classes: &[Class::ErrorPage, Class::Timeout],
        description: "Reload the page, then retry",
        keyword: "Reload Page",
        args: &[],
        action: "Reload current page",
    },
];

/// The classification and recovery strategies of a failed `run_keyword` call.
pub fn propose(
    session: &mut Session,
    keyword: &str,
    error: &RfError,
) -> (Class, Vec<RecoveryStrategy>) {
    let class = classify(&error.message);
    let recovery = if error.fatal {
        Vec::new()
    } else {
        strategies(session, keyword, class)
    };
    (class, recovery)
}

/// The strategies for a failure of `keyword` classified as `class`, in trying order.
pub fn strategies(session: &mut Session, keyword: &str, class: Class) -> Vec<RecoveryStrategy> {
    let failed = failed_keyword(session, keyword);
    // The failed keyword's own library first: its keywords know its state best.
    let mut libs: Vec<(usize, String, Vec<String>)> = session
        .libraries
        .iter()
        .enumerate()
        .filter_map(|(li, lib)| match &lib.kind {
            // The sandboxed libraries (BuiltIn, String, Collections) have no recovery
            // keywords and none of the well-known ones.
            LibKind::Remote(r) => Some((li, lib.name.clone(), r.keyword_names().to_vec())),
            LibKind::Static(_) | LibKind::Python(_) | LibKind::Resource(_) => None,
        })
        .collect();
    libs.sort_by_key(|(li, ..)| failed.as_ref().is_none_or(|(f, _)| f != li));
    let is_failed = |li: usize, kw: &str| {
        failed
            .as_ref()
            .is_some_and(|(f, name)| *f == li && normalize_name(name) == normalize_name(kw))
    };

    let mut tier1 = Vec::new();
    let mut well_known_tier2 = Vec::new();
    for wk in WELL_KNOWN.iter().filter(|wk| wk.classes.contains(&class)) {
        let target = libs.iter().find_map(|(li, lib_name, names)| {
            let kw = names
                .iter()
                .find(|n| normalize_name(n) == normalize_name(wk.keyword))?;
            let runnable = !is_failed(*li, kw)
                && crate::remote::accepts_positional(session, *li, kw, wk.args.len());
            runnable.then(|| format!("{lib_name}.{kw}"))
        });
        if let Some(full_name) = target {
            let list = if wk.tier == 1 {
                &mut tier1
            } else {
                &mut well_known_tier2
            };
            list.push(strategy(
                wk.name,
                wk.tier,
                wk.description,
                &full_name,
                wk.args,
                wk.action,
            ));
        }
    }

    let mut offered = Vec::new();
    for (li, lib_name, names) in &libs {
        for kw in names {
            if is_failed(*li, kw) {
                continue;
            }
            // An unreachable server: skip its other keywords too, rather than wait on
            // each; the next failure asks again.
            let Some(tags) = crate::remote::keyword_tags(session, *li, kw) else {
                break;
            };
            if !tags.iter().any(|t| tag_applies(t, class))
                || !crate::remote::accepts_positional(session, *li, kw, 0)
            {
                continue;
            }
            let full_name = format!("{lib_name}.{kw}");
            // The first line of its documentation says what it does, unless that is
            // the `Tags:` line itself.
            let doc = crate::remote::keyword_doc(session, *li, kw).unwrap_or_default();
            let first = doc
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .trim_end_matches('.');
            let what = if first.is_empty() || first.to_lowercase().contains("tags:") {
                format!("Run {full_name}")
            } else {
                first.to_string()
            };
            let description = format!("{what}, then retry");
            let action = format!("Recovery keyword of library '{lib_name}'");
            offered.push(strategy(kw, 2, &description, &full_name, &[], &action));
        }
    }

    // A library may tag a well-known keyword (`Go Back`) itself: run each action once.
    // Names stay unique, since the host tells strategies apart by name: a second
    // library's `Reset Widget` goes by its full name.
    let mut all: Vec<RecoveryStrategy> = Vec::new();
    for mut st in tier1.into_iter().chain(offered).chain(well_known_tier2) {
        let inputs = |st: &RecoveryStrategy| -> Vec<String> {
            st.actions.iter().map(|a| a.input.clone()).collect()
        };
        if all.iter().any(|seen| inputs(seen) == inputs(&st)) {
            continue;
        }
        if all.iter().any(|seen| seen.name == st.name) {
            let keyword = st
                .actions
                .first()
                .map(|a| a.input_json()["keyword"].clone());
            if let Some(serde_json::Value::String(keyword)) = keyword {
                st.name = keyword;
            }
        }
        all.push(st);
    }
    all
}

/// Whether keyword tag `tag` offers its keyword for errors of class `class`: `recovery`
/// for every recoverable class, `recovery:<class>` for that class. Tags compare as RF
/// compares them: case, spaces and underscores ignored.
fn tag_applies(tag: &str, class: Class) -> bool {
    let tag = normalize_name(tag);
    match tag.strip_prefix("recovery") {
        Some("") => class.recoverable(),
        Some(rest) => rest.strip_prefix(':') == Some(class.name()),
        None => false,
    }
}

/// The remote library and keyword name that `keyword` (as the step named it: `Kw` or
/// `Lib.Kw`) ran, so that a strategy never proposes the failed keyword itself.
fn failed_keyword(session: &Session, keyword: &str) -> Option<(usize, String)> {
    let has = |names: &[String], kw: &str| {
        names
            .iter()
            .find(|n| normalize_name(n) == normalize_name(kw))
            .cloned()
    };
    for (li, lib) in session.libraries.iter().enumerate() {
        let LibKind::Remote(r) = &lib.kind else {
            continue;
        };
        let lib_norm = normalize(&lib.name, &[], true, true);
        let qualified = keyword
            .match_indices('.')
            .filter(|(i, _)| normalize(&keyword[..*i], &[], true, true) == lib_norm)
            .find_map(|(i, _)| has(r.keyword_names(), &keyword[i + 1..]));
        if let Some(kw) = qualified.or_else(|| has(r.keyword_names(), keyword)) {
            return Some((li, kw));
        }
    }
    None
}

/// `text` as RF test data for one argument: `run_keyword` arguments are cells, where
/// `\`, `${...}` and a `name=value` look (rf-mcp's overlay JavaScript has `[class*=x]`
/// and `=>`; a keyword with `**kwargs` would take it as a named argument) mean something.
fn escape_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let variable = matches!(c, '$' | '@' | '&' | '%') && chars.peek() == Some(&'{');
        if matches!(c, '\\' | '=') || variable {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A strategy of one `run_keyword` action.
fn strategy(
    name: &str,
    tier: u8,
    description: &str,
    keyword: &str,
    args: &[&str],
    action: &str,
) -> RecoveryStrategy {
    let cells: Vec<String> = args.iter().map(|a| escape_cell(a)).collect();
    let input = json!({"keyword": keyword, "args": cells});
    RecoveryStrategy::new(name, tier)
        .with_description(description)
        .with_action(RecoveryAction::new("run_keyword", input).with_description(action))
}

#[cfg(test)]
mod tests;
