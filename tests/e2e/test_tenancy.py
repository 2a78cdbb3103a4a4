"""Tenants over HTTP: tokens, isolation, limits and /metrics, with the real MCP client."""

import hashlib
import tempfile
import urllib.error
import urllib.request

import pytest

from conftest import WITH_TESTKIT, HttpServer, http_session

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


TENANTS = f"""
[[tenants]]
id = "alpha"
token_sha256 = ["{sha('alpha-secret')}"]

[[tenants]]
id = "beta"
token_sha256 = ["{sha('beta-secret')}"]
plugins = ["testkit"]
[tenants.limits]
max_steps_per_batch = 3
memory_mib = 32
"""


@pytest.fixture
def server():
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
        f.write(TENANTS)
        f.flush()
        config = f'[server]\nmetrics_token_sha256 = "{sha("ops-secret")}"\n'
        with HttpServer(config=config, serve_args=["--tenants", f.name, *WITH_TESTKIT]) as server:
            yield server


def post(url, token=None):
    return challenge(url, token)[0]


async def test_missing_or_wrong_tokens_get_401(server):
    assert post(server.url) == 401
    assert post(server.url, "nope") == 401
    assert post(server.url, "alpha-secret") == 200


def challenge(url, token=None):
    """Status and `WWW-Authenticate` of an initialize POST."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json, text/event-stream")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers.get("WWW-Authenticate")
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("WWW-Authenticate")


async def test_401_challenges_follow_rfc_6750(server):
    # No credentials: a bare challenge, no error code (RFC 6750 section 3.1).
    status, www = challenge(server.url)
    assert status == 401 and www == 'Bearer realm="stephost"', www
    # A token no tenant holds: invalid_token, with a description.
    status, www = challenge(server.url, "nope")
    assert status == 401, status
    assert www.startswith('Bearer realm="stephost", error="invalid_token", error_description="'), www
    # Tokens come from the tenants file, not OAuth: nothing points a client at
    # an authorization server.
    for status, www in (challenge(server.url), challenge(server.url, "nope")):
        assert "resource_metadata" not in www and "scope" not in www, www


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"]
)
async def test_no_oauth_discovery_endpoint_is_implied(server, path):
    # An MCP client that got 401 looks for OAuth metadata here; 404 (not 401,
    # not 200) tells it there is no OAuth flow to start, with or without a token.
    base = server.url.rsplit("/mcp", 1)[0]
    for token in (None, "nope", "alpha-secret"):
        req = urllib.request.Request(base + path)
        if token is not None:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                status = resp.status
        except urllib.error.HTTPError as e:
            status = e.code
        assert status == 404, (path, token, status)


async def test_tenants_never_see_each_others_sessions(server):
    async with http_session(server.url, "alpha-secret") as a, http_session(server.url, "beta-secret") as b:
        for expected in (1, 2):
            r = await a.call_tool("testkit_count", {"session_id": "same"})
            assert r.structuredContent["value"] == expected
        r = await b.call_tool("testkit_count", {"session_id": "same"})
        assert r.structuredContent["value"] == 1, "beta's `same` is not alpha's"
        handle = (await a.call_tool("testkit_count", {})).structuredContent["session_id"]
        assert (await a.call_tool("testkit_count", {"session_id": handle})).structuredContent["value"] == 2
        r = await b.call_tool("testkit_count", {"session_id": handle})
        assert r.isError or r.structuredContent["value"] == 1, "alpha's session handle gives beta nothing of alpha's"


async def test_each_tenant_sees_its_own_tools_and_limits(server):
    async with http_session(server.url, "beta-secret") as b:
        names = {t.name for t in (await b.list_tools()).tools}
        assert "testkit_echo" in names
        assert not any(n.startswith("rf_") for n in names), names
        steps = [{"plugin": "testkit", "verb": "echo", "input": {"value": i}} for i in range(4)]
        r = await b.call_tool("batch", {"steps": steps})
        assert r.isError and "limits.max_steps_per_batch" in r.content[0].text
        r = await b.call_tool("batch", {"steps": [{"plugin": "testkit", "verb": "alloc", "input": {"mib": 64}}]})
        assert r.structuredContent["steps"][0]["error"]["code"] == "memory-limit"
        assert "32 MiB" in r.structuredContent["steps"][0]["error"]["message"]


async def test_metrics_are_served_in_prometheus_format(server):
    async with http_session(server.url, "alpha-secret") as a:
        await a.call_tool("testkit_echo", {"value": 1})
    base = server.url.rsplit("/mcp", 1)[0]
    # Metrics name tenants: a tenant's token does not open them, the operator's does.
    for token in (None, "alpha-secret"):
        req = urllib.request.Request(base + "/metrics")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=10)
        assert refused.value.code == 401
    req = urllib.request.Request(base + "/metrics")
    req.add_header("Authorization", "Bearer ops-secret")
    with urllib.request.urlopen(req, timeout=10) as resp:
        text = resp.read().decode()
    assert 'stephost_batches_total{tenant="alpha",status="passed"}' in text
    assert "# TYPE stephost_step_duration_seconds histogram" in text
    assert 'stephost_live_sessions{tenant="alpha"}' in text
