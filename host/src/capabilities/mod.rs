//! What the host lends plugins, and the per-instance state behind it.
//!
//! Every plugin gets a locked-down WASI p2 context (no files, no network, no
//! environment, no arguments: Rust guests import these interfaces even when they
//! use none) and the `log` capability. Further capabilities are linked only when
//! granted ([`Grant`]); a plugin that imports an ungranted one does not load.

pub mod http;
mod limiter;
mod log;
mod stderr;

use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

pub use self::http::{AllowList, BadPattern, HostPattern, HttpGate};

pub use limiter::MemoryLimiter;
pub use log::LogLine;
pub use stderr::StderrTail;

use crate::plugins::bindings;

/// A host capability that a plugin may import. The first part of an import name
/// decides which capability it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// WASI p2 basics (clocks, random, stdio, an empty filesystem): always granted.
    Wasi,
    /// `stephost:plugin/log`: always granted.
    Log,
    /// `wasi:http/outgoing-handler`: granted with an allow-list of destinations.
    Http,
}

impl Capability {
    /// The capability an import needs, or `None` when the host offers nothing by
    /// that name.
    pub fn for_import(name: &str) -> Option<Self> {
        let unversioned = name.split('@').next().unwrap_or(name);
        match unversioned {
            "stephost:plugin/log" => Some(Self::Log),
            "stephost:plugin/types" => Some(Self::Log),
            "wasi:http/outgoing-handler" | "wasi:http/types" => Some(Self::Http),
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
            Self::Wasi | Self::Log => None,
            Self::Http => Some("http"),
        }
    }
}

/// What one plugin may use beyond the basics (`[plugins.grants.NAME]` in the
/// config).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Grant {
    /// Outbound HTTP destinations (`host:port`, `host:*`, `loopback:*`). Empty: no HTTP.
    pub http: Vec<String>,
}

impl Grant {
    /// Whether this grant covers `capability`.
    pub fn allows(&self, capability: Capability) -> bool {
        match capability {
            Capability::Wasi | Capability::Log => true,
            Capability::Http => !self.http.is_empty(),
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

/// Data a plugin instance's store carries.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// Memory limit for this instance.
    pub(crate) limiter: MemoryLimiter,
    /// Absolute deadline of the call in progress; checked on every epoch tick.
    pub(crate) deadline: Instant,
    /// Cancels the call in progress (client cancellation).
    pub(crate) cancel: CancellationToken,
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
}

impl HostState {
    /// Fresh state for one instance of `plugin`.
    pub fn new(
        plugin: std::sync::Arc<str>,
        allow: AllowList,
        memory_bytes: u64,
        max_logs: usize,
    ) -> Self {
        let stderr = StderrTail::new(8 * 1024);
        let wasi = WasiCtxBuilder::new()
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .stderr(stderr.clone())
            .build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(memory_bytes),
            deadline: Instant::now(),
            cancel: CancellationToken::new(),
            logs: Vec::new(),
            max_logs,
            logs_dropped: 0,
            http_gate: HttpGate::new(plugin.clone(), allow),
            plugin,
            stderr,
            http: WasiHttpCtx::new(),
        }
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

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_gate,
        }
    }
}

/// A linker with what every plugin gets: WASI basics and `log`.
fn base_linker(engine: &Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    bindings::stephost::plugin::log::add_to_linker::<HostState, HasSelf<HostState>>(
        &mut linker,
        |state| state,
    )?;
    Ok(linker)
}

/// A linker with the basics plus exactly what `grant` allows: only what is
/// granted is linked.
pub fn linker(engine: &Engine, grant: &Grant) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = base_linker(engine)?;
    if grant.allows(Capability::Http) {
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    }
    Ok(linker)
}

/// A linker for asking a not-yet-trusted component to describe itself. Every
/// capability is linked so the component instantiates, but the probe's state
/// holds no grant (an empty HTTP allow-list), so describe() reaches nothing.
pub fn describe_linker(engine: &Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = base_linker(engine)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    Ok(linker)
}
