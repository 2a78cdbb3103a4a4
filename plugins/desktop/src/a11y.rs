//! Verbs on the accessibility tree (AT-SPI, through the host's
//! `accessibility` interface): `ui_elements` lists a window's elements,
//! `press` and `set_text` act on one by path or by name, `wait_for` waits on
//! elements, and `screenshot` with `detail: "text"` describes a window by its
//! elements instead of pixels.
//!
//! Paths agents see carry their window: `0x1a00003/0/2/1` is the element at
//! child indexes 0, 2, 1 under window 0x1a00003's root, so a `press` in a
//! later step needs nothing else. A path without the window part (`0/2/1`)
//! means the step's target window. Acting by path takes the name the caller
//! saw (`expect_name`): a tree that changed in between gives `world-moved`
//! instead of pressing whatever sits there now.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use stephost_plugin::desktop::accessibility::{self, Element};
use stephost_plugin::desktop::windows::{self, WindowInfo};
use stephost_plugin::desktop::{DesktopError, input};
use stephost_plugin::{Failure, FailureCode, Output};

use crate::args::{Args, invalid};
use crate::{State, all_windows, fail, output, target};

/// Default depth and size of a listing.
const DEFAULT_DEPTH: i64 = 16;
const DEFAULT_ELEMENTS: i64 = 400;
/// Most lines of the text form of a listing; the value holds all elements.
const MAX_TEXT_LINES: usize = 300;
/// How deep and wide a search by name walks.
const SEARCH_DEPTH: u32 = 32;
const SEARCH_ELEMENTS: u32 = 3_000;
/// How often an element wait looks.
const POLL: Duration = Duration::from_millis(100);

/// The check of every verb that needs the accessibility bus: refused before
/// the batch acts when there is none, naming what to start.
pub(crate) fn check_bus(_: &Args) -> Result<(), Failure> {
    accessibility::status().map_err(|e| fail(e, false))
}

/// The check of `key`: key names and the operator's blocked combos.
pub(crate) fn check_combo(args: &Args) -> Result<(), Failure> {
    let combo = args.str("combo")?;
    input::check_combo(combo).map_err(|e| fail(e, false).with_field("combo"))
}

/// The check of `wait_for`: element conditions need the bus.
pub(crate) fn check_wait(args: &Args) -> Result<(), Failure> {
    match args.opt_str("condition")? {
        Some(c) if is_element_condition(c) => check_bus(args),
        _ => Ok(()),
    }
}

/// The check of `screenshot`: `detail: "text"` needs the bus.
pub(crate) fn check_screenshot(args: &Args) -> Result<(), Failure> {
    match args.opt_str("detail")? {
        Some("text") => check_bus(args),
        _ => Ok(()),
    }
}

/// Whether a `wait_for` condition is about elements.
pub(crate) fn is_element_condition(condition: &str) -> bool {
    matches!(
        condition,
        "element_appears" | "element_gone" | "element_matches" | "value_changes"
    )
}

/// A path as written by an agent: its window, if it names one, and the
/// child-index chain under the window's root.
#[derive(Debug, Clone, PartialEq)]
struct Path {
    window: Option<u64>,
    chain: String,
}

impl Path {
    fn parse(text: &str) -> Result<Self, Failure> {
        let text = text.trim();
        let (window, chain) = match text.split_once('/') {
            Some((first, rest)) if first.starts_with("0x") => (Some(first), rest),
            None if text.starts_with("0x") => (Some(text), ""),
            _ => (None, text),
        };
        let window = window
            .map(|w| {
                u64::from_str_radix(&w[2..], 16).map_err(|_| {
                    invalid(
                        "path",
                        format!("`{w}` is not a window id (paths look like 0x1a00003/0/2/1)"),
                    )
                })
            })
            .transpose()?;
        let chain = chain.trim_matches('/');
        if !chain.is_empty() && chain.split('/').any(|s| s.parse::<u16>().is_err()) {
            return Err(invalid(
                "path",
                format!(
                    "`{text}` is not a path: child indexes joined by `/`, after the window id (0x1a00003/0/2/1)"
                ),
            ));
        }
        Ok(Path {
            window,
            chain: chain.to_owned(),
        })
    }

    fn render(window: u64, chain: &str) -> String {
        if chain.is_empty() {
            format!("{window:#x}")
        } else {
            format!("{window:#x}/{chain}")
        }
    }
}

