//! Outbound HTTP (`wasi:http/outgoing-handler`), checked against the plugin's
//! allow-list in the host before any connection is made.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, RwLock};

use stephost_contract::Denial;

use super::webdriver::{
    Inspect, MAX_CDP_BODY, MAX_SEND_KEYS_BODY, UploadRefused, UploadRule, VendorRefused,
    VendorRoute, check_cdp_body, is_send_keys, vendor_route,
};

use wasmtime_wasi_http::{
    Error as HttpError, RequestOptions, Result as HttpResult, WasiBody, WasiHttpHooks,
};

/// One allowed destination, written `host:port`, `host:*`, or `loopback:PORT|*`
/// (`loopback` means `localhost`, 127.0.0.0/8 and `::1`). IPv6 literals go in
/// brackets: `[::1]:8080`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostMatch,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    Loopback,
    Exact(String),
}

/// A pattern that does not parse.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("`{0}` is not a host pattern (expected host:port, host:*, or loopback:*)")]
pub struct BadPattern(pub String);

/// A host as written in a pattern or a URI, compared case-insensitively and
/// without the brackets of an IPv6 literal.
fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

impl std::str::FromStr for HostPattern {
    type Err = BadPattern;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadPattern(text.to_owned());
        let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
        let port = match port {
            "*" => None,
            p => Some(p.parse::<u16>().map_err(|_| bad())?),
        };
        let host = normalize_host(host);
        if host.is_empty() || host.contains('/') || host.contains('*') {
            return Err(bad());
        }
        let host = if host == "loopback" {
            HostMatch::Loopback
        } else {
            HostMatch::Exact(host)
        };
        Ok(Self { host, port })
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            HostMatch::Loopback => write!(f, "loopback")?,
            HostMatch::Exact(h) if h.contains(':') => write!(f, "[{h}]")?,
            HostMatch::Exact(h) => write!(f, "{h}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => write!(f, ":*"),
        }
    }
}

impl HostPattern {
    /// Whether every destination `other` allows is also allowed by `self`.
    pub fn covers(&self, other: &HostPattern) -> bool {
        let ports = match (self.port, other.port) {
            (None, _) => true,
            (Some(a), Some(b)) => a == b,
            (Some(_), None) => false,
        };
        let hosts = match (&self.host, &other.host) {
            (HostMatch::Loopback, HostMatch::Loopback) => true,
            (HostMatch::Loopback, HostMatch::Exact(h)) => {
                h == "localhost" || h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
            }
            (HostMatch::Exact(a), HostMatch::Exact(b)) => a == b,
            (HostMatch::Exact(_), HostMatch::Loopback) => false,
        };
        ports && hosts
    }

    /// Whether `host:port` matches.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = normalize_host(host);
        match &self.host {
            HostMatch::Loopback => {
                host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
            }
            HostMatch::Exact(h) => *h == host,
        }
    }
}

/// The destinations one plugin may reach, fixed by its grant. Empty means
/// none. Shared by all instances of the plugin; what an instance may reach
/// beyond it (its own browser session) is a scope on its gate.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    patterns: Arc<[HostPattern]>,
}

impl AllowList {
    /// A list of these patterns.
    pub fn new(patterns: Vec<HostPattern>) -> Self {
        Self {
            patterns: patterns.into(),
        }
    }

