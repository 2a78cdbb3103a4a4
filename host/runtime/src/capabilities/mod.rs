//! What the host lends plugins, and the per-instance state behind it.
//!
//! Every plugin gets a locked-down WASI p2 context (no files, no network, no
//! environment, no arguments: Rust guests import these interfaces even when they
//! use none; the exceptions are a `webdriver`-granted instance's own download
//! folder, lent read-only at `/downloads`, and the folders a grant lists, lent at
//! their own paths, see [`folders`]) and the `log` capability. Further capabilities
//! are linked only when granted ([`Grant`]); a plugin that imports an ungranted one
//! does not load.

pub(crate) mod desktop;
pub(crate) mod disk_quota;
pub(crate) mod folders;
pub(crate) mod http;
mod limiter;
mod log;
pub(crate) mod processes;
pub(crate) mod python;
mod quota_fs;
pub(crate) mod rf_library;
mod stderr;
pub(crate) mod webdriver;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

pub use self::disk_quota::{DiskLimits, DiskQuota, DiskUsage, QuotaExceeded};
pub use self::folders::{FolderError, FolderGrant};
pub use self::http::BadPattern;
pub(crate) use self::http::{AllowList, HostPattern, HttpGate};
pub use self::processes::{ProcessCaps, SessionProcesses, TenantProcesses};
pub use self::rf_library::RfLibrariesGrant;

pub(crate) use limiter::MemoryLimiter;
pub(crate) use stderr::StderrTail;

/// The pid of a child the host started (`Child::id`), as the OS takes it.
pub(crate) fn pid(id: Option<u32>) -> Option<rustix::process::Pid> {
    id.and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw)
}

/// Sends `signal` to the process group led by child `leader` (started with
/// `process_group(0)`), if it has one; a group already gone is no error.
pub(crate) fn signal_group(leader: Option<u32>, signal: rustix::process::Signal) {
    if let Some(pid) = pid(leader) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}
use stephost_contract::{ContractVersion, LogLine};

use crate::bindings;

/// A host capability that a plugin may import. The first part of an import name
/// decides which capability it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// WASI p2 basics (clocks, random, stdio, a filesystem holding only the
    /// granted folders): always granted.
    Wasi,
    /// `stephost:plugin/log`: always granted.
    Log,
    /// `wasi:http/outgoing-handler`: granted with an allow-list of destinations.
    Http,
    /// `stephost:plugin/screen`, `input` and `windows`: granted with `desktop = true`.
    Desktop,
    /// `stephost:plugin/webdriver`: a browser session, granted with `webdriver = true`.
    WebDriver,
    /// `stephost:plugin/rf-library` (0.4.0 on): Robot Framework libraries run by
    /// the host. Linked for every plugin; each call is refused unless
    /// `rf_libraries` lists the library.
    RfLibrary,
    /// `stephost:plugin/python` (0.5.0 on): expressions evaluated by CPython in
    /// a sandbox of the instance's own. Always granted: it reaches nothing.
    Python,
}

impl Capability {
    /// The capability an import needs from a component of contract `contract`,
    /// or `None` when the host offers nothing by that name. A stephost interface
    /// must be of the component's own contract version: the host links each
    /// version's interfaces for the components of that version.
    pub fn for_import(name: &str, contract: ContractVersion) -> Option<Self> {
        if let Some((_, version)) = ContractVersion::split(name)
            && version != Some(contract.as_str())
        {
            return None;
        }
        let unversioned = name.split('@').next().unwrap_or(name);
        match unversioned {
            "stephost:plugin/log" => Some(Self::Log),
            "stephost:plugin/types" => Some(Self::Log),
            "wasi:http/outgoing-handler" | "wasi:http/types" => Some(Self::Http),
            _ if desktop::is_desktop_import(unversioned) => Some(Self::Desktop),
            _ if webdriver::is_webdriver_import(unversioned) => Some(Self::WebDriver),
            _ if rf_library::is_rf_library_import(unversioned) => Some(Self::RfLibrary),
            _ if python::is_python_import(unversioned) => Some(Self::Python),
            _ if unversioned.starts_with("wasi:io/")
                || unversioned.starts_with("wasi:clocks/")
                || unversioned.starts_with("wasi:random/")
                || unversioned.starts_with("wasi:cli/")
                || unversioned.starts_with("wasi:filesystem/")
                || unversioned.starts_with("wasi:sockets/") =>
            {
                Some(Self::Wasi)
            }
            _ => None,
        }
    }

