//! One live plugin instance: a store plus its bindings, and how a call on it is
//! bounded in time, CPU and memory.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stephost_contract::{CallBudget, CallOutcome, Failure, FailureCode, Fault, RawDescription};
use tokio_util::sync::CancellationToken;
use wasmtime::{Store, Trap, UpdateDeadline};

use crate::bindings::Plugin;
use crate::capabilities::{DiskQuota, HostState};
use crate::loaded::LoadedPlugin;
use crate::pool::{PoolShare, SlotCharge};

/// A live instance of one plugin, owned by one session.
pub struct PluginInstance {
    store: Store<HostState>,
    bindings: Plugin,
    plugin: Arc<LoadedPlugin>,
    /// The pool slots it holds, given back when it drops. Last, so the store
    /// (and with it the pool's instances and the evaluator) goes first.
    _charge: Option<SlotCharge>,
}

impl PluginInstance {
    /// Instantiates `plugin` with a fresh store, charged to no tenant (the
    /// describe probe, benchmarks). Instantiation runs guest code, so it is
    /// held to `budget` too.
    pub async fn new(
        plugin: Arc<LoadedPlugin>,
        memory_bytes: u64,
        max_logs: usize,
        budget: &CallBudget,
    ) -> Result<Self, Fault> {
        Self::instantiate(plugin, memory_bytes, max_logs, budget, None, None).await
    }

    /// Instantiates `plugin` for a session under `limits`: when they carry a
    /// tenant's share of the pool, its slots are taken from the share first
    /// (the tenant's idle sessions making room), and a tenant at its share
    /// gets [`Fault::ShareExhausted`] without anything being instantiated.
    pub async fn for_session(
        plugin: Arc<LoadedPlugin>,
        limits: &InstanceLimits,
        budget: &CallBudget,
    ) -> Result<Self, Fault> {
        let charge = match &limits.share {
            Some(share) => {
                let what = format!("an instance of `{}`", plugin.name());
                let charge = share
                    .charge(plugin.footprint(), &what)
                    .map_err(|refused| Fault::ShareExhausted(refused.to_string()))?;
                Some((share.clone(), charge))
            }
            None => None,
        };
        Self::instantiate(
            plugin,
            limits.memory_bytes,
            limits.max_logs,
            budget,
            charge,
            limits.disk.clone(),
        )
        .await
    }

    async fn instantiate(
        plugin: Arc<LoadedPlugin>,
        memory_bytes: u64,
        max_logs: usize,
        budget: &CallBudget,
        charge: Option<(Arc<PoolShare>, SlotCharge)>,
        disk: Option<Arc<DiskQuota>>,
    ) -> Result<Self, Fault> {
        let disk = disk.filter(|_| plugin.grant().folders.iter().any(|f| !f.read_only));
        if let Some(disk) = &disk {
            // The tenant's usage must be known before its first write is
            // charged; its first instance that can write walks the folders.
            let measure = async {
                disk.measure_once().await;
                wasmtime::Result::Ok(())
            };
            // The walk itself cannot fail (an unreadable folder counts as empty).
            let _walked = within(budget, measure).await?;
        }
        let mut state = HostState::new(
            plugin.name_arc(),
            plugin.grant().clone(),
            plugin.allow_list().clone(),
            plugin.services().clone(),
            memory_bytes,
            max_logs,
            disk,
        );
        let (share, charge) = charge.unzip();
        state.pool_share = share;
        let mut store = Store::new(plugin.engine(), state);
        store.limiter(|state| &mut state.limiter);
        store.epoch_deadline_callback(|ctx| {
            let state = ctx.data();
            Ok(on_epoch_tick(&state.cancel, state.deadline))
        });
        arm(&mut store, budget);
        let pre = plugin.pre().clone();
        let bindings = match within(budget, pre.instantiate(&mut store)).await {
            Ok(Ok(bindings)) => bindings,
            Ok(Err(e)) => return Err(instantiate_fault(&store, e)),
            Err(fault) => return Err(fault),
        };
        Ok(Self {
            store,
            bindings,
            plugin,
            _charge: charge,
        })
    }

    /// The plugin this is an instance of.
    pub fn plugin(&self) -> &Arc<LoadedPlugin> {
        &self.plugin
    }

    /// Its disk quota, when processes outside the sandbox may have written
    /// to its folders: it started host-run libraries.
    fn disk_outside_sandbox(&self) -> Option<Arc<DiskQuota>> {
        let state = self.store.data();
        state
            .disk
            .as_ref()
            .filter(|_| state.rf_libraries.started_any())
            .map(|disk| disk.quota.clone())
    }

    /// Whether this is an instance of exactly `plugin` (the same load and
    /// grant), not merely of a plugin with its name.
    fn is_of(&self, plugin: &Arc<LoadedPlugin>) -> bool {
        Arc::ptr_eq(&self.plugin, plugin)
    }

