"""Issue 39, findings 1-3: what one tenant's request makes the host compute or
hold is charged before it is spent. Each attack runs against a shared
`serve --http --tenants` while tenant beta makes ordinary calls, which must all
succeed; the host's peak resident memory is read from /proc after each attack.

1. A saved batch whose steps all use `${params.v}`, called with a 3.8 MiB `v`:
   what the steps add up to is charged against `limits.max_report_bytes` as it
   is built (it took the host to 2.47 GB, and aborted it with 1,000 steps).
2. A dry run whose steps all refer to a 7.6 MiB session variable: the plan is
   charged against `limits.max_report_bytes` like a report (a 478 MB answer).
3. A parameter schema with a backtracking pattern: refused at save time, and
   patterns run in linear time (49.6 s of CPU in one call); the call's work runs
   within the tenant's `max_concurrent_batches`.
"""

import asyncio
import contextlib
import hashlib
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from conftest import HttpServer, stateless_call
from test_abuse import (
    A_TOKEN,
    B_TOKEN,
    TENANTS,
    b_calls_while,
    call_text,
    proc_status,
    reset_peak_rss,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

MIB = 1024 * 1024
# What an attack may add to the host's peak resident memory. The default
# `max_report_bytes` is 64 MiB; a request holds its arguments, at most one
# report's worth of bound inputs or plan, and the answer built from it.
RSS_BOUND = 600 * MIB


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


@contextlib.contextmanager
def tenant_server(tenants=TENANTS):
    """`serve --http --tenants` with tenants alpha and beta, serving testkit,
    rf and the saved-batch tools, with its own data directory."""
    with tempfile.TemporaryDirectory(prefix="stephost-hostile-") as tmp:
        path = Path(tmp) / "tenants.toml"
        path.write_text(tenants)
        serve = ["--tenants", str(path), "--tools", "rf,testkit,saved"]
        with HttpServer(serve_args=serve, env={"STEPHOST_DATA_DIR": str(Path(tmp) / "data")}) as server:
            yield server


def echo_steps(n, value):
    return [{"plugin": "testkit", "verb": "echo", "input": {"value": value}} for _ in range(n)]


async def save(client, url, definition, token=A_TOKEN):
    r = await stateless_call(client, url, "save_batch", definition, token=token, timeout=120)
    assert r.result is not None, r
    return r


async def attack_with_victim(server, attack):
    """Runs `attack` (a coroutine) while beta calls; returns (attack result,
    peak RSS growth in bytes)."""
    reset_peak_rss(server.pid)
    before = proc_status(server.pid)["VmRSS"]
    task = asyncio.ensure_future(attack)
    calls = await b_calls_while(task, server.url)
    result = await task
    assert calls >= 1
    assert server.proc.poll() is None, "the host died"
    peak = proc_status(server.pid)["VmHWM"]
    return result, peak - before


async def test_a_parameter_fanned_out_to_every_step_is_charged_once():
    with tenant_server() as server:
        async with httpx.AsyncClient() as client:
            for steps in (250, 1000):
                name = f"fanout{steps}"
                r = await save(client, server.url, {
                    "name": name,
                    "description": "echo v in every step",
                    "parameters": {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]},
                    "steps": echo_steps(steps, "${params.v}"),
                })
                assert not r.result.get("isError"), call_text(r)[:800]
                big = "x" * int(3.8 * MIB)
                for dry in (False, True):
                    args = {"v": big, "dry_run": True} if dry else {"v": big}
                    r, grew = await attack_with_victim(
                        server, stateless_call(client, server.url, name, args, token=A_TOKEN, timeout=120)
                    )
                    text = call_text(r)
                    assert r.result and r.result.get("isError"), text[:800]
                    assert r.structured.get("status") == "invalid", text[:800]
                    assert "limits.max_report_bytes" in text, text[:800]
                    # One problem, not one per step.
                    assert len(r.structured["errors"]) == 1, r.structured["errors"][:3]
                    assert grew < RSS_BOUND, f"{steps} steps, dry_run={dry}: peak RSS grew {grew / MIB:.0f} MiB"
            # A value that fits still runs, parameters put in.
            r = await stateless_call(client, server.url, "fanout250", {"v": "small"}, token=A_TOKEN, timeout=120)
            assert r.structured.get("status") == "passed", call_text(r)[:800]
            assert r.structured["steps"][249]["value"] == "small"


