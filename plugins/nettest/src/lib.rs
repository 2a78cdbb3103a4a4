//! `nettest`: one verb, `get {url}`, that fetches a URL through
//! `wasi:http/outgoing-handler`. It exists to test the host's HTTP grant: where
//! the plugin may connect and what happens when it may not.

use serde_json::{Value, json};
use wasi::http::outgoing_handler;
use wasi::http::types::{ErrorCode, Fields, Method, OutgoingRequest, Scheme};

wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

use exports::stephost::plugin::tool::{Failure, Guest, Output, PluginInfo};
use stephost::plugin::types::VerbInfo;

struct NetTest;

impl Guest for NetTest {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "nettest".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Fetches URLs over outbound HTTP (tests the HTTP grant).".into(),
            bare_tool_names: false,
            verbs: vec![VerbInfo {
                name: "get".into(),
                description: "GET a URL; returns {status, body}.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"url": {"type": "string", "pattern": "^https?://"}},
                    "required": ["url"],
                    "additionalProperties": false
                })
                .to_string(),
                output_schema: String::new(),
                acts_on_world: false,
            }],
        }
    }

    fn invoke(verb: String, input: String) -> Result<Output, Failure> {
        if verb != "get" {
            return Err(failure(
                "invalid-input",
                format!("unknown verb `{verb}` (nettest has: get)"),
            ));
        }
        let input: Value = serde_json::from_str(&input)
            .map_err(|e| failure("invalid-input", format!("input is not JSON: {e}")))?;
        let url = input
            .get("url")
            .and_then(Value::as_str)
            .ok_or_else(|| failure("invalid-input", "input.url: a string is required"))?;
        let (status, body) = get(url)?;
        Ok(Output {
            value: json!({"status": status, "body": body}).to_string(),
            content: Vec::new(),
        })
    }
}

fn failure(code: &str, message: impl Into<String>) -> Failure {
    Failure {
        code: code.into(),
        message: message.into(),
        input_fired: false,
        details: String::new(),
    }
}

fn http_failure(url: &str, error: ErrorCode) -> Failure {
    match error {
        ErrorCode::HttpRequestDenied => {
            failure("denied", format!("the host refused outbound HTTP to {url}"))
        }
        other => failure("failed", format!("GET {url}: {other:?}")),
    }
}

fn get(url: &str) -> Result<(u16, String), Failure> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| {
        failure(
            "invalid-input",
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
    let bad = |_| failure("invalid-input", format!("input.url: cannot request {url}"));
    request.set_method(&Method::Get).map_err(bad)?;
    request.set_scheme(Some(&scheme)).map_err(bad)?;
    request.set_authority(Some(authority)).map_err(bad)?;
    request.set_path_with_query(Some(path)).map_err(bad)?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| http_failure(url, e))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or_else(|| failure("failed", "response not ready"))?
        .map_err(|()| failure("failed", "response taken twice"))?
        .map_err(|e| http_failure(url, e))?;
    let status = response.status();
    let body = response
        .consume()
        .map_err(|()| failure("failed", "no response body"))?;
    let stream = body
        .stream()
        .map_err(|()| failure("failed", "no response body stream"))?;
    let mut bytes = Vec::new();
    // Read until the stream closes; `blocking_read` waits for data.
    while let Ok(chunk) = stream.blocking_read(64 * 1024) {
        bytes.extend_from_slice(&chunk);
    }
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

export!(NetTest);
