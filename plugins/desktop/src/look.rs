//! Seeing the screen: screenshot, wait_for, and the look_begin / look pair
//! that do_steps appends around a sequence.
//!
//! Comparisons run here, on raw pixels the host captures (see `pixels`).
//!
//! `look` mode auto shows the window the last step acted on (a click without a
//! target acts on the window under the point), widened by what belongs to it:
//! windows that appeared over it and changes that touch it (a menu drawn past
//! its edge). Change elsewhere is left out and said so, and a small change
//! that turns back while nothing is being done (a caret blinking) does not
//! count. `wait_for` `region_changes` also compares with how the window looked
//! right before the last pointer or keyboard step ([`Seen`]), so a change that
//! step already made is not missed.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use stephost_plugin::desktop::screen::{self, Capture, ImageFormat};
use stephost_plugin::desktop::windows::{self, WindowInfo, WindowQuery};
use stephost_plugin::desktop::{DesktopError, Rect};
use stephost_plugin::{Content, Failure, FailureCode, Image, Output};

use crate::args::{Args, invalid};
use crate::pixels::{Area, Changes, Frame, Steadiness};
use crate::target::{self, Query};
use crate::{MAX_WAIT_MS, State, all_windows, fail, output};

/// Pause between captures while watching the screen.
const FRAME_INTERVAL: Duration = Duration::from_millis(100);
/// How long nothing may change before `look` calls the screen settled.
const LOOK_QUIET: Duration = Duration::from_millis(200);
/// Margin around a changed area shown when no window holds it.
const MARGIN: i32 = 16;
/// Changed cells (4x4 px) this far apart are one thing (a menu, a dialog).
/// Two: a menu stays whole across the frame band cleared below a window.
const GROUP_GAP: u32 = 2;
/// Fewest cells (4x4 px) a change outside the window must have to count as a
/// popup of it (a menu, a tooltip): fewer is the window next door redrawing
/// its caret a few pixels away.
const MIN_POPUP_CELLS: u64 = 40;
/// A change of at most this many cells in the window, no wider than
/// [`CARET_WIDTH`] and no taller than [`CARET_HEIGHT`], whose changed pixels
/// form a bar at most [`CARET_BAR`] wide (an I-beam) or a solid block (a
/// terminal's cursor), may be a caret blinking: `look` watches it for a while
/// before calling it a change. Anything else (a digit, a checkbox) is a change
/// at once, so the watch costs only where it could be wrong.
const SMALL_CHANGE: u64 = 24;
const CARET_WIDTH: u32 = 16;
const CARET_HEIGHT: u32 = 48;
const CARET_BAR: u32 = 3;
/// How long a small change is watched for turning back. Carets blink with
/// half-periods of 300 to 800 ms (xterm and Tk 600/300, Qt 500/500, GTK
/// 800/400), and the settle before has already seen the current phase hold
/// for at least [`LOOK_QUIET`].
const BLINK_WATCH: Duration = Duration::from_millis(700);
/// Largest window captured before each acting step for `region_changes`:
/// above it the capture costs more than the wait it could shorten.
const BEFORE_ACTION_MAX_PIXELS: u64 = 1_400_000;

/// What `look` and `wait_for` remember between steps.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// The top-level windows at `look_begin`, to tell which appeared since.
    windows_at_mark: Option<Vec<u64>>,
    /// The screen's pixels at `look_begin` (the mark is cells): for telling a
    /// caret from a digit in a small change.
    mark_pixels: Option<(Area, Vec<u8>)>,
    /// The window the last pointer or keyboard step acted on, captured right
    /// before it acted.
    before_action: Option<Frame>,
}

/// What to capture.
#[derive(Debug, Clone, Copy)]
enum Source {
    Screen(Option<u32>),
    Window(u64),
    Region(Rect),
}

fn capture(source: Source, format: ImageFormat) -> Result<Capture, Failure> {
    match source {
        Source::Screen(monitor) => screen::capture_screen(monitor, format),
        Source::Window(id) => screen::capture_window(id, format),
        Source::Region(rect) => screen::capture_region(rect, format),
    }
    .map_err(|e| fail(e, false))
}

fn area(r: &Rect) -> Area {
    Area {
        x: r.x,
        y: r.y,
        width: r.width,
        height: r.height,
    }
}

fn frame(source: Source) -> Result<Frame, Failure> {
    frame_and_pixels(source).map(|(f, _)| f)
}

