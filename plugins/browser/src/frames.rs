//! Cross-origin frames. A page script cannot reach into another origin's
//! frame, so the plugin goes in the way WebDriver allows: it switches the
//! session's browsing context into the frame (`POST /frame` with a
//! `window.frames` index, one hop at a time) and runs the page library there,
//! in the frame's own window with its own ref registry. Ref numbers still come
//! from the browser's one counter, so they stay unique; this module remembers
//! which numbers each frame handed out (a route: the tab and the frame's path)
//! and sends a later call naming such a ref to that frame. `read_page` and
//! `find` splice what the frames answer into the top-level answer.
//!
//! Every call ends back in the top-level document, and `Browser::switch` goes
//! there too whenever the session is anywhere else, so nothing runs in a frame
//! it did not ask for.
//!
//! Positions are top-viewport coordinates, as everywhere: a point in a frame is
//! the frame's content origin in its parent (added up level by level) plus the
//! point in the frame. Chromium takes such points from any browsing context and
//! routes keys to the focused frame; Firefox takes pointer coordinates relative
//! to the context WebDriver is switched to, and delivers pointer, wheel and key
//! input to a cross-origin frame only from inside it, so there input is sent
//! from the frame under the pointer (or holding the focus) with the points
//! translated ([`input_context`]).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::browser::Browser;
use crate::error::{Result, fail, has_code, world_moved};
use crate::page;
use crate::webdriver::Doing;

/// How a frame is reached from the top-level document: for each cross-origin
/// frame on the way down, the `window.frames` indexes from the document the
/// page library ran in before it (through same-origin frames in between).
pub(crate) type Path = Vec<Vec<u32>>;

/// At most this many frames are entered by one `read_page` or `find`.
const MAX_FRAMES: usize = 20;
/// Cross-origin frames nested deeper than this are not entered.
const MAX_DEPTH: usize = 4;
/// Routes kept; the oldest go first (their refs then answer "not on the page").
const MAX_ROUTES: usize = 4096;
/// `read_page`'s caps, for the whole answer with every frame's lines in it
/// (the page library's defaults).
const MAX_LINES: usize = 1500;
const MAX_CHARS: usize = 40_000;
/// How long a frame's document may take to finish loading before it is read.
const FRAME_READY_MS: u64 = 1_000;

/// What the plugin knows about frames: where WebDriver is switched to, where
/// commands should go, and which refs live in which frame.
#[derive(Default)]
pub(crate) struct Frames {
    /// The frame WebDriver is switched to in the current window, as the
    /// indexes from its top-level document; `None` when not known.
    at: Option<Vec<u32>>,
    /// Where commands go: the top-level document (empty) but while
    /// [`within`] runs.
    scope: Vec<u32>,
    /// First ref number of a run of refs handed out in a frame -> that run.
    routes: BTreeMap<u64, Route>,
}

#[derive(Clone, Debug, PartialEq)]
struct Route {
    /// One past the last ref number of the run.
    end: u64,
    tab: u32,
    path: Path,
}

impl Frames {
    /// A window switch lands in that window's top-level document.
    pub(crate) fn landed(&mut self) {
        self.at = Some(Vec::new());
    }

    /// The session is gone or its state is unknown.
    pub(crate) fn lost(&mut self) {
        self.at = None;
        self.scope.clear();
    }

    /// Notes that the refs `start..end` were handed out in the frame `path` of `tab`.
    fn record(&mut self, tab: u32, path: &Path, start: u64, end: u64) {
        if end <= start || path.is_empty() {
            return;
        }
        if let Some((_, last)) = self.routes.range_mut(..start).next_back()
            && last.end == start
            && last.tab == tab
            && last.path == *path
        {
            last.end = end;
            return;
        }
        self.routes.insert(
            start,
            Route {
                end,
                tab,
                path: path.clone(),
            },
        );
        while self.routes.len() > MAX_ROUTES {
            self.routes.pop_first();
        }
    }

    /// The frame of `tab` that handed out ref number `n`, if a frame did.
    fn route(&self, tab: u32, n: u64) -> Option<&Path> {
        let (_, route) = self.routes.range(..=n).next_back()?;
        (n < route.end && route.tab == tab).then_some(&route.path)
    }
}

