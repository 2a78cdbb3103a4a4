//! Every process a session makes the host run, by any route: tagged, charged
//! to the session and its tenant before it starts, and ended with the session
//! or with the host.
//!
//! Why a process cannot slip away by changing its process group or session
//! (what a browser, its driver and any daemon do):
//!
//! - The host is a child subreaper (`PR_SET_CHILD_SUBREAPER`, set when it first
//!   starts a session process): an orphan anywhere below it re-parents to the
//!   host, never to init. A reaper thread waits for the ones that exit (nobody
//!   else would when stephost is PID 1 in a container) and ends, with
//!   everything below it, any session process it finds adopted, since the
//!   supervisor that should hold it is gone.
//! - Every process the host starts for a session (an RF library server, a
//!   variable file's loader) carries `STEPHOST_PROCS=<tenant>.<session>.<own>`,
//!   random tags its children inherit (`server.py` puts the tag back into an
//!   environment a library replaces), in a process group of its own, under a
//!   supervisor (the keeper in `rf_library/server.py`) that is itself a
//!   subreaper: whatever the library starts stays below the keeper, however it
//!   forks, and the keeper ends all of it when the library exits, when the
//!   host asks and when the host dies.
//! - Ending a scope ([`sweep`]) stops (SIGSTOP) and then kills everything that
//!   carries its tag and everything below those, round after round until none
//!   is left, so a process that forks while it is being killed leaves no child.
//!
//! Counting: the live processes of a session and of a tenant (carrying its
//! tag, or below one that does) are counted before one more starts, under a
//! per-tenant lock that the Python side takes too, for every
//! `subprocess.Popen` of a library (RF's `Start Process` and `Run Process`,
//! SeleniumLibrary's driver). Cgroups would count in the kernel, but a
//! writable cgroup v2 tree with the pids controller is not something every
//! host (or CI container) has; this works wherever `/proc` does.

use std::collections::{BTreeMap, BTreeSet};
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions};

/// The environment variable that tags a session's processes.
pub(crate) const TAG_VAR: &str = "STEPHOST_PROCS";
/// The environment variable that gives a library server its caps (JSON); the
/// server takes it out of its environment before the library runs.
pub(crate) const CAPS_VAR: &str = "STEPHOST_PROCS_CAPS";
/// The config keys of the caps, named in refusals.
const SESSION_KEY: &str = "sessions.max_processes_per_session";
const TENANT_KEY: &str = "sessions.max_processes_per_tenant";
/// How long a start waits for its tenant's lock (held only while one process
/// is counted and forked) before it is refused.
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// Most rounds of stop-and-kill one sweep makes.
const SWEEP_ROUNDS: usize = 50;
/// How often the reaper looks at the host's children.
const REAP_EVERY: Duration = Duration::from_millis(500);
/// How long an ended session's keepers have to end their libraries' processes
/// (and remove their folders) before the host ends what is left itself.
const SESSION_SWEEP_DELAY: Duration = Duration::from_secs(3);

/// How many live processes a session and a tenant may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessCaps {
    /// Live processes of one session (`sessions.max_processes_per_session`).
    pub per_session: usize,
    /// Live processes of all of one tenant's sessions
    /// (`sessions.max_processes_per_tenant`).
    pub per_tenant: usize,
}

impl Default for ProcessCaps {
    fn default() -> Self {
        // A library server is two processes (its keeper and itself); a
        // headless Chromium with its driver about a dozen.
        Self {
            per_session: 64,
            per_tenant: 256,
        }
    }
}

/// One tenant's account of processes, shared by its sessions.
#[derive(Clone)]
pub struct TenantProcesses(Arc<Tenant>);

struct Tenant {
    id: String,
    tag: String,
    caps: ProcessCaps,
    /// The lock every start of this tenant's processes takes, the host's and
    /// the Python servers' alike: an abstract Unix socket name, held by the
    /// one socket bound to it (so it leaves no file behind, and a process
    /// that dies releases it).
    lock: String,
}

