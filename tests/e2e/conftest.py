"""Shared fixtures: the stephost binary, an HTTP server process, MCP client sessions."""

import contextlib
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost"))
CACHE = Path(tempfile.gettempdir()) / "stephost-e2e-cache"


@pytest.fixture
def anyio_backend():
    return "asyncio"


def server_env(extra=None):
    env = dict(os.environ)
    env["STEPHOST_CACHE_DIR"] = str(CACHE)
    env.setdefault("STEPHOST_LOG", "warn")
    env.update(extra or {})
    return env


@contextlib.asynccontextmanager
async def stdio_session(*args):
    params = StdioServerParameters(command=BIN, args=[*args, "serve"], env=server_env())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


class HttpServer:
    """`stephost serve --http 127.0.0.1:0`, with the port read from its stderr."""

    def __init__(self, *args, config=None, serve_args=()):
        self.args = list(args)
        self.serve_args = list(serve_args)
        self.config = config
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
        cmd += [*self.args, "serve", "--http", "127.0.0.1:0", *self.serve_args]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=server_env(), text=True)
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
                return self
        self.proc.kill()
        raise RuntimeError("server did not start: " + "".join(lines))

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
    with HttpServer() as server:
        yield server


@contextlib.asynccontextmanager
async def http_session(url, token=None):
    client = None
    if token is not None:
        import httpx

        client = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx.Timeout(30, read=300))
    async with streamable_http_client(url, http_client=client) as (read, write, _get_session_id):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session
