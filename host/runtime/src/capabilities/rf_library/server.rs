//! One library server: the Python process, its folder and its address.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use super::RfLibrariesGrant;
use crate::capabilities::StderrTail;
use crate::capabilities::http::HostOwned;
use crate::capabilities::processes::{self, Registration, SessionProcesses};

/// The program the child runs (`python -c`): imports the library with real
/// Robot Framework and serves it over RF's remote interface.
const SERVER_SCRIPT: &str = include_str!("server.py");
/// How long a stopping server's keeper has to end what the library started
/// before the host ends it all itself.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Processes one start adds: the keeper and the library's own.
const PROCESSES_PER_START: usize = 2;
/// How long a library may take to import before the start is given up (the
/// step's own timeout may end it sooner).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest first line read from the child (its ready or error line).
const MAX_READY_LINE: u64 = 64 * 1024;
/// How much of the child's stderr is kept for messages.
const STDERR_TAIL: usize = 8 * 1024;
/// `PATH` for the child when the host has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// Robot Framework could not import the library: its own message.
    #[error("{0}")]
    Import(String),
    /// The environment could not be used.
    #[error("{0}")]
    Environment(String),
    /// The session or its tenant is at its cap of live processes.
    #[error("{0}")]
    Limit(String),
}

/// A running library server. Dropping it forgets the address, asks the
/// keeper to stop (it ends everything the library started, however it forked,
/// which RF's `Start Process` puts in sessions of their own), then, a moment
/// later whatever the keeper did, kills its process group and ends every
/// process still carrying its tag ([`processes::sweep`]), and removes the
/// folder.
pub(crate) struct Server {
    name: String,
    args: Vec<String>,
    rf_name: String,
    addr: SocketAddr,
    token: String,
    keeper: Option<Keeper>,
    /// The last of what it wrote to stderr (for the log when it exits).
    stderr: StderrTail,
    group: Option<u32>,
    /// `STEPHOST_PROCS` of its processes.
    tag: String,
    host_owned: HostOwned,
    dir: Option<WorkDir>,
}

/// The process the host started: `server.py` forks the library's process
/// below it and stays as its keeper. Registered with the host's reaper until
/// tokio is done with it (the fields drop in this order).
struct Keeper {
    child: tokio::process::Child,
    _registration: Option<Registration>,
}

/// The child's working and home folder, removed when the server goes (also
/// when a start is abandoned half way).
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kills a process group: a start abandoned after spawn (the step timed out
/// during a slow import) as well as a running server.
fn kill_group(group: Option<u32>) {
    crate::capabilities::signal_group(group, rustix::process::Signal::KILL);
}

/// Ends a start's processes (its group, and everything carrying its tag)
/// unless disarmed: a start abandoned half way, a variable file read.
struct GroupGuard {
    group: Option<u32>,
    tag: Option<String>,
}

impl GroupGuard {
    fn disarm(&mut self) -> (Option<u32>, String) {
        (self.group.take(), self.tag.take().unwrap_or_default())
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.group.take());
        if let Some(tag) = self.tag.take() {
            processes::sweep_in_background(tag, Duration::ZERO, "an RF library process ended");
        }
    }
}

impl Server {
    /// Starts the server of `name` imported with `args`, and waits until it
    /// is listening.
    pub(crate) async fn start(
        grant: &RfLibrariesGrant,
        name: &str,
        args: &[String],
        host_owned: &HostOwned,
        session: &SessionProcesses,
    ) -> Result<Self, StartError> {
        let token = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let library = serde_json::json!({ "name": name, "args": args }).to_string();
        let Spawned {
            python,
            dir,
            mut keeper,
            mut guard,
            tail,
        } = Spawned::new(
            grant,
            &[
                ("STEPHOST_RF_LIBRARY", &library),
                ("STEPHOST_RF_TOKEN", &token),
            ],
            session,
        )
        .await?;
        let stdout = keeper.child.stdout.take().ok_or_else(|| {
            StartError::Environment("the server's stdout was not captured".into())
        })?;
        let mut line = String::new();
        let read = tokio::time::timeout(
            START_TIMEOUT,
            BufReader::new(stdout.take(MAX_READY_LINE)).read_line(&mut line),
        )
        .await;
        match read {
            Err(_) => {
                return Err(StartError::Environment(format!(
                    "library '{name}' was not ready after {} s{}",
                    START_TIMEOUT.as_secs(),
                    with_stderr(&tail.text())
                )));
            }
            Ok(Err(e)) => {
                return Err(StartError::Environment(format!(
                    "cannot read the server's first line: {e}"
                )));
            }
            Ok(Ok(_)) => {}
        }
        let ready = match parse_ready(&line) {
            Ok(ready) => ready,
            Err(Ready::Failed(message)) => return Err(StartError::Import(message)),
            Err(Ready::Garbled) => {
                // The child may still be writing its traceback: let it finish.
                let _ = tokio::time::timeout(Duration::from_millis(500), keeper.child.wait()).await;
                return Err(StartError::Environment(format!(
                    "{} did not start the library server{}",
                    python.display(),
                    with_stderr(&tail.text())
                )));
            }
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, ready.port));
        host_owned.add(addr);
        let (group, tag) = guard.disarm();
        Ok(Server {
            name: name.to_owned(),
            args: args.to_vec(),
            rf_name: ready.name,
            addr,
            token,
            keeper: Some(keeper),
            stderr: tail,
            group,
            tag,
            host_owned: host_owned.clone(),
            dir: Some(dir),
        })
    }

    /// The library as `Import Library` named it.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The library as Robot Framework names it.
    pub(crate) fn rf_name(&self) -> &str {
        &self.rf_name
    }

    /// Whether it serves `name` imported with `args`.
    pub(crate) fn serves(&self, name: &str, args: &[String]) -> bool {
        self.name == name && self.args == args
    }

    /// Whether the process still runs (its keeper exits as soon as the
    /// library's process does).
    pub(crate) fn is_alive(&mut self) -> bool {
        self.keeper
            .as_mut()
            .is_some_and(|keeper| matches!(keeper.child.try_wait(), Ok(None)))
    }

    /// The last of what it wrote to stderr.
    pub(crate) fn stderr(&self) -> String {
        self.stderr.text()
    }

    /// Its loopback address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The only path it answers under.
    pub(crate) fn prefix(&self) -> String {
        format!("/{}", self.token)
    }

    /// The URL the plugin posts XML-RPC to.
    pub(crate) fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.prefix())
    }
}

