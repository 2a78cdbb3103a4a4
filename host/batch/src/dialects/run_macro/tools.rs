//! The tool table: every tool name of desktop-touch's run_macro, what it
//! becomes here (calls to our verbs, with desktop-touch's parameters mapped
//! onto ours), or why it cannot exist here. The one place names, parameter
//! mappings and refusals live; the input schema, the planner and the unit
//! tests all read it.

use serde_json::{Map, Value, json};

use super::browser;
use super::step::Step;
use super::{BROWSER, Out, lit};
use crate::dialects::desktop::DESKTOP;

/// Maps one step's parameters onto calls, reporting problems on the step.
pub(super) type MapFn = fn(&mut Step<'_>, &mut Out<'_>);

/// What a desktop-touch tool is here.
pub(super) enum Kind {
    /// Mapped onto our verbs. `needs` is the verb it cannot do without: the
    /// tool is offered only when that verb is loaded.
    Maps {
        needs: (&'static str, &'static str),
        map: MapFn,
    },
    /// Cannot exist on this host; the reason, for the refusal.
    Refused(&'static str),
}

/// One desktop-touch tool name.
pub(super) struct Tool {
    pub(super) name: &'static str,
    pub(super) kind: Kind,
}

const fn maps(name: &'static str, needs: (&'static str, &'static str), map: MapFn) -> Tool {
    Tool {
        name,
        kind: Kind::Maps { needs, map },
    }
}

const fn refused(name: &'static str, reason: &'static str) -> Tool {
    Tool {
        name,
        kind: Kind::Refused(reason),
    }
}

/// Every desktop-touch tool name run_macro knows. Ours that are not in it
/// (`click`, `type`, `navigate`, ...) are accepted as they are.
pub(super) const TOOLS: &[Tool] = &[
    maps("sleep", (DESKTOP, "sleep"), sleep),
    maps("screenshot", (DESKTOP, "screenshot"), screenshot),
    maps("mouse_click", (DESKTOP, "click"), mouse_click),
    maps("mouse_drag", (DESKTOP, "drag"), mouse_drag),
    maps("click_element", (DESKTOP, "press"), click_element),
    maps("focus_window", (DESKTOP, "focus_window"), focus_window),
    maps("keyboard", (DESKTOP, "type"), keyboard),
    maps("scroll", (DESKTOP, "scroll"), scroll),
    maps("wait_until", (DESKTOP, "wait_for"), wait_until),
    maps("get_windows", (DESKTOP, "list_windows"), get_windows),
    maps("desktop_state", (DESKTOP, "list_windows"), desktop_state),
    maps("get_ui_elements", (DESKTOP, "ui_elements"), get_ui_elements),
    maps(
        "set_element_value",
        (DESKTOP, "set_text"),
        set_element_value,
    ),
    maps("browser_open", (BROWSER, "tabs_context"), browser::open),
    maps("browser_navigate", (BROWSER, "navigate"), browser::navigate),
    maps("browser_eval", (BROWSER, "javascript_tool"), browser::eval),
    maps(
        "browser_search",
        (BROWSER, "javascript_tool"),
        browser::search,
    ),
    maps(
        "browser_overview",
        (BROWSER, "javascript_tool"),
        browser::overview,
    ),
    maps(
        "browser_locate",
        (BROWSER, "javascript_tool"),
        browser::locate,
    ),
    maps("browser_click", (BROWSER, "computer"), browser::click),
    maps("browser_fill", (BROWSER, "javascript_tool"), browser::fill),
    maps("browser_form", (BROWSER, "javascript_tool"), browser::form),
    refused("run_macro", "run_macro cannot be called inside run_macro"),
    refused(
        "clipboard",
        "reads and writes the Windows clipboard; the desktop plugin here has no clipboard access \
         (type text with keyboard instead)",
    ),
    refused(
        "terminal",
        "reads Windows console and Terminal buffers through UI Automation; nothing here reads a \
         terminal's text (type into it with keyboard, look with screenshot)",
    ),
    refused(
        "window_dock",
        "pins, moves and resizes windows through Win32; the desktop plugin here has no verb that \
         moves, resizes or pins a window",
    ),
    refused(
        "workspace_snapshot",
        "returns every window's thumbnail and UI Automation summary at once; use get_windows and \
         screenshot here",
    ),
    refused(
        "workspace_launch",
        "starts programs through ShellExecute; this host never starts programs",
    ),
    refused(
        "notification_show",
        "shows a Windows tray balloon; there is no notification area here",
    ),
    refused(
        "desktop_discover",
        "builds desktop-touch's Windows world graph (entities with leases for desktop_act); use \
         get_ui_elements here",
    ),
    refused(
        "desktop_act",
        "acts on leases from desktop_discover, which do not exist here; use click_element, \
         set_element_value or keyboard",
    ),
    refused(
        "excel",
        "runs VBA in Excel over COM, which exists only on Windows",
    ),
    refused(
        "key_locker",
        "keeps terminal credentials in Windows DPAPI; not available here",
    ),
    refused(
        "screenshot_gc",
        "manages desktop-touch's on-disk screenshot cache; screenshots here come back inline and \
         are not stored",
    ),
    refused(
        "screenshot_query",
        "lists desktop-touch's on-disk screenshot cache; screenshots here come back inline and are \
         not stored",
    ),
    refused(
        "server_status",
        "reports desktop-touch's own Windows engine; not a macro step (desktop-touch refuses it \
         in macros too)",
    ),
];

/// The tool called `name`.
pub(super) fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The parameters of desktop-touch's guard and fix machinery.
pub(super) const LENS: &str = "perception lenses are desktop-touch's own; none exist here, so the guard it \
                    names cannot be checked";
pub(super) const FIX: &str = "suggested fixes are desktop-touch's own; none exist here";

/// Longest sleep pseudo-step, in ms (the seed's limit).
pub(super) const MAX_SLEEP_MS: i64 = 10_000;

/// Whether a step must name a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// May name none; `@active` is then the focused window, as our verbs
    /// take no window to mean.
    Optional,
    /// May name none, but no window means the whole screen here, so
    /// `@active` cannot be passed on as none.
    NotActive,
    /// Must name one.
    Required,
}

