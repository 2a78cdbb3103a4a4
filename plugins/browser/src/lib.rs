//! `browser`: a stephost plugin that drives a real browser over W3C WebDriver.
//!
//! The host starts the driver and the browser (chromedriver + Chromium, or
//! geckodriver + Firefox) and hands this instance its own WebDriver session
//! (`stephost:plugin/webdriver`); the plugin speaks WebDriver to it over
//! `wasi:http`, which the host scopes to that session's URL alone.
//!
//! - `browser.rs`: the session, tab ids <-> window handles, the current window.
//! - `webdriver.rs` + `http.rs`: commands, and WebDriver errors as failures.
//! - `page.js` + `page.rs`: the page library (tree, refs, find, form input).
//! - `tabs.rs`, `computer.rs`, `content.rs`: the verbs; `catalog.rs`: their schemas.

mod args;
mod browser;
mod catalog;
mod computer;
mod content;
mod error;
mod http;
mod keys;
mod page;
mod tabs;
mod webdriver;

use std::cell::RefCell;

use serde_json::Value;

wit_bindgen::generate!({ path: "../../wit", world: "browser-plugin" });

use exports::stephost::plugin::tool::Guest;
use stephost::plugin::types::{Failure, Output, PluginInfo};

use args::Args;
use browser::Browser;
use error::invalid;

thread_local! {
    // Per-instance state: the host gives each session its own instance, so
    // this browser lives exactly as long as the session. Wasm guests have one
    // thread; RefCell is the safe way to keep mutable state between calls.
    static BROWSER: RefCell<Browser> = RefCell::new(Browser::default());
}

/// The component's implementation of the `tool` interface.
struct BrowserPlugin;

export!(BrowserPlugin);

impl Guest for BrowserPlugin {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "browser".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Drives a real browser (headless Chromium by default, or Firefox) over \
                W3C WebDriver: tabs, navigation, mouse and keyboard, screenshots, an \
                accessibility-style page tree with element refs, find, form input, page text, \
                JavaScript and dialogs."
                .into(),
            bare_tool_names: true,
            verbs: catalog::verbs(),
        }
    }

    fn invoke(verb: String, input: String) -> Result<Output, Failure> {
        let args = Args::parse(&input)?;
        BROWSER.with(|cell| {
            let mut browser = cell.borrow_mut();
            run(&mut browser, &verb, &args)
        })
    }
}

fn run(browser: &mut Browser, verb: &str, args: &Args) -> Result<Output, Failure> {
    let value: Value = match verb {
        "tabs_context" => tabs::context(browser)?,
        "tabs_create" => tabs::create(browser, args)?,
        "tabs_close" => tabs::close(browser, args)?,
        "navigate" => tabs::navigate(browser, args)?,
        "computer" => return computer::run(browser, args),
        "read_page" => content::read_page(browser, args)?,
        "find" => content::find(browser, args)?,
        "form_input" => content::form_input(browser, args)?,
        "get_page_text" => content::page_text(browser, args)?,
        "javascript_tool" => content::javascript(browser, args)?,
        "dialog" | "firefox_dialog" => content::dialog(browser, args)?,
        other => {
            let known: Vec<String> = catalog::verbs().into_iter().map(|v| v.name).collect();
            return Err(invalid(
                "verb",
                format!("unknown verb `{other}` (browser has: {})", known.join(", ")),
            ));
        }
    };
    Ok(Output {
        value: value.to_string(),
        content: Vec::new(),
    })
}