/// The window a step means: its target, else the window a path names, else
/// the one the last acting step meant, else the focused one.
fn window_for(state: &State, args: &Args, path: Option<&Path>) -> Result<WindowInfo, Failure> {
    if let Some(query) = target::Query::from_args(args)? {
        let list = all_windows()?;
        return query.pick(&list).cloned();
    }
    let id = path.and_then(|p| p.window).or(state.last_window);
    if let Some(id) = id {
        return windows::get_window(id).map_err(|e| fail(e, false));
    }
    windows::focused_window()
        .map_err(|e| fail(e, false))?
        .ok_or_else(|| {
            Failure::new(
                FailureCode::NotFound,
                "no window has the focus; name one with target",
            )
            .with_input_fired(false)
        })
}

/// An element as JSON, its path with its window.
fn element_json(window: u64, e: &Element) -> Value {
    let mut m = Map::new();
    m.insert("path".into(), json!(Path::render(window, &e.path)));
    m.insert("role".into(), json!(e.role));
    m.insert("name".into(), json!(e.name));
    if !e.description.is_empty() {
        m.insert("description".into(), json!(e.description));
    }
    if let Some(value) = &e.value {
        m.insert("value".into(), json!(value));
    }
    m.insert("states".into(), json!(e.states));
    if !e.actions.is_empty() {
        m.insert("actions".into(), json!(e.actions));
    }
    if let Some(b) = &e.bounds {
        m.insert(
            "bounds".into(),
            json!({"x": b.x, "y": b.y, "width": b.width, "height": b.height}),
        );
    }
    if e.editable {
        m.insert("editable".into(), json!(true));
    }
    m.insert("child_count".into(), json!(e.child_count));
    Value::Object(m)
}

/// Whether an agent could act on it.
fn interactive(e: &Element) -> bool {
    e.editable
        || !e.actions.is_empty()
        || e.states
            .iter()
            .any(|s| s == "focusable" || s == "selectable")
}

fn text_line(window: u64, e: &Element) -> String {
    let depth = if e.path.is_empty() {
        0
    } else {
        e.path.split('/').count()
    };
    let mut line = format!(
        "{}{} {} {:?}",
        "  ".repeat(depth),
        Path::render(window, &e.path),
        e.role,
        e.name
    );
    if let Some(v) = e.value.as_deref().filter(|v| !v.is_empty()) {
        let short: String = v.chars().take(80).collect();
        line.push_str(&format!(" value={short:?}"));
    }
    if !e.actions.is_empty() {
        line.push_str(&format!(" [{}]", e.actions.join(", ")));
    }
    if e.editable {
        line.push_str(" editable");
    }
    line
}

/// Lowercased and trimmed, for comparing names.
fn norm(text: &str) -> String {
    text.trim().to_lowercase()
}

/// An element filter: `name`, `role`, `text` (name or value contains it).
#[derive(Debug, Default, Clone)]
struct Selector {
    path: Option<Path>,
    name: Option<String>,
    role: Option<String>,
    text: Option<String>,
}

impl Selector {
    fn from_map(map: &Map<String, Value>, field: &str) -> Result<Self, Failure> {
        let get = |key: &str| -> Result<Option<String>, Failure> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(invalid(
                    &format!("{field}{key}"),
                    format!("`{key}` must be a string"),
                )),
            }
        };
        Ok(Selector {
            path: get("path")?.map(|p| Path::parse(&p)).transpose()?,
            name: get("name")?,
            role: get("role")?,
            text: get("text")?,
        })
    }

    fn is_empty(&self) -> bool {
        self.path.is_none() && self.name.is_none() && self.role.is_none() && self.text.is_none()
    }

    /// Whether `e` passes the name, role and text filters (not the path).
    fn matches(&self, e: &Element) -> bool {
        let name_ok = self
            .name
            .as_deref()
            .is_none_or(|n| norm(&e.name).contains(&norm(n)));
        let role_ok = self
            .role
            .as_deref()
            .is_none_or(|r| norm(&e.role) == norm(r) || norm(&e.role).contains(&norm(r)));
        let text_ok = self.text.as_deref().is_none_or(|t| {
            let t = norm(t);
            norm(&e.name).contains(&t) || e.value.as_deref().is_some_and(|v| norm(v).contains(&t))
        });
        name_ok && role_ok && text_ok
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = &self.path {
            parts.push(format!("path {}", p.chain));
        }
        if let Some(n) = &self.name {
            parts.push(format!("name {n:?}"));
        }
        if let Some(r) = &self.role {
            parts.push(format!("role {r:?}"));
        }
        if let Some(t) = &self.text {
            parts.push(format!("text {t:?}"));
        }
        parts.join(", ")
    }
}

