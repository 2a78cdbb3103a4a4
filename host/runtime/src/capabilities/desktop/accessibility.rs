//! The `accessibility` capability: the desktop's applications' accessibility
//! trees over AT-SPI (D-Bus), for reading a window by role and name and for
//! actions that do not depend on where an element is drawn.
//!
//! - One connection to the accessibility bus per host, opened on first use
//!   (the session bus says where it is: `org.a11y.Bus.GetAddress`, or
//!   `AT_SPI_BUS_ADDRESS` when set) and dropped when a call finds it broken.
//!   A failed connect is remembered for [`RETRY_AFTER`], so `status` stays
//!   cheap on a desktop without one.
//! - An X window is matched to its application's top-level accessible: the
//!   application whose process owns the window (`_NET_WM_PID` against the
//!   bus peer's process), then the top-level child with the window's title,
//!   breaking ties by how well its extents cover the window.
//! - Every answer is bounded before it is kept: names and values are cut,
//!   a walk stops at `max-depth` and `max-elements`, and every bus operation
//!   has a deadline ([`CALL_TIMEOUT`]) so a hung application cannot hold a
//!   step past it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use atspi_common::{CoordType, Interface, InterfaceSet, ObjectRefOwned, StateSet};
use atspi_proxies::accessible::AccessibleProxy;
use atspi_proxies::action::ActionProxy;
use atspi_proxies::bus::BusProxy;
use atspi_proxies::component::ComponentProxy;
use atspi_proxies::editable_text::EditableTextProxy;
use atspi_proxies::text::TextProxy;
use atspi_proxies::value::ValueProxy;
use futures_util::future::join_all;
use zbus::names::BusName;

use super::error::{DesktopFailure, DesktopResult};
use super::{Rect, WindowInfo};

/// How long a failed connect is remembered before the next call tries again.
const RETRY_AFTER: Duration = Duration::from_secs(2);
/// Longest one operation (a walk, an action) may take on the bus.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest name or description kept, in characters.
const MAX_NAME_CHARS: usize = 1_000;
/// Longest text value kept, in characters.
const MAX_VALUE_CHARS: usize = 4_096;
/// Most elements one walk returns, whatever the caller asks.
pub(crate) const MAX_ELEMENTS: u32 = 5_000;
/// Deepest walk, whatever the caller asks.
pub(crate) const MAX_DEPTH: u32 = 64;
/// How many elements are read from the bus at once during a walk.
const WALK_BATCH: usize = 64;
/// The path of the registry's desktop object, whose children are the
/// applications.
const ROOT_PATH: &str = "/org/a11y/atspi/accessible/root";
const REGISTRY: &str = "org.a11y.atspi.Registry";

/// What to start where there is no accessibility bus.
const HOW_TO_START: &str = "run the desktop inside a D-Bus session (e.g. dbus-run-session) with \
    at-spi2-core installed, so org.a11y.Bus can start; GTK applications then export their tree, \
    Qt ones with QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1";

/// One element, as the WIT `element` says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Element {
    pub(crate) path: String,
    pub(crate) role: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) value: Option<String>,
    pub(crate) states: Vec<String>,
    pub(crate) actions: Vec<String>,
    pub(crate) bounds: Option<Rect>,
    pub(crate) editable: bool,
    pub(crate) child_count: u32,
}

/// A window's elements.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    pub(crate) application: String,
    pub(crate) elements: Vec<Element>,
    pub(crate) truncated: bool,
}

/// The host-wide accessibility service.
#[derive(Default)]
pub(crate) struct Accessibility {
    state: tokio::sync::Mutex<Link>,
    /// Which accessible each window was last matched to, so an action needs
    /// one round trip to confirm it instead of a search of every application.
    roots: std::sync::Mutex<HashMap<u32, Root>>,
}

/// A window's match: its title then, its application's name, the accessible.
#[derive(Clone)]
struct Root {
    title: String,
    application: String,
    object: ObjectRefOwned,
}

/// Most windows whose match is remembered.
const MAX_ROOTS: usize = 256;

#[derive(Default)]
enum Link {
    #[default]
    Unopened,
    Open(zbus::Connection),
    /// The last connect failed: why, and when.
    Failed(String, Instant),
}

