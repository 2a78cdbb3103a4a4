//! The host: engine, plugins, tenants and sessions behind one handle that the
//! CLI and the MCP server share.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use stephost_batch::{
    self as batch, Executor, NoObserver, Observer, PlanContext, Problem, Refusal, Report,
    RunOptions, StepError, UnknownPolicy,
};
use stephost_contract::{CallBudget, CallOutcome, FailureCode, Fault, PluginSpec};
use stephost_runtime::{InstanceLimits, Instances, Registry, Runtime, RuntimeConfig};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::config::Config;
use crate::session::{Session, SessionError, SessionRef, SessionTimeouts, Sessions};
use crate::tenancy::metrics::Gauge;
use crate::tenancy::{Admission, Metrics, ServerQuota, Tenant, Tenants, TenantsFile};

/// A running host. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    runtime: Runtime,
    tenants: Arc<Tenants>,
    sessions: Sessions,
    server_quota: ServerQuota,
    metrics: Metrics,
    /// Set once shutdown began: new batches are refused.
    draining: AtomicBool,
    /// Cancels every running batch when the drain deadline passes.
    stop_batches: CancellationToken,
    /// Each tenant's recent batch traces, for `resources/read`.
    traces: crate::traces::Traces,
    /// Each tenant's saved batches.
    saved: crate::saved::SavedBatches,
}

/// Options for one batch run.
pub struct BatchOptions<'a> {
    /// The tenant to run for; `None` is the local tenant.
    pub tenant: Option<Arc<Tenant>>,
    /// The session to run in; `None` takes the request's `session_id`, else a
    /// fresh one.
    pub session: Option<SessionRef<'a>>,
    /// Progress sink.
    pub observer: &'a dyn Observer,
    /// Client cancellation.
    pub cancel: CancellationToken,
    /// How unknown `${...}` references are treated.
    pub policy: UnknownPolicy,
    /// The tenant's admission, when the caller took it before doing work of
    /// its own for the request ([`Host::admit`]); `None` admits here.
    pub admission: Option<&'a Admission>,
}

