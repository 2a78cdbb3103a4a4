//! desktop-touch's `browser_*` tools on the browser plugin.
//!
//! Navigation and tab listing have verbs of their own. The selector- and
//! text-based tools (search, overview, locate, click, fill, form, eval) have
//! none: the browser plugin addresses elements by refs from its page tree.
//! They run as page scripts (`browser.js`) through `javascript_tool`, and a
//! click aims with a script and then clicks with `computer` at the point it
//! returned, so the click is a real one, as desktop-touch's is.

use serde_json::{Map, Value, json};

use super::step::Step;
use super::tools::{FIX, LENS};
use super::{BROWSER, Out, lit};

/// The page library; every script carries it (a few KiB on a loopback link).
const LIBRARY: &str = include_str!("browser.js");

/// The `by` axes of desktop-touch's element matching.
const AXES: &[&str] = &["text", "regex", "role", "ariaLabel"];

/// A script that runs `__dtm.<entry>(args)` in the page.
fn script(entry: &str, args: &Value) -> String {
    format!("(() => {{\n{LIBRARY}\nreturn __dtm.{entry}({args});\n}})()")
}

/// A `javascript_tool` call running `entry` with `args` in the step's tab.
fn page_call(s: &mut Step<'_>, out: &mut Out<'_>, entry: &str, args: Value) {
    let Some(tab) = out.tab(s) else { return };
    let mut input = Map::new();
    input.insert("tabId".into(), tab);
    input.insert("text".into(), lit(&json!(script(entry, &args))));
    out.call(s, BROWSER, "javascript_tool", input);
}

/// Parameters every browser tool takes that mean nothing here: the CDP port
/// (the host runs the browser), narration and context switches, the envelope.
fn ignore_common(s: &mut Step<'_>) {
    s.ignore(&["port", "include", "narrate", "includeContext"]);
}

pub(super) fn open(s: &mut Step<'_>, out: &mut Out<'_>) {
    // The host starts the browser on first use; there is nothing to launch.
    s.ignore(&["port", "include", "launch"]);
    if let Some(index) = out.call(s, BROWSER, "tabs_context", Map::new()) {
        out.listed_tabs(index);
    }
}

pub(super) fn navigate(s: &mut Step<'_>, out: &mut Out<'_>) {
    ignore_common(s);
    // The navigate verb always waits for the page to load.
    s.ignore(&["waitForLoad", "loadTimeoutMs"]);
    s.refuse("lensId", LENS);
    let url = s.required_string("url");
    let Some(tab) = out.tab(s) else { return };
    let mut input = Map::new();
    input.insert("tabId".into(), tab);
    if let Some(url) = url {
        input.insert("url".into(), lit(&json!(url)));
    }
    out.call(s, BROWSER, "navigate", input);
}

pub(super) fn eval(s: &mut Step<'_>, out: &mut Out<'_>) {
    ignore_common(s);
    s.refuse("lensId", LENS);
    let Some(action) = s.choice("action", &["js", "dom", "appState"]) else {
        if !s.peek("action") {
            s.problem("action", "is required: \"js\", \"dom\" or \"appState\"");
        }
        s.accept_rest();
        return;
    };
    s.context(format!("`browser_eval` action {action:?}"));
    match action {
        "js" => {
            s.ignore(&["withPerception"]);
            let Some(expression) = s.required_string("expression") else {
                return;
            };
            let Some(tab) = out.tab(s) else { return };
            let mut input = Map::new();
            input.insert("tabId".into(), tab);
            input.insert("text".into(), lit(&json!(wrap_expression(expression))));
            out.call(s, BROWSER, "javascript_tool", input);
        }
        "dom" => {
            let selector = s.string("selector");
            let max = s.int("maxLength", 100..=100_000).unwrap_or(10_000);
            page_call(
                s,
                out,
                "dom",
                json!({"selector": selector, "maxLength": max}),
            );
        }
        _ => {
            let selectors = string_list(s, "selectors");
            let max = s.int("maxBytes", 256..=64_000).unwrap_or(4_000);
            page_call(
                s,
                out,
                "appState",
                json!({"selectors": selectors, "maxBytes": max}),
            );
        }
    }
}

/// desktop-touch's reading of an `expression`: an expression gives its value,
/// statements give the last one's, and a body with a top-level `return` runs
/// as an async function. The plugin evaluates what it is given and awaits a
/// promise, so the fallback is done in the page.
pub(super) fn wrap_expression(expression: &str) -> String {
    let source = json!(expression);
    format!(
        "(async () => {{ const src = {source}; try {{ return await (0, eval)(src); }} catch (e) {{ \
         if (!(e instanceof SyntaxError)) throw e; \
         const Body = Object.getPrototypeOf(async function () {{}}).constructor; \
         return await new Body(src)(); }} }})()"
    )
}