    /// The grant key that allows it, `None` for what every plugin gets.
    pub fn grant_key(self) -> Option<&'static str> {
        match self {
            Self::Wasi | Self::Log | Self::Python => None,
            Self::Http => Some("http"),
            Self::Desktop => Some("desktop"),
            Self::WebDriver => Some("webdriver"),
            Self::RfLibrary => Some("rf_libraries"),
        }
    }
}

/// What one plugin may use beyond the basics (`[plugins.grants.NAME]` in the
/// config).
///
/// The name alone is what a component says about itself, so `file` and
/// `sha256` tie a grant to what the operator installed: the registry applies a
/// grant only to a component whose name matches and, when set, that was loaded
/// from `file` and whose bytes hash to `sha256`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Grant {
    /// Outbound HTTP destinations (`host:port`, `host:*`, `loopback:*`). Empty: no HTTP.
    pub http: Vec<String>,
    /// The desktop: screen capture, synthetic input, window management.
    pub desktop: bool,
    /// A browser session over WebDriver. Implies `wasi:http`, scoped to the
    /// instance's own session URL (the `http` list still governs the rest).
    pub webdriver: bool,
    /// Host folders lent to the plugin's filesystem at the same paths
    /// (`folders = [{ path = "/srv/data", read_only = false }]`; `read_only`
    /// defaults to true). Canonical, existing, non-overlapping directories;
    /// nothing else of the host's filesystem is visible.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub folders: Vec<FolderGrant>,
    /// Robot Framework libraries the host runs for the plugin
    /// (`[plugins.grants.NAME.rf_libraries]`, see [`RfLibrariesGrant`]).
    #[serde(skip_serializing_if = "RfLibrariesGrant::is_unset")]
    pub rf_libraries: RfLibrariesGrant,
    /// The component file the grant is for: absolute, or relative to the
    /// plugins folder the component is found in; compared as canonical paths.
    /// A grant with a file never applies to a built-in plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The sha256 (hex) the component's bytes must have; a component the grant
    /// otherwise applies to that hashes differently is refused at load. Also
    /// counts as the component's pin for `[plugins] require_pins`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl Grant {
    /// What both grants allow: the host's grant for a plugin narrowed by a
    /// tenant's. HTTP destinations are the tenant's patterns that some host
    /// pattern covers, so a tenant can narrow but never widen the host.
    pub fn intersect(&self, narrower: &Grant) -> Grant {
        let host_patterns: Vec<HostPattern> =
            self.http.iter().filter_map(|p| p.parse().ok()).collect();
        let http = narrower
            .http
            .iter()
            .filter(|text| {
                text.parse::<HostPattern>()
                    .is_ok_and(|p| host_patterns.iter().any(|h| h.covers(&p)))
            })
            .cloned()
            .collect();
        // The result is still the host's grant for the same component, so it
        // keeps the host's binding; a tenant's own `file`/`sha256` are checked
        // by the registry, which knows where the component came from.
        Grant {
            http,
            desktop: self.desktop && narrower.desktop,
            webdriver: self.webdriver && narrower.webdriver,
            folders: folders::intersect(&self.folders, &narrower.folders),
            rf_libraries: self.rf_libraries.intersect(&narrower.rf_libraries),
            file: self.file.clone(),
            sha256: self.sha256.clone(),
        }
    }

    /// Makes `folders` canonical where they resolve (config load does this
    /// before [`Grant::check_folders`]).
    pub fn canonicalize_folders(&mut self) {
        folders::canonicalize(&mut self.folders);
    }

    /// Checks `folders`: absolute, canonical, existing directories, none listed
    /// twice or inside another.
    pub fn check_folders(&self) -> Result<(), FolderError> {
        folders::check(&self.folders)
    }

    /// Whether `file` names the component loaded from `path` (canonical), found
    /// in the folder `dir`. Always true without `file`; a `file` that cannot be
    /// resolved names nothing.
    pub fn names_file(&self, path: Option<&Path>, dir: Option<&Path>) -> bool {
        let Some(file) = &self.file else {
            return true;
        };
        let Some(path) = path else {
            return false;
        };
        let wanted = match dir {
            Some(dir) if file.is_relative() => dir.join(file),
            _ => file.clone(),
        };
        std::fs::canonicalize(&wanted).is_ok_and(|wanted| wanted == path)
    }

    /// Whether `sha256` accepts a component hashing to `digest`. Always true
    /// without `sha256`.
    pub fn digest_matches(&self, digest: &str) -> bool {
        self.sha256
            .as_deref()
            .is_none_or(|pinned| pinned.eq_ignore_ascii_case(digest))
    }

    /// Whether this grant covers `capability`.
    pub fn allows(&self, capability: Capability) -> bool {
        match capability {
            // rf-library refuses by itself what the grant does not list, so a
            // plugin that can use it loads without it.
            Capability::Wasi | Capability::Log | Capability::RfLibrary | Capability::Python => true,
            // The webdriver and rf_libraries grants link wasi:http too; their
            // plugin reaches its own session or servers, added at run time, and
            // nothing else.
            Capability::Http => {
                !self.http.is_empty() || self.webdriver || !self.rf_libraries.is_empty()
            }
            Capability::Desktop => self.desktop,
            Capability::WebDriver => self.webdriver,
        }
    }

    /// The HTTP allow-list.
    pub fn allow_list(&self) -> Result<AllowList, BadPattern> {
        let patterns = self
            .http
            .iter()
            .map(|p| p.parse())
            .collect::<Result<Vec<HostPattern>, _>>()?;
        Ok(AllowList::new(patterns))
    }
}

