//! The MCP front: stdio for agents that spawn the host, streamable HTTP at `/mcp`
//! for everything else. Both serve the same tools from one [`Host`].

mod catalog;
mod http_sessions;
mod notify;
mod server;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use rmcp::ServiceExt as _;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use catalog::{Catalog, Catalogs, NameClash};
pub use server::StepServer;

use crate::Host;

/// Builds every tenant's tool catalog for `host` from its config.
pub fn catalogs(host: &Host) -> Result<Arc<Catalogs>, NameClash> {
    Catalogs::build(host).map(Arc::new)
}

/// Serves MCP on stdin/stdout until the client closes the stream.
pub async fn serve_stdio(host: Host) -> anyhow::Result<()> {
    let catalogs = catalogs(&host)?;
    // The connection's session exists from the start, so calls without a
    // session_id share it.
    let session = host
        .session(None)
        .context("cannot create the connection's session")?
        .id()
        .to_owned();
    tracing::info!(%session, "serving MCP over stdio");
    let server = StepServer::new(host, catalogs, Some(session));
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
    let catalogs = catalogs(&host)?;
    let tenants = host.tenants().clone();
    if !tenants.require_auth() && !addr.ip().is_loopback() {
        anyhow::bail!(
            "refusing to serve {addr} without a tenants file: with no --tenants, stephost serves one local tenant without authentication, on loopback only"
        );
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().context("no local address")?;
    // A plugin with a loopback grant must not call this server (or /metrics)
    // from the host's own network position.
    host.registry().services().host_owned.add(local);
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
        move || {
            Ok(StepServer::new(
                service_host.clone(),
                catalogs.clone(),
                None,
            ))
        },
        Arc::new(http_sessions::PrefixedSessions::new({
            let host = host.clone();
            move || host.sessions().mint_id()
        })),
        config,
    );
    let mcp = axum::Router::new().nest_service("/mcp", service);
    let mcp = if tenants.require_auth() {
        mcp.layer(axum::middleware::from_fn_with_state(
            tenants.clone(),
            crate::tenancy::auth::require_tenant,
        ))
    } else {
        mcp
    };
    let metrics_host = host.clone();
    let router = mcp
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
        .route(
            "/metrics",
            axum::routing::get(move |headers: axum::http::HeaderMap| {
                let host = metrics_host.clone();
                async move { metrics(&host, &headers) }
            }),
        );
    if tenants.require_auth() {
        eprintln!(
            "stephost: {} tenants; every request needs `Authorization: Bearer <token>`",
            tenants.serving().len()
        );
    } else {
        eprintln!(
            "stephost: no --tenants file: serving one local tenant without authentication, on loopback only"
        );
    }
    eprintln!("stephost: serving MCP (streamable HTTP) at http://{local}/mcp");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .context("HTTP server failed")?;
    Ok(())
}

/// `/metrics`, behind `server.metrics_token_sha256` when that is set.
fn metrics(host: &Host, headers: &axum::http::HeaderMap) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    if let Some(expected) = &host.config().server.metrics_token_sha256 {
        let given = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(crate::tenancy::hash_token);
        if given.as_deref() != Some(expected.to_ascii_lowercase().as_str()) {
            return (
                axum::http::StatusCode::UNAUTHORIZED,
                "metrics need the metrics token\n",
            )
                .into_response();
        }
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        host.metrics_text(),
    )
        .into_response()
}
