//! Start-up: the engine, its epoch ticker, the compile cache and the plugins,
//! behind one handle the server keeps for the life of the process.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::capabilities::Services;
use crate::capabilities::python::PythonService;
use crate::config::{EngineConfig, PluginsConfig};
use crate::engine::{self, CompileCache, EpochTicker};
use crate::load_error::LoadError;
use crate::pool::{self, Footprint};
use crate::registry::{LoadPolicy, PluginSource, Registry};
use crate::{BrowserConfig, DesktopConfig, embedded};

/// What the runtime is built from: the `[engine]`, `[plugins]`, `[desktop]`
/// and `[browser]` parts of the host configuration.
#[derive(Debug, Clone, Copy)]
pub struct RuntimeConfig<'a> {
    /// Engine sizing.
    pub engine: &'a EngineConfig,
    /// Which plugins load, and what each may use.
    pub plugins: &'a PluginsConfig,
    /// Where compiled components are cached; `None` compiles every time.
    pub cache_dir: Option<&'a PathBuf>,
    /// The desktop capability's settings.
    pub desktop: &'a DesktopConfig,
    /// The browser capability's settings.
    pub browser: &'a BrowserConfig,
}

/// Why the runtime did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// wasmtime refused the engine settings.
    #[error("cannot build the wasmtime engine: {0}")]
    Engine(String),
    /// The epoch ticker thread did not start.
    #[error("cannot start the epoch ticker thread: {0}")]
    Ticker(#[source] std::io::Error),
    /// A plugin did not load.
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// The engine, its ticker and the loaded plugins.
pub struct Runtime {
    registry: Registry,
    engine: wasmtime::Engine,
    pool_slots: u32,
    // Kept for its Drop: the ticker stops with the runtime.
    _ticker: EpochTicker,
}

impl Runtime {
    /// Builds the engine and loads the built-in plugins (minus the disabled
    /// ones) and every component in `plugins.dirs`.
    pub async fn start(config: RuntimeConfig<'_>) -> Result<Self, StartError> {
        let engine = engine::build_engine(config.engine)
            .map_err(|e| StartError::Engine(format!("{e:#}")))?;
        let ticker =
            EpochTicker::start(&engine, Duration::from_micros(config.engine.epoch_tick_us))
                .map_err(StartError::Ticker)?;
        let cache = config.cache_dir.map(|dir| CompileCache::new(dir, &engine));
        let python = PythonService::new(embedded::PYTHON_EVALUATOR, &engine, cache.clone());
        let services = Arc::new(Services::new(
            config.desktop,
            config.browser.clone(),
            python,
        ));
        services.python.warm();
        let pool_slots = config.engine.max_instances;
        let mut registry = Registry::new(
            &engine,
            cache,
            LoadPolicy::from_config(config.plugins),
            services,
        );
        if config.plugins.builtin {
            for plugin in embedded::EMBEDDED {
                if config.plugins.disable.iter().any(|d| d == plugin.name) {
                    continue;
                }
                registry
                    .load(PluginSource::Builtin(plugin.name, plugin.bytes))
                    .await?;
            }
        }
        for dir in &config.plugins.dirs {
            registry.load_dir(dir).await?;
        }
        Ok(Self {
            registry,
            engine,
            pool_slots,
            _ticker: ticker,
        })
    }

    /// What the instance pool holds in use now, read from the allocator.
    pub fn pool_in_use(&self) -> Footprint {
        pool::in_use(&self.engine)
    }

    /// The instance pool's totals: `engine.max_instances` slots.
    pub fn pool_size(&self) -> Footprint {
        Footprint::of_slots(self.pool_slots)
    }

    /// What one Python evaluator takes from the pool; `None` for a host built
    /// without it.
    pub fn evaluator_footprint(&self) -> Option<Footprint> {
        self.registry.services().python.footprint()
    }

    /// Refuses every plugin `addr`, an address of the host itself (its MCP
    /// listener), whatever its grant says.
    pub fn refuse_for_plugins(&self, addr: std::net::SocketAddr) {
        self.registry.services().host_owned.add(addr);
    }

    /// The loaded plugins.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}
