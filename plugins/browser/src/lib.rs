//! `browser`: a stephost plugin that drives a real browser over W3C WebDriver.
//!
//! The host starts the driver and the browser (chromedriver + Chromium, or
//! geckodriver + Firefox) and hands this instance its own WebDriver session
//! (`stephost:plugin/webdriver`); the plugin speaks WebDriver to it over
//! `wasi:http`, which the host scopes to that session's URL alone.
//!
//! - `browser.rs`: the session, tab ids <-> window handles, the current window.
//! - `webdriver.rs` + `http.rs`: commands, and WebDriver errors as failures.
//! - `page.js` + `page.rs`: the page library (the composed tree, refs, find, form
//!   input, actionability, waits) and the settling after input.
//! - `tabs.rs`, `computer.rs`, `content.rs`, `wait.rs`, `upload.rs`: the verbs
//!   (`screenshot.rs`: `computer`'s screenshots);
//!   `downloads.rs`: what a verb's input saved; `logs.rs`: console messages and
//!   requests; `catalog.rs`: the verb table (names,
//!   schemas and handlers) the SDK derives `describe` and `invoke` from.

mod args;
mod browser;
mod catalog;
mod clock;
mod computer;
mod content;
mod downloads;
mod error;
mod frames;
mod http;
mod keys;
mod logs;
mod page;
mod screenshot;
mod slider;
mod tabs;
mod upload;
mod wait;
mod webdriver;

use stephost_plugin::{Plugin, Verb, export_plugin};

use browser::Browser;

/// The plugin. Its per-instance state is the [`Browser`]: the SDK keeps one per
/// instance, so it lives exactly as long as the session.
struct BrowserPlugin;

impl Plugin for BrowserPlugin {
    const NAME: &'static str = "browser";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str = "Drives a real browser (headless Chromium by default, or \
        Firefox) over W3C WebDriver: tabs, navigation, mouse and keyboard, screenshots, an \
        accessibility-style page tree with element refs, find, form input, page text, \
        JavaScript, dialogs, and waiting for the page.";
    const BARE_TOOL_NAMES: bool = true;
    type State = Browser;

    fn verbs() -> Vec<Verb<Browser>> {
        catalog::verbs()
    }
}

export_plugin!(BrowserPlugin);
