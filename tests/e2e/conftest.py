"""Shared fixtures: the stephost binary, an HTTP server process, MCP client sessions."""

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost"))
CACHE = Path(tempfile.gettempdir()) / "stephost-e2e-cache"
# Where servers started by the tests keep saved batches: this pytest run's own,
# never the user's data directory.
DATA = Path(tempfile.mkdtemp(prefix="stephost-e2e-data-"))



def need(*tools):
    """Fails the test, naming them, when programs the test drives are missing."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.fail(f"missing programs {missing}: run scripts/test.sh, which installs them")


def wait_for(predicate, timeout=15.0, what="condition"):
    """The first truthy value of `predicate`, polled every 50 ms for `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def free_display(first, last):
    """An X display number in [first, last) with neither a socket nor a lock."""
    for n in range(first, last):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return f":{n}"
    raise RuntimeError("no free X display number")

def stop_processes(procs):
    """Stops `procs`, newest first: SIGTERM, up to 5 s each, then SIGKILL."""
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.terminate()
    for proc in reversed(procs):
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def send_body(handler, status, body, headers=()):
    """Answers `handler`'s request: `status`, `headers`, a Content-Length and
    `body` (bytes). A request handler class can take it as its `send` method."""
    handler.send_response(status)
    for key, value in headers:
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class QuietHandler(SimpleHTTPRequestHandler):
    """A static file handler that keeps the test output clean."""

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve_folder(root, handler=QuietHandler):
    """`root` served by `handler` on a free loopback port for the block; yields its
    base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def anyio_backend():
    return "asyncio"


def is_json(text):
    """Whether `text` parses as JSON (a result's text is meant as lines, not JSON)."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def server_env(extra=None):
    env = dict(os.environ)
    env["STEPHOST_CACHE_DIR"] = str(CACHE)
    env.setdefault("STEPHOST_DATA_DIR", str(DATA))
    env.setdefault("STEPHOST_LOG", "warn")
    env.update(extra or {})
    return env


# `serve --tools` for tests that call `testkit_*` tools over MCP: testkit's tools
# are served only when named, so these name it beside the plugins served by
# default (desktop when a display is set, as the default's probe would find it).
# `batch` runs testkit steps without this.
WITH_TESTKIT = ["--tools", ",".join(["browser", "rf", "testkit"] + (["desktop"] if os.environ.get("DISPLAY") else []))]


@contextlib.asynccontextmanager
async def stdio_session(*args, serve_args=(), env=None, message_handler=None):
    """An MCP session over stdio with `stephost ARGS serve SERVE_ARGS`; `env`
    replaces the server's environment (after `server_env`) when given;
    `message_handler` gets the server's notifications."""
    params = StdioServerParameters(
        command=BIN, args=[*args, "serve", *serve_args], env=env if env is not None else server_env()
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=message_handler) as session:
            await session.initialize()
            yield session


@contextlib.contextmanager
def config_file(text):
    """`text` in a temporary `.toml` file, for `--config`."""
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    try:
        yield f.name
    finally:
        os.unlink(f.name)


@contextlib.asynccontextmanager
async def host_with(config_text):
    """A stdio MCP session with a host started on config `config_text`."""
    with config_file(config_text) as path:
        async with stdio_session("--config", path) as s:
            yield s


def rf_step(keyword, *arguments, assign=None):
    """An `execute_batch` step: `keyword` with `arguments` (as text)."""
    step = {"keyword": keyword, "arguments": [str(a) for a in arguments]}
    if assign:
        step["assign_to"] = assign
    return step


async def rf_batch(s, steps, session, **options):
    """Runs `execute_batch` in `session`; the structured result of a call that ran."""
    result = await s.call_tool("execute_batch", {"session_id": session, **options, "steps": steps})
    assert not result.isError, result.content
    return result.structuredContent


def step_error(step):
    """A reported step's error text."""
    err = step.get("error")
    if isinstance(err, dict):
        return err.get("message", "")
    return err or step.get("message", "")


class HttpServer:
    """`stephost serve --http 127.0.0.1:0`, with the port read from its stderr.

    `env` adds environment variables (e.g. `STEPHOST_INSTANCE`); `port` binds a
    given port instead of a free one (to restart an instance where it was)."""

    def __init__(self, *args, config=None, serve_args=(), env=None, port=0):
        self.args = list(args)
        self.serve_args = list(serve_args)
        self.config = config
        self.env = dict(env or {})
        self.port = port
        self.proc = None
        self.url = None
        self._config_file = None

    def __enter__(self):
        cmd = [BIN]
        if self.config is not None:
            self._config_file = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
            self._config_file.write(self.config)
            self._config_file.close()
            cmd += ["--config", self._config_file.name]
        cmd += [*self.args, "serve", "--http", f"127.0.0.1:{self.port}", *self.serve_args]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=server_env(self.env), text=True)
        deadline = time.monotonic() + 30
        lines = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"at (http://\S+/mcp)", line)
            if m:
                self.url = m.group(1)
                self.log = lines
                # Keep reading stderr, so a chatty server never blocks on a full pipe.
                threading.Thread(target=self._drain, daemon=True).start()
                return self
        self.proc.kill()
        raise RuntimeError("server did not start: " + "".join(lines))

    def _drain(self):
        for line in self.proc.stderr:
            if len(self.log) < 10_000:
                self.log.append(line)

    @property
    def base(self):
        """`http://127.0.0.1:PORT`, without the `/mcp` path."""
        return self.url.rsplit("/mcp", 1)[0]

    @property
    def pid(self):
        return self.proc.pid

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if self._config_file is not None:
            os.unlink(self._config_file.name)


