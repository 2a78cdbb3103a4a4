//! `computer` `screenshot`: a PNG of the viewport, of one element (`ref` or
//! `find`), or of the whole scrollable page (`full_page`).
//!
//! The drivers differ, so each capture takes the route that draws it right:
//!
//! - The viewport: W3C Take Screenshot, in both browsers.
//! - Chromium, an element or the page: DevTools `Page.captureScreenshot` with
//!   a clip in document coordinates and `captureBeyondViewport`, through
//!   chromedriver's `goog/cdp/execute`, which the host opens for that command
//!   alone with a bounded clip (`host/runtime/.../webdriver/vendor.rs`).
//!   chromedriver's own element screenshot paints nothing below the viewport
//!   for a tall element and cannot take an element of a frame.
//! - Firefox: the page by geckodriver's `moz/screenshot/full`; an element of
//!   the top document (shadow trees included) that fits the viewport by W3C
//!   Take Element Screenshot; anything else (an element in a frame, a tall
//!   element, a page cut to the bound) by an element screenshot of a
//!   transparent box laid over that rectangle for the moment of the capture.
//!   Firefox cuts element screenshots to the viewport, so for a rectangle
//!   larger than the viewport the window grows to hold it and is put back
//!   afterwards (the page sees a resize, as with chromedriver's own full-page
//!   capture).
//!
//! A capture is bounded ([`MAX_SIDE`], [`MAX_PIXELS`], in device pixels): a
//! longer page or element keeps its top-left part, and the result says
//! `clipped` and how large the whole was.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::args::{Args, BrowserArgs};
use crate::browser::Browser;
use crate::error::{Result, failed, invalid};
use crate::webdriver::Doing;
use stephost_plugin::Output;

/// The longest side of a capture, in device pixels (the host's gate refuses
/// a DevTools capture past the same size).
pub(crate) const MAX_SIDE: f64 = 16_384.0;
/// The most pixels in one capture (16,384 x 2,048, 128 MiB as RGBA).
pub(crate) const MAX_PIXELS: f64 = 16_384.0 * 2_048.0;

/// The key WebDriver marks an element reference with.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Lays a transparent box over `arguments[0]` = [x, y, w, h] (document CSS
/// pixels) on top of everything and returns it; nothing on the page moves.
const OVERLAY_JS: &str = "
const [x, y, w, h] = arguments[0];
const box = document.createElement('stephost-shot');
box.style.cssText = 'all: initial !important; display: block !important; position: absolute !important; '
  + 'left: 0 !important; top: 0 !important; width: ' + w + 'px !important; height: ' + h + 'px !important; '
  + 'pointer-events: none !important; z-index: 2147483647 !important; background: transparent !important;';
document.documentElement.appendChild(box);
// The box's containing block may not start at the document's origin (a
// positioned <html>): move it by what it is off.
const r = box.getBoundingClientRect();
box.style.setProperty('left', (x - (r.left + window.scrollX)) + 'px', 'important');
box.style.setProperty('top', (y - (r.top + window.scrollY)) + 'px', 'important');
return box;";

/// Removes the box again and puts the scroll back where it was.
const REMOVE_JS: &str = "
for (const box of document.querySelectorAll('stephost-shot')) box.remove();
const [sx, sy] = arguments[0];
window.scrollTo({ left: sx, top: sy, behavior: 'instant' });";

/// A rectangle in document CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Rect {
    /// Whole pixels covering `[x, y, w, h]`.
    fn covering(x: f64, y: f64, w: f64, h: f64) -> Self {
        let (x0, y0) = (x.max(0.0).floor(), y.max(0.0).floor());
        Self {
            x: x0,
            y: y0,
            w: ((x + w).ceil() - x0).max(1.0),
            h: ((y + h).ceil() - y0).max(1.0),
        }
    }

    /// The top-left part that fits the capture bound at `dpr` device pixels
    /// per CSS pixel, and whether anything was cut.
    fn bounded(self, dpr: f64) -> (Self, bool) {
        // Below 1 the bound still holds in CSS pixels, which the host checks.
        let dpr = dpr.max(1.0);
        let w = self.w.min((MAX_SIDE / dpr).floor());
        let h = self
            .h
            .min((MAX_SIDE / dpr).floor())
            .min((MAX_PIXELS / (w * dpr * dpr)).floor());
        let cut = Self { w, h, ..self };
        (cut, cut != self)
    }

    fn json(self) -> Value {
        json!([self.x, self.y, self.w, self.h])
    }
}

/// What to capture.
enum Subject {
    Viewport,
    Page,
    Element,
}