impl TenantProcesses {
    /// The account of tenant `id`, with these caps.
    pub fn new(id: &str, caps: ProcessCaps) -> Self {
        let tag = random_tag();
        let lock = format!("stephost-procs-{tag}");
        Self(Arc::new(Tenant {
            id: id.to_owned(),
            tag,
            caps,
            lock,
        }))
    }

    /// A new session's processes, charged to this tenant.
    pub fn session(&self) -> SessionProcesses {
        SessionProcesses {
            tenant: self.clone(),
            scope: format!("{}.{}", self.0.tag, random_tag()),
            started: AtomicBool::new(false),
        }
    }
}

/// One session's processes: what the host starts for it is tagged with its
/// scope; dropping it (the session ended) ends every process of the scope.
pub struct SessionProcesses {
    tenant: TenantProcesses,
    /// `<tenant tag>.<session tag>`.
    scope: String,
    /// Whether it ever started a process (only then is there anything to end).
    started: AtomicBool,
}

impl SessionProcesses {
    /// The processes of a session that belongs to no tenant account (`stephost
    /// run`, a probe): a tenant of its own with the default caps.
    pub fn standalone() -> Self {
        TenantProcesses::new("local", ProcessCaps::default()).session()
    }

    /// The tag for one more process of this session (and what it starts).
    pub(crate) fn new_tag(&self) -> String {
        format!("{}.{}", self.scope, random_tag())
    }

    /// What a library server needs to charge its own children: the caps,
    /// their config keys, the tenant and its lock.
    pub(crate) fn caps_json(&self) -> String {
        let tenant = &self.tenant.0;
        serde_json::json!({
            "session": tenant.caps.per_session,
            "tenant": tenant.caps.per_tenant,
            "session_key": SESSION_KEY,
            "tenant_key": TENANT_KEY,
            "tenant_id": tenant.id,
            "lock": tenant.lock,
        })
        .to_string()
    }

    /// Charges `count` more processes to the session and its tenant: refused,
    /// naming the cap, when either would pass its cap. The returned lock is
    /// held until the process is started (drop it right after the spawn), so
    /// two starts of one tenant never both see room for one.
    pub(crate) async fn charge(&self, count: usize) -> Result<Charge, String> {
        let tenant = &self.tenant.0;
        let name = SocketAddr::from_abstract_name(tenant.lock.as_bytes())
            .map_err(|e| format!("cannot start a process: the process lock: {e}"))?;
        let deadline = Instant::now() + LOCK_WAIT;
        let lock = loop {
            match UnixDatagram::bind_addr(&name) {
                Ok(lock) => break lock,
                Err(e)
                    if e.kind() == std::io::ErrorKind::AddrInUse && Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                    return Err(format!(
                        "cannot start a process: tenant `{}` has been starting others for {} s",
                        tenant.id,
                        LOCK_WAIT.as_secs()
                    ));
                }
                Err(e) => {
                    return Err(format!("cannot start a process: the process lock: {e}"));
                }
            }
        };
        let table = table();
        let session = members(&table, &self.scope, None).len();
        let of_tenant = members(&table, &tenant.tag, None).len();
        check_caps(&tenant.id, tenant.caps, session, of_tenant, count)?;
        self.started.store(true, Ordering::Relaxed);
        Ok(Charge { _lock: lock })
    }
}

/// Refuses `count` more processes when the session (`session` live) or the
/// tenant (`tenant` live) would pass its cap. The Python side words its
/// refusals the same way (`Charged` in `rf_library/server.py`).
fn check_caps(
    id: &str,
    caps: ProcessCaps,
    session: usize,
    tenant: usize,
    count: usize,
) -> Result<(), String> {
    let what = if count == 1 {
        "another process".to_owned()
    } else {
        format!("{count} more processes")
    };
    if session + count > caps.per_session {
        return Err(format!(
            "cannot start {what}: this session has {session} live processes, and its cap is {SESSION_KEY} = {}; end what it started (`Terminate Process`, `Close Browser`) or end the session",
            caps.per_session
        ));
    }
    if tenant + count > caps.per_tenant {
        return Err(format!(
            "cannot start {what}: tenant `{id}` has {tenant} live processes across its sessions, and its cap is {TENANT_KEY} = {}; end what its sessions started or end sessions",
            caps.per_tenant
        ));
    }
    Ok(())
}

