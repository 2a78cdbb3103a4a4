//! `form_input` on a slider (`<input type=range>` or `role=slider`): set the
//! way a person sets one, by keys, then read back. Data-app frameworks commit a
//! slider on key or pointer release, so a value written into the input moves
//! the thumb and the app keeps its old value; keys reach the app's own
//! handlers. The slider gets the focus from the page (`el.focus()`): focus is
//! not a click, so a transparent layer drawn over the slider does not stop it.

use serde_json::{Value, json};

use crate::browser::Browser;
use crate::error::{Result, fail, failed, has_code, invalid, not_found};
use crate::page;

/// The most rounds of keys, and of arrow presses in one round.
const MAX_ROUNDS: usize = 6;
const MAX_ARROWS: u32 = 200;
/// How many more reads, and how far apart, a widget slider's value gets to
/// stop moving.
const STABLE_READS: usize = 4;
const STABLE_GAP_NS: u64 = 40_000_000;

/// A slider as the page library reads it (`sliderState` in `page.js`).
#[derive(Debug, Clone, PartialEq)]
struct State {
    value: Option<f64>,
    min: f64,
    max: f64,
    /// `None`: not stated (an ARIA slider, or `step=any`); measured here.
    step: Option<f64>,
    native: bool,
    /// Whether its bounds are known (a widget's hidden input may not say).
    bounded: bool,
    /// Whether Home and End move it to its ends (a widget may ignore them).
    ends: bool,
    vertical: bool,
    focused: bool,
    disabled: bool,
}

impl State {
    fn read(answer: &Value) -> Self {
        let num = |k: &str| answer.get(k).and_then(Value::as_f64);
        State {
            value: num("value"),
            min: num("min").unwrap_or(0.0),
            max: num("max").unwrap_or(100.0),
            step: num("step").filter(|s| *s > 0.0),
            native: answer.get("kind").and_then(Value::as_str) == Some("range"),
            bounded: num("min").is_some() && num("max").is_some(),
            ends: answer.get("ends").and_then(Value::as_bool) != Some(false),
            vertical: answer.get("vertical").and_then(Value::as_bool) == Some(true),
            focused: answer.get("focused").and_then(Value::as_bool) == Some(true),
            disabled: answer.get("disabled").and_then(Value::as_bool) == Some(true),
        }
    }

    /// How close counts as there: a hundredth of a step, or of a
    /// thousandth of the range when the step is unknown.
    fn tolerance(&self) -> f64 {
        self.step.unwrap_or((self.max - self.min).abs() / 1000.0) / 100.0
    }
}

/// The keys of one round: what to press, and how many of them are arrows
/// (the step is measured from those).
#[derive(Debug, PartialEq)]
struct Plan {
    keys: Vec<&'static str>,
    arrows: u32,
}

/// The keys that move a slider at `state` toward `target`: Home or End for an
/// end of its range; else arrows, one step each, from the value or from the
/// nearer end when that is closer; with an unknown step, one arrow to measure
/// it. `flipped`: the arrows work the other way round (a right-to-left page).
fn plan(state: &State, target: f64, step: Option<f64>, flipped: bool) -> Plan {
    let tolerance = state.tolerance();
    let value = state.value.unwrap_or(state.min);
    let (up, down) = match (state.vertical, flipped) {
        (false, false) => ("ArrowRight", "ArrowLeft"),
        (false, true) => ("ArrowLeft", "ArrowRight"),
        (true, false) => ("ArrowUp", "ArrowDown"),
        (true, true) => ("ArrowDown", "ArrowUp"),
    };
    if state.ends && (target - state.min).abs() <= tolerance {
        return Plan {
            keys: vec!["Home"],
            arrows: 0,
        };
    }
    if state.ends && (target - state.max).abs() <= tolerance {
        return Plan {
            keys: vec!["End"],
            arrows: 0,
        };
    }
    let Some(step) = step else {
        let key = if target > value { up } else { down };
        return Plan {
            keys: vec![key],
            arrows: 1,
        };
    };
    let mut keys = Vec::new();
    let mut from = value;
    if !state.ends {
        // Arrows from where it is.
    } else if (target - state.min).abs() < (target - value).abs() {
        keys.push("Home");
        from = state.min;
    } else if (state.max - target).abs() < (target - value).abs() {
        keys.push("End");
        from = state.max;
    }
    let count = ((target - from) / step)
        .abs()
        .round()
        .min(f64::from(MAX_ARROWS)) as u32;
    let key = if target > from { up } else { down };
    keys.extend(std::iter::repeat_n(key, count as usize));
    Plan {
        keys,
        arrows: count,
    }
}

