//! The host: engine, plugins, tenants and sessions behind one handle that the
//! CLI and the MCP server share.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::batch::{
    self, NoObserver, Observer, PlanContext, Problem, Report, RunOptions, StepError, UnknownPolicy,
};
use crate::capabilities::Services;
use crate::config::Config;
use crate::engine::{self, CompileCache, EpochTicker};
use crate::plugins::{PluginSource, Registry, embedded};
use crate::session::{Session, SessionError, Sessions};
use crate::tenancy::metrics::Gauge;
use crate::tenancy::{Metrics, ServerQuota, Tenant, Tenants, TenantsFile};

/// A running host. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    registry: Registry,
    tenants: Arc<Tenants>,
    sessions: Sessions,
    server_quota: ServerQuota,
    metrics: Metrics,
    engine: wasmtime::Engine,
    _ticker: EpochTicker,
}

/// Options for one batch run.
pub struct BatchOptions<'a> {
    /// The tenant to run for; `None` is the local tenant.
    pub tenant: Option<Arc<Tenant>>,
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
            tenant: None,
            session_id: None,
            observer: &NoObserver,
            cancel: CancellationToken::new(),
            policy: UnknownPolicy::Reject,
        }
    }
}

impl Host {
    /// Builds the engine, loads the built-in plugins and those in
    /// `config.plugins.dirs`, and serves the local tenant only.
    pub async fn start(config: Config) -> anyhow::Result<Self> {
        Self::start_with_tenants(config, None).await
    }