impl Accessibility {
    /// The bus connection, opened or re-opened as needed.
    async fn connection(&self) -> DesktopResult<zbus::Connection> {
        let mut link = self.state.lock().await;
        match &*link {
            Link::Open(conn) => return Ok(conn.clone()),
            Link::Failed(why, at) if at.elapsed() < RETRY_AFTER => {
                return Err(DesktopFailure::Unsupported(why.clone()));
            }
            _ => {}
        }
        match tokio::time::timeout(CALL_TIMEOUT, connect()).await {
            Ok(Ok(conn)) => {
                *link = Link::Open(conn.clone());
                Ok(conn)
            }
            Ok(Err(why)) => {
                tracing::info!("no accessibility bus: {why}");
                *link = Link::Failed(why.clone(), Instant::now());
                Err(DesktopFailure::Unsupported(why))
            }
            Err(_) => {
                let why = format!(
                    "the accessibility bus did not answer within {} s; {HOW_TO_START}",
                    CALL_TIMEOUT.as_secs()
                );
                *link = Link::Failed(why.clone(), Instant::now());
                Err(DesktopFailure::Unsupported(why))
            }
        }
    }

    /// Runs `work` on the bus within [`CALL_TIMEOUT`]; a bus error drops the
    /// connection so the next call opens a new one.
    async fn on_bus<T, F>(&self, work: impl FnOnce(zbus::Connection) -> F) -> DesktopResult<T>
    where
        F: Future<Output = Result<T, Fault>>,
    {
        let conn = self.connection().await?;
        match tokio::time::timeout(CALL_TIMEOUT, work(conn)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(Fault::Desktop(failure))) => Err(failure),
            Ok(Err(Fault::Bus(e))) => {
                if matches!(e, zbus::Error::InputOutput(_)) {
                    *self.state.lock().await = Link::Unopened;
                }
                Err(DesktopFailure::Failed(format!("accessibility bus: {e}")))
            }
            Err(_) => Err(DesktopFailure::Failed(format!(
                "the application did not answer on the accessibility bus within {} s",
                CALL_TIMEOUT.as_secs()
            ))),
        }
    }

    /// `window`'s top-level accessible: the remembered match when it still
    /// answers with the window's title, else a fresh search.
    async fn root(
        &self,
        conn: &zbus::Connection,
        window: &WindowInfo,
    ) -> Result<(String, ObjectRefOwned), Fault> {
        let cached = self
            .roots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&window.id)
            .cloned();
        if let Some(root) = cached
            && root.title == window.title
            && let Ok(proxy) = accessible(conn, &root.object).await
            && proxy
                .name()
                .await
                .is_ok_and(|n| n.trim() == window.title.trim())
        {
            return Ok((root.application, root.object));
        }
        let (application, object) = window_root(conn, window).await?;
        let mut roots = self.roots.lock().unwrap_or_else(|e| e.into_inner());
        if roots.len() >= MAX_ROOTS {
            roots.clear();
        }
        roots.insert(
            window.id,
            Root {
                title: window.title.clone(),
                application: application.clone(),
                object: object.clone(),
            },
        );
        Ok((application, object))
    }

    /// Whether the bus can be reached.
    pub(crate) async fn status(&self) -> DesktopResult<()> {
        self.connection().await.map(drop)
    }

    /// `window`'s tree, depth first.
    pub(crate) async fn tree(
        &self,
        window: &WindowInfo,
        max_depth: u32,
        max_elements: u32,
    ) -> DesktopResult<Tree> {
        let max_depth = max_depth.min(MAX_DEPTH);
        let max_elements = max_elements.clamp(1, MAX_ELEMENTS) as usize;
        self.on_bus(|conn| async move {
            let (application, root) = self.root(&conn, window).await?;
            let (elements, truncated) = walk(&conn, root, max_depth, max_elements).await?;
            Ok(Tree {
                application,
                elements,
                truncated,
            })
        })
        .await
    }

    /// One element of `window`, read now.
    pub(crate) async fn element(&self, window: &WindowInfo, path: &str) -> DesktopResult<Element> {
        let steps = parse_path(path)?;
        self.on_bus(|conn| async move {
            let (_, root) = self.root(&conn, window).await?;
            let object = descend(&conn, root, &steps, path).await?;
            read(&conn, &object, path.to_owned()).await
        })
        .await
    }

    /// Runs an action of the element at `path`.
    pub(crate) async fn do_action(
        &self,
        window: &WindowInfo,
        path: &str,
        action: Option<&str>,
        expect_name: Option<&str>,
    ) -> DesktopResult<Element> {
        let steps = parse_path(path)?;
        self.on_bus(|conn| async move {
            let (_, root) = self.root(&conn, window).await?;
            let object = descend(&conn, root, &steps, path).await?;
            let element = read(&conn, &object, path.to_owned()).await?;
            check_name(&element, expect_name)?;
            let names = &element.actions;
            let index = match action {
                None if names.is_empty() => {
                    return Err(Fault::Desktop(DesktopFailure::Invalid(format!(
                        "the {} `{}` at {path} offers no action; nothing was done",
                        element.role, element.name
                    ))));
                }
                None => 0,
                Some(wanted) => names
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(wanted))
                    .ok_or_else(|| {
                        Fault::Desktop(DesktopFailure::Invalid(format!(
                            "the {} `{}` at {path} has no action `{wanted}` (it has: {}); nothing was done",
                            element.role,
                            element.name,
                            list_or_none(names)
                        )))
                    })?,
            };
            let proxy: ActionProxy<'_> = proxy(&conn, &object).await?;
            match proxy.do_action(index as i32).await {
                Ok(true) => {}
                Ok(false) => {
                    return Err(Fault::Desktop(DesktopFailure::Failed(format!(
                        "the application refused the action `{}` of the {} `{}`",
                        names[index], element.role, element.name
                    ))));
                }
                // A button that closes its window (a dialog's OK) can take the
                // application with it before the reply is sent: done, and gone.
                Err(e) if vanished(&e) => return Ok(defunct(element)),
                Err(e) => return Err(e.into()),
            }
            after(&conn, &object, element).await
        })
        .await
    }

    /// Replaces the text (or sets the value) of the element at `path`.
    pub(crate) async fn set_text(
        &self,
        window: &WindowInfo,
        path: &str,
        text: &str,
        expect_name: Option<&str>,
    ) -> DesktopResult<Element> {
        let steps = parse_path(path)?;
        self.on_bus(|conn| async move {
            let (_, root) = self.root(&conn, window).await?;
            let object = descend(&conn, root, &steps, path).await?;
            let (element, interfaces) =
                read_with_interfaces(&conn, &object, path.to_owned()).await?;
            check_name(&element, expect_name)?;
            if interfaces.contains(Interface::EditableText) {
                let proxy: EditableTextProxy<'_> = proxy(&conn, &object).await?;
                if !proxy.set_text_contents(text).await? {
                    return Err(Fault::Desktop(DesktopFailure::Failed(format!(
                        "the application refused new text for the {} `{}` (is it read-only?)",
                        element.role, element.name
                    ))));
                }
            } else if interfaces.contains(Interface::Value) {
                let number: f64 = text.trim().parse().map_err(|_| {
                    Fault::Desktop(DesktopFailure::Invalid(format!(
                        "the {} `{}` at {path} takes a number, not `{text}`; nothing was done",
                        element.role, element.name
                    )))
                })?;
                let proxy: ValueProxy<'_> = proxy(&conn, &object).await?;
                proxy.set_current_value(number).await?;
            } else {
                return Err(Fault::Desktop(DesktopFailure::Invalid(format!(
                    "the {} `{}` at {path} has no text to set (not editable); nothing was done",
                    element.role, element.name
                ))));
            }
            after(&conn, &object, element).await
        })
        .await
    }
}

