//! The instance's monotonic clock: the waits of the verbs (actionability,
//! settling, `wait_for_page`, downloads) all measure and pause on it.

/// Now, in ns since an arbitrary start.
pub(crate) fn now_ns() -> u64 {
    wasi::clocks::monotonic_clock::now()
}

/// Blocks the instance for `ns`.
pub(crate) fn sleep_ns(ns: u64) {
    wasi::clocks::monotonic_clock::subscribe_duration(ns).block();
}