/// The number in `ref_N`.
fn ref_number(reference: &str) -> Option<u64> {
    let digits = reference.strip_prefix("ref_")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The frame a page-library call must run in: the one that handed out the ref
/// its arguments name (`ref`, `ref_id`, or a `wait_for_page` pattern by ref).
pub(crate) fn route_for(browser: &Browser, tab: u32, args: &Value) -> Option<Path> {
    let named = args
        .get("ref")
        .or_else(|| args.get("ref_id"))
        .or_else(|| (args.get("by")? == "ref").then(|| args.get("pattern"))?)?;
    let n = ref_number(named.as_str()?)?;
    browser.frames.route(tab, n).cloned()
}

/// One WebDriver frame command.
#[derive(Debug, PartialEq)]
enum Hop {
    Top,
    Parent,
    Child(u32),
}

/// The frame commands that take WebDriver from `at` to `want`.
fn plan(at: Option<&[u32]>, want: &[u32]) -> Vec<Hop> {
    match at {
        Some(at) if at == want => Vec::new(),
        Some(at) if at.len() == want.len() + 1 && at.starts_with(want) => vec![Hop::Parent],
        Some(at) if want.starts_with(at) => {
            want[at.len()..].iter().map(|&i| Hop::Child(i)).collect()
        }
        _ => std::iter::once(Hop::Top)
            .chain(want.iter().map(|&i| Hop::Child(i)))
            .collect(),
    }
}

/// Switches WebDriver to the frame commands for `tab` should go to now (the
/// top-level document but inside [`within`]); called by `Browser::switch` once
/// the window is right.
pub(crate) fn sync(browser: &mut Browser, tab: u32) -> Result<()> {
    let want = browser.frames.scope.clone();
    let hops = plan(browser.frames.at.as_deref(), &want);
    if hops.is_empty() {
        return Ok(());
    }
    let doing = Doing {
        tab: Some(tab),
        what: "switching to the frame",
        acts: false,
    };
    for hop in hops {
        let known = browser.frames.at.take();
        let (path, body, next) = match hop {
            Hop::Top => ("/frame", json!({ "id": null }), Some(Vec::new())),
            Hop::Parent => (
                "/frame/parent",
                json!({}),
                known.map(|mut at| {
                    at.pop();
                    at
                }),
            ),
            Hop::Child(i) => (
                "/frame",
                json!({ "id": i }),
                known.map(|mut at| {
                    at.push(i);
                    at
                }),
            ),
        };
        match browser.cmd(&doing, "POST", path, Some(body)) {
            Ok(_) => browser.frames.at = next,
            Err(f) if matches!(hop, Hop::Child(_)) && !has_code(&f, "dialog-open") => {
                return Err(world_moved(format!(
                    "the frame this ref was read in has left the page in tab {tab} (it was removed, \
                     or its page navigated); call read_page or find again"
                )));
            }
            // A dialog the frame opened blocks going up too; the dialog commands
            // work from any frame, and the next switch tries again.
            Err(f) if has_code(&f, "dialog-open") && !matches!(hop, Hop::Child(_)) => {
                return Ok(());
            }
            Err(f) => return Err(f),
        }
    }
    Ok(())
}

/// Goes back to the top-level document (quietly: the next command's switch
/// tries again).
pub(crate) fn leave(browser: &mut Browser, tab: u32) {
    browser.frames.scope.clear();
    if sync(browser, tab).is_err() {
        browser.frames.at = None;
    }
}

/// Runs `f` with every command for `tab` going to the frame `path`, notes
/// the refs handed out there, and goes back to the top-level document.
fn within<T>(
    browser: &mut Browser,
    tab: u32,
    path: &Path,
    f: impl FnOnce(&mut Browser) -> Result<T>,
) -> Result<T> {
    if path.is_empty() {
        return f(browser);
    }
    let start = browser.next_ref;
    browser.frames.scope = path.concat();
    let result = f(browser);
    let end = browser.next_ref;
    browser.frames.record(tab, path, start, end);
    leave(browser, tab);
    result
}

/// A page-library operation.
#[derive(Clone, Copy)]
pub(crate) struct Op<'a> {
    pub(crate) name: &'a str,
    pub(crate) what: &'a str,
    pub(crate) acts: bool,
    pub(crate) asynchronous: bool,
}

/// Runs `op` in the frame `path` of `tab` (the top-level document when empty).
fn at(browser: &mut Browser, tab: u32, path: &Path, op: Op<'_>, args: Value) -> Result<Value> {
    within(browser, tab, path, |b| page::run_here(b, tab, op, args))
}