/// Copies the window a step names into `input`: desktop-touch's `windowTitle`
/// and `hwnd` (a window id here; it wins over the title there, so here too),
/// and for the tools whose name is also ours (`ours`), our `target`, `title`,
/// `class` and `exact`. `windowTitle: "@active"` is the focused window, which
/// our verbs use when none is named. Returns whether a window is named.
fn window(s: &mut Step<'_>, input: &mut Map<String, Value>, ours: bool, need: Need) -> bool {
    let mut named = false;
    if ours {
        for key in ["target", "title", "class", "exact"] {
            if let Some(v) = s.get(key) {
                named |= key != "exact";
                input.insert(key.into(), lit(v));
            }
        }
    }
    let title = s.string("windowTitle");
    let active = title.is_some_and(|t| t.trim() == "@active");
    match s.get("hwnd") {
        Some(value) => match window_id(value) {
            Some(_) if input.contains_key("target") => {
                s.problem("hwnd", "give the window once: target or hwnd");
            }
            Some(id) => {
                input.insert("target".into(), json!({"id": id}));
                named = true;
            }
            None => s.problem(
                "hwnd",
                format!(
                    "must be a window id (get_windows lists them; decimal or 0x hex), got {value}"
                ),
            ),
        },
        None => match title {
            Some(_) if active => {}
            Some(t) => {
                input.insert("windowTitle".into(), lit(&json!(t)));
                named = true;
            }
            None => {}
        },
    }
    if need == Need::NotActive && active {
        s.problem(
            "windowTitle",
            "name the window: without one this tool takes the whole screen here, so \"@active\" \
             (whatever has the focus) is not taken",
        );
    }
    if need == Need::Required && !named {
        if active {
            s.problem(
                "windowTitle",
                "name the window: \"@active\" (whatever has the focus when the step runs) is not \
                 taken for this tool here",
            );
        } else if !s.failed() {
            s.problem(
                "windowTitle",
                "is required (any part of the window's title)",
            );
        }
    }
    named
}

/// An X window id from `hwnd`: a number, or its decimal or `0x` hex text.
fn window_id(value: &Value) -> Option<u64> {
    let n = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => {
            let s = s.trim();
            match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => s.parse().ok(),
            }
        }
        _ => None,
    }?;
    (1..=u64::from(u32::MAX)).contains(&n).then_some(n)
}

/// A screen coordinate from a number, rounded (desktop-touch takes fractions).
fn coordinate(s: &mut Step<'_>, key: &str, value: f64) -> Option<i64> {
    let v = value.round();
    if !v.is_finite() || v.abs() > 100_000.0 {
        s.problem(
            key,
            format!("must be a screen coordinate (±100000), got {value}"),
        );
        return None;
    }
    Some(v as i64)
}