/// Runs `computer` `screenshot`.
pub(crate) fn run(browser: &mut Browser, args: &Args, tab: u32) -> Result<Output> {
    let target = args.target("ref", "find")?;
    let full_page = args.get("full_page").and_then(Value::as_bool) == Some(true);
    if full_page && target.is_some() {
        return Err(invalid(
            "full_page",
            "give ref/find (one element) or full_page (the whole page), not both",
        ));
    }
    let subject = match (target.is_some(), full_page) {
        (true, _) => Subject::Element,
        (false, true) => Subject::Page,
        (false, false) => Subject::Viewport,
    };
    if let Subject::Viewport = subject {
        let png = capture(browser, tab, "GET", "/screenshot", None)?;
        return image(json!({"action": "screenshot", "tabId": tab}), png);
    }
    let shot = crate::page::shot(browser, tab, target)?;
    let number = |v: &Value, i: usize| v.get(i).and_then(Value::as_f64).unwrap_or(0.0);
    let dpr = shot.get("dpr").and_then(Value::as_f64).unwrap_or(1.0);
    let mut value = json!({"action": "screenshot", "tabId": tab});
    let (whole, element) = match subject {
        Subject::Element => {
            let b = shot.get("box").unwrap_or(&Value::Null);
            let whole = Rect::covering(number(b, 0), number(b, 1), number(b, 2), number(b, 3));
            if let Some(reference) = shot
                .get("what")
                .and_then(|w| w.get("ref"))
                .and_then(Value::as_str)
            {
                value["ref"] = json!(reference);
            }
            value["element"] = json!(crate::page::what(&shot));
            if let Some(frame) = shot.get("frame") {
                value["frame"] = frame.clone();
            }
            let element = shot
                .get("el")
                .and_then(|e| e.get(ELEMENT_KEY))
                .and_then(Value::as_str)
                .map(str::to_owned);
            (whole, element)
        }
        _ => {
            let size = shot.get("size").unwrap_or(&Value::Null);
            value["full_page"] = json!(true);
            (
                Rect::covering(0.0, 0.0, number(size, 0), number(size, 1)),
                None,
            )
        }
    };
    let (rect, clipped) = whole.bounded(dpr);
    value["clipped"] = json!(clipped);
    if clipped {
        value["whole"] = json!([whole.w, whole.h]);
        value["note"] = json!(format!(
            "the {} is {} x {} CSS px, more than one capture holds ({MAX_SIDE} device px a side, \
             {MAX_PIXELS} pixels); the image shows its top-left {} x {} CSS px",
            if matches!(subject, Subject::Element) {
                "element"
            } else {
                "page"
            },
            whole.w,
            whole.h,
            rect.w,
            rect.h
        ));
    }
    let png = if browser.kind()? == "firefox" {
        let view = shot.get("view").unwrap_or(&Value::Null);
        let fits = rect.w <= number(view, 0) && rect.h <= number(view, 1);
        match (&subject, &element, clipped) {
            (Subject::Page, _, false) => {
                capture(browser, tab, "GET", "/moz/screenshot/full", None)?
            }
            (Subject::Element, Some(id), false) if fits => capture(
                browser,
                tab,
                "GET",
                &format!("/element/{id}/screenshot"),
                None,
            )?,
            _ if fits => overlay(browser, tab, rect, &shot)?,
            _ => grown(browser, tab, rect, view, |b| overlay(b, tab, rect, &shot))?,
        }
    } else {
        devtools(browser, tab, rect)?
    };
    image(value, png)
}

/// Firefox: runs `take` with the window grown so its viewport (`view`, CSS
/// pixels) holds `rect`, and puts the window back whatever happened. Firefox
/// keeps a window within 16,384 px, so a capture near the bound may come
/// back a little shorter.
fn grown(
    browser: &mut Browser,
    tab: u32,
    rect: Rect,
    view: &Value,
    take: impl FnOnce(&mut Browser) -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    browser.switch(tab)?;
    let doing = Doing {
        tab: Some(tab),
        what: "sizing the window for the capture",
        acts: false,
    };
    let before = browser.cmd(&doing, "GET", "/window/rect", None)?;
    let side = |key: &str| before.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    let (width, height) = (side("width"), side("height"));
    let view = |i: usize| view.get(i).and_then(Value::as_f64).unwrap_or(0.0);
    let grow = json!({
        "width": (width + (rect.w - view(0)).max(0.0)).ceil(),
        "height": (height + (rect.h - view(1)).max(0.0)).ceil(),
    });
    browser.cmd(&doing, "POST", "/window/rect", Some(grow))?;
    let png = take(browser);
    let back = browser.cmd(
        &doing,
        "POST",
        "/window/rect",
        Some(json!({"width": width, "height": height})),
    );
    let png = png?;
    back?;
    Ok(png)
}

/// A capture the driver answers with a base64 PNG (`value`, or its `data`).
fn capture(
    browser: &mut Browser,
    tab: u32,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Vec<u8>> {
    browser.switch(tab)?;
    let doing = Doing {
        tab: Some(tab),
        what: "taking a screenshot",
        acts: false,
    };
    let answer = browser.cmd(&doing, method, path, body)?;
    let encoded = answer
        .as_str()
        .or_else(|| answer.get("data").and_then(Value::as_str))
        .ok_or_else(|| failed("the browser returned no screenshot", false))?;
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| failed(format!("the screenshot is not base64: {e}"), false))
}