/// A capture as a frame, with its pixels.
fn frame_and_pixels(source: Source) -> Result<(Frame, Vec<u8>), Failure> {
    let c = capture(source, ImageFormat::Rgba)?;
    let f = Frame::from_rgba(area(&c.area), &c.data).ok_or_else(|| {
        Failure::new(
            FailureCode::Failed,
            format!(
                "the host returned {} bytes for a {}x{} capture",
                c.data.len(),
                c.area.width,
                c.area.height
            ),
        )
        .with_input_fired(false)
    })?;
    Ok((f, c.data))
}

/// Watches `source` until nothing changed for `quiet` (but cells that blink),
/// or `max` passed. Returns the last frame, whether it settled, and how long
/// it took.
fn settle(
    source: Source,
    max: Duration,
    quiet: Duration,
) -> Result<(Frame, bool, Duration), Failure> {
    let start = Instant::now();
    let mut previous = frame(source)?;
    if max.is_zero() {
        return Ok((previous, false, start.elapsed()));
    }
    let mut still_since: Option<Instant> = None;
    // A caret blinking (or any cell turning back and forth) would keep the
    // screen from ever holding still: cells seen turning back stop counting.
    let mut steady = Steadiness::new(&previous);
    loop {
        std::thread::sleep(FRAME_INTERVAL);
        let taken = Instant::now();
        let current = frame(source)?;
        if !steady.moved(&previous, &current) {
            let since = *still_since.get_or_insert(taken - FRAME_INTERVAL);
            if taken - since >= quiet {
                return Ok((current, true, start.elapsed()));
            }
        } else {
            still_since = None;
        }
        previous = current;
        if start.elapsed() >= max {
            return Ok((previous, false, start.elapsed()));
        }
    }
}

fn png(capture: Capture, label: &str) -> (Value, Content) {
    let a = &capture.area;
    (
        json!({"x": a.x, "y": a.y, "width": a.width, "height": a.height, "png_bytes": capture.data.len(), "of": label}),
        Content::Image(Image {
            mime: "image/png".into(),
            data: capture.data,
        }),
    )
}

fn region(args: &Args, field: &str) -> Result<Option<Rect>, Failure> {
    let Some(v) = args.get(field) else {
        return Ok(None);
    };
    let nums: Vec<Option<i64>> = match v {
        Value::Array(items) => items.iter().map(Value::as_i64).collect(),
        Value::Object(m) => ["x", "y", "width", "height"]
            .iter()
            .map(|k| m.get(*k).and_then(Value::as_i64))
            .collect(),
        _ => Vec::new(),
    };
    match nums.as_slice() {
        [Some(x), Some(y), Some(w), Some(h)]
            if *w > 0 && *h > 0 && w.max(h) <= &100_000 && x.abs().max(y.abs()) <= 100_000 =>
        {
            Ok(Some(Rect {
                x: *x as i32,
                y: *y as i32,
                width: *w as u32,
                height: *h as u32,
            }))
        }
        _ => Err(invalid(
            field,
            format!(
                "`{field}` must be {{x, y, width, height}} or [x, y, width, height] with positive width and height, got {v}"
            ),
        )),
    }
}

/// The window named in `args`, resolved without activating it.
fn named_window(args: &Args) -> Result<Option<WindowInfo>, Failure> {
    match Query::from_args(args)? {
        Some(q) => {
            let list = all_windows()?;
            Ok(Some(q.pick(&list)?.clone()))
        }
        None => Ok(None),
    }
}

