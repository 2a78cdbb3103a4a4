//! Classification and strategies, with a fake remote server that answers by method.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::json;

use serde_json::Value as Json;
use stephost_plugin::{Failure, FailureCode, RecoveryAction, RecoveryStrategy};

use super::*;
use crate::plugin::invoke;
use crate::remote::{HttpError, Transport};

#[test]
fn classification_follows_rf_mcp_patterns_and_priorities() {
    let cases = [
        ("Variable '${missing}' not found.", "variable-not-found"),
        // Variable errors outrank "not found".
        ("Variable '${element}' not found.", "variable-not-found"),
        ("Element 'widget' not found", "element-not-found"),
        (
            "Element with locator 'id:x' not found after 5 seconds timeout.",
            "element-not-found",
        ),
        ("Unable to locate element: #submit", "element-not-found"),
        ("'abc' did not match 'x*'", "element-not-found"),
        (
            "No UiNode found within timeout of 30 seconds",
            "element-not-found",
        ),
        (
            "ElementNotInteractableException: element not interactable",
            "element-not-interactable",
        ),
        (
            "Element 'css:#b' is not visible",
            "element-not-interactable",
        ),
        (
            "ElementClickInterceptedException: element click intercepted: Other element would receive the click",
            "element-click-intercepted",
        ),
        (
            "TimeoutError: locator.click: Timeout 10000ms exceeded.",
            "timeout",
        ),
        ("Operation TIMED OUT", "timeout"),
        (
            "UnexpectedAlertPresentException: Alert Text: hi",
            "unexpected-alert",
        ),
        // Alerts (priority 10) outrank timeouts (8).
        ("unexpected alert open; timed out", "unexpected-alert"),
        (
            "StaleElementReferenceException: stale element reference",
            "stale-element",
        ),
        ("Expected page A but got the wrong page", "navigation-drift"),
        (
            "Location should have been 'x': unexpected URL",
            "navigation-drift",
        ),
        ("HTTP 404 returned", "error-page"),
        ("Internal Server Error", "error-page"),
        ("Session expired, please log in", "session-loss"),
        ("invalid session id: session not found", "session-loss"),
        ("HTTP 401", "session-loss"),
        // Session loss (7) outranks error pages (5).
        ("401 Unauthorized on a 404 page", "session-loss"),
        // rf-mcp's bare `401` would call this session loss.
        ("14010 != 14011", "unknown"),
        ("5004 != 500", "error-page"),
        ("1 != 2", "unknown"),
        ("", "unknown"),
    ];
    for (message, expected) in cases {
        assert_eq!(classify(message).name(), expected, "{message}");
    }
}

#[test]
fn tags_apply_by_class() {
    assert!(tag_applies("recovery", Class::Timeout));
    assert!(tag_applies("Recovery", Class::StaleElement));
    // An error no pattern recognizes gets only what declares that class.
    assert!(!tag_applies("recovery", Class::Unknown));
    assert!(tag_applies("recovery:unknown", Class::Unknown));
    assert!(!tag_applies("recovery", Class::VariableNotFound));
    assert!(!tag_applies("recovery", Class::SessionLoss));
    assert!(tag_applies("recovery:session-loss", Class::SessionLoss));
    assert!(tag_applies(
        "RECOVERY: Element-Not-Found",
        Class::ElementNotFound
    ));
    assert!(!tag_applies("recovery:element-not-found", Class::Timeout));
    assert!(!tag_applies(
        "recovery:element-not-found-ish",
        Class::ElementNotFound
    ));
    assert!(!tag_applies("recoveryx", Class::Timeout));
    assert!(!tag_applies("smoke", Class::Timeout));
}

/// How the fake server reports tags.
#[derive(Clone, Copy, PartialEq)]
enum Tags {
    /// `get_library_information` with a `tags` member (RF 4+ servers).
    Info,
    /// `get_library_information` without a `tags` member: RF reads no tags then.
    InfoOnly,
    /// No `get_library_information`, but `get_keyword_tags` (RF 3.0.2+ servers).
    Method,
    /// Neither (robotremoteserver 1.1.1): tags only from a `Tags:` line in the docs.
    None,
}

