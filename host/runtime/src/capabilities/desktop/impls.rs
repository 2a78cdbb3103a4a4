// The body of one contract version's desktop host interfaces: included by
// host.rs once per version, with `wit` naming that version's bindings. Not a
// module of its own, so it has no inner docs; see host.rs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wit::stephost::plugin::{desktop_types, input, screen, windows};
use crate::capabilities::desktop::error::{DesktopFailure, DesktopResult};
use crate::capabilities::desktop::{
    Desktop, Expectation, HostState, MouseButton, Rect, WindowInfo, keys,
};
use desktop_types::DesktopError;

/// Longest `wait-for-window`.
const MAX_WAIT: Duration = Duration::from_secs(600);
/// How often `wait-for-window` looks.
const WAIT_POLL: Duration = Duration::from_millis(50);
/// Longest text one `type-text` call types. Typing runs on a blocking thread
/// that a step timeout cannot stop, so the host bounds the work itself.
const MAX_TYPE_CHARS: usize = 100_000;
/// Most combos in one `key-combo` call, for the same reason.
const MAX_COMBOS: usize = 100;

impl From<DesktopFailure> for DesktopError {
    fn from(f: DesktopFailure) -> Self {
        match f {
            DesktopFailure::NotFound(m) => Self::NotFound(m),
            DesktopFailure::WorldMoved(m) => Self::WorldMoved(m),
            DesktopFailure::Invalid(m) => Self::Invalid(m),
            DesktopFailure::Unsupported(m) => Self::Unsupported(m),
            f @ (DesktopFailure::Failed(_) | DesktopFailure::Connection(_)) => {
                Self::Failed(f.to_string())
            }
        }
    }
}

impl From<desktop_types::Rect> for Rect {
    fn from(r: desktop_types::Rect) -> Self {
        Self {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        }
    }
}

impl From<Rect> for desktop_types::Rect {
    fn from(r: Rect) -> Self {
        Self {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        }
    }
}

impl From<WindowInfo> for windows::WindowInfo {
    fn from(w: WindowInfo) -> Self {
        Self {
            id: u64::from(w.id),
            title: w.title,
            class: w.class,
            instance: w.instance,
            pid: w.pid,
            geometry: w.geometry.into(),
            focused: w.focused,
        }
    }
}

impl From<input::MouseButton> for MouseButton {
    fn from(b: input::MouseButton) -> Self {
        match b {
            input::MouseButton::Left => Self::Left,
            input::MouseButton::Middle => Self::Middle,
            input::MouseButton::Right => Self::Right,
            input::MouseButton::Back => Self::Back,
            input::MouseButton::Forward => Self::Forward,
        }
    }
}

/// An X window id from the guest; X ids are 29 bits, so a larger one names no
/// window.
fn window_id(id: u64) -> DesktopResult<u32> {
    u32::try_from(id).map_err(|_| DesktopFailure::NotFound(format!("window {id} does not exist")))
}

fn expectation(e: Option<input::Expectation>) -> DesktopResult<Option<Expectation>> {
    e.map(|e| {
        Ok(Expectation {
            window: window_id(e.window)?,
            geometry: e.geometry.map(Into::into),
            focused: e.focused,
            point_on_window: e.point_on_window,
        })
    })
    .transpose()
}

/// The desktop service, if `state`'s instance is granted it.
fn granted_desktop(state: &HostState) -> Result<Arc<Desktop>, DesktopError> {
    if state.grant.desktop {
        Ok(state.services.desktop.clone())
    } else {
        Err(DesktopError::Denied(format!(
            "plugin `{}` is not granted the desktop (set desktop = true under [plugins.grants.{}])",
            state.plugin, state.plugin
        )))
    }
}

/// Runs blocking desktop work on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> DesktopResult<T> + Send + 'static,
) -> Result<T, DesktopError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(Into::into),
        Err(e) => Err(DesktopError::Failed(format!(
            "the desktop task failed: {e}"
        ))),
    }
}

/// Runs `f` on the X connection on the blocking pool.
async fn on_x<T: Send + 'static>(
    desktop: Arc<Desktop>,
    f: impl FnOnce(&mut crate::capabilities::desktop::X11) -> DesktopResult<T> + Send + 'static,
) -> Result<T, DesktopError> {
    blocking(move || desktop.with_x(f)).await
}

