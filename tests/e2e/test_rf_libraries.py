"""Real Robot Framework libraries run by the host (`[plugins.grants.rf.rf_libraries]`):
`Import Library` of a library the sandbox does not run starts a Python process in the
operator's environment, and an RF batch uses it as RF would. Checked from outside:
files that Process wrote are on disk, the pages RequestsLibrary fetched were served, the
processes a session started are gone when the session ends, another session cannot
reach a session's server, and a library that is not granted (or not installed) fails
the import naming what to configure.

The environment is this test's own venv (robotframework, robotframework-requests);
Process is RF's own standard library, RequestsLibrary a PyPI one, `Billing` a team
library written here onto the grant's `pythonpath`.
"""

import contextlib
import functools
import hashlib
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import BIN, HttpServer, config_file, host_with, http_session, wait_for
from conftest import rf_batch, rf_step as kw, step_error as error_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

PYTHON = sys.executable


def grant(*libraries, pythonpath=()):
    """A host config that lets rf start `libraries` with this venv's Python."""
    lines = '[plugins.grants.rf]\nhttp = ["loopback:*"]\n\n[plugins.grants.rf.rf_libraries]\n'
    lines += f'python = "{PYTHON}"\nlibraries = [{", ".join(f"{chr(34)}{n}{chr(34)}" for n in libraries)}]\n'
    if pythonpath:
        lines += f'pythonpath = [{", ".join(f"{chr(34)}{p}{chr(34)}" for p in pythonpath)}]\n'
    return lines


async def batch(s, steps, session="libs"):
    return await rf_batch(s, steps, session)


def children(pid):
    """Every descendant process of `pid` (from /proc)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = (task / "children").read_text().split()
            except OSError:
                continue
            for k in kids:
                found.append(int(k))
                todo.append(int(k))
    return found


def alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def library_servers(host_pid):
    """(pid, port, token) of each library server under the host process."""
    servers = []
    for pid in children(host_pid):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        token = next((e.split(b"=", 1)[1].decode() for e in environ if e.startswith(b"STEPHOST_RF_TOKEN=")), None)
        if token is None:
            continue
        inodes = set()
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            with contextlib.suppress(OSError):
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                servers.append((pid, int(fields[1].split(":")[1], 16), token))
    return servers


async def test_process_runs_for_real_and_its_files_land_on_disk(tmp_path):
    work = Path(os.path.realpath(tmp_path))
    async with host_with(grant("Process")) as s:
        out = await batch(s, [
            kw("Import Library", "Process"),
            kw("Run Process", PYTHON, "-c", "open('made.txt', 'w').write('by RF Process')", f"cwd={work}", assign="made"),
            kw("Should Be Equal As Integers", "${made.rc}", "0"),
            kw("Run Process", "echo", "hello from a real process", assign="echo"),
            kw("Should Be Equal", "${echo.stdout}", "hello from a real process"),
            kw("Run Process", PYTHON, "-c", "import sys; sys.exit(3)", assign="failed"),
            kw("Should Be Equal As Integers", "${failed.rc}", "3"),
        ])
        assert out["status"] == "PASS", out
        assert out["steps"][3]["return_value"]["stdout"] == "hello from a real process", out["steps"][3]
    assert (work / "made.txt").read_text() == "by RF Process"


async def test_what_a_session_started_ends_with_the_session():
    # Sessions unused for 3 s are dropped, with their plugin instances.
    config = grant("Process") + "\n[sessions]\nidle_timeout_s = 3\n"
    with HttpServer(config=config) as server:
        async with http_session(server.url) as s:
            out = await batch(s, [
                kw("Import Library", "Process"),
                kw("Start Process", "sleep", "300", "alias=sleeper"),
                kw("Get Process Id", "sleeper", assign="pid"),
                kw("Process Should Be Running", "sleeper"),
            ])
            assert out["status"] == "PASS", out
            pid = int(out["steps"][2]["return_value"])
            assert alive(pid)
            servers = library_servers(server.pid)
            assert len(servers) == 1, servers
            # The same session reuses its server; a second import starts nothing new.
            out = await batch(s, [kw("Import Library", "Process"), kw("Process Should Be Running", "sleeper")])
            assert out["status"] == "PASS", out
            assert library_servers(server.pid) == servers
            # `sleep` runs in a session of its own (RF's Process starts it so), out
            # of the server's process group: ending it is the server's job.
            assert os.getsid(pid) == pid
            wait_for(lambda: not alive(pid) and not library_servers(server.pid), timeout=30,
                     what="the idle session's processes to end")
        assert server.proc.poll() is None


async def test_what_a_host_started_ends_with_the_host():
    async with host_with(grant("Process")) as s:
        out = await batch(s, [
            kw("Import Library", "Process"),
            kw("Start Process", "sleep", "300", "alias=sleeper"),
            kw("Get Process Id", "sleeper", assign="pid"),
        ])
        assert out["status"] == "PASS", out
        pid = int(out["steps"][2]["return_value"])
        assert alive(pid)
    # The stdio host has exited: its library server and the `sleep` went with it.
    wait_for(lambda: not alive(pid), timeout=30, what="the library's process to end with the host")


async def test_requests_library_fetches_from_a_local_site(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "hello.txt").write_text("served by http.server")
    seen = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_request(self, code="-", size="-"):
            seen.append(self.path)

        def log_message(self, fmt, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_port}"
    try:
        async with host_with(grant("RequestsLibrary")) as s:
            out = await batch(s, [
                kw("Import Library", "RequestsLibrary"),
                kw("GET", f"{base}/hello.txt", assign="resp"),
                kw("Should Be Equal", "${resp.text}", "served by http.server"),
                kw("Should Be Equal As Integers", "${resp.status_code}", "200"),
                kw("Create Session", "site", base),
                kw("GET On Session", "site", "/hello.txt", assign="again"),
                kw("GET On Session", "site", "/missing.txt", "expected_status=404"),
                kw("GET On Session", "site", "/missing.txt"),
            ])
    finally:
        httpd.shutdown()
    steps = out["steps"]
    assert [st["status"] for st in steps[:7]] == ["PASS"] * 7, steps
    assert steps[5]["return_value"]["text"] == "served by http.server"
    assert steps[7]["status"] == "FAIL"
    assert "404 Client Error" in error_of(steps[7]), steps[7]
    # Each request reached the site (the failing one once per attempt).
    assert seen.count("/hello.txt") == 2, seen
    assert seen.count("/missing.txt") == 1 + steps[7]["attempts"], (seen, steps[7])


BILLING = '''
from robot.api import logger
from robot.api.deco import keyword, library


@library(scope="GLOBAL", auto_keywords=True)
class Billing:
    """A team's own library."""

    def __init__(self, currency="EUR"):
        self.currency = currency
        self.lines = []

    def add_line(self, item, amount: int):
        """Adds a line to the bill."""
        self.lines.append((item, amount))
        logger.info(f"added {item}")
        logger.warn("amounts are integers")
        print("printed to stdout")
        return len(self.lines)

    def total(self):
        return f"{sum(a for _, a in self.lines)} {self.currency}"

    def crash(self):
        import os

        os._exit(3)

    @keyword("Bill Should Have ${count} Lines")
    def bill_should_have(self, count):
        if len(self.lines) != int(count):
            raise AssertionError(f"bill has {len(self.lines)} lines, not {count}")