/// Runs a page-library call whose ref lives in the frame `path`.
pub(crate) fn run(
    browser: &mut Browser,
    tab: u32,
    path: &Path,
    op: Op<'_>,
    args: Value,
) -> Result<Value> {
    match op.name {
        "point" => point(browser, tab, path, op, args),
        "scroll_to" => {
            let result = at(browser, tab, path, op, args)?;
            reveal(browser, tab, path);
            Ok(result)
        }
        // WebDriver element commands and crops at the top level cannot reach it.
        "element" => Err(fail(
            "unsupported",
            "that element is in a frame of another origin, which file_upload cannot reach",
            false,
        )),
        "shot" => Err(fail(
            "unsupported",
            "that element is in a frame of another origin; screenshot the frame's own ref \
             (its iframe line in read_page) or the page instead",
            false,
        )),
        _ => at(browser, tab, path, op, args),
    }
}

/// `point` for an element in a frame: the page library's look inside the
/// frame (visible, enabled, still, not covered there), then level by level
/// out, the frame's origin added and a hit test in the parent that must land
/// on the frame. The answer is in top-viewport coordinates.
fn point(browser: &mut Browser, tab: u32, path: &Path, op: Op<'_>, args: Value) -> Result<Value> {
    let mut result = at(browser, tab, path, op, args)?;
    if result.get("status").and_then(Value::as_str) != Some("ok") {
        return Ok(result);
    }
    let (Some(mut x), Some(mut y)) = (
        result.get("x").and_then(Value::as_i64),
        result.get("y").and_then(Value::as_i64),
    ) else {
        return Ok(result);
    };
    for level in (0..path.len()).rev() {
        let parent = path[..level].to_vec();
        let out = at(
            browser,
            tab,
            &parent,
            Op {
                name: "frame_point",
                what: "locating the frame",
                acts: false,
                asynchronous: false,
            },
            json!({ "hops": path[level], "x": x, "y": y }),
        )?;
        match out.get("status").and_then(Value::as_str) {
            Some("ok") => {
                x = out.get("x").and_then(Value::as_i64).unwrap_or(x);
                y = out.get("y").and_then(Value::as_i64).unwrap_or(y);
            }
            Some("detached") => return Err(frame_gone(&result, tab)),
            _ => {
                // Hidden, outside the view or covered at the parent's level:
                // the element's description with the parent's reason.
                let mut out = out;
                out["what"] = result.get("what").cloned().unwrap_or(Value::Null);
                return Ok(out);
            }
        }
    }
    result["x"] = json!(x);
    result["y"] = json!(y);
    Ok(result)
}

/// The failure for an element whose frame has gone.
fn frame_gone(result: &Value, tab: u32) -> stephost_plugin::Failure {
    world_moved(format!(
        "the frame holding {} has left the page in tab {tab}; call read_page or find again",
        page::what(result)
    ))
}

/// Scrolls each frame on `path` into view in its parent (innermost first), after
/// an element inside was scrolled into view in the frame.
fn reveal(browser: &mut Browser, tab: u32, path: &Path) {
    for level in (0..path.len()).rev() {
        let parent = path[..level].to_vec();
        let _ = at(
            browser,
            tab,
            &parent,
            Op {
                name: "frame_reveal",
                what: "scrolling to the frame",
                acts: true,
                asynchronous: false,
            },
            json!({ "hops": path[level] }),
        );
    }
}

/// The budget one `read_page` or `find` spends across frames.
struct Budget {
    frames: usize,
    lines: usize,
    chars: usize,
}

/// `read_page`: the tree of the document `call` names (the top-level one, or
/// the frame holding `ref_id`), with each cross-origin frame's tree under its
/// `iframe` line. Answers the page library's answer with `tree` replaced.
pub(crate) fn read_page(browser: &mut Browser, tab: u32, call: Value) -> Result<Value> {
    let path = route_for(browser, tab, &call).unwrap_or_default();
    let mut budget = Budget {
        frames: MAX_FRAMES,
        lines: MAX_LINES,
        chars: MAX_CHARS,
    };
    let (mut result, lines, dropped) = read_tree(browser, tab, &path, call, &mut budget)?;
    let (lines, more) = capped(lines, MAX_LINES, MAX_CHARS);
    let dropped = dropped + more;
    let mut tree = lines.join("\n");
    if dropped > 0 {
        let count = if dropped > 5000 {
            "more than 5000".to_owned()
        } else {
            dropped.to_string()
        };
        tree.push_str(&format!(
            "\n… {count} more lines not shown; read a part with ref_id, or use find"
        ));
    }
    result["tree"] = json!(tree);
    Ok(result)
}