pub(super) fn search(s: &mut Step<'_>, out: &mut Out<'_>) {
    ignore_common(s);
    let by = s.choice("by", &["text", "regex", "role", "ariaLabel", "selector"]);
    if by.is_none() && !s.peek("by") {
        s.problem(
            "by",
            "is required: \"text\", \"regex\", \"role\", \"ariaLabel\" or \"selector\"",
        );
    }
    let pattern = s.required_string("pattern");
    let args = json!({
        "by": by,
        "pattern": pattern,
        "scope": s.string("scope"),
        "maxResults": s.int("maxResults", 1..=200).unwrap_or(50),
        "offset": s.int("offset", 0..=i64::from(u32::MAX)).unwrap_or(0),
        "visibleOnly": s.boolean("visibleOnly").unwrap_or(true),
        "inViewportOnly": s.boolean("inViewportOnly").unwrap_or(false),
        "caseSensitive": s.boolean("caseSensitive").unwrap_or(false),
    });
    page_call(s, out, "search", args);
}

pub(super) fn overview(s: &mut Step<'_>, out: &mut Out<'_>) {
    ignore_common(s);
    let mut types = vec!["all"];
    if let Some(items) = s.array("types") {
        types.clear();
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(t @ ("link" | "button" | "input" | "all")) => types.push(t),
                _ => s.item_problem(
                    "types",
                    i,
                    format!("must be \"link\", \"button\", \"input\" or \"all\", got {item}"),
                ),
            }
        }
    }
    let args = json!({
        "scope": s.string("scope"),
        "types": types,
        "inViewportOnly": s.boolean("inViewportOnly").unwrap_or(false),
        "maxResults": s.int("maxResults", 1..=200).unwrap_or(50),
    });
    page_call(s, out, "overview", args);
}

pub(super) fn locate(s: &mut Step<'_>, out: &mut Out<'_>) {
    ignore_common(s);
    let selector = s.required_string("selector");
    page_call(s, out, "locate", json!({"selector": selector}));
}

/// What a click or fill is aimed at: `selector`, or `by` + `pattern` (with
/// `role`, `scope`, `caseSensitive`), never both.
fn aim_args(s: &mut Step<'_>) -> Value {
    let selector = s.string("selector");
    let by = s.choice("by", AXES);
    let pattern = s.string("pattern");
    match (selector, s.peek("by")) {
        (Some(_), true) => s.problem("by", "give either selector or by + pattern, not both"),
        (None, false) => s.problem("selector", "is required (or by + pattern)"),
        (None, true) if pattern.is_none_or(str::is_empty) => {
            s.problem("pattern", "is required with by")
        }
        _ => {}
    }
    json!({
        "selector": selector,
        "by": by,
        "pattern": pattern,
        "role": s.string("role"),
        "scope": s.string("scope"),
        "caseSensitive": s.boolean("caseSensitive").unwrap_or(false),
    })
}

pub(super) fn click(s: &mut Step<'_>, out: &mut Out<'_>) {
    ignore_common(s);
    s.refuse("lensId", LENS);
    s.refuse("fixId", FIX);
    let mut args = aim_args(s);
    args["scrollIntoView"] = json!(s.boolean("scrollIntoView").unwrap_or(false));
    let Some(tab) = out.tab(s) else { return };
    let mut aim = Map::new();
    aim.insert("tabId".into(), tab.clone());
    aim.insert("text".into(), lit(&json!(script("aim", &args))));
    let Some(at) = out.helper(s, BROWSER, "javascript_tool", aim, "aim") else {
        return;
    };
    let mut input = Map::new();
    input.insert("tabId".into(), tab);
    input.insert("action".into(), json!("left_click"));
    input.insert("coordinate".into(), Out::reference(at, ".result"));
    out.call(s, BROWSER, "computer", input);
}

pub(super) fn fill(s: &mut Step<'_>, out: &mut Out<'_>) {
    ignore_common(s);
    let mut args = aim_args(s);
    match s.string("value") {
        Some(v) if v.chars().count() <= 10_000 => args["value"] = json!(v),
        Some(_) => s.problem("value", "must be at most 10000 characters"),
        None if !s.peek("value") => s.problem("value", "is required"),
        None => {}
    }
    page_call(s, out, "fill", args);
}

