//! Outbound HTTP (`wasi:http/outgoing-handler`), checked against the plugin's
//! allow-list in the host before any connection is made.

use std::net::IpAddr;
use std::sync::{Arc, RwLock};

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

impl std::str::FromStr for HostPattern {
    type Err = BadPattern;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadPattern(text.to_owned());
        let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
        let port = match port {
            "*" => None,
            p => Some(p.parse::<u16>().map_err(|_| bad())?),
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
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
    /// Whether `host:port` matches.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        match &self.host {
            HostMatch::Loopback => {
                host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
            }
            HostMatch::Exact(h) => *h == host,
        }
    }
}

/// The destinations one plugin may reach. Empty means none. Shared by all
/// instances of the plugin; the host may add a destination at run time (the
/// address of a driver it started for the plugin).
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    patterns: Arc<RwLock<Vec<HostPattern>>>,
}

impl AllowList {
    /// A list of these patterns.
    pub fn new(patterns: Vec<HostPattern>) -> Self {
        Self {
            patterns: Arc::new(RwLock::new(patterns)),
        }
    }

    /// Adds a destination.
    pub fn add(&self, pattern: HostPattern) {
        let mut list = self.patterns.write().unwrap_or_else(|e| e.into_inner());
        if !list.contains(&pattern) {
            list.push(pattern);
        }
    }

    /// Whether `host:port` may be reached.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.patterns
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|p| p.allows(host, port))
    }

    /// The patterns, for messages.
    pub fn describe(&self) -> String {
        let list = self.patterns.read().unwrap_or_else(|e| e.into_inner());
        if list.is_empty() {
            return "nothing".into();
        }
        list.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The hooks that enforce an [`AllowList`].
pub struct HttpGate {
    allow: AllowList,
    plugin: Arc<str>,
    /// Destinations refused during the call in progress, for the report.
    pub(crate) denied: Vec<String>,
}

impl HttpGate {
    /// A gate for `plugin` with its allow-list.
    pub fn new(plugin: Arc<str>, allow: AllowList) -> Self {
        Self {
            allow,
            plugin,
            denied: Vec::new(),
        }
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
        if !self.allow.allows(&host, port) {
            let what = format!("{host}:{port}");
            tracing::warn!(plugin = &*self.plugin, destination = %what, granted = %self.allow.describe(), "outbound HTTP refused");
            self.denied.push(what);
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        _ = fut;
        Box::new(async move {
            use http_body_util::BodyExt;
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = Result<(), HttpError>> + Send>,
            ))
        })
    }
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
    fn bad_patterns_are_refused() {
        for text in ["", "host", "host:port", "*:80", "a/b:1", ":80"] {
            assert!(text.parse::<HostPattern>().is_err(), "{text}");
        }
    }

    #[test]
    fn an_empty_list_allows_nothing_and_grows_at_run_time() {
        let list = AllowList::default();
        assert!(!list.allows("127.0.0.1", 9515));
        list.add(p("127.0.0.1:9515"));
        assert!(list.allows("127.0.0.1", 9515));
        assert_eq!(list.describe(), "127.0.0.1:9515");
    }
}