impl desktop_types::Host for HostState {}

/// Captures with `capture` and returns the pixels in `format`, logging how long
/// capture and encoding took (the figures BENCHMARKS.md quotes).
fn capture_in(
    format: screen::ImageFormat,
    capture: impl FnOnce() -> DesktopResult<crate::capabilities::desktop::screen::Pixels>,
) -> DesktopResult<screen::Capture> {
    let started = Instant::now();
    let pixels = capture()?;
    let captured = started.elapsed();
    let data = match format {
        screen::ImageFormat::Rgba => pixels.rgba,
        screen::ImageFormat::Png => {
            crate::capabilities::desktop::screen::encode_png(pixels.area.width, pixels.area.height, &pixels.rgba)?
        }
    };
    tracing::debug!(
        width = pixels.area.width,
        height = pixels.area.height,
        capture_ms = captured.as_secs_f64() * 1e3,
        encode_ms = (started.elapsed() - captured).as_secs_f64() * 1e3,
        bytes = data.len(),
        png = matches!(format, screen::ImageFormat::Png),
        "screen capture"
    );
    Ok(screen::Capture {
        area: pixels.area.into(),
        format,
        data,
    })
}

impl screen::Host for HostState {
    async fn list_monitors(&mut self) -> Result<Vec<screen::Monitor>, DesktopError> {
        granted_desktop(self)?;
        let list = blocking(crate::capabilities::desktop::screen::list_monitors).await?;
        Ok(list
            .into_iter()
            .map(|m| screen::Monitor {
                id: m.id,
                name: m.name,
                geometry: m.geometry.into(),
                primary: m.primary,
                scale_factor: m.scale_factor,
            })
            .collect())
    }

    async fn capture_screen(
        &mut self,
        monitor: Option<u32>,
        format: screen::ImageFormat,
    ) -> Result<screen::Capture, DesktopError> {
        granted_desktop(self)?;
        blocking(move || capture_in(format, || crate::capabilities::desktop::screen::capture_monitor(monitor))).await
    }

    async fn capture_window(
        &mut self,
        window: u64,
        format: screen::ImageFormat,
    ) -> Result<screen::Capture, DesktopError> {
        let desktop = granted_desktop(self)?;
        let id = window_id(window)?;
        let info = on_x(desktop, move |x| x.window_info(id, None)).await?;
        blocking(move || capture_in(format, || crate::capabilities::desktop::screen::capture_region(info.geometry))).await
    }

    async fn capture_region(
        &mut self,
        region: desktop_types::Rect,
        format: screen::ImageFormat,
    ) -> Result<screen::Capture, DesktopError> {
        granted_desktop(self)?;
        let region = Rect::from(region);
        blocking(move || capture_in(format, || crate::capabilities::desktop::screen::capture_region(region))).await
    }

    async fn encode_png(
        &mut self,
        width: u32,
        height: u32,
        rgba: Vec<u8>,
    ) -> Result<Vec<u8>, DesktopError> {
        granted_desktop(self)?;
        blocking(move || crate::capabilities::desktop::screen::encode_png(width, height, &rgba)).await
    }
}

fn matches(query: &windows::WindowQuery, w: &WindowInfo) -> bool {
    let test = |want: &Option<String>, have: &[&str]| match want {
        None => true,
        Some(want) => {
            let want = want.to_lowercase();
            have.iter().any(|h| {
                let h = h.to_lowercase();
                if query.exact {
                    h == want
                } else {
                    h.contains(&want)
                }
            })
        }
    };
    test(&query.title, &[&w.title]) && test(&query.class, &[&w.class, &w.instance])
}

impl windows::Host for HostState {
    async fn list_windows(&mut self) -> Result<Vec<windows::WindowInfo>, DesktopError> {
        let desktop = granted_desktop(self)?;
        let list = on_x(desktop, |x| x.list_windows()).await?;
        Ok(list.into_iter().map(Into::into).collect())
    }

