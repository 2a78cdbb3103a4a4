//! The MCP front: stdio for agents that spawn the host, streamable HTTP at `/mcp`
//! for everything else. Both serve the same tools from one [`Host`].

mod catalog;
mod server;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use rmcp::ServiceExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use catalog::{Catalog, NameClash};
pub use server::StepServer;

use crate::Host;

/// Builds the tool catalog for `host` from its config.
pub fn catalog(host: &Host) -> Result<Arc<Catalog>, NameClash> {
    let mcp = &host.config().mcp;
    Catalog::build(host.registry(), &mcp.tool_names, mcp.verb_tools).map(Arc::new)
}

/// Serves MCP on stdin/stdout until the client closes the stream.
pub async fn serve_stdio(host: Host) -> anyhow::Result<()> {
    let catalog = catalog(&host)?;
    let session = crate::session::new_id();
    tracing::info!(%session, "serving MCP over stdio");
    let server = StepServer::new(host, catalog, Some(session));
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .context("MCP handshake over stdio failed")?;
    running
        .waiting()
        .await
        .context("MCP stdio service stopped")?;
    Ok(())
}

/// Serves MCP over streamable HTTP at `http://ADDR/mcp` until `shutdown`.
/// Prints the bound address on stderr (useful with port 0).
pub async fn serve_http(
    host: Host,
    addr: SocketAddr,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let catalog = catalog(&host)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().context("no local address")?;
    let mut allowed_hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    allowed_hosts.push(local.ip().to_string());
    allowed_hosts.extend(host.config().mcp.allowed_hosts.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_cancellation_token(shutdown.child_token());
    let service_host = host.clone();
    let service = StreamableHttpService::new(
        move || Ok(StepServer::new(service_host.clone(), catalog.clone(), None)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .route("/healthz", axum::routing::get(|| async { "ok\n" }));
    eprintln!("stephost: serving MCP (streamable HTTP) at http://{local}/mcp");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .context("HTTP server failed")?;
    Ok(())
}
