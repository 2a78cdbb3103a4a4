//! One host per fuzzing process.
//!
//! Building a host compiles (or loads from the compile cache) every built-in plugin
//! and asks each to describe itself, which takes a while under the sanitizers. It is
//! done once, on the first input, and the host lives until the process exits.

use std::sync::{Arc, OnceLock};

use stephost::Host;
use stephost::config::Config;
use stephost::mcp::Catalog;

/// The host, the runtime it was started on, and its MCP tool catalog.
pub struct Fixture {
    /// The host, with every built-in plugin loaded and default limits.
    pub host: Host,
    /// Every MCP tool of the local tenant (all plugins) and the dialect serving
    /// it, as the server builds them.
    pub catalog: Arc<Catalog>,
    /// Keeps the host's background tasks (the session reaper) alive.
    _runtime: tokio::runtime::Runtime,
}

/// The process-wide fixture, built on first use.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(build)
}

fn build() -> Fixture {
    let mut config = Config::default();
    // The planner never instantiates a plugin beyond the describe probes at load, so
    // a small pool keeps the address-space reservation (and sanitizer overhead) down.
    config.engine.max_instances = 16;
    // A cache of its own: components compiled by the instrumented engine stay apart
    // from the ones the regular builds write to ~/.cache/stephost.
    config.engine.cache_dir = Some(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join("stephost-cache"),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("fuzz fixture: cannot build a tokio runtime");
    let host = runtime
        .block_on(Host::start(config))
        .expect("fuzz fixture: the host did not start with its built-in plugins");
    // The local tenant's catalog: every plugin, so every dialect and verb tool.
    let catalog = {
        let _guard = runtime.enter();
        let catalogs =
            stephost::mcp::catalogs(&host).expect("fuzz fixture: the MCP tool catalog has a clash");
        catalogs
            .get(host.tenants().local().id())
            .cloned()
            .expect("fuzz fixture: the local tenant has a catalog")
    };
    Fixture {
        host,
        catalog,
        _runtime: runtime,
    }
}
