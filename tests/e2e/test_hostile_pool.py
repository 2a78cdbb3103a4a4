"""A hostile tenant and the shared instance pool (issue 39, finding 4).

An rf session that evaluates one Python expression holds an rf instance and a CPython
evaluator, which between them take many of the pool's core instances. Before the fix a
tenant making session-less `Evaluate  math.pi` calls drained the pool for everyone:
every call of every other tenant answered `busy: no plugin instance slot is free`.

Now instances and their evaluators are charged, in the pool's own units, to the tenant
whose session holds them, and each tenant holds at most its share (`/metrics` shows
both). Here tenant `alpha` attacks, with session-less `execute_batch` calls (concurrent)
and then with sessions it keeps; tenant `beta`'s ordinary calls, its own Python
evaluations in fresh sessions included, must all succeed throughout, while alpha is told
`busy`, naming its share, its value and what frees it.
"""

import asyncio
import contextlib
import json
import re
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

import anyio
import httpx
import pytest

from conftest import WITH_TESTKIT, HttpServer, RawResult, http_session_with_id, stateless_call
# The same two tenants and operator token as the abuse suite.
from test_abuse import A_TOKEN, B_TOKEN, METRICS_TOKEN, TENANTS, sha  # noqa: F401

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]


@contextlib.contextmanager
def tenant_server(config):
    """`serve --http 127.0.0.1:0 --tenants FILE` with tenants alpha and beta and an
    operator token for `/metrics`; `config` holds further tables."""
    server_table = f'[server]\nmetrics_token_sha256 = "{sha(METRICS_TOKEN)}"\n'
    with tempfile.TemporaryDirectory(prefix="stephost-pool-") as tmp:
        path = Path(tmp) / "tenants.toml"
        path.write_text(TENANTS)
        with HttpServer(config=server_table + "\n" + config, serve_args=["--tenants", str(path), *WITH_TESTKIT]) as s:
            yield s


def call_text(result):
    """Everything a tool result says, as one string (texts and structured content)."""
    if isinstance(result, RawResult):
        body = result.result or {}
        texts = [c.get("text", "") for c in body.get("content") or [] if isinstance(c, dict)]
        return " ".join(texts) + " " + json.dumps(body.get("structuredContent")) + " " + json.dumps(result.message)
    texts = [getattr(c, "text", "") or "" for c in result.content]
    return " ".join(texts) + " " + json.dumps(result.structuredContent)


def metrics_text(server):
    r = httpx.get(server.base + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10)
    assert r.status_code == 200, (r.status_code, r.text[:300])
    return r.text

# Two tenants share 64 slots: 32 each. The old code's pool (64 component instances, 256
# core instances) held about 15 rf sessions with an evaluator in all.
CONFIG = "[engine]\nmax_instances = 64\n"
SHARE = 32


def evaluate(expression="math.pi", session_id=None):
    """`execute_batch` arguments: one `Evaluate`. The tool requires a session id
    (the session is made when new), so a stateless client names a fresh one each call
    unless it keeps one."""
    return {"session_id": session_id or f"s-{secrets.token_hex(8)}", "steps": [{"keyword": "Evaluate", "arguments": [expression]}]}


def generic_evaluate(expression="math.pi"):
    """`batch` arguments with no session at all: the host mints an unclaimed session."""
    return {"steps": [{"plugin": "rf", "verb": "run_keyword", "input": {"keyword": "Evaluate", "args": [expression]}}]}


def gauge(text, name, tenant):
    m = re.search(r"^" + name + r'\{tenant="' + tenant + r'"\}\s+([0-9.e+]+)\s*$', text, re.M)
    return int(float(m.group(1))) if m else None


def pool(text, name, resource):
    m = re.search(r"^" + name + r'\{resource="' + resource + r'"\}\s+([0-9.e+]+)\s*$', text, re.M)
    return int(float(m.group(1))) if m else None


def outcome(r):
    """'pass', or the text of what went wrong."""
    if r.status != 200 or not r.result or r.result.get("isError"):
        return call_text(r) or repr(r)
    if r.structured.get("status") not in ("PASS", "passed"):
        return call_text(r)
    return "pass"


def assert_named_share_busy(text):
    """The hostile tenant's refusal: `busy`, its share by key and value, what frees it."""
    assert "busy" in text, text[:1500]
    assert "tenant `alpha`" in text, text[:1500]
    assert f"engine.max_instances_per_tenant = {SHARE}" in text, text[:1500]
    assert "DELETE" in text, text[:1500]


class Victim:
    """Tenant beta's ordinary calls, again and again while the attack runs: a testkit
    echo and a Python evaluation in its own MCP session, and a session-less Python
    evaluation (a fresh rf instance and evaluator every time)."""

    def __init__(self, url):
        self.url = url
        self.calls = 0
        self.failures = []

    async def once(self, session, client):
        value = f"beta-{secrets.token_hex(4)}"
        r = await session.call_tool("testkit_echo", {"value": value}, read_timeout_seconds=timedelta(seconds=60))
        if r.isError or (r.structuredContent or {}).get("value") != value:
            self.failures.append(("testkit_echo", call_text(r)[:800]))
        r = await session.call_tool(
            "execute_batch", {**evaluate("math.pi * 2"), "session_id": "beta-own"},
            read_timeout_seconds=timedelta(seconds=60),
        )
        out = r.structuredContent or {}
        if r.isError or out.get("status") != "PASS" or abs(out["steps"][0]["return_value"] - 6.283185307179586) > 1e-9:
            self.failures.append(("execute_batch in a session", call_text(r)[:800]))
        r = await stateless_call(client, self.url, "batch", generic_evaluate("math.e"), B_TOKEN, request_id=self.calls + 1)
        got = outcome(r)
        if got != "pass":
            self.failures.append(("session-less batch", got[:800]))
        self.calls += 1

    async def run_while(self, task):
        async with httpx.AsyncClient(timeout=60) as client:
            async with http_session_with_id(self.url, B_TOKEN) as (session, _):
                while self.calls == 0 or not task.done():
                    await self.once(session, client)
                    await asyncio.sleep(0.2)