    /// Calls `verb` with `input` (JSON text) under `budget`.
    pub async fn invoke(&mut self, verb: &str, input: &str, budget: &CallBudget) -> CallOutcome {
        arm(&mut self.store, budget);
        let result = match within(budget, self.bindings.invoke(&mut self.store, verb, input)).await
        {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(classify(self.store.data(), e, budget)),
            Err(fault) => Err(fault),
        };
        let state = self.store.data_mut();
        let result = match (result, state.pool_refused.take()) {
            // The plugin failed because a capability (its Python evaluator)
            // was refused slots at the tenant's share: the step is `busy`, in
            // the host's words, and the instance lives on.
            (Ok(Err(failure)), Some(refused)) => {
                let refused = refused.to_string();
                let message = if failure.message.contains(&refused) {
                    failure.message
                } else {
                    format!("{refused} (the plugin reported: {})", failure.message)
                };
                Ok(Err(Failure {
                    code: FailureCode::Busy,
                    message,
                    ..failure
                }))
            }
            (result, _) => result,
        };
        CallOutcome {
            result: result.map_err(|fault| with_stderr(fault, &state.stderr.take())),
            logs: std::mem::take(&mut state.logs),
            logs_dropped: std::mem::take(&mut state.logs_dropped),
            denied: std::mem::take(&mut state.http_gate.denied),
            instance_dropped: false,
            time_ran_out: state.time_ran_out,
        }
    }

    /// Calls `check` for `verb` with `input` under `budget`. Checks must not
    /// act, so a fault here only costs the instance, like any other fault.
    pub async fn check(
        &mut self,
        verb: &str,
        input: &str,
        budget: &CallBudget,
    ) -> Result<Result<(), Failure>, Fault> {
        arm(&mut self.store, budget);
        let result = match within(budget, self.bindings.check(&mut self.store, verb, input)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(classify(self.store.data(), e, budget)),
            Err(fault) => Err(fault),
        };
        let state = self.store.data_mut();
        state.logs.clear();
        result.map_err(|fault| with_stderr(fault, &state.stderr.take()))
    }

    /// Calls `describe` (used once at load time on a throwaway instance).
    pub(crate) async fn describe(&mut self, budget: &CallBudget) -> Result<RawDescription, Fault> {
        arm(&mut self.store, budget);
        let result = match within(budget, self.bindings.describe(&mut self.store)).await {
            Ok(Ok(raw)) => Ok(raw),
            Ok(Err(e)) => Err(classify(self.store.data(), e, budget)),
            Err(fault) => Err(fault),
        };
        // A panic's message is on stderr; without it the author sees only
        // "unreachable".
        let stderr = self.store.data_mut().stderr.take();
        result.map_err(|fault| with_stderr(fault, &stderr))
    }
}

/// The one place a budget is raced against guest code. The epoch callback
/// (set in [`PluginInstance::new`]) stops a guest that computes; this timer
/// and the cancellation token stop one blocked in a host call (a WASI sleep),
/// which epochs cannot reach; fuel (set by [`arm`]) bounds the work. The inner
/// result is the guest's, for the caller to classify with its store.
async fn within<T>(
    budget: &CallBudget,
    call: impl std::future::Future<Output = wasmtime::Result<T>>,
) -> Result<wasmtime::Result<T>, Fault> {
    tokio::select! {
        biased;
        result = call => Ok(result),
        () = tokio::time::sleep_until(budget.deadline.into()) => {
            Err(Fault::Timeout(budget.timeout.as_millis() as u64))
        }
        () = budget.cancel.cancelled() => Err(Fault::Cancelled),
    }
}

/// Sets the store's deadline, fuel and cancellation for the next call.
fn arm(store: &mut Store<HostState>, budget: &CallBudget) {
    let state = store.data_mut();
    state.deadline = budget.deadline;
    state.cancel = budget.cancel.clone();
    state.time_ran_out = false;
    state.pool_refused = None;
    state.limiter.denied = None;
    // Fuel is only off when consumption is disabled, which the engine never does.
    let _ = store.set_fuel(budget.fuel);
    store.set_epoch_deadline(1);
}

/// What a store running a step's guest code does on an epoch tick: stop once the
/// step is cancelled or past its deadline, otherwise yield, so a busy guest never
/// holds a worker thread.
pub(crate) fn on_epoch_tick(cancel: &CancellationToken, deadline: Instant) -> UpdateDeadline {
    if cancel.is_cancelled() || Instant::now() >= deadline {
        UpdateDeadline::Interrupt
    } else {
        UpdateDeadline::Yield(1)
    }
}

/// Turns a wasmtime error from a call into a [`Fault`].
fn classify(state: &HostState, error: wasmtime::Error, budget: &CallBudget) -> Fault {
    if let Some(asked) = state.limiter.denied {
        return Fault::MemoryLimit {
            limit_mib: state.limiter.max_bytes() / (1024 * 1024),
            asked_mib: asked.div_ceil(1024 * 1024),
        };
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => Fault::OutOfFuel(budget.fuel),
        Some(Trap::Interrupt) if state.cancel.is_cancelled() => Fault::Cancelled,
        Some(Trap::Interrupt) => Fault::Timeout(budget.timeout.as_millis() as u64),
        Some(trap) => Fault::Trap(trap.to_string()),
        None => Fault::Trap(format!("{error:#}")),
    }
}

