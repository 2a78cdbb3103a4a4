//! The stdio front between the real stdin/stdout and rmcp.
//!
//! rmcp's own stdio transport drops a line that is not JSON without a word, so
//! its caller waits for ever, and only gives up on a line at 16 MiB. Here every
//! line is checked first: JSON objects and arrays go on to rmcp through an
//! in-memory pipe, anything else is answered at once with a JSON-RPC error
//! (id null, as the id cannot be known), and a line longer than the limit is
//! answered and skipped without being held in memory.
//!
//! One task writes stdout: rmcp's output (copied from a second pipe) and these
//! answers, an answer only between two whole lines of rmcp's, so the two never
//! mix within a line.

use std::io;

use rmcp::RoleServer;
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde::Serialize;
use tokio::io::{
    AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, BufReader,
    DuplexStream,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// In-memory pipe buffers, and the chunk read from stdin at once: a line
/// longer than this crosses the pipe in pieces, which rmcp reassembles.
const PIPE_BYTES: usize = 64 * 1024;

/// JSON-RPC's code for text that is not JSON.
const PARSE_ERROR: i32 = -32700;
/// JSON-RPC's code for JSON that is not a request.
const INVALID_REQUEST: i32 = -32600;

/// The transport to hand rmcp in place of `rmcp::transport::stdio()`, reading
/// lines of at most `max_line_bytes` (not counting the newline), and the task
/// writing stdout.
///
/// Must be called inside a Tokio runtime (it spawns the stdin reader and the
/// stdout writer). EOF on stdin ends rmcp's input, so the server ends as it
/// did on stdin itself.
// Until mod.rs calls it in place of `rmcp::transport::stdio()`.
pub(super) fn transport(
    max_line_bytes: usize,
) -> (
    impl Transport<RoleServer, Error = io::Error> + 'static,
    Flushed,
) {
    // The same blocking-pool stdin and stdout as `rmcp::transport::stdio()`,
    // so reading stdin behaves as before (a pending read is not cancellable).
    let (stdin, stdout) = rmcp::transport::stdio();
    let (from_client, to_client, flushed) = front(stdin, stdout, max_line_bytes);
    // rmcp sees only lines that fit our limit (plus their newline), so its own
    // limit must never be the one that drops a line silently.
    let transport = AsyncRwTransport::new_server(from_client, to_client)
        .with_max_line_length(max_line_bytes.saturating_add(1));
    (transport, flushed)
}

/// The stdout writer; done once rmcp's output has ended and all of it, and
/// every answer already queued, is written and flushed.
#[derive(Debug)]
pub(super) struct Flushed(JoinHandle<()>);

impl Flushed {
    /// Waits for the last of rmcp's output to reach stdout: call it after the
    /// service has stopped (it drops its transport then), under a deadline.
    pub(super) async fn wait(self) {
        if let Err(error) = self.0.await {
            tracing::error!(%error, "the stdio writer task failed");
        }
    }
}

/// Starts the reader of `input` and the writer of `output`; returns rmcp's
/// ends of the two pipes (its input, its output).
fn front<I, O>(input: I, output: O, max_line_bytes: usize) -> (DuplexStream, DuplexStream, Flushed)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    // Each pipe is used one way only; a dropped end reads as EOF (or fails
    // writes) on the other.
    let (to_rmcp, rmcp_input) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_output, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    // Bounded, so a client flooding bad lines faster than stdout drains waits
    // instead of growing a queue.
    let (answers, answered) = mpsc::channel(16);
    tokio::spawn(read(Lines::new(input, max_line_bytes), to_rmcp, answers));
    let writer = tokio::spawn(async move {
        if let Err(error) = write(from_rmcp, answered, output).await {
            // Most often the client closed stdout; rmcp then sees its own
            // writes fail, as it did writing stdout itself.
            tracing::debug!(%error, "stopped writing stdout");
        }
    });
    (rmcp_input, rmcp_output, Flushed(writer))
}

/// Reads the client's lines: forwards messages, answers the rest.
async fn read<I>(mut lines: Lines<I>, mut to_rmcp: DuplexStream, answers: mpsc::Sender<Vec<u8>>)
where
    I: AsyncRead + Unpin,
{
    loop {
        let verdict = match lines.next().await {
            Ok(Read::Line) => check(lines.line()),
            Ok(Read::TooLong) => Verdict::Answer(answer(
                INVALID_REQUEST,
                &format!(
                    "Invalid request: line longer than the {}-byte limit; discarded",
                    lines.max
                ),
            )),
            Ok(Read::Eof) => break,
            Err(error) => {
                tracing::warn!(%error, "cannot read stdin; ending the stdio session");
                break;
            }
        };
        match verdict {
            Verdict::Forward => {
                let line = lines.line();
                let sent = match line.last() {
                    Some(b'\n') => to_rmcp.write_all(line).await,
                    // The last line before EOF may lack its newline; rmcp
                    // would drop it as incomplete.
                    _ => match to_rmcp.write_all(line).await {
                        Ok(()) => to_rmcp.write_all(b"\n").await,
                        Err(e) => Err(e),
                    },
                };
                if sent.is_err() {
                    // rmcp has stopped reading: the session is over.
                    return;
                }
            }
            Verdict::Skip => {}
            Verdict::Answer(answer) => {
                if answers.send(answer).await.is_err() {
                    return;
                }
            }
        }
    }
    // Ends rmcp's input as EOF on stdin did; the pipe's other direction is
    // unused, so only its write side matters.
    if let Err(error) = to_rmcp.shutdown().await {
        tracing::debug!(%error, "rmcp's input was already closed");
    }
}

