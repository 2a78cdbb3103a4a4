//! The HTTP front's own accept loop, in place of `axum::serve`, which holds idle
//! sockets forever, stops accepting anyone once the process is out of file
//! descriptors and never times out slow request headers.
//!
//! HTTP/1.1 only: MCP clients speak it, and one protocol keeps the idle and
//! header rules below exact. Body sizes are limited by the router's layers.
//!
//! Per connection, two clocks run while no request is in flight:
//! - the header clock: from accept for the first request, then from the first
//!   byte of each next one, until its headers are complete; past
//!   `header_read_timeout_ms` the socket is closed at once;
//! - the idle clock: from accept or from the end of the last response; past
//!   `idle_timeout_s` the connection is shut down gracefully.
//!
//! A request is in flight from its complete headers until its response body is
//! done (or dropped), so a long batch or an SSE stream is never cut.
//!
//! Not hyper's own `header_read_timeout`: its clock starts whenever the
//! connection waits for a request head, so on a keep-alive connection it also
//! cuts every idle pause longer than the header limit, and the idle limit could
//! never be longer than the header limit.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ConnectInfo;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::HttpLimits;

/// Pause after an accept error that is about the process (out of descriptors
/// or memory), not about one connection: retrying at once would spin, and
/// connections that end meanwhile free what the next accept needs.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// What a connection past a cap gets before it is closed. Written without
/// waiting (a fresh socket's send buffer is empty), so a client that sent its
/// request already may see a reset instead: either way it is refused at once.
const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\nRetry-After: 1\r\n\r\n";

/// Serves `router` on `listener` with `limits` until `shutdown` resolves, then
/// stops accepting, lets every connection finish its request in flight (idle
/// ones close at once) and returns once all have ended.
///
/// Accept errors never stop the loop, except those saying the listener itself
/// is unusable (not a socket, not listening), which end it as `Err` after the
/// same drain. Dropping the returned future closes every connection at once,
/// so a caller's deadline around it bounds the drain.
// Until mod.rs calls it in place of `axum::serve`.
pub(super) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: &HttpLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let clocks = Clocks::from(limits);
    let caps = Arc::new(Caps::new(limits));
    let stop = CancellationToken::new();
    // A JoinSet rather than detached tasks: the drain waits on it, and dropping
    // it (the caller's deadline) aborts what is left.
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    let mut refusals = Throttle::new(Duration::from_secs(10));
    let mut resource_errors = Throttle::new(Duration::from_secs(1));
    let ended = loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break Ok(()),
            Some(joined) = connections.join_next() => {
                report(joined);
                continue;
            }
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => match caps.admit(peer.ip().to_canonical()) {
                Ok(slot) => {
                    connections.spawn(connection(
                        stream,
                        peer,
                        router.clone(),
                        clocks,
                        slot,
                        stop.clone(),
                    ));
                }
                Err(cap) => {
                    refuse(&stream);
                    drop(stream);
                    if let Some(suppressed) = refusals.ready() {
                        tracing::warn!(
                            %peer,
                            cap,
                            refused_since_last_warning = suppressed,
                            "refused an HTTP connection: too many open"
                        );
                    }
                }
            },
            Err(error) => match classify(&error) {
                AcceptError::Connection => {
                    tracing::debug!(%error, "accept failed for one connection");
                }
                AcceptError::Fatal => {
                    tracing::error!(%error, "the HTTP listener is unusable; draining");
                    break Err(error);
                }
                AcceptError::Resources => {
                    if let Some(suppressed) = resource_errors.ready() {
                        tracing::warn!(
                            %error,
                            errors_since_last_warning = suppressed,
                            backoff_ms = ACCEPT_BACKOFF.as_millis(),
                            "cannot accept HTTP connections; retrying"
                        );
                    }
                    tokio::select! {
                        () = &mut shutdown => break Ok(()),
                        () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                    }
                }
            },
        }
    };
    // Closing the listening socket first makes new clients fail fast rather
    // than wait in the backlog of a server that will not accept them.
    drop(listener);
    stop.cancel();
    while let Some(joined) = connections.join_next().await {
        report(joined);
    }
    ended
}

/// A connection task that panicked took only its own connection down.
fn report(joined: Result<(), JoinError>) {
    if let Err(error) = joined
        && error.is_panic()
    {
        tracing::error!(%error, "an HTTP connection task panicked");
    }
}

/// Best effort, never waits: the accept loop must not stall on a client that
/// is already over its limit.
fn refuse(stream: &TcpStream) {
    if let Err(error) = stream.try_write(REFUSED) {
        tracing::trace!(%error, "could not tell a refused connection why");
    }
}

/// The two per-connection clocks; `None` is off (a limit of 0).
#[derive(Debug, Clone, Copy)]
struct Clocks {
    header: Option<Duration>,
    idle: Option<Duration>,
}

impl From<&HttpLimits> for Clocks {
    fn from(limits: &HttpLimits) -> Self {
        let nonzero = |d: Duration| (!d.is_zero()).then_some(d);
        Self {
            header: nonzero(Duration::from_millis(limits.header_read_timeout_ms)),
            idle: nonzero(Duration::from_secs(limits.idle_timeout_s)),
        }
    }
}

/// Open connections, in total and by peer address.
#[derive(Debug)]
struct Caps {
    max_total: usize,
    max_per_peer: usize,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_peer: HashMap<IpAddr, usize>,
}

impl Caps {
    fn new(limits: &HttpLimits) -> Self {
        Self {
            max_total: limits.max_connections,
            max_per_peer: limits.max_connections_per_peer,
            open: Mutex::default(),
        }
    }

