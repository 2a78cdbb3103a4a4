//! Seeing the screen: screenshot, wait_for, and the look_begin / look pair
//! that do_steps appends around a sequence.
//!
//! Comparisons run here, on raw pixels the host captures (see `pixels`).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use stephost_plugin::desktop::screen::{self, Capture, ImageFormat};
use stephost_plugin::desktop::windows::{self, WindowInfo, WindowQuery};
use stephost_plugin::desktop::{DesktopError, Rect};
use stephost_plugin::{Content, Failure, FailureCode, Image, Output};

use crate::args::{Args, invalid};
use crate::pixels::{Area, Frame};
use crate::target::{self, Query};
use crate::{MAX_WAIT_MS, State, all_windows, fail, output};

/// Pause between captures while watching the screen.
const FRAME_INTERVAL: Duration = Duration::from_millis(100);
/// How long nothing may change before `look` calls the screen settled.
const LOOK_QUIET: Duration = Duration::from_millis(200);
/// Margin around a changed area shown when no window holds it.
const MARGIN: i32 = 16;

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
    let c = capture(source, ImageFormat::Rgba)?;
    Frame::from_rgba(area(&c.area), &c.data).ok_or_else(|| {
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
    })
}

/// Watches `source` until nothing changed for `quiet`, or `max` passed.
/// Returns the last frame, whether it settled, and how long it took.
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
    loop {
        std::thread::sleep(FRAME_INTERVAL);
        let taken = Instant::now();
        let current = frame(source)?;
        if previous.diff(&current).changed == 0 {
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
    let (source, label) = if let Some(r) = region(args, "region")? {
        (Source::Region(r), "region".to_owned())
    } else if let Some(w) = named_window(args)? {
        (Source::Window(w.id), format!("window {:?}", w.title))
    } else {
        let monitor = args.opt_int("monitor", 0..=i64::from(u32::MAX))?;
        (
            Source::Screen(monitor.map(|m| m as u32)),
            "screen".to_owned(),
        )
    };
    let (value, image) = png(capture(source, ImageFormat::Png)?, &label);
    let text = format!("screenshot of the {label}");
    Ok(Output {
        value: value.to_string(),
        content: vec![Content::Text(text), image],
    })
}

enum Condition {
    Appears,
    Gone,
    Settles,
    Changes,
}

fn timeout(args: &Args) -> Result<Duration, Failure> {
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

pub(crate) fn wait_for(_: &mut State, args: &Args) -> Result<Output, Failure> {
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

fn wait_change(source: Source, threshold: f64, limit: Duration) -> Result<Output, Failure> {
    let start = Instant::now();
    let base = frame(source)?;
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

fn area_json(a: Area) -> Value {
    json!({"x": a.x, "y": a.y, "width": a.width, "height": a.height})
}

pub(crate) fn begin(state: &mut State, _: &Args) -> Result<Output, Failure> {
    let f = frame(Source::Screen(None))?;
    let a = f.area;
    state.mark = Some(f);
    Ok(output(
        json!({"marked": area_json(a)}),
        "remembered the screen for look",
    ))
}

/// The window a change most likely belongs to: the last window acted on if
/// the change touches it, else the one holding most of the change (the
/// top-most on a tie).
fn affected(list: &[WindowInfo], bbox: Area, last_window: Option<u64>) -> Option<&WindowInfo> {
    if let Some(last) = last_window.and_then(|id| list.iter().find(|w| w.id == id))
        && area(&last.geometry).overlap(&bbox) > 0
    {
        return Some(last);
    }
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
    let (after, settled, took) = settle(Source::Screen(None), settle_max, LOOK_QUIET)?;
    let d = before.diff(&after);
    let note = settle_note(settled, took, settle_max);
    let Some(bbox) = d.bbox.filter(|_| d.changed > 0) else {
        let text =
            format!("nothing changed on screen since the first step{note}; no picture attached");
        return Ok(Output {
            value: json!({"mode": "auto", "changed": false, "changed_fraction": 0.0, "settled": settled,
                          "settle_ms": took.as_millis() as u64, "text": text}).to_string(),
            content: vec![Content::Text(text)],
        });
    };
    let list = all_windows()?;
    let (source, label, window) = match affected(&list, bbox, state.last_window) {
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
        d.fraction() * 100.0,
        bbox.width,
        bbox.height,
        bbox.x,
        bbox.y
    );
    value["mode"] = json!("auto");
    value["changed"] = json!(true);
    value["changed_fraction"] = json!(d.fraction());
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
