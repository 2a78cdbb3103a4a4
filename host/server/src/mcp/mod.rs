//! The MCP front: stdio for agents that spawn the host, streamable HTTP at `/mcp`
//! for everything else. Both serve the same tools from one [`Host`].

mod catalog;
mod guard;
mod http_sessions;
mod listener;
mod notify;
mod saved_tools;
mod server;
mod starting;
mod stdio;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use catalog::{
    Catalog, CatalogError, Catalogs, NameClash, SAVED, Served, UnknownPlugin, claimed_names,
    suggest_name, tool_name_for,
};
pub use server::StepServer;
pub use starting::{StartingHost, serve_stdio};

use crate::Host;

/// Builds every tenant's tool catalog for `host` from its config, and says on
/// stderr which plugins' tools are served: a tool missing from the list (no
/// display, testkit not named) is then explained where the operator looks.
pub fn catalogs(host: &Host) -> Result<Arc<Catalogs>, CatalogError> {
    let catalogs = Catalogs::build(host)?;
    eprintln!("stephost: {}", catalogs.served().summary());
    Ok(Arc::new(catalogs))
}

/// Serves MCP over streamable HTTP at `http://ADDR/mcp` until `shutdown`, then
/// shuts down in order: new requests get 503, batches in flight get
/// `server.drain_timeout_s` to finish and their answers go out, then the
/// transport sessions end and the listener closes. Prints the bound address
/// on stderr (useful with port 0).
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
    host.refuse_for_plugins(local);
    let mcp_config = &host.config().mcp;
    let http_limits = host.config().server.http.clone();
    let mut allowed_hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    allowed_hosts.push(local.ip().to_string());
    allowed_hosts.extend(mcp_config.allowed_hosts.iter().cloned());
    // Browsers send Origin; a page on another origin must not drive the
    // server through a user's browser (DNS rebinding, CSRF-like calls).
    let mut allowed_origins = vec![
        "http://localhost:*".to_owned(),
        "http://127.0.0.1:*".to_owned(),
        "http://[::1]:*".to_owned(),
    ];
    allowed_origins.extend(mcp_config.allowed_origins.iter().cloned());
    // The transports end only after the drain, so answers of batches in
    // flight still reach their clients.
    let transports_done = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(http_limits.max_body_bytes)
        .with_cancellation_token(transports_done.child_token());
    let transports = Arc::new(http_sessions::Transports::new(host.clone()));
    let service_host = host.clone();
    let service = StreamableHttpService::new(
        move || {
            Ok(StepServer::new(
                service_host.clone(),
                catalogs.clone(),
                None,
            ))
        },
        transports.clone(),
        config,
    );
    let guard = Arc::new(guard::Guard::new(
        host.clone(),
        transports.clone(),
        http_limits.max_body_bytes,
    ));
    // Inside the guard (the body is read and is JSON, the tenant known) and
    // outside rmcp, which parses it: the body's parsed size is charged to
    // its tenant before it is parsed.
    let inflight = Arc::new(listener::Inflight::new(&http_limits));
    let mcp = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(
            inflight,
            listener::charge_inflight,
        ))
        .layer(axum::middleware::from_fn_with_state(
            guard.clone(),
            guard::guard,
        ));
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
        .route(
            "/healthz",
            axum::routing::get({
                let host = host.clone();
                // Failing the health check while draining takes this instance
                // out of a proxy's rotation before the listener closes.
                move || {
                    let draining = host.is_draining();
                    async move {
                        if draining {
                            (axum::http::StatusCode::SERVICE_UNAVAILABLE, "draining\n")
                        } else {
                            (axum::http::StatusCode::OK, "ok\n")
                        }
                    }
                }
            }),
        )
        .route(
            "/metrics",
            axum::routing::get(move |headers: axum::http::HeaderMap| {
                let host = metrics_host.clone();
                async move { metrics(&host, &headers) }
            }),
        )
        // Reads the body before answering 404: a response sent while a POST's
        // body (an OAuth client's registration) is still unread makes hyper
        // close the connection, and a client that reuses it then sees
        // "server disconnected" instead of the 404.
        .fallback(|_body: axum::body::Bytes| async {
            (axum::http::StatusCode::NOT_FOUND, "Not Found\n")
        });
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
    let reaper = spawn_transport_reaper(&host, &transports);
    let listener_done = CancellationToken::new();
    let drain = tokio::spawn({
        let host = host.clone();
        let guard = guard.clone();
        let transports_done = transports_done.clone();
        let listener_done = listener_done.clone();
        async move {
            shutdown.cancelled().await;
            let deadline = Duration::from_secs(host.config().server.drain_timeout_s);
            eprintln!(
                "stephost: shutting down: new requests get 503; batches in flight have {} s to finish",
                deadline.as_secs()
            );
            let outcome = host.drain(deadline).await;
            // The batches are done; let their answers finish streaming out.
            let until = Instant::now() + ANSWER_GRACE;
            while guard.in_flight() > 0 && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tracing::info!(
                running_at_start = outcome.running_at_start,
                cancelled = outcome.cancelled,
                unanswered = guard.in_flight(),
                "drained"
            );
            transports_done.cancel();
            listener_done.cancel();
        }
    });
    let serving = listener::serve(
        listener,
        router,
        &http_limits,
        listener_done.clone().cancelled_owned(),
    );
    // A connection that will not finish after the drain does not hold the
    // process: past the grace period the rest are dropped.
    let served = tokio::select! {
        served = serving => served.context("HTTP server failed"),
        () = async {
            listener_done.cancelled().await;
            tokio::time::sleep(ANSWER_GRACE).await;
        } => {
            tracing::warn!("connections still open after the drain were closed");
            Ok(())
        }
    };
    reaper.abort();
    drain.abort();
    let ended = host.sessions().clear();
    tracing::info!(sessions = ended, "sessions ended");
    served
}