/// The element as it is after an action, or as it was with the `defunct`
/// state (AT-SPI's own word for a destroyed object) when the action removed
/// it or its application.
async fn after(
    conn: &zbus::Connection,
    object: &ObjectRefOwned,
    before: Element,
) -> Result<Element, Fault> {
    match read(conn, object, before.path.clone()).await {
        Ok(now) => Ok(now),
        Err(Fault::Bus(e)) if vanished(&e) => Ok(defunct(before)),
        Err(other) => Err(other),
    }
}

fn defunct(mut element: Element) -> Element {
    element.states.retain(|s| s != "showing" && s != "visible");
    element.states.push("defunct".into());
    element
}

/// Whether a bus error says the object or its application is gone.
fn vanished(e: &zbus::Error) -> bool {
    const GONE: [&str; 4] = [
        "org.freedesktop.DBus.Error.NoReply",
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.UnknownObject",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
    ];
    match e {
        zbus::Error::MethodError(name, _, _) => GONE.contains(&name.as_str()),
        zbus::Error::FDO(e) => matches!(
            **e,
            zbus::fdo::Error::NoReply(_)
                | zbus::fdo::Error::ServiceUnknown(_)
                | zbus::fdo::Error::UnknownObject(_)
                | zbus::fdo::Error::NameHasNoOwner(_)
        ),
        _ => false,
    }
}