/// Our own verbs, as they are: the verb's schema checks the parameters.
pub(super) fn ours(s: &mut Step<'_>, out: &mut Out<'_>, plugin: &str, verb: &str) {
    s.accept_rest();
    let input = match lit(&Value::Object(s.params().clone())) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    out.call(s, plugin, verb, input);
}

/// `{tool: "sleep", params: {ms}}`: up to 10000 ms. desktop-touch clamps a
/// longer one silently; here it is refused, like every other bad value,
/// before anything runs.
fn sleep(s: &mut Step<'_>, out: &mut Out<'_>) {
    let ms = match s.number("ms") {
        None if s.failed() => return,
        None => 0,
        Some(ms) if (0.0..=MAX_SLEEP_MS as f64).contains(&ms) => ms.round() as i64,
        Some(ms) => {
            s.problem(
                "ms",
                format!("the sleep pseudo-step takes 0-{MAX_SLEEP_MS} ms, got {ms}"),
            );
            return;
        }
    };
    let mut input = Map::new();
    input.insert("ms".into(), json!(ms));
    out.call(s, DESKTOP, "sleep", input);
}

/// Parameters of desktop-touch's `screenshot` that only shape its Windows
/// capture and encoding; images here are PNG at full size.
const SCREENSHOT_ENCODING: &[&str] = &[
    "maxDimension",
    "dotByDot",
    "dotByDotMaxDimension",
    "grayscale",
    "webpQuality",
    "mode",
    "fullContent",
    "confirmImage",
    "ocrFallback",
    "ocrLanguage",
    "preprocessPolicy",
    "preprocessAdaptive",
    "include",
];

/// `screenshot`, in both styles: desktop-touch's (`windowTitle`, `hwnd`,
/// `displayId`, `region`, `detail` defaulting to meta unless a region or
/// display is named) and ours (`target`, `monitor`, an image by default).
fn screenshot(s: &mut Step<'_>, out: &mut Out<'_>) {
    let ours = ["target", "title", "class", "exact", "monitor"]
        .iter()
        .any(|k| s.peek(k));
    let dot_by_dot = s.boolean("dotByDot") == Some(true);
    s.ignore(SCREENSHOT_ENCODING);
    if s.boolean("diffMode") == Some(true) {
        s.problem(
            "diffMode",
            "frame diffs against a buffered earlier capture do not exist here; take a plain \
             screenshot",
        );
    }
    let detail = s.choice("detail", &["image", "text", "meta", "som", "ocr"]);
    if matches!(detail, Some("som" | "ocr")) {
        s.problem(
            "detail",
            "Windows OCR and Set-of-Marks are not available here; use \"text\" (the window's \
             accessibility elements) or \"image\"",
        );
    }
    let mut input = Map::new();
    let named = window(s, &mut input, true, Need::NotActive);
    let display = s.int("displayId", 0..=i64::from(u32::MAX));
    let monitor = s.int("monitor", 0..=i64::from(u32::MAX));
    match (display, monitor) {
        (Some(_), Some(_)) => s.problem("displayId", "give the monitor once: displayId or monitor"),
        (Some(m), None) | (None, Some(m)) => {
            input.insert("monitor".into(), json!(m));
        }
        (None, None) => {}
    }
    let region = s.has("region");
    if region {
        if named {
            s.problem(
                "region",
                "with a window, desktop-touch's region is window-local; here a region is in \
                 screen pixels: leave out the window, or capture the whole window",
            );
        }
        if let Some(r) = rectangle(s, "region") {
            input.insert("region".into(), r);
        }
    }
    let detail = detail.or(if ours {
        None
    } else if dot_by_dot || region || display.is_some() {
        Some("image")
    } else {
        Some("meta")
    });
    if let Some(d) = detail.filter(|d| *d == "text" || *d == "meta" || *d == "image") {
        if out.allows(DESKTOP, "screenshot", "detail", d) {
            input.insert("detail".into(), json!(d));
        } else if d != "image" {
            s.problem(
                "detail",
                format!(
                    "detail {d:?} needs the desktop plugin's screenshot detail, which this host's \
                     plugin does not have; use \"image\""
                ),
            );
        }
    }
    out.call(s, DESKTOP, "screenshot", input);
}

