//! `nettest`: one verb, `get {url}`, that fetches a URL through
//! `wasi:http/outgoing-handler`. It exists to test the host's HTTP grant: where
//! the plugin may connect and what happens when it may not.

use serde_json::json;
use stephost_plugin::{Args, Failure, FailureCode, Output, Plugin, Verb, export_plugin};
use wasi::http::outgoing_handler;
use wasi::http::types::{ErrorCode, Fields, Method, OutgoingRequest, Scheme};

struct NetTest;

impl Plugin for NetTest {
    const NAME: &'static str = "nettest";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str = "Fetches URLs over outbound HTTP (tests the HTTP grant).";
    type State = ();

    fn verbs() -> Vec<Verb<()>> {
        let schema = json!({
            "type": "object",
            "properties": {"url": {"type": "string", "pattern": "^https?://"}},
            "required": ["url"],
            "additionalProperties": false
        });
        vec![Verb::new(
            "get",
            "GET a URL; returns {status, body}.",
            schema,
            fetch,
        )]
    }
}

export_plugin!(NetTest);

/// `get {url}`.
fn fetch(_: &mut (), args: &Args) -> Result<Output, Failure> {
    let url = args.str("url")?;
    let (status, body) = get(url)?;
    Ok(Output::new(json!({"status": status, "body": body})))
}

/// Nothing this plugin does acts on the world: every failure is safe to retry.
fn failure(code: FailureCode, message: impl Into<String>) -> Failure {
    Failure::new(code, message).with_input_fired(false)
}

fn http_failure(url: &str, error: ErrorCode) -> Failure {
    match error {
        ErrorCode::HttpRequestDenied => failure(
            FailureCode::Denied,
            format!("the host refused outbound HTTP to {url}"),
        ),
        other => failure(FailureCode::Failed, format!("GET {url}: {other:?}")),
    }
}

fn get(url: &str) -> Result<(u16, String), Failure> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| {
        failure(
            FailureCode::InvalidInput,
            "input.url: expected http://host[:port]/path",
        )
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    let scheme = if scheme == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    };
    let bad = |_| {
        failure(
            FailureCode::InvalidInput,
            format!("input.url: cannot request {url}"),
        )
    };
    request.set_method(&Method::Get).map_err(bad)?;
    request.set_scheme(Some(&scheme)).map_err(bad)?;
    request.set_authority(Some(authority)).map_err(bad)?;
    request.set_path_with_query(Some(path)).map_err(bad)?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| http_failure(url, e))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or_else(|| failure(FailureCode::Failed, "response not ready"))?
        .map_err(|()| failure(FailureCode::Failed, "response taken twice"))?
        .map_err(|e| http_failure(url, e))?;
    let status = response.status();
    let body = response
        .consume()
        .map_err(|()| failure(FailureCode::Failed, "no response body"))?;
    let stream = body
        .stream()
        .map_err(|()| failure(FailureCode::Failed, "no response body stream"))?;
    let mut bytes = Vec::new();
    // Read until the stream closes; `blocking_read` waits for data.
    while let Ok(chunk) = stream.blocking_read(64 * 1024) {
        bytes.extend_from_slice(&chunk);
    }
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_get_and_refuses_what_it_cannot_fetch_before_any_request() {
        let info = stephost_plugin::describe::<NetTest>();
        assert_eq!(info.name, "nettest");
        assert_eq!(info.verbs.len(), 1);
        assert_eq!(info.verbs[0].name, "get");

        // Fails before any wasi:http call, so this runs natively.
        let f = stephost_plugin::invoke::<NetTest>("get", r#"{"url": "no-scheme"}"#).unwrap_err();
        assert_eq!((f.code, f.input_fired), (FailureCode::InvalidInput, false));
        let f = stephost_plugin::invoke::<NetTest>("put", "{}").unwrap_err();
        assert_eq!(f.message, "nettest has no verb `put`; its verbs are: get");
    }
}