fn tree(window: u64, depth: u32, elements: u32) -> Result<accessibility::Tree, Failure> {
    accessibility::window_tree(window, depth, elements).map_err(|e| fail(e, false))
}

/// `ui_elements`: a window's elements, filtered.
pub(crate) fn ui_elements(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let window = window_for(state, args, None)?;
    let depth = args.opt_int("max_depth", 0..=64)?.unwrap_or(DEFAULT_DEPTH) as u32;
    let max = args
        .opt_int("max_elements", 1..=5000)?
        .unwrap_or(DEFAULT_ELEMENTS) as u32;
    let only_interactive = args.boolean("interactive", false)?;
    let selector = Selector {
        path: None,
        name: args.opt_str("name")?.map(str::to_owned),
        role: args.opt_str("role")?.map(str::to_owned),
        text: None,
    };
    let filtered = selector.name.is_some() || selector.role.is_some() || only_interactive;
    let tree = tree(window.id, depth, max)?;
    let shown: Vec<&Element> = tree
        .elements
        .iter()
        .filter(|e| !filtered || (selector.matches(e) && (!only_interactive || interactive(e))))
        .collect();
    let mut text = format!(
        "{} element(s) of {:?} ({}){}",
        shown.len(),
        window.title,
        tree.application,
        if tree.truncated {
            " (truncated: raise max_depth or max_elements)"
        } else {
            ""
        }
    );
    for e in shown.iter().take(MAX_TEXT_LINES) {
        text.push('\n');
        text.push_str(&text_line(window.id, e));
    }
    if shown.len() > MAX_TEXT_LINES {
        text.push_str(&format!(
            "\n... {} more in the value",
            shown.len() - MAX_TEXT_LINES
        ));
    }
    let elements: Vec<Value> = shown.iter().map(|e| element_json(window.id, e)).collect();
    Ok(output(
        json!({
            "window": target::window_json(&window),
            "application": tree.application,
            "elements": elements,
            "truncated": tree.truncated,
        }),
        text,
    ))
}

/// The element a `press` or `set_text` means: its path, or the element of the
/// window whose name matches (`want` picks among several).
fn find(
    state: &State,
    args: &Args,
    want: fn(&Element) -> bool,
) -> Result<(WindowInfo, String, Option<String>), Failure> {
    let path = args.opt_str("path")?.map(Path::parse).transpose()?;
    let window = window_for(state, args, path.as_ref())?;
    if let Some(path) = path {
        let expect = args.opt_str("expect_name")?.map(str::to_owned);
        return Ok((window, path.chain, expect));
    }
    let name = args.opt_str("name")?;
    let role = args.opt_str("role")?;
    if name.is_none() && role.is_none() {
        return Err(invalid(
            "path",
            "name the element: `path` (from ui_elements), or `name` (and `role`) to find it in the window",
        ));
    }
    let selector = Selector {
        name: name.map(str::to_owned),
        role: role.map(str::to_owned),
        ..Selector::default()
    };
    let tree = tree(window.id, SEARCH_DEPTH, SEARCH_ELEMENTS)?;
    let found = pick(&tree.elements, &selector, want).ok_or_else(|| {
        Failure::new(
            FailureCode::NotFound,
            format!(
                "no element with {} in {:?}; list them with ui_elements",
                selector.describe(),
                window.title
            ),
        )
        .with_input_fired(false)
    })?;
    let expect = Some(found.name.clone()).filter(|n| !n.is_empty());
    Ok((window, found.path.clone(), expect))
}

/// The best element for `selector`: an exact name before a partial one, a
/// showing one before a hidden one, the first in reading order. An element
/// that matches but cannot take the action (a label) stands for the next one
/// after it that can (its field).
fn pick<'a>(
    elements: &'a [Element],
    selector: &Selector,
    want: fn(&Element) -> bool,
) -> Option<&'a Element> {
    let showing = |e: &Element| e.states.iter().any(|s| s == "showing");
    let exact = |e: &Element| {
        selector
            .name
            .as_deref()
            .is_none_or(|n| norm(&e.name) == norm(n))
    };
    let mut best: Option<(u8, usize)> = None;
    for (i, e) in elements.iter().enumerate() {
        if !selector.matches(e) {
            continue;
        }
        let target = if want(e) {
            Some(i)
        } else {
            // A label: the next element that can take it, before another label.
            elements[i + 1..]
                .iter()
                .take(6)
                .position(want)
                .map(|j| i + 1 + j)
        };
        let Some(target) = target else { continue };
        let rank = u8::from(exact(e)) * 2 + u8::from(showing(&elements[target]));
        if best.is_none_or(|(r, _)| rank > r) {
            best = Some((rank, target));
        }
    }
    best.map(|(_, i)| &elements[i])
}

