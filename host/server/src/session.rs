//! Sessions: the state that outlives one batch. Each holds its own plugin
//! instances (a counter, a browser handle, Robot Framework variables live in
//! their memory) and the named variables that `assign_to` stored. Sessions are
//! scoped by tenant: the same id from two tenants names two sessions, so a
//! plugin instance never serves two tenants.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stephost_batch::Vars;
use stephost_runtime::{Instances, ProcessCaps, TenantProcesses};

/// What a session holds. A batch locks it for its whole run, so batches in one
/// session run one after another and never see half of another's changes.
#[derive(Default)]
pub struct SessionState {
    /// Variables set with `assign_to`, visible to later batches.
    pub(crate) vars: Vars,
    /// Live plugin instances, one per plugin.
    pub(crate) instances: Instances,
}

/// How a session came to be, which decides how long it lives unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Lifetime {
    /// Minted for a call that named no session: dropped after
    /// `sessions.unclaimed_idle_timeout_s`, and the first to make room when its
    /// tenant is at its cap, until a call names its id.
    Unclaimed = 0,
    /// Named by a call (its id chosen by the client, or a minted id passed back):
    /// dropped after `sessions.idle_timeout_s` unused.
    Claimed = 1,
    /// Belongs to a transport session (stdio, a streamable HTTP session) and ends
    /// with it; the idle reaper leaves it to the transport.
    Transport = 2,
}

impl Lifetime {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Unclaimed,
            1 => Self::Claimed,
            _ => Self::Transport,
        }
    }
}

/// Which session a call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionRef<'a> {
    /// A fresh session with a minted id, unclaimed until a call names it.
    Fresh,
    /// The session with this id, created when the id is new (unless it is in
    /// this instance's minted form: then it expired or was lost).
    Named(&'a str),
    /// The session of the transport session with this id (minted by this
    /// instance), created on first use; it lives as long as the transport.
    Transport(&'a str),
}

/// One session.
pub struct Session {
    id: String,
    tenant: String,
    state: tokio::sync::Mutex<SessionState>,
    last_used: Mutex<Instant>,
    lifetime: AtomicU8,
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

    /// How it lives.
    pub fn lifetime(&self) -> Lifetime {
        Lifetime::from_u8(self.lifetime.load(Ordering::Relaxed))
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

    /// Marks it used now.
    pub fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }

    /// Whether a batch runs in it now.
    pub fn busy(&self) -> bool {
        self.state.try_lock().is_err()
    }

    /// Whether nothing but the session table holds it and no batch runs in it:
    /// only such a session may be dropped.
    fn unused(self: &Arc<Self>) -> bool {
        Arc::strong_count(self) == 1 && self.state.try_lock().is_ok()
    }
}

/// A session could not be had.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SessionError {
    /// The id is not acceptable.
    #[error("session_id {0:?} is not valid: use 1-128 characters from A-Z a-z 0-9 . _ : -")]
    InvalidId(String),
    /// The tenant is at its own session cap and none of its sessions can make room.
    #[error(
        "tenant `{tenant}` has {limit} live sessions, its cap ({key} = {limit}); end one (DELETE its MCP session) or reuse a session_id instead of starting new ones; unused sessions are dropped after {idle_s} s ({unclaimed_s} s for one no call has named again)"
    )]
    TenantFull {
        /// The tenant.
        tenant: String,
        /// The limit's config key.
        key: &'static str,
        /// The limit.
        limit: usize,
        /// `sessions.idle_timeout_s`.
        idle_s: u64,
        /// `sessions.unclaimed_idle_timeout_s`.
        unclaimed_s: u64,
    },
    /// The host is at its session cap (only when tenants' caps add up to more).
    #[error(
        "the host has {limit} live sessions, its cap (sessions.max_sessions = {limit}); end a session (DELETE its MCP session) or retry after idle sessions expire"
    )]
    HostFull {
        /// The limit.
        limit: usize,
    },
    /// The session lived on an earlier run of this instance, which ended.
    #[error(
        "session `{0}` was lost: the instance that held it restarted and its plugin state (browser, variables) is gone; start a new session (omit session_id)"
    )]
    Lost(String),
    /// The session was minted by another instance: the request reached the
    /// wrong one (that instance is down or restarting, and a proxy fell back).
    #[error(
        "session `{id}` lives on instance `{instance}`, not on this one (`{here}`): that instance is down or restarting, so its state (browser, variables) cannot be reached from here; retry later, or start a new session (omit session_id)"
    )]
    Elsewhere {
        /// The id.
        id: String,
        /// The instance that minted it.
        instance: String,
        /// This instance.
        here: String,
    },
    /// The session was minted by this run of the instance but is gone.
    #[error(
        "session `{id}` expired or was ended (unused sessions are dropped after {idle_s} s); start a new session (omit session_id)"
    )]
    Expired {
        /// The id.
        id: String,
        /// The idle timeout.
        idle_s: u64,
    },
}

