//! Per-instance memory limit that remembers when it was hit, so the report can
//! name the limit instead of showing a bare trap.

use wasmtime::ResourceLimiter;

/// Caps the linear memory of one instance.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    max_bytes: u64,
    /// The size a denied growth asked for.
    pub(crate) denied: Option<u64>,
}

impl MemoryLimiter {
    /// A limiter allowing `max_bytes` per linear memory.
    pub(crate) fn new(max_bytes: u64) -> Self {
        Self {
            max_bytes,
            denied: None,
        }
    }

    /// The limit in bytes.
    pub(crate) fn max_bytes(&self) -> u64 {
        self.max_bytes
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let desired = desired as u64;
        if desired > self.max_bytes {
            self.denied = Some(desired);
            // An error (not `Ok(false)`) traps at once: a Rust guest would
            // otherwise abort with a bare `unreachable` that names nothing.
            return Err(wasmtime::format_err!(
                "memory limit of {} MiB per instance reached (growing to {} MiB)",
                self.max_bytes / (1024 * 1024),
                desired.div_ceil(1024 * 1024)
            ));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}
