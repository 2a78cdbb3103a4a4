//! Screen capture with xcap, and PNG encoding.
//!
//! xcap opens its own short-lived connections to `$DISPLAY` for every capture,
//! so captures never wait for the input lock. Everything here blocks: callers
//! run it on the blocking pool.

use xcap::Monitor;
use xcap::image::codecs::png::{CompressionType, FilterType, PngEncoder};
use xcap::image::{ExtendedColorType, ImageEncoder as _};

use super::Rect;
use super::error::{DesktopFailure, DesktopResult};

/// One monitor, as the `screen` interface describes it.
pub(crate) struct MonitorInfo {
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) geometry: Rect,
    pub(crate) primary: bool,
    pub(crate) scale_factor: f32,
}

/// Captured pixels: RGBA, rows top to bottom, covering `area` of the desktop.
pub(crate) struct Pixels {
    pub(crate) area: Rect,
    pub(crate) rgba: Vec<u8>,
}

fn xcap_err(what: &str) -> impl Fn(xcap::XCapError) -> DesktopFailure + '_ {
    move |e| DesktopFailure::Failed(format!("{what}: {e}"))
}

fn geometry(m: &Monitor) -> DesktopResult<Rect> {
    let err = xcap_err("reading the monitor geometry");
    Ok(Rect {
        x: m.x().map_err(&err)?,
        y: m.y().map_err(&err)?,
        width: m.width().map_err(&err)?,
        height: m.height().map_err(&err)?,
    })
}

fn monitors() -> DesktopResult<Vec<Monitor>> {
    if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
        return Err(DesktopFailure::Unsupported(
            "no X display: DISPLAY is not set in the host's environment".into(),
        ));
    }
    Monitor::all().map_err(xcap_err("listing monitors"))
}

/// Every monitor.
pub(crate) fn list_monitors() -> DesktopResult<Vec<MonitorInfo>> {
    monitors()?
        .iter()
        .map(|m| {
            let err = xcap_err("reading a monitor");
            Ok(MonitorInfo {
                id: m.id().map_err(&err)?,
                name: m.name().map_err(&err)?,
                geometry: geometry(m)?,
                primary: m.is_primary().map_err(&err)?,
                scale_factor: m.scale_factor().map_err(&err)?,
            })
        })
        .collect()
}

/// The whole of one monitor (the primary, or the first, when `id` is none).
pub(crate) fn capture_monitor(id: Option<u32>) -> DesktopResult<Pixels> {
    let all = monitors()?;
    let monitor = match id {
        Some(id) => all
            .into_iter()
            .find(|m| m.id().ok() == Some(id))
            .ok_or_else(|| DesktopFailure::NotFound(format!("no monitor with id {id}")))?,
        None => {
            let primary = all.iter().position(|m| m.is_primary().unwrap_or(false));
            let index = primary.unwrap_or(0);
            all.into_iter()
                .nth(index)
                .ok_or_else(|| DesktopFailure::NotFound("the display has no monitor".into()))?
        }
    };
    let area = geometry(&monitor)?;
    let image = monitor
        .capture_image()
        .map_err(xcap_err("capturing the screen"))?;
    Ok(Pixels {
        area,
        rgba: image.into_raw(),
    })
}

/// A region, clipped to the monitor under its centre.
pub(crate) fn capture_region(region: Rect) -> DesktopResult<Pixels> {
    if region.width == 0 || region.height == 0 {
        return Err(DesktopFailure::Invalid(format!(
            "the region {region} is empty"
        )));
    }
    let (cx, cy) = region.center();
    let all = monitors()?;
    let mut chosen = None;
    for m in all {
        let g = geometry(&m)?;
        if g.contains(cx, cy) {
            chosen = Some((m, g));
            break;
        }
    }
    let Some((monitor, bounds)) = chosen else {
        return Err(DesktopFailure::NotFound(format!(
            "the region {region} is not on any monitor"
        )));
    };
    let clipped = region.intersect(&bounds).ok_or_else(|| {
        DesktopFailure::NotFound(format!("the region {region} is off the screen"))
    })?;
    // In bounds, so the offsets are non-negative.
    let rel_x = (clipped.x - bounds.x) as u32;
    let rel_y = (clipped.y - bounds.y) as u32;
    let image = monitor
        .capture_region(rel_x, rel_y, clipped.width, clipped.height)
        .map_err(xcap_err("capturing a region"))?;
    Ok(Pixels {
        area: clipped,
        rgba: image.into_raw(),
    })
}

/// Encodes RGBA pixels as PNG, tuned for speed (screenshots are mostly flat
/// colour, which fast deflate handles well).
pub(crate) fn encode_png(width: u32, height: u32, rgba: &[u8]) -> DesktopResult<Vec<u8>> {
    let expected = u64::from(width) * u64::from(height) * 4;
    if rgba.len() as u64 != expected || expected == 0 {
        return Err(DesktopFailure::Invalid(format!(
            "{width}x{height} RGBA needs {expected} bytes, got {}",
            rgba.len()
        )));
    }
    let mut out = Vec::with_capacity(rgba.len() / 8);
    PngEncoder::new_with_quality(&mut out, CompressionType::Fast, FilterType::Adaptive)
        .write_image(rgba, width, height, ExtendedColorType::Rgba8)
        .map_err(|e| DesktopFailure::Failed(format!("PNG encoding failed: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_encoding_round_trips_its_header() {
        let rgba = vec![255u8; 4 * 3 * 2];
        let png = encode_png(3, 2, &rgba).expect("encodes");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(encode_png(3, 3, &rgba).is_err(), "size mismatch is refused");
    }
}