/// Reads the tree of the document at `path` and, within `budget`, of the
/// cross-origin frames in it; answers the page library's answer, the lines
/// with the frames' lines spliced in, and how many lines were left out.
fn read_tree(
    browser: &mut Browser,
    tab: u32,
    path: &Path,
    mut call: Value,
    budget: &mut Budget,
) -> Result<(Value, Vec<String>, usize)> {
    call["max_lines"] = json!(budget.lines);
    call["max_chars"] = json!(budget.chars);
    let read = Op {
        name: "read_page",
        what: "reading the page",
        acts: false,
        asynchronous: false,
    };
    let result = at(browser, tab, path, read, call.clone())?;
    let dropped = result.get("dropped").and_then(Value::as_u64).unwrap_or(0) as usize;
    let mut lines: Vec<String> = result
        .get("tree")
        .and_then(Value::as_str)
        .unwrap_or("")
        .lines()
        .map(str::to_owned)
        .collect();
    if dropped > 0 {
        lines.pop(); // the page library's "… more lines" note; the caller writes one
    }
    budget.lines = budget.lines.saturating_sub(lines.len());
    budget.chars = budget
        .chars
        .saturating_sub(lines.iter().map(|l| l.chars().count() + 1).sum());
    let mut dropped = dropped;
    let mut inserts: Vec<(usize, Vec<String>)> = Vec::new();
    let frames = result.get("frames").and_then(Value::as_array).cloned();
    for frame in frames.unwrap_or_default() {
        let Some(hops) = hops_of(&frame) else {
            continue;
        };
        let own = frame
            .get("line")
            .and_then(Value::as_u64)
            .map(|l| l as usize);
        let at_line = frame.get("at").and_then(Value::as_u64).unwrap_or(0) as usize;
        let depth = frame.get("depth").and_then(Value::as_u64).unwrap_or(0) as usize;
        let why_not = if path.len() >= MAX_DEPTH {
            Some(format!(
                "frames nested deeper than {MAX_DEPTH} are not read"
            ))
        } else if budget.frames == 0 {
            Some(format!("at most {MAX_FRAMES} frames are read per call"))
        } else if budget.lines == 0 || budget.chars < 100 {
            Some("the output cap was reached".to_owned())
        } else {
            None
        };
        if let Some(why) = why_not {
            note(&mut lines, own, &format!("another origin, not read: {why}"));
            continue;
        }
        budget.frames -= 1;
        let mut inner = path.clone();
        inner.push(hops);
        ready(browser, tab, &inner);
        let mut sub = json!({ "filter": call.get("filter").cloned().unwrap_or(json!("all")) });
        if let Some(depth) = call.get("depth") {
            sub["depth"] = depth.clone();
        }
        match read_tree(browser, tab, &inner, sub, budget) {
            Ok((_, sub_lines, sub_dropped)) => {
                dropped += sub_dropped;
                let indent = "  ".repeat(depth);
                let frame_ref = frame.get("ref").and_then(Value::as_str).unwrap_or("");
                let sub_lines = sub_lines
                    .into_iter()
                    .map(|l| format!("{indent}{}", in_frame(l, frame_ref)));
                inserts.push((at_line, sub_lines.collect()));
            }
            Err(f) if has_code(&f, "dialog-open") => return Err(f),
            Err(_) => note(&mut lines, own, "another origin, could not be read"),
        }
    }
    for (at_line, sub) in inserts.into_iter().rev() {
        let at_line = at_line.min(lines.len());
        lines.splice(at_line..at_line, sub);
    }
    Ok((result, lines, dropped))
}

/// A line read inside the frame `frame_ref`, marked ` frame=ref_N` as the
/// page library marks the lines of same-origin frames (`readPage`); a line
/// already marked is in a frame nested deeper, which it names.
fn in_frame(line: String, frame_ref: &str) -> String {
    let marked = line
        .rsplit_once(" frame=ref_")
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if marked || frame_ref.is_empty() {
        line
    } else {
        format!("{line} frame={frame_ref}")
    }
}

/// Appends `(text)` to line `own`, the frame's own line, when it was shown.
fn note(lines: &mut [String], own: Option<usize>, text: &str) {
    if let Some(line) = own.and_then(|i| lines.get_mut(i)) {
        line.push_str(&format!(" ({text})"));
    }
}

/// The first lines of `lines` that fit `max_lines` and `max_chars` (the page
/// library's rule), and how many did not.
fn capped(lines: Vec<String>, max_lines: usize, max_chars: usize) -> (Vec<String>, usize) {
    let mut chars = 0;
    let mut kept = 0;
    for line in &lines {
        let n = line.chars().count();
        if kept >= max_lines || chars + n >= max_chars {
            break;
        }
        chars += n + 1;
        kept += 1;
    }
    let more = lines.len() - kept;
    let mut lines = lines;
    lines.truncate(kept);
    (lines, more)
}

