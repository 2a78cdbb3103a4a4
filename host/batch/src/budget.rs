//! Time budgets: the one place where what a step, an attempt, a recovery action
//! or a wait may take is computed. The runtime enforces what is computed here
//! (epoch deadline, fuel, a timer and the cancellation token in one place); the
//! planner only checks that what a request asks for is within the limits.

use std::time::{Duration, Instant};

use stephost_contract::CallBudget;
use tokio_util::sync::CancellationToken;

use crate::Limits;

/// Room a waiting verb gets beyond its own wait, to report its timeout itself
/// rather than being cut off by the step's.
const WAIT_ROOM_MS: u64 = 5_000;

/// First pause between the runs of a retried step; it doubles per run.
const FIRST_BACKOFF: Duration = Duration::from_millis(25);

/// Longest pause between retries.
const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// The clock of one batch run: when it started and when its budget ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchClock {
    pub(crate) started: Instant,
    pub(crate) deadline: Instant,
}

impl BatchClock {
    /// Starts the batch's budget of `timeout` now.
    pub(crate) fn start(timeout: Duration) -> Self {
        let started = Instant::now();
        Self {
            started,
            deadline: started + timeout,
        }
    }

    /// Whether the batch's budget has run out.
    pub(crate) fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// What is left of the batch's budget.
    pub(crate) fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The budget of one call starting now: `min(step timeout, what is left of
    /// the batch)`, the step fuel, and the batch's cancellation.
    pub(crate) fn call(
        &self,
        step_timeout: Duration,
        limits: &Limits,
        cancel: &CancellationToken,
    ) -> CallBudget {
        let now = Instant::now();
        let deadline = (now + step_timeout).min(self.deadline);
        CallBudget {
            deadline,
            timeout: deadline.saturating_duration_since(now),
            fuel: limits.fuel_per_step,
            cancel: cancel.clone(),
        }
    }

    /// The pause after failed run `attempt` (1-based) before the next one:
    /// exponential from 25 ms, at most 500 ms, never past the batch's budget.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let exp = FIRST_BACKOFF.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
        exp.min(MAX_BACKOFF).min(self.left())
    }
}

/// The step timeout a verb that waits `wait_ms` needs: its wait plus room to
/// report, when that is more than the step timeout it would get anyway
/// (`limits.step_timeout_ms`), held to the caller's `limits.max_step_timeout_ms`.
/// `None` when the default is enough.
pub fn room_for_wait(wait_ms: u64, limits: &Limits) -> Option<u64> {
    let total = wait_ms.saturating_add(WAIT_ROOM_MS);
    (total > limits.step_timeout_ms).then(|| total.min(limits.max_step_timeout_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_get_room_within_the_callers_limits() {
        let limits = Limits::default();
        assert_eq!(room_for_wait(40_000, &limits), Some(45_000));
        assert_eq!(
            room_for_wait(25_000, &limits),
            None,
            "30 s default is enough"
        );
        assert_eq!(room_for_wait(26_000, &limits), Some(31_000));
        let tight = Limits {
            max_step_timeout_ms: 20_000,
            step_timeout_ms: 10_000,
            ..Limits::default()
        };
        assert_eq!(room_for_wait(60_000, &tight), Some(20_000));
    }

    #[test]
    fn a_call_never_outlives_its_batch() {
        let clock = BatchClock::start(Duration::from_millis(50));
        let budget = clock.call(
            Duration::from_secs(30),
            &Limits::default(),
            &CancellationToken::new(),
        );
        assert!(budget.deadline <= clock.deadline);
        assert!(budget.timeout <= Duration::from_millis(50));
        assert_eq!(
            clock.backoff(1),
            Duration::from_millis(25).min(clock.left())
        );
        assert!(clock.backoff(10) <= MAX_BACKOFF);
    }
}
