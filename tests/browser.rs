//! The `webdriver` capability with the built-in browser plugin and real
//! headless Chromium: the grant gates the plugin, a session's browser answers,
//! and dropping the session deletes the WebDriver session and its profile.
//!
//! Needs the Debian packages `chromium` and `chromium-driver` (scripts/test.sh
//! installs them); without them the tests say so and pass.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use stephost::batch::BatchStatus;

/// Whether Chromium and chromedriver are installed where the defaults look.
fn chromium_installed() -> bool {
    let present =
        Path::new("/usr/bin/chromium").is_file() && Path::new("/usr/bin/chromedriver").is_file();
    if !present {
        eprintln!(
            "skipping: /usr/bin/chromium or /usr/bin/chromedriver missing (apt-get install chromium chromium-driver)"
        );
    }
    present
}

/// The profile folders the host made for Chromium sessions.
fn profiles() -> Vec<std::path::PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("stephost-chromium-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn browser(verb: &str, input: serde_json::Value) -> serde_json::Value {
    json!({"plugin": "browser", "verb": verb, "input": input})
}

#[tokio::test]
async fn without_the_webdriver_grant_the_browser_plugin_does_not_load() {
    let mut config = stephost::config::Config::default();
    config.engine.cache_dir = Some(std::env::temp_dir().join("stephost-test-cache"));
    config.engine.max_instances = 16;
    config
        .plugins
        .grants
        .insert("browser".into(), Default::default());
    let err = match stephost::Host::start(config).await {
        Ok(_) => panic!("the browser plugin must not load without its grant"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("plugin `browser`"), "{err}");
    assert!(
        err.contains("`webdriver` grant") || err.contains("`http` grant"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_drives_chromium_and_its_end_closes_the_browser() {
    if !chromium_installed() {
        return;
    }
    let host = common::host().await;
    let before = profiles();
    let report = common::run(
        &host,
        Some("wd-rust"),
        json!({"steps": [
            browser("tabs_context", json!({})),
            browser("navigate", json!({"tabId": 1, "url": "data:text/html,<title>T</title><h1>Hello from data</h1>"})),
            browser("get_page_text", json!({"tabId": 1})),
        ]}),
    )
    .await;
    assert_eq!(report.status, BatchStatus::Passed, "{report:#?}");
    assert_eq!(
        report.steps[0].value.as_ref().map(|v| v["browser"].clone()),
        Some(json!("chromium"))
    );
    let text = report.steps[2].value.as_ref().map(|v| v["text"].clone());
    assert_eq!(text, Some(json!("Hello from data")));
    let made: Vec<_> = profiles()
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert_eq!(made.len(), 1, "one fresh profile for the session: {made:?}");

    // Ending the session drops the plugin instance; the host deletes the
    // WebDriver session (Chromium quits) and removes the profile.
    let tenant = host
        .session(stephost::session::SessionRef::Named("wd-rust"))
        .expect("the session exists")
        .tenant()
        .to_owned();
    assert!(host.sessions().remove(&tenant, "wd-rust"));
    let deadline = Instant::now() + Duration::from_secs(15);
    while made[0].exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !made[0].exists(),
        "the profile of an ended session is removed"
    );
}
