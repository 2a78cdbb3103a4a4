//! Bearer-token authentication for the HTTP front: every request must carry
//! `Authorization: Bearer <token>` of a known tenant, or it gets 401 before it
//! reaches the MCP layer.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{Tenant, Tenants};

/// The challenge to a request without credentials. RFC 6750 section 3.1: no
/// error code when the request had no authentication information. It names
/// no `resource_metadata` and the server has no OAuth discovery endpoints:
/// tokens come from the operator's tenants file, so an MCP client should ask
/// its user for one rather than start an OAuth flow.
const MISSING_TOKEN_CHALLENGE: &str = "Bearer realm=\"stephost\"";

/// The challenge to a token no tenant holds (RFC 6750 section 3.1,
/// `invalid_token`), so a client can tell a wrong token from a missing one.
const INVALID_TOKEN_CHALLENGE: &str = "Bearer realm=\"stephost\", error=\"invalid_token\", error_description=\"the bearer token is not one of this server's tenants\"";

/// The JSON-RPC error code of a refused token: in the range JSON-RPC leaves to
/// servers, the one MCP servers commonly use for authentication.
const UNAUTHORIZED_CODE: i64 = -32001;

/// Whether `path` is the MCP endpoint (`/mcp`, or below it).
fn is_mcp_path(path: &str) -> bool {
    path == "/mcp" || path.starts_with("/mcp/")
}

/// The token of an `Authorization: Bearer <token>` header. The scheme is
/// case-insensitive (RFC 9110 section 11.1), so `BEARER` and `bearer` work too.
pub(crate) fn bearer_token(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Resolves the caller's tenant and stores it in the request's extensions
/// (`Arc<Tenant>`), where the MCP handler finds it; refuses the request with
/// 401 otherwise.
pub(crate) async fn require_tenant(
    State(tenants): State<Arc<Tenants>>,
    mut request: Request,
    next: Next,
) -> Response {
    // Only `/mcp` needs a tenant. Any other path this layer sees goes to the
    // 404 fallback, and must get it: a 401 on
    // `/.well-known/oauth-protected-resource` or
    // `/.well-known/oauth-authorization-server` would tell an MCP client that
    // OAuth metadata exists behind a login, and it would try an OAuth flow.
    if !is_mcp_path(request.uri().path()) {
        return next.run(request).await;
    }
    let token = bearer_token(request.headers());
    let Some(tenant) = token.and_then(|t| tenants.authenticate(t)) else {
        let (why, challenge) = if token.is_some() {
            ("invalid bearer token", INVALID_TOKEN_CHALLENGE)
        } else {
            (
                "missing `Authorization: Bearer <token>` header",
                MISSING_TOKEN_CHALLENGE,
            )
        };
        tracing::warn!(target: "stephost::audit", path = %request.uri().path(), "unauthorized: {why}");
        // Why a JSON-RPC error body: MCP clients show the message of one (the
        // Python SDK reports any other 401 body as a bare "error response"),
        // and the id is null because the body has not been read.
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": UNAUTHORIZED_CODE, "message": format!("unauthorized: {why}")}
        });
        return (
            StatusCode::UNAUTHORIZED,
            [
                (header::WWW_AUTHENTICATE, challenge),
                (header::CONTENT_TYPE, "application/json"),
            ],
            format!("{body}\n"),
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
    fn only_the_mcp_endpoint_needs_a_tenant() {
        for path in ["/mcp", "/mcp/", "/mcp/x"] {
            assert!(is_mcp_path(path), "{path}");
        }
        for path in [
            "/",
            "/mcpx",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
        ] {
            assert!(!is_mcp_path(path), "{path}");
        }
    }

    #[test]
    fn challenges_are_valid_header_values() {
        // `(StatusCode, [(HeaderName, &str)], _)` panics at run time on a
        // value that is not a valid header value.
        for challenge in [MISSING_TOKEN_CHALLENGE, INVALID_TOKEN_CHALLENGE] {
            assert!(
                axum::http::HeaderValue::from_str(challenge).is_ok(),
                "{challenge}"
            );
        }
        assert!(!MISSING_TOKEN_CHALLENGE.contains("error="));
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
