//! What the host lends plugins, and the per-instance state behind it.
//!
//! Every plugin gets a locked-down WASI p2 context (no files, no network, no
//! environment, no arguments: Rust guests import these interfaces even when they
//! use none) and the `log` capability. Further capabilities are linked only when
//! granted; see [`Capability`].

mod limiter;
mod log;
mod stderr;

use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

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
}

impl Capability {
    /// The capability an import needs, or `None` when the host offers nothing by
    /// that name.
    pub fn for_import(name: &str) -> Option<Self> {
        let unversioned = name.split('@').next().unwrap_or(name);
        match unversioned {
            "stephost:plugin/log" => Some(Self::Log),
            "stephost:plugin/types" => Some(Self::Log),
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
}

impl HostState {
    /// Fresh state for one instance of `plugin`.
    pub fn new(plugin: std::sync::Arc<str>, memory_bytes: u64, max_logs: usize) -> Self {
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
            plugin,
            stderr,
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

/// Adds every capability the host implements to `linker`. Which of them a plugin
/// may use is decided before instantiation by checking its imports.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    bindings::stephost::plugin::log::add_to_linker::<HostState, HasSelf<HostState>>(
        linker,
        |state| state,
    )?;
    Ok(())
}