/// Host-wide services that capabilities lend to instances (a display connection,
/// a browser driver). Built once per host and shared by every instance; each
/// capability adds its own field.
pub struct Services {
    /// The X display: one connection for input and window management.
    pub desktop: std::sync::Arc<desktop::Desktop>,
    /// The browser driver: started on first use, one for the whole host.
    pub webdriver: webdriver::WebDriverService,
    /// Addresses of the host itself (driver, browser debugger, MCP listener) that
    /// no HTTP grant opens.
    pub host_owned: http::HostOwned,
    /// The Python evaluator: compiled once, an interpreter per instance.
    pub(crate) python: std::sync::Arc<python::PythonService>,
}

impl Services {
    /// Services for a host with these desktop and browser settings.
    pub(crate) fn new(
        desktop: &desktop::DesktopConfig,
        browser: webdriver::BrowserConfig,
        python: python::PythonService,
    ) -> Self {
        let desktop = std::sync::Arc::new(desktop::Desktop::new(desktop));
        let host_owned = http::HostOwned::default();
        let webdriver = webdriver::WebDriverService::new(browser, host_owned.clone());
        Self {
            desktop,
            webdriver,
            host_owned,
            python: std::sync::Arc::new(python),
        }
    }
}

/// Data a plugin instance's store carries.
pub(crate) struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// Memory limit for this instance.
    pub(crate) limiter: MemoryLimiter,
    /// Absolute deadline of the call in progress; checked on every epoch tick.
    pub(crate) deadline: Instant,
    /// Cancels the call in progress (client cancellation).
    pub(crate) cancel: CancellationToken,
    /// Set when a host capability stopped its own work because the call's time
    /// was running out, and answered the guest with an error instead of letting
    /// the deadline drop the instance. The step then reports its timeout.
    pub(crate) time_ran_out: bool,
    /// Log lines of the call in progress.
    pub(crate) logs: Vec<LogLine>,
    /// Most log lines kept per call.
    pub(crate) max_logs: usize,
    /// Lines dropped past `max_logs`.
    pub(crate) logs_dropped: usize,
    /// Plugin name, for host logs.
    pub(crate) plugin: std::sync::Arc<str>,
    /// The tail of what the guest wrote to stderr (panic messages land here).
    pub(crate) stderr: StderrTail,
    http: WasiHttpCtx,
    /// Outbound HTTP policy.
    pub(crate) http_gate: HttpGate,
    /// What this instance was granted. The describe probe gets nothing.
    pub(crate) grant: Grant,
    /// Host-wide services.
    pub(crate) services: std::sync::Arc<Services>,
    /// This instance's browser session, if it opened one; deleted on drop.
    pub(crate) webdriver: webdriver::InstanceSession,
    /// The RF library servers this instance started; stopped on drop.
    pub(crate) rf_libraries: rf_library::InstanceServers,
    /// This instance's Python interpreter, once it evaluated something.
    pub(crate) python: python::InstancePython,
    /// The share of the instance pool this instance is charged to (its
    /// session's tenant's), which its Python evaluator is charged to too;
    /// `None` for the describe probe.
    pub(crate) pool_share: Option<std::sync::Arc<crate::pool::PoolShare>>,
    /// Set when a capability of the call in progress was refused pool slots
    /// because the tenant is at its share: a failure then is the step's `busy`.
    pub(crate) pool_refused: Option<crate::pool::ShareFull>,
    /// The disk quota its writes in read-write granted folders are charged to
    /// (its session's tenant's); `None` charges nothing.
    pub(crate) disk: Option<std::sync::Arc<disk_quota::InstanceDisk>>,
    /// The session's processes, which every process this instance makes the
    /// host run is tagged with and charged to ([`processes`]); set by the
    /// session's `Instances`, else made on first use.
    pub(crate) processes: Option<std::sync::Arc<SessionProcesses>>,
}