    /// Whether `host:port` may be reached.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.patterns.iter().any(|p| p.allows(host, port))
    }

    /// The patterns, for messages.
    pub fn describe(&self) -> String {
        let list = &self.patterns;
        if list.is_empty() {
            return "nothing".into();
        }
        list.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Addresses the host itself serves or started: the WebDriver driver, the MCP
/// HTTP listener. No allow-list entry opens them (a `loopback:*` grant would
/// otherwise reach the driver's session-creating endpoint, other tenants'
/// browser sessions, or the MCP server with the host's own network position);
/// only an instance's [`ScopedDestination`] does.
#[derive(Debug, Clone, Default)]
pub struct HostOwned(Arc<RwLock<Vec<SocketAddr>>>);

impl HostOwned {
    /// Marks `addr` as the host's own.
    pub fn add(&self, addr: SocketAddr) {
        let mut addrs = self.0.write().unwrap_or_else(|e| e.into_inner());
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }

    /// Forgets `addr` (the driver stopped).
    pub fn remove(&self, addr: SocketAddr) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|a| *a != addr);
    }

    /// Whether a request to `host:port` would reach one of the host's own
    /// addresses. `host` is as written in the URI: `localhost` and loopback
    /// literals reach anything bound to loopback or to all interfaces; another
    /// literal reaches what is bound to it or to all interfaces of its family.
    pub fn covers(&self, host: &str, port: u16) -> bool {
        let host = normalize_host(host);
        let ip = if host == "localhost" || host.ends_with(".localhost") {
            Some(IpAddr::from([127, 0, 0, 1]))
        } else {
            host.parse::<IpAddr>().ok().map(|ip| ip.to_canonical())
        };
        let Some(ip) = ip else {
            // A name other than localhost: see docs/security.md on DNS.
            return false;
        };
        let addrs = self.0.read().unwrap_or_else(|e| e.into_inner());
        addrs.iter().any(|owned| {
            let owned_ip = owned.ip().to_canonical();
            owned.port() == port
                && (owned_ip == ip
                    || owned_ip.is_unspecified()
                    || (ip.is_loopback() && owned_ip.is_loopback())
                    || ip.is_unspecified())
        })
    }
}

/// One destination that a single instance may reach, and only under one path
/// prefix: the host grants a plugin instance its own WebDriver session this way
/// (`127.0.0.1:PORT` under `/session/ID`), so it can reach neither another
/// instance's session nor the driver's session-creating endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScopedDestination {
    /// Host, as the host hands it to the plugin (`127.0.0.1`).
    pub host: String,
    /// Port.
    pub port: u16,
    /// Path prefix, without a trailing `/` (`/session/3f2a`).
    pub prefix: String,
    /// Path segments refused even under the prefix (vendor extensions such as
    /// `goog`, which reach past WebDriver).
    pub denied_segments: Vec<String>,
    /// The routes under a denied segment that stay open all the same, each
    /// with what the gate reads of it (`webdriver/vendor.rs`).
    pub vendor: &'static [VendorRoute],
    /// Paths after the prefix refused outright (driver extensions without a
    /// vendor segment, `webdriver/vendor.rs`).
    pub refused_routes: &'static [&'static str],
    /// For a WebDriver session: the folders whose files send-keys text may
    /// name (a driver reads that text as host paths for a file input). Every
    /// send-keys body is checked against it before it leaves; `None` for a
    /// scope that is not a WebDriver session.
    pub send_keys: Option<Arc<UploadRule>>,
}

impl ScopedDestination {
    fn covers(&self, host: &str, port: u16) -> bool {
        self.port == port && self.host.eq_ignore_ascii_case(host)
    }

    /// Whether `path` is the prefix or under it. Dot segments, empty segments
    /// and percent escapes are refused outright, so no spelling of a path can
    /// step out of the prefix on the server side. A denied segment is refused
    /// unless the whole request is one of the scope's open vendor routes.
    fn allows_path(&self, method: &http::Method, path: &str) -> bool {
        let under = path == self.prefix
            || path
                .strip_prefix(&self.prefix)
                .is_some_and(|rest| rest.starts_with('/'));
        let vendor = self.vendor_inspect(method, path).is_some();
        let refused = path
            .strip_prefix(&self.prefix)
            .is_some_and(|rest| self.refused_routes.contains(&rest));
        under
            && !refused
            && !path.contains('%')
            && path.split('/').skip(1).all(|segment| {
                !segment.is_empty()
                    && segment != "."
                    && segment != ".."
                    && (vendor || !self.denied_segments.iter().any(|d| d == segment))
            })
    }

    /// What the gate reads of a request to an open vendor route; `None` for
    /// any other request.
    fn vendor_inspect(&self, method: &http::Method, path: &str) -> Option<Inspect> {
        let rest = path.strip_prefix(&self.prefix)?;
        vendor_route(self.vendor, method, rest)
    }
}

/// The hooks that enforce an [`AllowList`].
pub(crate) struct HttpGate {
    allow: AllowList,
    host_owned: HostOwned,
    plugin: Arc<str>,
    /// Destinations this instance alone may reach, each only under its prefix.
    /// They take precedence over the allow-list: a destination listed here is
    /// reachable only through its scope.
    scoped: Vec<ScopedDestination>,
    /// Destinations refused during the call in progress, for the report.
    pub(crate) denied: Vec<Denial>,
}

