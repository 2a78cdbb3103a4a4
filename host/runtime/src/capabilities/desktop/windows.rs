//! Top-level windows on X11: which ones there are, what they say about
//! themselves, which one has the focus, and how to give it to one.
//!
//! Two worlds: with a window manager that speaks EWMH the client list and the
//! active window come from root properties and activation is a request to the
//! manager (`_NET_ACTIVE_WINDOW`); on a bare X server the top-level windows are
//! the mapped children of the root and activation is a plain raise plus
//! `SetInputFocus`. A manager without EWMH is handled like a bare server, with
//! clients found below their frames by `WM_STATE` (as ICCCM tools do).

use std::thread;
use std::time::{Duration, Instant};

use x11rb::CURRENT_TIME;
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{
    AtomEnum, ClientMessageEvent, ConfigureWindowAux, ConnectionExt as _, EventMask,
    GetPropertyReply, InputFocus, MapState, StackMode, Window,
};

use x11rb::rust_connection::RustConnection;

use super::error::{DesktopFailure, DesktopResult};
use super::x11::X11;
use super::{Rect, WindowInfo};

/// How long activation waits for the focus to arrive.
const ACTIVATE_WAIT: Duration = Duration::from_millis(1500);
/// How deep below a root child a client window is looked for.
const FRAME_DEPTH: usize = 3;

impl X11 {
    /// The window manager's name, if one runs and speaks EWMH.
    pub(crate) fn window_manager(&self) -> DesktopResult<Option<String>> {
        let Some(&check) = self
            .prop32(self.root, self.atoms._NET_SUPPORTING_WM_CHECK)?
            .first()
        else {
            return Ok(None);
        };
        // A stale property from a manager that has gone points at a window that
        // no longer names itself.
        match self.prop32(check, self.atoms._NET_SUPPORTING_WM_CHECK) {
            Ok(again) if again.first() == Some(&check) => {
                let name = self.prop_text(check, self.atoms._NET_WM_NAME, true)?;
                Ok(Some(if name.is_empty() {
                    "unnamed".into()
                } else {
                    name
                }))
            }
            _ => Ok(None),
        }
    }