/// `{x, y, width, height}` (numbers, as desktop-touch takes them) or our
/// `[x, y, width, height]`, as the object our verbs take.
fn rectangle(s: &mut Step<'_>, key: &str) -> Option<Value> {
    let value = s.get(key)?;
    let parts: Option<Vec<f64>> = match value {
        Value::Object(o) => ["x", "y", "width", "height"]
            .iter()
            .map(|k| o.get(*k).and_then(number))
            .collect(),
        Value::Array(a) if a.len() == 4 => a.iter().map(number).collect(),
        _ => None,
    };
    let extra = value.as_object().is_some_and(|o| {
        o.keys()
            .any(|k| !["x", "y", "width", "height"].contains(&k.as_str()))
    });
    match parts.as_deref() {
        Some([x, y, w, h]) if *w > 0.0 && *h > 0.0 && !extra => Some(json!({
            "x": x.round() as i64, "y": y.round() as i64,
            "width": w.round().max(1.0) as i64, "height": h.round().max(1.0) as i64
        })),
        _ => {
            s.problem(
                key,
                format!("must be {{x, y, width, height}} with a positive size, got {value}"),
            );
            None
        }
    }
}

/// A JSON number or numeric text.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|n: &f64| n.is_finite())
}

/// Parameters of desktop-touch's pointer tools that tune its Windows input
/// (cursor speed, homing, focus tracking, delivery checks).
const POINTER_TUNING: &[&str] = &[
    "narrate",
    "speed",
    "homing",
    "forceFocus",
    "trackFocus",
    "settleMs",
    "verifyDelivery",
    "include",
];

fn mouse_click(s: &mut Step<'_>, out: &mut Out<'_>) {
    s.ignore(POINTER_TUNING);
    // They name the element a guarded click expects under the point; the
    // window check here covers the same ground.
    s.ignore(&["elementName", "elementId"]);
    s.refuse("lensId", LENS);
    s.refuse("fixId", FIX);
    let x = s.required_number("x");
    let y = s.required_number("y");
    let (x, y) = match (x, y, s.object("origin")) {
        (Some(x), Some(y), Some(origin)) => {
            let mut o = s.child("origin", origin);
            let ox = o.required_number("x");
            let oy = o.required_number("y");
            s.absorb(o);
            let scale = match s.number("scale") {
                Some(k) if k > 0.0 => k,
                Some(k) => {
                    s.problem("scale", format!("must be more than 0, got {k}"));
                    1.0
                }
                None => 1.0,
            };
            match (ox, oy) {
                (Some(ox), Some(oy)) => (Some(ox + x / scale), Some(oy + y / scale)),
                _ => (None, None),
            }
        }
        (x, y, _) => {
            s.ignore(&["scale"]);
            (x, y)
        }
    };
    let mut input = Map::new();
    if let (Some(x), Some(y)) = (x, y) {
        if let Some(x) = coordinate(s, "x", x) {
            input.insert("x".into(), json!(x));
        }
        if let Some(y) = coordinate(s, "y", y) {
            input.insert("y".into(), json!(y));
        }
    }
    if let Some(b) = s.choice("button", &["left", "right", "middle"]) {
        input.insert("button".into(), json!(b));
    }
    let count = if s.boolean("tripleClick") == Some(true) {
        3
    } else if s.boolean("doubleClick") == Some(true) {
        2
    } else {
        1
    };
    input.insert("count".into(), json!(count));
    window(s, &mut input, false, Need::Optional);
    out.call(s, DESKTOP, "click", input);
}

fn mouse_drag(s: &mut Step<'_>, out: &mut Out<'_>) {
    s.ignore(POINTER_TUNING);
    // Drags here go where they are told; there is no cross-window or tab-strip
    // guard to lift.
    s.ignore(&["allowCrossWindowDrag", "allowTabDrag"]);
    s.refuse("lensId", LENS);
    let mut input = Map::new();
    for (theirs, our) in [
        ("startX", "from_x"),
        ("startY", "from_y"),
        ("endX", "to_x"),
        ("endY", "to_y"),
    ] {
        if let Some(v) = s.required_number(theirs)
            && let Some(v) = coordinate(s, theirs, v)
        {
            input.insert(our.into(), json!(v));
        }
    }
    window(s, &mut input, false, Need::Optional);
    out.call(s, DESKTOP, "drag", input);
}