    /// A slot for one more connection from `peer`, or the name of the cap
    /// that is full.
    fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Slot, &'static str> {
        // No code under this lock can panic short of an allocation failure,
        // so a poisoned lock still holds consistent counts.
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.total >= self.max_total {
            return Err("max_connections");
        }
        // Checked before inserting, so refused peers leave no entry behind.
        if open.by_peer.get(&peer).copied().unwrap_or(0) >= self.max_per_peer {
            return Err("max_connections_per_peer");
        }
        *open.by_peer.entry(peer).or_default() += 1;
        open.total += 1;
        Ok(Slot {
            caps: Arc::clone(self),
            peer,
        })
    }

    #[cfg(test)]
    fn open(&self) -> (usize, usize) {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        (open.total, open.by_peer.len())
    }
}

/// One admitted connection; its counts are given back when it is dropped,
/// however the connection task ends (done, error, panic, abort).
#[derive(Debug)]
struct Slot {
    caps: Arc<Caps>,
    peer: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self
            .caps
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        open.total = open.total.saturating_sub(1);
        if let Some(from_peer) = open.by_peer.get_mut(&self.peer) {
            *from_peer = from_peer.saturating_sub(1);
            if *from_peer == 0 {
                // Peers that come and go must not grow the map for ever.
                open.by_peer.remove(&self.peer);
            }
        }
    }
}

/// Serves one connection until it ends, runs out of a clock, or the server
/// stops.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: axum::Router,
    clocks: Clocks,
    _slot: Slot,
    stop: CancellationToken,
) {
    // Small JSON-RPC answers and SSE events should leave at once.
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%peer, %error, "cannot set TCP_NODELAY");
    }
    let activity = Arc::new(Activity::new(Instant::now()));
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: Arc::clone(&activity),
    });
    let service = Service {
        router: TowerToHyperService::new(router),
        peer,
        activity: Arc::clone(&activity),
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(io, service);
    let mut conn = pin!(conn);
    // Once shutting down, only the header clock still matters: hyper ends the
    // connection after its request in flight, or at once when there is none.
    let mut closing = false;
    loop {
        let expiry = activity.next_expiry(clocks, !closing);
        let changed = activity.changed.notified();
        tokio::select! {
            ended = conn.as_mut() => {
                if let Err(error) = ended {
                    tracing::debug!(%peer, %error, "HTTP connection ended with an error");
                }
                return;
            }
            () = stop.cancelled(), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            // A request started or ended, or a new one's first byte came in:
            // the clocks moved.
            () = changed => {}
            // Asked again, not taken from `expiry`: a request may have started
            // since, and then no clock is running.
            () = sleep_until(expiry.map(|(at, _)| at)) => match activity.due(clocks, !closing) {
                Some(Clock::Header) => {
                    tracing::debug!(%peer, "closing an HTTP connection: request headers too slow");
                    return;
                }
                Some(Clock::Idle) => {
                    tracing::debug!(%peer, "closing an idle HTTP connection");
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
                None => {}
            },
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Which clock ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clock {
    Header,
    Idle,
}

/// What the clocks of one connection follow.
#[derive(Debug)]
struct Activity {
    phase: Mutex<Phase>,
    changed: Notify,
}

#[derive(Debug)]
struct Phase {
    in_flight: usize,
    /// When the last request ended (or the connection was accepted).
    idle_since: Instant,
    /// When the next request's headers began, while they are incomplete.
    head_started: Option<Instant>,
}

impl Activity {
    fn new(accepted: Instant) -> Self {
        Self {
            phase: Mutex::new(Phase {
                in_flight: 0,
                idle_since: accepted,
                // A client that connects has its first request ready: its
                // header clock starts at once, so a silent socket is closed
                // after the header limit, not the longer idle one.
                head_started: Some(accepted),
            }),
            changed: Notify::new(),
        }
    }

    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        // The critical sections only assign integers and instants.
        self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes arrived. With nothing in flight they are a new request's head
    /// (pipelined bytes read during a request start no clock: the idle clock
    /// still bounds them).
    fn bytes_read(&self) {
        let mut phase = self.phase();
        if phase.in_flight == 0 && phase.head_started.is_none() {
            phase.head_started = Some(Instant::now());
            drop(phase);
            self.changed.notify_one();
        }
    }

    /// A request's headers are complete and it goes to the router.
    fn request_started(self: &Arc<Self>) -> InFlight {
        let mut phase = self.phase();
        phase.in_flight += 1;
        phase.head_started = None;
        drop(phase);
        self.changed.notify_one();
        InFlight(Arc::clone(self))
    }

    /// The clock that has run out now, if any.
    fn due(&self, clocks: Clocks, with_idle: bool) -> Option<Clock> {
        self.next_expiry(clocks, with_idle)
            .filter(|(at, _)| *at <= Instant::now())
            .map(|(_, clock)| clock)
    }

    /// The first clock to run out, and when; `None` while a request is in
    /// flight.
    fn next_expiry(&self, clocks: Clocks, with_idle: bool) -> Option<(Instant, Clock)> {
        let phase = self.phase();
        if phase.in_flight > 0 {
            return None;
        }
        let header = phase
            .head_started
            .zip(clocks.header)
            .map(|(started, limit)| (started + limit, Clock::Header));
        let idle = clocks
            .idle
            .filter(|_| with_idle)
            .map(|limit| (phase.idle_since + limit, Clock::Idle));
        match (header, idle) {
            (Some(h), Some(i)) => Some(if i.0 < h.0 { i } else { h }),
            (h, i) => h.or(i),
        }
    }
}

/// One request in flight, from complete headers until its response body is
/// done or dropped.
#[derive(Debug)]
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut phase = self.0.phase();
        phase.in_flight = phase.in_flight.saturating_sub(1);
        if phase.in_flight == 0 {
            phase.idle_since = Instant::now();
        }
        drop(phase);
        self.0.changed.notify_one();
    }
}

/// The socket, telling [`Activity`] when bytes arrive.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.bytes_read();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The router, seen by hyper: marks requests in flight and gives handlers
/// the peer address as `ConnectInfo<SocketAddr>`.
struct Service {
    router: TowerToHyperService<axum::Router>,
    peer: SocketAddr,
    activity: Arc<Activity>,
}

type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<Tracked>, Infallible>> + Send>>;

impl hyper::service::Service<http::Request<Incoming>> for Service {
    type Response = http::Response<Tracked>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn call(&self, mut request: http::Request<Incoming>) -> Self::Future {
        let in_flight = self.activity.request_started();
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let response = self.router.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| Tracked {
                body,
                _in_flight: in_flight,
            }))
        })
    }
}