/// Copies rmcp's output to `output`, and the answers between its lines.
async fn write<O>(
    mut from_rmcp: DuplexStream,
    mut answered: mpsc::Receiver<Vec<u8>>,
    mut output: O,
) -> io::Result<()>
where
    O: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; PIPE_BYTES];
    // rmcp's output streams through in chunks, never held whole; while one of
    // its lines is only partly written, answers wait.
    let mut mid_line = false;
    let mut answers_open = true;
    loop {
        tokio::select! {
            read = from_rmcp.read(&mut buf) => {
                let n = read?;
                let Some(chunk) = buf.get(..n).filter(|c| !c.is_empty()) else {
                    break;
                };
                output.write_all(chunk).await?;
                mid_line = chunk.last() != Some(&b'\n');
                if !mid_line {
                    output.flush().await?;
                }
            }
            answer = answered.recv(), if answers_open && !mid_line => match answer {
                Some(answer) => {
                    output.write_all(&answer).await?;
                    output.flush().await?;
                }
                None => answers_open = false,
            },
        }
    }
    // rmcp is done; answers to lines read before it ended still go out.
    if !mid_line {
        while let Ok(answer) = answered.try_recv() {
            output.write_all(&answer).await?;
        }
    }
    output.flush().await
}

/// What to do with one line.
#[derive(Debug, PartialEq)]
enum Verdict {
    Forward,
    Skip,
    Answer(Vec<u8>),
}

/// JSON objects (messages) and arrays (batches) go on; rmcp answers those
/// that are not valid JSON-RPC itself.
fn check(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // RFC 8259 lets a parser skip a leading byte-order mark; rmcp does.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return Verdict::Answer(answer(PARSE_ERROR, &format!("Parse error: {e}"))),
    };
    // A full parse, not a skim (`IgnoredAny`): rmcp also drops, unanswered,
    // what only a full parse refuses (nesting past serde_json's depth limit,
    // numbers out of range, lone surrogates).
    match serde_json::from_str::<serde_json::Value>(text) {
        Err(e) => Verdict::Answer(answer(PARSE_ERROR, &format!("Parse error: {e}"))),
        Ok(value) if value.is_object() || value.is_array() => Verdict::Forward,
        Ok(_) => Verdict::Answer(answer(
            INVALID_REQUEST,
            "Invalid request: a JSON-RPC message is a JSON object (or an array of them)",
        )),
    }
}

/// An error response line with id null.
fn answer(code: i32, message: &str) -> Vec<u8> {
    #[derive(Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: (),
        error: Error<'a>,
    }
    #[derive(Serialize)]
    struct Error<'a> {
        code: i32,
        message: &'a str,
    }
    let response = Response {
        jsonrpc: "2.0",
        id: (),
        error: Error { code, message },
    };
    // Serializing plain strings and integers cannot fail; the fallback keeps
    // the caller answered regardless.
    let mut line = serde_json::to_vec(&response).unwrap_or_else(|_| {
        format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":{code},"message":"error"}}}}"#)
            .into_bytes()
    });
    line.push(b'\n');
    line
}

/// Outcome of reading one line.
#[derive(Debug, PartialEq)]
enum Read {
    /// A line is in [`Lines::line`], with its newline unless it ended at EOF.
    Line,
    /// A line passed the limit; what came of it is dropped, the rest of it
    /// will be skipped.
    TooLong,
    Eof,
}

/// Bounded line reader: never holds more than `max` bytes of a line.
struct Lines<I> {
    input: BufReader<I>,
    line: Vec<u8>,
    max: usize,
    /// Skipping the rest of a line already answered as too long.
    discarding: bool,
}

impl<I: AsyncRead + Unpin> Lines<I> {
    fn new(input: I, max: usize) -> Self {
        Self {
            input: BufReader::with_capacity(PIPE_BYTES, input),
            line: Vec::new(),
            max,
            discarding: false,
        }
    }

    fn line(&self) -> &[u8] {
        &self.line
    }