/// Sets the slider `reference` (whose `form_input` answer is `first`) to
/// `asked` by keys, then reads it back as any field is.
pub(crate) fn set(
    browser: &mut Browser,
    tab: u32,
    reference: &str,
    asked: &Value,
    first: &Value,
) -> Result<Value> {
    let element = page::what(first);
    let target = number(asked).ok_or_else(|| {
        invalid(
            "value",
            format!("{element} is a slider: value is a number, got {asked}"),
        )
    })?;
    let read = |browser: &mut Browser, focus: bool| -> Result<State> {
        let answer = page::call(
            browser,
            tab,
            "slider",
            &format!("reading the slider {reference}"),
            focus,
            json!({ "ref": reference, "focus": focus }),
        )?;
        Ok(State::read(&answer))
    };
    // A widget slider draws, and writes its value out, from an animation
    // loop (ion.rangeSlider), which the settling after keys does not wait
    // for: its value is read until two reads a few frames apart agree.
    let look = |browser: &mut Browser, focus: bool| -> Result<State> {
        let mut state = read(browser, focus)?;
        if state.native {
            return Ok(state);
        }
        for _ in 0..STABLE_READS {
            crate::clock::sleep_ns(STABLE_GAP_NS);
            let again = read(browser, false)?;
            let same = again.value == state.value;
            state = again;
            if same {
                break;
            }
        }
        Ok(state)
    };
    let mut state = look(browser, true)?;
    if state.disabled {
        return Err(not_found(format!(
            "{element} is disabled; nothing was changed"
        )));
    }
    if state.bounded && (target < state.min.min(state.max) || target > state.max.max(state.min)) {
        return Err(invalid(
            "value",
            format!(
                "{element} goes from {} to {}; {target} is outside, so nothing was changed",
                state.min, state.max
            ),
        ));
    }
    let mut route = "keys, after focusing it from the page".to_owned();
    if !state.focused {
        // Keys cannot reach it: a press on its track where the value lies,
        // as a person clicks there.
        let at = page::call(
            browser,
            tab,
            "slider_point",
            &format!("locating the track of {reference}"),
            false,
            json!({ "ref": reference, "value": target }),
        )?;
        let x = at.get("x").and_then(Value::as_i64);
        let y = at.get("y").and_then(Value::as_i64);
        match (at.get("status").and_then(Value::as_str), x, y) {
            (Some("ok"), Some(x), Some(y)) => {
                browser.actions(
                    tab,
                    &format!("pressing the track of {element} at ({x}, {y})"),
                    json!([{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": [
                        {"type": "pointerMove", "duration": 0, "x": x, "y": y, "origin": "viewport"},
                        {"type": "pointerDown", "button": 0},
                        {"type": "pointerUp", "button": 0},
                    ]}]),
                )?;
                route = format!("a press on its track at ({x}, {y}), its focus refused");
                state = look(browser, false)?;
            }
            // A range input keys and presses cannot reach (hidden behind a
            // custom thumb): its value is written and its events fired, and
            // the read-back says whether the app took it.
            _ if state.native => return direct(browser, tab, reference, asked),
            (status, _, _) => {
                let why = match (status, at.get("by")) {
                    (Some("covered"), Some(by)) => format!(
                        "a press on its track at ({}, {}) would land on {}",
                        x.unwrap_or(0),
                        y.unwrap_or(0),
                        page::what(&json!({ "what": by }))
                    ),
                    _ => "no track to press was found around it".to_owned(),
                };
                return Err(failed(
                    format!(
                        "{element} did not take the keyboard focus (tried: focusing it, and its \
                         thumb, from the page), and {why}, so nothing was changed. Close what \
                         covers it, or drag its thumb with computer left_click_drag"
                    ),
                    false,
                ));
            }
        }
    }
    let mut keys = Keys {
        step: state.step,
        flipped: false,
        pressed: 0,
    };
    if route.starts_with("a press") && state.focused {
        route.push_str(", then keys");
    }
    state = keys.toward(browser, tab, &element, target, state, &look)?;
    let mut out = match page::read_back(browser, tab, reference, asked, first) {
        Ok(out) => out,
        // An app that was still starting up (Shiny binds its inputs once its
        // socket is up) can put a widget back, and a widget can land a step
        // off on the last key: one more round from where it now is, focused
        // again, then the read-back decides.
        Err(f) if has_code(&f, "world-moved") && f.input_fired => {
            let again = look(browser, true)?;
            let moved_back = again
                .value
                .is_some_and(|v| (v - target).abs() > again.tolerance());
            let retried = again.focused && moved_back;
            let second = if retried {
                state = keys.toward(browser, tab, &element, target, again, &look)?;
                page::read_back(browser, tab, reference, asked, first)
            } else {
                Err(f)
            };
            match second {
                Ok(out) => out,
                Err(f) if has_code(&f, "world-moved") && f.input_fired => {
                    let shows = state
                        .value
                        .map_or_else(|| "no value".to_owned(), |v| v.to_string());
                    let step = keys
                        .step
                        .map_or_else(String::new, |s| format!(" (it moves in steps of {s})"));
                    return Err(fail(
                        "world-moved",
                        format!(
                            "{element} did not keep {target}: set by {route} ({} key presses{}), \
                             once the page settled it holds {shows}{step}; the app reverted it, or \
                             the slider cannot hold that value",
                            keys.pressed,
                            if retried { ", in two tries" } else { "" }
                        ),
                        true,
                    ));
                }
                Err(f) => return Err(f),
            }
        }
        Err(f) => return Err(f),
    };
    out["set_by"] = json!(if route.starts_with("a press") {
        "pointer"
    } else {
        "keys"
    });
    Ok(out)
}