/// A frame entry's hops (`[1]`, or `[0, 2]` through a same-origin frame).
fn hops_of(frame: &Value) -> Option<Vec<u32>> {
    frame
        .get("hops")?
        .as_array()?
        .iter()
        .map(|h| h.as_u64().and_then(|h| u32::try_from(h).ok()))
        .collect()
}

/// Gives a frame whose document is still loading a moment (at most 1 s).
fn ready(browser: &mut Browser, tab: u32, path: &Path) {
    let op = Op {
        name: "ready",
        what: "waiting for the frame to load",
        acts: false,
        asynchronous: true,
    };
    let _ = at(browser, tab, path, op, json!({ "max_ms": FRAME_READY_MS }));
}

/// One document's `find` answer: the elements that match every word, and
/// those that match some, each with its score.
struct Found {
    matches: Vec<(f64, Value)>,
    total: u64,
    partial_matches: Vec<(f64, Value)>,
    partial_total: u64,
}

/// `find` across the top-level document and, within the frame budget, the
/// cross-origin frames in it: the best matches of all, boxes in top-viewport
/// coordinates, each match in a frame naming the frame's ref as `frame`.
pub(crate) fn find(browser: &mut Browser, tab: u32, query: &str, limit: i64) -> Result<Value> {
    let mut found = Vec::new();
    let mut frames = MAX_FRAMES;
    find_in(
        browser,
        tab,
        &Vec::new(),
        (0.0, 0.0),
        None,
        query,
        limit,
        &mut frames,
        &mut found,
    )?;
    Ok(merge(found, usize::try_from(limit).unwrap_or(20)))
}

/// Searches the document at `path`, whose viewport starts at `origin` in the
/// top viewport, then the frames in it.
#[allow(clippy::too_many_arguments)]
fn find_in(
    browser: &mut Browser,
    tab: u32,
    path: &Path,
    origin: (f64, f64),
    frame_ref: Option<&str>,
    query: &str,
    limit: i64,
    budget: &mut usize,
    found: &mut Vec<Found>,
) -> Result<()> {
    let op = Op {
        name: "find",
        what: "searching the page",
        acts: false,
        asynchronous: false,
    };
    let args = json!({ "query": query, "limit": limit, "frames": true });
    let result = at(browser, tab, path, op, args)?;
    found.push(shifted(&result, origin, frame_ref));
    let frames = result.get("frames").and_then(Value::as_array).cloned();
    for frame in frames.unwrap_or_default() {
        if *budget == 0 || path.len() >= MAX_DEPTH {
            break;
        }
        let Some(hops) = hops_of(&frame) else {
            continue;
        };
        *budget -= 1;
        let mut inner = path.clone();
        inner.push(hops);
        let x = origin.0 + frame.get("x").and_then(Value::as_f64).unwrap_or(0.0);
        let y = origin.1 + frame.get("y").and_then(Value::as_f64).unwrap_or(0.0);
        let own = frame.get("ref").and_then(Value::as_str);
        match find_in(
            browser,
            tab,
            &inner,
            (x, y),
            own,
            query,
            limit,
            budget,
            found,
        ) {
            Ok(()) => {}
            Err(f) if has_code(&f, "dialog-open") => return Err(f),
            // A frame that cannot be searched (gone, navigating) adds nothing.
            Err(_) => {}
        }
    }
    Ok(())
}

/// A document's find answer with its boxes moved by `origin` and its matches
/// naming `frame_ref` as their frame (unless a nearer same-origin frame).
fn shifted(result: &Value, origin: (f64, f64), frame_ref: Option<&str>) -> Found {
    let list = |matches: &str, scores: &str| -> Vec<(f64, Value)> {
        let scores: Vec<f64> = result
            .get(scores)
            .and_then(Value::as_array)
            .map(|s| s.iter().map(|v| v.as_f64().unwrap_or(0.0)).collect())
            .unwrap_or_default();
        result
            .get(matches)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, mut m)| {
                if let Some(r) = frame_ref {
                    if let Some(b) = m.get_mut("box").and_then(Value::as_array_mut)
                        && b.len() >= 2
                    {
                        let x = b[0].as_f64().unwrap_or(0.0) + origin.0;
                        let y = b[1].as_f64().unwrap_or(0.0) + origin.1;
                        b[0] = json!(x.round() as i64);
                        b[1] = json!(y.round() as i64);
                    }
                    if m.get("frame").is_none() {
                        m["frame"] = json!(r);
                    }
                }
                (scores.get(i).copied().unwrap_or(0.0), m)
            })
            .collect()
    };
    let total = |field: &str| result.get(field).and_then(Value::as_u64).unwrap_or(0);
    Found {
        matches: list("matches", "scores"),
        total: total("total"),
        partial_matches: list("partial_matches", "partial_scores"),
        partial_total: total("partial_total"),
    }
}