/// How long, after the last batch of a drain ended, its answer may take to be sent.
const ANSWER_GRACE: Duration = Duration::from_secs(5);

/// Ends idle transport sessions (and so their host sessions) for as long as the
/// server runs.
fn spawn_transport_reaper(
    host: &Host,
    transports: &Arc<http_sessions::Transports>,
) -> tokio::task::JoinHandle<()> {
    let idle = host.sessions().timeouts().idle;
    let interval = host.sessions().reap_interval();
    let transports = transports.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            let ended = transports.reap(idle).await;
            if ended > 0 {
                tracing::debug!(ended, live = transports.len(), "reaped transport sessions");
            }
        }
    })
}

/// `/metrics`: it names tenants and their activity, so with a tenants file it
/// needs the operator token (`server.metrics_token_sha256`), and without that
/// token configured it is refused.
fn metrics(host: &Host, headers: &axum::http::HeaderMap) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    match &host.config().server.metrics_token_sha256 {
        Some(expected) => {
            let given = crate::tenancy::auth::bearer_token(headers).map(crate::tenancy::hash_token);
            if given.as_deref() != Some(expected.to_ascii_lowercase().as_str()) {
                return (
                    axum::http::StatusCode::UNAUTHORIZED,
                    [(
                        axum::http::header::WWW_AUTHENTICATE,
                        "Bearer realm=\"stephost-metrics\"",
                    )],
                    "metrics need the operator token: Authorization: Bearer <token whose sha256 is server.metrics_token_sha256>\n",
                )
                    .into_response();
            }
        }
        None if host.tenants().require_auth() => {
            return (
                axum::http::StatusCode::FORBIDDEN,
                "metrics are off: with a tenants file, /metrics needs an operator token; set server.metrics_token_sha256 (stephost hash-token TOKEN)\n",
            )
                .into_response();
        }
        None => {}
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