/// UI Automation control types as AT-SPI role names, for `controlType`. A
/// value not listed is passed on as it is, so an AT-SPI role works too.
const ROLES: &[(&str, &str)] = &[
    ("button", "push button"),
    ("calendar", "calendar"),
    ("checkbox", "check box"),
    ("combobox", "combo box"),
    ("dataitem", "table cell"),
    ("datagrid", "table"),
    ("document", "document frame"),
    ("edit", "text"),
    ("group", "panel"),
    ("header", "header"),
    ("headeritem", "column header"),
    ("hyperlink", "link"),
    ("image", "image"),
    ("list", "list"),
    ("listitem", "list item"),
    ("menu", "menu"),
    ("menubar", "menu bar"),
    ("menuitem", "menu item"),
    ("pane", "panel"),
    ("progressbar", "progress bar"),
    ("radiobutton", "radio button"),
    ("scrollbar", "scroll bar"),
    ("separator", "separator"),
    ("slider", "slider"),
    ("spinner", "spin button"),
    ("splitbutton", "push button"),
    ("statusbar", "status bar"),
    ("tab", "page tab list"),
    ("tabitem", "page tab"),
    ("table", "table"),
    ("text", "label"),
    ("toolbar", "tool bar"),
    ("tooltip", "tool tip"),
    ("tree", "tree"),
    ("treeitem", "tree item"),
    ("window", "frame"),
];

/// The AT-SPI role for a UIA `controlType`.
pub(super) fn role(control_type: &str) -> String {
    let key: String = control_type
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '_')
        .collect::<String>()
        .to_lowercase();
    ROLES
        .iter()
        .find(|(uia, _)| *uia == key)
        .map(|(_, atspi)| (*atspi).to_owned())
        .unwrap_or_else(|| control_type.trim().to_lowercase())
}

const AUTOMATION_ID: &str = "AT-SPI elements here have no UI Automation AutomationId; name the \
                             element (name, and controlType to narrow it)";

/// The element a `click_element` or `set_element_value` names: `name`
/// (part of it, any case) and an optional `controlType`.
fn element(s: &mut Step<'_>, input: &mut Map<String, Value>) {
    s.refuse("automationId", AUTOMATION_ID);
    if let Some(name) = s.string("name") {
        input.insert("name".into(), lit(&json!(name)));
    } else if !s.peek("name") && !s.peek("automationId") {
        s.problem(
            "name",
            "is required: the element's name or label (any part, any case)",
        );
    }
    if s.tool == "click_element"
        && let Some(t) = s.string("controlType")
    {
        input.insert("role".into(), lit(&json!(role(t))));
    }
}

fn click_element(s: &mut Step<'_>, out: &mut Out<'_>) {
    s.ignore(&["narrate", "include"]);
    s.refuse("lensId", LENS);
    s.refuse("fixId", FIX);
    let mut input = Map::new();
    window(s, &mut input, false, Need::Required);
    element(s, &mut input);
    out.call(s, DESKTOP, "press", input);
}

fn set_element_value(s: &mut Step<'_>, out: &mut Out<'_>) {
    s.ignore(&["narrate", "include"]);
    s.refuse("lensId", LENS);
    let mut input = Map::new();
    window(s, &mut input, false, Need::Required);
    element(s, &mut input);
    match s.string("value") {
        Some(v) => {
            input.insert("text".into(), lit(&json!(v)));
        }
        None if !s.peek("value") => s.problem("value", "is required: the text to set"),
        None => {}
    }
    out.call(s, DESKTOP, "set_text", input);
}

fn get_ui_elements(s: &mut Step<'_>, out: &mut Out<'_>) {
    s.ignore(&["include"]);
    let mut input = Map::new();
    window(s, &mut input, false, Need::Required);
    // desktop-touch's defaults, passed on so the answer is as deep and as long.
    input.insert(
        "max_depth".into(),
        json!(s.int("maxDepth", 1..=8).unwrap_or(4)),
    );
    input.insert(
        "max_elements".into(),
        json!(s.int("maxElements", 1..=200).unwrap_or(80)),
    );
    out.call(s, DESKTOP, "ui_elements", input);
}

fn get_windows(s: &mut Step<'_>, out: &mut Out<'_>) {
    s.ignore(&["include"]);
    out.call(s, DESKTOP, "list_windows", Map::new());
}

/// `desktop_state`: the windows with the focused one marked, the nearest this
/// host has to desktop-touch's focus snapshot.
fn desktop_state(s: &mut Step<'_>, out: &mut Out<'_>) {
    s.ignore(&[
        "include",
        "includeCursor",
        "includeScreen",
        "includeDocument",
        "includeSessionContext",
        "tabId",
        "port",
    ]);
    out.call(s, DESKTOP, "list_windows", Map::new());
}

fn focus_window(s: &mut Step<'_>, out: &mut Out<'_>) {
    s.ignore(&["cdpPort", "forceFocus", "include"]);
    s.refuse(
        "chromeTabUrlContains",
        "activates a Chrome tab over CDP; the browser here is the browser plugin's (use \
         browser_navigate or our tabs tools)",
    );
    let mut input = Map::new();
    if !window(s, &mut input, true, Need::Optional) && !s.failed() {
        s.problem(
            "title",
            "is required: any part of the window's title (windowTitle and target work too)",
        );
    }
    out.call(s, DESKTOP, "focus_window", input);
}

