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

mod a11y;
mod args;
mod catalog;
mod keyboard;
mod look;
mod pixels;
mod pointer;
mod target;
#[cfg(test)]
mod tests;

use std::time::Duration;

use serde_json::{Value, json};
use stephost_plugin::desktop::{DesktopError, windows};
use stephost_plugin::{Failure, FailureCode, Output, Plugin, Verb, export_plugin};

use args::{Args, invalid};

/// Longest `sleep` (do_steps allows 1-60000 ms; run_macro's pseudo-step 10000).
const MAX_SLEEP_MS: i64 = 60_000;
/// Longest wait of `wait_for` and `look`.
const MAX_WAIT_MS: i64 = 600_000;

/// The plugin.
struct Desktop;

/// Per-instance (so per-session) state, kept by the SDK.
#[derive(Default)]
pub(crate) struct State {
    /// The window the last acting verb meant.
    pub(crate) last_window: Option<u64>,
    /// The screen as `look_begin` saw it.
    pub(crate) mark: Option<pixels::Frame>,
    /// What `look` and `wait_for` remember between steps (look.rs).
    pub(crate) seen: look::Seen,
}

impl State {
    /// Remembers the window a verb acted on, for `look` mode window.
    pub(crate) fn remember(&mut self, window: u64) {
        self.last_window = Some(window);
    }
}

impl Plugin for Desktop {
    const NAME: &'static str = "desktop";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str = "Drive the X11 desktop: list and activate windows, click, \
        drag, scroll, type text and key combos through XTEST, take screenshots, and wait for \
        windows or for the screen to settle or change.";
    const BARE_TOOL_NAMES: bool = true;
    type State = State;

    fn verbs() -> Vec<Verb<State>> {
        catalog::verbs()
    }
}

export_plugin!(Desktop);

/// `screenshot`: pixels, or with `detail` text/meta a description.
pub(crate) fn screenshot(state: &mut State, args: &Args) -> Result<Output, Failure> {
    match args.opt_str("detail")? {
        Some(detail @ ("text" | "meta")) => a11y::describe_window(state, args, detail),
        _ => look::screenshot(state, args),
    }
}

/// `wait_for`: element conditions here, window and pixel ones in `look`.
pub(crate) fn wait_for(state: &mut State, args: &Args) -> Result<Output, Failure> {
    match args.opt_str("condition")? {
        Some(condition) if a11y::is_element_condition(condition) => {
            let timeout = look::timeout(args)?;
            let condition = condition.to_owned();
            a11y::wait_element(state, args, &condition, timeout)
        }
        _ => look::wait_for(state, args),
    }
}

/// A host error as a step failure. `acting`: whether the call could have sent
/// input before failing (only `failed` can).
pub(crate) fn fail(error: DesktopError, acting: bool) -> Failure {
    let (code, message, fired) = match error {
        DesktopError::NotFound(m) => (FailureCode::NotFound, m, false),
        DesktopError::Denied(m) => (FailureCode::Denied, m, false),
        DesktopError::WorldMoved(m) => (FailureCode::WorldMoved, m, false),
        DesktopError::Invalid(m) => (FailureCode::InvalidInput, m, false),
        DesktopError::Timeout(m) => (FailureCode::Timeout, m, false),
        DesktopError::Unsupported(m) => (FailureCode::Unsupported, m, false),
        DesktopError::Failed(m) => (FailureCode::Failed, m, acting),
    };
    Failure::new(code, message).with_input_fired(fired)
}

/// A result value plus one line of text.
pub(crate) fn output(value: Value, text: impl Into<String>) -> Output {
    Output::new(value).with_text(text)
}

pub(crate) fn all_windows() -> Result<Vec<windows::WindowInfo>, Failure> {
    windows::list_windows().map_err(|e| fail(e, false))
}

pub(crate) fn list_windows(_: &mut State, args: &Args) -> Result<Output, Failure> {
    let query = target::Query::from_args(args)?;
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
pub(crate) fn resolve_and_activate(
    state: &mut State,
    query: &target::Query,
) -> Result<windows::WindowInfo, Failure> {
    let list = all_windows()?;
    let window = query.pick(&list)?.clone();
    state.remember(window.id);
    if window.focused {
        return Ok(window);
    }
    windows::activate(window.id).map_err(|e| fail(e, true))
}

pub(crate) fn activate(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let query = target::Query::from_args(args)?
        .ok_or_else(|| invalid("target", "name the window: target, title or class"))?;
    let window = resolve_and_activate(state, &query)?;
    let text = format!("activated {:?} ({})", window.title, window.class);
    Ok(output(target::window_json(&window), text))
}

pub(crate) fn sleep(_: &mut State, args: &Args) -> Result<Output, Failure> {
    let ms = args.int("ms", 0..=MAX_SLEEP_MS)?;
    // A WASI clock wait: the guest blocks in the host, where the step timeout
    // reaches it.
    std::thread::sleep(Duration::from_millis(ms as u64));
    Ok(output(json!({"slept_ms": ms}), format!("slept {ms} ms")))
}