    /// As [`Host::start`], serving the tenants of `tenants` (when given).
    pub async fn start_with_tenants(
        config: Config,
        tenants: Option<TenantsFile>,
    ) -> anyhow::Result<Self> {
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
        let services = Arc::new(Services::new(config.clone()));
        let mut registry = Registry::new(
            &engine,
            cache,
            config.plugins.grants.clone(),
            config.plugins.pins.clone(),
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
        if let Some(file) = &tenants {
            file.validate()?;
        }
        let tenants = Arc::new(Tenants::build(&config, &registry, tenants.as_ref()));
        tracing::info!(
            plugins = registry.names().collect::<Vec<_>>().join(","),
            tenants = tenants.serving().len(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "host ready"
        );
        let sessions = Sessions::new(
            Duration::from_secs(config.sessions.idle_timeout_s),
            config.sessions.max_sessions,
            &config.server.instance_name(),
        );
        let host = Self {
            inner: Arc::new(Inner {
                server_quota: ServerQuota::new(config.server.max_concurrent_batches),
                config,
                registry,
                tenants,
                sessions,
                metrics: Metrics::default(),
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

    /// Every loaded plugin (the local tenant's view is [`Host::tenants`]).
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The tenants.
    pub fn tenants(&self) -> &Arc<Tenants> {
        &self.inner.tenants
    }

    /// Live sessions.
    pub fn sessions(&self) -> &Sessions {
        &self.inner.sessions
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &wasmtime::Engine {
        &self.inner.engine
    }

    /// A session of the local tenant by id (created when new), or a fresh one.
    pub fn session(&self, id: Option<&str>) -> Result<Arc<Session>, SessionError> {
        let local = self.inner.tenants.local();
        self.inner
            .sessions
            .get_or_create(local.id(), id, local.max_sessions())
    }

    /// Validates and runs a generic batch (`{"steps": [...], ...}`) and reports.
    /// Never fails: problems are in the report (`status: invalid` or `rejected`).
    pub async fn run_batch(&self, request: &Value, opts: BatchOptions<'_>) -> Report {
        let tenant = opts
            .tenant
            .clone()
            .unwrap_or_else(|| self.inner.tenants.local().clone());
        let batch_id = new_batch_id();
        let session_id = opts
            .session_id
            .or_else(|| request.get("session_id").and_then(Value::as_str))
            .map(str::to_owned);
        let span = tracing::info_span!(
            "batch",
            tenant = tenant.id(),
            batch = %batch_id,
            session = tracing::field::Empty
        );
        let report = self
            .run_for(&tenant, request, batch_id, session_id, opts, &span)
            .instrument(span.clone())
            .await;
        self.inner.metrics.record_batch(tenant.id(), &report);
        let first_error = report
            .first_failure()
            .and_then(|s| s.error.as_ref())
            .map(|e| e.code.as_str())
            .or_else(|| report.error.as_ref().map(|e| e.code.as_str()))
            .unwrap_or("");
        tracing::info!(
            target: "stephost::audit",
            tenant = tenant.id(),
            session = report.session_id.as_deref().unwrap_or(""),
            batch = %report.batch_id,
            status = ?report.status,
            steps = report.steps_total,
            executed = report.steps_executed,
            time_ms = report.time_ms,
            first_error,
            "batch"
        );
        report
    }

    async fn run_for(
        &self,
        tenant: &Arc<Tenant>,
        request: &Value,
        batch_id: String,
        session_id: Option<String>,
        opts: BatchOptions<'_>,
        span: &tracing::Span,
    ) -> Report {
        let steps_total = request
            .get("steps")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let _admission = match tenant.quota().admit(&self.inner.server_quota) {
            Ok(admission) => admission,
            Err(rejection) => {
                self.inner.metrics.inc(
                    "stephost_rejections_total",
                    vec![
                        ("tenant", tenant.id().to_owned()),
                        ("limit", rejection.limit_key().to_owned()),
                    ],
                    1,
                );
                return Report::rejected(
                    batch_id,
                    session_id,
                    steps_total,
                    StepError {
                        code: rejection.code().to_owned(),
                        message: rejection.to_string(),
                        input_fired: false,
                        details: Some(serde_json::json!({"limit": rejection.limit_key()})),
                    },
                );
            }
        };
        let session = match self.inner.sessions.get_or_create(
            tenant.id(),
            session_id.as_deref(),
            tenant.max_sessions(),
        ) {
            Ok(session) => session,
            Err(e) => {
                let problem = Problem {
                    step: None,
                    label: None,
                    field: "session_id".into(),
                    message: e.to_string(),
                };
                return Report::invalid(batch_id, session_id, steps_total, vec![problem]);
            }
        };
        span.record("session", session.id());
        let mut state = session.lock().await;
        let plan = {
            let vars = &state.vars;
            let ctx = PlanContext {
                registry: tenant.registry(),
                limits: tenant.limits(),
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
            limits: tenant.limits(),
            observer: opts.observer,
            cancel: opts.cancel,
            batch_id,
            session_id: Some(session.id().to_owned()),
        };
        let report = batch::run(&plan, &mut state, &run_opts).await;
        session.set_instance_count(state.instances.len());
        report
    }

    /// The metrics in Prometheus text format.
    pub fn metrics_text(&self) -> String {
        let mut gauges = Vec::new();
        let per_tenant = self.inner.sessions.per_tenant();
        let mut live_instances = 0;
        for tenant in self.inner.tenants.serving() {
            let (sessions, instances) = per_tenant.get(tenant.id()).copied().unwrap_or_default();
            live_instances += instances;
            gauges.push(Gauge {
                name: "stephost_live_sessions",
                help: "Live sessions, by tenant.",
                labels: vec![("tenant", tenant.id().to_owned())],
                value: sessions as f64,
            });
            gauges.push(Gauge {
                name: "stephost_live_instances",
                help: "Live plugin instances (as of each session's last batch), by tenant.",
                labels: vec![("tenant", tenant.id().to_owned())],
                value: instances as f64,
            });
        }
        gauges.sort_by_key(|g| g.name);
        gauges.push(Gauge {
            name: "stephost_pool_instances_live",
            help: "Plugin instances holding a pooling-allocator slot.",
            labels: Vec::new(),
            value: live_instances as f64,
        });
        gauges.push(Gauge {
            name: "stephost_pool_instances_max",
            help: "Pooling-allocator slots (engine.max_instances).",
            labels: Vec::new(),
            value: f64::from(self.inner.config.engine.max_instances),
        });
        gauges.push(Gauge {
            name: "stephost_batches_running",
            help: "Batches running now.",
            labels: Vec::new(),
            value: self.inner.server_quota.running() as f64,
        });
        gauges.push(Gauge {
            name: "stephost_batches_running_max",
            help: "Batches that may run at once (server.max_concurrent_batches).",
            labels: Vec::new(),
            value: self.inner.server_quota.limit() as f64,
        });
        self.inner.metrics.render(&gauges)
    }
}

fn new_batch_id() -> String {
    format!("b-{}", uuid::Uuid::new_v4().simple())
}