/// What went wrong on the way: a desktop answer, or the bus itself.
enum Fault {
    Desktop(DesktopFailure),
    Bus(zbus::Error),
}

impl From<zbus::Error> for Fault {
    fn from(e: zbus::Error) -> Self {
        Self::Bus(e)
    }
}

impl From<zbus::fdo::Error> for Fault {
    fn from(e: zbus::fdo::Error) -> Self {
        Self::Bus(e.into())
    }
}

impl From<atspi_common::AtspiError> for Fault {
    fn from(e: atspi_common::AtspiError) -> Self {
        Self::Desktop(DesktopFailure::Failed(format!("accessibility bus: {e}")))
    }
}

impl From<DesktopFailure> for Fault {
    fn from(f: DesktopFailure) -> Self {
        Self::Desktop(f)
    }
}

/// Opens the accessibility bus: `AT_SPI_BUS_ADDRESS`, else the address the
/// session bus's `org.a11y.Bus` gives.
async fn connect() -> Result<zbus::Connection, String> {
    let address = match std::env::var("AT_SPI_BUS_ADDRESS") {
        Ok(address) if !address.trim().is_empty() => address,
        _ => {
            if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
                return Err(format!(
                    "no accessibility bus: DBUS_SESSION_BUS_ADDRESS is not set; {HOW_TO_START}"
                ));
            }
            let session = zbus::Connection::session().await.map_err(|e| {
                format!("no accessibility bus: the D-Bus session bus: {e}; {HOW_TO_START}")
            })?;
            let bus = BusProxy::new(&session)
                .await
                .map_err(|e| format!("no accessibility bus: {e}; {HOW_TO_START}"))?;
            bus.get_address().await.map_err(|e| {
                format!("no accessibility bus: the session bus has no org.a11y.Bus ({e}); {HOW_TO_START}")
            })?
        }
    };
    let address: zbus::Address = address
        .parse()
        .map_err(|e| format!("no accessibility bus: bad address `{address}`: {e}"))?;
    zbus::connection::Builder::address(address)
        .map_err(|e| format!("no accessibility bus: {e}"))?
        .build()
        .await
        .map_err(|e| format!("no accessibility bus: cannot connect: {e}; {HOW_TO_START}"))
}

/// A proxy of interface `P` for `object`, reading properties fresh each time
/// (an application's tree changes under us; a cache would answer stale).
async fn proxy<'a, P>(conn: &'a zbus::Connection, object: &'a ObjectRefOwned) -> Result<P, Fault>
where
    P: zbus::proxy::Defaults + From<zbus::Proxy<'a>>,
{
    Ok(zbus::proxy::Builder::<P>::new(conn)
        .destination(bus_name(object)?)?
        .path(object.path().clone())?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?)
}

fn bus_name(object: &ObjectRefOwned) -> Result<BusName<'static>, Fault> {
    object
        .name()
        .map(|n| BusName::from(n.clone()))
        .ok_or_else(|| {
            Fault::Desktop(DesktopFailure::Failed(
                "an element without a bus name".into(),
            ))
        })
}

async fn accessible<'a>(
    conn: &'a zbus::Connection,
    object: &'a ObjectRefOwned,
) -> Result<AccessibleProxy<'a>, Fault> {
    proxy(conn, object).await
}

/// How long a window may wait for its application to appear on the bus: a
/// GTK application registers a moment after its first window maps.
const REGISTER_GRACE: Duration = Duration::from_millis(1_500);

