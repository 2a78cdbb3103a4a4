//! The verbs `describe` lists: names agents know from browser MCP servers,
//! descriptions written for a model choosing tools, and input schemas the host
//! checks before anything runs.

use serde_json::{Value, json};

use crate::computer::MAX_WAIT_S;
use crate::stephost::plugin::types::VerbInfo;

/// Every verb, in listing order.
pub(crate) fn verbs() -> Vec<VerbInfo> {
    vec![
        verb(
            "tabs_context",
            "List the open browser tabs: each tab's tabId, title and url. Call it first to learn \
             the tab ids that every page-acting tool needs; the browser starts on first use with \
             one blank tab.",
            false,
            object(json!({}), &[]),
        ),
        verb(
            "tabs_create",
            "Open a new tab, optionally loading url, and return its tabId. Later calls that act \
             on the new tab must pass that tabId.",
            true,
            object(
                json!({"url": {"type": "string", "description": "Page to load in the new tab (optional)."}}),
                &[],
            ),
        ),
        verb(
            "tabs_close",
            "Close a tab. Closing the last tab closes the browser; the next call opens a fresh one.",
            true,
            object(json!({"tabId": tab_id()}), &["tabId"]),
        ),
        verb(
            "navigate",
            "Load a URL in a tab and wait for it to load, or move in its history with \
             url \"back\" / \"forward\" (or \"reload\"). Returns the loaded page's title and url. \
             Every ref and coordinate read before is stale afterwards.",
            true,
            object(
                json!({
                    "tabId": tab_id(),
                    "url": {"type": "string", "minLength": 1, "description": "The URL (a missing scheme gets https://, or http:// for localhost and IP addresses), or \"back\", \"forward\", \"reload\"."}
                }),
                &["tabId", "url"],
            ),
        ),
        verb(
            "computer",
            "Use the mouse and keyboard on a tab, or look at it. Actions: left_click, \
             right_click, double_click, triple_click, hover (at coordinate [x, y] in CSS pixels \
             of the viewport, as in a screenshot, or at the centre of a ref from read_page/find, \
             which is scrolled into view and checked to be what a click there hits); \
             left_click_drag (start_coordinate to coordinate); type (text, typed key by key into \
             the focused element); key (text: key combos separated by spaces, e.g. \"ctrl+a \
             Delete\", \"Return\", \"shift+Tab\"); scroll (scroll_direction up/down/left/right, \
             scroll_amount ticks of 100 px, at coordinate or the viewport centre; a ref alone \
             scrolls it into view); screenshot (a PNG of the viewport); wait (duration seconds). \
             Clicks accept modifiers such as \"ctrl\" or \"shift+alt\". A stale ref fails with \
             world-moved and clicks nothing; a point outside the viewport fails with not-found.",
            true,
            computer_schema(),
        ),
        verb(
            "read_page",
            "Read a tab as an accessibility-style tree: one line per element with its role, \
             name, value and a ref (ref_12) that other tools accept. filter \"interactive\" lists \
             only what can be clicked or typed into; \"all\" (default) includes headings, text and \
             structure. Refs stay valid until the page navigates or reloads, or the element is \
             removed. ref_id reads only the part under that element.",
            false,
            object(
                json!({
                    "tabId": tab_id(),
                    "filter": {"type": "string", "enum": ["interactive", "all"], "default": "all", "description": "interactive: only clickable and editable elements; all: the whole page."},
                    "ref_id": {"type": "string", "description": "Read only the subtree under this ref."},
                    "depth": {"type": "integer", "minimum": 1, "maximum": 200, "description": "Deepest level to read."}
                }),
                &["tabId"],
            ),
        ),
        verb(
            "find",
            "Find elements by a short description or their text (\"search box\", \"Submit \
             button\", \"email field\", \"Pricing link\"), best match first, each with its ref, \
             role, name and box [x, y, width, height] in viewport pixels.",
            false,
            object(
                json!({
                    "tabId": tab_id(),
                    "query": {"type": "string", "minLength": 1, "description": "What to look for: words from the element's label, text or placeholder, and its kind (button, link, field, checkbox...)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "Most matches to return."}
                }),
                &["tabId", "query"],
            ),
        ),
        verb(
            "form_input",
            "Set a form field by ref: a text field or textarea gets the text (replacing what was \
             there), a select gets the option with that value or visible text (an array for a \
             multiple select), a checkbox or radio button gets checked with true and unchecked \
             with false. Fires the input and change events pages listen for.",
            true,
            object(
                json!({
                    "tabId": tab_id(),
                    "ref": {"type": "string", "minLength": 1, "description": "The field's ref, from read_page or find."},
                    "value": {
                        "description": "Text, an option's value or text, or true/false for a checkbox or radio button.",
                        "type": ["string", "number", "boolean", "array"],
                        "items": {"type": "string"}
                    }
                }),
                &["tabId", "ref", "value"],
            ),
        ),
        verb(
            "get_page_text",
            "The visible text of a tab's page (as a person would read it), with its title and \
             url. Good for checking what a page says after an action.",
            false,
            object(json!({"tabId": tab_id()}), &["tabId"]),
        ),
        verb(
            "javascript_tool",
            "Run JavaScript in a tab's page and return the value of its last expression \
             (promises are awaited; write the expression itself, no `return`). DOM elements come \
             back as a short tag description.",
            true,
            object(
                json!({
                    "tabId": tab_id(),
                    "text": {"type": "string", "minLength": 1, "description": "The code, e.g. `document.querySelectorAll('a').length`."},
                    "action": {"type": "string", "enum": ["javascript_exec"], "description": "Always javascript_exec (optional)."}
                }),
                &["tabId", "text"],
            ),
        ),
        verb(
            "dialog",
            "Accept or dismiss the alert, confirm or prompt open in a tab, typing text into a \
             prompt first. While a dialog is open every other action on its tab fails with \
             dialog-open. Also accepted in browser_batch as firefox_dialog.",
            true,
            object(
                json!({
                    "tabId": tab_id(),
                    "action": {"type": "string", "enum": ["accept", "dismiss"], "description": "accept (OK) or dismiss (Cancel)."},
                    "text": {"type": "string", "description": "Text to type into a prompt before answering it."},
                    "promptText": {"type": "string", "description": "Same as text."}
                }),
                &["tabId", "action"],
            ),
        ),
    ]
}

fn verb(name: &str, description: &str, acts: bool, schema: Value) -> VerbInfo {
    VerbInfo {
        name: name.into(),
        description: description.into(),
        input_schema: schema.to_string(),
        output_schema: String::new(),
        acts_on_world: acts,
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

fn tab_id() -> Value {
    json!({"type": "integer", "minimum": 1, "description": "The tab to act on, from tabs_context or tabs_create."})
}

fn point(description: &str) -> Value {
    json!({
        "type": "array",
        "items": {"type": "number", "minimum": 0},
        "minItems": 2,
        "maxItems": 2,
        "description": description
    })
}

fn computer_schema() -> Value {
    let needs = |action: &str, then: Value| json!({"if": {"properties": {"action": {"const": action}}, "required": ["action"]}, "then": then});
    let at = json!({"anyOf": [{"required": ["coordinate"]}, {"required": ["ref"]}]});
    let mut schema = object(
        json!({
            "tabId": tab_id(),
            "action": {
                "type": "string",
                "enum": ["left_click", "right_click", "double_click", "triple_click", "hover", "left_click_drag", "type", "key", "scroll", "screenshot", "wait"],
                "description": "What to do."
            },
            "coordinate": point("[x, y] in CSS pixels of the viewport (the same as screenshot pixels): where to click, hover, scroll, or where a drag ends."),
            "start_coordinate": point("[x, y] where left_click_drag starts."),
            "ref": {"type": "string", "description": "An element ref from read_page or find, instead of coordinate."},
            "text": {"type": "string", "description": "type: the text to type. key: key combos separated by spaces, e.g. \"ctrl+a\", \"Return\"."},
            "modifiers": {"type": "string", "description": "Keys held during a click or drag, e.g. \"ctrl\", \"shift+alt\"."},
            "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
            "scroll_amount": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Scroll ticks (100 px each), default 3."},
            "duration": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S, "description": "wait: seconds to wait, default 1."}
        }),
        &["tabId", "action"],
    );
    schema["allOf"] = json!([
        needs("left_click", at.clone()),
        needs("right_click", at.clone()),
        needs("double_click", at.clone()),
        needs("triple_click", at.clone()),
        needs("hover", at),
        needs(
            "left_click_drag",
            json!({"required": ["start_coordinate", "coordinate"]})
        ),
        needs("type", json!({"required": ["text"]})),
        needs("key", json!({"required": ["text"]})),
    ]);
    schema
}
