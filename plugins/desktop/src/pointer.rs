//! Pointer verbs: click, move, drag, scroll.
//!
//! With a target the window is resolved and activated, coordinates may be
//! window-relative, the point must lie on the window (else `not-found`:
//! nothing was clicked), and the host re-checks geometry and coverage right
//! before sending (`world-moved`). Under a window manager the window includes
//! the frame it draws (a title-bar drag), which only the host knows, so there
//! the host makes the on-window check. Without a target the step acts on the
//! window under the point, which `look` is told about.

use serde_json::{Value, json};

use stephost_plugin::desktop::input::{self, Expectation, MouseButton};
use stephost_plugin::desktop::windows::{self, WindowInfo};
use stephost_plugin::{Failure, FailureCode, Output};

use crate::args::{Args, DesktopArgs, invalid};
use crate::target::{self, Query};
use crate::{State, all_windows, fail, look, output, resolve_and_activate};

fn button_name(button: MouseButton) -> &'static str {
    match button {
        MouseButton::Left => "left",
        MouseButton::Middle => "middle",
        MouseButton::Right => "right",
        MouseButton::Back => "back",
        MouseButton::Forward => "forward",
    }
}

fn button(args: &Args, default: MouseButton) -> Result<MouseButton, Failure> {
    Ok(match args.get("button") {
        None => default,
        Some(Value::String(s)) => match s.as_str() {
            "left" => MouseButton::Left,
            "middle" => MouseButton::Middle,
            "right" => MouseButton::Right,
            "back" => MouseButton::Back,
            "forward" => MouseButton::Forward,
            other => return Err(invalid("button", format!("unknown button `{other}`"))),
        },
        Some(other) => {
            return Err(invalid(
                "button",
                format!("`button` must be a string, got {other}"),
            ));
        }
    })
}

/// Whether a window manager runs (and so draws frames the host knows about).
fn managed() -> bool {
    windows::window_manager().is_ok_and(|m| m.is_some())
}

/// The target window, activated, when the input names one.
struct Aim {
    window: Option<WindowInfo>,
    relative: bool,
}

impl Aim {
    fn from_args(state: &mut State, args: &Args) -> Result<Self, Failure> {
        let relative = args.boolean("window_relative", false)?;
        let window = match Query::from_args(args)? {
            Some(q) => Some(resolve_and_activate(state, &q)?),
            None if relative => {
                return Err(invalid(
                    "window_relative",
                    "window_relative needs a target window",
                ));
            }
            None => None,
        };
        Ok(Self { window, relative })
    }

    /// A point in screen coordinates, checked to lie on the window.
    fn point(&self, x: i32, y: i32) -> Result<(i32, i32), Failure> {
        let Some(w) = &self.window else {
            return Ok((x, y));
        };
        let g = &w.geometry;
        let (sx, sy) = if self.relative {
            (g.x + x, g.y + y)
        } else {
            (x, y)
        };
        let on_window = crate::pixels::Area {
            x: g.x,
            y: g.y,
            width: g.width,
            height: g.height,
        };
        // Off the client area but maybe on the frame: the host checks that
        // (not-found when off the frame too), nothing is sent before.
        if !on_window.contains(sx, sy) && !managed() {
            return Err(Failure::new(
                FailureCode::NotFound,
                format!(
                    "({sx}, {sy}) is not on window {:?}, which is {}x{} at ({}, {}); nothing was sent",
                    w.title, g.width, g.height, g.x, g.y
                ),
            )
            .with_input_fired(false));
        }
        Ok((sx, sy))
    }

    /// The window the step acts on: its target, else the top-most window
    /// under the point. Told to `look` (which pictures it) and captured for
    /// `wait_for region_changes`; neither stops the step when it fails.
    fn acting_on(&self, state: &mut State, x: i32, y: i32) -> Option<WindowInfo> {
        let window = match &self.window {
            Some(w) => Some(w.clone()),
            None => all_windows()
                .ok()
                .and_then(|list| target::window_at(&list, x, y, managed).cloned()),
        };
        look::before_acting(state, window.as_ref());
        window
    }

    fn expectation(&self) -> Option<Expectation> {
        self.window.as_ref().map(|w| Expectation {
            window: w.id,
            geometry: Some(w.geometry),
            focused: false,
            point_on_window: true,
        })
    }

    fn json(&self) -> Value {
        self.window
            .as_ref()
            .map_or(Value::Null, target::window_json)
    }

    fn on(&self) -> String {
        on(self.window.as_ref())
    }
}

