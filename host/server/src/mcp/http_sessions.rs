//! Streamable-HTTP transport sessions, owned by a tenant and living exactly as
//! long as the host session that bears their id.
//!
//! - Ids carry this instance's name (`<instance>.<boot>.<random>`, as MCP session
//!   handles do), so a proxy in front of several stephost pods can send every
//!   request of a transport session to the pod that holds it (docs/deploy.md).
//!   The host session of a transport takes the same id, so the id a client sees
//!   in results routes the same way and, after a restart, reads "session lost".
//! - A transport session belongs to the tenant whose request created it: the
//!   HTTP guard (`guard.rs`) answers 404 to any other tenant naming it, so no
//!   one else can send into it, cancel its requests or end it.
//! - Closing (DELETE, idle expiry, shutdown) ends the host session too, and
//!   the idle reaper here is the only one that expires either: rmcp's own
//!   keep-alive is off, so the two can never drift apart.
//!
//! Message handling itself is rmcp's [`LocalSessionManager`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, create_local_session,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

use crate::Host;

/// Who owns a transport session, and when it was last used.
struct Entry {
    /// Set when the response that handed out the id passes the guard; until
    /// then only the request that created it knows the id.
    owner: Option<String>,
    last_used: Instant,
}

/// The transport sessions of one HTTP front.
pub(super) struct Transports {
    inner: LocalSessionManager,
    host: Host,
    entries: Mutex<HashMap<SessionId, Entry>>,
}

impl Transports {
    /// Transport sessions of `host`, with ids minted by its session table.
    pub(super) fn new(host: Host) -> Self {
        let mut inner = LocalSessionManager::default();
        // Expiry is ours (see `reap`), so that the transport and the host
        // session it carries always end together.
        inner.session_config.keep_alive = None;
        Self {
            inner,
            host,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `tenant` as the owner of `id`, unless it already has one.
    pub(super) fn claim(&self, id: &str, tenant: &str) {
        if let Some(entry) = self.entries().get_mut(id)
            && entry.owner.is_none()
        {
            entry.owner = Some(tenant.to_owned());
        }
    }

    /// Whether `id` is a live transport session of `tenant`; marks it used.
    pub(super) fn touch_owned(&self, id: &str, tenant: &str) -> bool {
        match self.entries().get_mut(id) {
            Some(entry) if entry.owner.as_deref() == Some(tenant) => {
                entry.last_used = Instant::now();
                true
            }
            _ => false,
        }
    }

    /// Live transport sessions.
    pub(super) fn len(&self) -> usize {
        self.entries().len()
    }

    /// Ends the transport session and its host session.
    async fn end(&self, id: &SessionId) -> Result<(), LocalSessionManagerError> {
        let entry = self.entries().remove(id);
        if let Some(Entry {
            owner: Some(tenant),
            ..
        }) = &entry
        {
            self.host.sessions().remove(tenant, id);
        }
        self.inner.close_session(id).await
    }

    /// Ends transport sessions unused for `idle` whose host session runs no
    /// batch; returns how many went.
    pub(super) async fn reap(&self, idle: Duration) -> usize {
        let expired: Vec<SessionId> = self
            .entries()
            .iter()
            .filter(|(id, entry)| {
                entry.last_used.elapsed() >= idle
                    && !entry.owner.as_deref().is_some_and(|tenant| {
                        self.host
                            .sessions()
                            .get(tenant, id)
                            .is_some_and(|s| s.busy())
                    })
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            tracing::info!(session = %id, "ending idle transport session");
            if let Err(error) = self.end(id).await {
                tracing::debug!(session = %id, %error, "transport session already gone");
            }
        }
        expired.len()
    }
}

impl SessionManager for Transports {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let id: SessionId = Arc::from(self.host.sessions().mint_id());
        let (handle, worker) = create_local_session(id.clone(), self.inner.session_config.clone());
        self.inner.sessions.write().await.insert(id.clone(), handle);
        self.entries().insert(
            id.clone(),
            Entry {
                owner: None,
                last_used: Instant::now(),
            },
        );
        Ok((id, WorkerTransport::spawn(worker)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.end(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }
}