/// What the key rounds learnt about a slider: its step (measured when it does
/// not say), whether its arrows work the other way round, and how many keys
/// were pressed in all.
struct Keys {
    step: Option<f64>,
    flipped: bool,
    pressed: u32,
}

impl Keys {
    /// Presses keys on the focused slider at `state` toward `target`, in
    /// rounds, each read back with `look`; answers its state after the last.
    fn toward(
        &mut self,
        browser: &mut Browser,
        tab: u32,
        element: &str,
        target: f64,
        mut state: State,
        look: &dyn Fn(&mut Browser, bool) -> Result<State>,
    ) -> Result<State> {
        // Keys only while the slider has the focus: elsewhere they would scroll
        // the page or reach another control.
        for _ in 0..MAX_ROUNDS {
            if !state.focused {
                break;
            }
            let value = state.value.unwrap_or(state.min);
            if state.value.is_some() && (value - target).abs() <= state.tolerance() {
                break;
            }
            let plan = plan(&state, target, self.step, self.flipped);
            if plan.keys.is_empty() {
                // Between two steps: as near as it goes.
                break;
            }
            let combos = plan.keys.join(" ");
            let actions = crate::keys::combo_actions(&combos).map_err(|m| failed(m, false))?;
            browser.actions(
                tab,
                &format!("pressing {} keys on {element}", plan.keys.len()),
                json!([{"type": "key", "id": "keyboard", "actions": actions}]),
            )?;
            self.pressed += plan.keys.len() as u32;
            let after = look(browser, false)?;
            if !after.focused {
                // The app moved the focus away (a rerun replaced the widget): the
                // caller's read-back says what it holds.
                state = after;
                break;
            }
            let moved = after.value.unwrap_or(after.min) - value;
            let starts_at_end = plan
                .keys
                .first()
                .is_some_and(|k| *k == "Home" || *k == "End");
            if plan.arrows > 0 && !starts_at_end {
                if moved.abs() <= f64::EPSILON {
                    state = after;
                    break;
                }
                // Arrows that moved it away from the target: the page reads them
                // the other way round.
                if (moved > 0.0) != (target > value) {
                    self.flipped = !self.flipped;
                }
                if self.step.is_none() {
                    self.step = Some(moved.abs() / f64::from(plan.arrows));
                }
            } else if moved.abs() <= f64::EPSILON && plan.arrows == 0 {
                state = after;
                break;
            }
            let overshot =
                (after.value.unwrap_or(after.min) - target).signum() != (value - target).signum();
            state = after;
            if overshot
                && self
                    .step
                    .is_some_and(|s| (state.value.unwrap_or(state.min) - target).abs() < s)
            {
                break;
            }
        }
        Ok(state)
    }
}