/// A running `python -c server.py`: with a cleared environment (the host's own
/// variables, credentials among them, are not the session's business) but for
/// `env` and the session's tag, in a fresh folder of its own, in a process
/// group of its own (ended with everything carrying its tag when `guard` drops
/// unless disarmed), its stderr's tail kept. Charged to the session's and its
/// tenant's caps before it starts.
struct Spawned {
    python: PathBuf,
    dir: WorkDir,
    keeper: Keeper,
    guard: GroupGuard,
    tail: StderrTail,
}

impl Spawned {
    async fn new(
        grant: &RfLibrariesGrant,
        env: &[(&str, &str)],
        session: &SessionProcesses,
    ) -> Result<Self, StartError> {
        let python = grant.python.clone().ok_or_else(|| {
            StartError::Environment("the grant names no `python` for its rf_libraries".into())
        })?;
        let dir = work_dir()?;
        let tag = session.new_tag();
        let mut command = tokio::process::Command::new(&python);
        command
            .arg("-c")
            .arg(SERVER_SCRIPT)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into()),
            )
            .env("HOME", &dir.0)
            .env("TMPDIR", &dir.0)
            .env("LANG", "C.UTF-8")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONUNBUFFERED", "1")
            .env("STEPHOST_RF_WORKDIR", &dir.0)
            .env(processes::TAG_VAR, &tag)
            .env(processes::CAPS_VAR, session.caps_json())
            .envs(env.iter().copied())
            .current_dir(&dir.0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if !grant.pythonpath.is_empty() {
            let joined = std::env::join_paths(&grant.pythonpath).map_err(|e| {
                StartError::Environment(format!("pythonpath cannot be joined: {e}"))
            })?;
            command.env("PYTHONPATH", joined);
        }
        let charge = session
            .charge(PROCESSES_PER_START)
            .await
            .map_err(StartError::Limit)?;
        processes::supervise();
        let (mut child, registration) = processes::spawn(&mut command).map_err(|e| {
            StartError::Environment(format!("cannot run {}: {e}", python.display()))
        })?;
        // Counted and forked: the tenant's next start may count.
        drop(charge);
        let guard = GroupGuard {
            group: child.id(),
            tag: Some(tag),
        };
        let tail = StderrTail::new(STDERR_TAIL);
        if let Some(stderr) = child.stderr.take() {
            tail.follow(stderr);
        }
        Ok(Self {
            python,
            dir,
            keeper: Keeper {
                child,
                _registration: registration,
            },
            guard,
            tail,
        })
    }
}

/// A fresh folder for one child, removed with the returned guard.
fn work_dir() -> Result<WorkDir, StartError> {
    let dir = std::env::temp_dir().join(format!("stephost-rf-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&dir).map_err(|e| {
        StartError::Environment(format!(
            "cannot create a folder for the Python process: {e}"
        ))
    })?;
    Ok(WorkDir(dir))
}

/// Most bytes of variables one file may give (the JSON the child prints).
const MAX_VARIABLES_BYTES: u64 = 16 * 1024 * 1024 + 64 * 1024;