/// A response body that keeps its request in flight until hyper drops it.
struct Tracked {
    body: axum::body::Body,
    _in_flight: InFlight,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// How the accept loop treats an accept error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AcceptError {
    /// About one pending connection (it went away first): accept the next.
    Connection,
    /// About the process or system (descriptors, memory): back off, retry.
    Resources,
    /// The listener itself is unusable: retrying can never succeed.
    Fatal,
}

fn classify(error: &io::Error) -> AcceptError {
    use io::ErrorKind as K;
    use rustix::io::Errno;
    match error.kind() {
        K::ConnectionAborted
        | K::ConnectionReset
        | K::ConnectionRefused
        | K::Interrupted
        | K::WouldBlock
        | K::TimedOut
        // Linux reports pending network errors of the new socket on accept;
        // accept(2) says to retry them like EAGAIN.
        | K::NetworkDown
        | K::NetworkUnreachable
        | K::HostUnreachable => return AcceptError::Connection,
        K::InvalidInput => return AcceptError::Fatal,
        _ => {}
    }
    match Errno::from_io_error(error) {
        Some(e) if e == Errno::PROTO || e == Errno::NOPROTOOPT || e == Errno::HOSTDOWN => {
            AcceptError::Connection
        }
        Some(e) if e == Errno::BADF || e == Errno::NOTSOCK || e == Errno::FAULT => {
            AcceptError::Fatal
        }
        // EMFILE, ENFILE, ENOBUFS, ENOMEM, and anything unknown: retrying
        // later is always safe.
        _ => AcceptError::Resources,
    }
}

/// Lets a warning through at most once per period, counting the rest, so a
/// flood of refusals or accept errors cannot flood the log.
#[derive(Debug)]
struct Throttle {
    period: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl Throttle {
    fn new(period: Duration) -> Self {
        Self {
            period,
            last: None,
            suppressed: 0,
        }
    }

    /// `Some(how many were held back since the last one)` when a warning may
    /// go out now.
    fn ready(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self.last.is_some_and(|last| now - last < self.period) {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// What one JSON value costs the host once parsed, beyond the body's own
/// bytes, by the token that starts it (outside strings).
///
/// Measured on 2026-12-07 with serde_json 1.0.154 (glibc malloc), resident-set
/// growth of one parse of a 3 MB body: `["a","a",…]` 51.5 B per value,
/// `[0,0,…]` 33 B, `[[[0]]]` 110 B per `[`, `[{"a":0},…]` 680 B per object (a
/// one-entry `BTreeMap` takes a whole leaf node), an object with many keys
/// 51 B per entry, one long string nothing beyond its bytes. But a request
/// is held more than once (rmcp's message, the tool's arguments, the batch's
/// step input, its result and report): 16 concurrent `batch` calls of 900,000
/// one-character strings grew the server by 3,039 MiB, about 211 B per value.
/// Hence 200 B per `,` or `:`, 240 per `[`, 800 per `{`: near what a request
/// of tiny values really costs, and above it for cheap shapes (`{}`, `[]`).
const COST_PER_ITEM: u64 = 200;
const COST_PER_ARRAY: u64 = 240;
const COST_PER_OBJECT: u64 = 800;

/// An upper estimate of the bytes a JSON body takes in memory once parsed:
/// its bytes plus a cost per value, in one pass that allocates nothing. Bytes
/// that are not JSON are estimated all the same (the parse refuses them later).
pub(super) fn parsed_cost(body: &[u8]) -> u64 {
    let (mut extra, mut in_string, mut escaped) = (0u64, false, false);
    for &byte in body {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        extra = extra.saturating_add(match byte {
            b'"' => {
                in_string = true;
                0
            }
            b',' | b':' => COST_PER_ITEM,
            b'[' => COST_PER_ARRAY,
            b'{' => COST_PER_OBJECT,
            _ => 0,
        });
    }
    // The first value of a body (or a container) has no `,` before it.
    (body.len() as u64)
        .saturating_add(COST_PER_ITEM)
        .saturating_add(extra)
}

/// Request bytes in flight, by tenant and in total: every JSON body is
/// charged its [`parsed_cost`] after the tenant is known and before rmcp
/// parses it, until its answer has been sent (or dropped). Bounds what
/// bodies that are small as bytes but large as values (a 3 MB array of
/// one-character strings is about 40 MB parsed, 160 MB held by a request)
/// can make the host hold,
/// before any admission of the tenant's own.
#[derive(Debug)]
pub(super) struct Inflight {
    per_tenant: u64,
    total: u64,
    max_body: usize,
    charged: Mutex<Charged>,
}

#[derive(Debug, Default)]
struct Charged {
    total: u64,
    by_tenant: HashMap<String, u64>,
}

/// Why a body was not admitted; each names its limit and value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refused {
    /// Would never fit, even with nothing else in flight.
    #[error(
        "this request would take about {cost} bytes once parsed, more than server.http.max_inflight_bytes_per_tenant = {limit}; send fewer or larger values"
    )]
    TooLarge { cost: u64, limit: u64 },
    /// Fits, but not now.
    #[error(
        "too many request bytes in flight: this request would take about {cost} bytes once parsed, past {key} = {limit}; retry after the requests in flight are answered"
    )]
    Busy {
        cost: u64,
        key: &'static str,
        limit: u64,
    },
}