/// A range input keys cannot reach: its value written as `form_input` writes
/// a text field's, then read back.
fn direct(browser: &mut Browser, tab: u32, reference: &str, asked: &Value) -> Result<Value> {
    let set = page::call(
        browser,
        tab,
        "form_input",
        &format!("setting {reference}"),
        true,
        json!({ "ref": reference, "value": asked, "direct": true }),
    )?;
    browser.after_input(tab);
    let mut out = page::read_back(browser, tab, reference, asked, &set)?;
    out["set_by"] = json!("value");
    Ok(out)
}

/// A slider value: a number, or text that is one.
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(value: f64, min: f64, max: f64, step: Option<f64>) -> State {
        State {
            value: Some(value),
            min,
            max,
            step,
            native: true,
            bounded: true,
            ends: true,
            vertical: false,
            focused: true,
            disabled: false,
        }
    }

    #[test]
    fn ends_take_home_and_end() {
        let s = state(40.0, 0.0, 100.0, Some(1.0));
        assert_eq!(plan(&s, 0.0, Some(1.0), false).keys, vec!["Home"]);
        assert_eq!(plan(&s, 100.0, Some(1.0), false).keys, vec!["End"]);
    }

    #[test]
    fn arrows_count_steps_from_the_nearer_start() {
        let s = state(20.0, 0.0, 100.0, Some(5.0));
        let p = plan(&s, 35.0, Some(5.0), false);
        assert_eq!(p.arrows, 3);
        assert!(p.keys.iter().all(|k| *k == "ArrowRight"), "{p:?}");
        // Closer from the far end: End, then left.
        let p = plan(&s, 90.0, Some(5.0), false);
        assert_eq!(p.keys[0], "End");
        assert_eq!(p.arrows, 2);
        assert!(p.keys[1..].iter().all(|k| *k == "ArrowLeft"));
        // Flipped (right to left) and vertical.
        let p = plan(&s, 10.0, Some(5.0), true);
        assert!(p.keys.iter().all(|k| *k == "ArrowRight"), "{p:?}");
        let mut v = s.clone();
        v.vertical = true;
        assert!(
            plan(&v, 30.0, Some(5.0), false)
                .keys
                .iter()
                .all(|k| *k == "ArrowUp")
        );
    }

    #[test]
    fn an_unknown_step_is_measured_with_one_arrow() {
        let s = state(3.0, 0.0, 10.0, None);
        assert_eq!(
            plan(&s, 7.0, None, false),
            Plan {
                keys: vec!["ArrowRight"],
                arrows: 1
            }
        );
        let s = state(1.0, 0.0, 1000.0, Some(1.0));
        assert_eq!(plan(&s, 900.0, Some(1.0), false).arrows, 100);
        let far = state(0.5, 0.0, 100_000.0, Some(1.0));
        assert_eq!(plan(&far, 50_000.0, Some(1.0), false).arrows, MAX_ARROWS);
    }

    #[test]
    fn a_widget_without_home_and_end_moves_by_arrows_from_where_it_is() {
        let mut s = state(5.0, 1.0, 20.0, Some(1.0));
        s.ends = false;
        let p = plan(&s, 20.0, Some(1.0), false);
        assert_eq!(p.arrows, 15);
        assert!(p.keys.iter().all(|k| *k == "ArrowRight"), "{p:?}");
        let p = plan(&s, 2.0, Some(1.0), false);
        assert_eq!(p.keys, vec!["ArrowLeft"; 3]);
    }

    #[test]
    fn slider_values_are_numbers() {
        assert_eq!(number(&json!(35)), Some(35.0));
        assert_eq!(number(&json!(" 1.5 ")), Some(1.5));
        assert_eq!(number(&json!("lots")), None);
        assert_eq!(number(&json!(true)), None);
    }
}
