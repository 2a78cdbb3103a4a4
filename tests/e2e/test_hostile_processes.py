"""Processes outlive their session (issue 39, finding 7): every process a session
makes the host run, by any route, ends with the session and with the host, and
how many a session and a tenant may have live is capped before one starts.

A hostile tenant (`mallory`) is granted real Robot Framework libraries run by the
host (`[plugins.grants.rf.rf_libraries]`): RF's `Process`, `Daemon` (a small library
this test writes, whose keyword double-forks a grandchild that calls setsid() and
sleeps: out of the library's process group and session, re-parented away from it,
as Chromium's crash handler, chromedriver and daemons are) and SeleniumLibrary (a
real headless Chromium). A victim tenant (`victor`) runs its own processes on the
same host, which must live on, and its calls must keep working.

Checked from outside, in /proc: every process carrying the test's marker in its
command line, and the host's children (no zombies left for it to reap).
"""

import asyncio
import contextlib
import hashlib
import os
import secrets
import shutil
import signal
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import HttpServer, raw_session, session_call, session_headers, wait_for
from conftest import step_error as error_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

PYTHON = sys.executable
M_TOKEN = "mallory-" + secrets.token_hex(16)
V_TOKEN = "victor-" + secrets.token_hex(16)

DAEMON = r'''
import os
import sys


class Daemon:
    """Leaves processes behind, as a browser does."""

    ROBOT_LIBRARY_SCOPE = "GLOBAL"

    def spawn_daemon(self, marker, keep_environment=True):
        """Double-forks: the grandchild calls setsid() (a process group and session
        of its own), its parent exits (so it is re-parented), and it sleeps with
        `marker` in its command line; without `keep_environment` it also drops
        its environment. Returns the grandchild's pid."""
        keep = str(keep_environment).lower() not in ("false", "0", "no")
        r, w = os.pipe()
        first = os.fork()
        if first == 0:
            try:
                os.close(r)
                os.setsid()
                second = os.fork()
                if second == 0:
                    env = dict(os.environ) if keep else {}
                    code = "import time\nwhile True: time.sleep(60)"
                    os.execve(sys.executable, [sys.executable, "-c", code, marker], env)
                os.write(w, str(second).encode())
            finally:
                os._exit(0)
        os.close(w)
        os.waitpid(first, 0)
        pid = int(os.read(r, 32) or b"0")
        os.close(r)
        return pid
'''

# What `Start Process` runs to leave a daemon behind the same way (no `=` in it:
# Robot Framework would take the argument for a named one).
DAEMONIZE = (
    "import os, sys, time\n"
    "if not os.fork():\n"
    "    os.setsid()\n"
    "    if not os.fork():\n"
    "        while True: time.sleep(60)\n"
    "os._exit(0)\n"
)
SLEEP = "import time; time.sleep(3600)"


