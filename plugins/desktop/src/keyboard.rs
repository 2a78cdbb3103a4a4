//! Keyboard verbs: type and key.
//!
//! Keys go to the focused window, so the expectation is always "this window
//! still has the focus": the target (activated first) or, without one, the
//! window that had the focus when the step began.

use serde_json::json;

use stephost_plugin::desktop::input::{self, Expectation};
use stephost_plugin::desktop::windows::{self, WindowInfo};
use stephost_plugin::{Failure, Output};

use crate::args::{Args, invalid};
use crate::target::{self, Query};
use crate::{State, fail, output, resolve_and_activate};

/// The window that will receive the keys, activated when named.
fn receiver(state: &mut State, args: &Args) -> Result<Option<WindowInfo>, Failure> {
    match Query::from_args(args)? {
        Some(q) => resolve_and_activate(state, &q).map(Some),
        None => windows::focused_window().map_err(|e| fail(e, false)),
    }
}

fn expectation(w: &Option<WindowInfo>) -> Option<Expectation> {
    w.as_ref().map(|w| Expectation {
        window: w.id,
        geometry: None,
        focused: true,
        point_on_window: false,
    })
}

fn into(w: &Option<WindowInfo>) -> String {
    w.as_ref()
        .map(|w| format!(" into {:?}", w.title))
        .unwrap_or_default()
}

pub(crate) fn type_text(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let text = args.str("text")?;
    let window = receiver(state, args)?;
    crate::look::before_acting(state, window.as_ref());
    input::type_text(text, expectation(&window)).map_err(|e| fail(e, true))?;
    if let Some(w) = &window {
        state.remember(w.id);
    }
    let chars = text.chars().count();
    Ok(output(
        json!({"typed_chars": chars, "window": window.as_ref().map(target::window_json)}),
        format!("typed {chars} character(s){}", into(&window)),
    ))
}

pub(crate) fn key(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let combo = args.str("combo")?;
    let combos: Vec<&str> = combo.split_whitespace().collect();
    if combos.is_empty() {
        return Err(invalid("combo", "`combo` is empty"));
    }
    let window = receiver(state, args)?;
    crate::look::before_acting(state, window.as_ref());
    // One call: the host checks every combo against the blocked list before
    // the first is sent.
    input::key_combo(&combos.join(" "), expectation(&window)).map_err(|e| fail(e, true))?;
    if let Some(w) = &window {
        state.remember(w.id);
    }
    Ok(output(
        json!({"combos": combos, "window": window.as_ref().map(target::window_json)}),
        format!("pressed {}{}", combos.join(" "), into(&window)),
    ))
}
