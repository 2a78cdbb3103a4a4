//! stdio before the host is ready: `serve` answers `initialize` at once while the
//! plugins compile (a first start with an empty compile cache takes seconds, more
//! than some clients wait for a handshake), and every other request waits for the
//! host, then is answered as [`StepServer`] answers it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt as _};
use tokio::sync::{OnceCell, watch};

use super::catalog::Catalogs;
use super::server::{StepServer, server_info};
use super::{catalogs, stdio};
use crate::Host;
use crate::session::SessionRef;

/// A started host with its tool catalogs, or why it could not start.
type Started = Result<(Host, Arc<Catalogs>), Arc<str>>;

/// A host being started in the background, and its tool catalogs once built.
#[derive(Clone)]
pub struct StartingHost {
    state: watch::Receiver<Option<Started>>,
}

impl StartingHost {
    /// Starts `start` on the runtime; its catalogs are built as soon as it is up.
    pub fn spawn<F>(start: F) -> Self
    where
        F: Future<Output = anyhow::Result<Host>> + Send + 'static,
    {
        let (tx, rx) = watch::channel(None);
        tokio::spawn(async move {
            let ready = async {
                let host = start.await?;
                let catalogs = catalogs(&host)?;
                anyhow::Ok((host, catalogs))
            }
            .await
            .map_err(|e| Arc::<str>::from(format!("{e:#}")));
            let _ = tx.send(Some(ready));
        });
        Self { state: rx }
    }

    /// The host with its catalogs once started, or why it could not start.
    pub async fn wait(&self) -> Started {
        let mut state = self.state.clone();
        let ready = state
            .wait_for(Option::is_some)
            .await
            .map_err(|_| Arc::<str>::from("the host's start was abandoned"))?;
        ready
            .clone()
            .unwrap_or_else(|| Err(Arc::from("the host did not start")))
    }

    /// The host, if it has started.
    pub fn ready(&self) -> Option<Host> {
        match &*self.state.borrow() {
            Some(Ok((host, _))) => Some(host.clone()),
            _ => None,
        }
    }
}

/// The handler of one stdio connection: the connection's [`StepServer`] is
/// made on the first request that needs the host.
#[derive(Clone)]
struct Lazy {
    starting: StartingHost,
    server: Arc<OnceCell<Result<(StepServer, String), McpError>>>,
}

impl Lazy {
    async fn server(&self) -> Result<&StepServer, McpError> {
        let made = self
            .server
            .get_or_init(|| async {
                let (host, catalogs) = self.starting.wait().await.map_err(|why| {
                    McpError::internal_error(format!("the host could not start: {why}"), None)
                })?;
                // The connection's session exists from its first call, so calls
                // without a session_id share it; it lives as long as the connection.
                let id = host.sessions().mint_id();
                let session = host
                    .session(SessionRef::Transport(&id))
                    .map_err(|e| {
                        McpError::internal_error(
                            format!("cannot create the connection's session: {e}"),
                            None,
                        )
                    })?
                    .id()
                    .to_owned();
                tracing::info!(%session, "serving MCP over stdio");
                Ok((
                    StepServer::new(host, catalogs, Some(session.clone())),
                    session,
                ))
            })
            .await;
        made.as_ref()
            .map(|(server, _)| server)
            .map_err(Clone::clone)
    }
}

impl ServerHandler for Lazy {
    fn get_info(&self) -> ServerConfig {
        server_info()
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.server().await?.set_level(request, context).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.server().await?.list_tools(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.server().await?.list_resources(request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.server().await?.read_resource(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.server().await?.call_tool(request, context).await
    }
}

/// Serves MCP on stdin/stdout until the client closes the stream, answering
/// `initialize` before `starting` is ready. Lines longer than `max_line_bytes`
/// are refused as the started host would refuse them.
pub async fn serve_stdio(starting: StartingHost, max_line_bytes: usize) -> anyhow::Result<()> {
    let handler = Lazy {
        starting,
        server: Arc::new(OnceCell::new()),
    };
    let (transport, flushed) = stdio::transport(max_line_bytes);
    let served = async {
        let running = handler
            .clone()
            .serve(transport)
            .await
            .context("MCP handshake over stdio failed")?;
        running
            .waiting()
            .await
            .context("MCP stdio service stopped")?;
        anyhow::Ok(())
    }
    .await;
    // Our writer task, not rmcp, puts the last answer on stdout.
    let _ = tokio::time::timeout(Duration::from_secs(1), flushed.wait()).await;
    if let Some(Ok((server, session))) = handler.server.get() {
        let host = server.host();
        host.sessions().remove(host.tenants().local().id(), session);
    }
    served
}