/// A keyword of the fake library: name, argument spec, documentation, tags.
type Kw = (
    &'static str,
    &'static [&'static str],
    &'static str,
    &'static [&'static str],
);

struct Fake {
    keywords: Vec<Kw>,
    tags: Tags,
    /// Every call's method name (and first string argument, if any).
    calls: Rc<RefCell<Vec<String>>>,
    /// Transport errors when set.
    down: Rc<RefCell<bool>>,
    /// The last `run_keyword` request.
    last_run: Rc<RefCell<String>>,
}

fn s(text: &str) -> String {
    format!("<value><string>{text}</string></value>")
}

fn arr(items: &[&str]) -> String {
    let items: String = items.iter().map(|i| s(i)).collect();
    format!("<value><array><data>{items}</data></array></value>")
}

fn member(name: &str, value: &str) -> String {
    format!("<member><name>{name}</name>{value}</member>")
}

fn ok(value: &str) -> Vec<u8> {
    format!("<?xml version='1.0'?><methodResponse><params><param>{value}</param></params></methodResponse>").into_bytes()
}

fn fault(text: &str) -> Vec<u8> {
    format!(
        "<?xml version='1.0'?><methodResponse><fault><value><struct>{}{}</struct></value></fault></methodResponse>",
        member("faultCode", "<value><int>1</int></value>"),
        member("faultString", &s(text)),
    )
    .into_bytes()
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    Some(&text[from..from + text[from..].find(end)?])
}

impl Transport for Fake {
    fn post(&mut self, _: &str, body: &[u8], _: Option<f64>) -> Result<Vec<u8>, HttpError> {
        let body = String::from_utf8_lossy(body);
        let method = between(&body, "<methodName>", "</methodName>").unwrap_or("");
        let arg = between(&body, "<string>", "</string>").unwrap_or("");
        self.calls
            .borrow_mut()
            .push(format!("{method} {arg}").trim().to_string());
        if *self.down.borrow() {
            return Err("[Errno 111] Connection refused".into());
        }
        if method == "run_keyword" {
            *self.last_run.borrow_mut() = body.to_string();
        }
        let kw = self.keywords.iter().find(|k| k.0 == arg);
        Ok(match (method, self.tags) {
            ("get_library_information", Tags::Info | Tags::InfoOnly) => {
                let members: String = self
                    .keywords
                    .iter()
                    .map(|(name, args, doc, tags)| {
                        let mut info = member("args", &arr(args)) + &member("doc", &s(doc));
                        if self.tags == Tags::Info {
                            info += &member("tags", &arr(tags));
                        }
                        member(name, &format!("<value><struct>{info}</struct></value>"))
                    })
                    .collect();
                ok(&format!("<value><struct>{members}</struct></value>"))
            }
            ("get_keyword_names", _) => {
                let names: Vec<&str> = self.keywords.iter().map(|k| k.0).collect();
                ok(&arr(&names))
            }
            ("get_keyword_arguments", _) => ok(&arr(kw.map_or(&[][..], |k| k.1))),
            ("get_keyword_documentation", _) => ok(&s(kw.map_or("", |k| k.2))),
            ("get_keyword_tags", Tags::Method) => ok(&arr(kw.map_or(&[][..], |k| k.3))),
            ("run_keyword", _) => {
                let status = if arg == "read_widget" { "FAIL" } else { "PASS" };
                ok(&format!(
                    "<value><struct>{}{}</struct></value>",
                    member("status", &s(status)),
                    member("error", &s("Element 'widget' not found")),
                ))
            }
            (other, _) => fault(&format!("method \"{other}\" is not supported")),
        })
    }
}