/// " on \"title\"" for result text; empty without a window.
fn on(window: Option<&WindowInfo>) -> String {
    window
        .map(|w| format!(" on {:?}", w.title))
        .unwrap_or_default()
}

pub(crate) fn click(state: &mut State, args: &Args) -> Result<Output, Failure> {
    clicks(state, args, "click")
}

pub(crate) fn double_click(state: &mut State, args: &Args) -> Result<Output, Failure> {
    clicks(state, args, "double_click")
}

pub(crate) fn right_click(state: &mut State, args: &Args) -> Result<Output, Failure> {
    clicks(state, args, "right_click")
}

/// `click`, `double_click`, `right_click`: their schemas say which fields each
/// takes (only `click` has `button` and `count`).
fn clicks(state: &mut State, args: &Args, verb: &str) -> Result<Output, Failure> {
    let (default_button, default_count) = match verb {
        "double_click" => (MouseButton::Left, 2),
        "right_click" => (MouseButton::Right, 1),
        _ => (MouseButton::Left, 1),
    };
    let button = button(args, default_button)?;
    let count = args.opt_int("count", 1..=3)?.unwrap_or(default_count) as u32;
    let (x, y) = (args.coord("x")?, args.coord("y")?);
    let aim = Aim::from_args(state, args)?;
    let (sx, sy) = aim.point(x, y)?;
    let hit = aim.acting_on(state, sx, sy);
    input::click(sx, sy, button, count, aim.expectation()).map_err(|e| fail(e, true))?;
    if let Some(w) = &hit {
        state.remember(w.id);
    }
    let text = format!("{verb} at ({sx}, {sy}){}", on(hit.as_ref()));
    Ok(output(
        json!({"x": sx, "y": sy, "button": button_name(button), "count": count, "window": aim.json()}),
        text,
    ))
}

pub(crate) fn move_to(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let (x, y) = (args.coord("x")?, args.coord("y")?);
    let aim = Aim::from_args(state, args)?;
    let (sx, sy) = aim.point(x, y)?;
    // A move acts (hover), but is not captured: moves come in bulk, and a
    // wait after one measures from its own start.
    look::before_acting(state, None);
    input::move_pointer(sx, sy, aim.expectation()).map_err(|e| fail(e, true))?;
    Ok(output(
        json!({"x": sx, "y": sy, "window": aim.json()}),
        format!("moved to ({sx}, {sy}){}", aim.on()),
    ))
}

pub(crate) fn drag(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let button = button(args, MouseButton::Left)?;
    let from = (args.coord("from_x")?, args.coord("from_y")?);
    let to = (args.coord("to_x")?, args.coord("to_y")?);
    let aim = Aim::from_args(state, args)?;
    let (fx, fy) = aim.point(from.0, from.1)?;
    // The end may leave the window (dragging out is legitimate).
    let (tx, ty) = match (&aim.window, aim.relative) {
        (Some(w), true) => (w.geometry.x + to.0, w.geometry.y + to.1),
        _ => to,
    };
    let hit = aim.acting_on(state, fx, fy);
    input::drag(fx, fy, tx, ty, button, aim.expectation()).map_err(|e| fail(e, true))?;
    if let Some(w) = &hit {
        state.remember(w.id);
    }
    Ok(output(
        json!({"from": [fx, fy], "to": [tx, ty], "window": aim.json()}),
        format!("dragged ({fx}, {fy}) -> ({tx}, {ty}){}", on(hit.as_ref())),
    ))
}

pub(crate) fn scroll(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let (x, y) = (args.coord("x")?, args.coord("y")?);
    // Bounded by the ranges, so the casts are exact.
    let dy = args.opt_int("dy", -100..=100)?.unwrap_or(0) as i32;
    let dx = args.opt_int("dx", -100..=100)?.unwrap_or(0) as i32;
    if dx == 0 && dy == 0 {
        return Err(invalid(
            "dy",
            "give dy (vertical) or dx (horizontal) notches",
        ));
    }
    let aim = Aim::from_args(state, args)?;
    let (sx, sy) = aim.point(x, y)?;
    let hit = aim.acting_on(state, sx, sy);
    input::scroll(sx, sy, dx, dy, aim.expectation()).map_err(|e| fail(e, true))?;
    if let Some(w) = &hit {
        state.remember(w.id);
    }
    Ok(output(
        json!({"x": sx, "y": sy, "dx": dx, "dy": dy, "window": aim.json()}),
        format!(
            "scrolled dx={dx} dy={dy} at ({sx}, {sy}){}",
            on(hit.as_ref())
        ),
    ))
}