/// Parameters of desktop-touch's `keyboard` that tune its Windows input.
const KEYBOARD_TUNING: &[&str] = &[
    "method",
    "narrate",
    "forceFocus",
    "trackFocus",
    "settleMs",
    "include",
    "use_clipboard",
    "forceKeystrokes",
    "abortOnFocusLoss",
    "forceImeOff",
];

fn keyboard(s: &mut Step<'_>, out: &mut Out<'_>) {
    let Some(action) = s.choice("action", &["type", "press", "sequence"]) else {
        if !s.peek("action") {
            s.problem(
                "action",
                "is required: \"type\" (text), \"press\" (a key combo) or \"sequence\"",
            );
        }
        s.accept_rest();
        return;
    };
    s.context(format!("`keyboard` action {action:?}"));
    s.ignore(KEYBOARD_TUNING);
    s.refuse("lensId", LENS);
    let mut win = Map::new();
    window(s, &mut win, false, Need::Optional);
    match action {
        "type" => {
            s.refuse("fixId", FIX);
            let text = match s.string("text") {
                Some(t) if t.chars().count() <= 10_000 => Some(t),
                Some(_) => {
                    s.problem("text", "must be at most 10000 characters");
                    None
                }
                None => {
                    if !s.peek("text") {
                        s.problem("text", "is required");
                    }
                    None
                }
            };
            if s.boolean("replaceAll") == Some(true) {
                let mut select = win.clone();
                select.insert("combo".into(), json!("ctrl+a"));
                out.helper(s, DESKTOP, "key", select, "select all");
            }
            let mut input = win;
            if let Some(t) = text {
                input.insert("text".into(), lit(&json!(t)));
            }
            out.call(s, DESKTOP, "type", input);
        }
        "press" => {
            let mut input = win;
            if let Some(keys) = s.required_string("keys") {
                input.insert("combo".into(), lit(&json!(combo(keys))));
            }
            out.call(s, DESKTOP, "key", input);
        }
        _ => sequence(s, out, win),
    }
}

/// `keyboard {action: "sequence", steps: [{keys, holdMs, gapMs}]}`: each key
/// pressed in turn, with its gap (80 ms unless given) as a pause between,
/// since menus need the time to open before the next letter.
fn sequence(s: &mut Step<'_>, out: &mut Out<'_>, win: Map<String, Value>) {
    s.refuse("fixId", FIX);
    let Some(items) = s.array("steps") else {
        if !s.peek("steps") {
            s.problem("steps", "is required: [{keys, gapMs}, ...]");
        }
        return;
    };
    if items.is_empty() || items.len() > 16 {
        s.problem(
            "steps",
            format!("must hold 1 to 16 keys, got {}", items.len()),
        );
        return;
    }
    let mut keys = Vec::with_capacity(items.len());
    let mut total = 0_i64;
    for (i, item) in items.iter().enumerate() {
        let Some(map) = item.as_object() else {
            s.item_problem(
                "steps",
                i,
                format!("must be {{keys, holdMs, gapMs}}, got {item}"),
            );
            continue;
        };
        let mut k = s.item("steps", i, map);
        let combo_text = k.required_string("keys").map(combo);
        if k.int("holdMs", 0..=500).is_some_and(|h| h > 0) {
            k.problem("holdMs", "keys are tapped here; a hold cannot be sent");
        }
        let gap = k.int("gapMs", 0..=2_000).unwrap_or(80);
        s.absorb(k);
        if i + 1 < items.len() {
            total += gap;
        }
        keys.push((combo_text, gap));
    }
    if total > 5_000 {
        s.problem(
            "steps",
            format!("the gaps add up to {total} ms; a sequence may take at most 5000 ms"),
        );
    }
    let last = keys.len().saturating_sub(1);
    for (i, (combo_text, gap)) in keys.into_iter().enumerate() {
        let mut input = win.clone();
        if let Some(c) = combo_text {
            input.insert("combo".into(), lit(&json!(c)));
        }
        if i == last {
            out.call(s, DESKTOP, "key", input);
        } else {
            out.helper(s, DESKTOP, "key", input, "earlier key");
            if gap > 0 {
                let mut pause = Map::new();
                pause.insert("ms".into(), json!(gap));
                out.helper(s, DESKTOP, "sleep", pause, "gap");
            }
        }
    }
}