pub(super) fn form(s: &mut Step<'_>, out: &mut Out<'_>) {
    ignore_common(s);
    let args = json!({
        "selector": s.required_string("selector"),
        "includeHidden": s.boolean("includeHidden").unwrap_or(false),
        "maxResults": s.int("maxResults", 1..=500).unwrap_or(100),
    });
    page_call(s, out, "form", args);
}

/// `scroll {action: "to_element", selector}`: scrolls a page element into view.
pub(super) fn scroll_to(s: &mut Step<'_>, out: &mut Out<'_>, selector: &str) {
    ignore_common(s);
    let block = s
        .choice("block", &["start", "center", "end", "nearest"])
        .unwrap_or("center");
    page_call(
        s,
        out,
        "scrollTo",
        json!({"selector": selector, "block": block}),
    );
}

/// `wait_until` conditions `element_matches` and `url_matches`, on the
/// plugin's `wait_for_page`. `target` is the step's `target` being read.
pub(super) fn wait(
    s: &mut Step<'_>,
    target: &mut Step<'_>,
    out: &mut Out<'_>,
    condition: &str,
    timeout_ms: i64,
    interval_ms: i64,
) {
    let mut input = Map::new();
    if condition == "url_matches" {
        input.insert("condition".into(), json!("url_matches"));
        if let Some(p) = target.required_string("pattern") {
            input.insert("pattern".into(), lit(&json!(p)));
        }
        if target.boolean("regex") == Some(true) {
            input.insert("regex".into(), json!(true));
        }
    } else {
        input.insert("condition".into(), json!("appears"));
        match target.choice("by", AXES) {
            Some(by) => {
                let by = if by == "ariaLabel" { "aria_label" } else { by };
                input.insert("by".into(), json!(by));
            }
            None if !target.peek("by") => target.problem(
                "by",
                "is required for element_matches: \"text\", \"regex\", \"role\" or \"ariaLabel\"",
            ),
            None => {}
        }
        if let Some(p) = target.required_string("pattern") {
            input.insert("pattern".into(), lit(&json!(p)));
        }
        if let Some(scope) = target.string("scope") {
            input.insert("scope".into(), lit(&json!(scope)));
        }
    }
    let tab = match tab_id(target) {
        TabId::Given(id) => Some(json!(id)),
        TabId::Bad => None,
        TabId::First => out.first_tab(s),
    };
    let Some(tab) = tab else { return };
    input.insert("tabId".into(), tab);
    input.insert("timeout_ms".into(), json!(timeout_ms));
    input.insert("interval_ms".into(), json!(interval_ms));
    out.call(s, BROWSER, "wait_for_page", input);
}

/// What a step's `tabId` says.
pub(super) enum TabId {
    /// A tab id of this browser.
    Given(u32),
    /// Not one; the step has a problem saying so.
    Bad,
    /// None: the first tab, as desktop-touch's "first page tab".
    First,
}

/// Reads `tabId`: the tab numbers `browser_open` lists here (desktop-touch's
/// are CDP target ids, strings; a number in a string is taken).
pub(super) fn tab_id(s: &mut Step<'_>) -> TabId {
    let Some(value) = s.get("tabId") else {
        return TabId::First;
    };
    let n = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(t) => t.trim().parse::<u64>().ok(),
        _ => None,
    };
    match n.and_then(|n| u32::try_from(n).ok()).filter(|n| *n >= 1) {
        Some(id) => TabId::Given(id),
        None => {
            s.problem(
                "tabId",
                format!(
                    "tab ids here are the numbers browser_open lists (tabs[].tabId), got {value}"
                ),
            );
            TabId::Bad
        }
    }
}

/// An optional list of strings.
fn string_list(s: &mut Step<'_>, key: &str) -> Option<Vec<String>> {
    let items = s.array(key)?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(t) => out.push(t.to_owned()),
            None => s.item_problem(key, i, format!("must be a string, got {item}")),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_carry_the_library_and_their_arguments() {
        let text = script("search", &json!({"by": "text", "pattern": "a\"b"}));
        assert!(text.starts_with("(() => {\n"), "{text}");
        assert!(text.contains("const __dtm = {"));
        assert!(
            text.ends_with("return __dtm.search({\"by\":\"text\",\"pattern\":\"a\\\"b\"});\n})()")
        );
    }

    #[test]
    fn expressions_are_wrapped_with_their_source_as_a_string() {
        let w = wrap_expression("const a = 1;\nreturn a");
        assert!(
            w.contains(r#"const src = "const a = 1;\nreturn a";"#),
            "{w}"
        );
        assert!(w.contains("SyntaxError"));
    }
}