fn acted(state: &mut State, window: &WindowInfo, e: &Element, what: &str) -> Output {
    state.remember(window.id);
    let gone = if e.states.iter().any(|s| s == "defunct") {
        "; it is gone now (its window closed)"
    } else {
        ""
    };
    let text = format!(
        "{what} the {} {:?} ({}) in {:?}{gone}",
        e.role,
        e.name,
        Path::render(window.id, &e.path),
        window.title
    );
    output(element_json(window.id, e), text)
}

/// `press`: runs an element's action.
pub(crate) fn press(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let (window, chain, expect) = find(state, args, |e| !e.actions.is_empty())?;
    let action = args.opt_str("action")?;
    let element = accessibility::do_action(window.id, &chain, action, expect.as_deref())
        .map_err(|e| fail(e, true))?;
    Ok(acted(state, &window, &element, "pressed"))
}

/// `set_text`: replaces an element's text.
pub(crate) fn set_text(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let (window, chain, expect) = find(state, args, |e| e.editable)?;
    let text = args.str("text")?;
    let element = accessibility::set_text(window.id, &chain, text, expect.as_deref())
        .map_err(|e| fail(e, true))?;
    Ok(acted(state, &window, &element, "set the text of"))
}

/// `wait_for` on elements: `element_appears`, `element_gone`,
/// `element_matches` (an element with `element.text` in its name or value),
/// `value_changes` (the element's value differs from when the wait began).
pub(crate) fn wait_element(
    state: &mut State,
    args: &Args,
    condition: &str,
    timeout: Duration,
) -> Result<Output, Failure> {
    let selector = match args.get("element") {
        Some(Value::Object(map)) => Selector::from_map(map, "element.")?,
        Some(_) => {
            return Err(invalid(
                "element",
                "must be an object {path, name, role, text}",
            ));
        }
        None => Selector::default(),
    };
    if selector.is_empty() {
        return Err(invalid(
            "element",
            format!("`{condition}` needs an element: {{path}} or {{name, role, text}}"),
        ));
    }
    if condition == "element_matches" && selector.text.is_none() && selector.name.is_none() {
        return Err(invalid(
            "element.text",
            "element_matches needs the text (or name) to match",
        ));
    }
    let window = window_for(state, args, selector.path.as_ref())?;
    let started = Instant::now();
    let look = |w: &WindowInfo| -> Result<Option<Element>, DesktopError> {
        match &selector.path {
            Some(path) => match accessibility::get_element(w.id, &path.chain) {
                Ok(e) if selector.matches(&e) => Ok(Some(e)),
                Ok(_) | Err(DesktopError::NotFound(_)) => Ok(None),
                Err(e) => Err(e),
            },
            None => Ok(
                accessibility::window_tree(w.id, SEARCH_DEPTH, SEARCH_ELEMENTS)?
                    .elements
                    .into_iter()
                    .find(|e| selector.matches(e)),
            ),
        }
    };
    let baseline = if condition == "value_changes" {
        let found = look(&window).map_err(|e| fail(e, false))?;
        Some(found.ok_or_else(|| {
            Failure::new(
                FailureCode::NotFound,
                format!(
                    "no element with {} in {:?} to watch",
                    selector.describe(),
                    window.title
                ),
            )
            .with_input_fired(false)
        })?)
    } else {
        None
    };
    loop {
        let seen = match look(&window) {
            Ok(seen) => seen,
            // An application registers on the bus a moment after its window
            // maps: until then it has no elements, which is what is waited for.
            Err(DesktopError::Unsupported(_))
                if condition != "value_changes" && started.elapsed() < timeout =>
            {
                None
            }
            Err(e) => return Err(fail(e, false)),
        };
        let done = match (condition, &seen, &baseline) {
            ("element_gone", None, _) => true,
            ("element_gone", Some(_), _) => false,
            ("value_changes", Some(now), Some(before)) => now.value != before.value,
            ("value_changes", None, _) => true,
            (_, Some(_), _) => true,
            _ => false,
        };
        if done {
            let waited = started.elapsed().as_millis() as u64;
            let value = json!({
                "condition": condition,
                "waited_ms": waited,
                "element": seen.as_ref().map(|e| element_json(window.id, e)),
                "window": target::window_json(&window),
            });
            let text = match &seen {
                Some(e) => format!("{condition} after {waited} ms: the {} {:?}", e.role, e.name),
                None => format!("{condition} after {waited} ms"),
            };
            return Ok(output(value, text));
        }
        if started.elapsed() >= timeout {
            return Err(Failure::new(
                FailureCode::Timeout,
                format!(
                    "{condition}: no change for {} in {:?} within {} ms",
                    selector.describe(),
                    window.title,
                    timeout.as_millis()
                ),
            )
            .with_input_fired(false));
        }
        std::thread::sleep(POLL);
    }
}

