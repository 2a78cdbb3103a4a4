//! Bearer-token authentication for the HTTP front: every request must carry
//! `Authorization: Bearer <token>` of a known tenant, or it gets 401 before it
//! reaches the MCP layer.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{Tenant, Tenants};

/// Resolves the caller's tenant and stores it in the request's extensions
/// (`Arc<Tenant>`), where the MCP handler finds it; refuses the request with
/// 401 otherwise.
pub async fn require_tenant(
    State(tenants): State<Arc<Tenants>>,
    mut request: Request,
    next: Next,
) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let Some(tenant) = token.and_then(|t| tenants.authenticate(t)) else {
        let why = if token.is_some() {
            "invalid bearer token"
        } else {
            "missing `Authorization: Bearer <token>` header"
        };
        tracing::warn!(target: "stephost::audit", path = %request.uri().path(), "unauthorized: {why}");
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer realm=\"stephost\"")],
            format!("{{\"error\":\"unauthorized\",\"message\":\"{why}\"}}\n"),
        )
            .into_response();
    };
    request.extensions_mut().insert::<Arc<Tenant>>(tenant);
    next.run(request).await
}