impl HttpGate {
    /// A gate for `plugin` with its allow-list; `host_owned` is refused whatever
    /// the list says.
    pub(crate) fn new(plugin: Arc<str>, allow: AllowList, host_owned: HostOwned) -> Self {
        Self {
            allow,
            host_owned,
            plugin,
            scoped: Vec::new(),
            denied: Vec::new(),
        }
    }

    /// Lets this instance reach `scope` (replacing an earlier scope for the same
    /// host and port).
    pub(crate) fn add_scope(&mut self, scope: ScopedDestination) {
        self.scoped.retain(|s| !s.covers(&scope.host, scope.port));
        self.scoped.push(scope);
    }

    /// Takes back the scope for `host:port` (its server is gone).
    pub(crate) fn remove_scope(&mut self, host: &str, port: u16) {
        self.scoped.retain(|s| !s.covers(host, port));
    }

    /// The upload rule a request to `host:port` at `path` must pass, when it
    /// is a send-keys command under a WebDriver scope.
    fn send_keys_rule(
        &self,
        method: &http::Method,
        host: &str,
        port: u16,
        path: &str,
    ) -> Option<Arc<UploadRule>> {
        self.scoped
            .iter()
            .filter(|s| s.covers(host, port) && s.allows_path(method, path))
            .find_map(|s| {
                let rule = s.send_keys.as_ref()?;
                let rest = path.strip_prefix(&s.prefix)?;
                is_send_keys(method, rest).then(|| rule.clone())
            })
    }

    /// Whether a DevTools passthrough body must be checked before a request
    /// to `host:port` at `path` leaves (an open vendor route that takes one).
    fn inspects_cdp(&self, method: &http::Method, host: &str, port: u16, path: &str) -> bool {
        self.scoped
            .iter()
            .any(|s| s.covers(host, port) && s.vendor_inspect(method, path) == Some(Inspect::Cdp))
    }

    /// Whether a `method` request to `host:port` at `path` may go out.
    fn allows(&self, method: &http::Method, host: &str, port: u16, path: &str) -> bool {
        let mut scopes = self
            .scoped
            .iter()
            .filter(|s| s.covers(host, port))
            .peekable();
        if scopes.peek().is_some() {
            return scopes.any(|s| s.allows_path(method, path));
        }
        !self.host_owned.covers(host, port) && self.allow.allows(host, port)
    }
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<
        dyn Future<
                Output = HttpResult<(
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                )>,
            > + Send,
    > {
        let uri = request.uri();
        let host = uri.host().unwrap_or_default().to_owned();
        let default_port = if uri.scheme() == Some(&http::uri::Scheme::HTTPS) {
            443
        } else {
            80
        };
        let port = uri.port_u16().unwrap_or(default_port);
        if !self.allows(request.method(), &host, port, uri.path()) {
            let grant = self.allow.describe();
            let denial = if self.scoped.iter().any(|s| s.covers(&host, port)) {
                Denial::OutsideScope {
                    destination: format!("{host}:{port}{}", uri.path()),
                    grant,
                }
            } else if self.host_owned.covers(&host, port) {
                Denial::HostAddress {
                    destination: format!("{host}:{port}"),
                }
            } else {
                Denial::NotGranted {
                    destination: format!("{host}:{port}"),
                    grant,
                }
            };
            tracing::warn!(plugin = &*self.plugin, denial = ?denial, "outbound HTTP refused");
            self.denied.push(denial);
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        _ = fut;
        let send_keys = self.send_keys_rule(request.method(), &host, port, uri.path());
        let cdp = self.inspects_cdp(request.method(), &host, port, uri.path());
        let plugin = self.plugin.clone();
        Box::new(async move {
            use http_body_util::BodyExt;
            let request = match send_keys {
                Some(rule) => match checked_send_keys(request, &rule).await {
                    Ok(request) => request,
                    Err(refused) => {
                        tracing::warn!(plugin = &*plugin, %refused, "file path in a send-keys request refused");
                        return Ok(refusal(&refused));
                    }
                },
                None if cdp => match checked_cdp(request).await {
                    Ok(request) => request,
                    Err(refused) => {
                        tracing::warn!(plugin = &*plugin, %refused, "DevTools request refused");
                        return Ok(refusal(&refused));
                    }
                },
                None => request,
            };
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = Result<(), HttpError>> + Send>,
            ))
        })
    }
}

