//! Outbound HTTP for XML-RPC: one POST, the response body back.
//!
//! Inside the component this is `wasi:http/outgoing-handler`, which the host checks
//! against the plugin's allow-list. Built natively (unit tests) it is a plain HTTP/1.1
//! client on `std::net`, so the XML-RPC client can be tested against a real server.

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// In the style of Python's socket errors (`[Errno 111] Connection refused`), since
    /// RF's messages embed them.
    pub message: String,
    /// The host refused the destination (not on the plugin's allow-list): no request left
    /// the sandbox.
    pub denied: bool,
}

impl From<String> for HttpError {
    fn from(message: String) -> Self {
        Self {
            message,
            denied: false,
        }
    }
}

impl From<&str> for HttpError {
    fn from(message: &str) -> Self {
        message.to_string().into()
    }
}

/// Sends XML-RPC requests.
pub trait Transport {
    /// POSTs `body` to `url` and returns the response body.
    fn post(&mut self, url: &str, body: &[u8], timeout: Option<f64>) -> Result<Vec<u8>, HttpError>;
}

/// A parsed `http://host:port/path` URL.
// wasi:http takes the authority as a whole; host and port are for the native transport,
// and a build without the `remote` feature has no transport that reads URLs.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub(crate) struct Url {
    pub(crate) https: bool,
    pub(crate) authority: String,
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) path: String,
}

#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
impl Url {
    /// Parses an `http(s)://authority/path` URL; no path means `/RPC2`.
    pub(crate) fn parse(url: &str) -> Result<Url, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| format!("unsupported URL '{url}'"))?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            other => return Err(format!("unsupported XML-RPC protocol '{other}'")),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        // Python's ServerProxy posts to /RPC2 when the URL has no path.
        let path = if path.is_empty() { "/RPC2" } else { path };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => match p.parse() {
                Ok(port) => (h.to_string(), port),
                Err(_) => return Err(format!("nonnumeric port: '{p}'")),
            },
            _ => (authority.to_string(), if https { 443 } else { 80 }),
        };
        Ok(Url {
            https,
            authority: authority.to_string(),
            host: host.trim_matches(['[', ']']).to_string(),
            port,
            path: path.to_string(),
        })
    }
}

/// The transport this build uses.
pub fn default_transport() -> Box<dyn Transport> {
    #[cfg(all(target_arch = "wasm32", feature = "remote"))]
    {
        Box::new(wasi_http::WasiHttp)
    }
    #[cfg(all(target_arch = "wasm32", not(feature = "remote")))]
    {
        Box::new(Disabled)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Box::new(native::TcpHttp)
    }
}

/// A component built without the `remote` feature imports no wasi:http at all.
#[cfg(all(target_arch = "wasm32", not(feature = "remote")))]
struct Disabled;

#[cfg(all(target_arch = "wasm32", not(feature = "remote")))]
impl Transport for Disabled {
    fn post(
        &mut self,
        _url: &str,
        _body: &[u8],
        _timeout: Option<f64>,
    ) -> Result<Vec<u8>, HttpError> {
        Err(HttpError::from(
            "remote libraries are not available: this rf plugin was built without outbound HTTP (cargo feature `remote`)",
        ))
    }
}

#[cfg(all(target_arch = "wasm32", feature = "remote"))]
mod wasi_http {
    use super::{HttpError, Transport, Url};
    use wasi::http::outgoing_handler;
    use wasi::http::types::{
        ErrorCode, Fields, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme,
    };
    use wasi::io::streams::StreamError;

    /// wasi:http/outgoing-handler.
    pub(super) struct WasiHttp;

    /// Python-style text for the common failures, so RF's messages read as usual.
    fn describe(code: &ErrorCode) -> HttpError {
        let message = match code {
            ErrorCode::ConnectionRefused => "[Errno 111] Connection refused".into(),
            ErrorCode::DnsError(_) => "[Errno -2] Name or service not known".into(),
            ErrorCode::ConnectionTimeout | ErrorCode::ConnectionReadTimeout => "timed out".into(),
            ErrorCode::HttpRequestDenied => {
                return HttpError {
                    message: "the host denied the request: the address is not on the rf plugin's outbound HTTP allow-list ([plugins.grants.rf] http)".into(),
                    denied: true,
                };
            }
            other => format!("HTTP request failed: {other:?}"),
        };
        message.into()
    }