/// Hex digits of the boot id and of the random part of a minted id.
const BOOT_LEN: usize = 8;
const RANDOM_LEN: usize = 20;

/// Where a minted session id comes from.
enum Minted {
    /// This run of this instance.
    ThisRun,
    /// An earlier run of this instance (it restarted).
    EarlierRun,
    /// Another instance.
    Elsewhere(String),
}

/// How long sessions live unused.
#[derive(Debug, Clone, Copy)]
pub struct SessionTimeouts {
    /// `sessions.idle_timeout_s`: claimed sessions.
    pub idle: Duration,
    /// `sessions.unclaimed_idle_timeout_s`: sessions no call has named.
    pub unclaimed: Duration,
}

/// All live sessions of one host, keyed by (tenant, id).
pub struct Sessions {
    map: Mutex<HashMap<(String, String), Arc<Session>>>,
    timeouts: SessionTimeouts,
    max: usize,
    instance: String,
    boot: String,
    /// Each tenant's account of live processes, which its sessions' processes
    /// are charged to.
    processes: Mutex<HashMap<String, TenantProcesses>>,
    process_caps: ProcessCaps,
}

impl Sessions {
    /// An empty set for the instance named `instance`, holding at most `max`.
    pub fn new(timeouts: SessionTimeouts, max: usize, instance: &str) -> Self {
        let boot = uuid::Uuid::new_v4().simple().to_string();
        Self {
            map: Mutex::new(HashMap::new()),
            timeouts,
            max,
            instance: instance.to_owned(),
            boot: boot[..BOOT_LEN].to_owned(),
            processes: Mutex::new(HashMap::new()),
            process_caps: ProcessCaps::default(),
        }
    }

    /// With these caps on the live processes of a session and of a tenant.
    pub fn with_process_caps(mut self, caps: ProcessCaps) -> Self {
        self.process_caps = caps;
        self
    }

    /// A new session's state, its processes charged to `tenant`'s account.
    fn new_state(&self, tenant: &str) -> SessionState {
        let mut accounts = self.processes.lock().unwrap_or_else(|e| e.into_inner());
        let account = accounts
            .entry(tenant.to_owned())
            .or_insert_with(|| TenantProcesses::new(tenant, self.process_caps));
        SessionState {
            vars: Vars::default(),
            instances: Instances::with_processes(account.session()),
        }
    }

    /// A new session id, `<instance>.<boot>.<random>`: a proxy can route on the
    /// instance, and a restarted instance can tell a lost session from a new one.
    pub fn mint_id(&self) -> String {
        let random = uuid::Uuid::new_v4().simple().to_string();
        format!("{}.{}.{}", self.instance, self.boot, &random[..RANDOM_LEN])
    }