/// Reads a send-keys body (bounded) and passes it on only if `rule` allows
/// every host path it names, with those paths made canonical.
async fn checked_send_keys(
    request: http::Request<WasiBody>,
    rule: &UploadRule,
) -> Result<http::Request<WasiBody>, UploadRefused> {
    use http_body_util::BodyExt;
    let (mut parts, body) = request.into_parts();
    let too_long = || UploadRefused::BadBody {
        max: MAX_SEND_KEYS_BODY,
        why: "too long, or unreadable".into(),
    };
    let bytes = http_body_util::Limited::new(body, MAX_SEND_KEYS_BODY)
        .collect()
        .await
        .map_err(|_| too_long())?
        .to_bytes();
    let checked = rule.check_body(&bytes)?;
    parts.headers.insert(
        http::header::CONTENT_LENGTH,
        http::HeaderValue::from(checked.len()),
    );
    let body = http_body_util::Full::new(hyper::body::Bytes::from(checked))
        .map_err(|never| match never {})
        .boxed_unsync();
    Ok(http::Request::from_parts(parts, body))
}

/// Reads a DevTools passthrough body (bounded) and passes it on, unchanged,
/// only if `webdriver/vendor.rs` allows its command and parameters.
async fn checked_cdp(
    request: http::Request<WasiBody>,
) -> Result<http::Request<WasiBody>, VendorRefused> {
    use http_body_util::BodyExt;
    let (parts, body) = request.into_parts();
    let bytes = http_body_util::Limited::new(body, MAX_CDP_BODY)
        .collect()
        .await
        .map_err(|_| VendorRefused::BadBody {
            max: MAX_CDP_BODY,
            why: "too long, or unreadable".into(),
        })?
        .to_bytes();
    check_cdp_body(&bytes)?;
    let body = http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync();
    Ok(http::Request::from_parts(parts, body))
}

