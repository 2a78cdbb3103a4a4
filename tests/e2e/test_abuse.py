"""Abuse suite (issue 11): what one hostile tenant, or a hostile peer on the
network, must not be able to do to a shared `stephost serve --http`.

Each test attacks one weakness found in review and asserts the intended
behaviour; in every attack test a second tenant's ordinary call must succeed
while the attack runs and after it. Tenant `alpha` (token A) is the attacker,
`beta` (token B) the bystander; `/metrics` is read with the operator token M.

Stateless 2026-07-28 calls are raw POSTs (`conftest.stateless_call`); 2025-11-25
sessions use the MCP SDK or raw POSTs inside a transport session. Every wait is
bounded; every server is killed in teardown.
"""

import asyncio
import contextlib
import hashlib
import json
import queue
import re
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

import anyio
import httpx
import pytest

from conftest import (
    BIN,
    INITIALIZE,
    ROOT,
    WITH_TESTKIT,
    HttpServer,
    RawResult,
    http_session_with_id,
    raw_session,
    server_env,
    session_call,
    session_headers,
    stateless_call,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

MIB = 1024 * 1024


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


A_TOKEN = "alpha-" + secrets.token_hex(16)
B_TOKEN = "beta-" + secrets.token_hex(16)
METRICS_TOKEN = "operator-" + secrets.token_hex(16)

TENANTS = f"""
[[tenants]]
id = "alpha"
token_sha256 = ["{sha(A_TOKEN)}"]

[[tenants]]
id = "beta"
token_sha256 = ["{sha(B_TOKEN)}"]
"""


@contextlib.contextmanager
def tenant_server(server="", config="", tenants=TENANTS, env=None, metrics_token=True, args=()):
    """`serve --http 127.0.0.1:0 --tenants FILE` with tenants alpha and beta.
    `server` holds extra lines of the `[server]` table, `config` further tables."""
    server_table = "[server]\n"
    if metrics_token:
        server_table += f'metrics_token_sha256 = "{sha(METRICS_TOKEN)}"\n'
    server_table += server
    with tempfile.TemporaryDirectory(prefix="stephost-abuse-") as tmp:
        path = Path(tmp) / "tenants.toml"
        path.write_text(tenants)
        with HttpServer(*args, config=server_table + "\n" + config, serve_args=["--tenants", str(path), *WITH_TESTKIT], env=env) as s:
            yield s


def call_text(result):
    """Everything a tool result says, as one string (texts and structured content)."""
    if isinstance(result, RawResult):
        body = result.result or {}
        texts = [c.get("text", "") for c in body.get("content") or [] if isinstance(c, dict)]
        return " ".join(texts) + " " + json.dumps(body.get("structuredContent")) + " " + json.dumps(result.message)
    texts = [getattr(c, "text", "") or "" for c in result.content]
    return " ".join(texts) + " " + json.dumps(result.structuredContent)


async def b_call(url, local_address=None):
    """Tenant beta's ordinary call: a 2025-11-25 session, one `testkit_echo`."""
    value = f"beta-{secrets.token_hex(6)}"
    with anyio.fail_after(45):
        async with http_session_with_id(url, B_TOKEN, local_address=local_address) as (b, _):
            r = await b.call_tool("testkit_echo", {"value": value}, read_timeout_seconds=timedelta(seconds=30))
    assert not r.isError, f"tenant beta's ordinary call failed: {call_text(r)[:800]}"
    assert r.structuredContent["value"] == value


async def b_calls_while(task, url, limit=20, pause=0.3, local_address=None):
    """Beta's ordinary calls, again and again while `task` (the attack) runs;
    at least one. Returns how many ran."""
    n = 0
    while n == 0 or (not task.done() and n < limit):
        await b_call(url, local_address)
        n += 1
        await asyncio.sleep(pause)
    return n


def proc_status(pid):
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def reset_peak_rss(pid):
    """Resets VmHWM to the current RSS (Linux `clear_refs` 5), where allowed."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def metrics_text(server, token=METRICS_TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    r = httpx.get(server.base + "/metrics", headers=headers, timeout=10)
    assert r.status_code == 200, (r.status_code, r.text[:300])
    return r.text


def live_sessions(server, tenant):
    m = re.search(
        r'^stephost_live_sessions\{[^}]*tenant="' + re.escape(tenant) + r'"[^}]*\}\s+([0-9.e+]+)\s*$',
        metrics_text(server),
        re.M,
    )
    return int(float(m.group(1))) if m else 0


def echo(value):
    return {"plugin": "testkit", "verb": "echo", "input": {"value": value}}


def sleep_step(ms):
    return {"plugin": "testkit", "verb": "sleep", "input": {"ms": ms}}


# --------------------------------------------------------------------------------------
# 1. Reference expansion is bounded by limits.max_input_bytes
# --------------------------------------------------------------------------------------

KIB_STRING = "x" * 1024

EXPANSIONS = {
    # ~40 KB of request; unbounded, step 3 would be 4 MiB x 64 = 256 MiB. (Step 2
    # splices 4,096 references, not 8,192: an 8 MiB value plus its 8 MiB text
    # item is past limits.max_result_bytes = 16 MiB, so step 2 itself would fail
    # with result-too-large on any host and step 3 would never run.)
    "spliced-strings": [echo(KIB_STRING), echo("${STEP_1}" * 4096), echo("${STEP_2}" * 64)],
    # Whole references: 1 MiB of array, then 64 MiB.
    "arrays-of-references": [echo(KIB_STRING), echo(["${STEP_1}"] * 1024), echo(["${STEP_2}"] * 64)],
}


@pytest.mark.timeout(150)
@pytest.mark.parametrize("shape", list(EXPANSIONS))
async def test_reference_expansion_is_bounded(shape):
    steps = EXPANSIONS[shape]
    assert len(json.dumps({"steps": steps})) < 100_000
    with tenant_server() as server:
        await b_call(server.url)  # warm up: plugins instantiated, pages touched
        async with http_session_with_id(server.url, A_TOKEN) as (a, _):
            await a.call_tool("testkit_echo", {"value": 1})
            await asyncio.sleep(0.5)
            idle = proc_status(server.pid)["VmRSS"]
            reset_peak_rss(server.pid)

            async def attack():
                with anyio.fail_after(100):
                    return await a.call_tool("batch", {"steps": steps}, read_timeout_seconds=timedelta(seconds=90))

            task = asyncio.create_task(attack())
            try:
                await b_calls_while(task, server.url)
                r = await task
            finally:
                task.cancel()
            peak = proc_status(server.pid)["VmHWM"]
        assert server.proc.poll() is None, "the server died"
        report = r.structuredContent
        assert report["steps"][0]["status"] == "passed", report["steps"][0]
        assert report["steps"][0]["value"] == KIB_STRING, "step 1's result is kept"
        assert report["steps"][1]["status"] == "passed", report["steps"][1].get("error")
        failing = next((s for s in report["steps"] if s["status"] != "passed"), None)
        assert failing is not None, f"some step must fail: {call_text(r)[:600]}"
        assert failing["error"]["code"] == "input-too-large", failing["error"]
        assert "limits.max_input_bytes" in failing["error"]["message"], failing["error"]
        growth = peak - idle
        print(f"{shape}: idle RSS {idle / MIB:.0f} MiB, peak {peak / MIB:.0f} MiB")
        assert growth < 256 * MIB, f"peak RSS grew by {growth / MIB:.0f} MiB"
        await b_call(server.url)


# --------------------------------------------------------------------------------------
# 2. Stateless calls never exhaust sessions
# --------------------------------------------------------------------------------------


@pytest.mark.timeout(180)
async def test_stateless_calls_do_not_exhaust_sessions():
    calls, concurrency = 1000, 16
    cap = 100 // 2  # sessions.max_sessions shared evenly by the two tenants
    with tenant_server(config="[sessions]\nmax_sessions = 100\n") as server:
        failures, peaks = [], []
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=60) as client:
            gate = asyncio.Semaphore(concurrency)

            async def one(i):
                async with gate:
                    r = await stateless_call(client, server.url, "testkit_echo", {"value": i}, A_TOKEN, request_id=i + 1)
                ok = r.status == 200 and r.result and not r.result.get("isError") and r.structured.get("value") == i
                if not ok:
                    failures.append(r)

            async def attack():
                with anyio.fail_after(150):
                    for start in range(0, calls, 100):
                        await asyncio.gather(*(one(i) for i in range(start, start + 100)))
                        peaks.append(await asyncio.to_thread(live_sessions, server, "alpha"))

            task = asyncio.create_task(attack())
            try:
                await b_calls_while(task, server.url, limit=40)
                await task
            finally:
                task.cancel()
            await b_call(server.url)
            after = await stateless_call(client, server.url, "testkit_echo", {"value": "next"}, A_TOKEN, request_id=9999)
        assert not failures, f"{len(failures)} of alpha's {calls} stateless calls failed, e.g. {failures[0]!r}"
        assert after.status == 200 and not after.result.get("isError"), after
        assert after.structured.get("value") == "next", after
        assert peaks and max(peaks) <= cap, f"alpha's live sessions per 100 calls: {peaks} (cap {cap})"
        assert live_sessions(server, "alpha") <= cap


# --------------------------------------------------------------------------------------
# 3. SIGTERM drains batches in flight
# --------------------------------------------------------------------------------------


async def drain_run(drain_s, steps, sigterm_after_s):
    """Runs `steps` as alpha in a 2025-11-25 session, SIGTERMs the server after
    `sigterm_after_s` and sends a new request (a fresh connection) while it
    drains. Returns (the batch's result, the new request's response or None,
    seconds from SIGTERM to the result, seconds from SIGTERM to the exit or None)."""
    with tenant_server(server=f"drain_timeout_s = {drain_s}\n") as server:
        async with http_session_with_id(server.url, A_TOKEN) as (a, _):
            # The SDK lists the tools (for their output schemas) before it hands
            # back a result; do it now, as that request would get 503 after SIGTERM.
            await a.list_tools()
            task = asyncio.create_task(
                a.call_tool("batch", {"steps": steps}, read_timeout_seconds=timedelta(seconds=drain_s + 25))
            )
            await asyncio.sleep(sigterm_after_s)
            assert not task.done(), "the batch must still be running at SIGTERM"
            server.proc.send_signal(signal.SIGTERM)
            sigterm = time.monotonic()
            await asyncio.sleep(0.3)
            late = None
            async with httpx.AsyncClient(timeout=10) as fresh:
                with contextlib.suppress(httpx.TransportError):
                    late = await fresh.post(server.url, headers=session_headers(B_TOKEN), json=INITIALIZE)
                    # A proxy's health check takes the draining instance out of rotation.
                    health = await fresh.get(server.base + "/healthz")
                    late.health_status = health.status_code
            try:
                with anyio.fail_after(drain_s + 30):
                    result = await task
            except BaseException as e:  # noqa: BLE001 - the old host never answers
                task.cancel()
                raise AssertionError(f"the batch's result never arrived after SIGTERM: {type(e).__name__}: {e}") from e
            delivered = time.monotonic() - sigterm
            try:
                await asyncio.to_thread(server.proc.wait, drain_s + 15)
                exited = time.monotonic() - sigterm
            except subprocess.TimeoutExpired:
                exited = None
        return result, late, delivered, exited


@pytest.mark.timeout(90)
async def test_sigterm_drains_a_batch_in_flight():
    drain_s = 10
    result, late, delivered, exited = await drain_run(drain_s, [echo("before"), sleep_step(3000)], 1.0)
    report = result.structuredContent
    assert report and report["status"] == "passed", call_text(result)[:600]
    assert report["steps"][1]["value"] == {"slept_ms": 3000}
    assert late is not None, "a request sent while draining got no HTTP answer"
    assert late.status_code == 503, (late.status_code, late.text[:300])
    assert "retry-after" in late.headers, dict(late.headers)
    assert getattr(late, "health_status", None) == 503, "/healthz must fail while draining"
    assert exited is not None and exited <= drain_s + 10, f"exit {exited} s after SIGTERM"


@pytest.mark.timeout(90)
async def test_sigterm_cancels_at_the_drain_deadline_and_still_reports():
    drain_s = 2
    result, late, delivered, exited = await drain_run(drain_s, [echo("before"), sleep_step(10_000)], 1.0)
    report = result.structuredContent
    assert report and report["status"] == "cancelled", call_text(result)[:600]
    assert report["steps"][0]["status"] == "passed" and report["steps"][0]["value"] == "before"
    assert delivered <= drain_s + 6, f"report delivered {delivered:.1f} s after SIGTERM"
    assert late is not None and late.status_code == 503, late
    assert exited is not None and exited <= drain_s + 10, f"exit {exited} s after SIGTERM"


# --------------------------------------------------------------------------------------
# 4. Mcp-Session-Id is bound to its tenant
# --------------------------------------------------------------------------------------


@pytest.mark.timeout(90)
async def test_transport_sessions_are_bound_to_their_tenant():
    with tenant_server() as server:
        url = server.url
        async with http_session_with_id(url, A_TOKEN) as (a, get_sid):
            sid = get_sid()
            assert sid
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {A_TOKEN}"}, timeout=60) as a_raw:
                long = asyncio.create_task(
                    session_call(
                        a_raw, url, "batch", {"steps": [echo("a-long"), sleep_step(3000)]}, session_id=sid, request_id="a-long"
                    )
                )
                await asyncio.sleep(0.7)
                statuses = {}
                async with httpx.AsyncClient(timeout=10) as b_raw:
                    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "testkit_echo", "arguments": {"value": "b"}}}
                    r = await b_raw.post(url, headers=session_headers(B_TOKEN, sid), json=body)
                    statuses["POST tools/call"] = r.status_code
                    get_headers = session_headers(B_TOKEN, sid, {"Accept": "text/event-stream"})
                    del get_headers["Content-Type"]
                    with contextlib.suppress(httpx.ReadTimeout):
                        async with b_raw.stream("GET", url, headers=get_headers) as resp:
                            statuses["GET"] = resp.status_code
                    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a-long", "reason": "beta"}}
                    r = await b_raw.post(url, headers=session_headers(B_TOKEN, sid), json=cancel)
                    statuses["POST notifications/cancelled"] = r.status_code
                    r = await b_raw.delete(url, headers=session_headers(B_TOKEN, sid))
                    statuses["DELETE"] = r.status_code
                await b_calls_while(long, url, limit=5)
                try:
                    with anyio.fail_after(30):
                        done = await long
                except TimeoutError:
                    long.cancel()
                    done = "no answer within 30 s"
            assert statuses == {k: 404 for k in statuses} and len(statuses) == 4, statuses
            assert isinstance(done, RawResult), done
            assert done.status == 200 and done.structured.get("status") == "passed", done
            r = await a.call_tool("testkit_echo", {"value": "still alpha's"})
            assert not r.isError and r.structuredContent["value"] == "still alpha's", call_text(r)
        await b_call(url)


# --------------------------------------------------------------------------------------
# 5. HTTP connection limits
# --------------------------------------------------------------------------------------

HTTP_LIMITS = """
[server.http]
header_read_timeout_ms = 1000
idle_timeout_s = 2
max_connections = 64
max_connections_per_peer = 8
"""


def port_of(server):
    return int(server.base.rsplit(":", 1)[1])


def closed_within(sock, seconds):
    """Reads until the peer closes; returns the seconds it took, or None."""
    start = time.monotonic()
    sock.settimeout(0.5)
    while time.monotonic() - start < seconds:
        try:
            if sock.recv(4096) == b"":
                return time.monotonic() - start
        except TimeoutError:
            continue
        except OSError:  # reset
            return time.monotonic() - start
    return None


@pytest.mark.timeout(60)
async def test_an_idle_socket_is_closed():
    with tenant_server(config=HTTP_LIMITS) as server:
        sock = socket.create_connection(("127.0.0.1", port_of(server)), timeout=5)
        try:
            task = asyncio.create_task(asyncio.to_thread(closed_within, sock, 15))
            await b_calls_while(task, server.url, limit=10)
            took = await task
        finally:
            sock.close()
        assert took is not None and took <= 2 + 5, f"an idle socket stayed open for {took or '15+'} s"
        await b_call(server.url)


def dribble(port, interval=0.3, limit_s=15):
    """Sends a request header one byte per `interval`; returns the seconds until
    the server closed the connection, or None."""
    header = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    start = time.monotonic()
    try:
        for byte in header:
            if time.monotonic() - start > limit_s:
                return None
            try:
                sock.send(bytes([byte]))
            except OSError:
                return time.monotonic() - start
            readable, _, _ = select.select([sock], [], [], interval)
            if readable:
                try:
                    data = sock.recv(4096)
                except OSError:
                    return time.monotonic() - start
                if data == b"" or data.startswith(b"HTTP/1.1 408"):
                    return time.monotonic() - start
        return None
    finally:
        sock.close()


@pytest.mark.timeout(60)
async def test_a_dribbled_header_is_cut_off():
    with tenant_server(config=HTTP_LIMITS) as server:
        task = asyncio.create_task(asyncio.to_thread(dribble, port_of(server)))
        await b_calls_while(task, server.url, limit=10)
        took = await task
        assert took is not None and took <= 1 + 5, f"a header dribbled for {took or '15+'} s was not cut off"
        await b_call(server.url)


class Hog:
    """Keeps `n` idle connections open from `source` to `port`, reopening any
    the server closes, until stopped (bounded in time and reconnects)."""

    def __init__(self, port, n, source="127.0.0.1", limit_s=40, max_reconnects=2000):
        self.port, self.n, self.source = port, n, source
        self.limit_s, self.max_reconnects = limit_s, max_reconnects
        self.socks = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _connect(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((self.source, 0))
        s.settimeout(2)
        s.connect(("127.0.0.1", self.port))
        s.setblocking(False)
        return s

    def _run(self):
        start, reconnects = time.monotonic(), 0
        while not self.stop.is_set() and time.monotonic() - start < self.limit_s and reconnects < self.max_reconnects:
            alive = []
            for s in self.socks:
                try:
                    if s.recv(4096) == b"":
                        s.close()
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    continue
                alive.append(s)
            self.socks = alive
            while len(self.socks) < self.n and reconnects < self.max_reconnects:
                reconnects += 1
                try:
                    self.socks.append(self._connect())
                except OSError:
                    break
            if len(self.socks) >= self.n:
                self.ready.set()
            self.stop.wait(0.05)

    def __enter__(self):
        self.thread.start()
        assert self.ready.wait(10), "could not open the attacker's connections"
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)
        for s in self.socks:
            s.close()


def extra_connection_served(port, source="127.0.0.1"):
    """Opens one more connection from `source` and sends a complete request;
    returns the HTTP status it got, or None when refused or closed unanswered."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((source, 0))
        s.settimeout(5)
        s.connect(("127.0.0.1", port))
        s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        data = s.recv(4096)
    except OSError:
        return None
    finally:
        s.close()
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return int(m.group(1)) if m else None


@pytest.mark.timeout(90)
async def test_one_peer_cannot_take_every_connection():
    with tenant_server(config=HTTP_LIMITS) as server:
        port = port_of(server)
        with Hog(port, 8):
            status = await asyncio.to_thread(extra_connection_served, port)
            assert status in (None, 429, 503), f"a 9th connection from 127.0.0.1 was served with {status}"
            # Another peer is not affected.
            for _ in range(3):
                await b_call(server.url, local_address="127.0.0.2")
        await asyncio.sleep(0.5)
        async with http_session_with_id(server.url, A_TOKEN) as (a, _):
            r = await a.call_tool("testkit_echo", {"value": "back"})
        assert not r.isError and r.structuredContent["value"] == "back"
        await b_call(server.url)


# --------------------------------------------------------------------------------------
# 6. Lost sessions are always reported
# --------------------------------------------------------------------------------------


async def test_result_session_id_is_the_transport_session_id():
    with tenant_server() as server:
        async with http_session_with_id(server.url, A_TOKEN) as (a, get_sid):
            r = await a.call_tool("testkit_echo", {"value": 1})
            assert r.structuredContent["session_id"] == get_sid(), (r.structuredContent["session_id"], get_sid())


@pytest.mark.timeout(90)
async def test_a_session_of_a_restarted_instance_is_lost():
    env = {"STEPHOST_INSTANCE": "abuse-restart"}
    with tenant_server(env=env) as first:
        async with http_session_with_id(first.url, A_TOKEN) as (a, get_sid):
            r = await a.call_tool("testkit_count", {})
            sid = r.structuredContent["session_id"]
            assert "abuse-restart." in sid, sid
            r = await a.call_tool("testkit_count", {"session_id": sid})
            assert r.structuredContent["value"] == 2
    with tenant_server(env=env) as second:
        async with http_session_with_id(second.url, A_TOKEN) as (a, _):
            r = await a.call_tool("testkit_count", {"session_id": sid})
        assert r.isError, f"a new empty session was passed off as the lost one: {call_text(r)[:400]}"
        assert "lost" in call_text(r).lower(), call_text(r)[:600]
        async with httpx.AsyncClient(timeout=30) as client:
            r = await stateless_call(client, second.url, "testkit_count", {"session_id": sid}, A_TOKEN)
        assert r.status == 200 and r.result is not None, r
        assert r.result.get("isError") and "lost" in call_text(r).lower(), r


@pytest.mark.timeout(90)
async def test_transport_and_host_sessions_expire_together():
    with tenant_server(config="[sessions]\nidle_timeout_s = 3\n") as server:
        async with httpx.AsyncClient(timeout=30) as client:
            sid = await raw_session(client, server.url, A_TOKEN)
            r = await session_call(client, server.url, "testkit_echo", {"value": 1}, A_TOKEN, sid)
            assert r.status == 200 and r.structured.get("status") == "passed", r
            assert live_sessions(server, "alpha") == 1
            await asyncio.sleep(5)
            deadline = time.monotonic() + 15
            while live_sessions(server, "alpha") and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
            assert live_sessions(server, "alpha") == 0, "the idle host session was not dropped"
            r = await session_call(client, server.url, "testkit_echo", {"value": 2}, A_TOKEN, sid, request_id=2)
            assert r.status == 404, f"the transport session outlived its host session: {r!r}"
            r = await stateless_call(client, server.url, "testkit_echo", {"value": 3, "session_id": sid}, A_TOKEN)
            assert r.result and r.result.get("isError") and "expired" in call_text(r).lower(), r


@pytest.mark.timeout(60)
async def test_deleting_the_transport_session_frees_the_host_session():
    with tenant_server() as server:
        async with httpx.AsyncClient(timeout=30) as client:
            sid = await raw_session(client, server.url, A_TOKEN)
            r = await session_call(client, server.url, "testkit_echo", {"value": 1}, A_TOKEN, sid)
            assert r.status == 200 and not r.result.get("isError"), r
            before = live_sessions(server, "alpha")
            assert before >= 1
            d = await client.delete(server.url, headers=session_headers(A_TOKEN, sid))
            assert d.status_code in (200, 202, 204), (d.status_code, d.text)
            deadline = time.monotonic() + 10
            while live_sessions(server, "alpha") != before - 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.25)
            assert live_sessions(server, "alpha") == before - 1, "DELETE left the host session alive"
            r = await stateless_call(client, server.url, "testkit_echo", {"value": 2, "session_id": sid}, A_TOKEN)
            assert r.result and r.result.get("isError") and "expired" in call_text(r).lower(), r