pub(crate) fn screenshot(_: &mut State, args: &Args) -> Result<Output, Failure> {
    let mut covered = None;
    let (source, label) = if let Some(r) = region(args, "region")? {
        (Source::Region(r), "region".to_owned())
    } else if let Some(query) = Query::from_args(args)? {
        let list = all_windows()?;
        let w = query.pick(&list)?;
        covered = coverage(&list, w);
        (Source::Window(w.id), format!("window {:?}", w.title))
    } else {
        let monitor = args.opt_int("monitor", 0..=i64::from(u32::MAX))?;
        (
            Source::Screen(monitor.map(|m| m as u32)),
            "screen".to_owned(),
        )
    };
    let (mut value, image) = png(capture(source, ImageFormat::Png)?, &label);
    let mut text = format!("screenshot of the {label}");
    if let Some(c) = covered {
        text.push_str(&format!(
            "; warning: {:.0}% of it is covered by {}, and the picture shows what is on screen there \
             (focus_window raises it)",
            c.fraction * 100.0,
            c.by.iter()
                .map(|w| format!("{:?}", w.title))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        value["covered_fraction"] = json!(c.fraction);
        value["covered_by"] = json!(c.by.iter().map(target::window_json).collect::<Vec<_>>());
        value["warning"] = json!(text.clone());
    }
    Ok(Output {
        value: value.to_string(),
        content: vec![Content::Text(text), image],
    })
}

/// The windows stacked above a window that overlap it, and how much of it
/// they hide together.
struct Covered {
    by: Vec<WindowInfo>,
    fraction: f64,
}

/// Side of the grid `coverage` measures on, in pixels.
const COVER_CELL: u32 = 8;

fn coverage(list: &[WindowInfo], window: &WindowInfo) -> Option<Covered> {
    let base = area(&window.geometry);
    let at = list.iter().position(|w| w.id == window.id)?;
    let by: Vec<WindowInfo> = list[at + 1..]
        .iter()
        .filter(|w| area(&w.geometry).overlap(&base) > 0)
        .cloned()
        .collect();
    if by.is_empty() {
        return None;
    }
    // The union of the overlaps, on a coarse grid (windows overlap each other too).
    let (cols, rows) = (
        base.width.div_ceil(COVER_CELL),
        base.height.div_ceil(COVER_CELL),
    );
    let mut hidden = 0u64;
    for row in 0..rows {
        for col in 0..cols {
            let cell = Area {
                x: base.x + (col * COVER_CELL) as i32,
                y: base.y + (row * COVER_CELL) as i32,
                width: COVER_CELL,
                height: COVER_CELL,
            };
            let (cx, cy) = (
                cell.x + COVER_CELL as i32 / 2,
                cell.y + COVER_CELL as i32 / 2,
            );
            if by.iter().any(|w| area(&w.geometry).contains(cx, cy)) {
                hidden += 1;
            }
        }
    }
    let fraction = hidden as f64 / (u64::from(cols) * u64::from(rows)).max(1) as f64;
    Some(Covered {
        by,
        fraction: fraction.max(0.01),
    })
}

enum Condition {
    Appears,
    Gone,
    Settles,
    Changes,
}

/// A wait's time: `timeout_ms`, else `timeout` in seconds, else 10 s.
pub(crate) fn timeout(args: &Args) -> Result<Duration, Failure> {
    if let Some(ms) = args.opt_int("timeout_ms", 0..=MAX_WAIT_MS)? {
        return Ok(Duration::from_millis(ms as u64));
    }
    let secs = args
        .opt_number("timeout", 0.0..=(MAX_WAIT_MS / 1000) as f64)?
        .unwrap_or(10.0);
    Ok(Duration::from_secs_f64(secs))
}

fn timed_out(message: String) -> Failure {
    Failure::new(FailureCode::Timeout, message).with_input_fired(false)
}

pub(crate) fn wait_for(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let condition = match args.str("condition")? {
        "window_appears" | "window_exists" => Condition::Appears,
        "window_gone" | "window_closed" => Condition::Gone,
        "screen_settles" | "settled" => Condition::Settles,
        "region_changes" | "changed" => Condition::Changes,
        other => {
            return Err(invalid(
                "condition",
                format!(
                    "unknown condition `{other}` (window_appears, window_gone, screen_settles, region_changes)"
                ),
            ));
        }
    };
    let limit = timeout(args)?;
    match condition {
        Condition::Appears | Condition::Gone => {
            wait_window(args, matches!(condition, Condition::Appears), limit)
        }
        Condition::Settles | Condition::Changes => {
            let source = if let Some(r) = region(args, "region")? {
                Source::Region(r)
            } else if let Some(w) = named_window(args)? {
                Source::Window(w.id)
            } else {
                Source::Screen(None)
            };
            if matches!(condition, Condition::Settles) {
                let quiet = Duration::from_millis(
                    args.opt_int("quiet_ms", 50..=10_000)?.unwrap_or(300) as u64,
                );
                let (_, settled, took) = settle(source, limit, quiet)?;
                if !settled {
                    return Err(timed_out(format!(
                        "the screen was still changing after {} ms",
                        limit.as_millis()
                    )));
                }
                Ok(output(
                    json!({"settled": true, "ms": took.as_millis() as u64}),
                    format!("settled after {} ms", took.as_millis()),
                ))
            } else {
                wait_change(
                    state,
                    source,
                    args.opt_number("threshold", 0.0..=1.0)?.unwrap_or(0.0),
                    limit,
                )
            }
        }
    }
}

fn wait_window(args: &Args, present: bool, limit: Duration) -> Result<Output, Failure> {
    let query = Query::from_args(args)?
        .ok_or_else(|| invalid("target", "window conditions need a target (title or class)"))?;
    let what = if present { "appeared" } else { "is gone" };
    let start = Instant::now();
    let found = if query.id.is_none() {
        let q = WindowQuery {
            title: query.title.clone(),
            class: query.class.clone(),
            exact: query.exact,
        };
        let ms = u32::try_from(limit.as_millis()).unwrap_or(u32::MAX);
        windows::wait_for_window(&q, present, ms).map_err(|e| match e {
            DesktopError::Timeout(m) => timed_out(m),
            e => fail(e, false),
        })?
    } else {
        // An id query: poll the list here (the host's wait matches text only).
        loop {
            let list = all_windows()?;
            let hit = list.into_iter().find(|w| query.matches(w));
            if hit.is_some() == present {
                break hit;
            }
            if start.elapsed() >= limit {
                return Err(timed_out(format!(
                    "window {} had not {what} after {} ms",
                    query.describe(),
                    limit.as_millis()
                )));
            }
            std::thread::sleep(FRAME_INTERVAL);
        }
    };
    let ms = start.elapsed().as_millis() as u64;
    Ok(output(
        json!({"window": found.as_ref().map(target::window_json), "ms": ms}),
        format!("window {} {what} after {ms} ms", query.describe()),
    ))
}

fn wait_change(
    state: &mut State,
    source: Source,
    threshold: f64,
    limit: Duration,
) -> Result<Output, Failure> {
    let start = Instant::now();
    let base = frame(source)?;
    // The step before this wait may have made the change already: compare
    // with the capture taken right before it acted, where it covers what is
    // watched. Used once, so a second wait waits for a new change.
    if let Some(before) = state.seen.before_action.take()
        && let Some(d) = changed_since(&before, &base.area)?
        && d.0 > 0
    {
        let watched = base.cells.len().max(1) as f64;
        let fraction = (d.0 as f64 / watched).min(1.0);
        if fraction >= threshold {
            return Ok(output(
                json!({"changed_fraction": fraction, "changed_area": d.1.map(area_json), "ms": 0,
                       "since": "before the last step"}),
                format!(
                    "{:.2}% changed since before the last step (already on screen)",
                    fraction * 100.0
                ),
            ));
        }
    }
    loop {
        std::thread::sleep(FRAME_INTERVAL);
        let current = frame(source)?;
        let d = base.diff(&current);
        if d.changed > 0 && d.fraction() >= threshold {
            let ms = start.elapsed().as_millis() as u64;
            return Ok(output(
                json!({"changed_fraction": d.fraction(), "changed_area": d.bbox.map(area_json), "ms": ms}),
                format!("{:.2}% changed after {ms} ms", d.fraction() * 100.0),
            ));
        }
        if start.elapsed() >= limit {
            return Err(timed_out(format!(
                "nothing changed within {} ms",
                limit.as_millis()
            )));
        }
    }
}

/// How much of `watched` changed since `before` was captured: changed cells
/// and their box, or `None` when `before` does not cover any of it.
fn changed_since(before: &Frame, watched: &Area) -> Result<Option<(u64, Option<Area>)>, Failure> {
    if before.area.overlap(watched) == 0 {
        return Ok(None);
    }
    let now = frame(Source::Region(rect(&before.area)))?;
    Ok(before.changes(&now).map(|c| c.within(watched)))
}

fn rect(a: &Area) -> Rect {
    Rect {
        x: a.x,
        y: a.y,
        width: a.width,
        height: a.height,
    }
}

/// Remembers how `window` looks right before a step acts on it, for a
/// following `region_changes`. Any earlier capture is dropped first, so a wait
/// never compares with a step before the last. Best effort: without it the
/// wait measures from its own start, as it always did.
pub(crate) fn before_acting(state: &mut State, window: Option<&WindowInfo>) {
    state.seen.before_action = None;
    let Some(w) = window else { return };
    if area(&w.geometry).pixels() > BEFORE_ACTION_MAX_PIXELS {
        return;
    }
    state.seen.before_action = frame(Source::Window(w.id)).ok();
}

fn area_json(a: Area) -> Value {
    json!({"x": a.x, "y": a.y, "width": a.width, "height": a.height})
}

pub(crate) fn begin(state: &mut State, _: &Args) -> Result<Output, Failure> {
    let (f, pixels) = frame_and_pixels(Source::Screen(None))?;
    let a = f.area;
    state.mark = Some(f);
    state.seen.mark_pixels = Some((a, pixels));
    state.seen.windows_at_mark = Some(all_windows()?.iter().map(|w| w.id).collect());
    // A new sequence: "the window the last step acted on" is one of its steps.
    state.last_window = None;
    Ok(output(
        json!({"marked": area_json(a)}),
        "remembered the screen for look",
    ))
}

/// The window a change most likely belongs to: the one holding most of it
/// (the top-most on a tie).
fn affected(list: &[WindowInfo], bbox: Area) -> Option<&WindowInfo> {
    let mut best: Option<(&WindowInfo, u64)> = None;
    for w in list {
        let o = area(&w.geometry).overlap(&bbox);
        if o > 0 && best.is_none_or(|(_, b)| o >= b) {
            best = Some((w, o));
        }
    }
    best.map(|(w, _)| w)
}

/// The window `look` mode window shows: the last one acted on, else the
/// focused one.
fn look_window(list: &[WindowInfo], last_window: Option<u64>) -> Option<&WindowInfo> {
    last_window
        .and_then(|id| list.iter().find(|w| w.id == id))
        .or_else(|| list.iter().find(|w| w.focused))
}

pub(crate) fn look(state: &mut State, args: &Args) -> Result<Output, Failure> {
    let mode = args.str_or("mode", "auto")?;
    let settle_max = Duration::from_millis(
        args.opt_int("settle_max_ms", 0..=MAX_WAIT_MS)?
            .unwrap_or(2000) as u64,
    );
    let mut notes = Vec::new();
    let (source, label) = match mode {
        "auto" => return look_auto(state, settle_max),
        "screen" => (Source::Screen(None), "screen".to_owned()),
        "region" => {
            let r = region(args, "region")?
                .ok_or_else(|| invalid("region", "mode region needs a region (look_at)"))?;
            (Source::Region(r), "region".to_owned())
        }
        "window" => {
            let list = all_windows()?;
            match look_window(&list, state.last_window) {
                Some(w) => (Source::Window(w.id), format!("window {:?}", w.title)),
                None => {
                    notes.push("no window was acted on and none has the focus; showing the screen");
                    (Source::Screen(None), "screen".to_owned())
                }
            }
        }
        other => {
            return Err(invalid(
                "mode",
                format!("unknown look mode `{other}` (auto, window, screen, region)"),
            ));
        }
    };
    let (_, settled, took) = settle(source, settle_max, LOOK_QUIET)?;
    let (mut value, image) = png(capture(source, ImageFormat::Png)?, &label);
    value["settled"] = json!(settled);
    value["settle_ms"] = json!(took.as_millis() as u64);
    value["mode"] = json!(mode);
    let mut text = format!(
        "{label} after the last step{}",
        settle_note(settled, took, settle_max)
    );
    for n in notes {
        text.push_str("; ");
        text.push_str(n);
    }
    value["text"] = json!(text);
    Ok(Output {
        value: value.to_string(),
        content: vec![Content::Text(text), image],
    })
}

fn settle_note(settled: bool, took: Duration, max: Duration) -> String {
    if max.is_zero() {
        " (captured at once)".into()
    } else if settled {
        format!(" (settled in {} ms)", took.as_millis())
    } else {
        format!(" (still changing after {} ms)", max.as_millis())
    }
}

fn look_auto(state: &mut State, settle_max: Duration) -> Result<Output, Failure> {
    let Some(before) = state.mark.take() else {
        return Err(invalid(
            "mode",
            "mode auto needs look_begin before the steps (do_steps adds it)",
        ));
    };
    let at_mark = state.seen.windows_at_mark.take();
    let mark_pixels = state.seen.mark_pixels.take();
    let mark_pixels = mark_pixels.as_ref();
    let (after, settled, took) = settle(Source::Screen(None), settle_max, LOOK_QUIET)?;
    let note = settle_note(settled, took, settle_max);
    let list = all_windows()?;
    let appeared: Vec<&WindowInfo> = match &at_mark {
        Some(ids) => list.iter().filter(|w| !ids.contains(&w.id)).collect(),
        None => Vec::new(),
    };
    // The window the steps acted on, else one that appeared meanwhile.
    let acted = state
        .last_window
        .and_then(|id| list.iter().find(|w| w.id == id))
        .or_else(|| appeared.last().copied());
    if let (Some(w), Some(changes)) = (acted, before.changes(&after))
        && let Some(out) = look_at_window(
            &before,
            mark_pixels,
            changes,
            w,
            &list,
            &appeared,
            &note,
            settled,
            took,
        )?
    {
        return Ok(out);
    }
    look_at_change(&before, mark_pixels, &after, &list, &note, settled, took)
}

/// Where a window manager's frame may be drawn around a client area: the
/// title bar above, borders elsewhere (the plugin sees client areas only).
fn decoration(client: &Area) -> Area {
    Area {
        x: client.x - target::BORDER,
        y: client.y - target::TITLE_BAR,
        width: client.width + 2 * target::BORDER as u32,
        height: client.height + (target::TITLE_BAR + target::BORDER) as u32,
    }
}

/// The answer when nothing (that counts) changed.
fn unchanged(text: String, settled: bool, took: Duration, extra: Value) -> Output {
    let mut value = json!({"mode": "auto", "changed": false, "changed_fraction": 0.0, "settled": settled,
                           "settle_ms": took.as_millis() as u64, "text": text});
    if let (Some(v), Value::Object(e)) = (value.as_object_mut(), extra) {
        v.extend(e);
    }
    Output {
        value: value.to_string(),
        content: vec![Content::Text(text)],
    }
}

/// Look auto on the window `w` the steps acted on: the window, widened by
/// what appeared over it and by changes that touch it, clipped to the screen.
/// `None` when the window is off the screen.
#[allow(clippy::too_many_arguments)]
fn look_at_window(
    before: &Frame,
    mark_pixels: Option<&(Area, Vec<u8>)>,
    mut changes: Changes,
    w: &WindowInfo,
    list: &[WindowInfo],
    appeared: &[&WindowInfo],
    note: &str,
    settled: bool,
    took: Duration,
) -> Result<Option<Output>, Failure> {
    let screen = before.area;
    let Some(mut shown) = area(&w.geometry).intersect(&screen) else {
        return Ok(None);
    };
    let managed = windows::window_manager().is_ok_and(|m| m.is_some());
    let total = changes.count();
    let clients: Vec<Area> = list.iter().map(|v| area(&v.geometry)).collect();
    let frame = |a: &Area| if managed { decoration(a) } else { *a };
    // Windows stacked above `w` hide it, so change where they are is theirs;
    // except windows that appeared since look_begin, which belong to it.
    let above: Vec<Area> = list
        .iter()
        .skip_while(|v| v.id != w.id)
        .skip(1)
        .filter(|v| !appeared.iter().any(|a| a.id == v.id))
        .map(|v| frame(&area(&v.geometry)))
        .collect();
    // A manager redraws the frames when the focus moves (title bars lit and
    // dimmed): decoration, which left in would join the window's own change
    // to its neighbour's.
    let frames: Vec<Area> = if managed {
        clients.iter().map(decoration).collect()
    } else {
        Vec::new()
    };
    changes.clear_where(|cell| {
        above.iter().any(|a| a.overlap(cell) > 0)
            || (frames.iter().any(|f| f.overlap(cell) > 0)
                && clients.iter().all(|c| c.overlap(cell) == 0))
    });
    let groups = changes.groups(GROUP_GAP);
    // Grow until nothing more touches: a menu over the edge, a dialog on top,
    // a submenu beside that menu. A group belongs when one of its cells is
    // in and it has enough outside; it adds the cells it has outside (a cell
    // across the edge adds nothing).
    let mut attached: Vec<Area> = Vec::new();
    loop {
        let mut grown = shown;
        for a in appeared {
            let a = area(&a.geometry);
            if a.overlap(&grown) > 0 && a.intersect(&grown) != Some(a) {
                grown = grown.union(&a);
                attached.push(a);
            }
        }
        for g in &groups {
            if let (n, Some(out)) = changes.outside(g, &grown)
                && n >= MIN_POPUP_CELLS
                && changes.reaches(g, &grown)
            {
                grown = grown.union(&out);
                attached.push(out);
            }
        }
        let grown = grown.intersect(&screen).unwrap_or(grown);
        if grown == shown {
            break;
        }
        shown = grown;
    }
    let widened = shown != area(&w.geometry).intersect(&screen).unwrap_or(shown);
    let (mut inside, _) = changes.within(&shown);
    let elsewhere = total - inside;
    let mut blinking = 0;
    let mut watched = None;
    match small_change(mark_pixels, &changes, &shown, inside)? {
        Small::Real => {}
        Small::Gone => {
            blinking = inside;
            changes.clear_where(|c| c.overlap(&shown) > 0);
            inside = 0;
        }
        Small::Caret => {
            let started = Instant::now();
            blinking = discount_blinking(before, &mut changes, &shown)?;
            watched = Some(started.elapsed());
            inside = changes.within(&shown).0;
        }
    }
    let (_, bbox) = changes.within(&shown);
    let what = format!("window {:?}", w.title);
    let mut extra = json!({"window": target::window_json(w)});
    if let Some(t) = watched {
        // What the caret check cost, so a slow look can be told apart.
        extra["blink_watch_ms"] = json!(t.as_millis() as u64);
    }
    if !attached.is_empty() {
        extra["attached"] = json!(attached.iter().map(|a| area_json(*a)).collect::<Vec<_>>());
    }
    if elsewhere > 0 {
        extra["ignored_cells_elsewhere"] = json!(elsewhere);
    }
    if blinking > 0 {
        extra["ignored_blinking_cells"] = json!(blinking);
    }
    let ignored = match (elsewhere, blinking) {
        (0, 0) => String::new(),
        (e, 0) => format!(" (changes elsewhere on screen left out: {e} cells)"),
        (0, b) => format!(" ({b} cells that blink left out)"),
        (e, b) => format!(" (changes elsewhere left out: {e} cells; {b} that blink)"),
    };
    let Some(bbox) = bbox.filter(|_| inside > 0) else {
        let text = format!(
            "nothing changed in the {what} since the first step{ignored}{note}; no picture attached"
        );
        return Ok(Some(unchanged(text, settled, took, extra)));
    };
    let label = if widened {
        format!("{what} with what opened over and around it")
    } else {
        what.clone()
    };
    let (mut value, image) = png(
        capture(Source::Region(rect(&shown)), ImageFormat::Png)?,
        &label,
    );
    let fraction = inside as f64 / changes.total().max(1) as f64;
    let text = format!(
        "the {what} changed ({:.2}% of the screen, {}x{} at ({}, {})){ignored}{note}; showing the {label}",
        fraction * 100.0,
        bbox.width,
        bbox.height,
        bbox.x,
        bbox.y
    );
    value["mode"] = json!("auto");
    value["changed"] = json!(true);
    value["changed_fraction"] = json!(fraction);
    value["changed_area"] = area_json(bbox);
    value["settled"] = json!(settled);
    value["settle_ms"] = json!(took.as_millis() as u64);
    if let (Some(v), Value::Object(e)) = (value.as_object_mut(), extra) {
        v.extend(e);
    }
    value["text"] = json!(text);
    Ok(Some(Output {
        value: value.to_string(),
        content: vec![Content::Text(text), image],
    }))
}

/// What a change in `shown` is, by its size and its pixels.
enum Small {
    /// Too big or too shaped to be a caret: a change.
    Real,
    /// A bar or a block the size of a caret: watch it.
    Caret,
    /// Its pixels are as they were at `look_begin` again (a caret in its other
    /// phase, a hover that ended): no change.
    Gone,
}

/// Sorts the `inside` changed cells in `shown` (see [`SMALL_CHANGE`]). Without
/// the mark's pixels every small change is watched.
fn small_change(
    mark_pixels: Option<&(Area, Vec<u8>)>,
    changes: &Changes,
    shown: &Area,
    inside: u64,
) -> Result<Small, Failure> {
    if !(1..=SMALL_CHANGE).contains(&inside) {
        return Ok(Small::Real);
    }
    let (_, Some(bbox)) = changes.within(shown) else {
        return Ok(Small::Real);
    };
    if bbox.width > CARET_WIDTH || bbox.height > CARET_HEIGHT {
        return Ok(Small::Real);
    }
    let Some((mark_area, mark)) = mark_pixels else {
        return Ok(Small::Caret);
    };
    let (now, pixels) = frame_and_pixels(Source::Region(rect(&bbox)))?;
    Ok(
        match crate::pixels::changed_pixels(mark_area, mark, &now.area, &pixels) {
            None => Small::Caret,
            Some((0, _)) => Small::Gone,
            Some((n, Some(p)))
                if p.width <= CARET_BAR || n.saturating_mul(10) >= p.pixels().saturating_mul(9) =>
            {
                Small::Caret
            }
            Some(_) => Small::Real,
        },
    )
}

/// Watches a small change in `shown` for up to [`BLINK_WATCH`]: cells that
/// turn back to how they were before the steps, with nothing being done, are
/// a caret or a blinking light, not something the steps did. Returns how many
/// were left out. A real change stays, so this costs its full watch.
fn discount_blinking(before: &Frame, changes: &mut Changes, shown: &Area) -> Result<u64, Failure> {
    let cells: Vec<Area> = changes.cells().filter(|c| c.overlap(shown) > 0).collect();
    let Some(watch) = cells
        .iter()
        .copied()
        .reduce(|a, b| a.union(&b))
        .and_then(|b| b.snap_to(&before.area))
    else {
        return Ok(0);
    };
    let mut pending = cells;
    let mut turned_back = 0;
    let start = Instant::now();
    while !pending.is_empty() && start.elapsed() < BLINK_WATCH {
        std::thread::sleep(FRAME_INTERVAL);
        let now = frame(Source::Region(rect(&watch)))?;
        pending.retain(|c| {
            if before.same_at(&now, c.x, c.y) {
                changes.clear_at(c.x, c.y);
                turned_back += 1;
                false
            } else {
                true
            }
        });
    }
    Ok(turned_back)
}

/// Look auto with no window acted on: the window holding most of the change
/// (or a region around it), as before there was an acted-on window.
fn look_at_change(
    before: &Frame,
    mark_pixels: Option<&(Area, Vec<u8>)>,
    after: &Frame,
    list: &[WindowInfo],
    note: &str,
    settled: bool,
    took: Duration,
) -> Result<Output, Failure> {
    let d = before.diff(after);
    let mut blinking = 0;
    let (changed, bbox) = match before.changes(after) {
        Some(mut changes) => {
            match small_change(mark_pixels, &changes, &before.area, changes.count())? {
                Small::Real => {}
                Small::Gone => {
                    blinking = changes.count();
                    changes.clear_where(|_| true);
                }
                Small::Caret => {
                    blinking = discount_blinking(before, &mut changes, &before.area)?;
                }
            }
            changes.within(&before.area)
        }
        // Another screen size: everything changed.
        None => (d.changed, d.bbox),
    };
    let Some(bbox) = bbox.filter(|_| changed > 0) else {
        let blink = if blinking > 0 {
            format!(" ({blinking} cells that blink left out)")
        } else {
            String::new()
        };
        let text = format!(
            "nothing changed on screen since the first step{blink}{note}; no picture attached"
        );
        return Ok(unchanged(
            text,
            settled,
            took,
            json!({"ignored_blinking_cells": blinking}),
        ));
    };
    let fraction = changed as f64 / d.total.max(1) as f64;
    let (source, label, window) = match affected(list, bbox) {
        Some(w) => (
            Source::Window(w.id),
            format!("window {:?}", w.title),
            Some(target::window_json(w)),
        ),
        None => {
            let r = Rect {
                x: bbox.x - MARGIN,
                y: bbox.y - MARGIN,
                width: bbox.width + 2 * MARGIN as u32,
                height: bbox.height + 2 * MARGIN as u32,
            };
            (Source::Region(r), "changed region".to_owned(), None)
        }
    };
    let (mut value, image) = png(capture(source, ImageFormat::Png)?, &label);
    let text = format!(
        "{:.2}% of the screen changed ({}x{} at ({}, {})){note}; showing the {label}",
        fraction * 100.0,
        bbox.width,
        bbox.height,
        bbox.x,
        bbox.y
    );
    value["mode"] = json!("auto");
    value["changed"] = json!(true);
    value["changed_fraction"] = json!(fraction);
    value["changed_area"] = area_json(bbox);
    value["window"] = window.unwrap_or(Value::Null);
    value["settled"] = json!(settled);
    value["settle_ms"] = json!(took.as_millis() as u64);
    value["text"] = json!(text);
    Ok(Output {
        value: value.to_string(),
        content: vec![Content::Text(text), image],
    })
}