/// The best `limit` matches of all documents by score, and apart from them
/// the best `limit` partial ones; among equal scores the earlier document
/// (the top one first) goes first.
fn merge(found: Vec<Found>, limit: usize) -> Value {
    let total: u64 = found.iter().map(|f| f.total).sum();
    let partial_total: u64 = found.iter().map(|f| f.partial_total).sum();
    let best = |lists: Vec<Vec<(f64, Value)>>| -> Vec<Value> {
        let mut all: Vec<(f64, Value)> = lists.into_iter().flatten().collect();
        // Stable: equals keep the documents' order.
        all.sort_by(|a, b| b.0.total_cmp(&a.0));
        all.truncate(limit);
        all.into_iter().map(|(_, m)| m).collect()
    };
    let (complete, partial): (Vec<_>, Vec<_>) = found
        .into_iter()
        .map(|f| (f.matches, f.partial_matches))
        .unzip();
    json!({
        "matches": best(complete),
        "total": total,
        "partial_matches": best(partial),
        "partial_total": partial_total,
        "partial": total == 0 && partial_total > 0,
    })
}

/// Firefox: sends the input `actions` from the cross-origin frame under its
/// first pointer position (or, for keys alone, the frame holding the focus),
/// switching WebDriver into it and translating the pointer positions into its
/// viewport. Answers the actions to send, in whichever document WebDriver is
/// then in; other browsers get them back unchanged. The caller goes back to
/// the top-level document afterwards ([`leave`]).
pub(crate) fn input_context(browser: &mut Browser, tab: u32, actions: Value) -> Value {
    if browser.kind().ok().as_deref() != Some("firefox") {
        return actions;
    }
    let mut point = first_point(&actions);
    let mut path: Path = Vec::new();
    let (mut dx, mut dy) = (0.0, 0.0);
    let op = Op {
        name: "input_frame",
        what: "finding where the input goes",
        acts: false,
        asynchronous: false,
    };
    while path.len() < MAX_DEPTH {
        let args = match point {
            Some((x, y)) => json!({ "x": x, "y": y }),
            None => json!({}),
        };
        let Ok(found) = at(browser, tab, &path, op, args) else {
            break;
        };
        let Some(hops) = hops_of(&found) else {
            break;
        };
        let fx = found.get("x").and_then(Value::as_f64).unwrap_or(0.0);
        let fy = found.get("y").and_then(Value::as_f64).unwrap_or(0.0);
        dx += fx;
        dy += fy;
        point = point.map(|(x, y)| (x - fx, y - fy));
        path.push(hops);
    }
    if path.is_empty() {
        return actions;
    }
    browser.frames.scope = path.concat();
    let entered = sync(browser, tab);
    browser.frames.scope.clear();
    match entered {
        Ok(()) => translated(actions, dx, dy),
        Err(_) => {
            leave(browser, tab);
            actions
        }
    }
}

/// The first pointer position in viewport coordinates of an actions list.
fn first_point(actions: &Value) -> Option<(f64, f64)> {
    actions.as_array()?.iter().find_map(|source| {
        source.get("actions")?.as_array()?.iter().find_map(|a| {
            let viewport = a.get("origin").is_none_or(|o| o == "viewport");
            let x = a.get("x")?.as_f64()?;
            let y = a.get("y")?.as_f64()?;
            viewport.then_some((x, y))
        })
    })
}