impl Drop for SessionProcesses {
    fn drop(&mut self) {
        if !self.started.load(Ordering::Relaxed) {
            return;
        }
        // Each server's own stop ends what is below it; this then ends
        // whatever of the session is anywhere else (re-parented, in a group
        // or session of its own), off the dropping thread (often a runtime
        // worker).
        sweep_in_background(self.scope.clone(), SESSION_SWEEP_DELAY, "session ended");
    }
}

/// The tenant's lock, held while one start is counted and forked; closing the
/// socket unlocks.
pub(crate) struct Charge {
    _lock: UnixDatagram,
}

fn random_tag() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Whether `tag` is `scope` or inside it (`scope.` followed by more).
fn within(tag: &str, scope: &str) -> bool {
    tag.strip_prefix(scope)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// One process as `/proc` shows it.
#[derive(Debug, Clone)]
struct Proc {
    ppid: u32,
    zombie: bool,
    /// Its `STEPHOST_PROCS`, when it has one (and its environment is readable).
    tag: Option<String>,
}

/// Every process `/proc` shows, by pid.
fn table() -> BTreeMap<u32, Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, read_proc(pid)?)))
        .collect()
}

fn read_proc(pid: u32) -> Option<Proc> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let zombie = state == "Z" || state == "X";
    let tag = if zombie { None } else { tag_of(pid) };
    Some(Proc { ppid, zombie, tag })
}

fn tag_of(pid: u32) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{TAG_VAR}=");
    environ
        .split(|&b| b == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|tag| String::from_utf8_lossy(tag).into_owned())
}

/// The live processes of `scope`: those tagged with it or inside it, and every
/// live process below one of those (a child that dropped its environment is
/// still the session's). `except` is left out (the caller itself).
fn members(table: &BTreeMap<u32, Proc>, scope: &str, except: Option<u32>) -> BTreeSet<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (&pid, proc) in table {
        children.entry(proc.ppid).or_default().push(pid);
    }
    let mut found: BTreeSet<u32> = table
        .iter()
        .filter(|(_, p)| !p.zombie && p.tag.as_deref().is_some_and(|t| within(t, scope)))
        .map(|(&pid, _)| pid)
        .collect();
    let mut todo: Vec<u32> = found.iter().copied().collect();
    while let Some(pid) = todo.pop() {
        for &kid in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
            if table.get(&kid).is_some_and(|p| !p.zombie) && found.insert(kid) {
                todo.push(kid);
            }
        }
    }
    if let Some(me) = except {
        found.remove(&me);
    }
    found
}

fn to_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

fn own_pid() -> u32 {
    u32::try_from(rustix::process::getpid().as_raw_pid()).unwrap_or(0)
}

/// Ends every live process of `scope` (see [`members`]), then waits for the
/// host's adopted children among them. Returns how many processes were killed.
pub(crate) fn sweep(scope: &str) -> usize {
    let killed = kill_rounds(scope);
    reap_adopted();
    killed
}

