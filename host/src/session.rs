//! Sessions: the state that outlives one batch. Each holds its own plugin
//! instances (a counter, a browser handle, Robot Framework variables live in
//! their memory) and the named variables that `assign_to` stored. Sessions are
//! scoped by tenant: the same id from two tenants names two sessions, so a
//! plugin instance never serves two tenants.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::plugins::PluginInstance;

/// What a session holds. A batch locks it for its whole run, so batches in one
/// session run one after another and never see half of another's changes.
#[derive(Default)]
pub struct SessionState {
    /// Variables set with `assign_to`, visible to later batches.
    pub vars: BTreeMap<String, Value>,
    /// JSON size of each variable in `vars`, for `limits.max_session_vars_bytes`.
    pub var_bytes: BTreeMap<String, u64>,
    /// Live plugin instances, by plugin name.
    pub instances: HashMap<String, PluginInstance>,
}

/// One session.
pub struct Session {
    id: String,
    tenant: String,
    state: tokio::sync::Mutex<SessionState>,
    last_used: Mutex<Instant>,
    /// Live plugin instances as of the end of the last batch, readable by
    /// metrics without taking the state lock.
    instances: AtomicUsize,
}

impl Session {
    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tenant it belongs to.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Locks its state for a batch.
    pub async fn lock(&self) -> tokio::sync::MutexGuard<'_, SessionState> {
        self.touch();
        let guard = self.state.lock().await;
        self.touch();
        guard
    }

    /// Records how many plugin instances it holds.
    pub fn set_instance_count(&self, count: usize) {
        self.instances.store(count, Ordering::Relaxed);
    }

    /// Plugin instances it held at the end of its last batch.
    pub fn instance_count(&self) -> usize {
        self.instances.load(Ordering::Relaxed)
    }

    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }
}

/// A session could not be had.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SessionError {
    /// The id is not acceptable.
    #[error("session_id {0:?} is not valid: use 1-128 characters from A-Z a-z 0-9 . _ : -")]
    InvalidId(String),
    /// Too many sessions.
    #[error(
        "too many live sessions ({key} = {limit}); end one or wait for idle sessions to expire"
    )]
    TooMany {
        /// The limit's config key.
        key: &'static str,
        /// The limit.
        limit: usize,
    },
    /// The session lived on an earlier run of this instance, which ended.
    #[error(
        "session `{0}` was lost: the instance that held it restarted and its plugin state (browser, variables) is gone; start a new session (omit session_id)"
    )]
    Lost(String),
    /// The session was minted by this run of the instance but is gone.
    #[error(
        "session `{id}` expired or never existed here (idle sessions are dropped after {idle_s} s); start a new session (omit session_id)"
    )]
    Expired {
        /// The id.
        id: String,
        /// The idle timeout.
        idle_s: u64,
    },
}

/// All live sessions of one host, keyed by (tenant, id).
pub struct Sessions {
    map: Mutex<HashMap<(String, String), Arc<Session>>>,
    idle_timeout: Duration,
    max: usize,
    instance: String,
    boot: String,
}

impl Sessions {
    /// An empty set for the instance named `instance`.
    pub fn new(idle_timeout: Duration, max: usize, instance: &str) -> Self {
        let boot = uuid::Uuid::new_v4().simple().to_string();
        Self {
            map: Mutex::new(HashMap::new()),
            idle_timeout,
            max,
            instance: instance.to_owned(),
            boot: boot[..8].to_owned(),
        }
    }

    /// A new session id, `<instance>.<boot>.<random>`: a proxy can route on the
    /// instance, and a restarted instance can tell a lost session from a new one.
    pub fn mint_id(&self) -> String {
        let random = uuid::Uuid::new_v4().simple().to_string();
        format!("{}.{}.{}", self.instance, self.boot, &random[..20])
    }

