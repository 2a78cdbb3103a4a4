//! The wasmtime engine: pooling allocator, epoch ticker, fuel, and the compile cache.
//!
//! One [`Engine`] serves every plugin and tenant in the process. Time is enforced
//! with epochs: a ticker thread bumps the epoch every `epoch_tick_us`, and each
//! store's deadline callback compares the clock against its step's absolute
//! deadline (see `plugins::instance`). Comparing against an `Instant` instead of
//! counting ticks keeps lateness under a millisecond even when the ticker drifts.

mod cache;

pub(crate) use cache::CompileCache;
pub use cache::sha256_hex;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::{Config as WasmConfig, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::config::EngineConfig;
use crate::pool::Footprint;

/// Guard region after each linear memory. Bounds checks are explicit (the
/// reservation equals the memory limit), so the guard only needs to catch small
/// constant offsets.
const MEMORY_GUARD_BYTES: u64 = 32 * 1024 * 1024;

/// Builds the process-wide engine from its settings.
pub(crate) fn build_engine(settings: &EngineConfig) -> wasmtime::Result<Engine> {
    let max_memory = settings.max_memory_mib * 1024 * 1024;
    let mut pool = PoolingAllocationConfig::default();
    let instances = settings.max_instances;
    // Every total is `max_instances` slots of `Footprint::SLOT`: instances are
    // charged to tenants in those slots (`pool.rs`), so shares that add up to
    // `max_instances` fit in every total (stacks too: each store keeps one),
    // not only in component instances.
    let totals = Footprint::of_slots(instances);
    let most = Footprint::MOST;
    pool.total_component_instances(totals.component_instances)
        .total_core_instances(totals.core_instances)
        .total_memories(totals.memories)
        .total_tables(totals.tables)
        .total_stacks(totals.stacks)
        .max_memories_per_component(most.memories)
        .max_tables_per_component(most.tables)
        .max_core_instances_per_component(most.core_instances)
        .max_memory_size(usize::try_from(max_memory).unwrap_or(usize::MAX))
        .max_component_instance_size(1 << 20)
        .table_elements(100_000)
        // Keep a few pages resident so a reused slot starts without page faults.
        .linear_memory_keep_resident(64 * 1024)
        .max_unused_warm_slots(instances.min(100));

    let mut config = WasmConfig::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .consume_fuel(true)
        .memory_init_cow(true)
        .memory_reservation(max_memory)
        .memory_guard_size(MEMORY_GUARD_BYTES)
        .memory_reservation_for_growth(0)
        .memory_may_move(false)
        .max_wasm_stack(1 << 20)
        .async_stack_size(2 << 20)
        .parallel_compilation(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config)
}

/// Bumps the engine's epoch at a fixed interval until dropped.
pub(crate) struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    /// Starts a ticker thread for `engine`.
    pub(crate) fn start(engine: &Engine, interval: Duration) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("stephost-epoch".into())
            .spawn({
                let engine = engine.clone();
                let stop = stop.clone();
                move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(interval);
                        engine.increment_epoch();
                    }
                }
            })?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