'''


async def test_a_team_library_on_the_pythonpath(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "Billing.py").write_text(BILLING)
    async with host_with(grant("Billing", pythonpath=[libs])) as s:
        out = await batch(s, [
            kw("Import Library", "Billing", "currency=GBP"),
            kw("Add Line", "tea", "3", assign="n"),
            kw("Billing.Add Line", "scones", "4"),
            kw("Total", assign="total"),
            kw("Bill Should Have 2 Lines"),
        ])
        assert out["status"] == "PASS", out
        steps = out["steps"]
        assert steps[1]["return_value"] == 1
        assert steps[3]["return_value"] == "7 GBP"
        # Listed like any library's keywords; the server's URL, whose path is
        # the session's secret, is not shown.
        listing = await s.call_tool("batch", {"session_id": "libs", "steps": [
            {"plugin": "rf", "verb": "keywords", "input": {"library": "Billing"}}]})
        assert not listing.isError, listing.content
        listed = listing.structuredContent["steps"][0]["value"]
        assert {k["name"] for k in listed} == {"Add Line", "Total", "Crash", "Bill Should Have ${count} Lines"}, listed
        assert all(k.get("hosted") is True and "remote" not in k for k in listed), listed
        assert "127.0.0.1" not in str(listing.content) + str(listing.structuredContent)
        out = await batch(s, [kw("Add Line", "cake", "lots")], session="conv")
        assert out["status"] == "FAIL"
        # Not imported in this session: RF's not-found, not the other session's library.
        assert "No keyword with name 'Add Line' found" in error_of(out["steps"][0]), out
        out = await batch(s, [
            kw("Import Library", "Billing"),
            kw("Add Line", "cake", "lots"),
        ], session="conv")
        assert error_of(out["steps"][1]).endswith(
            ": ValueError: Argument 'amount' got value 'lots' that cannot be converted to integer."
        ), out["steps"][1]
        out = await batch(s, [kw("Import Library", "Billing"), kw("Bill Should Have 5 Lines")], session="conv2")
        assert error_of(out["steps"][1]).endswith(": bill has 0 lines, not 5"), out["steps"][1]
        # A library process that dies fails the calls that need it; importing the
        # library again starts a new one, and the session goes on.
        out = await batch(s, [kw("Crash"), kw("Total")], session="conv2")
        assert out["steps"][0]["status"] == "FAIL", out
        assert "`Import Library` of it again starts a new one" in error_of(out["steps"][0]), out["steps"][0]
        out = await batch(s, [kw("Import Library", "Billing"), kw("Add Line", "tea", "2"), kw("Total", assign="t")],
                          session="conv2")
        assert out["status"] == "PASS", out
        assert out["steps"][2]["return_value"] == "2 EUR", out["steps"][2]


async def test_imports_that_cannot_run_say_what_to_configure(tmp_path):
    async with host_with('[plugins.grants.rf]\nhttp = ["loopback:*"]\n') as s:
        out = await batch(s, [kw("Import Library", "Process")])
        message = error_of(out["steps"][0])
        assert out["status"] == "FAIL" and "[plugins.grants.rf.rf_libraries]" in message, out
        assert 'libraries = ["Process"]' in message, message
    async with host_with(grant("NoSuchLibrary", "Process")) as s:
        out = await batch(s, [kw("Import Library", "NoSuchLibrary")])
        message = error_of(out["steps"][0])
        assert (
            "Importing library 'NoSuchLibrary' failed: ModuleNotFoundError: No module named 'NoSuchLibrary'"
            in message
        ), message
        # An import fails the same way every time: it is not retried.
        assert out["steps"][0]["attempts"] == 1, out["steps"][0]
        out = await batch(s, [kw("Import Library", "RequestsLibrary")], session="other")
        assert "lists NoSuchLibrary, Process" in error_of(out["steps"][0]), out
    with config_file('[plugins.grants.rf.rf_libraries]\nlibraries = ["Process"]\n') as path:
        proc = subprocess.run([BIN, "--config", path, "plugins"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "[plugins.grants.rf.rf_libraries]" in proc.stderr and "python" in proc.stderr, proc.stderr


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


async def test_sessions_and_tenants_cannot_reach_each_others_servers():
    tenants = f"""
[[tenants]]
id = "acme"
token_sha256 = ["{sha('acme-secret')}"]
[tenants.grants.rf]
http = ["loopback:*"]
[tenants.grants.rf.rf_libraries]
libraries = ["Process", "RequestsLibrary"]

[[tenants]]
id = "globex"
token_sha256 = ["{sha('globex-secret')}"]
[tenants.grants.rf]
http = ["loopback:*"]
[tenants.grants.rf.rf_libraries]
libraries = ["RequestsLibrary"]
"""
    with config_file(tenants) as tenants_path:
        with HttpServer(config=grant("Process"), serve_args=["--tenants", tenants_path]) as server:
            async with http_session(server.url, "acme-secret") as a:
                out = await batch(a, [kw("Import Library", "Process"), kw("Run Process", "true")])
                assert out["status"] == "PASS", out
                [(_, port, token)] = library_servers(server.pid)
                url = f"http://127.0.0.1:{port}/{token}"
                # Even knowing the URL, another session of the same tenant is refused...
                out = await batch(a, [kw("Import Library", "Remote", url)], session="second")
                assert out["status"] == "FAIL", out
                assert "denied" in str(out["steps"][0]).lower() or "refused" in error_of(out["steps"][0]), out
                async with http_session(server.url, "globex-secret") as g:
                    # ... and so is another tenant, and one whose grant lacks the library.
                    out = await batch(g, [kw("Import Library", "Remote", url)])
                    assert out["status"] == "FAIL", out
                    out = await batch(g, [kw("Import Library", "Process")], session="p")
                    message = error_of(out["steps"][0])
                    assert "not enabled for this session" in message and "lists none" in message, message
                    # The host grants only Process: the tenant's RequestsLibrary is not in both.
                    out = await batch(g, [kw("Import Library", "RequestsLibrary")], session="r")
                    assert "not enabled for this session" in error_of(out["steps"][0]), out


STATIC_VARS = '''
NAME = "from a file"
NUMBER = 42
LIST__items = ["a", "b"]
DICT__conf = {"host": "db", "port": 5432}
_hidden = "not a variable"
'''

DYNAMIC_VARS = '''
def get_variables(env="dev", port=80):
    return {"ENV": env, "URL": f"https://{env}.example:{port}"}