    /// The session `id` of `tenant`, created when new; a fresh session with a
    /// minted id when `id` is `None`. `tenant_max` caps the tenant's sessions.
    pub fn get_or_create(
        &self,
        tenant: &str,
        id: Option<&str>,
        tenant_max: usize,
    ) -> Result<Arc<Session>, SessionError> {
        let given = id.is_some();
        let id = match id {
            Some(id) if valid_id(id) => id.to_owned(),
            Some(id) => return Err(SessionError::InvalidId(id.to_owned())),
            None => self.mint_id(),
        };
        let key = (tenant.to_owned(), id);
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(session) = map.get(&key) {
            session.touch();
            return Ok(session.clone());
        }
        let id = key.1.clone();
        // An id in this instance's minted form is never silently re-created
        // empty: the caller would take a fresh session for its old state.
        let mut parts = id.splitn(3, '.');
        if let (true, Some(instance), Some(boot), Some(_)) =
            (given, parts.next(), parts.next(), parts.next())
            && instance == self.instance
            && boot.len() == self.boot.len()
            && boot.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(if boot == self.boot {
                SessionError::Expired {
                    id,
                    idle_s: self.idle_timeout.as_secs(),
                }
            } else {
                SessionError::Lost(id)
            });
        }
        if map.len() >= self.max {
            return Err(SessionError::TooMany {
                key: "sessions.max_sessions",
                limit: self.max,
            });
        }
        if map.keys().filter(|(t, _)| t == tenant).count() >= tenant_max {
            return Err(SessionError::TooMany {
                key: "limits.max_sessions",
                limit: tenant_max,
            });
        }
        let session = Arc::new(Session {
            id,
            tenant: tenant.to_owned(),
            state: tokio::sync::Mutex::new(SessionState::default()),
            last_used: Mutex::new(Instant::now()),
            instances: AtomicUsize::new(0),
        });
        map.insert(key, session.clone());
        Ok(session)
    }

    /// A session that already exists.
    pub fn get(&self, tenant: &str, id: &str) -> Option<Arc<Session>> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(tenant.to_owned(), id.to_owned()))
            .cloned()
    }

    /// Ends a session now, dropping its instances.
    pub fn remove(&self, tenant: &str, id: &str) -> bool {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(tenant.to_owned(), id.to_owned()))
            .is_some()
    }

    /// Live sessions and their plugin instances, per tenant.
    pub fn per_tenant(&self) -> BTreeMap<String, (usize, usize)> {
        let mut out: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for session in self.map.lock().unwrap_or_else(|e| e.into_inner()).values() {
            let entry = out.entry(session.tenant.clone()).or_default();
            entry.0 += 1;
            entry.1 += session.instance_count();
        }
        out
    }

    /// Number of live sessions.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops sessions idle past the timeout that no batch is using, with their
    /// plugin instances (whose pool slots return to the pool); returns how many
    /// went.
    pub fn reap(&self) -> usize {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let before = map.len();
        map.retain(|(tenant, id), session| {
            let idle = session.idle_for() >= self.idle_timeout;
            // A session whose lock is held is running a batch: never idle.
            let busy = session.state.try_lock().is_err();
            let keep = !idle || busy || Arc::strong_count(session) > 1;
            if !keep {
                tracing::info!(%tenant, session = %id, "dropping idle session");
            }
            keep
        });
        before - map.len()
    }

    /// How often [`Sessions::reap`] should run.
    pub fn reap_interval(&self) -> Duration {
        (self.idle_timeout / 4).clamp(Duration::from_secs(1), Duration::from_secs(60))
    }
}

fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_id_same_session_and_fresh_ids_differ() {
        let sessions = Sessions::new(Duration::from_secs(60), 10, "pod-0");
        let a = sessions
            .get_or_create("t", Some("abc"), 10)
            .expect("created");
        let b = sessions.get_or_create("t", Some("abc"), 10).expect("found");
        assert!(Arc::ptr_eq(&a, &b));
        let c = sessions.get_or_create("t", None, 10).expect("fresh");
        let d = sessions.get_or_create("t", None, 10).expect("fresh");
        assert_ne!(c.id(), d.id());
        assert!(c.id().starts_with("pod-0."), "{}", c.id());
    }

    #[test]
    fn the_same_id_from_two_tenants_is_two_sessions() {
        let sessions = Sessions::new(Duration::from_secs(60), 10, "local");
        let a = sessions.get_or_create("a", Some("shared"), 10).expect("a");
        let b = sessions.get_or_create("b", Some("shared"), 10).expect("b");
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(sessions.get("a", "shared").is_some());
        assert!(sessions.get("c", "shared").is_none());
    }

    #[test]
    fn invalid_ids_and_caps_are_named() {
        let sessions = Sessions::new(Duration::from_secs(60), 2, "local");
        assert!(matches!(
            sessions.get_or_create("t", Some("a b"), 10),
            Err(SessionError::InvalidId(_))
        ));
        sessions.get_or_create("t", Some("one"), 1).expect("first");
        let err = sessions
            .get_or_create("t", Some("two"), 1)
            .err()
            .expect("tenant cap");
        assert!(err.to_string().contains("limits.max_sessions = 1"), "{err}");
        sessions.get_or_create("u", Some("two"), 5).expect("second");
        let err = sessions
            .get_or_create("v", Some("three"), 5)
            .err()
            .expect("host cap");
        assert!(
            err.to_string().contains("sessions.max_sessions = 2"),
            "{err}"
        );
    }

    #[test]
    fn minted_ids_are_never_silently_recreated() {
        let before = Sessions::new(Duration::from_secs(60), 10, "pod-1");
        let old = before
            .get_or_create("t", None, 10)
            .expect("minted")
            .id()
            .to_owned();
        let after = Sessions::new(Duration::from_secs(60), 10, "pod-1");
        let err = after
            .get_or_create("t", Some(&old), 10)
            .err()
            .expect("lost");
        assert!(matches!(err, SessionError::Lost(_)), "{err}");
        assert!(err.to_string().contains("restarted"), "{err}");
        let gone = after.mint_id();
        let err = after
            .get_or_create("t", Some(&gone), 10)
            .err()
            .expect("expired");
        assert!(matches!(err, SessionError::Expired { .. }), "{err}");
        // Another instance's ids, and free-form ids, are created here as usual.
        after
            .get_or_create("t", Some("pod-2.0123abcd.xyz"), 10)
            .expect("other instance");
    }

    #[test]
    fn reap_drops_only_idle_unused_sessions() {
        let sessions = Sessions::new(Duration::ZERO, 10, "local");
        let held = sessions
            .get_or_create("t", Some("held"), 10)
            .expect("created");
        sessions
            .get_or_create("t", Some("idle"), 10)
            .expect("created");
        assert_eq!(sessions.reap(), 1);
        assert!(sessions.get("t", "held").is_some());
        drop(held);
        assert_eq!(sessions.reap(), 1);
        assert!(sessions.is_empty());
    }
}
