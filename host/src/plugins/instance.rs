//! One live plugin instance: a store plus its bindings, and how a call on it is
//! bounded in time, CPU and memory.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::{Store, Trap, UpdateDeadline};

use super::bindings::Plugin;
use super::bindings::exports::stephost::plugin::tool;
use super::registry::LoadedPlugin;
use crate::capabilities::{HostState, LogLine};

/// A verb result as the guest returned it.
pub type GuestResult = Result<tool::Output, tool::Failure>;

/// Why a call did not return normally. Every fault leaves the store unusable
/// (wasmtime cannot re-enter a component after a trap or a dropped call), so the
/// caller drops the instance and creates a new one on next use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Fault {
    /// The step's deadline passed.
    #[error("the step ran past its deadline of {0} ms")]
    Timeout(u64),
    /// The client cancelled.
    #[error("the step was cancelled by the client")]
    Cancelled,
    /// The step used all of its fuel.
    #[error("the step used all of its fuel (limits.fuel_per_step = {0})")]
    OutOfFuel(u64),
    /// Linear memory would have grown past the limit.
    #[error(
        "the plugin exceeded its memory limit of {limit_mib} MiB per instance (limits.memory_mib), asking for {asked_mib} MiB"
    )]
    MemoryLimit {
        /// Limit in MiB.
        limit_mib: u64,
        /// What the guest asked for, in MiB.
        asked_mib: u64,
    },
    /// Any other trap: a panic, `unreachable`, a bad memory access.
    #[error("the plugin crashed: {0}")]
    Trap(String),
}

impl Fault {
    /// The failure code reported for this fault.
    pub fn code(&self) -> &'static str {
        match self {
            Fault::Timeout(_) => "timeout",
            Fault::Cancelled => "cancelled",
            Fault::OutOfFuel(_) => "out-of-fuel",
            Fault::MemoryLimit { .. } => "memory-limit",
            Fault::Trap(_) => "trap",
        }
    }
}

/// The outcome of one call.
pub struct CallOutcome {
    /// The guest's answer, or why there is none.
    pub result: Result<GuestResult, Fault>,
    /// Lines the plugin logged during the call.
    pub logs: Vec<LogLine>,
    /// Log lines dropped past the per-step cap.
    pub logs_dropped: usize,
    /// Fuel the call burned.
    pub fuel_used: u64,
    /// Outbound HTTP destinations the host refused during the call.
    pub http_denied: Vec<String>,
}

/// Limits for one call.
#[derive(Debug, Clone)]
pub struct CallBudget {
    /// Absolute deadline.
    pub deadline: Instant,
    /// The timeout the deadline came from, for messages.
    pub timeout: Duration,
    /// Fuel for the call.
    pub fuel: u64,
    /// Client cancellation.
    pub cancel: CancellationToken,
}

/// A live instance of one plugin, owned by one session.
pub struct PluginInstance {
    store: Store<HostState>,
    bindings: Plugin,
    plugin: Arc<LoadedPlugin>,
}