/// A library like tests/rf/remote_flaky.py, plus keywords that must not be offered.
const FLAKY: &[Kw] = &[
    ("read_widget", &[], "Reads the widget.", &[]),
    (
        "reset_widget",
        &[],
        "Resets the widget.\n\nMore text.",
        &["recovery:element-not-found"],
    ),
    ("clear_caches", &[], "", &["recovery", "smoke"]),
    ("relogin", &[], "Logs in again.", &["recovery:session-loss"]),
    // Needs an argument, so it cannot run as a recovery action.
    ("reset_to", &["state"], "", &["recovery"]),
    (
        "reset_optional",
        &["state=initial"],
        "Resets.",
        &["recovery"],
    ),
    ("go_back", &[], "Goes back.", &[]),
    ("reload_page", &["timeout=None"], "", &[]),
    ("handle_alert", &["action=ACCEPT", "timeout=None"], "", &[]),
    ("execute_javascript", &["*code"], "", &[]),
];

struct Setup {
    session: Session,
    calls: Rc<RefCell<Vec<String>>>,
    down: Rc<RefCell<bool>>,
    last_run: Rc<RefCell<String>>,
}

fn setup(keywords: &[Kw], tags: Tags) -> Setup {
    let calls = Rc::new(RefCell::new(Vec::new()));
    let down = Rc::new(RefCell::new(false));
    let last_run = Rc::new(RefCell::new(String::new()));
    let fake = Fake {
        keywords: keywords.to_vec(),
        tags,
        calls: calls.clone(),
        down: down.clone(),
        last_run: last_run.clone(),
    };
    let mut session = Session::new(Box::new(fake));
    let import = json!({"keyword": "Import Library", "args": ["Remote", "http://127.0.0.1:8270", "AS", "Flaky"]});
    invoke(&mut session, "run_keyword", &import.to_string()).unwrap();
    calls.borrow_mut().clear();
    Setup {
        session,
        calls,
        down,
        last_run,
    }
}

/// (name, tier, keyword, args) of each strategy.
fn summary(strategies: &[RecoveryStrategy]) -> Vec<(String, u64, String, Json)> {
    strategies
        .iter()
        .map(|st| {
            assert_eq!(st.actions.len(), 1, "{st:?}");
            let action = &st.actions[0];
            assert_eq!(action.verb, "run_keyword");
            let input = action.input_json();
            (
                st.name.clone(),
                u64::from(st.tier),
                input["keyword"].as_str().unwrap().to_string(),
                input["args"].clone(),
            )
        })
        .collect()
}

fn names(strategies: &[RecoveryStrategy]) -> Vec<String> {
    summary(strategies).into_iter().map(|s| s.0).collect()
}

#[test]
fn library_and_well_known_strategies_in_tier_order() {
    for tags in [Tags::Info, Tags::Method] {
        let mut t = setup(FLAKY, tags);
        let found = strategies(&mut t.session, "Read Widget", Class::ElementNotFound);
        assert_eq!(
            summary(&found),
            [
                (
                    "Reset Widget".into(),
                    2,
                    "Flaky.Reset Widget".into(),
                    json!([])
                ),
                (
                    "Clear Caches".into(),
                    2,
                    "Flaky.Clear Caches".into(),
                    json!([])
                ),
                (
                    "Reset Optional".into(),
                    2,
                    "Flaky.Reset Optional".into(),
                    json!([])
                ),
                ("navigate_back".into(), 2, "Flaky.Go Back".into(), json!([])),
            ]
        );
        let description = |st: &RecoveryStrategy| st.description.clone().unwrap_or_default();
        assert_eq!(description(&found[0]), "Resets the widget, then retry");
        assert_eq!(description(&found[1]), "Run Flaky.Clear Caches, then retry");
        assert_eq!(description(&found[3]), "Navigate back, then retry");
        assert_eq!(
            found[3].actions[0].description.as_deref(),
            Some("Navigate back")
        );

        let found = strategies(&mut t.session, "Click", Class::UnexpectedAlert);
        assert_eq!(
            summary(&found),
            [
                (
                    "handle_alert".into(),
                    1,
                    "Flaky.Handle Alert".into(),
                    json!(["DISMISS"])
                ),
                (
                    "Clear Caches".into(),
                    2,
                    "Flaky.Clear Caches".into(),
                    json!([])
                ),
                (
                    "Reset Optional".into(),
                    2,
                    "Flaky.Reset Optional".into(),
                    json!([])
                ),
            ]
        );
        let found = strategies(&mut t.session, "Click", Class::ElementClickIntercepted);
        assert_eq!(found[0].name, "dismiss_overlay");
        assert_eq!(found[0].tier, 1);
        let found = strategies(&mut t.session, "Click", Class::Timeout);
        assert_eq!(
            names(&found),
            ["Clear Caches", "Reset Optional", "reload_page"]
        );
    }
}

