//! `desktop`: a stephost plugin that drives an X11 desktop through the host's
//! `screen`, `windows` and `input` capabilities.
//!
//! The plugin decides *what* to do (which window a step means, whether the
//! world still looks as resolved, whether the screen changed); the host does
//! the X work. Acting verbs hand the host an expectation (window, geometry,
//! focus, the point not covered) that it checks right before sending input, so
//! a window that moved or lost focus in between gives `world-moved` with
//! nothing sent, which the batch engine may retry.
//!
//! Loads only where the operator granted `desktop = true` (the built-in
//! plugin named `desktop` is granted by default).

mod args;
mod catalog;
mod keyboard;
mod look;
mod pixels;
mod pointer;
mod target;
#[cfg(test)]
mod tests;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use args::{Args, invalid};

wit_bindgen::generate!({ path: "../../wit", world: "desktop-plugin" });

use exports::stephost::plugin::tool::Guest;
use stephost::plugin::desktop_types::DesktopError;
use stephost::plugin::types::{Content, Failure, Output, PluginInfo};
use stephost::plugin::windows;

/// Longest `sleep` (do_steps allows 1-60000 ms; run_macro's pseudo-step 10000).
const MAX_SLEEP_MS: i64 = 60_000;
/// Longest wait of `wait_for` and `look`.
const MAX_WAIT_MS: i64 = 600_000;

// Per-session state: the host gives each session its own instance, so these
// live as long as the session. Wasm guests are single-threaded.
/// The window the last acting verb meant (0: none).
static LAST_WINDOW: AtomicU64 = AtomicU64::new(0);
/// The screen as `look_begin` saw it.
static MARK: Mutex<Option<pixels::Frame>> = Mutex::new(None);

/// The component.
struct Desktop;

export!(Desktop);

impl Guest for Desktop {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "desktop".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Drive the X11 desktop: list and activate windows, click, drag, scroll, type \
                text and key combos through XTEST, take screenshots, and wait for windows or for the \
                screen to settle or change."
                .into(),
            bare_tool_names: true,
            verbs: catalog::verbs(),
        }
    }

    fn invoke(verb: String, input: String) -> Result<Output, Failure> {
        match verb.as_str() {
            "list_windows" => list_windows(&input),
            "focus_window" | "activate" => activate(&input),
            "click" | "double_click" | "right_click" => pointer::click(&verb, &input),
            "move" => pointer::move_to(&input),
            "drag" => pointer::drag(&input),
            "scroll" => pointer::scroll(&input),
            "type" => keyboard::type_text(&input),
            "key" => keyboard::key(&input),
            "screenshot" => look::screenshot(&input),
            "wait_for" | "wait_until" => look::wait_for(&input),
            "sleep" => sleep(&input),
            "press" | "set_text" => Err(Failure {
                code: "unsupported".into(),
                message: format!(
                    "`{verb}` needs the accessibility tree (AT-SPI), which this plugin does not \
                     reach yet; use click at the element's coordinates and type instead"
                ),
                input_fired: false,
                details: String::new(),
            }),
            "look_begin" => look::begin(&input),
            "look" => look::look(&input),
            other => Err(invalid(
                "",
                format!(
                    "unknown verb `{other}`; this plugin has: {}",
                    catalog::verbs()
                        .iter()
                        .map(|v| v.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }
}

/// A host error as a step failure. `acting`: whether the call could have sent
/// input before failing (only `failed` can).
pub(crate) fn fail(error: DesktopError, acting: bool) -> Failure {
    let (code, message, fired) = match error {
        DesktopError::NotFound(m) => ("not-found", m, false),
        DesktopError::Denied(m) => ("denied", m, false),
        DesktopError::WorldMoved(m) => ("world-moved", m, false),
        DesktopError::Invalid(m) => ("invalid-input", m, false),
        DesktopError::Timeout(m) => ("timeout", m, false),
        DesktopError::Unsupported(m) => ("unsupported", m, false),
        DesktopError::Failed(m) => ("failed", m, acting),
    };
    Failure {
        code: code.into(),
        message,
        input_fired: fired,
        details: String::new(),
    }
}

/// A result value plus one line of text.
pub(crate) fn output(value: Value, text: impl Into<String>) -> Output {
    Output {
        value: value.to_string(),
        content: vec![Content::Text(text.into())],
    }
}

/// Remembers the window a verb acted on, for `look` mode window.
pub(crate) fn remember(window: u64) {
    LAST_WINDOW.store(window, Ordering::Relaxed);
}

pub(crate) fn last_window() -> Option<u64> {
    Some(LAST_WINDOW.load(Ordering::Relaxed)).filter(|&w| w != 0)
}

pub(crate) fn all_windows() -> Result<Vec<windows::WindowInfo>, Failure> {
    windows::list_windows().map_err(|e| fail(e, false))
}

fn list_windows(input: &str) -> Result<Output, Failure> {
    let args = Args::parse(input, &["target", "title", "windowTitle", "class", "exact"])?;
    let query = target::Query::from_args(&args)?;
    let list = all_windows()?;
    let shown: Vec<Value> = list
        .iter()
        .filter(|w| query.as_ref().is_none_or(|q| q.matches(w)))
        .map(target::window_json)
        .collect();
    let manager = windows::window_manager().map_err(|e| fail(e, false))?;
    let text = format!(
        "{} window(s); window manager: {}",
        shown.len(),
        manager.as_deref().unwrap_or("none")
    );
    Ok(output(
        json!({"windows": shown, "window_manager": manager}),
        text,
    ))
}

/// Resolves the target and activates it unless it already has the focus.
pub(crate) fn resolve_and_activate(query: &target::Query) -> Result<windows::WindowInfo, Failure> {
    let list = all_windows()?;
    let window = query.pick(&list)?.clone();
    remember(window.id);
    if window.focused {
        return Ok(window);
    }
    windows::activate(window.id).map_err(|e| fail(e, true))
}

fn activate(input: &str) -> Result<Output, Failure> {
    let args = Args::parse(input, &["target", "title", "windowTitle", "class", "exact"])?;
    let query = target::Query::from_args(&args)?
        .ok_or_else(|| invalid("target", "name the window: target, title or class"))?;
    let window = resolve_and_activate(&query)?;
    let text = format!("activated {:?} ({})", window.title, window.class);
    Ok(output(target::window_json(&window), text))
}

fn sleep(input: &str) -> Result<Output, Failure> {
    let ms = Args::parse(input, &["ms"])?.int("ms", 0, MAX_SLEEP_MS, None)?;
    // A WASI clock wait: the guest blocks in the host, where the step timeout
    // reaches it.
    std::thread::sleep(Duration::from_millis(ms as u64));
    Ok(output(json!({"slept_ms": ms}), format!("slept {ms} ms")))
}