async def test_a_dry_run_is_charged_against_the_report_limit():
    with tenant_server() as server:
        async with httpx.AsyncClient() as client:
            half = "y" * int(3.8 * MIB)
            r = await stateless_call(client, server.url, "batch", {
                "session_id": "big",
                "steps": [
                    {"plugin": "testkit", "verb": "echo", "input": {"value": half}, "assign_to": "a"},
                    {"plugin": "testkit", "verb": "echo", "input": {"value": ["${a}", "${a}"]}, "assign_to": "big"},
                ],
            }, token=A_TOKEN, timeout=120)
            assert r.structured.get("status") == "passed", call_text(r)[:800]
            for steps in (30, 100):
                batch = {"session_id": "big", "dry_run": True, "steps": echo_steps(steps, "${big}")}
                r, grew = await attack_with_victim(
                    server, stateless_call(client, server.url, "batch", batch, token=A_TOKEN, timeout=120)
                )
                plan = r.structured.get("plan")
                assert r.structured.get("status") == "planned" and plan, call_text(r)[:800]
                assert len(plan["steps"]) == steps
                # Eight copies of 7.6 MiB fit in 64 MiB; the rest stay as written, saying why.
                written = [s for s in plan["steps"] if s["input"]["value"] != "${big}"]
                kept = [s for s in plan["steps"] if s["input"]["value"] == "${big}"]
                assert 1 <= len(written) <= 9, len(written)
                assert kept and "limits.max_report_bytes" in kept[0]["unresolved"][0]["reason"], kept[0]
                assert len(r.text) < 80 * MIB, f"a {len(r.text) / MIB:.0f} MiB answer"
                assert grew < RSS_BOUND, f"{steps} dry-run steps: peak RSS grew {grew / MIB:.0f} MiB"


PATHOLOGICAL = "^(?:(?=a)(a|aa))+$"


async def test_parameter_patterns_run_in_linear_time_within_the_tenants_limit():
    tenants_one_at_a_time = """
[[tenants]]
id = "alpha"
token_sha256 = ["%s"]
[tenants.limits]
max_concurrent_batches = 1

[[tenants]]
id = "beta"
token_sha256 = ["%s"]
"""
    with tenant_server(tenants=tenants_one_at_a_time % (sha(A_TOKEN), sha(B_TOKEN))) as server:
        async with httpx.AsyncClient() as client:
            items = {"type": "array", "items": {"type": "string", "pattern": PATHOLOGICAL}}
            r = await save(client, server.url, {
                "name": "lookahead",
                "description": "a pattern with look-ahead",
                "parameters": {"type": "object", "properties": {"v": items}},
                "steps": echo_steps(1, "${params.v}"),
            })
            text = call_text(r)
            assert r.result.get("isError"), text[:800]
            assert "parameters/properties/v/items/pattern" in text and "linear-time" in text, text[:1500]

            nested = {"type": "array", "items": {"type": "string", "pattern": "^(a+)+$"}}
            r = await save(client, server.url, {
                "name": "nested",
                "description": "a nested quantifier",
                "parameters": {"type": "object", "properties": {"v": nested}},
                "steps": echo_steps(1, "${params.v}"),
            })
            assert not r.result.get("isError"), call_text(r)[:800]
            bait = ["a" * 25 + "b"] * 800

            # The call's own work (validating against the tenant's schema) is
            # admitted like a batch: while the tenant's one batch runs, it is
            # refused busy before anything is validated.
            sleeper = asyncio.ensure_future(stateless_call(client, server.url, "batch", {
                "steps": [{"plugin": "testkit", "verb": "sleep", "input": {"ms": 3000}}],
            }, token=A_TOKEN, request_id=7, timeout=60))
            await asyncio.sleep(1.0)
            r = await stateless_call(client, server.url, "nested", {"v": bait}, token=A_TOKEN, request_id=8, timeout=60)
            text = call_text(r)
            assert "limits.max_concurrent_batches = 1" in text, text[:800]
            assert r.structured.get("status") == "rejected", text[:800]
            assert (await sleeper).structured.get("status") == "passed"

            async def validate():
                started = time.monotonic()
                r = await stateless_call(client, server.url, "nested", {"v": bait}, token=A_TOKEN, request_id=9, timeout=120)
                return r, time.monotonic() - started

            (r, took), _ = await attack_with_victim(server, validate())
            text = call_text(r)
            assert took < 5, f"validating 800 items took {took:.1f} s"
            assert r.structured.get("status") == "invalid", text[:800]
            assert "v[0]" in text or "v/0" in text, text[:800]
