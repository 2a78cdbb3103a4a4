//! Keeps the last few KiB a guest wrote to stderr. A Rust guest's panic message
//! goes there just before it traps; the report quotes it.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// A bounded tail of stderr output, shared by all streams the guest opens.
#[derive(Clone)]
pub(crate) struct StderrTail {
    buf: Arc<Mutex<Vec<u8>>>,
    cap: usize,
}

impl StderrTail {
    /// A tail keeping the last `cap` bytes.
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            buf: Arc::new(Mutex::new(Vec::new())),
            cap,
        }
    }

    /// Takes and clears what was written so far.
    pub(crate) fn take(&self) -> String {
        let mut buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&buf).trim().to_owned();
        buf.clear();
        text
    }

    /// What was written so far, left in place.
    pub(crate) fn text(&self) -> String {
        let buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&buf).trim().to_owned()
    }

    /// Keeps the tail of a child process's stderr, read to its end in a task
    /// of its own (a chatty child must not block on a full pipe).
    pub(crate) fn follow(&self, mut stderr: impl tokio::io::AsyncRead + Unpin + Send + 'static) {
        use tokio::io::AsyncReadExt;
        let tail = self.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.push(&buf[..n]);
            }
        });
    }

    fn push(&self, bytes: &[u8]) {
        let mut buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        buf.extend_from_slice(bytes);
        if buf.len() > self.cap {
            let excess = buf.len() - self.cap;
            buf.drain(..excess);
        }
    }
}

impl IsTerminal for StderrTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for StderrTail {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for StderrTail {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.push(bytes);
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