impl HostState {
    /// Fresh state for one instance of `plugin`.
    pub(crate) fn new(
        plugin: std::sync::Arc<str>,
        grant: Grant,
        allow: AllowList,
        services: std::sync::Arc<Services>,
        memory_bytes: u64,
        max_logs: usize,
        disk: Option<std::sync::Arc<DiskQuota>>,
    ) -> Self {
        let stderr = StderrTail::new(8 * 1024);
        let mut builder = WasiCtxBuilder::new();
        builder
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .stderr(stderr.clone());
        let disk = disk
            .filter(|_| grant.folders.iter().any(|f| !f.read_only))
            .map(|quota| std::sync::Arc::new(disk_quota::InstanceDisk::new(quota)));
        // The one folder a plugin may see: its browser's downloads, read-only.
        let mut webdriver = webdriver::InstanceSession::new(grant.webdriver);
        webdriver.preopen(&mut builder);
        folders::preopen(&grant.folders, &plugin, &mut builder);
        let wasi = builder.build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(memory_bytes),
            deadline: Instant::now(),
            time_ran_out: false,
            cancel: CancellationToken::new(),
            logs: Vec::new(),
            max_logs,
            logs_dropped: 0,
            http_gate: HttpGate::new(plugin.clone(), allow, services.host_owned.clone()),
            plugin,
            stderr,
            http: WasiHttpCtx::new(),
            grant,
            services,
            webdriver,
            rf_libraries: rf_library::InstanceServers::default(),
            python: python::InstancePython::default(),
            pool_share: None,
            pool_refused: None,
            disk,
            processes: None,
        }
    }

    /// The session's processes; an instance outside a session gets an
    /// account of its own.
    pub(crate) fn session_processes(&mut self) -> std::sync::Arc<SessionProcesses> {
        self.processes
            .get_or_insert_with(|| std::sync::Arc::new(SessionProcesses::standalone()))
            .clone()
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl HostState {
    /// `wasi:filesystem/types` as this instance gets it: charged to its disk
    /// quota.
    fn quota_fs(&mut self) -> quota_fs::QuotaFsView<'_> {
        quota_fs::QuotaFsView {
            inner: wasmtime_wasi::filesystem::WasiFilesystemCtxView {
                ctx: self.wasi.filesystem(),
                table: &mut self.table,
            },
            quota: self.disk.as_ref(),
        }
    }

    /// `wasi:cli/environment` as this instance gets it: the context's (empty)
    /// environment, plus its disk quota in the host's words when it has one
    /// ([`disk_quota::ENV`], [`disk_quota::ENV_REFUSALS`]).
    fn environment(&mut self) -> quota_fs::QuotaEnvView<'_> {
        quota_fs::QuotaEnvView {
            cli: wasmtime_wasi::cli::WasiCliCtxView {
                ctx: self.wasi.cli(),
                table: &mut self.table,
            },
            disk: self.disk.as_deref(),
        }
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_gate,
        }
    }
}