impl PluginInstance {
    /// Instantiates `plugin` with a fresh store. Instantiation runs guest code, so
    /// it is held to `budget` too.
    pub async fn new(
        plugin: Arc<LoadedPlugin>,
        memory_bytes: u64,
        max_logs: usize,
        budget: &CallBudget,
    ) -> Result<Self, InstantiateError> {
        let state = HostState::new(
            plugin.name_arc(),
            plugin.grant().clone(),
            plugin.allow_list().clone(),
            plugin.services().clone(),
            memory_bytes,
            max_logs,
        );
        let mut store = Store::new(plugin.engine(), state);
        store.limiter(|state| &mut state.limiter);
        store.epoch_deadline_callback(|ctx| {
            let state = ctx.data();
            if state.cancel.is_cancelled() || Instant::now() >= state.deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                // Yield every tick so a busy guest never holds a worker thread.
                Ok(UpdateDeadline::Yield(1))
            }
        });
        arm(&mut store, budget);
        let instantiate = plugin.pre().instantiate_async(&mut store);
        let bindings = tokio::select! {
            biased;
            result = instantiate => result.map_err(|e| InstantiateError::classify(&store, e))?,
            () = tokio::time::sleep_until(budget.deadline.into()) => {
                return Err(InstantiateError::Fault(Fault::Timeout(budget.timeout.as_millis() as u64)));
            }
            () = budget.cancel.cancelled() => return Err(InstantiateError::Fault(Fault::Cancelled)),
        };
        Ok(Self {
            store,
            bindings,
            plugin,
        })
    }

    /// The plugin this is an instance of.
    pub fn plugin(&self) -> &Arc<LoadedPlugin> {
        &self.plugin
    }

    /// Calls `verb` with `input` (JSON text) under `budget`.
    pub async fn invoke(&mut self, verb: &str, input: &str, budget: &CallBudget) -> CallOutcome {
        arm(&mut self.store, budget);
        let call = self
            .bindings
            .stephost_plugin_tool()
            .call_invoke(&mut self.store, verb, input);
        // The epoch callback stops a busy guest; the timer stops a guest blocked
        // in a host call (a WASI sleep), which epochs cannot reach.
        let result = tokio::select! {
            biased;
            result = call => result.map_err(|e| classify(self.store.data(), e, budget)),
            () = tokio::time::sleep_until(budget.deadline.into()) => {
                Err(Fault::Timeout(budget.timeout.as_millis() as u64))
            }
            () = budget.cancel.cancelled() => Err(Fault::Cancelled),
        };
        let fuel_left = self.store.get_fuel().unwrap_or(0);
        let state = self.store.data_mut();
        CallOutcome {
            result: result.map_err(|fault| with_stderr(fault, &state.stderr.take())),
            logs: std::mem::take(&mut state.logs),
            logs_dropped: std::mem::take(&mut state.logs_dropped),
            fuel_used: budget.fuel.saturating_sub(fuel_left),
            http_denied: std::mem::take(&mut state.http_gate.denied),
        }
    }

    /// Calls `describe` (used once at load time on a throwaway instance).
    pub async fn describe(
        &mut self,
        budget: &CallBudget,
    ) -> Result<super::bindings::stephost::plugin::types::PluginInfo, Fault> {
        arm(&mut self.store, budget);
        let call = self
            .bindings
            .stephost_plugin_tool()
            .call_describe(&mut self.store);
        tokio::select! {
            biased;
            result = call => result.map_err(|e| classify(self.store.data(), e, budget)),
            () = tokio::time::sleep_until(budget.deadline.into()) => {
                Err(Fault::Timeout(budget.timeout.as_millis() as u64))
            }
        }
    }
}

/// Sets the store's deadline, fuel and cancellation for the next call.
fn arm(store: &mut Store<HostState>, budget: &CallBudget) {
    let state = store.data_mut();
    state.deadline = budget.deadline;
    state.cancel = budget.cancel.clone();
    state.limiter.denied = None;
    // Fuel is only off when consumption is disabled, which the engine never does.
    let _ = store.set_fuel(budget.fuel);
    store.set_epoch_deadline(1);
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

/// Why an instance could not be created.
#[derive(Debug, thiserror::Error)]
pub enum InstantiateError {
    /// All pool slots are in use.
    #[error(
        "no plugin instance slot is free (engine.max_instances reached); retry after other sessions end"
    )]
    PoolExhausted,
    /// Instantiation trapped or ran out of time.
    #[error(transparent)]
    Fault(#[from] Fault),
}

impl InstantiateError {
    fn classify(store: &Store<HostState>, error: wasmtime::Error) -> Self {
        if error
            .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
            .is_some()
        {
            return Self::PoolExhausted;
        }
        let budget = CallBudget {
            deadline: store.data().deadline,
            timeout: Duration::ZERO,
            fuel: 0,
            cancel: store.data().cancel.clone(),
        };
        Self::Fault(classify(store.data(), error, &budget))
    }
}