/// Seconds a client should wait after [`Refused::Busy`]: requests in flight
/// are answered within a batch's time, usually much less.
const BUSY_RETRY_AFTER_S: &str = "1";

impl Inflight {
    pub(super) fn new(limits: &HttpLimits) -> Self {
        Self {
            per_tenant: limits.max_inflight_bytes_per_tenant,
            total: limits.max_inflight_bytes,
            max_body: limits.max_body_bytes,
            charged: Mutex::default(),
        }
    }

    fn charged(&self) -> std::sync::MutexGuard<'_, Charged> {
        // The critical sections only add and subtract: a poisoned lock
        // still holds consistent counts.
        self.charged.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Charges `cost` bytes to `tenant`, or says which limit it would pass.
    fn charge(self: &Arc<Self>, tenant: &str, cost: u64) -> Result<Charge, Refused> {
        if cost > self.per_tenant {
            return Err(Refused::TooLarge {
                cost,
                limit: self.per_tenant,
            });
        }
        let mut charged = self.charged();
        let of_tenant = charged.by_tenant.get(tenant).copied().unwrap_or(0);
        if of_tenant.saturating_add(cost) > self.per_tenant {
            return Err(Refused::Busy {
                cost,
                key: "server.http.max_inflight_bytes_per_tenant",
                limit: self.per_tenant,
            });
        }
        if charged.total.saturating_add(cost) > self.total {
            return Err(Refused::Busy {
                cost,
                key: "server.http.max_inflight_bytes",
                limit: self.total,
            });
        }
        charged.total += cost;
        *charged.by_tenant.entry(tenant.to_owned()).or_default() += cost;
        Ok(Charge {
            inflight: Arc::clone(self),
            tenant: tenant.to_owned(),
            cost,
        })
    }

    #[cfg(test)]
    fn in_flight(&self, tenant: &str) -> (u64, u64) {
        let charged = self.charged();
        (
            charged.by_tenant.get(tenant).copied().unwrap_or(0),
            charged.total,
        )
    }
}

/// One admitted body's charge, given back when dropped: with the response
/// body, that is once the answer is sent or the client went away.
#[derive(Debug)]
struct Charge {
    inflight: Arc<Inflight>,
    tenant: String,
    cost: u64,
}

impl Drop for Charge {
    fn drop(&mut self) {
        let mut charged = self.inflight.charged();
        charged.total = charged.total.saturating_sub(self.cost);
        if let Some(of_tenant) = charged.by_tenant.get_mut(&self.tenant) {
            *of_tenant = of_tenant.saturating_sub(self.cost);
            if *of_tenant == 0 {
                // Tenants with nothing in flight must not grow the map.
                charged.by_tenant.remove(&self.tenant);
            }
        }
    }
}

/// The charge as axum middleware (`from_fn_with_state`), layered inside the
/// authentication layer and the guard (which has read the body within
/// `max_body_bytes` and checked it is JSON) and outside rmcp, which parses
/// it: so the tenant is known and nothing is parsed yet. In `serve_http`:
///
/// ```ignore
/// let inflight = Arc::new(listener::Inflight::new(&http_limits));
/// let mcp = axum::Router::new()
///     .nest_service("/mcp", service)
///     .layer(from_fn_with_state(inflight, listener::charge_inflight))
///     .layer(from_fn_with_state(guard.clone(), guard::guard));
/// ```
pub(super) async fn charge_inflight(
    axum::extract::State(inflight): axum::extract::State<Arc<Inflight>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    if request.method() != http::Method::POST {
        return next.run(request).await;
    }
    let tenant = request
        .extensions()
        .get::<Arc<crate::tenancy::Tenant>>()
        .map_or_else(
            || crate::tenancy::LOCAL_TENANT.to_owned(),
            |t| t.id().to_owned(),
        );
    let (parts, body) = request.into_parts();
    // The guard's buffered body comes back as the same bytes, without a copy.
    let bytes = match axum::body::to_bytes(body, inflight.max_body).await {
        Ok(bytes) => bytes,
        Err(error) => {
            tracing::debug!(%error, "cannot read a request body to charge it");
            return (
                http::StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "cannot read the request body within server.http.max_body_bytes = {}\n",
                    inflight.max_body
                ),
            )
                .into_response();
        }
    };
    let cost = parsed_cost(&bytes);
    let charge = match inflight.charge(&tenant, cost) {
        Ok(charge) => charge,
        Err(refused) => {
            tracing::info!(%tenant, cost, %refused, "refused a request: request bytes in flight");
            return refusal(&refused, &bytes);
        }
    };
    let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
    let response = next.run(request).await;
    response.map(|body| {
        axum::body::Body::new(http_body_util::BodyExt::map_frame(body, move |frame| {
            let _held = &charge;
            frame
        }))
    })
}

/// 503 with `Retry-After` (busy) or 413 (never fits), with a JSON-RPC error
/// naming the limit and its value, answering the request's id when it has one.
fn refusal(refused: &Refused, body: &[u8]) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let (status, limit, value) = match refused {
        Refused::TooLarge { limit, .. } => (
            http::StatusCode::PAYLOAD_TOO_LARGE,
            "server.http.max_inflight_bytes_per_tenant",
            *limit,
        ),
        Refused::Busy { key, limit, .. } => (http::StatusCode::SERVICE_UNAVAILABLE, *key, *limit),
    };
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": request_id(body),
        "error": {
            "code": -32000,
            "message": refused.to_string(),
            "data": {"limit": limit, "value": value},
        },
    });
    let mut response = (status, answer.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    if matches!(refused, Refused::Busy { .. }) {
        headers.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static(BUSY_RETRY_AFTER_S),
        );
    }
    response
}

