//! The host: engine, plugins and sessions behind one handle that the CLI and
//! the MCP server share.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::batch::{
    self, NoObserver, Observer, PlanContext, Problem, Report, RunOptions, UnknownPolicy,
};
use crate::config::Config;
use crate::engine::{self, CompileCache, EpochTicker};
use crate::plugins::{PluginSource, Registry, embedded};
use crate::session::{Session, SessionError, Sessions};

/// A running host. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    registry: Registry,
    sessions: Sessions,
    engine: wasmtime::Engine,
    _ticker: EpochTicker,
}

/// Options for one batch run.
pub struct BatchOptions<'a> {
    /// The session to run in; `None` creates a fresh one.
    pub session_id: Option<&'a str>,
    /// Progress sink.
    pub observer: &'a dyn Observer,
    /// Client cancellation.
    pub cancel: CancellationToken,
    /// How unknown `${...}` references are treated.
    pub policy: UnknownPolicy,
}

impl Default for BatchOptions<'_> {
    fn default() -> Self {
        Self {
            session_id: None,
            observer: &NoObserver,
            cancel: CancellationToken::new(),
            policy: UnknownPolicy::Reject,
        }
    }
}

impl Host {
    /// Builds the engine, loads the built-in plugins and those in `config.plugins.dirs`.
    pub async fn start(config: Config) -> anyhow::Result<Self> {
        config.validate()?;
        let started = Instant::now();
        let engine = engine::build_engine(&config.engine)
            .map_err(|e| anyhow::anyhow!("cannot build the wasmtime engine: {e:#}"))?;
        let ticker =
            EpochTicker::start(&engine, Duration::from_micros(config.engine.epoch_tick_us))
                .context("cannot start the epoch ticker thread")?;
        let cache = config
            .cache_dir()
            .map(|dir| CompileCache::new(&dir, &engine));
        let mut registry = Registry::new(&engine, cache, config.plugins.grants.clone());
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
        tracing::info!(
            plugins = registry.names().collect::<Vec<_>>().join(","),
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "host ready"
        );
        let sessions = Sessions::new(
            Duration::from_secs(config.sessions.idle_timeout_s),
            config.sessions.max_sessions,
        );
        let host = Self {
            inner: Arc::new(Inner {
                config,
                registry,
                sessions,
                engine,
                _ticker: ticker,
            }),
        };
        host.spawn_reaper();
        Ok(host)
    }

    /// Drops idle sessions in the background for as long as the host lives.
    fn spawn_reaper(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak = Arc::downgrade(&self.inner);
        let interval = self.inner.sessions.reap_interval();
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let Some(inner) = weak.upgrade() else { break };
                inner.sessions.reap();
            }
        });
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The loaded plugins.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Live sessions.
    pub fn sessions(&self) -> &Sessions {
        &self.inner.sessions
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &wasmtime::Engine {
        &self.inner.engine
    }

    /// A session by id (created when new), or a fresh one.
    pub fn session(&self, id: Option<&str>) -> Result<Arc<Session>, SessionError> {
        self.inner.sessions.get_or_create(id)
    }

    /// Validates and runs a generic batch (`{"steps": [...], ...}`) and reports.
    /// Never fails: problems are in the report (`status: invalid`).
    pub async fn run_batch(&self, request: &Value, opts: BatchOptions<'_>) -> Report {
        let batch_id = new_batch_id();
        let steps_total = request
            .get("steps")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let session_id = opts
            .session_id
            .or_else(|| request.get("session_id").and_then(Value::as_str));
        let session = match self.session(session_id) {
            Ok(session) => session,
            Err(e) => {
                let problem = Problem {
                    step: None,
                    label: None,
                    field: "session_id".into(),
                    message: e.to_string(),
                };
                return Report::invalid(
                    batch_id,
                    session_id.map(str::to_owned),
                    steps_total,
                    vec![problem],
                );
            }
        };
        let mut state = session.lock().await;
        let plan = {
            let vars = &state.vars;
            let ctx = PlanContext {
                registry: &self.inner.registry,
                limits: &self.inner.config.limits,
                session_vars: &|name| vars.contains_key(name),
                policy: opts.policy,
            };
            batch::plan(request, &ctx)
        };
        let plan = match plan {
            Ok(plan) => plan,
            Err(problems) => {
                return Report::invalid(
                    batch_id,
                    Some(session.id().to_owned()),
                    steps_total,
                    problems,
                );
            }
        };
        let run_opts = RunOptions {
            limits: &self.inner.config.limits,
            observer: opts.observer,
            cancel: opts.cancel,
            batch_id,
            session_id: Some(session.id().to_owned()),
        };
        let report = batch::run(&plan, &mut state, &run_opts).await;
        tracing::info!(
            batch = %report.batch_id,
            session = %session.id(),
            status = ?report.status,
            steps = report.steps_total,
            executed = report.steps_executed,
            time_ms = report.time_ms,
            "batch finished"
        );
        report
    }
}

fn new_batch_id() -> String {
    format!("b-{}", uuid::Uuid::new_v4().simple())
}