/// The variables of RF variable file `path` imported with `args`, read by a
/// one-off Python process with RF's own importer: the JSON array of
/// `[name, value]` pairs.
pub(crate) async fn load_variables(
    grant: &RfLibrariesGrant,
    path: &std::path::Path,
    args: &[String],
    session: &SessionProcesses,
) -> Result<String, StartError> {
    let spec = serde_json::json!({ "path": path, "args": args }).to_string();
    // A variable file is code: whatever it started goes when it is done
    // (its keeper first, then `guard`), and so does its folder (`_dir`).
    let Spawned {
        python,
        dir: _dir,
        mut keeper,
        mut guard,
        tail,
    } = Spawned::new(grant, &[("STEPHOST_RF_VARIABLES", &spec)], session).await?;
    let stdout = keeper.child.stdout.take();
    let read = async {
        let mut out = Vec::new();
        if let Some(stdout) = stdout {
            stdout
                .take(MAX_VARIABLES_BYTES)
                .read_to_end(&mut out)
                .await?;
        }
        Ok::<_, std::io::Error>(out)
    };
    let out = tokio::time::timeout(START_TIMEOUT, read)
        .await
        .map_err(|_| {
            StartError::Environment(format!(
                "variable file '{}' was not read after {} s",
                path.display(),
                START_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|e| StartError::Environment(format!("cannot read the Python process: {e}")))?;
    if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(5), keeper.child.wait()).await {
        // Waited for, so its group id may be another's by now: the tag alone
        // finds what is left.
        guard.group = None;
    }
    let value: serde_json::Value = serde_json::from_slice(&out).map_err(|_| {
        StartError::Environment(format!(
            "{} did not read the variable file{}",
            python.display(),
            with_stderr(&tail.text())
        ))
    })?;
    if let Some(message) = value.get("error").and_then(|e| e.as_str()) {
        return Err(StartError::Import(message.to_owned()));
    }
    match value.get("variables") {
        Some(pairs @ serde_json::Value::Array(_)) => Ok(pairs.to_string()),
        _ => Err(StartError::Environment(format!(
            "{} did not read the variable file",
            python.display()
        ))),
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.host_owned.remove(self.addr);
        let group = self.group.take();
        let keeper = self.keeper.take();
        let dir = self.dir.take();
        let tag = std::mem::take(&mut self.tag);
        // Asked at once, so the keeper ends what the library started even
        // when this host exits right after (a shutdown).
        if let Some(pid) = crate::capabilities::pid(group) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let name = std::mem::take(&mut self.name);
        // Off the dropping thread (often a runtime worker ending a session):
        // waiting out the grace must not hold it.
        let stopper = move || {
            let mut reaped = true;
            if let Some(mut keeper) = keeper {
                let deadline = std::time::Instant::now() + STOP_GRACE;
                while matches!(keeper.child.try_wait(), Ok(None))
                    && std::time::Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                reaped = !matches!(keeper.child.try_wait(), Ok(None));
                // A leader not yet waited for keeps its group id from reuse.
                if !reaped {
                    kill_group(group);
                }
                let killed = processes::sweep(&tag);
                if killed > 0 {
                    tracing::debug!(library = %name, killed, "processes left by an RF library ended");
                }
                drop(keeper);
            }
            drop(dir);
            tracing::debug!(library = %name, reaped, "RF library server stopped");
        };
        if std::thread::Builder::new()
            .name("rf-library-stop".into())
            .spawn(stopper)
            .is_err()
        {
            kill_group(group);
        }
    }
}

fn with_stderr(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends:\n{stderr}")
    }
}

/// The child's ready line.
#[derive(Debug, PartialEq)]
struct ReadyLine {
    port: u16,
    name: String,
}

#[derive(Debug, PartialEq)]
enum Ready {
    /// `{"error": ...}`: the library did not import.
    Failed(String),
    /// Not the line the protocol has (the interpreter is not Python 3, or it
    /// crashed before writing).
    Garbled,
}

fn parse_ready(line: &str) -> Result<ReadyLine, Ready> {
    let value: serde_json::Value = serde_json::from_str(line.trim()).map_err(|_| Ready::Garbled)?;
    if let Some(message) = value.get("error").and_then(|e| e.as_str()) {
        return Err(Ready::Failed(message.to_owned()));
    }
    let ready = value.get("ready").ok_or(Ready::Garbled)?;
    let port = ready
        .get("port")
        .and_then(|p| p.as_u64())
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p != 0)
        .ok_or(Ready::Garbled)?;
    let name = ready
        .get("name")
        .and_then(|n| n.as_str())
        .ok_or(Ready::Garbled)?
        .to_owned();
    Ok(ReadyLine { port, name })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_is_read_strictly() {
        assert_eq!(
            parse_ready("{\"ready\": {\"port\": 4100, \"name\": \"Process\", \"keywords\": 12}}\n"),
            Ok(ReadyLine {
                port: 4100,
                name: "Process".into()
            })
        );
        assert_eq!(
            parse_ready(
                "{\"error\": \"Importing library 'X' failed: ModuleNotFoundError: No module named 'X'\"}"
            ),
            Err(Ready::Failed(
                "Importing library 'X' failed: ModuleNotFoundError: No module named 'X'".into()
            ))
        );
        assert_eq!(parse_ready(""), Err(Ready::Garbled));
        assert_eq!(
            parse_ready("Traceback (most recent call last):"),
            Err(Ready::Garbled)
        );
        assert_eq!(
            parse_ready("{\"ready\": {\"port\": 0, \"name\": \"X\"}}"),
            Err(Ready::Garbled)
        );
        assert_eq!(
            parse_ready("{\"ready\": {\"port\": 70000, \"name\": \"X\"}}"),
            Err(Ready::Garbled)
        );
    }
}