/// `screenshot` with `detail: "text"`: the window's interactive elements as
/// text, no image; `detail: "meta"`: the window's title and geometry.
pub(crate) fn describe_window(
    state: &mut State,
    args: &Args,
    detail: &str,
) -> Result<Output, Failure> {
    let window = window_for(state, args, None)?;
    if detail == "meta" {
        let text = format!(
            "{:?} ({}) {}x{} at ({}, {}){}",
            window.title,
            window.class,
            window.geometry.width,
            window.geometry.height,
            window.geometry.x,
            window.geometry.y,
            if window.focused { ", focused" } else { "" }
        );
        return Ok(output(
            json!({"window": target::window_json(&window)}),
            text,
        ));
    }
    let tree = tree(window.id, DEFAULT_DEPTH as u32, DEFAULT_ELEMENTS as u32)?;
    let shown: Vec<&Element> = tree
        .elements
        .iter()
        .filter(|e| interactive(e) || (!e.name.is_empty() && e.child_count == 0))
        .collect();
    let mut text = format!("{:?} ({}):", window.title, tree.application);
    for e in shown.iter().take(MAX_TEXT_LINES) {
        text.push('\n');
        text.push_str(&text_line(window.id, e));
    }
    let elements: Vec<Value> = shown.iter().map(|e| element_json(window.id, e)).collect();
    Ok(output(
        json!({
            "window": target::window_json(&window),
            "application": tree.application,
            "elements": elements,
            "truncated": tree.truncated,
        }),
        text,
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A showing element with no value, description, bounds or children.
    pub(crate) fn el(
        path: &str,
        role: &str,
        name: &str,
        actions: &[&str],
        editable: bool,
    ) -> Element {
        Element {
            path: path.into(),
            role: role.into(),
            name: name.into(),
            description: String::new(),
            value: None,
            states: vec!["showing".into()],
            actions: actions.iter().map(|s| (*s).to_owned()).collect(),
            bounds: None,
            editable,
            child_count: 0,
        }
    }

    #[test]
    fn paths_carry_their_window() {
        assert_eq!(
            Path::parse("0x1a00003/0/2/1").ok(),
            Some(Path {
                window: Some(0x1a00003),
                chain: "0/2/1".into()
            })
        );
        assert_eq!(
            Path::parse("0/2").ok(),
            Some(Path {
                window: None,
                chain: "0/2".into()
            })
        );
        assert_eq!(Path::parse("0x10").ok().and_then(|p| p.window), Some(0x10));
        assert!(Path::parse("0x1/a").is_err());
        assert!(Path::parse("0xzz/1").is_err());
        assert_eq!(Path::render(0x10, "0/1"), "0x10/0/1");
        assert_eq!(Path::render(0x10, ""), "0x10");
    }

    #[test]
    fn a_label_stands_for_the_field_after_it() {
        let elements = vec![
            el("", "dialog", "Name please", &[], false),
            el("0", "label", "Your name:", &[], false),
            el("1", "text", "", &["activate"], true),
            el("2", "push button", "OK", &["click"], false),
        ];
        let by_name = |name: &str| Selector {
            name: Some(name.into()),
            ..Selector::default()
        };
        let field = pick(&elements, &by_name("your name"), |e| e.editable);
        assert_eq!(field.map(|e| e.path.as_str()), Some("1"));
        let ok = pick(&elements, &by_name("ok"), |e| !e.actions.is_empty());
        assert_eq!(ok.map(|e| e.path.as_str()), Some("2"));
        assert!(pick(&elements, &by_name("cancel"), |e| !e.actions.is_empty()).is_none());
    }

    #[test]
    fn an_exact_name_beats_a_partial_one() {
        let elements = vec![
            el("0", "push button", "OK all", &["click"], false),
            el("1", "push button", "OK", &["click"], false),
        ];
        let sel = Selector {
            name: Some("ok".into()),
            ..Selector::default()
        };
        let found = pick(&elements, &sel, |e| !e.actions.is_empty());
        assert_eq!(found.map(|e| e.path.as_str()), Some("1"));
    }
}