@pytest.fixture
def markers():
    """Makes marker strings for a test; at teardown, whatever still carries one
    is killed (a failing run must not leave its daemons behind)."""
    made = []

    def make(prefix):
        made.append(f"{prefix}-{secrets.token_hex(6)}")
        return made[-1]

    yield make
    for marker in made:
        for pid in marked(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


def tenants(libraries):
    text = ""
    for name, token in (("mallory", M_TOKEN), ("victor", V_TOKEN)):
        text += f"""
[[tenants]]
id = "{name}"
token_sha256 = ["{sha(token)}"]
[tenants.grants.rf]
http = ["loopback:*"]
[tenants.grants.rf.rf_libraries]
libraries = [{", ".join(f'"{n}"' for n in libraries)}]
"""
    return text


@contextlib.contextmanager
def hostile_host(tmp_path, extra="", libraries=("Process", "Daemon")):
    """`serve --http` with tenants mallory and victor, both granted `libraries`."""
    libs = tmp_path / "libs"
    libs.mkdir(exist_ok=True)
    (libs / "Daemon.py").write_text(DAEMON)
    listed = ", ".join(f'"{n}"' for n in libraries)
    config = (
        '[plugins.grants.rf]\nhttp = ["loopback:*"]\n\n[plugins.grants.rf.rf_libraries]\n'
        f'python = "{PYTHON}"\nlibraries = [{listed}]\npythonpath = ["{libs}"]\n' + extra
    )
    path = tmp_path / "tenants.toml"
    path.write_text(tenants(libraries))
    with HttpServer(config=config, serve_args=["--tenants", str(path)]) as server:
        yield server


def cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def state(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def alive(pid):
    return state(pid) not in (None, "Z", "X")


def marked(marker):
    """Live processes whose command line holds `marker`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and marker.encode() in cmdline(entry.name) and alive(entry.name):
            found.add(int(entry.name))
    return found


def zombies_of(pid):
    """The children of `pid` that exited and nobody waited for."""
    kids = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            kids.update(int(k) for k in (task / "children").read_text().split())
    return {k for k in kids if state(k) == "Z"}


async def until(predicate, timeout, what, meanwhile=None):
    """Like `wait_for`, without blocking the event loop; `meanwhile()` (a
    coroutine function) runs about every second while it waits."""
    deadline = time.monotonic() + timeout
    last = 0.0
    while time.monotonic() < deadline:
        if predicate():
            return
        if meanwhile is not None and time.monotonic() - last >= 1:
            last = time.monotonic()
            await meanwhile()
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def kw(keyword, *arguments):
    """A `batch` step running Robot Framework keyword `keyword`."""
    return {"plugin": "rf", "verb": "run_keyword", "input": {"keyword": keyword, "args": [str(a) for a in arguments]}}


async def call(client, server, token, transport, steps, session_id=None, timeout=120):
    """`batch` inside a transport session (in its host session, which ends with
    the transport, unless `session_id` names another); the structured result."""
    args = {"steps": steps}
    if session_id is not None:
        args["session_id"] = session_id
    r = await session_call(client, server.url, "batch", args, token, transport, timeout=timeout)
    assert r.status == 200 and r.result and "steps" in r.structured, r
    return r.structured


def leave_behind(marker):
    """Steps that leave four processes marked `marker` behind, each out of the
    library server's group and session: two double-forked by a library's own
    keyword (one keeping its environment, one dropping it), one double-forked by
    a process `Start Process` ran (which then exited), and one `Start Process`
    child that simply keeps running."""
    return [
        kw("Import Library", "Daemon"),
        kw("Spawn Daemon", marker),
        kw("Spawn Daemon", marker, "keep_environment=False"),
        kw("Import Library", "Process"),
        # Its output goes nowhere: the daemon keeps what it inherited open, and
        # Wait For Process would read a pipe to its end.
        kw("Start Process", PYTHON, "-c", DAEMONIZE, marker, "alias=forker", "stdout=DEVNULL", "stderr=DEVNULL"),
        kw("Wait For Process", "forker", "timeout=20"),
        kw("Start Process", PYTHON, "-c", SLEEP, marker, "alias=sleeper"),
        kw("Get Process Id", "sleeper"),
    ]


def escaped(server, out, marker):
    """The marked processes after `leave_behind`, checked to have left the
    session of the host and its library servers, and their process groups."""
    failed = [(st["index"], st.get("error")) for st in out["steps"] if st["status"] != "passed"]
    assert out["status"] == "passed", failed
    pids = wait_for(lambda: (lambda m: m if len(m) == 4 else None)(marked(marker)), timeout=30,
                    what=f"four processes marked {marker}")
    for pid in pids:
        assert os.getsid(pid) != os.getsid(server.pid) and os.getpgid(pid) == os.getsid(pid), (
            f"{pid} did not leave: {cmdline(pid)}"
        )
    for step in (1, 2):
        assert int(out["steps"][step]["value"]) in pids, (out["steps"][step], pids)
    return pids


async def victim_works(client, server, transport, marker, victims):
    """The victim's processes are all alive and its session still works."""
    assert {p for p in victims if alive(p)} == victims, "a victim's process was killed"
    out = await call(client, server, V_TOKEN, transport, [
        kw("Process Should Be Running", "sleeper"),
        kw("Spawn Daemon", marker + "-later"),
    ])
    assert out["status"] == "passed", out


@pytest.mark.parametrize("ending", ["delete", "idle"])
async def test_what_a_session_left_behind_ends_with_it(tmp_path, ending, markers):
    """Ended by the transport's DELETE, or dropped idle: every process of the
    hostile session goes, however it left, and the victim's stay."""
    mark_m, mark_v = markers("mallory"), markers("victor")
    extra = "\n[sessions]\nidle_timeout_s = 3\n" if ending == "idle" else ""
    with hostile_host(tmp_path, extra) as server:
        async with httpx.AsyncClient(timeout=180) as client:
            victor = await raw_session(client, server.url, V_TOKEN)
            victims = escaped(server, await call(client, server, V_TOKEN, victor, leave_behind(mark_v)), mark_v)
            mallory = await raw_session(client, server.url, M_TOKEN)
            named = "hostile" if ending == "idle" else None
            left = escaped(server, await call(client, server, M_TOKEN, mallory, leave_behind(mark_m), named), mark_m)
            assert left and not left & victims
            if ending == "delete":
                d = await client.delete(server.url, headers=session_headers(M_TOKEN, mallory))
                assert d.status_code in (200, 202, 204), (d.status_code, d.text)
            # Idle: the named session is dropped 3 s after its last use. The
            # victim keeps its own session busy meanwhile.
            await until(lambda: not marked(mark_m), 30,
                        f"the hostile session's processes to end ({sorted(marked(mark_m))} left)",
                        lambda: call(client, server, V_TOKEN, victor, [kw("Process Should Be Running", "sleeper")]))
            wait_for(lambda: not zombies_of(server.pid), timeout=10,
                     what=f"the host to reap its children ({zombies_of(server.pid)} are zombies)")
            await victim_works(client, server, victor, mark_v, victims)
        assert server.proc.poll() is None


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
async def test_what_sessions_left_behind_ends_with_the_host(tmp_path, how, markers):
    """The host killed outright (nothing of it runs after) or drained: every
    session's processes go, the double-forked ones included."""
    mark_m, mark_v = markers("mallory"), markers("victor")
    with hostile_host(tmp_path) as server:
        async with httpx.AsyncClient(timeout=180) as client:
            victor = await raw_session(client, server.url, V_TOKEN)
            escaped(server, await call(client, server, V_TOKEN, victor, leave_behind(mark_v)), mark_v)
            mallory = await raw_session(client, server.url, M_TOKEN)
            escaped(server, await call(client, server, M_TOKEN, mallory, leave_behind(mark_m), "kept"), mark_m)
        server.proc.send_signal(getattr(signal, how))
        server.proc.wait(timeout=60)
        left = lambda: marked(mark_m) | marked(mark_v)  # noqa: E731
        wait_for(lambda: not left(), timeout=30,
                 what=f"every session's processes to end with the host ({sorted(left())} left)")


async def test_live_processes_are_capped_per_session_and_tenant(tmp_path, markers):
    """`Start Process` in a loop (what a prompt-injected agent might send) stops at
    the session's cap, a second session of the tenant at the tenant's, each
    refusal naming its cap; the victim tenant is not affected, and ending a
    process makes room again."""
    mark = markers("capped")
    extra = "\n[sessions]\nmax_processes_per_session = 6\nmax_processes_per_tenant = 10\n"
    start = kw("Start Process", PYTHON, "-c", SLEEP, mark)
    with hostile_host(tmp_path, extra) as server:
        async with httpx.AsyncClient(timeout=180) as client:
            mallory = await raw_session(client, server.url, M_TOKEN)
            # The library server is two processes (its supervisor and itself).
            out = await call(client, server, M_TOKEN, mallory,
                             [kw("Import Library", "Process")] + [start] * 5, "one")
            steps = out["steps"]
            assert [s["status"] for s in steps] == ["passed"] * 5 + ["failed"], steps
            message = error_of(steps[5])
            assert "this session has 6 live processes" in message, message
            assert "sessions.max_processes_per_session = 6" in message, message
            assert len(marked(mark)) == 4
            out = await call(client, server, M_TOKEN, mallory,
                             [kw("Import Library", "Process")] + [start] * 3, "two")
            steps = out["steps"]
            assert [s["status"] for s in steps] == ["passed"] * 3 + ["failed"], steps
            message = error_of(steps[3])
            assert "tenant `mallory` has 10 live processes" in message, message
            assert "sessions.max_processes_per_tenant = 10" in message, message
            # Nothing of it reached the victim.
            victor = await raw_session(client, server.url, V_TOKEN)
            out = await call(client, server, V_TOKEN, victor, [kw("Import Library", "Process")] + [start] * 4)
            assert out["status"] == "passed", out
            # Ending one makes room for one.
            out = await call(client, server, M_TOKEN, mallory, [
                kw("Terminate Process"),
                start,
                start,
            ], "one")
            assert [s["status"] for s in out["steps"]] == ["passed", "passed", "failed"], out["steps"]
        # The host's processes ended with it (the SIGTERM of HttpServer's exit).
    wait_for(lambda: not marked(mark), timeout=30, what="the capped processes to end with the host")


def chromium_processes():
    """Chromium and chromedriver processes, by pid."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not alive(entry.name):
            continue
        with contextlib.suppress(OSError):
            exe = os.readlink(entry / "exe")
            if "chrom" in Path(exe).name:
                found.add(int(entry.name))
    return found


@pytest.mark.parametrize("ending", ["delete", "SIGKILL"])
async def test_selenium_library_browser_ends_with_the_session(tmp_path, ending, markers):
    """SeleniumLibrary's `Open Browser` starts chromedriver and a headless
    Chromium (whose crash handlers double-fork and leave the browser's session):
    all of it ends with the session (the transport's DELETE), and with the host
    (killed outright)."""
    try:
        import SeleniumLibrary  # noqa: F401
    except ImportError:
        pytest.skip("SeleniumLibrary is not installed in the test venv (pip install -r tests/requirements.txt)")
    chromium, driver = shutil.which("chromium") or "/usr/bin/chromium", shutil.which("chromedriver")
    if not (Path(chromium).exists() and driver):
        pytest.fail("missing chromium or chromedriver: run scripts/test.sh, which installs them")
    options = (
        'add_argument("--headless=new");add_argument("--no-sandbox");'
        f'add_argument("--disable-dev-shm-usage");binary_location="{chromium}"'
    )
    before = chromium_processes()
    mark_v = markers("victor")
    with hostile_host(tmp_path, libraries=("SeleniumLibrary", "Process", "Daemon")) as server:
        async with httpx.AsyncClient(timeout=180) as client:
            victor = await raw_session(client, server.url, V_TOKEN)
            victims = escaped(server, await call(client, server, V_TOKEN, victor, leave_behind(mark_v)), mark_v)
            mallory = await raw_session(client, server.url, M_TOKEN)
            out = await call(client, server, M_TOKEN, mallory, [
                kw("Import Library", "SeleniumLibrary"),
                kw("Open Browser", "data:text/html,<title>left open</title>", "chrome",
                   f"options={options}", f"executable_path={driver}"),
                kw("Title Should Be", "left open"),
            ], timeout=180)
            assert out["status"] == "passed", out
            browser = chromium_processes() - before
            assert len(browser) >= 3, f"chromedriver and Chromium should run: {browser}"
            if ending == "delete":
                d = await client.delete(server.url, headers=session_headers(M_TOKEN, mallory))
                assert d.status_code in (200, 202, 204), (d.status_code, d.text)
            else:
                server.proc.kill()
                server.proc.wait(timeout=30)
            try:
                wait_for(lambda: not (chromium_processes() & browser), timeout=30,
                         what=f"the browser to end ({sorted(chromium_processes() & browser)} left)")
            finally:
                for pid in chromium_processes() & browser:
                    os.kill(pid, signal.SIGKILL)
            if ending == "delete":
                wait_for(lambda: not zombies_of(server.pid), timeout=10, what="the host to reap its children")
                await victim_works(client, server, victor, mark_v, victims)
    wait_for(lambda: not marked(mark_v), timeout=30, what="the victim's processes to end with the host")