/// Adds a panic message from stderr to a crash report.
fn with_stderr(fault: Fault, stderr: &str) -> Fault {
    match fault {
        Fault::Trap(trap) if !stderr.is_empty() => {
            let last = stderr.lines().rev().take(6).collect::<Vec<_>>();
            let tail = last.into_iter().rev().collect::<Vec<_>>().join(" | ");
            Fault::Trap(format!("{trap}; plugin stderr: {tail}"))
        }
        other => other,
    }
}

/// Turns a wasmtime error from instantiation into a [`Fault`]: a full pool is
/// [`Fault::Busy`], anything else as for a call.
fn instantiate_fault(store: &Store<HostState>, error: wasmtime::Error) -> Fault {
    if error
        .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
        .is_some()
    {
        return Fault::Busy;
    }
    let budget = CallBudget {
        deadline: store.data().deadline,
        timeout: Duration::ZERO,
        fuel: 0,
        cancel: store.data().cancel.clone(),
    };
    classify(store.data(), error, &budget)
}

/// Limits every instance of a session is made with.
#[derive(Debug, Clone)]
pub struct InstanceLimits {
    /// Linear memory one instance may hold, in bytes.
    pub memory_bytes: u64,
    /// Most log lines kept per call.
    pub max_logs: usize,
    /// The share of the instance pool the session's tenant may hold, which
    /// every instance and Python evaluator of the session is charged to;
    /// `None` charges nothing.
    pub share: Option<Arc<PoolShare>>,
    /// The disk quota of the session's tenant, which every write of its
    /// instances in read-write granted folders is charged to; `None` charges
    /// nothing.
    pub disk: Option<Arc<DiskQuota>>,
}

/// A session's live instances, one per plugin, made on first use. A fault
/// drops the instance (wasmtime cannot re-enter it), and the next call makes a
/// fresh one.
#[derive(Default)]
pub struct Instances {
    live: HashMap<String, PluginInstance>,
    /// The processes its instances make the host run; they end when the
    /// last instance and this are gone (after `live`, so the instances'
    /// own library servers stop first). `None`: an account of its own per
    /// instance.
    processes: Option<Arc<crate::capabilities::SessionProcesses>>,
}

impl Instances {
    /// A session's instances, whose processes are `processes`' (tagged with
    /// the session, charged to it and its tenant, ended with it).
    pub fn with_processes(processes: crate::capabilities::SessionProcesses) -> Self {
        Self {
            live: HashMap::new(),
            processes: Some(Arc::new(processes)),
        }
    }

    /// How many instances are live.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Calls `verb` of `plugin` on this session's instance of it, making the
    /// instance first if there is none (or it is of another load of the
    /// plugin, as after a tenant's grant changed).
    pub async fn call(
        &mut self,
        plugin: &Arc<LoadedPlugin>,
        verb: &str,
        input: &str,
        budget: &CallBudget,
        limits: &InstanceLimits,
    ) -> CallOutcome {
        let instance = match self.instance_of(plugin, budget, limits).await {
            Ok(instance) => instance,
            Err(fault) => return CallOutcome::fault(fault),
        };
        let mut outcome = instance.invoke(verb, input, budget).await;
        // Processes the host runs for the instance (RF libraries, what they
        // start) write without passing the quota: their step is charged after
        // the fact, so the next write of the tenant is refused when it went over.
        if let Some(disk) = instance.disk_outside_sandbox() {
            disk.remeasure().await;
        }
        if outcome.result.is_err() {
            self.live.remove(plugin.name());
            outcome.instance_dropped = true;
        }
        outcome
    }

    /// Calls `check` of `plugin` on this session's instance of it (made
    /// first when needed, as for [`Instances::call`]).
    pub async fn check(
        &mut self,
        plugin: &Arc<LoadedPlugin>,
        verb: &str,
        input: &str,
        budget: &CallBudget,
        limits: &InstanceLimits,
    ) -> Result<Result<(), Failure>, Fault> {
        let instance = self.instance_of(plugin, budget, limits).await?;
        let result = instance.check(verb, input, budget).await;
        if result.is_err() {
            self.live.remove(plugin.name());
        }
        result
    }

    /// This session's instance of `plugin`, made if there is none (or it is
    /// of another load of the plugin, as after a tenant's grant changed).
    async fn instance_of(
        &mut self,
        plugin: &Arc<LoadedPlugin>,
        budget: &CallBudget,
        limits: &InstanceLimits,
    ) -> Result<&mut PluginInstance, Fault> {
        let name = plugin.name();
        if !self.live.get(name).is_some_and(|i| i.is_of(plugin)) {
            // An instance of another load goes first, so its slots are free
            // for the one replacing it.
            self.live.remove(name);
            let mut instance = PluginInstance::for_session(plugin.clone(), limits, budget).await?;
            instance.store.data_mut().processes = self.processes.clone();
            self.live.insert(name.to_owned(), instance);
        }
        self.live
            .get_mut(name)
            .ok_or_else(|| Fault::Trap("the plugin instance vanished".into()))
    }
}
