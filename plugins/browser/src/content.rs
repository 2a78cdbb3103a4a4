//! Reading and scripting the page: `read_page`, `find`, `get_page_text`,
//! `javascript_tool`, `form_input`, and `dialog`.

use serde_json::{Value, json};

use crate::args::{Args, BrowserArgs};
use crate::browser::Browser;
use crate::error::{Result, fail, has_code, invalid, not_found};
use crate::page;
use crate::webdriver::Doing;

/// Longest page text returned, in characters.
const MAX_TEXT_CHARS: usize = 100_000;

/// How old a page is (ms since it started loading) before `find` takes
/// "nothing matches" as the answer, and how often it looks again until then.
const YOUNG_PAGE_MS: u64 = 3_000;
const FIND_RETRY_NS: u64 = 150_000_000;

/// `read_page`: the accessibility-style tree with refs.
pub(crate) fn read_page(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let filter = args.opt_str("filter")?.unwrap_or("all");
    if filter != "all" && filter != "interactive" {
        return Err(invalid("filter", "`filter` is `interactive` or `all`"));
    }
    let mut call = json!({"filter": filter});
    if let Some(root) = args.opt_str("ref_id")? {
        call["ref_id"] = json!(root);
    }
    if let Some(depth) = args.opt_int("depth", i64::MIN..=i64::MAX)? {
        call["depth"] = json!(depth);
    }
    page::ready(browser, tab);
    // The page's tree with each cross-origin frame's tree under its line.
    let result = crate::frames::read_page(browser, tab, call)?;
    Ok(json!({
        "tabId": tab,
        "url": result.get("url"),
        "title": result.get("title"),
        "viewport": result.get("viewport"),
        "tree": result.get("tree"),
    }))
}

/// `find`: elements matching a description or text, best first.
pub(crate) fn find(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let query = args.str("query")?;
    let limit = args
        .opt_int("limit", i64::MIN..=i64::MAX)?
        .unwrap_or(20)
        .clamp(1, 100);
    // A page that reveals its content from scripts after it loaded gets a few
    // moments for that: a find right after navigate must not answer "nothing".
    let mut age = page::ready(browser, tab);
    let result = loop {
        // The page and the cross-origin frames in it.
        let result = crate::frames::find(browser, tab, query, limit)?;
        let empty = result.get("total").and_then(Value::as_u64) == Some(0);
        match age {
            Some(ms) if empty && ms < YOUNG_PAGE_MS => {
                crate::clock::sleep_ns(FIND_RETRY_NS);
                age = Some(ms + FIND_RETRY_NS / 1_000_000);
            }
            _ => break result,
        }
    };
    let matches = result.get("matches").cloned().unwrap_or(json!([]));
    let mut value = json!({
        "tabId": tab,
        "query": query,
        "matches": matches,
        "total": result.get("total"),
    });
    // Partial matches go apart, never into `matches`: a batch that acts on
    // `matches[0]` must not land on a guess.
    let partial = result
        .get("partial_matches")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty());
    if let Some(partial) = partial {
        value["partial_matches"] = json!(partial);
        value["partial_total"] = result.get("partial_total").cloned().unwrap_or(json!(0));
    }
    if result.get("partial").and_then(Value::as_bool) == Some(true) {
        value["note"] = json!(
            "no element matched every word; partial_matches match some of them (check one \
             before acting on it)"
        );
    }
    Ok(value)
}

/// `get_page_text`: the page's visible text.
pub(crate) fn page_text(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let result = page::call(
        browser,
        tab,
        "text",
        "reading the page text",
        false,
        json!({}),
    )?;
    let text = result
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let total = text.chars().count();
    let mut value = json!({
        "tabId": tab,
        "url": result.get("url"),
        "title": result.get("title"),
        "text": text.chars().take(MAX_TEXT_CHARS).collect::<String>(),
    });
    if total > MAX_TEXT_CHARS {
        value["truncated"] = json!(format!(
            "{total} characters; the first {MAX_TEXT_CHARS} shown"
        ));
    }
    Ok(value)
}