/// Each round stops every live process of `scope`, then kills them all, so
/// none can fork or be re-parented between being found and being killed;
/// rounds go on until one finds none. Returns how many were killed.
fn kill_rounds(scope: &str) -> usize {
    let me = own_pid();
    let mut killed = BTreeSet::new();
    for _ in 0..SWEEP_ROUNDS {
        let targets = members(&table(), scope, Some(me));
        if targets.is_empty() {
            break;
        }
        let pids: Vec<Pid> = targets.iter().filter_map(|&p| to_pid(p)).collect();
        for &pid in &pids {
            let _ = rustix::process::kill_process(pid, Signal::STOP);
        }
        for &pid in &pids {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        killed.extend(targets);
        std::thread::sleep(Duration::from_millis(20));
    }
    killed.len()
}

/// [`sweep`] on a thread of its own (it sleeps between rounds), after `delay`;
/// at once on this thread if no thread can be started.
pub(crate) fn sweep_in_background(scope: String, delay: Duration, why: &'static str) {
    let work = move |delay: Duration| {
        std::thread::sleep(delay);
        let killed = sweep(&scope);
        if killed > 0 {
            tracing::info!(killed, why, "ended a session's processes");
        }
    };
    let later = work.clone();
    if std::thread::Builder::new()
        .name("stephost-sweep".into())
        .spawn(move || later(delay))
        .is_err()
    {
        work(Duration::ZERO);
    }
}

/// Children the host started itself and that `tokio::process` waits for:
/// the reaper must not take their exit status (tokio would then signal a pid
/// that may be someone else's by now).
static SPAWNED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
/// Set once the host is a subreaper with its reaper running.
static SUPERVISING: OnceLock<()> = OnceLock::new();

/// A child the host started, registered with the reaper until this is
/// dropped; drop it only after the `Child` (so tokio has either reaped it or
/// will only ever ask for its status).
pub(crate) struct Registration(u32);

impl Drop for Registration {
    fn drop(&mut self) {
        SPAWNED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

/// Spawns `command`, registered so the reaper leaves it to tokio. Every child
/// the host starts goes through here.
pub(crate) fn spawn(
    command: &mut tokio::process::Command,
) -> std::io::Result<(tokio::process::Child, Option<Registration>)> {
    // Held across the fork, so the reaper never sees the child unregistered.
    let mut spawned = SPAWNED.lock().unwrap_or_else(|e| e.into_inner());
    let child = command.spawn()?;
    let registration = child.id().map(|pid| {
        spawned.insert(pid);
        Registration(pid)
    });
    Ok((child, registration))
}

/// Makes the host a child subreaper and starts its reaper, once; before the
/// first session process starts.
pub(crate) fn supervise() {
    SUPERVISING.get_or_init(|| {
        if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
            tracing::warn!(error = %e, "cannot make the host a child subreaper: processes that leave a session's tree re-parent to init, and only their tag finds them");
        }
        let started = std::thread::Builder::new()
            .name("stephost-reaper".into())
            .spawn(|| {
                loop {
                    std::thread::sleep(REAP_EVERY);
                    reap_adopted();
                }
            });
        if let Err(e) = started {
            tracing::warn!(error = %e, "cannot start the host's reaper thread");
        }
    });
}

/// Waits for the host's adopted children that exited, and ends every session
/// process found adopted, with what is below it: its keeper is gone.
fn reap_adopted() {
    if SUPERVISING.get().is_none() {
        return;
    }
    let me = own_pid();
    let spawned = SPAWNED.lock().unwrap_or_else(|e| e.into_inner());
    let mut orphans = Vec::new();
    for pid in children_of(me) {
        if spawned.contains(&pid) {
            continue;
        }
        let Some(proc) = read_proc(pid) else {
            continue;
        };
        if proc.zombie {
            if let Some(pid) = to_pid(pid) {
                let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
            }
        } else if let Some(tag) = proc.tag {
            orphans.push((pid, tag));
        }
    }
    drop(spawned);
    for (pid, tag) in orphans {
        // Only that process's own scope: the other servers of its session
        // live on. Its zombie is waited for on the next round.
        let killed = kill_rounds(&tag);
        tracing::warn!(
            pid,
            killed,
            "a session's process outlived its supervisor; ended it and what it started"
        );
    }
}

/// The host's children, from each thread's `children` file (a child belongs
/// to the thread that forked it; an adopted one to the main thread), or from
/// the whole table where the kernel has no such files.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut kids = BTreeSet::new();
    let mut any = false;
    for task in tasks.filter_map(Result::ok) {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            any = true;
            kids.extend(
                text.split_ascii_whitespace()
                    .filter_map(|k| k.parse::<u32>().ok()),
            );
        }
    }
    if !any {
        return table()
            .into_iter()
            .filter(|(_, p)| p.ppid == pid)
            .map(|(k, _)| k)
            .collect();
    }
    kids.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_by_whole_tags() {
        assert!(within("t.s.p", "t.s"));
        assert!(within("t.s.p", "t"));
        assert!(within("t.s", "t.s"));
        assert!(!within("t.s2.p", "t.s"));
        assert!(!within("t2.s.p", "t"));
    }

    #[test]
    fn refusals_name_the_cap() {
        let caps = ProcessCaps {
            per_session: 4,
            per_tenant: 6,
        };
        assert_eq!(check_caps("acme", caps, 2, 2, 2), Ok(()));
        let e = check_caps("acme", caps, 3, 3, 2).expect_err("session cap");
        assert!(e.contains("sessions.max_processes_per_session = 4"), "{e}");
        let e = check_caps("acme", caps, 0, 5, 2).expect_err("tenant cap");
        assert!(e.contains("sessions.max_processes_per_tenant = 6"), "{e}");
        assert!(e.contains("tenant `acme`"), "{e}");
    }

    fn alive(pid: u32) -> bool {
        read_proc(pid).is_some_and(|p| !p.zombie)
    }

    /// A tagged shell whose child left its group and session and dropped its
    /// environment (as a daemon or a browser does): still the session's,
    /// counted with it and ended by a sweep of it, while another session's
    /// process is left alone.
    #[test]
    fn a_sweep_ends_what_left_the_group_the_session_and_the_tag() {
        let tenant = TenantProcesses::new("t", ProcessCaps::default());
        let (mine, other) = (tenant.session(), tenant.session());
        let start = |tag: String, script: &str| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .env(TAG_VAR, tag)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("sh")
        };
        let mut parent = start(mine.new_tag(), "setsid env -i sleep 300 & echo $!; wait");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(parent.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("the child's pid");
        let child: u32 = line.trim().parse().expect("a pid");
        let mut bystander = start(other.new_tag(), "sleep 300");
        let sid = |pid: u32| to_pid(pid).and_then(|p| rustix::process::getsid(Some(p)).ok());
        let deadline = Instant::now() + Duration::from_secs(10);
        while tag_of(child).is_some() || sid(child) == sid(parent.id()) {
            assert!(Instant::now() < deadline, "the child never left");
            std::thread::sleep(Duration::from_millis(10));
        }
        let live = members(&table(), &mine.scope, None);
        assert_eq!(live, BTreeSet::from([parent.id(), child]));
        assert_eq!(sweep(&mine.scope), 2);
        assert!(parent.wait().is_ok());
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(child) {
            assert!(Instant::now() < deadline, "the child outlived the sweep");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(alive(bystander.id()), "another session's process lives on");
        assert!(members(&table(), &mine.scope, None).is_empty());
        let _ = bystander.kill();
        let _ = bystander.wait();
    }

    #[tokio::test]
    async fn a_charge_counts_the_live_processes_of_the_session_and_tenant() {
        let tenant = TenantProcesses::new(
            "acme",
            ProcessCaps {
                per_session: 3,
                per_tenant: 4,
            },
        );
        let (one, two) = (tenant.session(), tenant.session());
        let start = |tag: String| {
            std::process::Command::new("sleep")
                .arg("300")
                .env(TAG_VAR, tag)
                .spawn()
                .expect("sleep")
        };
        let mut children = Vec::new();
        for _ in 0..2 {
            let charge = one.charge(1).await.expect("room in the session");
            children.push(start(one.new_tag()));
            drop(charge);
        }
        let e = one.charge(2).await.err().expect("session cap");
        assert!(e.contains("this session has 2 live processes"), "{e}");
        let charge = one.charge(1).await.expect("one more fits");
        children.push(start(one.new_tag()));
        drop(charge);
        let e = one.charge(1).await.err().expect("session cap");
        assert!(e.contains("sessions.max_processes_per_session = 3"), "{e}");
        let e = two.charge(2).await.err().expect("tenant cap");
        assert!(e.contains("sessions.max_processes_per_tenant = 4"), "{e}");
        assert!(two.charge(1).await.is_ok());
        assert_eq!(sweep(&one.scope), 3);
        for mut child in children {
            assert!(child.wait().is_ok());
        }
        assert!(
            one.charge(3).await.is_ok(),
            "ended processes are not counted"
        );
    }
}