@pytest.mark.timeout(400)
async def test_a_tenant_flooding_the_python_evaluator_never_locks_out_another():
    with tenant_server(config=CONFIG) as server:
        # Warm up: the evaluator compiles (or is mapped from the cache) once per process.
        async with httpx.AsyncClient(timeout=180) as client:
            r = await stateless_call(client, server.url, "execute_batch", evaluate(session_id="beta-own"), B_TOKEN, timeout=180)
            assert outcome(r) == "pass", outcome(r)

        victim = Victim(server.url)
        hostile = {"pass": 0, "busy": [], "other": []}

        def tally(got):
            if got == "pass":
                hostile["pass"] += 1
            elif "busy" in got:
                hostile["busy"].append(got)
            else:
                hostile["other"].append(got)

        # 1. Session-less calls (the generic `batch` tool, no session_id, stateless
        # HTTP): each mints an unclaimed session holding an rf instance and an
        # evaluator; at its share alpha's least recently used idle one makes room.
        async def flood(calls=240, concurrency=4):
            limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
            async with httpx.AsyncClient(limits=limits, timeout=120) as client:
                gate = asyncio.Semaphore(concurrency)

                async def one(i):
                    async with gate:
                        r = await stateless_call(client, server.url, "batch", generic_evaluate(), A_TOKEN, request_id=i + 1, timeout=120)
                    tally(outcome(r))

                with anyio.fail_after(300):
                    await asyncio.gather(*(one(i) for i in range(calls)))

        task = asyncio.create_task(flood())
        try:
            await victim.run_while(task)
            await task
        finally:
            task.cancel()
        print(
            f"\n1. session-less flood: alpha {hostile['pass']} passed, {len(hostile['busy'])} busy, "
            f"{len(hostile['other'])} other; beta {victim.calls} rounds, {len(victim.failures)} failures"
        )
        assert not victim.failures, f"{len(victim.failures)} of beta's calls failed during alpha's flood, e.g. {victim.failures[0]}"
        assert not hostile["other"], hostile["other"][0]
        for text in hostile["busy"]:
            assert_named_share_busy(text)
        assert hostile["pass"] >= 200, hostile

        text = await asyncio.to_thread(metrics_text, server)
        assert gauge(text, "stephost_instance_slots_share", "alpha") == SHARE, text
        assert gauge(text, "stephost_instance_slots_in_use", "alpha") <= SHARE, text
        assert pool(text, "stephost_pool_live", "core_instances") <= pool(text, "stephost_pool_size", "core_instances"), text

        # 2. Sessions alpha keeps: stateless `execute_batch` calls each naming a fresh
        # session_id (as a client told the session is "auto-created" does), and MCP
        # sessions of its own. Named sessions are never dropped for it: it reaches its
        # share and is told so.
        kept, refusals = 0, []

        async def keep_sessions():
            nonlocal kept
            async with httpx.AsyncClient(timeout=120) as client:
                for i in range(40):
                    r = await stateless_call(client, server.url, "execute_batch", evaluate(), A_TOKEN, request_id=10_000 + i)
                    got = outcome(r)
                    if got != "pass":
                        refusals.append(got)
                        break
                    kept += 1
            for _ in range(4):
                async with http_session_with_id(server.url, A_TOKEN) as (a, _):
                    r = await a.call_tool("execute_batch", evaluate(), read_timeout_seconds=timedelta(seconds=60))
                    if r.isError or (r.structuredContent or {}).get("status") != "PASS":
                        refusals.append(call_text(r))

        task = asyncio.create_task(keep_sessions())
        try:
            await victim.run_while(task)
            await task
        finally:
            task.cancel()
        print(f"2. kept sessions: alpha {kept} before busy, {len(refusals)} refusals; beta {victim.calls} rounds in all, {len(victim.failures)} failures")
        assert refusals, f"alpha kept {kept} sessions with an evaluator each and was never refused"
        print("   alpha was told:", refusals[0].split(" {", 1)[0][:700])
        assert len(refusals) == 5, refusals
        for text in refusals:
            assert_named_share_busy(text)
        assert not victim.failures, f"beta's call failed while alpha held its share: {victim.failures[0]}"

        # 3. At its share alpha's session-less calls are refused too; beta's still run.
        async with httpx.AsyncClient(timeout=60) as client:
            r = await stateless_call(client, server.url, "batch", generic_evaluate(), A_TOKEN, request_id=20_000)
            assert_named_share_busy(outcome(r))
            r = await stateless_call(client, server.url, "batch", generic_evaluate("math.tau"), B_TOKEN, request_id=20_001)
            assert outcome(r) == "pass", outcome(r)
        text = await asyncio.to_thread(metrics_text, server)
        alpha_in_use = gauge(text, "stephost_instance_slots_in_use", "alpha")
        assert SHARE - 8 <= alpha_in_use <= SHARE, text
        assert gauge(text, "stephost_instance_slots_in_use", "beta") <= SHARE, text
        print(f"3. alpha holds {alpha_in_use} of its {SHARE} slots; pool core instances "
              f"{pool(text, 'stephost_pool_live', 'core_instances')} of {pool(text, 'stephost_pool_size', 'core_instances')}")