impl Default for BatchOptions<'_> {
    fn default() -> Self {
        Self {
            tenant: None,
            session: None,
            observer: &NoObserver,
            cancel: CancellationToken::new(),
            policy: UnknownPolicy::Reject,
            admission: None,
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
        mut config: Config,
        mut tenants: Option<TenantsFile>,
    ) -> anyhow::Result<Self> {
        // Idempotent: a config from a file is canonical already, one built in
        // code becomes so here.
        config.canonicalize();
        config.validate()?;
        let started = Instant::now();
        let cache_dir = config.cache_dir();
        let runtime = Runtime::start(RuntimeConfig {
            engine: &config.engine,
            plugins: &config.plugins,
            cache_dir: cache_dir.as_ref(),
            desktop: &config.desktop,
            browser: &config.browser,
        })
        .await?;
        let registry = runtime.registry();
        if let Some(file) = &mut tenants {
            file.canonicalize();
            file.validate()?;
        }
        let tenants = Arc::new(Tenants::build(&config, registry, tenants.as_ref())?);
        tracing::info!(
            plugins = registry.names().collect::<Vec<_>>().join(","),
            tenants = tenants.serving().len(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "host ready"
        );
        let sessions = Sessions::new(
            SessionTimeouts {
                idle: Duration::from_secs(config.sessions.idle_timeout_s),
                unclaimed: Duration::from_secs(config.sessions.unclaimed_idle_timeout_s),
            },
            config.sessions.max_sessions,
            &config.server.instance_name(),
        )
        .with_process_caps(stephost_runtime::ProcessCaps {
            per_session: config.sessions.max_processes_per_session,
            per_tenant: config.sessions.max_processes_per_tenant,
        });
        let saved_dir = config.saved_batches_dir();
        if config.saved_batches.enabled && saved_dir.is_none() {
            tracing::warn!(
                "no data directory (set STEPHOST_DATA_DIR or [saved_batches] dir): saved batches are kept in memory only"
            );
        }
        let saved = crate::saved::SavedBatches::new(saved_dir, &config.saved_batches);
        let host = Self {
            inner: Arc::new(Inner {
                server_quota: ServerQuota::new(config.server.max_concurrent_batches),
                config,
                runtime,
                tenants,
                sessions,
                metrics: Metrics::default(),
                draining: AtomicBool::new(false),
                stop_batches: CancellationToken::new(),
                traces: crate::traces::Traces::default(),
                saved,
            }),
        };
        host.spawn_reaper();
        host.reclaim_slots_from_idle_sessions();
        Ok(host)
    }

    /// Lets a tenant at its share of the instance pool free its own least
    /// recently used unclaimed idle session before it is refused, as a tenant
    /// at its session cap does.
    fn reclaim_slots_from_idle_sessions(&self) {
        for tenant in self.inner.tenants.all() {
            let weak = Arc::downgrade(&self.inner);
            let id = tenant.id().to_owned();
            tenant.slots().set_reclaim(move || {
                weak.upgrade()
                    .is_some_and(|inner| inner.sessions.drop_idle_unclaimed(&id))
            });
        }
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
        self.inner.runtime.registry()
    }

    /// Refuses every plugin `addr`, an address of the host itself (its MCP
    /// listener), whatever its grant says.
    pub fn refuse_for_plugins(&self, addr: std::net::SocketAddr) {
        self.inner.runtime.refuse_for_plugins(addr);
    }

    /// The host's plugins as the batch engine plans against them (the local
    /// tenant's view: every plugin).
    pub fn catalog(&self) -> &stephost_batch::Catalog {
        self.inner.tenants.local().catalog()
    }

    /// The tenants.
    pub fn tenants(&self) -> &Arc<Tenants> {
        &self.inner.tenants
    }

    /// Live sessions.
    pub fn sessions(&self) -> &Sessions {
        &self.inner.sessions
    }

    /// A session of the local tenant (created when new).
    pub fn session(&self, which: SessionRef<'_>) -> Result<Arc<Session>, SessionError> {
        let local = self.inner.tenants.local();
        self.inner.sessions.get_or_create(
            local.id(),
            which,
            local.max_sessions(),
            local.max_sessions_key(),
        )
    }

    /// Orderly shutdown of batches: from now on new batches are refused; those
    /// running get `deadline` to finish, then are cancelled (each still answers
    /// with its report, finished steps kept). Returns once none runs, or
    /// `deadline` plus a grace period for cancelled ones has passed.
    pub async fn drain(&self, deadline: Duration) -> DrainOutcome {
        self.inner.draining.store(true, Ordering::SeqCst);
        let quota = &self.inner.server_quota;
        let running_at_start = quota.running();
        let wait_until = |until: Instant| async move {
            while quota.running() > 0 && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        wait_until(Instant::now() + deadline).await;
        let cancelled = quota.running();
        if cancelled > 0 {
            tracing::warn!(
                cancelled,
                "drain deadline passed: cancelling the batches still running"
            );
            self.inner.stop_batches.cancel();
            // A cancelled batch stops at once unless a host call is blocked;
            // its step timeout bounds that.
            wait_until(Instant::now() + CANCEL_GRACE).await;
        }
        DrainOutcome {
            running_at_start,
            cancelled,
            still_running: quota.running(),
        }
    }

    /// Whether shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::SeqCst)
    }

    /// Admits one request of `tenant`: the tenant's and the server's
    /// concurrency and the tenant's rate, or the error that refuses it.
    ///
    /// Every front takes this before it does any work that depends on the
    /// request (mapping a tool's arguments, binding a saved batch's
    /// parameters, validating them against a schema, planning, rendering a
    /// plan, a trace or output.xml) and holds it until its answer is built,
    /// so whatever one request makes the host compute or hold happens within
    /// the tenant's `limits.max_concurrent_batches` and is bounded by the
    /// per-request limits; a front that forgets it is admitted by
    /// [`Host::run_batch`] itself.
    ///
    /// # Errors
    /// The rejection as a step error (`busy`, `rate-limited` or
    /// `shutting-down`), naming the limit and its value.
    pub fn admit(&self, tenant: &Tenant) -> Result<Admission, StepError> {
        if self.is_draining() {
            return Err(StepError {
                code: FailureCode::ShuttingDown,
                message: "this instance is shutting down and takes no new batches; retry in a few seconds (another instance will answer)".to_owned(),
                input_fired: false,
                details: None,
            });
        }
        tenant
            .quota()
            .admit(&self.inner.server_quota)
            .map_err(|rejection| {
                self.inner.metrics.inc(
                    "stephost_rejections_total",
                    vec![
                        ("tenant", tenant.id().to_owned()),
                        ("limit", rejection.limit_key().to_owned()),
                    ],
                    1,
                );
                StepError {
                    code: FailureCode::from_text(rejection.code()),
                    message: rejection.to_string(),
                    input_fired: false,
                    details: Some(serde_json::json!({"limit": rejection.limit_key()})),
                }
            })
    }

    /// Validates and runs a generic batch (`{"steps": [...], ...}`) and reports.
    /// Never fails: problems are in the report (`status: invalid` or `rejected`).
    pub async fn run_batch(&self, request: &Value, opts: BatchOptions<'_>) -> Report {
        let tenant = opts
            .tenant
            .clone()
            .unwrap_or_else(|| self.inner.tenants.local().clone());
        let batch_id = new_batch_id();
        let which = opts
            .session
            .or_else(|| {
                request
                    .get("session_id")
                    .and_then(Value::as_str)
                    .map(SessionRef::Named)
            })
            .unwrap_or(SessionRef::Fresh);
        let session_id = match which {
            SessionRef::Named(id) | SessionRef::Transport(id) => Some(id.to_owned()),
            SessionRef::Fresh => None,
        };
        let span = tracing::info_span!(
            "batch",
            tenant = tenant.id(),
            batch = %batch_id,
            session = tracing::field::Empty
        );
        let report = self
            .run_for(&tenant, request, batch_id, (which, session_id), opts, &span)
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
        (which, session_id): (SessionRef<'_>, Option<String>),
        opts: BatchOptions<'_>,
        span: &tracing::Span,
    ) -> Report {
        let steps_total = request
            .get("steps")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let _admission = match opts.admission {
            Some(_) => None,
            None => match self.admit(tenant) {
                Ok(admission) => Some(admission),
                Err(error) => return Report::rejected(batch_id, session_id, steps_total, error),
            },
        };
        let session = match self.inner.sessions.get_or_create(
            tenant.id(),
            which,
            tenant.max_sessions(),
            tenant.max_sessions_key(),
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
                catalog: tenant.catalog(),
                limits: tenant.limits(),
                session_vars: &|name| vars.contains(name),
                policy: opts.policy,
            };
            batch::plan_with_var_sizes(request, &ctx, &|name| vars.size(name))
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
        // The batch stops for the client's cancellation or for the drain
        // deadline, whichever comes first.
        let cancel = self.inner.stop_batches.child_token();
        let link = tokio::spawn({
            let client = opts.cancel.clone();
            let cancel = cancel.clone();
            async move {
                tokio::select! {
                    () = client.cancelled() => cancel.cancel(),
                    () = cancel.cancelled() => {}
                }
            }
        });
        let run_opts = RunOptions {
            limits: tenant.limits(),
            observer: opts.observer,
            cancel,
            batch_id,
            session_id: Some(session.id().to_owned()),
        };
        let limits = tenant.limits();
        let state = &mut *state;
        let mut exec = SessionExecutor {
            instances: &mut state.instances,
            registry: tenant.registry(),
            limits: InstanceLimits {
                memory_bytes: limits.memory_bytes(),
                max_logs: limits.max_log_lines_per_step,
                share: Some(tenant.slots().clone()),
                disk: Some(tenant.disk().clone()),
            },
        };
        // Whatever the plugins can refuse from the input alone refuses the
        // batch before its first step acts.
        if let Err(problems) = batch::check(&plan, &mut exec, &run_opts).await {
            link.abort();
            session.set_instance_count(state.instances.len());
            return Report::invalid(
                run_opts.batch_id,
                run_opts.session_id,
                steps_total,
                problems,
            );
        }
        if plan.dry_run() {
            link.abort();
            session.set_instance_count(state.instances.len());
            let view = batch::dry_run(&plan, state.vars.values(), limits);
            return Report::planned(run_opts.batch_id, run_opts.session_id, view);
        }
        let report = batch::run(&plan, &mut state.vars, &mut exec, &run_opts).await;
        link.abort();
        session.set_instance_count(state.instances.len());
        report
    }

    /// Each tenant's saved batches.
    pub fn saved(&self) -> &crate::saved::SavedBatches {
        &self.inner.saved
    }

    /// Each tenant's recent batch traces.
    pub fn traces(&self) -> &crate::traces::Traces {
        &self.inner.traces
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
            gauges.push(Gauge {
                name: "stephost_instance_slots_in_use",
                help: "Instance-pool slots held by the tenant's plugin instances and Python evaluators, by tenant.",
                labels: vec![("tenant", tenant.id().to_owned())],
                value: f64::from(tenant.slots().in_use()),
            });
            gauges.push(Gauge {
                name: "stephost_instance_slots_share",
                help: "Instance-pool slots the tenant may hold (limits.max_instances, else engine.max_instances_per_tenant), by tenant.",
                labels: vec![("tenant", tenant.id().to_owned())],
                value: f64::from(tenant.slots().limit()),
            });
        }
        // The allocator's own counts, in each of the totals it keeps.
        let live = self.inner.runtime.pool_in_use();
        let size = self.inner.runtime.pool_size();
        for (resource, live, size) in [
            (
                "component_instances",
                live.component_instances,
                size.component_instances,
            ),
            ("core_instances", live.core_instances, size.core_instances),
            ("memories", live.memories, size.memories),
            ("tables", live.tables, size.tables),
            ("stacks", live.stacks, size.stacks),
        ] {
            gauges.push(Gauge {
                name: "stephost_pool_live",
                help: "What the pooling allocator holds in use, by resource.",
                labels: vec![("resource", resource.to_owned())],
                value: f64::from(live),
            });
            gauges.push(Gauge {
                name: "stephost_pool_size",
                help: "The pooling allocator's totals (engine.max_instances slots), by resource.",
                labels: vec![("resource", resource.to_owned())],
                value: f64::from(size),
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

/// How long batches cancelled at the drain deadline get to hand in their reports.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// What [`Host::drain`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainOutcome {
    /// Batches running when the drain began.
    pub running_at_start: usize,
    /// Batches still running at the deadline, which were cancelled.
    pub cancelled: usize,
    /// Batches still running when the drain gave up waiting.
    pub still_running: usize,
}

fn new_batch_id() -> String {
    format!("b-{}", uuid::Uuid::new_v4().simple())
}

/// A session's instances running the steps of one batch for one tenant: the
/// engine hands over a plugin's spec, this finds the tenant's linked component
/// for it and runs the call on the session's instance.
struct SessionExecutor<'a> {
    instances: &'a mut Instances,
    registry: &'a Registry,
    limits: InstanceLimits,
}

impl Executor for SessionExecutor<'_> {
    async fn call(
        &mut self,
        plugin: &Arc<PluginSpec>,
        verb: &str,
        input: &str,
        budget: &CallBudget,
    ) -> CallOutcome {
        // The plan was made against this tenant's catalog, built from this
        // registry, so the plugin is there unless the host is broken.
        let Some(loaded) = self.registry.get(plugin.name()) else {
            return CallOutcome::fault(Fault::Trap(format!(
                "plugin `{}` is not loaded for this tenant",
                plugin.name()
            )));
        };
        self.instances
            .call(loaded, verb, input, budget, &self.limits)
            .await
    }

    async fn check(
        &mut self,
        plugin: &Arc<PluginSpec>,
        verb: &str,
        input: &str,
        budget: &CallBudget,
    ) -> Result<(), Refusal> {
        let Some(loaded) = self.registry.get(plugin.name()) else {
            return Err(Refusal::Fault(Fault::Trap(format!(
                "plugin `{}` is not loaded for this tenant",
                plugin.name()
            ))));
        };
        match self
            .instances
            .check(loaded, verb, input, budget, &self.limits)
            .await
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(failure)) => Err(Refusal::Failure(failure)),
            Err(fault) => Err(Refusal::Fault(fault)),
        }
    }
}
