//! JSON over HTTP/1.1 through `wasi:http/outgoing-handler`: the transport of
//! every WebDriver command. The host lets these requests reach this instance's
//! own WebDriver session and nothing else.

use serde_json::Value;
use wasi::http::outgoing_handler;
use wasi::http::types::{ErrorCode, Fields, Method, OutgoingBody, OutgoingRequest, Scheme};

/// A transport failure (no HTTP answer at all).
pub(crate) enum HttpError {
    /// The host refused the destination.
    Denied,
    /// The request could not be made or answered.
    Failed(String),
}

/// `METHOD http://authority/path` with an optional JSON body; returns the status
/// and the JSON body of the answer (`null` when it is empty or not JSON).
pub(crate) fn request(
    method: &str,
    authority: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<(u16, Value), HttpError> {
    let bytes = body.map(|b| b.to_string().into_bytes());
    let mut headers: Vec<(String, Vec<u8>)> = Vec::new();
    if bytes.is_some() {
        headers.push((
            "content-type".into(),
            b"application/json; charset=utf-8".to_vec(),
        ));
    }
    // Always a length (0 without a body): otherwise a DELETE goes out chunked,
    // which chromedriver's HTTP server does not read.
    if method != "GET" {
        let length = bytes.as_ref().map_or(0, Vec::len);
        headers.push(("content-length".into(), length.to_string().into_bytes()));
    }
    let fields = Fields::from_list(&headers)
        .map_err(|e| HttpError::Failed(format!("bad request headers: {e:?}")))?;
    let request = OutgoingRequest::new(fields);
    let method = match method {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "DELETE" => Method::Delete,
        other => Method::Other(other.to_owned()),
    };
    let bad = |what: &str| HttpError::Failed(format!("cannot set the request {what}"));
    request.set_method(&method).map_err(|()| bad("method"))?;
    request
        .set_scheme(Some(&Scheme::Http))
        .map_err(|()| bad("scheme"))?;
    request
        .set_authority(Some(authority))
        .map_err(|()| bad("authority"))?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| bad("path"))?;
    let outgoing = request.body().map_err(|()| bad("body"))?;
    let pending = outgoing_handler::handle(request, None).map_err(transport)?;
    {
        let stream = outgoing.write().map_err(|()| bad("body stream"))?;
        if let Some(bytes) = &bytes {
            // wasi:io writes at most 4096 bytes per blocking call.
            for chunk in bytes.chunks(4096) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(|e| HttpError::Failed(format!("sending the request body: {e:?}")))?;
            }
        }
        // The stream must go before the body is finished.
    }
    OutgoingBody::finish(outgoing, None).map_err(transport)?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or_else(|| HttpError::Failed("no response".into()))?
        .map_err(|()| HttpError::Failed("response taken twice".into()))?
        .map_err(transport)?;
    let status = response.status();
    let incoming = response
        .consume()
        .map_err(|()| HttpError::Failed("no response body".into()))?;
    let mut bytes = Vec::new();
    {
        let stream = incoming
            .stream()
            .map_err(|()| HttpError::Failed("no response body stream".into()))?;
        // Read until the stream closes; `blocking_read` waits for data.
        while let Ok(chunk) = stream.blocking_read(256 * 1024) {
            bytes.extend_from_slice(&chunk);
        }
    }
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    Ok((status, value))
}

fn transport(error: ErrorCode) -> HttpError {
    match error {
        ErrorCode::HttpRequestDenied => HttpError::Denied,
        other => HttpError::Failed(format!("{other:?}")),
    }
}