/// desktop-touch's key names where ours differ: its left/right modifier
/// names (`lctrl`, `ralt`) are plain modifiers here.
pub(super) fn combo(keys: &str) -> String {
    keys.split('+')
        .map(|part| match part.trim().to_ascii_lowercase().as_str() {
            "lctrl" | "rctrl" => "ctrl",
            "lalt" | "ralt" => "alt",
            "lshift" | "rshift" => "shift",
            _ => part,
        })
        .collect::<Vec<_>>()
        .join("+")
}

/// `scroll`, in both styles: desktop-touch's `{action: "raw", direction,
/// amount, x, y}` (and `to_element` with a CSS selector), or ours
/// `{x, y, dx, dy}`.
fn scroll(s: &mut Step<'_>, out: &mut Out<'_>) {
    let theirs = ["action", "direction", "amount"].iter().any(|k| s.peek(k));
    if !theirs {
        return ours(s, out, DESKTOP, "scroll");
    }
    s.ignore(&["include"]);
    let action = if s.peek("action") {
        s.choice("action", &["raw", "to_element", "smart", "capture", "read"])
    } else {
        // Without an action desktop-touch refuses the call; a direction says
        // which one is meant.
        s.ignore(&["action"]);
        Some("raw")
    };
    let Some(action) = action else {
        s.accept_rest();
        return;
    };
    s.context(format!("`scroll` action {action:?}"));
    match action {
        "raw" => scroll_raw(s, out),
        "to_element" => {
            s.ignore(&["windowTitle", "tabId"]);
            match s.string("selector") {
                Some(selector) => browser::scroll_to(s, out, selector),
                None => {
                    s.problem(
                        "name",
                        "scrolling a UI Automation element into view is not available here; \
                         a page element can be, by CSS selector",
                    );
                    s.accept_rest();
                }
            }
        }
        other => {
            let why = match other {
                "smart" => {
                    "multi-strategy scrolling (CDP, UI Automation, image search) is not available here; use action \"raw\", or \"to_element\" with a CSS selector"
                }
                "capture" => {
                    "stitched full-page captures are not available here; scroll with action \"raw\" and take screenshots"
                }
                _ => {
                    "scroll-and-OCR reading is not available here; scroll with action \"raw\" and take screenshots"
                }
            };
            s.problem("action", why);
            s.accept_rest();
        }
    }
}

fn scroll_raw(s: &mut Step<'_>, out: &mut Out<'_>) {
    s.ignore(&["speed", "homing"]);
    let mut input = Map::new();
    let direction = s.choice("direction", &["up", "down", "left", "right"]);
    if direction.is_none() && !s.peek("direction") {
        s.problem("direction", "is required: up, down, left or right");
    }
    let amount = s.int("amount", 1..=100).unwrap_or(3);
    match direction {
        Some("up") => input.insert("dy".into(), json!(-amount)),
        Some("down") => input.insert("dy".into(), json!(amount)),
        Some("left") => input.insert("dx".into(), json!(-amount)),
        Some(_) => input.insert("dx".into(), json!(amount)),
        None => None,
    };
    let x = s.number("x");
    let y = s.number("y");
    match (x, y) {
        (Some(x), Some(y)) => {
            if let Some(x) = coordinate(s, "x", x) {
                input.insert("x".into(), json!(x));
            }
            if let Some(y) = coordinate(s, "y", y) {
                input.insert("y".into(), json!(y));
            }
        }
        (None, None) if !out.requires(DESKTOP, "scroll", "x") => {}
        (None, None) => s.problem(
            "x",
            "x and y are required here: the wheel turns at a point (screen pixels), not at \
             wherever the pointer is",
        ),
        (Some(_), None) => s.problem("y", "is required with x"),
        (None, Some(_)) => s.problem("x", "is required with y"),
    }
    window(s, &mut input, false, Need::Optional);
    out.call(s, DESKTOP, "scroll", input);
}

/// desktop-touch's `wait_until` target fields.
const WAIT_TARGET: &[&str] = &[
    "windowTitle",
    "elementName",
    "elementSelector",
    "pattern",
    "regex",
    "scope",
    "port",
    "tabId",
    "by",
    "fromHwnd",
];

/// desktop-touch's conditions that are not also ours.
const WAIT_THEIRS: &[&str] = &[
    "window_disappears",
    "focus_changes",
    "value_changes",
    "element_appears",
    "ready_state",
    "terminal_output_contains",
    "element_matches",
    "url_matches",
];

