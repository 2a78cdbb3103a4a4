//! The verbs `describe` lists: names agents know from browser MCP servers,
//! descriptions written for a model choosing tools, and input schemas the host
//! checks before anything runs.

use serde_json::{Value, json};
use stephost_plugin::{Failure, Handler, Output, Verb};

use crate::browser::Browser;
use crate::computer::{self, MAX_WAIT_S};
use crate::{content, downloads, logs, tabs, upload, wait};

/// Every verb, in listing order. Why so terse: every description and schema
/// is sent to the model in every conversation; each says what the verb does
/// and the rule that bites, and property descriptions appear only where the
/// name, type and enum do not already say it.
pub(crate) fn verbs() -> Vec<Verb<Browser>> {
    vec![
        verb(
            "tabs_context",
            |b, _| value(tabs::context(b)),
            "List the open tabs (tabId, title, url). Call it first: every page tool needs a tabId. \
             The browser starts on first use with one blank tab.",
            false,
            object(json!({}), &[]),
        ),
        verb(
            "tabs_create",
            |b, a| value(tabs::create(b, a)),
            "Open a tab, optionally loading url; returns its tabId.",
            true,
            object(json!({"url": {"type": "string"}}), &[]),
        ),
        verb(
            "tabs_close",
            |b, a| value(tabs::close(b, a)),
            "Close a tab. Closing the last one closes the browser; the next call opens a fresh one.",
            true,
            object(json!({"tabId": tab_id()}), &["tabId"]),
        ),
        verb(
            "navigate",
            |b, a| downloads::around(b, a, |b, a| value(tabs::navigate(b, a))),
            "Load a URL (or \"back\", \"forward\", \"reload\") in a tab and wait for it and for \
             the requests its scripts start while loading (at most 2 s). Returns title, final url and HTTP status (null when unknown); an unreachable host fails with a \
             plain reason. Earlier refs and coordinates go stale.",
            true,
            object(
                json!({
                    "tabId": tab_id(),
                    "url": {"type": "string", "minLength": 1, "description": "No scheme: https:// (http:// for localhost and IPs)."}
                }),
                &["tabId", "url"],
            ),
        ),
        verb(
            "computer",
            |b, a| downloads::around(b, a, computer::run),
            "Mouse, keyboard and screenshots on a tab. Clicks (left_click, right_click, \
             double_click, triple_click) and hover go to coordinate, ref, or find (a description, \
             \"Place order button\", resolved when the action runs, so a batch can act on what \
             earlier entries reveal; it acts only on the one element that fits every word best: \
             none or a tie is waited for, then fails listing candidates). \
             A ref or find waits up to 5 s until the element is visible, still, enabled and \
             uncovered, and scrolls it into view. left_click_drag: start_ref/start_find/\
             start_coordinate to ref/find/coordinate. type: text into the focused element, or \
             into ref/find after clicking it (a field that then lacks it fails world-moved). \
             key: space-separated combos (\"ctrl+a Delete\"). \
             scroll: scroll_direction, scroll_amount (100 px ticks) at coordinate or the centre; \
             ref or find alone scrolls it into view. screenshot: the viewport, ref/find alone, or \
             full_page (clipped at 16,384 px). wait: duration seconds. After input the page \
             settles (handlers, requests and socket replies it started, DOM changes, navigations, \
             downloads). A stale ref fails world-moved.",
            true,
            computer_schema(),
        ),
        verb(
            "read_page",
            |b, a| value(content::read_page(b, a)),
            "Read a tab as an accessibility tree: a line per element with role, name, value and a \
             ref (ref_12) other tools accept, valid until the page navigates or reloads or the \
             element goes. A line inside an iframe ends frame=ref_N (the iframe's line, which every \
             filter keeps).",
            false,
            object(
                json!({
                    "tabId": tab_id(),
                    "filter": {"type": "string", "enum": ["interactive", "all"], "default": "all", "description": "interactive: only what can be clicked or typed into."},
                    "ref_id": {"type": "string", "description": "Read only the subtree under this ref."},
                    "depth": {"type": "integer", "minimum": 1, "maximum": 200}
                }),
                &["tabId"],
            ),
        ),
        verb(
            "find",
            |b, a| value(content::find(b, a)),
            "Find elements by description or text (\"search box\", \"Submit button\"), best match \
             first, each with ref, role, name and viewport box [x, y, width, height]; frame: the \
             iframe's ref of one inside a frame (the page's own first). matches fit every word \
             (kind words such as button or field by role), exact names first (exact: true); \
             partial fits are in partial_matches.",
            false,
            object(
                json!({
                    "tabId": tab_id(),
                    "query": {"type": "string", "minLength": 1},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}
                }),
                &["tabId", "query"],
            ),
        ),
        verb(
            "form_input",
            |b, a| value(content::form_input(b, a)),
            "Set a form field by ref, or by find (a description, \"Email field\", resolved when \
             it runs, waiting up to 5 s for it): text replaces a field's text; a select takes an \
             option's value or text (an array for multiple); a checkbox or radio takes \
             true/false; a slider a number (set by keys, or a press on its track). Fires input \
             and change events, then reads back: value is what the field holds (\"1.5\" for \
             \"1.50\"); a value the app reverted fails world-moved.",
            true,
            object(
                json!({
                    "tabId": tab_id(),
                    "ref": {"type": "string", "minLength": 1},
                    "find": {"type": "string", "minLength": 1},
                    "value": {"type": ["string", "number", "boolean", "array"], "items": {"type": "string"}}
                }),
                &["tabId", "value"],
            ),
        ),
        verb(
            "get_page_text",
            |b, a| value(content::page_text(b, a)),
            "A tab's visible text, with title and url: what the page says after an action.",
            false,
            object(json!({"tabId": tab_id()}), &["tabId"]),
        ),
        verb(
            "javascript_tool",
            |b, a| value(content::javascript(b, a)),
            "Run JavaScript in a tab; returns the last expression's value (promises awaited; no \
             `return`). DOM elements come back as a short tag description.",
            true,
            object(
                json!({
                    "tabId": tab_id(),
                    "text": {"type": "string", "minLength": 1, "description": "The code."},
                    "action": {"type": "string", "enum": ["javascript_exec"]}
                }),
                &["tabId", "text"],
            ),
        ),
        verb(
            "wait_for_page",
            |b, a| value(wait::wait_for_page(b, a)),
            "Wait until a tab shows what the next step needs (wait_for in browser_batch). \
             Shortcuts: text (visible text appears), text_gone, ref (visible; condition gone: until \
             it goes), url (URL contains it). Or condition appears / gone by text (own text \
             contains pattern), regex, role, aria_label, selector (CSS), ref or description (as \
             find reads it), within scope (CSS); url_matches (substring, or regex: true); \
             network_idle (no request running or ending for idle_ms). Polls every interval_ms \
             across navigations; timeout after timeout_ms.",
            false,
            object(
                json!({
                    "tabId": tab_id(),
                    "text": {"type": "string", "minLength": 1},
                    "text_gone": {"type": "string", "minLength": 1},
                    "ref": {"type": "string", "minLength": 1},
                    "url": {"type": "string", "minLength": 1},
                    "condition": {"type": "string", "enum": ["appears", "gone", "url_matches", "network_idle"]},
                    "by": {"type": "string", "enum": ["text", "regex", "role", "aria_label", "selector", "ref", "description"], "default": "text"},
                    "pattern": {"type": "string", "minLength": 1},
                    "scope": {"type": "string", "minLength": 1},
                    "case_sensitive": {"type": "boolean", "default": false},
                    "regex": {"type": "boolean", "default": false},
                    "idle_ms": {"type": "integer", "minimum": 0, "maximum": 10000, "default": 500},
                    "timeout_ms": {"type": "integer", "minimum": 0, "maximum": wait::MAX_WAIT_MS, "default": 5000},
                    "interval_ms": {"type": "integer", "minimum": 50, "maximum": 5000, "default": 200}
                }),
                &["tabId"],
            ),
        ),
        verb(
            "dialog",
            |b, a| value(content::dialog(b, a)),
            "Accept or dismiss a tab's alert, confirm or prompt (text is typed into a prompt \
             first). While one is open, other actions on the tab fail with dialog-open.",
            true,
            object(
                json!({
                    "tabId": tab_id(),
                    "action": {"type": "string", "enum": ["accept", "dismiss"]},
                    "text": {"type": "string"},
                    "promptText": {"type": "string", "description": "Same as text."}
                }),
                &["tabId", "action"],
            ),
        ),
        verb(
            "file_upload",
            |b, a| value(upload::run(b, a)),
            "Put host files into a file input by ref, as if chosen in its dialog. paths: absolute, \
             inside the folders the operator granted ([browser] upload_dirs); others fail denied \
             and nothing is sent.",
            true,
            object(
                json!({
                    "tabId": tab_id(),
                    "ref": {"type": "string", "minLength": 1},
                    "paths": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": 64}
                }),
                &["tabId", "ref", "paths"],
            ),
        ),
        verb(
            "downloads",
            |b, _| value(downloads::list_verb(b)),
            "List this browser's downloads. A click, key or navigate that starts one returns \
             downloads: [{file, path, bytes}] once complete (path: the file on the host; \
             complete: false while downloading). The folder is this session's own.",
            false,
            object(json!({}), &[]),
        ),
        verb(
            "read_console_messages",
            |b, a| value(logs::console(b, a)),
            "A tab's console messages, oldest first: level, text, time (uncaught errors and \
             rejections are errors, with source and stack). The current document's last 500 \
             only; since says from when. limit (100) keeps the newest.",
            false,
            object(
                json!({
                    "tabId": tab_id(),
                    "pattern": {"type": "string", "description": "Regex on the text."},
                    "onlyErrors": {"type": "boolean"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500},
                    "clear": {"type": "boolean", "description": "Empty it after reading."}
                }),
                &["tabId"],
            ),
        ),
        verb(
            "read_network_requests",
            |b, a| value(logs::network(b, a)),
            "A tab's requests since its page began loading, oldest first: method, url, status, \
             type, duration_ms, size, failed, pending. The current document's only. limit (100) \
             keeps the newest.",
            false,
            object(
                json!({
                    "tabId": tab_id(),
                    "urlPattern": {"type": "string", "description": "URL substring."},
                    "onlyErrors": {"type": "boolean", "description": "Status 400+ or failed."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500},
                    "clear": {"type": "boolean", "description": "Empty it after reading."}
                }),
                &["tabId"],
            ),
        ),
    ]
}

