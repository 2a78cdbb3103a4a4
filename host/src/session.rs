//! Sessions: the state that outlives one batch. Each holds its own plugin
//! instances (a counter, a browser handle, Robot Framework variables live in
//! their memory) and the named variables that `assign_to` stored.

use std::collections::{BTreeMap, HashMap};
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
    /// Live plugin instances, by plugin name.
    pub instances: HashMap<String, PluginInstance>,
}

/// One session.
pub struct Session {
    id: String,
    state: tokio::sync::Mutex<SessionState>,
    last_used: Mutex<Instant>,
}

impl Session {
    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Locks its state for a batch.
    pub async fn lock(&self) -> tokio::sync::MutexGuard<'_, SessionState> {
        self.touch();
        let guard = self.state.lock().await;
        self.touch();
        guard
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
        "too many live sessions (sessions.max_sessions = {0}); end one or wait for idle sessions to expire"
    )]
    TooMany(usize),
}

/// All live sessions of one host.
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
    idle_timeout: Duration,
    max: usize,
}

impl Sessions {
    /// An empty set.
    pub fn new(idle_timeout: Duration, max: usize) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            idle_timeout,
            max,
        }
    }

    /// The session with `id`, created when new; a fresh session with a new id when
    /// `id` is `None`.
    pub fn get_or_create(&self, id: Option<&str>) -> Result<Arc<Session>, SessionError> {
        let id = match id {
            Some(id) if valid_id(id) => id.to_owned(),
            Some(id) => return Err(SessionError::InvalidId(id.to_owned())),
            None => new_id(),
        };
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(session) = map.get(&id) {
            session.touch();
            return Ok(session.clone());
        }
        if map.len() >= self.max {
            return Err(SessionError::TooMany(self.max));
        }
        let session = Arc::new(Session {
            id: id.clone(),
            state: tokio::sync::Mutex::new(SessionState::default()),
            last_used: Mutex::new(Instant::now()),
        });
        map.insert(id, session.clone());
        Ok(session)
    }

    /// A session that already exists.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// Ends a session now, dropping its instances.
    pub fn remove(&self, id: &str) -> bool {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id)
            .is_some()
    }

    /// Number of live sessions.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops sessions idle past the timeout that no batch is using; returns how
    /// many went.
    pub fn reap(&self) -> usize {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let before = map.len();
        map.retain(|id, session| {
            let idle = session.idle_for() >= self.idle_timeout;
            // A session whose lock is held is running a batch: never idle.
            let busy = session.state.try_lock().is_err();
            let keep = !idle || busy || Arc::strong_count(session) > 1;
            if !keep {
                tracing::info!(session = %id, "dropping idle session");
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

/// A new random session id.
pub fn new_id() -> String {
    format!("s-{}", uuid::Uuid::new_v4().simple())
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
        let sessions = Sessions::new(Duration::from_secs(60), 10);
        let a = sessions.get_or_create(Some("abc")).expect("created");
        let b = sessions.get_or_create(Some("abc")).expect("found");
        assert!(Arc::ptr_eq(&a, &b));
        let c = sessions.get_or_create(None).expect("fresh");
        let d = sessions.get_or_create(None).expect("fresh");
        assert_ne!(c.id(), d.id());
    }

    #[test]
    fn invalid_ids_and_caps_are_named() {
        let sessions = Sessions::new(Duration::from_secs(60), 1);
        assert!(matches!(
            sessions.get_or_create(Some("a b")),
            Err(SessionError::InvalidId(_))
        ));
        sessions.get_or_create(Some("one")).expect("first");
        let err = sessions.get_or_create(Some("two")).err().expect("capped");
        assert!(err.to_string().contains("max_sessions = 1"));
    }

    #[test]
    fn reap_drops_only_idle_unused_sessions() {
        let sessions = Sessions::new(Duration::ZERO, 10);
        let held = sessions.get_or_create(Some("held")).expect("created");
        sessions.get_or_create(Some("idle")).expect("created");
        assert_eq!(sessions.reap(), 1);
        assert!(sessions.get("held").is_some());
        drop(held);
        assert_eq!(sessions.reap(), 1);
        assert!(sessions.is_empty());
    }
}