/// The application owning `window` and its top-level accessible for it,
/// allowing a just-mapped window's application [`REGISTER_GRACE`] to register.
async fn window_root(
    conn: &zbus::Connection,
    window: &WindowInfo,
) -> Result<(String, ObjectRefOwned), Fault> {
    let started = Instant::now();
    loop {
        match find_root(conn, window).await {
            Err(Fault::Desktop(DesktopFailure::Unsupported(_)))
                if started.elapsed() < REGISTER_GRACE =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

async fn find_root(
    conn: &zbus::Connection,
    window: &WindowInfo,
) -> Result<(String, ObjectRefOwned), Fault> {
    let desktop = AccessibleProxy::builder(conn)
        .destination(REGISTRY)?
        .path(ROOT_PATH)?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    let apps = desktop.get_children().await?;
    let dbus = zbus::fdo::DBusProxy::new(conn).await?;
    let mut best: Option<(i64, String, ObjectRefOwned)> = None;
    for app in apps {
        let Some(name) = app.name() else { continue };
        if let Some(pid) = window.pid {
            let owner = dbus
                .get_connection_unix_process_id(BusName::from(name.clone()))
                .await
                .ok();
            if owner != Some(pid) {
                continue;
            }
        }
        let app_proxy = accessible(conn, &app).await?;
        let app_name = cut(app_proxy.name().await.unwrap_or_default(), MAX_NAME_CHARS);
        for top in app_proxy.get_children().await.unwrap_or_default() {
            let score = match_score(conn, &top, window).await;
            if score > best.as_ref().map_or(0, |b| b.0) {
                best = Some((score, app_name.clone(), top));
            }
        }
    }
    match best {
        Some((_, app, top)) => Ok((app, top)),
        None => Err(Fault::Desktop(DesktopFailure::Unsupported(format!(
            "the window `{}` (class {}) has no accessibility tree: its application does not export \
             one on the accessibility bus (GTK applications do by themselves, Qt ones with \
             QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1; Xt and Tk do not)",
            window.title, window.class
        )))),
    }
}

/// How well a top-level accessible matches `window`: 0 is not at all; the
/// title counts most, the overlap of its extents with the window breaks ties.
async fn match_score(conn: &zbus::Connection, top: &ObjectRefOwned, window: &WindowInfo) -> i64 {
    let Ok(proxy) = accessible(conn, top).await else {
        return 0;
    };
    let name = proxy.name().await.unwrap_or_default();
    let mut score = 0;
    if !window.title.is_empty() && name.trim() == window.title.trim() {
        score += 1_000_000;
    } else if !window.title.is_empty()
        && !name.trim().is_empty()
        && window
            .title
            .to_lowercase()
            .contains(&name.trim().to_lowercase())
    {
        score += 100_000;
    }
    if let Some(bounds) = extents(conn, top).await
        && let Some(overlap) = bounds.intersect(&window.geometry)
    {
        let area = u64::from(window.geometry.width) * u64::from(window.geometry.height);
        let shared = u64::from(overlap.width) * u64::from(overlap.height);
        // Up to 1000 for a full cover.
        score += (shared * 1000).checked_div(area).unwrap_or(0) as i64;
    }
    score
}

async fn extents(conn: &zbus::Connection, object: &ObjectRefOwned) -> Option<Rect> {
    let proxy: ComponentProxy<'_> = proxy(conn, object).await.ok()?;
    let (x, y, width, height) = proxy.get_extents(CoordType::Screen).await.ok()?;
    (width > 0 && height > 0).then_some(Rect {
        x,
        y,
        width: width as u32,
        height: height as u32,
    })
}

/// `0/2/1` as child indexes; `""` is the root.
fn parse_path(path: &str) -> DesktopResult<Vec<i32>> {
    let path = path.trim().trim_matches('/');
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let steps: Vec<&str> = path.split('/').collect();
    if steps.len() > MAX_DEPTH as usize {
        return Err(DesktopFailure::Invalid(format!(
            "the path `{path}` is deeper than {MAX_DEPTH} levels"
        )));
    }
    steps
        .iter()
        .map(|s| {
            s.parse::<u16>().map(i32::from).map_err(|_| {
                DesktopFailure::Invalid(format!(
                    "the path `{path}` is not child indexes joined by `/` (such as 0/2/1): `{s}`"
                ))
            })
        })
        .collect()
}

/// Follows `steps` down from `root`.
async fn descend(
    conn: &zbus::Connection,
    root: ObjectRefOwned,
    steps: &[i32],
    path: &str,
) -> Result<ObjectRefOwned, Fault> {
    let mut object = root;
    for (depth, &index) in steps.iter().enumerate() {
        let proxy = accessible(conn, &object).await?;
        // One round trip per level when the index exists; the count only
        // for saying why it does not.
        let child = proxy.get_child_at_index(index).await;
        if let Ok(child) = child
            && !child.is_null()
        {
            drop(proxy);
            object = child;
            continue;
        }
        let count = proxy.child_count().await?;
        let walked = steps[..depth]
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join("/");
        return Err(Fault::Desktop(DesktopFailure::NotFound(format!(
            "no element at {path}: the element at `{walked}` has {count} children (the window changed, or the path is from another window); list the elements again"
        ))));
    }
    Ok(object)
}

/// Walks the tree under `root`, breadth by level but listed depth first.
async fn walk(
    conn: &zbus::Connection,
    root: ObjectRefOwned,
    max_depth: u32,
    max_elements: usize,
) -> Result<(Vec<Element>, bool), Fault> {
    // (object, path, depth) of the level being read.
    let mut level = vec![(root, String::new())];
    let mut depth = 0u32;
    // Each element with its children's positions in `read`, to list depth first.
    let mut nodes: Vec<(Element, Vec<usize>)> = Vec::new();
    let mut parents_of_level: Vec<Option<usize>> = vec![None];
    let mut truncated = false;
    while !level.is_empty() {
        let mut next = Vec::new();
        let mut next_parents = Vec::new();
        for (chunk, parents) in level
            .chunks(WALK_BATCH)
            .zip(parents_of_level.chunks(WALK_BATCH))
        {
            let reads = join_all(chunk.iter().map(|(object, path)| {
                read_with_children(conn, object, path.clone(), depth < max_depth)
            }))
            .await;
            for (result, parent) in reads.into_iter().zip(parents) {
                // An element that vanished mid-walk is left out, not fatal.
                let Ok((element, children)) = result else {
                    continue;
                };
                if nodes.len() >= max_elements {
                    truncated = true;
                    break;
                }
                if depth >= max_depth && element.child_count > 0 {
                    truncated = true;
                }
                let me = nodes.len();
                let path = element.path.clone();
                nodes.push((element, Vec::new()));
                if let Some(parent) = parent {
                    nodes[*parent].1.push(me);
                }
                for (i, child) in children.into_iter().enumerate() {
                    let child_path = if path.is_empty() {
                        i.to_string()
                    } else {
                        format!("{path}/{i}")
                    };
                    next.push((child, child_path));
                    next_parents.push(Some(me));
                }
            }
            if truncated && nodes.len() >= max_elements {
                break;
            }
        }
        if nodes.len() >= max_elements {
            truncated |= !next.is_empty();
            break;
        }
        level = next;
        parents_of_level = next_parents;
        depth += 1;
    }
    // Depth first from the root (index 0).
    let mut order = Vec::with_capacity(nodes.len());
    let mut stack = if nodes.is_empty() { vec![] } else { vec![0] };
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(nodes[i].1.iter().rev());
    }
    let mut slots: Vec<Option<Element>> = nodes.into_iter().map(|(e, _)| Some(e)).collect();
    let elements = order.into_iter().filter_map(|i| slots[i].take()).collect();
    Ok((elements, truncated))
}

async fn read_with_children(
    conn: &zbus::Connection,
    object: &ObjectRefOwned,
    path: String,
    with_children: bool,
) -> Result<(Element, Vec<ObjectRefOwned>), Fault> {
    let element = read(conn, object, path).await?;
    let children = if with_children && element.child_count > 0 {
        accessible(conn, object).await?.get_children().await?
    } else {
        Vec::new()
    };
    Ok((element, children))
}

/// Reads one element; its interface-specific parts concurrently.
async fn read(
    conn: &zbus::Connection,
    object: &ObjectRefOwned,
    path: String,
) -> Result<Element, Fault> {
    Ok(read_with_interfaces(conn, object, path).await?.0)
}

/// [`read`], with the interfaces the element implements.
async fn read_with_interfaces(
    conn: &zbus::Connection,
    object: &ObjectRefOwned,
    path: String,
) -> Result<(Element, InterfaceSet), Fault> {
    let proxy = accessible(conn, object).await?;
    let (name, role, description, states, interfaces, child_count) = futures_util::join!(
        proxy.name(),
        proxy.get_role_name(),
        proxy.description(),
        proxy.get_state(),
        proxy.get_interfaces(),
        proxy.child_count(),
    );
    let interfaces = interfaces?;
    let states = states.unwrap_or_else(|_| StateSet::empty());
    let (actions, bounds, value) = futures_util::join!(
        actions(conn, object, interfaces),
        async {
            if interfaces.contains(Interface::Component) {
                extents(conn, object).await
            } else {
                None
            }
        },
        value(conn, object, interfaces),
    );
    let element = Element {
        path,
        role: role?,
        name: cut(name.unwrap_or_default(), MAX_NAME_CHARS),
        description: cut(description.unwrap_or_default(), MAX_NAME_CHARS),
        value,
        states: states
            .iter()
            .map(|s| s.to_static_str().to_owned())
            .collect(),
        actions,
        bounds,
        editable: interfaces.contains(Interface::EditableText)
            && states.contains(atspi_common::State::Editable),
        child_count: u32::try_from(child_count.unwrap_or(0)).unwrap_or(0),
    };
    Ok((element, interfaces))
}

async fn actions(
    conn: &zbus::Connection,
    object: &ObjectRefOwned,
    interfaces: InterfaceSet,
) -> Vec<String> {
    if !interfaces.contains(Interface::Action) {
        return Vec::new();
    }
    match proxy::<ActionProxy<'_>>(conn, object).await {
        Ok(proxy) => proxy
            .get_actions()
            .await
            .map(|list| {
                list.into_iter()
                    .take(32)
                    .map(|a| cut(a.name, 100))
                    .collect()
            })
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// Its text (first [`MAX_VALUE_CHARS`]) or numeric value.
async fn value(
    conn: &zbus::Connection,
    object: &ObjectRefOwned,
    interfaces: InterfaceSet,
) -> Option<String> {
    if interfaces.contains(Interface::Text) {
        let proxy: TextProxy<'_> = proxy(conn, object).await.ok()?;
        let count = proxy.character_count().await.ok()?;
        let end = count.clamp(0, MAX_VALUE_CHARS as i32);
        let text = proxy.get_text(0, end).await.ok()?;
        return Some(cut(text, MAX_VALUE_CHARS));
    }
    if interfaces.contains(Interface::Value) {
        let proxy: ValueProxy<'_> = proxy(conn, object).await.ok()?;
        let value = proxy.current_value().await.ok()?;
        return Some(value.to_string());
    }
    None
}

fn check_name(element: &Element, expect: Option<&str>) -> Result<(), Fault> {
    match expect {
        Some(want) if element.name.trim().to_lowercase() != want.trim().to_lowercase() => {
            Err(Fault::Desktop(DesktopFailure::WorldMoved(format!(
                "the element at {} is the {} `{}`, not `{}`; nothing was done (list the elements again)",
                element.path,
                element.role,
                element.name,
                want.trim()
            ))))
        }
        _ => Ok(()),
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// `text` cut to `max` characters.
fn cut(mut text: String, max: usize) -> String {
    if let Some((at, _)) = text.char_indices().nth(max) {
        text.truncate(at);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_child_indexes() {
        assert_eq!(parse_path("").ok(), Some(vec![]));
        assert_eq!(parse_path("0/2/1").ok(), Some(vec![0, 2, 1]));
        assert_eq!(parse_path("/0/3/").ok(), Some(vec![0, 3]));
        assert!(matches!(parse_path("0/x"), Err(DesktopFailure::Invalid(_))));
        assert!(matches!(parse_path("-1"), Err(DesktopFailure::Invalid(_))));
        let deep = vec!["0"; 65].join("/");
        assert!(matches!(parse_path(&deep), Err(DesktopFailure::Invalid(_))));
    }

    #[test]
    fn names_are_cut_on_characters() {
        assert_eq!(cut("héllo".into(), 2), "hé");
        assert_eq!(cut("ab".into(), 5), "ab");
    }

    #[test]
    fn the_expected_name_ignores_case_and_space() {
        let element = Element {
            path: "0/1".into(),
            role: "push button".into(),
            name: "OK".into(),
            description: String::new(),
            value: None,
            states: vec![],
            actions: vec!["click".into()],
            bounds: None,
            editable: false,
            child_count: 0,
        };
        assert!(check_name(&element, Some(" ok ")).is_ok());
        assert!(check_name(&element, None).is_ok());
        assert!(matches!(
            check_name(&element, Some("Cancel")),
            Err(Fault::Desktop(DesktopFailure::WorldMoved(_)))
        ));
    }
}
