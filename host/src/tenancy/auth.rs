//! Bearer-token authentication for the HTTP front: every request must carry
//! `Authorization: Bearer <token>` of a known tenant, or it gets 401 before it
//! reaches the MCP layer.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{Tenant, Tenants};

/// The token of an `Authorization: Bearer <token>` header. The scheme is
/// case-insensitive (RFC 9110 section 11.1), so `BEARER` and `bearer` work too.
pub fn bearer_token(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Resolves the caller's tenant and stores it in the request's extensions
/// (`Arc<Tenant>`), where the MCP handler finds it; refuses the request with
/// 401 otherwise.
pub async fn require_tenant(
    State(tenants): State<Arc<Tenants>>,
    mut request: Request,
    next: Next,
) -> Response {
    let token = bearer_token(request.headers());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> axum::http::HeaderMap {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            axum::http::HeaderValue::from_str(value).expect("valid header"),
        );
        headers
    }

    #[test]
    fn the_scheme_is_case_insensitive() {
        for value in ["Bearer tok", "bearer tok", "BEARER tok", "BeArEr   tok "] {
            assert_eq!(bearer_token(&headers(value)), Some("tok"), "{value}");
        }
        for value in ["Basic tok", "Bearer", "Bearer   ", "Bearertok"] {
            assert_eq!(bearer_token(&headers(value)), None, "{value}");
        }
    }
}