/// The JSON-RPC id of a single message body, or null. Everything but a
/// string or number id is skipped unparsed, so a refused body costs nothing.
fn request_id(body: &[u8]) -> serde_json::Value {
    #[derive(serde::Deserialize)]
    struct Message {
        #[serde(default)]
        id: Option<Id>,
    }
    struct Id(serde_json::Value);
    impl<'de> serde::Deserialize<'de> for Id {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl serde::de::Visitor<'_> for Visit {
                type Value = Id;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a string or number")
                }
                fn visit_u64<E>(self, v: u64) -> Result<Id, E> {
                    Ok(Id(v.into()))
                }
                fn visit_i64<E>(self, v: i64) -> Result<Id, E> {
                    Ok(Id(v.into()))
                }
                fn visit_str<E>(self, v: &str) -> Result<Id, E> {
                    Ok(Id(v.into()))
                }
            }
            d.deserialize_any(Visit)
        }
    }
    serde_json::from_slice::<Message>(body)
        .ok()
        .and_then(|m| m.id)
        .map_or(serde_json::Value::Null, |id| id.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::sync::oneshot;

    /// Generous bound on anything a test waits for.
    const BOUND: Duration = Duration::from_secs(10);

    fn limits(edit: impl FnOnce(&mut HttpLimits)) -> HttpLimits {
        let mut limits = HttpLimits {
            header_read_timeout_ms: 5_000,
            idle_timeout_s: 30,
            max_connections: 100,
            max_connections_per_peer: 100,
            max_body_bytes: 1 << 20,
            max_inflight_bytes_per_tenant: 1 << 30,
            max_inflight_bytes: 1 << 30,
        };
        edit(&mut limits);
        limits
    }

    /// A response body that sends `chunks` chunks, `every` apart.
    struct Ticks(tokio::sync::mpsc::Receiver<Bytes>);

    impl futures_core::Stream for Ticks {
        type Item = Result<Bytes, Infallible>;
        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            self.0.poll_recv(cx).map(|tick| tick.map(Ok))
        }
    }

    fn router() -> axum::Router {
        use axum::routing::get;
        axum::Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route(
                "/peer",
                get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.to_string() }),
            )
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_millis(800)).await;
                    "slow\n"
                }),
            )
            .route(
                "/ticks",
                get(|| async {
                    let (tx, rx) = tokio::sync::mpsc::channel(1);
                    tokio::spawn(async move {
                        for i in 0..10 {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            if tx.send(Bytes::from(format!("tick {i}\n"))).await.is_err() {
                                return;
                            }
                        }
                    });
                    axum::body::Body::from_stream(Ticks(rx))
                }),
            )
    }

    /// A server on 127.0.0.1:0 and the means to stop it.
    struct Server {
        addr: SocketAddr,
        stop: Option<oneshot::Sender<()>>,
        done: tokio::task::JoinHandle<io::Result<()>>,
    }

    impl Server {
        async fn start(limits: HttpLimits) -> Self {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("local addr");
            let (stop, stopped) = oneshot::channel::<()>();
            let done = tokio::spawn(async move {
                serve(listener, router(), &limits, async {
                    let _ = stopped.await;
                })
                .await
            });
            Self {
                addr,
                stop: Some(stop),
                done,
            }
        }

        async fn connect(&self) -> TcpStream {
            TcpStream::connect(self.addr).await.expect("connect")
        }

        /// A connection from 127.0.0.2: another peer, as far as caps go.
        async fn connect_from_other_peer(&self) -> TcpStream {
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            socket
                .bind("127.0.0.2:0".parse().expect("addr"))
                .expect("bind 127.0.0.2");
            socket.connect(self.addr).await.expect("connect")
        }

        async fn shutdown(mut self) -> io::Result<()> {
            if let Some(stop) = self.stop.take() {
                let _ = stop.send(());
            }
            tokio::time::timeout(BOUND, self.done)
                .await
                .expect("serve drains in time")
                .expect("serve task")
        }
    }

    /// Sends a GET and reads one whole response (by Content-Length or chunked
    /// end), leaving the connection open.
    async fn get(stream: &mut TcpStream, path: &str) -> String {
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        tokio::time::timeout(BOUND, read_response(stream))
            .await
            .expect("response in time")
    }

    async fn read_response(stream: &mut TcpStream) -> String {
        let mut text = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await.expect("read");
            text.extend_from_slice(&buf[..n]);
            let so_far = String::from_utf8_lossy(&text).into_owned();
            if let Some((head, body)) = so_far.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|l| l.trim().parse::<usize>().ok());
                let complete = match length {
                    Some(length) => body.len() >= length,
                    None => body.ends_with("0\r\n\r\n"),
                };
                if complete || n == 0 {
                    return so_far;
                }
            }
            if n == 0 {
                return so_far;
            }
        }
    }

    /// Waits for the server to close `stream`; returns how long that took and
    /// whatever it sent meanwhile.
    async fn closed(stream: &mut TcpStream) -> (Duration, String) {
        let started = Instant::now();
        let mut text = Vec::new();
        let mut buf = [0u8; 1024];
        loop {
            match tokio::time::timeout(BOUND, stream.read(&mut buf)).await {
                Ok(Ok(0) | Err(_)) => break,
                Ok(Ok(n)) => text.extend_from_slice(&buf[..n]),
                Err(_) => panic!("connection still open after {BOUND:?}"),
            }
        }
        (
            started.elapsed(),
            String::from_utf8_lossy(&text).into_owned(),
        )
    }

    async fn healthy(stream: &mut TcpStream) -> bool {
        get(stream, "/healthz").await.starts_with("HTTP/1.1 200")
    }

    #[tokio::test]
    async fn serves_requests_and_gives_handlers_the_peer_address() {
        let server = Server::start(limits(|_| {})).await;
        let mut stream = server.connect().await;
        let local = stream.local_addr().expect("local");
        assert!(healthy(&mut stream).await);
        // Keep-alive: the same connection serves a second request.
        let response = get(&mut stream, "/peer").await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.ends_with(&local.to_string()), "{response}");
        drop(stream);
        server.shutdown().await.expect("clean end");
    }

    #[tokio::test]
    async fn headers_sent_slowly_are_cut_at_the_header_timeout() {
        let server = Server::start(limits(|l| l.header_read_timeout_ms = 400)).await;
        let mut stream = server.connect().await;
        let started = Instant::now();
        // A byte every 50 ms: always active, never done.
        let trickle = async {
            for byte in b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaa"
            {
                if stream.write_all(&[*byte]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(BOUND, trickle)
            .await
            .expect("trickle ends");
        let (_, sent) = closed(&mut stream).await;
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(350) && elapsed < Duration::from_secs(3),
            "closed after {elapsed:?}"
        );
        assert!(!sent.contains("200"), "{sent}");
        server.shutdown().await.expect("clean end");
    }

    #[tokio::test]
    async fn a_silent_connection_is_closed_at_the_header_timeout() {
        let server = Server::start(limits(|l| l.header_read_timeout_ms = 300)).await;
        let mut stream = server.connect().await;
        let (elapsed, _) = closed(&mut stream).await;
        assert!(
            elapsed >= Duration::from_millis(250) && elapsed < Duration::from_secs(3),
            "closed after {elapsed:?}"
        );
        server.shutdown().await.expect("clean end");
    }

    #[tokio::test]
    async fn an_idle_keep_alive_connection_lasts_the_idle_timeout_not_the_header_timeout() {
        let server = Server::start(limits(|l| {
            l.header_read_timeout_ms = 200;
            l.idle_timeout_s = 1;
        }))
        .await;
        let mut stream = server.connect().await;
        assert!(healthy(&mut stream).await);
        let (elapsed, sent) = closed(&mut stream).await;
        assert!(
            elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(4),
            "closed after {elapsed:?}"
        );
        assert!(sent.is_empty(), "graceful close sends nothing: {sent}");
        server.shutdown().await.expect("clean end");
    }

    #[tokio::test]
    async fn requests_in_flight_outlast_the_idle_and_header_timeouts() {
        let server = Server::start(limits(|l| {
            l.header_read_timeout_ms = 300;
            l.idle_timeout_s = 1;
        }))
        .await;
        let mut stream = server.connect().await;
        // A streamed body longer than the header limit, then a slow handler:
        // neither is idle.
        let response = get(&mut stream, "/ticks").await;
        assert!(response.contains("tick 9\n"), "{response}");
        let response = get(&mut stream, "/slow").await;
        assert!(response.ends_with("slow\n"), "{response}");
        assert!(healthy(&mut stream).await);
        server.shutdown().await.expect("clean end");
    }

    #[tokio::test]
    async fn past_the_per_peer_cap_connections_are_refused_but_other_peers_are_served() {
        let server = Server::start(limits(|l| l.max_connections_per_peer = 2)).await;
        let mut first = server.connect().await;
        let mut second = server.connect().await;
        assert!(healthy(&mut first).await);
        assert!(healthy(&mut second).await);
        let mut third = server.connect().await;
        let (elapsed, sent) = closed(&mut third).await;
        assert!(
            elapsed < Duration::from_secs(2),
            "refused after {elapsed:?}"
        );
        assert!(
            sent.is_empty() || sent.starts_with("HTTP/1.1 503"),
            "{sent}"
        );
        let mut other = server.connect_from_other_peer().await;
        assert!(healthy(&mut other).await);
        // Its slot comes back when a connection ends.
        drop(first);
        assert!(eventually_healthy(|| server.connect()).await);
        assert!(healthy(&mut second).await);
        drop((second, other));
        server.shutdown().await.expect("clean end");
    }

    #[tokio::test]
    async fn past_the_total_cap_every_peer_is_refused_until_one_closes() {
        let server = Server::start(limits(|l| l.max_connections = 2)).await;
        let mut first = server.connect().await;
        let mut second = server.connect_from_other_peer().await;
        assert!(healthy(&mut first).await);
        assert!(healthy(&mut second).await);
        let mut third = server.connect_from_other_peer().await;
        let (elapsed, _) = closed(&mut third).await;
        assert!(
            elapsed < Duration::from_secs(2),
            "refused after {elapsed:?}"
        );
        drop(second);
        assert!(eventually_healthy(|| server.connect_from_other_peer()).await);
        drop(first);
        server.shutdown().await.expect("clean end");
    }

    /// Whether a new connection gets a 200 within a few tries: the server
    /// sees a client's close a moment after the client made it.
    async fn eventually_healthy<F: Future<Output = TcpStream>>(connect: impl Fn() -> F) -> bool {
        for _ in 0..50 {
            let mut stream = connect().await;
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
                .await
                .expect("write");
            if let Ok(response) = tokio::time::timeout(BOUND, read_response(&mut stream)).await
                && response.starts_with("HTTP/1.1 200")
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    #[tokio::test]
    async fn counts_are_released_when_connections_end() {
        let caps = Arc::new(Caps::new(&limits(|l| {
            l.max_connections = 3;
            l.max_connections_per_peer = 2;
        })));
        let a: IpAddr = "10.0.0.1".parse().expect("ip");
        let b: IpAddr = "10.0.0.2".parse().expect("ip");
        let a1 = caps.admit(a).expect("a1");
        let a2 = caps.admit(a).expect("a2");
        assert_eq!(caps.admit(a).err(), Some("max_connections_per_peer"));
        let b1 = caps.admit(b).expect("b1");
        assert_eq!(caps.admit(b).err(), Some("max_connections"));
        assert_eq!(caps.open(), (3, 2));
        drop((a1, a2));
        assert_eq!(caps.open(), (1, 1), "a peer with none open is forgotten");
        drop(b1);
        assert_eq!(caps.open(), (0, 0));
        let none = Arc::new(Caps::new(&limits(|l| l.max_connections_per_peer = 0)));
        assert!(none.admit(a).is_err());
        assert_eq!(none.open(), (0, 0), "a refused peer leaves nothing behind");
    }

    #[tokio::test]
    async fn shutdown_finishes_requests_in_flight_and_closes_idle_connections() {
        let server = Server::start(limits(|_| {})).await;
        let addr = server.addr;
        let mut idle = server.connect().await;
        assert!(healthy(&mut idle).await);
        let mut busy = server.connect().await;
        busy.write_all(b"GET /slow HTTP/1.1\r\nHost: test\r\n\r\n")
            .await
            .expect("write");
        // Let the slow request reach its handler before stopping.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = Instant::now();
        let (stop, drained) = (server.stop, server.done);
        if let Some(stop) = stop {
            let _ = stop.send(());
        }
        let (idle_after, _) = closed(&mut idle).await;
        assert!(
            idle_after < Duration::from_millis(500),
            "idle closed after {idle_after:?}"
        );
        let response = tokio::time::timeout(BOUND, read_response(&mut busy))
            .await
            .expect("slow response in time");
        assert!(response.ends_with("slow\n"), "{response}");
        tokio::time::timeout(BOUND, drained)
            .await
            .expect("drains in time")
            .expect("serve task")
            .expect("clean end");
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "no longer listening"
        );
    }

    #[test]
    fn accept_errors_are_classified_so_only_a_broken_listener_stops_the_loop() {
        use rustix::io::Errno;
        let os = |e: Errno| io::Error::from_raw_os_error(e.raw_os_error());
        for e in [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM] {
            assert_eq!(classify(&os(e)), AcceptError::Resources, "{e:?}");
        }
        for e in [
            Errno::CONNABORTED,
            Errno::INTR,
            Errno::PROTO,
            Errno::HOSTDOWN,
        ] {
            assert_eq!(classify(&os(e)), AcceptError::Connection, "{e:?}");
        }
        for e in [Errno::BADF, Errno::NOTSOCK, Errno::INVAL] {
            assert_eq!(classify(&os(e)), AcceptError::Fatal, "{e:?}");
        }
    }

    #[test]
    fn the_parse_estimate_counts_values_outside_strings() {
        // A value alone: its bytes and one item.
        assert_eq!(parsed_cost(b"0"), 1 + COST_PER_ITEM);
        // Structural bytes inside strings (escaped quotes too) are text.
        let text = br#""a,b:[{\",]""#;
        assert_eq!(parsed_cost(text), text.len() as u64 + COST_PER_ITEM);
        let object = br#"{"k":[1,2]}"#;
        assert_eq!(
            parsed_cost(object),
            object.len() as u64 + COST_PER_ITEM * 3 + COST_PER_OBJECT + COST_PER_ARRAY
        );
        // The attack's shape: about a million one-character strings in 4 MB
        // cost 200 MB by the estimate (40 MB measured for one parse).
        let strings = 1_000_000;
        let mut body = b"[".to_vec();
        body.extend(b"\"a\",".repeat(strings - 1));
        body.extend(b"\"a\"]");
        let cost = parsed_cost(&body);
        assert_eq!(
            cost,
            body.len() as u64 + COST_PER_ARRAY + COST_PER_ITEM * strings as u64
        );
        assert!(cost > 20 * body.len() as u64, "{cost}");
        // One long string is just its bytes.
        let long = format!("\"{}\"", "x".repeat(100_000));
        assert_eq!(parsed_cost(long.as_bytes()), 100_002 + COST_PER_ITEM);
    }

    #[test]
    fn request_bytes_in_flight_are_charged_by_tenant_and_given_back() {
        let inflight = Arc::new(Inflight::new(&limits(|l| {
            l.max_inflight_bytes_per_tenant = 100;
            l.max_inflight_bytes = 150;
        })));
        let a1 = inflight.charge("a", 60).expect("a1");
        assert_eq!(
            inflight.charge("a", 41).err(),
            Some(Refused::Busy {
                cost: 41,
                key: "server.http.max_inflight_bytes_per_tenant",
                limit: 100
            })
        );
        let a2 = inflight.charge("a", 40).expect("a2 fits exactly");
        assert_eq!(
            inflight.charge("b", 51).err(),
            Some(Refused::Busy {
                cost: 51,
                key: "server.http.max_inflight_bytes",
                limit: 150
            })
        );
        let b1 = inflight.charge("b", 50).expect("b1");
        assert_eq!(inflight.in_flight("a"), (100, 150));
        assert_eq!(
            inflight.charge("c", 101).err(),
            Some(Refused::TooLarge {
                cost: 101,
                limit: 100
            }),
            "past the tenant's budget is never admitted"
        );
        drop(a1);
        assert_eq!(inflight.in_flight("a"), (40, 90));
        drop((a2, b1));
        assert_eq!(inflight.in_flight("a"), (0, 0));
        assert!(
            inflight.charged().by_tenant.is_empty(),
            "tenants with nothing in flight are forgotten"
        );
    }

    #[tokio::test]
    async fn a_charge_lasts_until_the_answer_is_sent_and_busy_answers_name_the_limit() {
        use axum::response::IntoResponse as _;
        let values = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"v":[{}]}}}}"#,
            vec!["\"a\""; 20].join(",")
        );
        let cost = parsed_cost(values.as_bytes());
        // Room for two such requests of one tenant, not three.
        let budget = cost * 5 / 2;
        let inflight = Arc::new(Inflight::new(&limits(|l| {
            l.max_inflight_bytes_per_tenant = budget;
            l.max_inflight_bytes = budget * 4;
        })));
        let (release, released) = tokio::sync::watch::channel(false);
        let app = axum::Router::new()
            .route(
                "/mcp",
                axum::routing::post(move |body: Bytes| {
                    let mut released = released.clone();
                    async move {
                        // A streamed answer that ends when the test says so.
                        let stream = async_stream(body.len(), &mut released).await;
                        stream.into_response()
                    }
                }),
            )
            .layer(axum::middleware::from_fn_with_state(
                inflight.clone(),
                charge_inflight,
            ));
        let post = |body: String| {
            http::Request::post("/mcp")
                .header("content-type", "application/json")
                .body(axum::body::Body::from(body))
                .expect("request")
        };
        let first = send(&app, post(values.clone())).await.expect("first");
        let second = send(&app, post(values.clone())).await.expect("second");
        assert_eq!(first.status(), 200);
        assert_eq!(second.status(), 200);
        assert_eq!(inflight.in_flight(crate::tenancy::LOCAL_TENANT).0, cost * 2);
        let busy = send(&app, post(values.clone())).await.expect("third");
        assert_eq!(busy.status(), 503);
        assert_eq!(busy.headers()["retry-after"], BUSY_RETRY_AFTER_S);
        let answer: serde_json::Value = serde_json::from_slice(
            &axum::body::to_bytes(busy.into_body(), usize::MAX)
                .await
                .expect("body"),
        )
        .expect("json");
        assert_eq!(answer["id"], 7);
        assert_eq!(
            answer["error"]["data"]["limit"],
            "server.http.max_inflight_bytes_per_tenant"
        );
        assert_eq!(answer["error"]["data"]["value"], budget);
        // Handled but not yet sent: still charged. Sent: given back.
        let _ = release.send(true);
        let sent = axum::body::to_bytes(first.into_body(), usize::MAX)
            .await
            .expect("first body");
        assert_eq!(sent.len(), values.len());
        assert_eq!(inflight.in_flight(crate::tenancy::LOCAL_TENANT).0, cost);
        drop(second);
        assert_eq!(inflight.in_flight(crate::tenancy::LOCAL_TENANT), (0, 0));
        // A body that could never fit is refused outright, without Retry-After.
        let huge = format!("[{}]", vec!["{}"; 100].join(","));
        let refused = send(&app, post(huge)).await.expect("huge");
        assert_eq!(refused.status(), 413);
        assert!(refused.headers().get("retry-after").is_none());
    }

    /// One request through `app`, as the accept loop sends it.
    async fn send(
        app: &axum::Router,
        request: http::Request<axum::body::Body>,
    ) -> Result<http::Response<axum::body::Body>, Infallible> {
        hyper::service::Service::call(&TowerToHyperService::new(app.clone()), request).await
    }

    /// A body of `len` bytes streamed once `released` turns true.
    async fn async_stream(
        len: usize,
        released: &mut tokio::sync::watch::Receiver<bool>,
    ) -> axum::body::Body {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let mut released = released.clone();
        tokio::spawn(async move {
            let _ = released.wait_for(|r| *r).await;
            let _ = tx.send(Bytes::from(vec![b'x'; len])).await;
        });
        axum::body::Body::from_stream(Ticks(rx))
    }

    #[test]
    fn a_refusal_answers_the_request_id_only_when_it_is_plain() {
        assert_eq!(request_id(br#"{"id":"x-1","params":[1,2]}"#), "x-1");
        assert_eq!(request_id(br#"{"params":{"a":1},"id":42}"#), 42);
        assert_eq!(request_id(br#"{"id":[1,2,3]}"#), serde_json::Value::Null);
        assert_eq!(request_id(br#"[{"id":1}]"#), serde_json::Value::Null);
        assert_eq!(request_id(b"not json"), serde_json::Value::Null);
    }

    #[tokio::test]
    async fn zero_timeouts_are_off() {
        let clocks = Clocks::from(&limits(|l| {
            l.header_read_timeout_ms = 0;
            l.idle_timeout_s = 0;
        }));
        let activity = Activity::new(Instant::now());
        assert_eq!(activity.next_expiry(clocks, true), None);
    }

    #[tokio::test]
    async fn no_clock_runs_while_a_request_is_in_flight() {
        let clocks = Clocks {
            header: Some(Duration::from_millis(1)),
            idle: Some(Duration::from_millis(1)),
        };
        let activity = Arc::new(Activity::new(Instant::now()));
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(activity.due(clocks, true), Some(Clock::Header));
        let in_flight = activity.request_started();
        // Bytes of a pipelined request start no header clock either.
        activity.bytes_read();
        assert_eq!(activity.next_expiry(clocks, true), None);
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(activity.due(clocks, true), None);
        drop(in_flight);
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(activity.due(clocks, true), Some(Clock::Idle));
        assert_eq!(
            activity.due(clocks, false),
            None,
            "closing: idle no longer counts"
        );
        activity.bytes_read();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(activity.due(clocks, false), Some(Clock::Header));
    }
}