#[test]
fn unrecoverable_classes_get_only_explicitly_tagged_strategies() {
    let mut t = setup(FLAKY, Tags::Info);
    let found = strategies(&mut t.session, "Open", Class::SessionLoss);
    assert_eq!(names(&found), ["Relogin"]);
    let found = strategies(&mut t.session, "Open", Class::VariableNotFound);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn tags_are_fetched_once_per_keyword() {
    let mut t = setup(FLAKY, Tags::Method);
    strategies(&mut t.session, "Read Widget", Class::ElementNotFound);
    let first: Vec<String> = t.calls.borrow().clone();
    assert!(first.contains(&"get_keyword_tags reset_widget".to_string()));
    // The failed keyword is not asked about: it is never its own recovery.
    assert!(!first.contains(&"get_keyword_tags read_widget".to_string()));
    t.calls.borrow_mut().clear();
    // Only what the first failure did not need: Reload Page's arguments, and the tags
    // (and docs, for a `Tags:` line) of the keyword that failed then.
    strategies(&mut t.session, "Go Back", Class::Timeout);
    let second = t.calls.borrow().clone();
    assert_eq!(
        second,
        [
            "get_keyword_arguments reload_page",
            "get_keyword_tags read_widget",
            "get_keyword_documentation read_widget"
        ]
    );
    t.calls.borrow_mut().clear();
    strategies(&mut t.session, "Read Widget", Class::Timeout);
    assert!(t.calls.borrow().is_empty(), "{:?}", t.calls.borrow());

    // With `get_library_information`, nothing beyond the import is needed.
    let mut t = setup(FLAKY, Tags::Info);
    strategies(&mut t.session, "Read Widget", Class::ElementNotFound);
    assert!(t.calls.borrow().is_empty(), "{:?}", t.calls.borrow());
}

#[test]
fn servers_without_tags_offer_doc_tags_or_nothing() {
    // No tags method: asked once, then only the docs are read (RF's `Tags:` line).
    let doc_tagged: &[Kw] = &[
        ("read_widget", &[], "", &[]),
        (
            "reset_widget",
            &[],
            "Resets the widget.\n\nTags: recovery:element-not-found, smoke",
            &[],
        ),
        ("fix", &[], "*Tags:* Recovery", &[]),
        ("other", &[], "Tags are nice.\nTags:", &[]),
    ];
    let mut t = setup(doc_tagged, Tags::None);
    let found = strategies(&mut t.session, "Read Widget", Class::ElementNotFound);
    assert_eq!(names(&found), ["Reset Widget", "Fix"]);
    assert_eq!(
        found[1].description.as_deref(),
        Some("Run Flaky.Fix, then retry")
    );
    let tag_calls = t
        .calls
        .borrow()
        .iter()
        .filter(|c| c.starts_with("get_keyword_tags"))
        .count();
    assert_eq!(tag_calls, 1, "{:?}", t.calls.borrow());

    // The library information without tags: RF reads no tags, and asks nothing more.
    let mut t = setup(FLAKY, Tags::InfoOnly);
    let found = strategies(&mut t.session, "Read Widget", Class::ElementNotFound);
    assert_eq!(names(&found), ["navigate_back"]);
    assert!(t.calls.borrow().is_empty(), "{:?}", t.calls.borrow());

    let mut t = setup(FLAKY, Tags::None);
    let found = strategies(&mut t.session, "Read Widget", Class::ElementNotFound);
    assert_eq!(names(&found), ["navigate_back"]);
}

#[test]
fn nothing_is_offered_when_nothing_can_run() {
    // No remote library at all.
    let mut t = setup(&[], Tags::Info);
    t.session.libraries.retain(|l| l.name != "Flaky");
    for class in [
        Class::ElementNotFound,
        Class::Timeout,
        Class::UnexpectedAlert,
    ] {
        assert!(strategies(&mut t.session, "Log", class).is_empty());
    }
    // A library without recovery keywords or well-known ones.
    let plain: &[Kw] = &[("read_widget", &[], "", &[]), ("add", &["a", "b"], "", &[])];
    let mut t = setup(plain, Tags::Method);
    assert!(strategies(&mut t.session, "Read Widget", Class::ElementNotFound).is_empty());
    // The failed keyword itself is never offered, whatever its tags.
    let only: &[Kw] = &[("go_back", &[], "", &["recovery"])];
    let mut t = setup(only, Tags::Info);
    assert!(strategies(&mut t.session, "Flaky.Go Back", Class::ElementNotFound).is_empty());
    assert_eq!(
        names(&strategies(&mut t.session, "Read", Class::ElementNotFound)),
        ["Go Back"]
    );
}

#[test]
fn an_unreachable_server_gives_no_library_strategies_and_is_asked_again() {
    let mut t = setup(FLAKY, Tags::Method);
    *t.down.borrow_mut() = true;
    let found = strategies(&mut t.session, "Read Widget", Class::ElementNotFound);
    // Go Back's argument spec was needed and could not be read: RF's default, `*args`.
    assert_eq!(names(&found), ["navigate_back"]);
    let asked = t
        .calls
        .borrow()
        .iter()
        .filter(|c| c.starts_with("get_keyword_tags"))
        .count();
    assert_eq!(asked, 1, "one failed call, not one per keyword");
    *t.down.borrow_mut() = false;
    let found = strategies(&mut t.session, "Read Widget", Class::ElementNotFound);
    assert_eq!(names(&found)[0], "Reset Widget");
}

fn fail(s: &mut Session, input: Json) -> Failure {
    invoke(s, "run_keyword", &input.to_string()).unwrap_err()
}

#[test]
fn failures_carry_classification_and_runnable_recovery() {
    let mut t = setup(FLAKY, Tags::Info);
    let f = fail(&mut t.session, json!({"keyword": "Read Widget"}));
    assert_eq!(f.code, FailureCode::Failed);
    assert_eq!(f.classification.as_deref(), Some("element-not-found"));
    // The rest of the details stay; the proposals have their own fields now.
    let details = f.details_json();
    assert_eq!(details["keyword"], "Read Widget");
    assert!(details.get("recovery").is_none() && details.get("classification").is_none());
    let recovery = f.recovery.clone();
    assert_eq!(
        recovery[0],
        RecoveryStrategy::new("Reset Widget", 2)
            .with_description("Resets the widget, then retry")
            .with_action(
                RecoveryAction::new(
                    "run_keyword",
                    json!({"keyword": "Flaky.Reset Widget", "args": []})
                )
                .with_description("Recovery keyword of library 'Flaky'")
            )
    );
    // Every action is valid `run_keyword` input and runs.
    for st in &recovery {
        for action in &st.actions {
            let input = &action.input;
            invoke(&mut t.session, "run_keyword", input)
                .unwrap_or_else(|e| panic!("{input}: {}", e.message));
        }
    }
    let ran: Vec<String> = t
        .calls
        .borrow()
        .iter()
        .filter(|c| c.starts_with("run_keyword") && !c.ends_with("read_widget"))
        .cloned()
        .collect();
    assert_eq!(
        ran,
        [
            "run_keyword reset_widget",
            "run_keyword clear_caches",
            "run_keyword reset_optional",
            "run_keyword go_back"
        ]
    );

    // BuiltIn failures are classified too; an `unknown` one gets no keyword that
    // declares no class for it (`Clear Caches` is tagged plain `recovery`).
    let f = fail(
        &mut t.session,
        json!({"keyword": "Should Be Equal", "args": ["1", "2"]}),
    );
    assert_eq!(f.classification.as_deref(), Some("unknown"));
    assert!(f.recovery.is_empty(), "{:?}", names(&f.recovery));
    let f = fail(
        &mut t.session,
        json!({"keyword": "Log", "args": ["${nope}"]}),
    );
    assert_eq!(f.classification.as_deref(), Some("variable-not-found"));
    assert!(f.recovery.is_empty());
    // Fatal failures: classified, but nothing to recover.
    let f = fail(
        &mut t.session,
        json!({"keyword": "Fatal Error", "args": ["Element x not found"]}),
    );
    assert_eq!(f.details_json()["fatal"], true);
    assert_eq!(f.classification.as_deref(), Some("element-not-found"));
    assert!(f.recovery.is_empty());
    // Failures that are not keyword failures carry neither.
    let f = fail(&mut t.session, json!({"keyword": "No Such Keyword"}));
    assert_eq!(f.code, FailureCode::NotFound);
    assert!(f.recovery.is_empty() && f.classification.is_none());
    let f = fail(&mut t.session, json!({"keyword": "Log"}));
    assert_eq!(f.code, FailureCode::InvalidInput);
    assert!(f.recovery.is_empty() && f.classification.is_none());
}

#[test]
fn action_arguments_arrive_as_written() {
    // rf-mcp's overlay JavaScript has `=` in it: escaped, it stays one positional
    // argument even for a keyword with `**kwargs`.
    let js = "document.querySelectorAll('[class*=overlay],[class*=modal],[class*=popup],[class*=cookie],[class*=banner]').forEach(e => e.remove())";
    for spec in [&["*code"][..], &["*code", "**options"][..]] {
        let library: &[Kw] = &[("execute_javascript", spec, "", &[])];
        let mut t = setup(library, Tags::Info);
        let found = strategies(&mut t.session, "Click", Class::ElementClickIntercepted);
        assert_eq!(names(&found), ["dismiss_overlay"]);
        let input = found[0].actions[0].input.clone();
        invoke(&mut t.session, "run_keyword", &input).unwrap();
        let body = t.last_run.borrow().clone();
        let xml = js.replace('>', "&gt;");
        assert!(body.contains(&format!("<string>{xml}</string>")), "{body}");
        assert!(!body.contains("<struct>"), "no named arguments: {body}");
    }
    assert_eq!(
        escape_cell(r"a=b \ ${x} @{y} $z"),
        r"a\=b \\ \${x} \@{y} $z"
    );
}

#[test]
fn the_failed_keywords_library_comes_first_and_names_stay_unique() {
    let library: &[Kw] = &[
        ("read_widget", &[], "", &[]),
        ("reset_widget", &[], "", &["recovery"]),
        ("go_back", &[], "", &[]),
    ];
    let mut t = setup(library, Tags::Info);
    let import = json!({"keyword": "Import Library", "args": ["Remote", "http://127.0.0.1:8270", "AS", "Other"]});
    invoke(&mut t.session, "run_keyword", &import.to_string()).unwrap();
    let found = strategies(&mut t.session, "other.read_widget", Class::ElementNotFound);
    assert_eq!(
        summary(&found),
        [
            (
                "Reset Widget".into(),
                2,
                "Other.Reset Widget".into(),
                json!([])
            ),
            (
                "Flaky.Reset Widget".into(),
                2,
                "Flaky.Reset Widget".into(),
                json!([])
            ),
            ("navigate_back".into(), 2, "Other.Go Back".into(), json!([])),
        ]
    );
}