# --------------------------------------------------------------------------------------
# 7. Grants follow identity, not a claimed name
# --------------------------------------------------------------------------------------

COMPONENTS = ROOT / "plugins" / "target" / "wasm32-wasip2" / "release"


def run_cli(*args, config=None, timeout=60):
    """`stephost [--config FILE] ARGS...`; returns (exit code, stdout + stderr)."""
    with tempfile.TemporaryDirectory(prefix="stephost-abuse-cli-") as tmp:
        cmd = [BIN]
        if config is not None:
            path = Path(tmp) / "stephost.toml"
            path.write_text(config)
            cmd += ["--config", str(path)]
        p = subprocess.run([*cmd, *args], capture_output=True, text=True, env=server_env(), timeout=timeout)
        return p.returncode, p.stdout + p.stderr


def serve_outcome(cmd, timeout=30):
    """Starts a server command; returns (exit code, output) once it exits, or
    (None, output) as soon as it says it is serving (it is then killed)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, env=server_env())
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    out, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.2)
                out.append(line)
                if "serving MCP" in line:
                    return None, "".join(out)
            except queue.Empty:
                if proc.poll() is not None:
                    time.sleep(0.2)
                    while not lines.empty():
                        out.append(lines.get())
                    return proc.returncode, "".join(out)
        return None, "".join(out) + "\n(still running)"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


@pytest.mark.timeout(120)
def test_a_component_claiming_a_builtin_name_gets_no_builtin_grant(tmp_path):
    rf = COMPONENTS / "rf.wasm"
    if not rf.exists():
        pytest.skip(f"{rf} is not built")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(rf, plugins / "evil-rf.wasm")
    # Beside the built-in rf, and with the built-in rf switched off (where the old
    # host loaded the copy with rf's loopback grant).
    for config in (None, '[plugins]\ndisable = ["rf"]\n'):
        code, out = run_cli("--plugins", str(plugins), "plugins", config=config)
        assert code != 0, f"the copy of rf loaded (config {config!r}):\n{out[-1500:]}"
        assert "evil-rf.wasm" in out and "rf" in out.replace("evil-rf.wasm", ""), out[-1500:]
    config_path = tmp_path / "stephost.toml"
    config_path.write_text('[plugins]\ndisable = ["rf"]\n')
    code, out = serve_outcome(
        [BIN, "--config", str(config_path), "--plugins", str(plugins), "serve", "--http", "127.0.0.1:0"]
    )
    assert code is not None and code != 0, f"serve started with the copy of rf:\n{out[-1500:]}"
    assert "evil-rf.wasm" in out, out[-1500:]


@pytest.mark.timeout(120)
def test_require_pins_refuses_an_unpinned_third_party_component(tmp_path):
    # No component of the plugins workspace is third-party (all are built in),
    # so make one: testkit under another name (same-length byte patch of its
    # name in the data segment).
    testkit = COMPONENTS / "testkit.wasm"
    if not testkit.exists():
        pytest.skip(f"{testkit} is not built")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    component = plugins / "thirdpk.wasm"
    component.write_bytes(testkit.read_bytes().replace(b"testkit", b"thirdpk"))
    code, out = run_cli("--plugins", str(plugins), "plugins")
    if code != 0 or "thirdpk" not in out:
        pytest.skip(f"no third-party component available (the renamed testkit does not load: {out[-500:]})")
    code, out = run_cli("--plugins", str(plugins), "plugins", config="[plugins]\nrequire_pins = true\n")
    assert code != 0, f"an unpinned component loaded with require_pins:\n{out[-1500:]}"
    assert "unknown field" not in out, out[-1500:]
    assert "thirdpk" in out and "pin" in out.lower(), out[-1500:]
    digest = hashlib.sha256(component.read_bytes()).hexdigest()
    pinned = f'[plugins]\nrequire_pins = true\n[plugins.pins]\nthirdpk = "{digest}"\n'
    code, out = run_cli("--plugins", str(plugins), "plugins", config=pinned)
    assert code == 0 and "thirdpk" in out, out[-1500:]


# --------------------------------------------------------------------------------------
# 8. Smaller findings
# --------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_metrics_need_the_operator_token_when_tenants_are_in_force():
    with tenant_server(metrics_token=False) as server:
        for headers in ({}, {"Authorization": f"Bearer {A_TOKEN}"}):
            r = httpx.get(server.base + "/metrics", headers=headers, timeout=10)
            assert r.status_code in (401, 403), (headers.keys(), r.status_code, r.text[:200])
    with tenant_server() as server:
        for headers in ({}, {"Authorization": f"Bearer {A_TOKEN}"}, {"Authorization": "Bearer wrong"}):
            r = httpx.get(server.base + "/metrics", headers=headers, timeout=10)
            assert r.status_code in (401, 403), (r.status_code, r.text[:200])
        r = httpx.get(server.base + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10)
        assert r.status_code == 200 and "stephost_" in r.text, (r.status_code, r.text[:200])


@pytest.mark.timeout(60)
def test_stdio_answers_a_garbage_line_and_keeps_serving():
    proc = subprocess.Popen(
        [BIN, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=server_env()
    )
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def next_message(pred, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                if proc.poll() is not None:
                    return None
                continue
            with contextlib.suppress(ValueError):
                msg = json.loads(line)
                if pred(msg):
                    return msg
        return None

    try:
        proc.stdin.write(b"this is {not json\n")
        proc.stdin.flush()
        err = next_message(lambda m: "error" in m, 15)
        assert err is not None, "no answer to a garbage line"
        assert err["error"]["code"] == -32700 and err.get("id", "missing") is None, err
        init = dict(INITIALIZE, id=1)
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        proc.stdin.flush()
        ok = next_message(lambda m: m.get("id") == 1, 20)
        assert ok is not None and "result" in ok, f"a valid request after the garbage line was not served: {ok}"
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        proc.kill()
        proc.wait(10)


@pytest.mark.timeout(60)
def test_http_front_refusals_and_bearer_case():
    with tenant_server() as server:
        url, port = server.url, port_of(server)
        with httpx.Client(timeout=15) as c:
            r = c.post(url, headers=session_headers(B_TOKEN), content=b'{"jsonrpc": "2.0", "id": 1, "method": ')
            assert r.status_code == 400, (r.status_code, r.text[:300])
            assert r.json()["error"]["code"] == -32700, r.text[:300]
            r = c.post(url, headers=session_headers(B_TOKEN, extra={"Origin": "http://evil.example"}), json=INITIALIZE)
            assert r.status_code == 403, (r.status_code, r.text[:300])
            r = c.post(url, headers=session_headers(B_TOKEN, extra={"Origin": f"http://127.0.0.1:{port}"}), json=INITIALIZE)
            assert r.status_code == 200, (r.status_code, r.text[:300])
            for scheme in ("BEARER", "bearer", "BeArEr"):
                r = c.post(url, headers=session_headers(extra={"Authorization": f"{scheme} {B_TOKEN}"}), json=INITIALIZE)
                assert r.status_code == 200, (scheme, r.status_code, r.text[:300])
            r = c.post(url, headers=session_headers(extra={"Authorization": f"Basic {B_TOKEN}"}), json=INITIALIZE)
            assert r.status_code == 401, r.status_code


@pytest.mark.timeout(60)
def test_a_tenants_file_without_tenants_is_refused(tmp_path):
    empty = tmp_path / "tenants.toml"
    empty.write_text("# no tenants here\n")
    code, out = serve_outcome([BIN, "serve", "--http", "127.0.0.1:0", "--tenants", str(empty)])
    assert code is not None and code != 0, f"serve started with an empty tenants file:\n{out[-1000:]}"
    assert "no tenants" in out.lower(), out[-1000:]


def test_hash_token_help_lists_only_what_it_uses():
    p = subprocess.run([BIN, "hash-token", "--help"], capture_output=True, text=True, timeout=30, env=server_env())
    assert p.returncode == 0, p.stderr
    assert "--config" not in p.stdout and "--plugins" not in p.stdout, p.stdout
