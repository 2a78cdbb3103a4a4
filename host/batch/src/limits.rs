//! The limits every step and batch is held to (`[limits]`, narrowed per tenant).

use serde::{Deserialize, Serialize};

/// Mebibyte.
const MIB: u64 = 1024 * 1024;

/// Limits applied to every step and batch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Linear memory one plugin instance may hold, in MiB.
    pub memory_mib: u64,
    /// Fuel (roughly, wasm instructions) one step may burn. About 11 G units is one
    /// second of busy CPU on the reference machine.
    pub fuel_per_step: u64,
    /// Step timeout used when a step names none, in ms.
    pub step_timeout_ms: u64,
    /// Largest step timeout a step may ask for, in ms.
    pub max_step_timeout_ms: u64,
    /// Batch timeout used when a batch names none, in ms.
    pub batch_timeout_ms: u64,
    /// Largest batch timeout a batch may ask for, in ms.
    pub max_batch_timeout_ms: u64,
    /// Most steps one batch may hold.
    pub max_steps_per_batch: usize,
    /// Most runs a step's `retry.attempts` may ask for.
    pub max_attempts: u32,
    /// Most log lines kept per step in the report.
    pub max_log_lines_per_step: usize,
    /// Largest result one step may return: its value as JSON text plus its text
    /// and image content, in bytes.
    pub max_result_bytes: u64,
    /// Largest total of results (and resolved inputs) one batch report may hold,
    /// in bytes. The step that would pass it fails and the batch stops there.
    pub max_report_bytes: u64,
    /// Largest total of `assign_to` variables one session may hold, in bytes.
    pub max_session_vars_bytes: u64,
    /// Largest input one step may have once its `${...}` references are
    /// substituted, as JSON text in bytes. Checked from the sizes of the
    /// referenced values before anything is substituted.
    pub max_input_bytes: u64,
    /// Deepest nesting of arrays and objects a step's input may have, as
    /// written and once resolved.
    pub max_input_depth: usize,
    /// Bytes of regular files one tenant may hold in all of its read-write
    /// granted folders together; a write past it fails with the guest's
    /// "disk quota exceeded" (WASI `quota`), before anything is written.
    pub disk_bytes: u64,
    /// Entries (files, directories, links) one tenant may hold in all of its
    /// read-write granted folders together.
    pub disk_files: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_mib: 256,
            fuel_per_step: 1_000_000_000_000,
            step_timeout_ms: 30_000,
            max_step_timeout_ms: 600_000,
            batch_timeout_ms: 120_000,
            max_batch_timeout_ms: 600_000,
            max_steps_per_batch: 1_000,
            // 11: a first run and 10 more, rf-mcp's documented most
            // `max_recovery_attempts`.
            max_attempts: 11,
            max_log_lines_per_step: 200,
            max_result_bytes: 16 * MIB,
            max_report_bytes: 64 * MIB,
            max_session_vars_bytes: 64 * MIB,
            max_input_bytes: 16 * MIB,
            max_input_depth: 64,
            disk_bytes: 1024 * MIB,
            disk_files: 100_000,
        }
    }
}

impl Limits {
    /// Memory limit in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_mib.saturating_mul(MIB)
    }
}

/// A caller's own ceilings (a tenant's `limits`), each `None` where it keeps
/// the host's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitCaps {
    /// Ceiling for `memory_mib`.
    pub memory_mib: Option<u64>,
    /// Ceiling for `fuel_per_step`.
    pub fuel_per_step: Option<u64>,
    /// Ceiling for `max_step_timeout_ms`.
    pub max_step_timeout_ms: Option<u64>,
    /// Ceiling for `max_batch_timeout_ms`.
    pub max_batch_timeout_ms: Option<u64>,
    /// Ceiling for `max_steps_per_batch`.
    pub max_steps_per_batch: Option<usize>,
    /// Ceiling for `max_result_bytes`.
    pub max_result_bytes: Option<u64>,
    /// Ceiling for `max_report_bytes`.
    pub max_report_bytes: Option<u64>,
    /// Ceiling for `max_session_vars_bytes`.
    pub max_session_vars_bytes: Option<u64>,
    /// Ceiling for `max_input_bytes`.
    pub max_input_bytes: Option<u64>,
    /// Ceiling for `disk_bytes`.
    pub disk_bytes: Option<u64>,
    /// Ceiling for `disk_files`.
    pub disk_files: Option<u64>,
}

impl Limits {
    /// These limits narrowed by `caps`: a caller can lower a limit, never
    /// raise it, and the default step and batch timeouts never exceed the
    /// narrowed maxima (so what a step gets by default it may also ask for).
    pub fn capped_by(&self, caps: &LimitCaps) -> Limits {
        fn cap<T: Ord + Copy>(own: Option<T>, host: T) -> T {
            own.map_or(host, |v| v.min(host))
        }
        let mut limits = self.clone();
        limits.memory_mib = cap(caps.memory_mib, self.memory_mib);
        limits.fuel_per_step = cap(caps.fuel_per_step, self.fuel_per_step);
        limits.max_step_timeout_ms = cap(caps.max_step_timeout_ms, self.max_step_timeout_ms);
        limits.max_batch_timeout_ms = cap(caps.max_batch_timeout_ms, self.max_batch_timeout_ms);
        limits.max_steps_per_batch = cap(caps.max_steps_per_batch, self.max_steps_per_batch);
        limits.max_result_bytes = cap(caps.max_result_bytes, self.max_result_bytes);
        limits.max_report_bytes = cap(caps.max_report_bytes, self.max_report_bytes);
        limits.max_session_vars_bytes =
            cap(caps.max_session_vars_bytes, self.max_session_vars_bytes);
        limits.max_input_bytes = cap(caps.max_input_bytes, self.max_input_bytes);
        limits.disk_bytes = cap(caps.disk_bytes, self.disk_bytes);
        limits.disk_files = cap(caps.disk_files, self.disk_files);
        limits.step_timeout_ms = limits.step_timeout_ms.min(limits.max_step_timeout_ms);
        limits.batch_timeout_ms = limits.batch_timeout_ms.min(limits.max_batch_timeout_ms);
        limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_lower_limits_and_never_raise_them() {
        let host = Limits::default();
        let caps = LimitCaps {
            max_step_timeout_ms: Some(10_000),
            fuel_per_step: Some(u64::MAX),
            ..LimitCaps::default()
        };
        let narrowed = host.capped_by(&caps);
        assert_eq!(narrowed.max_step_timeout_ms, 10_000);
        assert_eq!(
            narrowed.step_timeout_ms, 10_000,
            "the default follows the cap"
        );
        assert_eq!(narrowed.fuel_per_step, host.fuel_per_step);
        assert_eq!(host.capped_by(&LimitCaps::default()), host);
        let disk = host.capped_by(&LimitCaps {
            disk_bytes: Some(MIB),
            disk_files: Some(u64::MAX),
            ..LimitCaps::default()
        });
        assert_eq!((disk.disk_bytes, disk.disk_files), (MIB, host.disk_files));
    }
}