/// The WebDriver error answer the plugin gets for a body the gate refused (a
/// send-keys path, a DevTools command; the request never reaches the driver).
/// The message starts with `stephost:` so the plugin can tell the host's
/// refusal from the browser's.
fn refusal(
    refused: &dyn std::fmt::Display,
) -> (
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
) {
    use http_body_util::BodyExt;
    let body = serde_json::json!({"value": {
        "error": "invalid argument",
        "message": format!("stephost: {refused}"),
        "stacktrace": ""
    }})
    .to_string();
    let mut response = http::Response::new(
        http_body_util::Full::new(hyper::body::Bytes::from(body))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = http::StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json; charset=utf-8"),
    );
    (
        response,
        Box::new(async { Ok(()) }) as Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> HostPattern {
        text.parse().expect("pattern")
    }

    #[test]
    fn patterns_match_host_and_port() {
        assert!(p("127.0.0.1:8270").allows("127.0.0.1", 8270));
        assert!(!p("127.0.0.1:8270").allows("127.0.0.1", 8271));
        assert!(p("Example.com:*").allows("example.COM", 443));
        assert!(!p("example.com:*").allows("evil.example.com", 443));
        assert!(p("[::1]:80").allows("[::1]", 80));
    }

    #[test]
    fn loopback_means_loopback_only() {
        let lo = p("loopback:*");
        for host in ["localhost", "127.0.0.1", "127.3.4.5", "::1", "[::1]"] {
            assert!(lo.allows(host, 1), "{host}");
        }
        for host in [
            "10.0.0.1",
            "192.168.1.1",
            "example.com",
            "localhost.evil.com",
        ] {
            assert!(!lo.allows(host, 1), "{host}");
        }
    }

    #[test]
    fn coverage_is_subset_of_destinations() {
        assert!(p("loopback:*").covers(&p("127.0.0.1:8270")));
        assert!(p("loopback:*").covers(&p("localhost:*")));
        assert!(!p("127.0.0.1:*").covers(&p("loopback:*")));
        assert!(!p("example.com:443").covers(&p("example.com:*")));
        assert!(p("example.com:*").covers(&p("example.com:443")));
        assert!(!p("loopback:*").covers(&p("example.com:80")));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for text in ["", "host", "host:port", "*:80", "a/b:1", ":80"] {
            assert!(text.parse::<HostPattern>().is_err(), "{text}");
        }
    }

    #[test]
    fn scoped_destinations_allow_only_their_prefix() {
        let owned = HostOwned::default();
        owned.add("127.0.0.1:9515".parse().expect("addr"));
        let mut gate = HttpGate::new(
            Arc::from("browser"),
            AllowList::new(vec![p("loopback:*")]),
            owned,
        );
        gate.add_scope(ScopedDestination {
            host: "127.0.0.1".into(),
            port: 9515,
            prefix: "/session/abc".into(),
            denied_segments: vec!["goog".into()],
            vendor: &[],
            refused_routes: &[],
            send_keys: None,
        });
        assert!(gate.allows(&http::Method::GET, "127.0.0.1", 9515, "/session/abc"));
        assert!(gate.allows(&http::Method::GET, "127.0.0.1", 9515, "/session/abc/url"));
        for path in [
            "/session",
            "/session/abcd/url",
            "/session/other/url",
            "/session/abc/../other/url",
            "/session/abc//url",
            "/session/abc/%2e%2e/other",
            "/session/abc/goog/cdp/execute",
            "/status",
        ] {
            assert!(
                !gate.allows(&http::Method::GET, "127.0.0.1", 9515, path),
                "{path}"
            );
        }
        assert!(
            gate.allows(&http::Method::GET, "127.0.0.1", 8000, "/"),
            "other ports keep the allow-list"
        );
    }

    fn webdriver_gate() -> HttpGate {
        let owned = HostOwned::default();
        owned.add("127.0.0.1:9515".parse().expect("addr"));
        let mut gate = HttpGate::new(
            Arc::from("browser"),
            AllowList::new(vec![p("loopback:*")]),
            owned,
        );
        gate.add_scope(ScopedDestination {
            host: "127.0.0.1".into(),
            port: 9515,
            prefix: "/session/abc".into(),
            denied_segments: ["goog", "chromium", "moz", "se"].map(String::from).to_vec(),
            vendor: super::super::webdriver::ALLOWED_VENDOR,
            refused_routes: super::super::webdriver::REFUSED_ROUTES,
            send_keys: Some(Arc::new(UploadRule::default())),
        });
        gate
    }

    #[test]
    fn vendor_endpoints_stay_refused_but_the_listed_routes() {
        let gate = webdriver_gate();
        let (get, post) = (http::Method::GET, http::Method::POST);
        let at = |method: &http::Method, path: &str| gate.allows(method, "127.0.0.1", 9515, path);
        assert!(at(&get, "/session/abc/moz/screenshot/full"));
        assert!(at(&post, "/session/abc/goog/cdp/execute"));
        assert!(gate.inspects_cdp(&post, "127.0.0.1", 9515, "/session/abc/goog/cdp/execute"));
        assert!(!gate.inspects_cdp(&get, "127.0.0.1", 9515, "/session/abc/moz/screenshot/full"));
        assert!(!gate.inspects_cdp(&post, "127.0.0.1", 9515, "/session/abc/url"));
        for (method, path) in [
            (&post, "/session/abc/moz/screenshot/full"),
            (&get, "/session/abc/goog/cdp/execute"),
            (&post, "/session/abc/moz/addon/install"),
            (&post, "/session/abc/moz/addon/uninstall"),
            (&get, "/session/abc/moz/context"),
            (&post, "/session/abc/moz/context"),
            (&get, "/session/abc/moz/screenshot/full/extra"),
            (&post, "/session/abc/goog/cdp/executeAsync"),
            (&post, "/session/abc/goog/cdp/execute/x"),
            (&post, "/session/abc/goog/cast/set_sink_to_use"),
            (&post, "/session/abc/goog/page/freeze"),
            (&post, "/session/abc/chromium/send_command_and_get_result"),
            (&post, "/session/abc/se/file"),
            (&get, "/session/abc/screenshot/full"),
            (&post, "/session/abc/element/e1/moz/x"),
            (&get, "/session/abc/goog/../moz/screenshot/full"),
            (&get, "/session/abc//moz/screenshot/full"),
            (&get, "/session/abc/moz/screenshot/%66ull"),
            (&post, "/session/other/goog/cdp/execute"),
            (&get, "/session/moz/screenshot/full"),
        ] {
            assert!(!at(method, path), "{method} {path}");
        }
        assert!(at(&get, "/session/abc/screenshot"), "W3C routes stay open");
    }

    fn cdp(body: serde_json::Value) -> http::Request<WasiBody> {
        use http_body_util::BodyExt;
        let json = body.to_string();
        http::Request::builder()
            .method(http::Method::POST)
            .uri("http://127.0.0.1:9515/session/abc/goog/cdp/execute")
            .header(http::header::CONTENT_LENGTH, json.len())
            .body(
                http_body_util::Full::new(hyper::body::Bytes::from(json))
                    .map_err(|never| match never {})
                    .boxed_unsync(),
            )
            .expect("request")
    }

    #[tokio::test]
    async fn devtools_bodies_are_read_before_they_leave() {
        use http_body_util::BodyExt;
        let shot = serde_json::json!({"cmd": "Page.captureScreenshot", "params": {
            "format": "png", "captureBeyondViewport": true,
            "clip": {"x": 0, "y": 0, "width": 1280, "height": 3000, "scale": 1}}});
        let sent = checked_cdp(cdp(shot.clone())).await.expect("allowed");
        let bytes = sent.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&bytes).expect("json"),
            shot,
            "sent on unchanged"
        );
        for body in [
            serde_json::json!({"cmd": "Runtime.evaluate", "params": {"expression": "1"}}),
            serde_json::json!({"cmd": "Page.captureScreenshot", "params": {
                "clip": {"x": 0, "y": 0, "width": 1280, "height": 100000, "scale": 1}}}),
            serde_json::json!({"cmd": "Page.captureScreenshot", "params": {}}),
        ] {
            let refused = checked_cdp(cdp(body.clone())).await.expect_err("refused");
            let (response, _) = refusal(&refused);
            assert_eq!(response.status(), http::StatusCode::BAD_REQUEST, "{body}");
        }
    }

    fn session_gate(rule: UploadRule) -> HttpGate {
        let owned = HostOwned::default();
        owned.add("127.0.0.1:9515".parse().expect("addr"));
        let mut gate = HttpGate::new(Arc::from("browser"), AllowList::default(), owned);
        gate.add_scope(ScopedDestination {
            host: "127.0.0.1".into(),
            port: 9515,
            prefix: "/session/abc".into(),
            denied_segments: vec![],
            vendor: &[],
            refused_routes: &[],
            send_keys: Some(Arc::new(rule)),
        });
        gate
    }

    fn body(text: &str) -> http::Request<WasiBody> {
        use http_body_util::BodyExt;
        let json = serde_json::json!({ "text": text }).to_string();
        http::Request::builder()
            .method(http::Method::POST)
            .uri("http://127.0.0.1:9515/session/abc/element/e1/value")
            .header(http::header::CONTENT_LENGTH, json.len())
            .body(
                http_body_util::Full::new(hyper::body::Bytes::from(json))
                    .map_err(|never| match never {})
                    .boxed_unsync(),
            )
            .expect("request")
    }

    async fn sent_text(request: http::Request<WasiBody>) -> String {
        use http_body_util::BodyExt;
        let length: usize = request.headers()[http::header::CONTENT_LENGTH]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("number");
        let bytes = request
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        assert_eq!(bytes.len(), length, "the length matches the new body");
        let value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        value["text"].as_str().expect("text").to_owned()
    }

    #[test]
    fn only_send_keys_under_a_session_scope_are_inspected() {
        let gate = session_gate(UploadRule::default());
        let post = http::Method::POST;
        let at = |method: &http::Method, path: &str| {
            gate.send_keys_rule(method, "127.0.0.1", 9515, path)
                .is_some()
        };
        assert!(at(&post, "/session/abc/element/e1/value"));
        assert!(at(&post, "/session/abc/keys"));
        assert!(!at(&post, "/session/abc/element/e1/click"));
        assert!(!at(&post, "/session/abc/actions"));
        assert!(!at(&http::Method::GET, "/session/abc/element/e1/value"));
        assert!(
            !at(&post, "/session/other/element/e1/value"),
            "outside the scope the request is refused anyway"
        );
    }

    #[tokio::test]
    async fn send_keys_text_naming_host_files_needs_an_upload_folder() {
        let granted = tempfile::tempdir().expect("tempdir");
        let granted_path = std::fs::canonicalize(granted.path()).expect("canonical");
        let file = granted_path.join("report.csv");
        std::fs::write(&file, b"a,b").expect("write");
        let outside = tempfile::tempdir().expect("tempdir");
        let secret = outside.path().join("secret.txt");
        std::fs::write(&secret, b"s").expect("write");
        std::os::unix::fs::symlink(&secret, granted_path.join("escape")).expect("symlink");

        // Nothing granted: plain text passes, any existing host path is refused.
        let none = UploadRule::default();
        assert_eq!(
            sent_text(checked_send_keys(body("hello"), &none).await.expect("text")).await,
            "hello"
        );
        let err = checked_send_keys(body(&file.display().to_string()), &none)
            .await
            .expect_err("no grant");
        assert!(err.to_string().contains("[browser] upload_dirs"), "{err}");

        // A granted folder: its files pass (made canonical), the rest does not.
        let rule = UploadRule::new(&[granted.path().to_owned()]);
        let dotted = format!(
            "{}/../{}/report.csv",
            granted_path.display(),
            granted_path.file_name().expect("name").to_string_lossy()
        );
        assert_eq!(
            sent_text(
                checked_send_keys(body(&dotted), &rule)
                    .await
                    .expect("granted")
            )
            .await,
            file.display().to_string()
        );
        for text in [
            secret.display().to_string(),
            granted_path.join("escape").display().to_string(),
            format!("{}\n/etc/passwd", file.display()),
        ] {
            let err = checked_send_keys(body(&text), &rule)
                .await
                .expect_err(&text);
            assert!(
                matches!(err, UploadRefused::Outside { .. }),
                "{text}: {err}"
            );
        }

        // The refusal is a WebDriver error the plugin reads as the host's.
        let (response, _) = refusal(&err);
        assert_eq!(response.status(), http::StatusCode::BAD_REQUEST);
        use http_body_util::BodyExt;
        let answer = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let answer: serde_json::Value = serde_json::from_slice(&answer).expect("json");
        assert_eq!(answer["value"]["error"], "invalid argument");
        assert!(
            answer["value"]["message"]
                .as_str()
                .expect("message")
                .starts_with("stephost: ")
        );
    }

    #[test]
    fn host_owned_addresses_stay_shut_whatever_the_grant() {
        let owned = HostOwned::default();
        owned.add("127.0.0.1:9515".parse().expect("addr"));
        owned.add("0.0.0.0:8080".parse().expect("addr"));
        owned.add("10.1.2.3:7000".parse().expect("addr"));
        let gate = HttpGate::new(
            Arc::from("rf"),
            AllowList::new(vec![p("loopback:*"), p("10.1.2.3:*"), p("10.9.9.9:*")]),
            owned.clone(),
        );
        for (host, port) in [
            ("127.0.0.1", 9515),
            ("localhost", 9515),
            ("127.0.0.2", 9515),
            ("[::1]", 9515),
            ("::ffff:127.0.0.1", 9515),
            ("127.0.0.1", 8080),
            ("localhost", 8080),
            ("10.1.2.3", 8080),
            ("10.1.2.3", 7000),
        ] {
            assert!(
                !gate.allows(&http::Method::GET, host, port, "/"),
                "{host}:{port}"
            );
        }
        assert!(
            gate.allows(&http::Method::GET, "127.0.0.1", 8270, "/RPC2"),
            "other loopback ports stay open"
        );
        assert!(gate.allows(&http::Method::GET, "10.1.2.3", 7001, "/"));
        assert!(
            !gate.allows(&http::Method::GET, "10.9.9.9", 8080, "/"),
            "a wildcard bind reaches every address of the machine; a granted literal is refused"
        );
        owned.remove("127.0.0.1:9515".parse().expect("addr"));
        assert!(
            gate.allows(&http::Method::GET, "127.0.0.1", 9515, "/"),
            "a stopped driver's port frees up"
        );
    }

    #[test]
    fn an_empty_list_allows_nothing() {
        let list = AllowList::default();
        assert!(!list.allows("127.0.0.1", 9515));
        assert_eq!(list.describe(), "nothing");
        let list = AllowList::new(vec![p("127.0.0.1:9515")]);
        assert!(list.allows("127.0.0.1", 9515));
        assert_eq!(list.describe(), "127.0.0.1:9515");
    }
}