    /// Client windows, bottom to top.
    pub(crate) fn client_windows(&self) -> DesktopResult<Vec<Window>> {
        if self.window_manager()?.is_some() {
            let mut list = self.prop32(self.root, self.atoms._NET_CLIENT_LIST_STACKING)?;
            if list.is_empty() {
                list = self.prop32(self.root, self.atoms._NET_CLIENT_LIST)?;
            }
            let mut mapped = Vec::with_capacity(list.len());
            for w in list {
                if self.is_viewable(w)? {
                    mapped.push(w);
                }
            }
            return Ok(mapped);
        }
        let tree = self.conn.query_tree(self.root)?.reply()?;
        // Every root child's attributes and marks asked at once: one round
        // trip for the lot instead of several per window (a click without a
        // target lists the windows to learn which one it hit).
        let mut asked = Vec::with_capacity(tree.children.len());
        for &child in &tree.children {
            asked.push((
                child,
                self.conn.get_window_attributes(child)?,
                self.prop_cookie(child, self.atoms.WM_STATE)?,
                self.prop_cookie(child, AtomEnum::WM_CLASS.into())?,
                self.prop_cookie(child, AtomEnum::WM_NAME.into())?,
            ));
        }
        let mut clients = Vec::new();
        for (child, attrs, state, class, name) in asked {
            let present = |c: x11rb::cookie::Cookie<'_, RustConnection, GetPropertyReply>| {
                c.reply().is_ok_and(|r| !r.value.is_empty())
            };
            let (state, class, name) = (present(state), present(class), present(name));
            let Ok(attrs) = attrs.reply() else {
                continue; // destroyed meanwhile
            };
            if attrs.map_state != MapState::VIEWABLE || attrs.override_redirect {
                continue;
            }
            // A window that names itself is the client on a bare server; a
            // nameless one may be the frame of a manager without EWMH, with
            // the client (marked by WM_STATE) below it. Only those are
            // searched: an Xt window has dozens of children.
            if state || class || name {
                clients.push(child);
            } else if let Some(client) = self.find_client(child, FRAME_DEPTH)? {
                clients.push(client);
            }
        }
        Ok(clients)
    }

    fn is_viewable(&self, window: Window) -> DesktopResult<bool> {
        Ok(match self.conn.get_window_attributes(window)?.reply() {
            Ok(attrs) => attrs.map_state == MapState::VIEWABLE,
            Err(_) => false,
        })
    }

    /// The window at or below `window` that carries `WM_STATE` (set by a
    /// manager on the clients it manages).
    fn find_client(&self, window: Window, depth: usize) -> DesktopResult<Option<Window>> {
        if !self.prop_bytes(window, self.atoms.WM_STATE)?.is_empty() {
            return Ok(Some(window));
        }
        if depth == 0 {
            return Ok(None);
        }
        let Ok(tree) = self.conn.query_tree(window)?.reply() else {
            return Ok(None);
        };
        for child in tree.children {
            if let Some(found) = self.find_client(child, depth - 1)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The root child that holds `window` (its frame under a manager, itself on
    /// a bare server).
    pub(crate) fn toplevel_of(&self, window: Window) -> DesktopResult<Window> {
        let mut current = window;
        loop {
            let tree = self.conn.query_tree(current)?.reply().map_err(|_| {
                DesktopFailure::WorldMoved(format!("window 0x{window:x} no longer exists"))
            })?;
            if tree.parent == self.root || tree.parent == x11rb::NONE {
                return Ok(current);
            }
            current = tree.parent;
        }
    }

    /// What `window` covers on screen with the window manager's frame: its
    /// client area, the root child holding it (the frame of a reparenting
    /// manager, borders included), and `_NET_FRAME_EXTENTS` around the client
    /// where the manager sets them.
    pub(crate) fn frame_of(&self, window: Window, client: Rect) -> DesktopResult<Rect> {
        let mut frame = client;
        let top = self.toplevel_of(window)?;
        if top != window
            && let Ok(g) = self.conn.get_geometry(top)?.reply()
        {
            let border = u32::from(g.border_width) * 2;
            frame = union(
                frame,
                Rect {
                    x: i32::from(g.x),
                    y: i32::from(g.y),
                    width: u32::from(g.width) + border,
                    height: u32::from(g.height) + border,
                },
            );
        }
        if let [left, right, top, bottom] = self.prop32(window, self.atoms._NET_FRAME_EXTENTS)?[..]
        {
            // Extents are a few dozen pixels; anything else is not believed.
            let sane = |v: u32| v.min(1_000);
            let (l, r, t, b) = (sane(left), sane(right), sane(top), sane(bottom));
            frame = union(
                frame,
                Rect {
                    x: client.x - l as i32,
                    y: client.y - t as i32,
                    width: client.width + l + r,
                    height: client.height + t + b,
                },
            );
        }
        Ok(frame)
    }

    /// The client window that has the input focus.
    pub(crate) fn focused_client(&self) -> DesktopResult<Option<Window>> {
        if self.window_manager()?.is_some()
            && let Some(&active) = self
                .prop32(self.root, self.atoms._NET_ACTIVE_WINDOW)?
                .first()
            && active != x11rb::NONE
        {
            return Ok(Some(active));
        }
        let focus = self.conn.get_input_focus()?.reply()?.focus;
        // 0 is None and 1 is PointerRoot: nobody in particular has it.
        if focus <= 1 || focus == self.root {
            return Ok(None);
        }
        let clients = self.client_windows()?;
        let mut current = focus;
        // Focus often sits on a child of the client (Tk's focus proxy); walk up.
        loop {
            if clients.contains(&current) {
                return Ok(Some(current));
            }
            let Ok(tree) = self.conn.query_tree(current)?.reply() else {
                return Ok(None);
            };
            if tree.parent == self.root || tree.parent == x11rb::NONE {
                // A top-level window that is not a listed client: report it anyway.
                return Ok(Some(current));
            }
            current = tree.parent;
        }
    }

    /// Everything about one window; `not-found` when it is gone.
    pub(crate) fn window_info(
        &self,
        window: Window,
        focused: Option<Window>,
    ) -> DesktopResult<WindowInfo> {
        let gone = || DesktopFailure::NotFound(format!("window 0x{window:x} does not exist"));
        let geometry = self
            .conn
            .get_geometry(window)?
            .reply()
            .map_err(|_| gone())?;
        let origin = self
            .conn
            .translate_coordinates(window, self.root, 0, 0)?
            .reply()
            .map_err(|_| gone())?;
        let mut title = self.prop_text(window, self.atoms._NET_WM_NAME, true)?;
        if title.is_empty() {
            title = self.prop_text(window, AtomEnum::WM_NAME.into(), false)?;
        }
        let class_bytes = self.prop_bytes(window, AtomEnum::WM_CLASS.into())?;
        let mut parts = class_bytes
            .split(|&b| b == 0)
            .map(|p| p.iter().map(|&b| char::from(b)).collect::<String>());
        let instance = parts.next().unwrap_or_default();
        let class = parts.next().unwrap_or_default();
        let pid = self
            .prop32(window, self.atoms._NET_WM_PID)?
            .first()
            .copied();
        Ok(WindowInfo {
            id: window,
            title,
            class,
            instance,
            pid,
            geometry: Rect {
                x: i32::from(origin.dst_x),
                y: i32::from(origin.dst_y),
                width: u32::from(geometry.width),
                height: u32::from(geometry.height),
            },
            focused: focused == Some(window),
        })
    }

    /// Every client window with its details, bottom to top.
    pub(crate) fn list_windows(&self) -> DesktopResult<Vec<WindowInfo>> {
        let focused = self.focused_client()?;
        let mut out = Vec::new();
        for w in self.client_windows()? {
            match self.window_info(w, focused) {
                Ok(info) => out.push(info),
                // Closed while we looked: not an error of the listing.
                Err(DesktopFailure::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Raises `window` and gives it the focus; waits until the focus is there.
    pub(crate) fn activate(&self, window: Window) -> DesktopResult<WindowInfo> {
        // Fails with not-found before anything is sent.
        self.window_info(window, None)?;
        let manager = self.window_manager()?;
        if manager.is_some() {
            if !self.is_viewable(window)? {
                self.conn.map_window(window)?;
            }
            // Source indication 2 ("pager"): the request comes on the user's
            // behalf, so focus-stealing prevention lets it through.
            let event = ClientMessageEvent::new(
                32,
                window,
                self.atoms._NET_ACTIVE_WINDOW,
                [2, CURRENT_TIME, 0, 0, 0],
            );
            self.conn.send_event(
                false,
                self.root,
                EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                event,
            )?;
        } else {
            self.raise_and_focus(window)?;
        }
        self.conn.flush()?;
        let deadline = Instant::now() + ACTIVATE_WAIT;
        let mut focused_directly = manager.is_none();
        loop {
            let focused = self.focused_client()?;
            if focused == Some(window) {
                return self.window_info(window, focused);
            }
            if Instant::now() >= deadline {
                let holder = match focused {
                    Some(w) => self
                        .window_info(w, None)
                        .map(|i| format!("{:?}", i.title))
                        .unwrap_or_else(|_| format!("0x{w:x}")),
                    None => "no window".into(),
                };
                return Err(DesktopFailure::Failed(format!(
                    "window 0x{window:x} did not get the focus within {} ms ({} has it; window manager: {})",
                    ACTIVATE_WAIT.as_millis(),
                    holder,
                    manager.as_deref().unwrap_or("none")
                )));
            }
            // A manager that ignores the request still lets a client set focus
            // itself: try that once, halfway through the wait.
            if !focused_directly && deadline - Instant::now() < ACTIVATE_WAIT / 2 {
                self.raise_and_focus(window)?;
                focused_directly = true;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn raise_and_focus(&self, window: Window) -> DesktopResult<()> {
        let top = self.toplevel_of(window)?;
        self.conn
            .configure_window(top, &ConfigureWindowAux::new().stack_mode(StackMode::ABOVE))?;
        self.conn
            .set_input_focus(InputFocus::PARENT, window, CURRENT_TIME)?;
        self.sync()
    }

    /// The top-most viewable root child under the point (stacking order is
    /// bottom to top in QueryTree).
    pub(crate) fn toplevel_at(&self, x: i32, y: i32) -> DesktopResult<Option<Window>> {
        let tree = self.conn.query_tree(self.root)?.reply()?;
        for child in tree.children.into_iter().rev() {
            let Ok(attrs) = self.conn.get_window_attributes(child)?.reply() else {
                continue;
            };
            if attrs.map_state != MapState::VIEWABLE {
                continue;
            }
            let Ok(g) = self.conn.get_geometry(child)?.reply() else {
                continue;
            };
            let (left, top) = (i32::from(g.x), i32::from(g.y));
            let border = i32::from(g.border_width) * 2;
            let right = left + i32::from(g.width) + border;
            let bottom = top + i32::from(g.height) + border;
            if (left..right).contains(&x) && (top..bottom).contains(&y) {
                return Ok(Some(child));
            }
        }
        Ok(None)
    }
}

/// The smallest rectangle holding both.
fn union(a: Rect, b: Rect) -> Rect {
    let left = a.x.min(b.x);
    let top = a.y.min(b.y);
    let right = (i64::from(a.x) + i64::from(a.width)).max(i64::from(b.x) + i64::from(b.width));
    let bottom = (i64::from(a.y) + i64::from(a.height)).max(i64::from(b.y) + i64::from(b.height));
    Rect {
        x: left,
        y: top,
        width: (right - i64::from(left)).clamp(0, i64::from(u32::MAX)) as u32,
        height: (bottom - i64::from(top)).clamp(0, i64::from(u32::MAX)) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_holds_both() {
        let client = Rect {
            x: 10,
            y: 30,
            width: 100,
            height: 50,
        };
        let frame = Rect {
            x: 9,
            y: 10,
            width: 102,
            height: 71,
        };
        assert_eq!(union(client, frame), frame);
        assert_eq!(
            union(
                client,
                Rect {
                    x: 200,
                    y: 0,
                    width: 1,
                    height: 1
                }
            ),
            Rect {
                x: 10,
                y: 0,
                width: 191,
                height: 80
            }
        );
    }
}
