//! Connection-level limits of a real `stephost serve`: slow headers and idle
//! keep-alive connections are closed, connections past the per-peer cap are
//! refused while other peers are served, the listener outlives running out of
//! file descriptors, and the stdio front answers lines it cannot forward.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Generous bound on anything a test waits for once the server is up.
const BOUND: Duration = Duration::from_secs(10);
/// A cold start compiles the built-in plugins.
const STARTUP: Duration = Duration::from_secs(180);

/// A `stephost` process, killed when dropped.
struct Stephost {
    child: Child,
    /// Every stderr line so far.
    stderr: Arc<Mutex<Vec<String>>>,
    _config: tempfile::TempDir,
}

impl Drop for Stephost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Stephost {
    /// Starts `stephost --config <config> <args>`, with stdin and stdout piped.
    fn start(config: &str, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("stephost.toml");
        let config = format!("[engine]\nmax_instances = 64\n\n{config}");
        std::fs::write(&file, config).expect("write config");
        let mut child = Command::new(env!("CARGO_BIN_EXE_stephost"))
            .arg("--config")
            .arg(&file)
            .args(args)
            .env(
                "STEPHOST_CACHE_DIR",
                std::env::temp_dir().join("stephost-test-cache"),
            )
            .env("STEPHOST_LOG", "warn")
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("stephost starts");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let pipe = child.stderr.take().expect("stderr");
        let lines = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                lines.lock().expect("stderr lines").push(line);
            }
        });
        Self {
            child,
            stderr,
            _config: dir,
        }
    }

    /// Starts `serve --http 127.0.0.1:0` with `config` and waits for its
    /// address.
    fn http(config: &str) -> (Self, SocketAddr) {
        let server = Self::start(config, &["serve", "--http", "127.0.0.1:0"]);
        let addr = server
            .wait_for_stderr(|line| {
                let (_, rest) = line.split_once("at http://")?;
                rest.strip_suffix("/mcp")?.parse().ok()
            })
            .expect("the server prints where it listens");
        (server, addr)
    }

    /// The first stderr line `find` maps to a value, waiting up to [`STARTUP`].
    fn wait_for_stderr<T>(&self, find: impl Fn(&str) -> Option<T>) -> Option<T> {
        let started = Instant::now();
        while started.elapsed() < STARTUP {
            if let Some(found) = self.stderr_lines().iter().find_map(|l| find(l)) {
                return Some(found);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("not on stderr in time: {:#?}", self.stderr_lines());
    }

    fn stderr_lines(&self) -> Vec<String> {
        self.stderr.lock().expect("stderr lines").clone()
    }
}

/// Sends a GET and reads one whole response (Content-Length or chunked),
/// leaving the connection open; `None` if none came within `within`.
async fn get(stream: &mut TcpStream, path: &str, within: Duration) -> Option<String> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    tokio::time::timeout(within, read_response(stream))
        .await
        .ok()
        .flatten()
}

async fn read_response(stream: &mut TcpStream) -> Option<String> {
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        text.extend_from_slice(&buf[..n]);
        let so_far = String::from_utf8_lossy(&text).into_owned();
        if let Some((head, body)) = so_far.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_owned)
                })
                .and_then(|l| l.trim().parse::<usize>().ok());
            let complete = match length {
                Some(length) => body.len() >= length,
                None => body.ends_with("0\r\n\r\n"),
            };
            if complete {
                return Some(so_far);
            }
        }
    }
}

async fn healthy(stream: &mut TcpStream) -> bool {
    get(stream, "/healthz", BOUND)
        .await
        .is_some_and(|r| r.starts_with("HTTP/1.1 200"))
}

/// Waits for the server to close `stream`: how long that took, and what it
/// sent meanwhile.
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

async fn connect_from(addr: SocketAddr, from: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{from}:0").parse().expect("addr"))
        .expect("bind the client address");
    socket.connect(addr).await.expect("connect")
}