    async fn next(&mut self) -> io::Result<Read> {
        self.line.clear();
        loop {
            let available = self.input.fill_buf().await?;
            if available.is_empty() {
                self.discarding = false;
                return Ok(if self.line.is_empty() {
                    Read::Eof
                } else {
                    Read::Line
                });
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let content = newline.unwrap_or(available.len());
            let take = newline.map_or(available.len(), |at| at + 1);
            if self.discarding {
                self.discarding = newline.is_none();
                self.input.consume(take);
                continue;
            }
            if self.line.len().saturating_add(content) > self.max {
                self.line.clear();
                self.discarding = newline.is_none();
                self.input.consume(take);
                return Ok(Read::TooLong);
            }
            self.line.extend_from_slice(&available[..take]);
            self.input.consume(take);
            if newline.is_some() {
                return Ok(Read::Line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    use rmcp::ServiceExt as _;
    use serde_json::{Value, json};
    use tokio::io::{DuplexStream, Lines as TokioLines};

    const BOUND: Duration = Duration::from_secs(10);

    /// A fake client: writes our stdin, reads our stdout line by line.
    struct Client {
        stdin: DuplexStream,
        stdout: TokioLines<BufReader<DuplexStream>>,
    }

    impl Client {
        async fn send(&mut self, bytes: &[u8]) {
            self.stdin.write_all(bytes).await.expect("write stdin");
        }

        async fn line(&mut self) -> Value {
            let line = tokio::time::timeout(BOUND, self.stdout.next_line())
                .await
                .expect("an answer in time")
                .expect("read stdout")
                .expect("a line, not EOF");
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
        }
    }

    /// Our front over in-memory stdin/stdout; returns the client and rmcp's
    /// ends of the pipes.
    fn start(max: usize) -> (Client, DuplexStream, DuplexStream, Flushed) {
        let (stdin, input) = tokio::io::duplex(PIPE_BYTES);
        let (output, stdout) = tokio::io::duplex(PIPE_BYTES);
        let (rmcp_input, rmcp_output, flushed) = front(input, output, max);
        let client = Client {
            stdin,
            stdout: BufReader::new(stdout).lines(),
        };
        (client, rmcp_input, rmcp_output, flushed)
    }

    async fn forwarded(rmcp_input: &mut DuplexStream) -> String {
        let mut reader = BufReader::new(rmcp_input);
        let mut line = String::new();
        tokio::time::timeout(BOUND, reader.read_line(&mut line))
            .await
            .expect("forwarded in time")
            .expect("read");
        line
    }

    fn error_code(answer: &Value) -> i64 {
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["id"], Value::Null, "{answer}");
        answer["error"]["code"].as_i64().expect("a code")
    }

    #[test]
    fn lines_are_sorted_into_messages_blanks_and_errors() {
        assert_eq!(check(b"{\"jsonrpc\":\"2.0\"}\n"), Verdict::Forward);
        assert_eq!(check(b"[{}]\r\n"), Verdict::Forward);
        assert_eq!(check(b"\xEF\xBB\xBF {}\n"), Verdict::Forward);
        assert_eq!(check(b"\n"), Verdict::Skip);
        assert_eq!(check(b"  \t\r\n"), Verdict::Skip);
        for (line, code) in [
            (&b"garbage\n"[..], PARSE_ERROR),
            (b"{\"a\":\n", PARSE_ERROR),
            (b"{} {}\n", PARSE_ERROR),
            (b"{\"a\":\"\xff\"}\n", PARSE_ERROR),
            (b"42\n", INVALID_REQUEST),
            (b"\"text\"\n", INVALID_REQUEST),
            (b"null\n", INVALID_REQUEST),
        ] {
            let Verdict::Answer(answer) = check(line) else {
                panic!("{line:?} is not answered");
            };
            assert_eq!(answer.last(), Some(&b'\n'));
            let answer: Value = serde_json::from_slice(&answer).expect("answer is JSON");
            assert_eq!(error_code(&answer), i64::from(code), "{line:?}: {answer}");
        }
        // JSON that rmcp's parser would refuse and drop unanswered: nesting
        // past serde_json's depth limit, a number out of range, a lone
        // surrogate.
        let deep = format!("{}{}\n", "[".repeat(1000), "]".repeat(1000));
        for line in [deep.as_bytes(), b"[1e400]\n", b"[\"\\ud800\"]\n"] {
            let Verdict::Answer(answer) = check(line) else {
                panic!("{} is not answered", String::from_utf8_lossy(line));
            };
            let answer: Value = serde_json::from_slice(&answer).expect("answer is JSON");
            assert_eq!(error_code(&answer), i64::from(PARSE_ERROR), "{answer}");
        }
    }

    #[tokio::test]
    async fn a_garbage_line_is_answered_and_a_valid_one_forwarded() {
        let (mut client, mut rmcp_input, mut rmcp_output, _flushed) = start(1024);
        client
            .send(b"not json\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
            .await;
        let answer = client.line().await;
        assert_eq!(error_code(&answer), -32700, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Parse error: ")),
            "{answer}"
        );
        assert_eq!(
            forwarded(&mut rmcp_input).await,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"
        );
        rmcp_output
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
            .await
            .expect("write");
        assert_eq!(client.line().await["id"], 1);
    }

    #[tokio::test]
    async fn an_over_long_line_is_answered_and_skipped_without_buffering() {
        let max = 100;
        let (mut client, mut rmcp_input, _rmcp_output, _flushed) = start(max);
        // Far longer than the limit and than one read, sent in pieces.
        for _ in 0..50 {
            client.send(&[b'x'; 4096]).await;
        }
        client.send(b"\n{\"ok\":true}\n").await;
        let answer = client.line().await;
        assert_eq!(error_code(&answer), -32600, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("100-byte limit")),
            "{answer}"
        );
        assert_eq!(forwarded(&mut rmcp_input).await, "{\"ok\":true}\n");
        // Exactly at the limit still passes.
        let at_limit = format!("[{}]\n", "1,".repeat((max - 3) / 2) + "1");
        assert!(at_limit.len() - 1 <= max);
        client.send(at_limit.as_bytes()).await;
        assert_eq!(forwarded(&mut rmcp_input).await, at_limit);
    }

    #[tokio::test]
    async fn answers_never_split_a_line_of_rmcp() {
        let (mut client, _rmcp_input, mut rmcp_output, _flushed) = start(1024);
        rmcp_output.write_all(b"{\"part\":").await.expect("write");
        // Once the writer has started rmcp's line on stdout, an answer must
        // wait for its end.
        tokio::time::sleep(Duration::from_millis(100)).await;
        client.send(b"garbage\n").await;
        // Give the answer every chance to jump in.
        tokio::time::sleep(Duration::from_millis(100)).await;
        rmcp_output.write_all(b"1}\n").await.expect("write");
        assert_eq!(client.line().await, json!({"part": 1}));
        assert_eq!(error_code(&client.line().await), -32700);
    }

    #[tokio::test]
    async fn eof_on_stdin_ends_rmcps_input_after_a_last_unterminated_line() {
        let (mut client, mut rmcp_input, rmcp_output, flushed) = start(1024);
        client.send(b"{\"last\":1}").await;
        drop(client.stdin);
        let mut rest = String::new();
        tokio::time::timeout(BOUND, rmcp_input.read_to_string(&mut rest))
            .await
            .expect("EOF in time")
            .expect("read");
        assert_eq!(rest, "{\"last\":1}\n");
        // rmcp gone: the writer finishes.
        drop(rmcp_output);
        tokio::time::timeout(BOUND, flushed.wait())
            .await
            .expect("flushed in time");
    }

    /// An MCP server with no tools: enough for the handshake and ping.
    #[derive(Clone)]
    struct Bare;
    impl rmcp::ServerHandler for Bare {}

    #[tokio::test]
    async fn an_rmcp_server_behind_the_front_answers_after_bad_lines() {
        let (mut client, rmcp_input, rmcp_output, flushed) = start(256);
        let transport =
            AsyncRwTransport::new_server(rmcp_input, rmcp_output).with_max_line_length(257);
        let server = tokio::spawn(async move {
            let running = Bare.serve(transport).await.expect("handshake");
            running.waiting().await.expect("service ends");
        });
        client.send(b"{{{ garbage\n").await;
        assert_eq!(error_code(&client.line().await), -32700);
        client.send(&[b' '; 1000]).await;
        client.send(b"\n").await;
        assert_eq!(error_code(&client.line().await), -32600);
        client
            .send(
                concat!(
                    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":"#,
                    r#"{"protocolVersion":"2025-06-18","capabilities":{},"#,
                    r#""clientInfo":{"name":"t","version":"1"}}}"#,
                    "\n"
                )
                .as_bytes(),
            )
            .await;
        let initialized = client.line().await;
        assert_eq!(initialized["id"], 1, "{initialized}");
        assert!(
            initialized["result"]["protocolVersion"].is_string(),
            "{initialized}"
        );
        client
            .send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await;
        client.send(b"[not json\n").await;
        assert_eq!(error_code(&client.line().await), -32700);
        client
            .send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
            .await;
        let pong = client.line().await;
        assert_eq!(pong["id"], 2, "{pong}");
        // EOF on stdin ends the server, and its output is flushed.
        drop(client.stdin);
        tokio::time::timeout(BOUND, server)
            .await
            .expect("server ends on EOF")
            .expect("server task");
        tokio::time::timeout(BOUND, flushed.wait())
            .await
            .expect("flushed in time");
    }
}
