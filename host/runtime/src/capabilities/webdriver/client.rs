//! The host's own few WebDriver requests (`/status`, new session, delete
//! session): JSON over HTTP/1.1 to a driver on loopback. The plugin's commands
//! do not pass through here; it sends them itself over `wasi:http`.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use serde_json::Value;

/// A request to the driver that did not produce a WebDriver answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    /// No connection, or the connection broke.
    #[error("cannot reach the driver at {addr}: {message}")]
    Io {
        /// The driver's address.
        addr: SocketAddr,
        /// What failed.
        message: String,
    },
    /// No answer in time.
    #[error("the driver at {addr} did not answer {what} within {ms} ms")]
    Timeout {
        /// The driver's address.
        addr: SocketAddr,
        /// The request.
        what: String,
        /// The limit.
        ms: u128,
    },
    /// The answer is not WebDriver JSON.
    #[error("the driver at {addr} answered {what} with something that is not JSON: {message}")]
    NotJson {
        /// The driver's address.
        addr: SocketAddr,
        /// The request.
        what: String,
        /// The parse error.
        message: String,
    },
}

/// Sends one request and returns the HTTP status and the JSON body.
pub(crate) async fn request(
    addr: SocketAddr,
    method: http::Method,
    path: &str,
    body: Option<&Value>,
    timeout: Duration,
) -> Result<(u16, Value), ClientError> {
    let what = format!("{method} {path}");
    match tokio::time::timeout(timeout, send(addr, method, path, body)).await {
        Ok(result) => result,
        Err(_) => Err(ClientError::Timeout {
            addr,
            what,
            ms: timeout.as_millis(),
        }),
    }
}

async fn send(
    addr: SocketAddr,
    method: http::Method,
    path: &str,
    body: Option<&Value>,
) -> Result<(u16, Value), ClientError> {
    let io = |e: &dyn std::fmt::Display| ClientError::Io {
        addr,
        message: e.to_string(),
    };
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| io(&e))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| io(&e))?;
    // The connection task ends when the response is read and the sender dropped.
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "webdriver connection closed with an error");
        }
    });
    let bytes = body.map(|b| b.to_string()).unwrap_or_default();
    let request = http::Request::builder()
        .method(method.clone())
        .uri(path)
        .header(http::header::HOST, addr.to_string())
        .header(
            http::header::CONTENT_TYPE,
            "application/json; charset=utf-8",
        )
        .header(http::header::CONTENT_LENGTH, bytes.len())
        .body(Full::new(Bytes::from(bytes)))
        .map_err(|e| io(&e))?;
    let response = sender.send_request(request).await.map_err(|e| io(&e))?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| io(&e))?
        .to_bytes();
    let value = serde_json::from_slice(&body).map_err(|e| ClientError::NotJson {
        addr,
        what: format!("{method} {path}"),
        message: e.to_string(),
    })?;
    Ok((status, value))
}

/// `DELETE path` without a runtime, for cleanup where none may be running
/// (host shutdown). Waits at most `timeout` and ignores the answer beyond its
/// status line.
pub(crate) fn delete_blocking(addr: SocketAddr, path: &str, timeout: Duration) -> bool {
    let attempt = || -> std::io::Result<bool> {
        let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        write!(
            stream,
            "DELETE {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        let mut head = [0u8; 16];
        let n = stream.read(&mut head)?;
        Ok(head[..n].starts_with(b"HTTP/1.1 200") || head[..n].starts_with(b"HTTP/1.0 200"))
    };
    attempt().unwrap_or(false)
}

/// The WebDriver error of an answer, if it is one: `(error, message)`.
pub(crate) fn webdriver_error(status: u16, body: &Value) -> Option<(String, String)> {
    let value = body.get("value")?;
    let error = value.get("error").and_then(Value::as_str);
    if status < 400 && error.is_none() {
        return None;
    }
    let message = value
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // chromedriver appends a long native stack; the first line says it all.
    let message = message.lines().next().unwrap_or_default().to_owned();
    Some((error.unwrap_or("unknown error").to_owned(), message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webdriver_errors_are_read_from_the_value() {
        let body = serde_json::json!({"value": {"error": "session not created", "message": "Chrome failed\n#0 0x55"}});
        assert_eq!(
            webdriver_error(500, &body),
            Some(("session not created".into(), "Chrome failed".into()))
        );
        let ok = serde_json::json!({"value": {"sessionId": "x"}});
        assert_eq!(webdriver_error(200, &ok), None);
    }
}