/// Whether a `wait_until` step is written for desktop-touch: its `target`
/// object (or JSON text of one), `timeoutMs`/`intervalMs`, or a condition
/// only it has. Ours names an element with `element` and a window with a
/// string `target` or our target fields.
fn theirs_wait(params: &Map<String, Value>) -> bool {
    if params.contains_key("element") {
        return false;
    }
    let target_is_theirs = match params.get("target") {
        // An empty target is desktop-touch's default; ours names a window.
        Some(Value::Object(t)) => {
            t.is_empty() || t.keys().any(|k| WAIT_TARGET.contains(&k.as_str()))
        }
        Some(Value::String(t)) => t.trim_start().starts_with('{'),
        _ => false,
    };
    target_is_theirs
        || params.contains_key("timeoutMs")
        || params.contains_key("intervalMs")
        || params
            .get("condition")
            .and_then(Value::as_str)
            .is_some_and(|c| WAIT_THEIRS.contains(&c))
}

/// `wait_until`: desktop-touch's conditions onto the desktop plugin's
/// `wait_for` (windows, accessibility elements) and the browser plugin's
/// `wait_for_page` (page elements, URLs); ours as they are.
fn wait_until(s: &mut Step<'_>, out: &mut Out<'_>) {
    if !theirs_wait(s.params()) {
        return ours(s, out, DESKTOP, "wait_for");
    }
    s.ignore(&["include"]);
    let conditions = [
        "window_appears",
        "window_disappears",
        "focus_changes",
        "value_changes",
        "element_appears",
        "ready_state",
        "terminal_output_contains",
        "element_matches",
        "url_matches",
    ];
    let condition = s.choice("condition", &conditions);
    if condition.is_none() && !s.peek("condition") {
        s.problem("condition", "is required");
    }
    let timeout_ms = s.int("timeoutMs", 100..=60_000).unwrap_or(5_000);
    let interval_ms = s.int("intervalMs", 50..=5_000).unwrap_or(200);
    let parsed;
    let target: &Map<String, Value> = match s.get("target") {
        Some(Value::Object(t)) => t,
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(t)) => {
                parsed = t;
                &parsed
            }
            _ => {
                s.problem("target", "must be an object or JSON text of one");
                return;
            }
        },
        Some(other) => {
            s.problem("target", format!("must be an object, got {other}"));
            return;
        }
        None => {
            parsed = Map::new();
            &parsed
        }
    };
    let Some(condition) = condition else {
        s.accept_rest();
        return;
    };
    let mut t = s.child("target", target);
    t.context(format!("`target` of condition {condition:?}"));
    match condition {
        "focus_changes" => s.problem(
            "condition",
            "focus changes are not watched here; wait for the window you expect \
             (window_appears) instead",
        ),
        "terminal_output_contains" => s.problem(
            "condition",
            "nothing here reads a terminal's text; wait for something on screen instead",
        ),
        "element_matches" | "url_matches" => {
            // The CDP port means nothing here; the rest are other conditions'.
            t.ignore(WAIT_TARGET);
            browser::wait(s, &mut t, out, condition, timeout_ms, interval_ms);
        }
        _ => {
            t.ignore(WAIT_TARGET);
            let ours = match condition {
                "window_disappears" => "window_gone",
                // Ready here is mapped and on screen, which window_appears waits for.
                "ready_state" => "window_appears",
                other => other,
            };
            let mut input = Map::new();
            input.insert("condition".into(), json!(ours));
            input.insert("timeout_ms".into(), json!(timeout_ms));
            match t.string("windowTitle") {
                Some(w) if w.trim() == "@active" => t.problem(
                    "windowTitle",
                    "name the window: \"@active\" is not taken for waits here",
                ),
                Some(w) if !w.trim().is_empty() => {
                    input.insert("windowTitle".into(), lit(&json!(w)));
                }
                _ => t.problem("windowTitle", "is required for this condition"),
            }
            if matches!(condition, "element_appears" | "value_changes") {
                match t.string("elementName") {
                    Some(n) if !n.trim().is_empty() => {
                        input.insert("element".into(), lit(&json!({"name": n})));
                    }
                    _ => t.problem("elementName", "is required for this condition"),
                }
                if !out.allows(DESKTOP, "wait_for", "condition", ours) {
                    s.problem(
                        "condition",
                        format!(
                            "{condition} needs the desktop plugin's element waits, which this \
                             host's plugin does not have"
                        ),
                    );
                }
            }
            out.call(s, DESKTOP, "wait_for", input);
        }
    }
    if matches!(condition, "focus_changes" | "terminal_output_contains") {
        t.accept_rest();
    }
    s.absorb(t);
}
