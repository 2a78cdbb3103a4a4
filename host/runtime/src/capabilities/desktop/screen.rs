//! Screen capture, and PNG encoding.
//!
//! Captures use a connection of their own, never the input one, so they never
//! wait for the input lock. On the usual 24-bit display that connection stays
//! open and reads pixels with one `GetImage`, with the monitor layout kept for
//! a moment: xcap, which does the rest (and every capture elsewhere), opens
//! fresh connections and asks RandR for the monitors each time, about 7 of the
//! 8 ms a 226x394 window took on Xvfb; `look` and `wait_for` capture every
//! 100 ms, and acting steps capture their window before they act. Everything
//! here blocks: callers run it on the blocking pool.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat, ImageOrder, VisualClass, Window};
use x11rb::rust_connection::RustConnection;
use xcap::Monitor;
use xcap::image::codecs::png::{CompressionType, FilterType, PngEncoder};
use xcap::image::{ExtendedColorType, ImageEncoder as _};

use super::Rect;
use super::error::{DesktopFailure, DesktopResult};

/// How long a read monitor layout is used before it is read again.
const MONITORS_FRESH: Duration = Duration::from_secs(2);

/// A monitor's place, as captures need it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Place {
    id: u32,
    geometry: Rect,
    primary: bool,
}

/// The capture connection, on a display whose pixels come as 32-bit BGRX.
struct Grabber {
    conn: RustConnection,
    root: Window,
    monitors: Vec<Place>,
    read_at: Instant,
}

/// The capture connection's state.
enum Slot {
    /// Not connected yet, or the last attempt failed: the next capture tries.
    Untried,
    /// The display's pixel layout is one xcap converts: xcap serves.
    Unusable,
    Ready(Box<Grabber>),
}

static GRABBER: Mutex<Slot> = Mutex::new(Slot::Untried);

impl Grabber {
    /// Connects, if the display's pixels are 32-bit BGRX little-endian
    /// TrueColor (else `None`: xcap converts the other layouts).
    fn connect() -> DesktopResult<Option<Self>> {
        let (conn, screen_num) = RustConnection::connect(None)?;
        let setup = conn.setup();
        let Some(screen) = setup.roots.get(screen_num) else {
            return Ok(None);
        };
        let visual = screen
            .allowed_depths
            .iter()
            .flat_map(|d| d.visuals.iter())
            .find(|v| v.visual_id == screen.root_visual);
        let bgrx = screen.root_depth == 24
            && setup.image_byte_order == ImageOrder::LSB_FIRST
            && setup
                .pixmap_formats
                .iter()
                .any(|f| f.depth == 24 && f.bits_per_pixel == 32 && f.scanline_pad == 32)
            && visual.is_some_and(|v| {
                v.class == VisualClass::TRUE_COLOR
                    && (v.red_mask, v.green_mask, v.blue_mask) == (0xff_0000, 0xff00, 0xff)
            });
        if !bgrx {
            return Ok(None);
        }
        let root = screen.root;
        Ok(Some(Self {
            conn,
            root,
            monitors: Vec::new(),
            read_at: Instant::now(),
        }))
    }

    fn monitors(&mut self) -> DesktopResult<&[Place]> {
        if self.monitors.is_empty() || self.read_at.elapsed() >= MONITORS_FRESH {
            self.monitors = places()?;
            self.read_at = Instant::now();
        }
        Ok(&self.monitors)
    }

    /// The pixels of `area` (on one monitor) as RGBA.
    fn grab(&self, area: Rect) -> DesktopResult<Vec<u8>> {
        // On a monitor, so in range of the X coordinate types.
        let reply = self
            .conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                self.root,
                area.x as i16,
                area.y as i16,
                area.width as u16,
                area.height as u16,
                !0,
            )?
            .reply()?;
        let mut data = reply.data;
        let expected = area.width as usize * area.height as usize * 4;
        if data.len() != expected {
            return Err(DesktopFailure::Failed(format!(
                "the X server sent {} bytes for {area}, not {expected}",
                data.len()
            )));
        }
        for px in data.chunks_exact_mut(4) {
            px.swap(0, 2);
            px[3] = 255;
        }
        Ok(data)
    }
}