    async fn get_window(&mut self, id: u64) -> Result<windows::WindowInfo, DesktopError> {
        let desktop = granted_desktop(self)?;
        let id = window_id(id)?;
        on_x(desktop, move |x| {
            let focused = x.focused_client()?;
            x.window_info(id, focused)
        })
        .await
        .map(Into::into)
    }

    async fn focused_window(&mut self) -> Result<Option<windows::WindowInfo>, DesktopError> {
        let desktop = granted_desktop(self)?;
        on_x(desktop, |x| {
            let Some(focused) = x.focused_client()? else {
                return Ok(None);
            };
            match x.window_info(focused, Some(focused)) {
                Ok(info) => Ok(Some(info)),
                Err(DesktopFailure::NotFound(_)) => Ok(None),
                Err(e) => Err(e),
            }
        })
        .await
        .map(|w| w.map(Into::into))
    }

    async fn activate(&mut self, id: u64) -> Result<windows::WindowInfo, DesktopError> {
        let desktop = granted_desktop(self)?;
        let id = window_id(id)?;
        tracing::debug!(plugin = &*self.plugin, window = id, "activate");
        on_x(desktop, move |x| x.activate(id)).await.map(Into::into)
    }

    async fn wait_for_window(
        &mut self,
        query: windows::WindowQuery,
        present: bool,
        timeout_ms: u32,
    ) -> Result<Option<windows::WindowInfo>, DesktopError> {
        let desktop = granted_desktop(self)?;
        if query.title.is_none() && query.class.is_none() {
            return Err(DesktopError::Invalid(
                "a window query needs a title or a class".into(),
            ));
        }
        let timeout = Duration::from_millis(u64::from(timeout_ms)).min(MAX_WAIT);
        let deadline = Instant::now() + timeout;
        loop {
            let list = on_x(desktop.clone(), |x| x.list_windows()).await?;
            let found = list.into_iter().find(|w| matches(&query, w));
            match (present, found) {
                (true, Some(w)) => return Ok(Some(w.into())),
                (false, None) => return Ok(None),
                (false, Some(w)) if Instant::now() >= deadline => {
                    return Err(DesktopError::Timeout(format!(
                        "window {:?} was still there after {} ms",
                        w.title,
                        timeout.as_millis()
                    )));
                }
                (true, None) if Instant::now() >= deadline => {
                    return Err(DesktopError::Timeout(format!(
                        "no window matching {} appeared within {} ms",
                        describe_query(&query),
                        timeout.as_millis()
                    )));
                }
                _ => tokio::time::sleep(WAIT_POLL.min(deadline - Instant::now())).await,
            }
        }
    }

    async fn window_manager(&mut self) -> Result<Option<String>, DesktopError> {
        let desktop = granted_desktop(self)?;
        on_x(desktop, |x| x.window_manager()).await
    }
}

fn describe_query(q: &windows::WindowQuery) -> String {
    let how = if q.exact { "equal to" } else { "containing" };
    match (&q.title, &q.class) {
        (Some(t), Some(c)) => format!("title {how} {t:?} and class {how} {c:?}"),
        (Some(t), None) => format!("title {how} {t:?}"),
        (None, Some(c)) => format!("class {how} {c:?}"),
        (None, None) => "anything".into(),
    }
}

impl input::Host for HostState {
    async fn move_pointer(
        &mut self,
        x: i32,
        y: i32,
        expect: Option<input::Expectation>,
    ) -> Result<(), DesktopError> {
        let desktop = granted_desktop(self)?;
        let expect = expectation(expect)?;
        on_x(desktop, move |c| c.move_pointer(x, y, expect.as_ref())).await
    }

    async fn click(
        &mut self,
        x: i32,
        y: i32,
        button: input::MouseButton,
        count: u32,
        expect: Option<input::Expectation>,
    ) -> Result<(), DesktopError> {
        let desktop = granted_desktop(self)?;
        let expect = expectation(expect)?;
        if count > 10 {
            return Err(DesktopError::Invalid(format!(
                "count {count}: at most 10 clicks at once"
            )));
        }
        tracing::debug!(plugin = &*self.plugin, x, y, ?button, count, "click");
        on_x(desktop, move |c| {
            c.click(x, y, button.into(), count, expect.as_ref())
        })
        .await
    }