@pytest.fixture
def http_server():
    with HttpServer(serve_args=WITH_TESTKIT) as server:
        yield server


@contextlib.asynccontextmanager
async def http_session(url, token=None, message_handler=None):
    client = None
    if token is not None:
        import httpx

        client = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx.Timeout(30, read=300))
    async with streamable_http_client(url, http_client=client) as (read, write, _get_session_id):
        async with ClientSession(read, write, message_handler=message_handler) as session:
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def http_session_with_id(url, token=None, local_address=None):
    """Like `http_session`, but yields `(session, get_session_id)`, where
    `get_session_id()` is the `Mcp-Session-Id` the server minted; `local_address`
    binds the client's source address (e.g. `127.0.0.2`)."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    transport = httpx.AsyncHTTPTransport(local_address=local_address) if local_address else None
    client = httpx.AsyncClient(headers=headers, transport=transport, timeout=httpx.Timeout(30, read=300))
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write, get_session_id):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session, get_session_id


# --- Raw streamable HTTP -------------------------------------------------------------
#
# The stateless 2026-07-28 revision has no `initialize` and no transport session:
# each POST stands alone. rmcp (`streamable_http_server/tower.rs`) serves a POST
# statelessly when the request's `_meta` carries
# `io.modelcontextprotocol/protocolVersion` = 2026-07-28 (plus
# `io.modelcontextprotocol/clientCapabilities`, both required at that revision),
# with the `MCP-Protocol-Version: 2026-07-28` header matching it and the SEP-2243
# routing headers `Mcp-Method` (the JSON-RPC method) and `Mcp-Name` (the tool
# name, for `tools/call`) matching the body. The POST must accept both
# `application/json` and `text/event-stream`; the answer comes as an SSE stream
# (or JSON) holding the JSON-RPC response.

STATELESS_VERSION = "2026-07-28"
SESSION_VERSION = "2025-11-25"
ACCEPT = "application/json, text/event-stream"


def mcp_messages(text, content_type=""):
    """The JSON-RPC messages of a streamable-HTTP answer: a JSON body, or the
    `data:` of each SSE event."""
    import json

    text = text or ""
    if "text/event-stream" not in content_type:
        try:
            value = json.loads(text)
        except ValueError:
            return []
        return value if isinstance(value, list) else [value]
    out = []
    for event in re.split(r"\r?\n\r?\n", text):
        data = "\n".join(
            line[5:].removeprefix(" ") for line in re.split(r"\r?\n", event) if line.startswith("data:")
        )
        if data.strip():
            try:
                out.append(json.loads(data))
            except ValueError:
                pass
    return out


def response_for(messages, request_id):
    """The JSON-RPC response (result or error) to `request_id` among `messages`."""
    for m in messages:
        if isinstance(m, dict) and m.get("id") == request_id and ("result" in m or "error" in m):
            return m
    return None


def stateless_request(method, params, request_id, token=None, extra_headers=None):
    """Headers and body of one stateless 2026-07-28 request."""
    params = dict(params or {})
    meta = dict(params.get("_meta") or {})
    meta.setdefault("io.modelcontextprotocol/protocolVersion", STATELESS_VERSION)
    meta.setdefault("io.modelcontextprotocol/clientCapabilities", {})
    params["_meta"] = meta
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "MCP-Protocol-Version": STATELESS_VERSION,
        "Mcp-Method": method,
    }
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(extra_headers or {})
    return headers, {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


class RawResult:
    """One raw POST's answer: HTTP status, headers, body and the JSON-RPC response."""

    def __init__(self, response, request_id):
        self.status = response.status_code
        self.headers = response.headers
        self.text = response.text
        self.messages = mcp_messages(self.text, response.headers.get("content-type", ""))
        self.message = response_for(self.messages, request_id)

    @property
    def result(self):
        """The JSON-RPC `result` (a CallToolResult for tools/call), or None."""
        return (self.message or {}).get("result")

    @property
    def structured(self):
        return (self.result or {}).get("structuredContent") or {}

    def __repr__(self):
        return f"<HTTP {self.status}: {self.text[:600]!r}>"


