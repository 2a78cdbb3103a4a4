//! A driver process (chromedriver or geckodriver) on loopback.
//!
//! The driver runs in a process group of its own, and so do the browsers it
//! starts: dropping a [`Driver`] kills the whole group, so no browser outlives
//! the host even when a session could not be deleted cleanly.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::client;
use super::config::{BrowserConfig, BrowserKind};
use crate::capabilities::StderrTail;

/// How long each session delete may take when the driver goes.
const SHUTDOWN_DELETE: Duration = Duration::from_secs(5);
/// How much of the driver's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;

/// A driver that could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DriverError {
    /// The executable is not there.
    #[error("no {what} at `{path}`: {hint}")]
    Missing {
        /// `chromedriver`, `Chromium`, ...
        what: &'static str,
        /// Where it was looked for.
        path: String,
        /// What to install.
        hint: &'static str,
    },
    /// It would not start or never answered `/status`.
    #[error("{program} did not come up: {message}")]
    Start {
        /// The executable.
        program: String,
        /// Why, with the end of its stderr.
        message: String,
    },
}

/// A running driver.
pub(crate) struct Driver {
    kind: BrowserKind,
    addr: SocketAddr,
    /// The process; `kill_on_drop` covers the driver, the group kill in `Drop`
    /// covers the browsers it started.
    child: Mutex<tokio::process::Child>,
    /// The process group (the driver's pid), when known.
    group: Option<u32>,
    /// Browser profile folders made for sessions of this driver; removed when it
    /// goes (a session deleted earlier removes its own).
    profiles: Mutex<Vec<PathBuf>>,
    /// Sessions opened and not yet deleted: deleted, waiting, when the driver
    /// goes, so the browsers quit cleanly (and clean up after themselves).
    sessions: Mutex<Vec<String>>,
    /// Keeps the host's reaper off the driver's exit status while `child`
    /// lives (it is dropped after `child`).
    _registration: Option<crate::capabilities::processes::Registration>,
}

impl Driver {
    /// Starts the driver for `config.kind` on a free loopback port and waits
    /// until it answers `/status`.
    pub(crate) async fn start(config: &BrowserConfig) -> Result<Arc<Self>, DriverError> {
        let (what, hint) = match config.kind {
            BrowserKind::Chromium => ("chromedriver", config.install_hint()),
            BrowserKind::Firefox => ("geckodriver", config.install_hint()),
        };
        let program = config.driver_path().ok_or_else(|| DriverError::Missing {
            what,
            path: match config.kind {
                BrowserKind::Chromium => config.chromedriver.display().to_string(),
                BrowserKind::Firefox => config.geckodriver.display().to_string(),
            },
            hint,
        })?;
        if config.browser_path().is_none() {
            return Err(DriverError::Missing {
                what: match config.kind {
                    BrowserKind::Chromium => "Chromium",
                    BrowserKind::Firefox => "Firefox",
                },
                path: match config.kind {
                    BrowserKind::Chromium => config.chromium.display().to_string(),
                    BrowserKind::Firefox => config.firefox.display().to_string(),
                },
                hint,
            });
        }
        // A port picked by the kernel, released just before the driver binds it;
        // if another process takes it in between, the next try gets another one.
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start(config, &program).await {
                Ok(driver) => return Ok(Arc::new(driver)),
                Err(message) => last = message,
            }
        }
        Err(DriverError::Start {
            program: program.display().to_string(),
            message: last,
        })
    }

    async fn try_start(config: &BrowserConfig, program: &Path) -> Result<Self, String> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let mut command = tokio::process::Command::new(program);
        match config.kind {
            BrowserKind::Chromium => {
                command.arg(format!("--port={port}"));
            }
            BrowserKind::Firefox => {
                command.args(["--host", "127.0.0.1", "--port", &port.to_string()]);
                command.args(["--log", "error"]);
            }
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let (mut child, registration) = crate::capabilities::processes::spawn(&mut command)
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        let group = child.id();
        let tail = StderrTail::new(STDERR_TAIL);
        if let Some(stderr) = child.stderr.take() {
            tail.follow(stderr);
        }
        let driver = Self {
            kind: config.kind,
            addr,
            child: Mutex::new(child),
            group,
            profiles: Mutex::new(Vec::new()),
            sessions: Mutex::new(Vec::new()),
            _registration: registration,
        };
        let deadline = Instant::now() + Duration::from_millis(config.driver_start_timeout_ms);
        loop {
            if !driver.is_alive() {
                return Err(format!(
                    "it exited at start; its stderr ends: {}",
                    tail.text()
                ));
            }
            let probe = client::request(
                addr,
                http::Method::GET,
                "/status",
                None,
                Duration::from_millis(500),
            )
            .await;
            if let Ok((200, _)) = probe {
                tracing::info!(driver = %program.display(), %addr, "webdriver driver ready");
                return Ok(driver);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "no answer on {addr}/status within {} ms (browser.driver_start_timeout_ms)",
                    config.driver_start_timeout_ms
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Its address on loopback.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The browser it drives.
    pub(crate) fn kind(&self) -> BrowserKind {
        self.kind
    }

    /// Whether the process still runs.
    pub(crate) fn is_alive(&self) -> bool {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        matches!(child.try_wait(), Ok(None))
    }

    /// Remembers an open session.
    pub(crate) fn track_session(&self, id: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(id.to_owned());
    }

    /// Forgets a session that was deleted.
    pub(crate) fn untrack_session(&self, id: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|s| s != id);
    }

    /// Remembers a profile folder to remove when the driver goes.
    pub(crate) fn track_profile(&self, dir: PathBuf) {
        self.profiles
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir);
    }

    /// Removes a profile folder now (its session was deleted).
    pub(crate) fn remove_profile(&self, dir: &Path) {
        let mut profiles = self.profiles.lock().unwrap_or_else(|e| e.into_inner());
        profiles.retain(|p| p != dir);
        let _ = std::fs::remove_dir_all(dir);
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // Sessions still open here were left by a host shutting down (its
        // runtime no longer runs the deletes it spawned): delete them now, so
        // the browsers quit and geckodriver removes its profiles.
        let open = std::mem::take(&mut *self.sessions.lock().unwrap_or_else(|e| e.into_inner()));
        for id in open {
            let deleted =
                client::delete_blocking(self.addr, &format!("/session/{id}"), SHUTDOWN_DELETE);
            tracing::debug!(session = %id, deleted, "webdriver session deleted at shutdown");
        }
        // The browsers are in the driver's process group: one signal ends them
        // all, whatever state their sessions were left in.
        crate::capabilities::signal_group(self.group, rustix::process::Signal::KILL);
        let profiles =
            std::mem::take(&mut *self.profiles.lock().unwrap_or_else(|e| e.into_inner()));
        for dir in profiles {
            let _ = std::fs::remove_dir_all(dir);
        }
        tracing::debug!(addr = %self.addr, "webdriver driver stopped");
    }
}