    impl Transport for WasiHttp {
        fn post(
            &mut self,
            url: &str,
            body: &[u8],
            timeout: Option<f64>,
        ) -> Result<Vec<u8>, HttpError> {
            let url = Url::parse(url)?;
            let headers = Fields::from_list(&[
                ("content-type".to_string(), b"text/xml".to_vec()),
                ("user-agent".to_string(), b"stephost-rf (xmlrpc)".to_vec()),
                (
                    "content-length".to_string(),
                    body.len().to_string().into_bytes(),
                ),
            ])
            .map_err(|e| HttpError::from(format!("invalid request headers: {e:?}")))?;
            let request = OutgoingRequest::new(headers);
            let scheme = if url.https {
                Scheme::Https
            } else {
                Scheme::Http
            };
            request
                .set_method(&Method::Post)
                .map_err(|()| "cannot set method")?;
            request
                .set_scheme(Some(&scheme))
                .map_err(|()| "cannot set scheme")?;
            request
                .set_authority(Some(&url.authority))
                .map_err(|()| HttpError::from(format!("invalid authority '{}'", url.authority)))?;
            request
                .set_path_with_query(Some(&url.path))
                .map_err(|()| HttpError::from(format!("invalid path '{}'", url.path)))?;
            let options = RequestOptions::new();
            if let Some(t) = timeout {
                let ns = (t.max(0.0) * 1e9) as u64;
                // A host may not support these; the host's step timeout still applies.
                let _ = options.set_connect_timeout(Some(ns));
                let _ = options.set_first_byte_timeout(Some(ns));
                let _ = options.set_between_bytes_timeout(Some(ns));
            }
            let outgoing = request.body().map_err(|()| "cannot open request body")?;
            let future =
                outgoing_handler::handle(request, Some(options)).map_err(|e| describe(&e))?;
            // When the connection fails, the body stream closes under the writer; the
            // response future then carries the real reason, so it is asked first.
            let mut write_error = None;
            {
                let stream = outgoing.write().map_err(|()| "cannot write request body")?;
                // blocking-write-and-flush takes at most 4096 bytes per call.
                for chunk in body.chunks(4096) {
                    if let Err(e) = stream.blocking_write_and_flush(chunk) {
                        write_error = Some(format!("writing the request failed: {e:?}"));
                        break;
                    }
                }
            }
            let finished = OutgoingBody::finish(outgoing, None);
            let response = loop {
                match future.get() {
                    Some(result) => break result,
                    None => future.subscribe().block(),
                }
            };
            let response = response
                .map_err(|()| HttpError::from("the response was already taken"))?
                .map_err(|e| describe(&e))?;
            if let Some(e) = write_error {
                return Err(e.into());
            }
            finished.map_err(|e| describe(&e))?;
            let status = response.status();
            let incoming = response
                .consume()
                .map_err(|()| "cannot read the response body")?;
            let stream = incoming
                .stream()
                .map_err(|()| "cannot read the response body")?;
            let mut data = Vec::new();
            loop {
                match stream.blocking_read(64 * 1024) {
                    Ok(chunk) => data.extend_from_slice(&chunk),
                    Err(StreamError::Closed) => break,
                    Err(e) => return Err(format!("reading the response failed: {e:?}").into()),
                }
            }
            drop(stream);
            drop(incoming);
            if status != 200 {
                return Err(format!(
                    "<ProtocolError for {}{}: {status} {}>",
                    url.authority,
                    url.path,
                    reason(status)
                )
                .into());
            }
            Ok(data)
        }
    }

    fn reason(status: u16) -> &'static str {
        match status {
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            _ => "",
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::io::{ErrorKind, Read, Write};
    use std::net::{TcpStream, ToSocketAddrs};
    use std::time::Duration;

    use super::{HttpError, Transport, Url};

    /// HTTP/1.1 over `std::net`, for native tests.
    pub(super) struct TcpHttp;

    fn describe(e: &std::io::Error) -> String {
        match e.kind() {
            ErrorKind::ConnectionRefused => "[Errno 111] Connection refused".into(),
            ErrorKind::TimedOut | ErrorKind::WouldBlock => "timed out".into(),
            _ => e.to_string(),
        }
    }

    impl Transport for TcpHttp {
        fn post(
            &mut self,
            url: &str,
            body: &[u8],
            timeout: Option<f64>,
        ) -> Result<Vec<u8>, HttpError> {
            let url = Url::parse(url)?;
            if url.https {
                return Err("https is not supported by the native test transport".into());
            }
            let addr = (url.host.as_str(), url.port)
                .to_socket_addrs()
                .map_err(|_| "[Errno -2] Name or service not known".to_string())?
                .next()
                .ok_or("[Errno -2] Name or service not known")?;
            let limit = Duration::from_secs_f64(timeout.unwrap_or(60.0).max(0.001));
            let mut stream = TcpStream::connect_timeout(&addr, limit).map_err(|e| describe(&e))?;
            let _ = stream.set_read_timeout(Some(limit));
            let head = format!(
                "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: text/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                url.path,
                url.authority,
                body.len()
            );
            stream
                .write_all(head.as_bytes())
                .map_err(|e| describe(&e))?;
            stream.write_all(body).map_err(|e| describe(&e))?;
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).map_err(|e| describe(&e))?;
            let split = raw
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .ok_or("malformed HTTP response")?;
            let head = String::from_utf8_lossy(&raw[..split]).into_owned();
            let mut data = raw[split + 4..].to_vec();
            let status: u16 = head
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .ok_or("malformed HTTP status line")?;
            if head
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked")
            {
                data = dechunk(&data).map_err(HttpError::from)?;
            }
            if status != 200 {
                return Err(format!(
                    "<ProtocolError for {}{}: {status}>",
                    url.authority, url.path
                )
                .into());
            }
            Ok(data)
        }
    }

    fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        loop {
            let line_end = data
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or("malformed chunked body")?;
            let size_text = String::from_utf8_lossy(&data[..line_end]);
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| "malformed chunk size")?;
            data = &data[line_end + 2..];
            if size == 0 {
                return Ok(out);
            }
            if data.len() < size + 2 {
                return Err("truncated chunked body".into());
            }
            out.extend_from_slice(&data[..size]);
            data = &data[size + 2..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_like_serverproxy() {
        let u = Url::parse("http://127.0.0.1:8270").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8270, "/RPC2")
        );
        let u = Url::parse("https://example.com/x/y").unwrap();
        assert!(u.https);
        assert_eq!((u.port, u.path.as_str()), (443, "/x/y"));
        assert!(Url::parse("ftp://x").is_err());
    }
}