async def stateless_call(client, url, tool, arguments, token=None, request_id=1, timeout=60, extra_headers=None):
    """One stateless `tools/call` on `client` (an `httpx.AsyncClient`): no
    session, no `initialize`. Returns a `RawResult`."""
    headers, body = stateless_request(
        "tools/call", {"name": tool, "arguments": arguments}, request_id, token, extra_headers
    )
    response = await client.post(url, headers=headers, json=body, timeout=timeout)
    return RawResult(response, request_id)


def session_headers(token=None, session_id=None, extra=None):
    """Headers of a 2025-11-25 request (inside a transport session when
    `session_id` is given)."""
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, "MCP-Protocol-Version": SESSION_VERSION}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
    headers.update(extra or {})
    return headers


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": SESSION_VERSION, "capabilities": {}, "clientInfo": {"name": "e2e-raw", "version": "1"}},
}


async def raw_session(client, url, token=None):
    """Opens a 2025-11-25 transport session with raw POSTs (initialize, then
    `notifications/initialized`); returns its `Mcp-Session-Id`."""
    response = await client.post(url, headers=session_headers(token), json=INITIALIZE, timeout=30)
    assert response.status_code == 200, (response.status_code, response.text[:500])
    session_id = response.headers.get("mcp-session-id")
    assert session_id, f"no Mcp-Session-Id in {dict(response.headers)}"
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response = await client.post(url, headers=session_headers(token, session_id), json=note, timeout=30)
    assert response.status_code in (200, 202), (response.status_code, response.text[:500])
    return session_id


async def session_call(client, url, tool, arguments, token=None, session_id=None, request_id=1, timeout=60):
    """One `tools/call` inside transport session `session_id`; returns a `RawResult`."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    response = await client.post(url, headers=session_headers(token, session_id), json=body, timeout=timeout)
    return RawResult(response, request_id)