/// `actions` with every viewport position moved by (-dx, -dy).
fn translated(mut actions: Value, dx: f64, dy: f64) -> Value {
    let sources = actions.as_array_mut().into_iter().flatten();
    for source in sources {
        let steps = source.get_mut("actions").and_then(Value::as_array_mut);
        for step in steps.into_iter().flatten() {
            if !step.get("origin").is_none_or(|o| o == "viewport") {
                continue;
            }
            if let (Some(x), Some(y)) = (
                step.get("x").and_then(Value::as_f64),
                step.get("y").and_then(Value::as_f64),
            ) {
                step["x"] = json!((x - dx).round() as i64);
                step["y"] = json!((y - dy).round() as i64);
            }
        }
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(levels: &[&[u32]]) -> Path {
        levels.iter().map(|l| l.to_vec()).collect()
    }

    #[test]
    fn refs_route_to_the_frame_that_handed_them_out() {
        let mut frames = Frames::default();
        let a = path(&[&[0]]);
        let b = path(&[&[0], &[1]]);
        // Top refs 1..10 are not recorded; frame a 10..15, nested b 15..18,
        // top 18..30, a again 30..32 (a later read), in tab 1.
        frames.record(1, &a, 10, 15);
        frames.record(1, &b, 15, 18);
        frames.record(1, &a, 30, 32);
        assert_eq!(frames.route(1, 3), None);
        assert_eq!(frames.route(1, 10), Some(&a));
        assert_eq!(frames.route(1, 14), Some(&a));
        assert_eq!(frames.route(1, 15), Some(&b));
        assert_eq!(frames.route(1, 17), Some(&b));
        assert_eq!(frames.route(1, 18), None);
        assert_eq!(frames.route(1, 29), None);
        assert_eq!(frames.route(1, 31), Some(&a));
        assert_eq!(frames.route(1, 32), None);
        // Another tab's ref goes to that tab's top document (and is unknown there).
        assert_eq!(frames.route(2, 12), None);
    }

    #[test]
    fn adjacent_runs_of_one_frame_merge_and_empty_ones_are_not_kept() {
        let mut frames = Frames::default();
        let a = path(&[&[2]]);
        frames.record(1, &a, 5, 7);
        frames.record(1, &a, 7, 9);
        frames.record(1, &a, 9, 9);
        frames.record(1, &Vec::new(), 9, 12);
        assert_eq!(frames.routes.len(), 1);
        assert_eq!(frames.routes[&5].end, 9);
        assert_eq!(frames.route(1, 8), Some(&a));
        assert_eq!(frames.route(1, 10), None);
    }

    #[test]
    fn routes_are_bounded_oldest_first() {
        let mut frames = Frames::default();
        for i in 0..(MAX_ROUTES as u64 + 10) {
            frames.record(1, &path(&[&[(i % 2) as u32]]), 2 * i, 2 * i + 1);
        }
        assert_eq!(frames.routes.len(), MAX_ROUTES);
        assert_eq!(frames.route(1, 0), None);
        assert!(frames.route(1, 2 * (MAX_ROUTES as u64 + 9)).is_some());
    }

    #[test]
    fn the_ref_a_call_names_picks_its_route() {
        let mut browser = Browser::default();
        let a = path(&[&[0]]);
        browser.frames.record(1, &a, 40, 50);
        let routed = |args: Value| route_for(&browser, 1, &args);
        assert_eq!(routed(json!({"ref": "ref_41"})), Some(a.clone()));
        assert_eq!(
            routed(json!({"ref_id": "ref_49", "filter": "all"})),
            Some(a.clone())
        );
        assert_eq!(
            routed(json!({"by": "ref", "pattern": "ref_40"})),
            Some(a.clone())
        );
        assert_eq!(routed(json!({"by": "text", "pattern": "ref_40"})), None);
        assert_eq!(routed(json!({"ref": "ref_50"})), None);
        assert_eq!(routed(json!({"ref": "Save button"})), None);
        assert_eq!(routed(json!({"find": "ref_41"})), None);
    }

    #[test]
    fn ref_numbers_parse_only_from_the_ref_spelling() {
        assert_eq!(ref_number("ref_12"), Some(12));
        for bad in ["ref_", "ref_1a", "REF_1", "12", "ref_-1"] {
            assert_eq!(ref_number(bad), None, "{bad}");
        }
    }

    #[test]
    fn frame_switches_take_the_shortest_way() {
        use Hop::*;
        assert_eq!(plan(Some(&[]), &[]), vec![]);
        assert_eq!(plan(None, &[]), vec![Top]);
        assert_eq!(plan(Some(&[]), &[1, 0]), vec![Child(1), Child(0)]);
        assert_eq!(plan(Some(&[1]), &[1, 0]), vec![Child(0)]);
        assert_eq!(plan(Some(&[1, 0]), &[1]), vec![Parent]);
        assert_eq!(plan(Some(&[1, 0]), &[]), vec![Top]);
        assert_eq!(plan(Some(&[2]), &[1]), vec![Top, Child(1)]);
        assert_eq!(plan(None, &[3]), vec![Top, Child(3)]);
    }

    #[test]
    fn frame_trees_go_under_their_frame_line_and_the_caps_hold() {
        let lines: Vec<String> = (0..10).map(|i| format!("line {i}")).collect();
        let (kept, more) = capped(lines.clone(), 4, 1000);
        assert_eq!((kept.len(), more), (4, 6));
        // 7 characters and a newline each: 3 lines fit in 24.
        let (kept, more) = capped(lines, 100, 24);
        assert_eq!((kept.len(), more), (3, 7));
        let mut lines = vec!["- iframe [ref_2]".to_owned()];
        note(&mut lines, Some(0), "another origin, could not be read");
        note(&mut lines, None, "ignored");
        assert_eq!(
            lines[0],
            "- iframe [ref_2] (another origin, could not be read)"
        );
    }

    #[test]
    fn matches_merge_by_score_and_partial_ones_stay_apart() {
        let top = json!({"matches": [{"ref": "ref_1", "box": [0, 0, 5, 5]}], "scores": [4.0], "total": 1,
            "partial_matches": [{"ref": "ref_2", "box": [0, 0, 1, 1]}], "partial_scores": [30.0], "partial_total": 1});
        let frame = json!({"matches": [{"ref": "ref_9", "box": [10, 20, 5, 5]}, {"ref": "ref_10", "box": [0, 0, 1, 1]}],
            "scores": [7.5, 4.0], "total": 2});
        let partial = json!({"matches": [], "scores": [], "total": 0,
            "partial_matches": [{"ref": "ref_12", "box": [0, 0, 1, 1]}], "partial_scores": [9.0], "partial_total": 1});
        let found = vec![
            shifted(&top, (0.0, 0.0), None),
            shifted(&frame, (100.0, 50.5), Some("ref_3")),
            shifted(&partial, (0.0, 0.0), Some("ref_4")),
        ];
        let merged = merge(found, 20);
        assert_eq!(merged["total"], 3);
        assert_eq!(merged["partial"], false);
        let m = merged["matches"].as_array().unwrap();
        assert_eq!(m[0]["ref"], "ref_9");
        assert_eq!(m[0]["frame"], "ref_3");
        assert_eq!(m[0]["box"], json!([110, 71, 5, 5]));
        // Equal scores: the top document's first.
        assert_eq!(m[1]["ref"], "ref_1");
        assert!(m[1].get("frame").is_none());
        assert_eq!(m[2]["ref"], "ref_10");
        // A partial match never joins the matches, whatever its score.
        let p = merged["partial_matches"].as_array().unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0]["ref"], "ref_2");
        assert_eq!(p[1]["frame"], "ref_4");
        // Only partial matches anywhere: no matches, marked partial.
        let only = merge(vec![shifted(&partial, (0.0, 0.0), Some("ref_4"))], 20);
        assert_eq!(only["partial"], true);
        assert_eq!(only["matches"], json!([]));
        assert_eq!(only["partial_matches"][0]["frame"], "ref_4");
        assert_eq!(merge(Vec::new(), 20)["total"], 0);
    }

    #[test]
    fn lines_read_in_a_frame_name_it_once() {
        assert_eq!(
            in_frame("- button \"Pay\" [ref_9]".into(), "ref_3"),
            "- button \"Pay\" [ref_9] frame=ref_3"
        );
        // Marked by a deeper frame: kept.
        assert_eq!(
            in_frame("- textbox [ref_12] frame=ref_11".into(), "ref_3"),
            "- textbox [ref_12] frame=ref_11"
        );
        // Text that merely ends like a marker inside quotes is not one.
        assert_eq!(
            in_frame("- text \"frame=ref_1\"".into(), "ref_3"),
            "- text \"frame=ref_1\" frame=ref_3"
        );
    }

    #[test]
    fn input_points_move_into_the_frame_viewport() {
        let actions = json!([
            {"type": "pointer", "id": "mouse", "actions": [
                {"type": "pointerMove", "x": 130, "y": 190, "origin": "viewport"},
                {"type": "pointerDown", "button": 0},
                {"type": "pointerMove", "x": 10, "y": 10, "origin": "pointer"}]},
            {"type": "wheel", "id": "wheel", "actions": [
                {"type": "scroll", "x": 200, "y": 300, "deltaX": 0, "deltaY": 50, "origin": "viewport"}]},
            {"type": "key", "id": "keys", "actions": [{"type": "keyDown", "value": "a"}]}
        ]);
        assert_eq!(first_point(&actions), Some((130.0, 190.0)));
        let moved = translated(actions, 60.0, 110.4);
        assert_eq!(moved[0]["actions"][0]["x"], 70);
        assert_eq!(moved[0]["actions"][0]["y"], 80);
        assert_eq!(moved[0]["actions"][2]["x"], 10);
        assert_eq!(moved[1]["actions"][0]["x"], 140);
        assert_eq!(moved[2]["actions"][0]["value"], "a");
        assert_eq!(first_point(&json!([{"type": "key", "actions": []}])), None);
    }
}