/// Whether a fresh connection from `from` gets a 200 within a few tries: the
/// server frees a slot a moment after the client closed.
async fn eventually_healthy(addr: SocketAddr, from: &str) -> bool {
    for _ in 0..50 {
        let mut stream = connect_from(addr, from).await;
        if get(&mut stream, "/healthz", Duration::from_secs(2))
            .await
            .is_some_and(|r| r.starts_with("HTTP/1.1 200"))
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn request_headers_sent_slowly_are_cut_at_the_header_timeout() {
    let (_server, addr) = Stephost::http("[server.http]\nheader_read_timeout_ms = 500\n");
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    assert!(healthy(&mut stream).await);
    let started = Instant::now();
    // A byte every 100 ms: never quiet, never done.
    for byte in
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    {
        if stream.write_all(&[*byte]).await.is_err() || started.elapsed() > BOUND {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, sent) = closed(&mut stream).await;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(400) && elapsed < Duration::from_secs(5),
        "closed after {elapsed:?}"
    );
    assert!(!sent.contains("200 OK"), "{sent}");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_at_the_idle_timeout() {
    let (_server, addr) =
        Stephost::http("[server.http]\nheader_read_timeout_ms = 500\nidle_timeout_s = 2\n");
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    assert!(healthy(&mut stream).await);
    let (elapsed, sent) = closed(&mut stream).await;
    // Not the (shorter) header timeout: idle, it lasts its own limit.
    assert!(
        elapsed >= Duration::from_millis(1_800) && elapsed < Duration::from_secs(6),
        "closed after {elapsed:?}"
    );
    assert!(sent.is_empty(), "{sent}");
}

#[tokio::test]
async fn past_the_per_peer_cap_a_connection_is_refused_and_other_peers_are_served() {
    let cap = 3;
    let (_server, addr) = Stephost::http(&format!(
        "[server.http]\nmax_connections_per_peer = {cap}\n"
    ));
    let mut open = Vec::new();
    for _ in 0..cap {
        let mut stream = connect_from(addr, "127.0.0.1").await;
        assert!(healthy(&mut stream).await);
        open.push(stream);
    }
    let mut excess = connect_from(addr, "127.0.0.1").await;
    let (elapsed, sent) = closed(&mut excess).await;
    assert!(
        elapsed < Duration::from_secs(2),
        "refused after {elapsed:?}"
    );
    assert!(
        sent.is_empty() || sent.starts_with("HTTP/1.1 503"),
        "{sent}"
    );
    // Another address on loopback is another peer.
    let mut other = connect_from(addr, "127.0.0.2").await;
    assert!(healthy(&mut other).await);
    // Connections that stay open are still served.
    assert!(healthy(&mut open[0]).await);
    open.clear();
    assert!(eventually_healthy(addr, "127.0.0.1").await);
}

#[tokio::test]
async fn at_the_file_descriptor_limit_the_listener_backs_off_and_recovers() {
    let (server, addr) =
        Stephost::http("[server.http]\nheader_read_timeout_ms = 30000\nidle_timeout_s = 60\n");
    let pid = rustix::process::Pid::from_child(&server.child);
    let in_use = std::fs::read_dir(format!("/proc/{}/fd", server.child.id()))
        .expect("the server's descriptors")
        .count() as u64;
    // Room for a few connections only. The child inherited our hard limit,
    // which it keeps: raising it back would need privilege.
    let inherited = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    rustix::process::prlimit(
        Some(pid),
        rustix::process::Resource::Nofile,
        rustix::process::Rlimit {
            current: Some(in_use + 8),
            maximum: inherited.maximum,
        },
    )
    .expect("lower the server's descriptor limit");
    let mut held = Vec::new();
    let mut stuck = None;
    for _ in 0..40 {
        let mut stream = TcpStream::connect(addr)
            .await
            .expect("the kernel still accepts");
        // Past the limit the connection waits in the backlog, unanswered.
        match get(&mut stream, "/healthz", Duration::from_millis(1_500)).await {
            Some(response) => {
                assert!(response.starts_with("HTTP/1.1 200"), "{response}");
                held.push(stream);
            }
            None => {
                stuck = Some(stream);
                break;
            }
        }
    }
    let mut stuck = stuck.expect("the descriptor limit was reached");
    assert!(
        server
            .stderr_lines()
            .iter()
            .any(|l| l.contains("cannot accept HTTP connections")),
        "{:#?}",
        server.stderr_lines()
    );
    // One descriptor freed: the waiting connection is accepted and answered.
    held.pop();
    let response = tokio::time::timeout(BOUND, read_response(&mut stuck))
        .await
        .expect("answered once a descriptor is free")
        .expect("a response");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    held.clear();
    drop(stuck);
    assert!(eventually_healthy(addr, "127.0.0.1").await);
}

/// A `stephost serve` over stdio: lines in, lines out.
struct StdioServer {
    server: Stephost,
    stdin: ChildStdin,
    stdout: mpsc::Receiver<String>,
}

impl StdioServer {
    fn start(config: &str) -> Self {
        let mut server = Stephost::start(config, &["serve"]);
        let stdin = server.child.stdin.take().expect("stdin");
        let pipe = server.child.stdout.take().expect("stdout");
        let (lines, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            server,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("write stdin");
        self.stdin.flush().expect("flush stdin");
    }

    fn answer(&self) -> Value {
        let line = self.stdout.recv_timeout(STARTUP).unwrap_or_else(|e| {
            panic!("no answer ({e}); stderr: {:#?}", self.server.stderr_lines())
        });
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn initialize(&mut self, id: u64) -> Value {
        self.send(
            format!(
                concat!(
                    r#"{{"jsonrpc":"2.0","id":{},"method":"initialize","params":"#,
                    r#"{{"protocolVersion":"2025-06-18","capabilities":{{}},"#,
                    r#""clientInfo":{{"name":"t","version":"1"}}}}}}"#,
                    "\n"
                ),
                id
            )
            .as_bytes(),
        );
        self.answer()
    }
}

fn error_code(answer: &Value) -> i64 {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

#[test]
fn stdio_answers_a_line_that_is_not_json_then_still_initializes() {
    let mut stdio = StdioServer::start("");
    stdio.send(b"this is not json\n");
    let answer = stdio.answer();
    assert_eq!(error_code(&answer), -32700, "{answer}");
    let initialized = stdio.initialize(1);
    assert_eq!(initialized["id"], 1, "{initialized}");
    assert!(
        initialized["result"]["protocolVersion"].is_string(),
        "{initialized}"
    );
}

#[test]
fn stdio_answers_an_over_long_line_and_serves_the_next() {
    let mut stdio = StdioServer::start("[server.http]\nmax_body_bytes = 1024\n");
    let mut long = vec![b'x'; 10_000];
    long.push(b'\n');
    stdio.send(&long);
    let answer = stdio.answer();
    assert_eq!(error_code(&answer), -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("1024")),
        "{answer}"
    );
    let initialized = stdio.initialize(7);
    assert_eq!(initialized["id"], 7, "{initialized}");
}
