//! Admission: how many batches a tenant (and the whole server) may run at once
//! and how many a tenant may start per minute. A limit that is hit rejects the
//! batch at once with an error naming the limit and its value; nothing queues
//! without bound.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why a batch was not admitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Rejection {
    /// The tenant already runs its maximum of batches.
    #[error(
        "tenant `{tenant}` already runs {limit} batches (limits.max_concurrent_batches = {limit}); retry after one finishes"
    )]
    TenantBusy {
        /// Tenant id.
        tenant: String,
        /// The limit.
        limit: usize,
    },
    /// The server runs its maximum of batches.
    #[error(
        "server busy: {limit} batches are running (server.max_concurrent_batches = {limit}); retry after {retry_after_s} s"
    )]
    ServerBusy {
        /// The limit.
        limit: usize,
        /// Suggested wait.
        retry_after_s: u64,
    },
    /// The tenant started too many batches in the last minute.
    #[error(
        "tenant `{tenant}` started {limit} batches in the last minute (limits.batches_per_minute = {limit}); retry after {retry_after_s} s"
    )]
    RateLimited {
        /// Tenant id.
        tenant: String,
        /// The limit.
        limit: u32,
        /// Seconds until a slot frees.
        retry_after_s: u64,
    },
}

impl Rejection {
    /// The code reported for it.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TenantBusy { .. } | Self::ServerBusy { .. } => "busy",
            Self::RateLimited { .. } => "rate-limited",
        }
    }

    /// The limit's config key.
    pub fn limit_key(&self) -> &'static str {
        match self {
            Self::TenantBusy { .. } => "limits.max_concurrent_batches",
            Self::ServerBusy { .. } => "server.max_concurrent_batches",
            Self::RateLimited { .. } => "limits.batches_per_minute",
        }
    }
}

/// Permits held while a batch runs.
pub struct Admission {
    _tenant: OwnedSemaphorePermit,
    _server: OwnedSemaphorePermit,
}

/// The server-wide cap.
pub struct ServerQuota {
    running: Arc<Semaphore>,
    limit: usize,
}

impl ServerQuota {
    /// At most `limit` batches at once across all tenants.
    pub fn new(limit: usize) -> Self {
        Self {
            running: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    /// Batches running now.
    pub fn running(&self) -> usize {
        self.limit - self.running.available_permits()
    }

    /// The cap.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// One tenant's admission state.
pub struct TenantQuota {
    tenant: String,
    running: Arc<Semaphore>,
    max_concurrent: usize,
    per_minute: u32,
    started: Mutex<VecDeque<Instant>>,
}

const WINDOW: Duration = Duration::from_secs(60);

impl TenantQuota {
    /// Admission for `tenant` with these limits.
    pub fn new(tenant: &str, max_concurrent: usize, per_minute: u32) -> Self {
        Self {
            tenant: tenant.to_owned(),
            running: Arc::new(Semaphore::new(max_concurrent)),
            max_concurrent,
            per_minute,
            started: Mutex::new(VecDeque::new()),
        }
    }

    /// Admits one batch or says which limit stops it. The rate is checked
    /// first so a rejected batch does not hold a concurrency slot, and a start
    /// is counted only once both concurrency permits are held: a call refused
    /// as busy did not start, so it does not use up the tenant's minute.
    pub fn admit(&self, server: &ServerQuota) -> Result<Admission, Rejection> {
        let now = Instant::now();
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        while started
            .front()
            .is_some_and(|t| now.duration_since(*t) >= WINDOW)
        {
            started.pop_front();
        }
        if started.len() >= self.per_minute as usize {
            let oldest = started.front().copied().unwrap_or(now);
            let wait = WINDOW.saturating_sub(now.duration_since(oldest));
            return Err(Rejection::RateLimited {
                tenant: self.tenant.clone(),
                limit: self.per_minute,
                retry_after_s: wait.as_secs().max(1),
            });
        }
        let tenant =
            self.running
                .clone()
                .try_acquire_owned()
                .map_err(|_| Rejection::TenantBusy {
                    tenant: self.tenant.clone(),
                    limit: self.max_concurrent,
                })?;
        let server =
            server
                .running
                .clone()
                .try_acquire_owned()
                .map_err(|_| Rejection::ServerBusy {
                    limit: server.limit,
                    retry_after_s: 1,
                })?;
        started.push_back(now);
        Ok(Admission {
            _tenant: tenant,
            _server: server,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_caps_name_their_limit() {
        let server = ServerQuota::new(3);
        let quota = TenantQuota::new("acme", 2, 100);
        let a = quota.admit(&server).expect("first");
        let _b = quota.admit(&server).expect("second");
        let err = quota.admit(&server).err().expect("third is refused");
        assert_eq!(err.code(), "busy");
        assert!(
            err.to_string()
                .contains("limits.max_concurrent_batches = 2"),
            "{err}"
        );
        drop(a);
        let _c = quota.admit(&server).expect("a slot freed");
        let other = TenantQuota::new("other", 5, 100);
        let _d = other.admit(&server).expect("server has one left");
        let err = other.admit(&server).err().expect("server full");
        assert!(
            err.to_string()
                .contains("server.max_concurrent_batches = 3"),
            "{err}"
        );
        assert_eq!(server.running(), 3);
    }

    #[test]
    fn the_rate_limit_counts_starts_per_minute() {
        let server = ServerQuota::new(100);
        let quota = TenantQuota::new("acme", 100, 2);
        drop(quota.admit(&server).expect("1"));
        drop(quota.admit(&server).expect("2"));
        let err = quota.admit(&server).err().expect("3 in a minute");
        assert_eq!(err.code(), "rate-limited");
        assert!(
            err.to_string().contains("limits.batches_per_minute = 2"),
            "{err}"
        );
    }

    #[test]
    fn a_call_refused_as_busy_does_not_use_up_the_minute() {
        let server = ServerQuota::new(100);
        let quota = TenantQuota::new("acme", 1, 2);
        let running = quota.admit(&server).expect("1");
        for _ in 0..10 {
            let err = quota.admit(&server).err().expect("busy");
            assert_eq!(err.code(), "busy");
        }
        drop(running);
        drop(
            quota
                .admit(&server)
                .expect("the second start of the minute"),
        );
        let err = quota.admit(&server).err().expect("3 in a minute");
        assert_eq!(err.code(), "rate-limited");
    }
}