/// Runs `f` on the capture connection; `None` when there is none to use (xcap
/// serves then). A broken connection is dropped so the next capture reconnects.
fn with_grabber<T>(f: impl FnOnce(&mut Grabber) -> DesktopResult<T>) -> Option<DesktopResult<T>> {
    let mut guard = GRABBER.lock().unwrap_or_else(|e| e.into_inner());
    if matches!(*guard, Slot::Untried) {
        *guard = match Grabber::connect() {
            Ok(Some(g)) => Slot::Ready(Box::new(g)),
            Ok(None) => Slot::Unusable,
            Err(e) => {
                tracing::debug!("no capture connection, capturing with xcap: {e}");
                return None;
            }
        };
    }
    let Slot::Ready(grabber) = &mut *guard else {
        return None;
    };
    let result = f(grabber);
    if let Err(DesktopFailure::Connection(why)) = &result {
        tracing::debug!("dropping the capture connection: {why}");
        *guard = Slot::Untried;
        return None;
    }
    Some(result)
}

fn places() -> DesktopResult<Vec<Place>> {
    let err = xcap_err("reading a monitor");
    monitors()?
        .iter()
        .map(|m| {
            Ok(Place {
                id: m.id().map_err(&err)?,
                geometry: geometry(m)?,
                primary: m.is_primary().map_err(&err)?,
            })
        })
        .collect()
}

/// The monitor `id`, or the primary (else the first) one.
fn pick(places: &[Place], id: Option<u32>) -> DesktopResult<Place> {
    match id {
        Some(id) => places
            .iter()
            .find(|p| p.id == id)
            .copied()
            .ok_or_else(|| DesktopFailure::NotFound(format!("no monitor with id {id}"))),
        None => places
            .iter()
            .find(|p| p.primary)
            .or_else(|| places.first())
            .copied()
            .ok_or_else(|| DesktopFailure::NotFound("the display has no monitor".into())),
    }
}

/// `region` clipped to the monitor under its centre.
fn clip(places: &[Place], region: Rect) -> DesktopResult<Rect> {
    let (cx, cy) = region.center();
    let bounds = places
        .iter()
        .find(|p| p.geometry.contains(cx, cy))
        .map(|p| p.geometry)
        .ok_or_else(|| {
            DesktopFailure::NotFound(format!("the region {region} is not on any monitor"))
        })?;
    region
        .intersect(&bounds)
        .ok_or_else(|| DesktopFailure::NotFound(format!("the region {region} is off the screen")))
}

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
    let fast = with_grabber(|g| {
        let area = pick(g.monitors()?, id)?.geometry;
        Ok(Pixels {
            area,
            rgba: g.grab(area)?,
        })
    });
    if let Some(result) = fast {
        return result;
    }
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
    let fast = with_grabber(|g| {
        let area = clip(g.monitors()?, region)?;
        Ok(Pixels {
            area,
            rgba: g.grab(area)?,
        })
    });
    if let Some(result) = fast {
        return result;
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
    fn regions_clip_to_the_monitor_under_their_centre() {
        let places = [
            Place {
                id: 1,
                geometry: Rect {
                    x: 0,
                    y: 0,
                    width: 100,
                    height: 100,
                },
                primary: false,
            },
            Place {
                id: 2,
                geometry: Rect {
                    x: 100,
                    y: 0,
                    width: 100,
                    height: 100,
                },
                primary: true,
            },
        ];
        let r = Rect {
            x: 90,
            y: 10,
            width: 40,
            height: 10,
        };
        // Centre (110, 15) is on monitor 2.
        assert_eq!(
            clip(&places, r).expect("on a monitor"),
            Rect {
                x: 100,
                y: 10,
                width: 30,
                height: 10
            }
        );
        assert!(clip(&places, Rect { x: 500, ..r }).is_err());
        assert_eq!(pick(&places, None).expect("primary").id, 2);
        assert_eq!(pick(&places, Some(1)).expect("by id").id, 1);
        assert!(pick(&places, Some(9)).is_err());
    }

    #[test]
    fn png_encoding_round_trips_its_header() {
        let rgba = vec![255u8; 4 * 3 * 2];
        let png = encode_png(3, 2, &rgba).expect("encodes");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(encode_png(3, 3, &rgba).is_err(), "size mismatch is refused");
    }
}