/// Runs the code with `eval` (so the last expression is the result) and waits
/// for a promise result. Results are made JSON-safe in the page.
const RUN_JS: &str = r#"
const done = arguments[arguments.length - 1];
const code = arguments[0];
const safe = (v, depth) => {
  if (v === undefined || v === null) return null;
  if (typeof v === 'function') return '[function]';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v !== 'object') return v;
  if (v instanceof Element) {
    return '<' + v.tagName.toLowerCase() + (v.id ? ' id="' + v.id + '"' : '') + '>';
  }
  if (depth > 4) return '[…]';
  if (Array.isArray(v) || v instanceof NodeList || v instanceof HTMLCollection) {
    return Array.from(v).slice(0, 1000).map((x) => safe(x, depth + 1));
  }
  const out = {};
  for (const k of Object.keys(v).slice(0, 1000)) {
    try { out[k] = safe(v[k], depth + 1); } catch (e) { out[k] = '[unreadable]'; }
  }
  return out;
};
(async () => {
  try {
    const value = await (0, eval)(code);
    done({ ok: safe(value, 0) });
  } catch (e) {
    // Firefox's stack leaves out the message; Chromium's starts with it.
    const where = e && e.stack ? e.stack.split('\n').find((l) => l.trim() && !l.startsWith(String(e))) : '';
    done({ error: String(e) + (where ? ' (' + where.trim() + ')' : '') });
  }
})();
"#;

/// `javascript_tool`: runs a script in the page and returns its value.
pub(crate) fn javascript(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let code = args.str("text")?;
    let result = browser.script_async(tab, "running the script", true, RUN_JS, json!([code]))?;
    if let Some(error) = result.get("error").and_then(Value::as_str) {
        return Err(fail("failed", format!("the script threw: {error}"), true));
    }
    Ok(json!({"tabId": tab, "result": result.get("ok").cloned().unwrap_or(Value::Null)}))
}

/// `form_input`: sets a text field, select or checkbox by ref or description.
pub(crate) fn form_input(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let field = args.target("ref", "find")?.ok_or_else(|| {
        invalid(
            "ref",
            "form_input needs the field: ref (from read_page or find) or find (a description, \
             \"Email field\")",
        )
    })?;
    let value = args.value("value")?;
    page::form_input(browser, tab, field, value)
}

/// `dialog` (alias `firefox_dialog`): accepts or dismisses an alert, confirm
/// or prompt, typing `text` into a prompt first.
pub(crate) fn dialog(browser: &mut Browser, args: &Args) -> Result<Value> {
    let tab = args.tab()?;
    let action = args.str("action")?;
    if action != "accept" && action != "dismiss" {
        return Err(invalid("action", "`action` is `accept` or `dismiss`"));
    }
    let typed = match args.opt_str("text")? {
        Some(text) => Some(text),
        None => args.opt_str("promptText")?,
    };
    browser.switch(tab)?;
    let reading = Doing {
        tab: Some(tab),
        what: "reading the dialog",
        acts: false,
    };
    let message = browser
        .cmd(&reading, "GET", "/alert/text", None)
        .map_err(|f| {
            if has_code(&f, "not-found") {
                not_found(format!(
                    "no dialog is open in tab {tab}; nothing to {action}"
                ))
            } else {
                f
            }
        })?;
    if let Some(text) = typed {
        let typing = Doing {
            tab: Some(tab),
            what: "typing into the prompt",
            acts: true,
        };
        browser.cmd(&typing, "POST", "/alert/text", Some(json!({"text": text})))?;
    }
    let answering = Doing {
        tab: Some(tab),
        what: if action == "accept" {
            "accepting the dialog"
        } else {
            "dismissing the dialog"
        },
        acts: true,
    };
    browser.cmd(&answering, "POST", &format!("/alert/{action}"), None)?;
    let mut value = json!({"tabId": tab, "action": action, "dialog_text": message});
    if let Some(text) = typed {
        value["typed"] = json!(text);
    }
    Ok(value)
}