'''


def real_rf_failure(tmp_path, statement):
    """The message real Robot Framework fails `statement` with."""
    from robot.api import ExecutionResult

    suite = tmp_path / "check.robot"
    suite.write_text(f"*** Test Cases ***\nT\n    {statement}\n")
    out = tmp_path / "check.xml"
    subprocess.run(
        [PYTHON, "-m", "robot", "--output", out, "--log", "NONE", "--report", "NONE", suite],
        capture_output=True, timeout=120,
    )
    [test] = ExecutionResult(str(out)).suite.tests
    assert test.status == "FAIL", statement
    return test.message


async def test_variable_files_are_read_by_robot_framework(tmp_path):
    shared = Path(os.path.realpath(tmp_path)) / "shared"
    work = Path(os.path.realpath(tmp_path)) / "work"
    shared.mkdir()
    work.mkdir()
    (shared / "static.py").write_text(STATIC_VARS)
    (shared / "dynamic.py").write_text(DYNAMIC_VARS)
    (shared / "env.yaml").write_text("db:\n  host: yaml-db\n  ports: [1, 2]\nflag: true\n")
    (shared / "env.json").write_text('{"token": "abc", "nested": {"k": null}}')
    (shared / "list.json").write_text("[1, 2]")
    (work / "mine.py").write_text("SECRET = __import__('os').getuid()\n")
    (work / "mine.yaml").write_text("written: here\n")
    config = (
        '[plugins.grants.rf]\nhttp = ["loopback:*"]\n'
        f'folders = [{{ path = "{shared}" }}, {{ path = "{work}", read_only = false }}]\n\n'
        f'[plugins.grants.rf.rf_libraries]\npython = "{PYTHON}"\n'
    )
    async with host_with(config) as s:
        out = await batch(s, [
            kw("Import Variables", f"{shared}/static.py"),
            kw("Should Be Equal", "${NAME}", "from a file"),
            kw("Should Be Equal", "${NUMBER}", "${42}"),
            kw("Should Be Equal", "${items}[1]", "b"),
            kw("Should Be Equal", "${conf.host}", "db"),
            kw("Variable Should Not Exist", "${_hidden}"),
            kw("Import Variables", f"{shared}/dynamic.py", "prod", "8443"),
            kw("Should Be Equal", "${URL}", "https://prod.example:8443"),
            kw("Import Variables", f"{shared}/env.yaml"),
            kw("Should Be Equal", "${db.host}", "yaml-db"),
            kw("Should Be Equal", "${db.ports}[1]", "${2}"),
            kw("Should Be True", "${flag}"),
            kw("Import Variables", f"{shared}/env.json"),
            kw("Should Be Equal", "${nested.k}", "${None}"),
            # YAML from the writable folder is data, so it is read too.
            kw("Import Variables", f"{work}/mine.yaml"),
            kw("Should Be Equal", "${written}", "here"),
        ])
        assert out["status"] == "PASS", out

        async def failure(*arguments):
            out = await batch(s, [kw("Import Variables", *arguments)], session="bad")
            assert out["status"] == "FAIL", out
            # A file fails the same way every time: it is not read again.
            assert out["steps"][0]["attempts"] == 1, out["steps"][0]
            return error_of(out["steps"][0])

        # Robot Framework's own messages, as real RF gives them for the same files.
        for arguments in [
            (f"{shared}/list.json",),
            (f"{shared}/env.json", "arg"),
            (f"{shared}/dynamic.py", "a", "b", "c"),
            (f"{shared}/static.py", "arg"),
            (f"{shared}/missing.py",),
        ]:
            expected = real_rf_failure(tmp_path, "Import Variables    " + "    ".join(arguments))
            assert (await failure(*arguments)).endswith(": " + expected), (arguments, expected)
        # A Python file in a writable folder is code the session could have written.
        message = await failure(f"{work}/mine.py")
        assert "read_only = true" in message and "SECRET" not in message, message
        message = await failure("/etc/hostname")
        assert "outside the folders granted" in message and "folders" in message, message
        # A symbolic link out of a granted folder is judged by where it leads.
        (work / "link.yaml").symlink_to("/etc/hostname")
        assert "outside the folders granted" in await failure(f"{work}/link.yaml")
    async with host_with('[plugins.grants.rf]\nhttp = ["loopback:*"]\n') as s:
        out = await batch(s, [kw("Import Variables", f"{shared}/env.yaml")])
        message = error_of(out["steps"][0])
        assert "[plugins.grants.rf.rf_libraries]" in message and "python" in message, message