    async fn drag(
        &mut self,
        from_x: i32,
        from_y: i32,
        to_x: i32,
        to_y: i32,
        button: input::MouseButton,
        expect: Option<input::Expectation>,
    ) -> Result<(), DesktopError> {
        let desktop = granted_desktop(self)?;
        let expect = expectation(expect)?;
        on_x(desktop, move |c| {
            c.drag(
                (from_x, from_y),
                (to_x, to_y),
                button.into(),
                expect.as_ref(),
            )
        })
        .await
    }

    async fn scroll(
        &mut self,
        x: i32,
        y: i32,
        dx: i32,
        dy: i32,
        expect: Option<input::Expectation>,
    ) -> Result<(), DesktopError> {
        let desktop = granted_desktop(self)?;
        let expect = expectation(expect)?;
        on_x(desktop, move |c| c.scroll(x, y, dx, dy, expect.as_ref())).await
    }

    async fn type_text(
        &mut self,
        text: String,
        expect: Option<input::Expectation>,
    ) -> Result<(), DesktopError> {
        let desktop = granted_desktop(self)?;
        let expect = expectation(expect)?;
        let chars = text.chars().count();
        if chars > MAX_TYPE_CHARS {
            return Err(DesktopError::Invalid(format!(
                "{chars} characters: at most {MAX_TYPE_CHARS} in one call; nothing was sent"
            )));
        }
        tracing::debug!(plugin = &*self.plugin, chars, "type");
        on_x(desktop, move |c| c.type_text(&text, expect.as_ref())).await
    }

    async fn key_combo(
        &mut self,
        combo: String,
        expect: Option<input::Expectation>,
    ) -> Result<(), DesktopError> {
        let desktop = granted_desktop(self)?;
        let expect = expectation(expect)?;
        let parsed = parse_combos(self, &desktop, &combo)?;
        tracing::debug!(plugin = &*self.plugin, %combo, "key");
        on_x(desktop, move |c| {
            // The expectation holds before the first combo; later ones may
            // legitimately move the focus (alt+tab), and a failure after the
            // first has sent input, so it must not read as "nothing was sent".
            for (i, one) in parsed.iter().enumerate() {
                match c.key_combo(one, if i == 0 { expect.as_ref() } else { None }) {
                    Err(e) if i > 0 => {
                        return Err(DesktopFailure::Failed(format!(
                            "{e} (after {i} combo(s) were sent)"
                        )));
                    }
                    other => other?,
                }
            }
            Ok(())
        })
        .await
    }

    input_since_0_3!();

    async fn pointer_position(&mut self) -> Result<(i32, i32), DesktopError> {
        let desktop = granted_desktop(self)?;
        on_x(desktop, |c| {
            let reply =
                x11rb::protocol::xproto::ConnectionExt::query_pointer(&c.conn, c.root)?.reply()?;
            Ok((i32::from(reply.root_x), i32::from(reply.root_y)))
        })
        .await
    }
}

/// Every combo of `combo` (space-separated), parsed and checked against the
/// operator's blocked list: all of them before the first reaches the display.
fn parse_combos(
    state: &HostState,
    desktop: &Desktop,
    combo: &str,
) -> Result<Vec<keys::Combo>, DesktopError> {
    let mut parsed = Vec::new();
    for one in combo.split_whitespace() {
        parsed.push(keys::parse_combo(one).map_err(|e| DesktopError::Invalid(e.to_string()))?);
    }
    if parsed.is_empty() || parsed.len() > MAX_COMBOS {
        return Err(DesktopError::Invalid(format!(
            "{} key combos: give 1 to {MAX_COMBOS} in one call; nothing was sent",
            parsed.len()
        )));
    }
    if let Some(blocked) = parsed.iter().find(|c| desktop.blocked().blocks(c)) {
        tracing::warn!(plugin = &*state.plugin, combo = %blocked, "blocked key combo refused");
        return Err(DesktopError::Denied(format!(
            "the key combo `{blocked}` is blocked by the host's configuration ([desktop] blocked_keys); nothing was sent"
        )));
    }
    Ok(parsed)
}