/// A linker with what every plugin of contract `contract` gets: WASI basics
/// and that version's `log`.
fn base_linker(engine: &Engine, contract: ContractVersion) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    // wasi:filesystem/types and wasi:cli/environment again, over
    // wasmtime-wasi's: the same functions, with writes charged to the
    // instance's disk quota first, and that quota in the environment.
    linker.allow_shadowing(true);
    wasmtime_wasi::p2::bindings::filesystem::types::add_to_linker::<HostState, quota_fs::QuotaFs>(
        &mut linker,
        HostState::quota_fs,
    )?;
    wasmtime_wasi::p2::bindings::cli::environment::add_to_linker::<HostState, quota_fs::QuotaEnv>(
        &mut linker,
        HostState::environment,
    )?;
    linker.allow_shadowing(false);
    match contract {
        ContractVersion::V0_1 => bindings::v0_1::stephost::plugin::log::add_to_linker::<
            HostState,
            HasSelf<HostState>,
        >(&mut linker, |state| state)?,
        ContractVersion::V0_2 => bindings::v0_2::stephost::plugin::log::add_to_linker::<
            HostState,
            HasSelf<HostState>,
        >(&mut linker, |state| state)?,
        ContractVersion::V0_3 => bindings::v0_3::stephost::plugin::log::add_to_linker::<
            HostState,
            HasSelf<HostState>,
        >(&mut linker, |state| state)?,
        ContractVersion::V0_4 => bindings::v0_4::stephost::plugin::log::add_to_linker::<
            HostState,
            HasSelf<HostState>,
        >(&mut linker, |state| state)?,
        ContractVersion::V0_5 => bindings::v0_5::stephost::plugin::log::add_to_linker::<
            HostState,
            HasSelf<HostState>,
        >(&mut linker, |state| state)?,
        other => {
            return Err(wasmtime::Error::msg(format!(
                "contract version {other} has no host interfaces in this build"
            )));
        }
    }
    Ok(linker)
}

/// A linker with the basics plus exactly what `grant` allows, in the
/// component's contract version: only what is granted is linked.
pub(crate) fn linker(
    engine: &Engine,
    grant: &Grant,
    contract: ContractVersion,
) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = base_linker(engine, contract)?;
    if grant.allows(Capability::Http) {
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    }
    if grant.allows(Capability::Desktop) {
        desktop::add_to_linker(&mut linker, contract)?;
    }
    if grant.allows(Capability::WebDriver) {
        webdriver::add_to_linker(&mut linker, contract)?;
    }
    rf_library::add_to_linker(&mut linker, contract)?;
    python::add_to_linker(&mut linker, contract)?;
    Ok(linker)
}

/// A linker for asking a not-yet-trusted component to describe itself. Every
/// capability is linked so the component instantiates, but the probe's state
/// holds no grant (an empty HTTP allow-list), so describe() reaches nothing.
pub(crate) fn describe_linker(
    engine: &Engine,
    contract: ContractVersion,
) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = base_linker(engine, contract)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    desktop::add_to_linker(&mut linker, contract)?;
    webdriver::add_to_linker(&mut linker, contract)?;
    rf_library::add_to_linker(&mut linker, contract)?;
    python::add_to_linker(&mut linker, contract)?;
    Ok(linker)
}