    /// Where a minted id (`<instance>.<boot>.<random>`, exactly as
    /// [`Sessions::mint_id`] writes it) comes from; `None` for any other id.
    fn minted_by(&self, id: &str) -> Option<Minted> {
        let mut parts = id.splitn(3, '.');
        let (instance, boot, random) = (parts.next()?, parts.next()?, parts.next()?);
        let hex = |s: &str, n: usize| {
            s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        if instance.is_empty() || !hex(boot, BOOT_LEN) || !hex(random, RANDOM_LEN) {
            return None;
        }
        Some(if instance != self.instance {
            Minted::Elsewhere(instance.to_owned())
        } else if boot == self.boot {
            Minted::ThisRun
        } else {
            Minted::EarlierRun
        })
    }

    /// The session `which` asks for, of `tenant`, created when new.
    /// `tenant_max` caps the tenant's sessions (`tenant_key` names that cap);
    /// at the cap the tenant's least recently used unclaimed session makes room.
    pub fn get_or_create(
        &self,
        tenant: &str,
        which: SessionRef<'_>,
        tenant_max: usize,
        tenant_key: &'static str,
    ) -> Result<Arc<Session>, SessionError> {
        let (id, lifetime) = match which {
            SessionRef::Fresh => (self.mint_id(), Lifetime::Unclaimed),
            SessionRef::Named(id) if valid_id(id) => (id.to_owned(), Lifetime::Claimed),
            SessionRef::Transport(id) if valid_id(id) => (id.to_owned(), Lifetime::Transport),
            SessionRef::Named(id) | SessionRef::Transport(id) => {
                return Err(SessionError::InvalidId(id.to_owned()));
            }
        };
        let key = (tenant.to_owned(), id);
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(session) = map.get(&key) {
            session.touch();
            if lifetime == Lifetime::Claimed && session.lifetime() == Lifetime::Unclaimed {
                session
                    .lifetime
                    .store(Lifetime::Claimed as u8, Ordering::Relaxed);
            }
            return Ok(session.clone());
        }
        let id = key.1.clone();
        // An id in this instance's minted form is never silently re-created
        // empty: the caller would take a fresh session for its old state.
        if lifetime == Lifetime::Claimed
            && let Some(minted) = self.minted_by(&id)
        {
            return Err(match minted {
                Minted::ThisRun => SessionError::Expired {
                    id,
                    idle_s: self.timeouts.idle.as_secs(),
                },
                Minted::EarlierRun => SessionError::Lost(id),
                Minted::Elsewhere(instance) => SessionError::Elsewhere {
                    id,
                    instance,
                    here: self.instance.clone(),
                },
            });
        }
        let of_tenant = map.keys().filter(|(t, _)| t == tenant).count();
        if of_tenant >= tenant_max && !evict_unclaimed(&mut map, tenant) {
            return Err(SessionError::TenantFull {
                tenant: tenant.to_owned(),
                key: tenant_key,
                limit: tenant_max,
                idle_s: self.timeouts.idle.as_secs(),
                unclaimed_s: self.timeouts.unclaimed.as_secs(),
            });
        }
        if map.len() >= self.max && !evict_unclaimed(&mut map, tenant) {
            return Err(SessionError::HostFull { limit: self.max });
        }
        let session = Arc::new(Session {
            id,
            tenant: tenant.to_owned(),
            state: tokio::sync::Mutex::new(self.new_state(tenant)),
            last_used: Mutex::new(Instant::now()),
            lifetime: AtomicU8::new(lifetime as u8),
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

    /// Ends a session now, dropping its instances (once a batch still running
    /// in it ends).
    pub fn remove(&self, tenant: &str, id: &str) -> bool {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(tenant.to_owned(), id.to_owned()))
            .is_some()
    }

    /// Ends every session, dropping their instances (browser sessions, drivers'
    /// work): the last step of an orderly shutdown.
    pub fn clear(&self) -> usize {
        let drained: Vec<_> = self
            .map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        drained.len()
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

    /// Drops sessions idle past their timeout that no batch is using, with
    /// their plugin instances (whose pool slots return to the pool); returns how
    /// many went. Transport sessions are left to their transport.
    pub fn reap(&self) -> usize {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let before = map.len();
        map.retain(|(tenant, id), session| {
            let timeout = match session.lifetime() {
                Lifetime::Unclaimed => self.timeouts.unclaimed,
                Lifetime::Claimed => self.timeouts.idle,
                Lifetime::Transport => return true,
            };
            let keep = session.idle_for() < timeout || !session.unused();
            if !keep {
                tracing::info!(%tenant, session = %id, "dropping idle session");
            }
            keep
        });
        before - map.len()
    }

    /// Drops `tenant`'s least recently used unclaimed session that holds
    /// plugin instances and that nothing uses, so its instances give their
    /// pool slots back: what a tenant at its share of the instance pool does
    /// before it is refused. Whether one went.
    pub fn drop_idle_unclaimed(&self, tenant: &str) -> bool {
        let dropped = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            let victim = map
                .iter()
                .filter(|((t, _), s)| {
                    t == tenant
                        && s.lifetime() == Lifetime::Unclaimed
                        && s.instance_count() > 0
                        && s.unused()
                })
                .max_by_key(|(_, s)| s.idle_for())
                .map(|(key, _)| key.clone());
            victim.and_then(|key| map.remove_entry(&key))
        };
        // Dropped here, not under the table's lock: its instances' stores,
        // browser sessions and library processes go with it.
        match dropped {
            Some(((tenant, id), session)) => {
                tracing::info!(%tenant, session = %id, "dropping an unclaimed session to free instance-pool slots");
                drop(session);
                true
            }
            None => false,
        }
    }

    /// How often [`Sessions::reap`] should run.
    pub fn reap_interval(&self) -> Duration {
        (self.timeouts.unclaimed.min(self.timeouts.idle) / 4)
            .clamp(Duration::from_millis(250), Duration::from_secs(60))
    }

    /// The idle timeouts in force.
    pub fn timeouts(&self) -> SessionTimeouts {
        self.timeouts
    }
}

/// Drops `tenant`'s least recently used unclaimed session that nothing uses;
/// whether one went.
fn evict_unclaimed(map: &mut HashMap<(String, String), Arc<Session>>, tenant: &str) -> bool {
    let victim = map
        .iter()
        .filter(|((t, _), s)| t == tenant && s.lifetime() == Lifetime::Unclaimed && s.unused())
        .max_by_key(|(_, s)| s.idle_for())
        .map(|(key, _)| key.clone());
    match victim {
        Some(key) => {
            tracing::info!(tenant = %key.0, session = %key.1, "dropping an unclaimed session to make room");
            map.remove(&key);
            true
        }
        None => false,
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

    const KEY: &str = "limits.max_sessions";

    fn timeouts(idle: u64, unclaimed: u64) -> SessionTimeouts {
        SessionTimeouts {
            idle: Duration::from_secs(idle),
            unclaimed: Duration::from_secs(unclaimed),
        }
    }

    fn sessions(max: usize, instance: &str) -> Sessions {
        Sessions::new(timeouts(60, 60), max, instance)
    }

    #[test]
    fn same_id_same_session_and_fresh_ids_differ() {
        let sessions = sessions(10, "pod-0");
        let a = sessions
            .get_or_create("t", SessionRef::Named("abc"), 10, KEY)
            .expect("created");
        let b = sessions
            .get_or_create("t", SessionRef::Named("abc"), 10, KEY)
            .expect("found");
        assert!(Arc::ptr_eq(&a, &b));
        let c = sessions
            .get_or_create("t", SessionRef::Fresh, 10, KEY)
            .expect("fresh");
        let d = sessions
            .get_or_create("t", SessionRef::Fresh, 10, KEY)
            .expect("fresh");
        assert_ne!(c.id(), d.id());
        assert!(c.id().starts_with("pod-0."), "{}", c.id());
    }

    #[test]
    fn the_same_id_from_two_tenants_is_two_sessions() {
        let sessions = sessions(10, "local");
        let a = sessions
            .get_or_create("a", SessionRef::Named("shared"), 10, KEY)
            .expect("a");
        let b = sessions
            .get_or_create("b", SessionRef::Named("shared"), 10, KEY)
            .expect("b");
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(sessions.get("a", "shared").is_some());
        assert!(sessions.get("c", "shared").is_none());
    }

    #[test]
    fn invalid_ids_and_caps_are_named() {
        let sessions = sessions(2, "local");
        assert!(matches!(
            sessions.get_or_create("t", SessionRef::Named("a b"), 10, KEY),
            Err(SessionError::InvalidId(_))
        ));
        let _one = sessions
            .get_or_create("t", SessionRef::Named("one"), 1, KEY)
            .expect("first");
        let err = sessions
            .get_or_create("t", SessionRef::Named("two"), 1, KEY)
            .err()
            .expect("tenant cap");
        assert!(err.to_string().contains("limits.max_sessions = 1"), "{err}");
        assert!(err.to_string().contains("DELETE"), "{err}");
        let _two = sessions
            .get_or_create("u", SessionRef::Named("two"), 5, KEY)
            .expect("second");
        let err = sessions
            .get_or_create("v", SessionRef::Named("three"), 5, KEY)
            .err()
            .expect("host cap");
        assert!(
            err.to_string().contains("sessions.max_sessions = 2"),
            "{err}"
        );
    }

    #[test]
    fn unclaimed_sessions_make_room_and_claimed_ones_do_not() {
        let sessions = sessions(100, "local");
        // A stateless client: every call mints a session it never names again.
        for _ in 0..50 {
            sessions
                .get_or_create("a", SessionRef::Fresh, 3, KEY)
                .expect("an unclaimed session always makes room");
        }
        assert_eq!(sessions.per_tenant()["a"].0, 3);
        // Naming a minted id claims it: it no longer makes room.
        let fresh = sessions
            .get_or_create("a", SessionRef::Fresh, 3, KEY)
            .expect("fresh")
            .id()
            .to_owned();
        let claimed = sessions
            .get_or_create("a", SessionRef::Named(&fresh), 3, KEY)
            .expect("claimed");
        assert_eq!(claimed.lifetime(), Lifetime::Claimed);
        drop(claimed);
        for _ in 0..10 {
            sessions
                .get_or_create("a", SessionRef::Fresh, 3, KEY)
                .expect("fresh");
        }
        assert!(sessions.get("a", &fresh).is_some(), "claimed session kept");
        // A session in use is never evicted.
        let held: Vec<_> = (0..2)
            .map(|_| {
                sessions
                    .get_or_create("a", SessionRef::Fresh, 3, KEY)
                    .expect("fresh")
            })
            .collect();
        let err = sessions
            .get_or_create("a", SessionRef::Fresh, 3, KEY)
            .err()
            .expect("nothing to evict");
        assert!(matches!(err, SessionError::TenantFull { .. }), "{err}");
        // Another tenant is never affected.
        sessions
            .get_or_create("b", SessionRef::Fresh, 3, KEY)
            .expect("other tenant");
        drop(held);
    }

    #[test]
    fn minted_ids_are_never_silently_recreated() {
        let before = sessions(10, "pod-1");
        let old = before
            .get_or_create("t", SessionRef::Fresh, 10, KEY)
            .expect("minted")
            .id()
            .to_owned();
        let after = sessions(10, "pod-1");
        let err = after
            .get_or_create("t", SessionRef::Named(&old), 10, KEY)
            .err()
            .expect("lost");
        assert!(matches!(err, SessionError::Lost(_)), "{err}");
        assert!(err.to_string().contains("restarted"), "{err}");
        let gone = after.mint_id();
        let err = after
            .get_or_create("t", SessionRef::Named(&gone), 10, KEY)
            .err()
            .expect("expired");
        assert!(matches!(err, SessionError::Expired { .. }), "{err}");
        // A transport this run minted may create its session.
        after
            .get_or_create("t", SessionRef::Transport(&gone), 10, KEY)
            .expect("transport session");
        // Another instance's minted ids are never taken for new sessions here.
        let theirs = sessions(10, "pod-2").mint_id();
        let err = after
            .get_or_create("t", SessionRef::Named(&theirs), 10, KEY)
            .err()
            .expect("elsewhere");
        assert!(matches!(err, SessionError::Elsewhere { .. }), "{err}");
        assert!(err.to_string().contains("pod-2"), "{err}");
        // Free-form ids, even dotted ones, are created here as usual.
        after
            .get_or_create("t", SessionRef::Named("pod-2.0123abcd.xyz"), 10, KEY)
            .expect("free-form id");
    }

    #[test]
    fn reap_drops_only_idle_unused_sessions_and_leaves_transports() {
        let sessions = Sessions::new(timeouts(0, 0), 10, "local");
        let held = sessions
            .get_or_create("t", SessionRef::Named("held"), 10, KEY)
            .expect("created");
        sessions
            .get_or_create("t", SessionRef::Named("idle"), 10, KEY)
            .expect("created");
        sessions
            .get_or_create("t", SessionRef::Transport("conn"), 10, KEY)
            .expect("created");
        assert_eq!(sessions.reap(), 1);
        assert!(sessions.get("t", "held").is_some());
        drop(held);
        assert_eq!(sessions.reap(), 1);
        assert!(sessions.get("t", "conn").is_some(), "the transport's own");
        assert!(sessions.remove("t", "conn"));
        assert!(sessions.is_empty());
    }

    #[test]
    fn unclaimed_sessions_expire_sooner() {
        let sessions = Sessions::new(timeouts(3600, 0), 10, "local");
        sessions
            .get_or_create("t", SessionRef::Fresh, 10, KEY)
            .expect("fresh");
        sessions
            .get_or_create("t", SessionRef::Named("mine"), 10, KEY)
            .expect("named");
        assert_eq!(sessions.reap(), 1);
        assert!(sessions.get("t", "mine").is_some());
    }
}