/// Chromium: `rect` of the document through DevTools.
fn devtools(browser: &mut Browser, tab: u32, rect: Rect) -> Result<Vec<u8>> {
    let body = json!({"cmd": "Page.captureScreenshot", "params": {
        "format": "png",
        "captureBeyondViewport": true,
        "clip": {"x": rect.x, "y": rect.y, "width": rect.w, "height": rect.h, "scale": 1},
    }});
    capture(browser, tab, "POST", "/goog/cdp/execute", Some(body))
}

/// Firefox: `rect` of the document, as the element screenshot of a box laid
/// over it; the box goes again and the scroll is put back, whatever happened.
fn overlay(browser: &mut Browser, tab: u32, rect: Rect, shot: &Value) -> Result<Vec<u8>> {
    let scroll = shot.get("scroll").cloned().unwrap_or(json!([0, 0]));
    let laid = browser.script(
        tab,
        "laying a box over the area to capture",
        false,
        OVERLAY_JS,
        json!([rect.json()]),
    )?;
    let id = laid
        .get(ELEMENT_KEY)
        .and_then(Value::as_str)
        .map(str::to_owned);
    let png = match id {
        Some(id) => capture(
            browser,
            tab,
            "GET",
            &format!("/element/{id}/screenshot"),
            None,
        ),
        None => Err(failed(
            "the browser gave no reference to the capture box",
            false,
        )),
    };
    // The box is inert (transparent, no pointer events): a failure to remove
    // it does not spoil the capture.
    let _removed = browser.script(
        tab,
        "removing the capture box",
        false,
        REMOVE_JS,
        json!([scroll]),
    );
    png
}

/// The result: `value` with the image's size, and the image.
fn image(mut value: Value, png: Vec<u8>) -> Result<Output> {
    let (width, height) =
        png_size(&png).ok_or_else(|| failed("the screenshot is not a PNG", false))?;
    value["width"] = json!(width);
    value["height"] = json!(height);
    Ok(Output::new(value).with_image("image/png", png))
}

/// Width and height from a PNG's IHDR chunk.
pub(crate) fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" || &png[12..16] != b"IHDR" {
        return None;
    }
    let width = u32::from_be_bytes(png[16..20].try_into().ok()?);
    let height = u32::from_be_bytes(png[20..24].try_into().ok()?);
    Some((width, height))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_sizes_come_from_the_header() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&1265u32.to_be_bytes());
        png.extend_from_slice(&3000u32.to_be_bytes());
        png.extend_from_slice(&[8, 2, 0, 0, 0]);
        assert_eq!(png_size(&png), Some((1265, 3000)));
        assert_eq!(png_size(&png[..20]), None, "too short");
        let mut jpeg = png.clone();
        jpeg[1] = b'J';
        assert_eq!(png_size(&jpeg), None);
        let mut other = png.clone();
        other[12..16].copy_from_slice(b"IDAT");
        assert_eq!(png_size(&other), None, "IHDR comes first");
    }

    #[test]
    fn rectangles_cover_whole_pixels() {
        let r = Rect::covering(10.5, 2500.25, 120.0, 40.0);
        assert_eq!(
            r,
            Rect {
                x: 10.0,
                y: 2500.0,
                w: 121.0,
                h: 41.0
            }
        );
        let r = Rect::covering(10.0, 20.0, 120.0, 40.0);
        assert_eq!((r.w, r.h), (120.0, 40.0), "whole pixels stay as they are");
        let r = Rect::covering(-3.0, -1.0, 0.2, 0.0);
        assert_eq!((r.x, r.y, r.w, r.h), (0.0, 0.0, 1.0, 1.0));
    }

    #[test]
    fn captures_are_cut_to_the_bound() {
        let page = |w, h| Rect {
            x: 0.0,
            y: 0.0,
            w,
            h,
        };
        assert_eq!(
            page(1265.0, 3000.0).bounded(1.0),
            (page(1265.0, 3000.0), false)
        );
        assert!(!page(1265.0, 16384.0).bounded(1.0).1);
        assert_eq!(
            page(1265.0, 40000.0).bounded(1.0),
            (page(1265.0, 16384.0), true)
        );
        // At 2 device pixels per CSS pixel, half as many CSS pixels, and the
        // pixel budget cuts a wide page's height further.
        assert_eq!(
            page(1280.0, 40000.0).bounded(2.0),
            (page(1280.0, 6553.0), true)
        );
        assert_eq!(
            page(20000.0, 100.0).bounded(1.0),
            (page(16384.0, 100.0), true)
        );
        assert_eq!(
            page(4096.0, 9000.0).bounded(1.0),
            (page(4096.0, 8192.0), true)
        );
        // Whatever the page, the capture stays within what the host lets through.
        for (w, h, dpr) in [(1e6, 1e6, 1.0), (3000.0, 1e5, 3.0), (800.0, 1e5, 0.5)] {
            let (r, _) = page(w, h).bounded(dpr);
            let d = f64::max(dpr, 1.0);
            assert!(r.w * d <= MAX_SIDE && r.h * d <= MAX_SIDE, "{r:?}");
            assert!(r.w * r.h * d * d <= MAX_PIXELS, "{r:?}");
        }
    }
}