fn verb(
    name: &str,
    handler: Handler<Browser>,
    description: &str,
    acts: bool,
    schema: Value,
) -> Verb<Browser> {
    Verb::new(name, description, schema, handler).acts_on_world(acts)
}

/// A verb's JSON result as its output, with no content.
fn value(result: Result<Value, Failure>) -> Result<Output, Failure> {
    result.map(Output::new)
}

fn object(properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false
    });
    // An empty `required` says nothing: left out.
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// Undescribed: tabs_context's description says where tab ids come from.
fn tab_id() -> Value {
    json!({"type": "integer", "minimum": 1})
}

fn point(description: &str) -> Value {
    let mut schema = json!({
        "type": "array",
        "items": {"type": "number", "minimum": 0},
        "minItems": 2,
        "maxItems": 2,
    });
    if !description.is_empty() {
        schema["description"] = json!(description);
    }
    schema
}

fn computer_schema() -> Value {
    // One `if` per group of actions with the same needs, not one per action:
    // the same validation in fewer characters.
    let needs = |actions: &[&str], then: Value| json!({"if": {"properties": {"action": {"enum": actions}}, "required": ["action"]}, "then": then});
    let mut schema = object(
        json!({
            "tabId": tab_id(),
            "action": {
                "type": "string",
                "enum": ["left_click", "right_click", "double_click", "triple_click", "hover", "left_click_drag", "type", "key", "scroll", "screenshot", "wait"]
            },
            "coordinate": point("[x, y] in viewport CSS pixels (= screenshot pixels)."),
            "start_coordinate": point(""),
            "ref": {"type": "string", "description": "From read_page or find."},
            "full_page": {"type": "boolean", "default": false},
            "start_ref": {"type": "string"},
            "find": {"type": "string", "minLength": 1},
            "start_find": {"type": "string", "minLength": 1},
            "text": {"type": "string"},
            "modifiers": {"type": "string", "description": "Keys held during a click or drag, e.g. \"shift+alt\"."},
            "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"], "default": "down"},
            "scroll_amount": {"type": "integer", "minimum": 1, "maximum": 50, "default": 3},
            "duration": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S, "default": 1}
        }),
        &["tabId", "action"],
    );
    // Clicks and drags take a ref or a point; the verb itself says which is
    // missing, in words (a schema `anyOf` would answer in schema terms).
    schema["allOf"] = json!([needs(&["type", "key"], json!({"required": ["text"]})),]);
    schema
}
