//! The HTTP guard in front of rmcp's streamable HTTP service: what the
//! transport must enforce before any MCP processing.
//!
//! - During shutdown every new request gets 503 with `Retry-After`, while the
//!   requests already in flight run to their end (counted here, so the drain
//!   knows when their answers are out).
//! - A transport session id (`Mcp-Session-Id`) works only for the tenant that
//!   created it; any other tenant gets the same 404 as for an id that never
//!   existed, so ids cannot be probed either.
//! - A POST body is read within `server.http.max_body_bytes` (413 past it) and
//!   must be JSON: malformed JSON is answered as JSON-RPC says, HTTP 400 with a
//!   `-32700` parse error, not as a media-type problem.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt as _;

use super::http_sessions::Transports;
use crate::Host;
use crate::tenancy::Tenant;

/// What the guard needs.
pub(super) struct Guard {
    pub(super) host: Host,
    pub(super) transports: Arc<Transports>,
    pub(super) max_body_bytes: usize,
    /// Requests whose response has not been sent in full yet.
    in_flight: AtomicUsize,
}

impl Guard {
    pub(super) fn new(host: Host, transports: Arc<Transports>, max_body_bytes: usize) -> Self {
        Self {
            host,
            transports,
            max_body_bytes,
            in_flight: AtomicUsize::new(0),
        }
    }

    /// POST requests whose answer is still being produced or sent.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }
}

/// Decrements the in-flight count when the response body is dropped, that is
/// once hyper has sent it (or the client went away).
struct InFlight(Arc<Guard>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Seconds a client should wait before retrying during a shutdown.
const RETRY_AFTER_S: &str = "5";

/// The guard as axum middleware (`from_fn_with_state`). Runs inside the
/// authentication layer, so the tenant is known.
pub(super) async fn guard(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    if guard.host.is_draining() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, RETRY_AFTER_S)],
            "stephost is shutting down; retry shortly (another instance will answer)\n",
        )
            .into_response();
    }
    let tenant = request
        .extensions()
        .get::<Arc<Tenant>>()
        .map(|t| t.id().to_owned())
        .unwrap_or_else(|| guard.host.tenants().local().id().to_owned());
    if let Some(id) = request.headers().get("mcp-session-id") {
        let owned = id
            .to_str()
            .is_ok_and(|id| guard.transports.touch_owned(id, &tenant));
        if !owned {
            return (
                StatusCode::NOT_FOUND,
                "Not Found: no such MCP session for this client; initialize a new one\n",
            )
                .into_response();
        }
    }
    let request = if request.method() == Method::POST && is_json(&request) {
        match checked_json_body(request, guard.max_body_bytes).await {
            Ok(request) => request,
            Err(response) => return response,
        }
    } else {
        request
    };
    let counted = request.method() == Method::POST;
    if counted {
        guard.in_flight.fetch_add(1, Ordering::SeqCst);
    }
    let in_flight = counted.then(|| InFlight(guard.clone()));
    let response = next.run(request).await;
    if let Some(id) = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
    {
        guard.transports.claim(id, &tenant);
    }
    match in_flight {
        Some(in_flight) => response.map(|body| {
            Body::new(body.map_frame(move |frame| {
                let _held = &in_flight;
                frame
            }))
        }),
        None => response,
    }
}

fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
        })
}

/// Reads the body within `max` bytes and checks that it is JSON; hands the
/// request on with the bytes read.
async fn checked_json_body(request: Request, max: usize) -> Result<Request, Response> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large(max));
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, max).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let limit_hit = std::error::Error::source(&error)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            return Err(if limit_hit {
                too_large(max)
            } else {
                (StatusCode::BAD_REQUEST, "cannot read the request body\n").into_response()
            });
        }
    };
    if let Err(error) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
        return Err(parse_error(&error.to_string()));
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

fn too_large(max: usize) -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "the request body is larger than server.http.max_body_bytes = {max}; send smaller batches\n"
        ),
    )
        .into_response()
}

/// HTTP 400 with a JSON-RPC parse error, as JSON-RPC over HTTP answers a body
/// that is not JSON.
fn parse_error(why: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {why}")},
    });
    let mut response = (StatusCode::BAD_REQUEST, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
