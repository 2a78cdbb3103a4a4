"""Issue 39, findings 6 and 8: a tenant's tool list and its saved-batch store,
attacked by tenant alpha on a shared `serve --http --tenants` while tenant beta
works.

6. Saved batches with long parameter schemas and descriptions made alpha's
   `tools/list` 23 MB, rebuilt and copied for every request; 24 concurrent
   lists took the host from 276 MB to 1,070 MB resident and beta's calls to
   3 s. Now what a tenant's saved batches add to its list is capped at
   `save_batch` time (`saved_batches.max_list_bytes`), the list is built once
   per change and shared, and a tenant's lists are paced by their size
   (`mcp.tool_lists_per_minute`).
8. The store: files 0600 in a 0700 folder (modes of older files fixed at start),
   a failed write leaves no temporary file (nor does a crash, after a restart),
   no error a tenant sees names the server's data path, and a store that cannot
   be read is an error, never "no saved batches".
"""

import asyncio
import contextlib
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from conftest import WITH_TESTKIT, HttpServer, http_session_with_id, raw_session, session_headers, stateless_call
from test_abuse import A_TOKEN, B_TOKEN, TENANTS, call_text, proc_status, reset_peak_rss

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

MIB = 1024 * 1024
# The default `saved_batches.max_list_bytes`.
MAX_LIST_BYTES = 1024 * 1024
# What 24 concurrent lists, again and again for ATTACK_S, may add to the host's
# peak resident memory: a paced burst of lists, each at most the catalog plus
# MAX_LIST_BYTES as JSON, with the parts that are shared not copied. Measured
# on 2026-12-07: 0 to 27 MiB; before the fix 1,078 MiB (and beta's p99 1.8 s).
RSS_BOUND = 128 * MIB
ATTACK_S = 10
CONCURRENT_LISTS = 24


# testkit's tools (the victim's ordinary call) and the saved batches' tools.
TOOLS = ["--tools", WITH_TESTKIT[1] + ",saved"]


@contextlib.contextmanager
def tenant_server(env):
    """`serve --http 127.0.0.1:0 --tenants FILE` with tenants alpha and beta,
    saved batches kept under `env`'s STEPHOST_DATA_DIR."""
    with tempfile.TemporaryDirectory(prefix="stephost-lists-") as tmp:
        path = Path(tmp) / "tenants.toml"
        path.write_text(TENANTS)
        with HttpServer(serve_args=["--tenants", str(path), *TOOLS], env=env) as server:
            yield server


def long_batch(n):
    """A saved batch near `saved_batches.max_bytes` (256 KiB): a 2,000-character
    description and 110 parameters with 2,000-character descriptions each."""
    props = {f"p{i}": {"type": "string", "description": f"{n}:{i} " + "d" * 2000} for i in range(110)}
    return {
        "name": f"long_{n:03}",
        "description": "L" * 2000,
        "parameters": {"type": "object", "properties": props},
        "steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": "${params.p0}"}}],
    }


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def victim_latencies(b, stop, at_least=10):
    """Beta's ordinary call, timed, again and again until `stop` is set (and at
    least `at_least` times); every call must succeed."""
    times = []
    while not stop.is_set() or len(times) < at_least:
        started = time.perf_counter()
        r = await b.call_tool("testkit_echo", {"value": len(times)}, read_timeout_seconds=timedelta(seconds=60))
        times.append(time.perf_counter() - started)
        assert not r.isError and r.structuredContent["value"] == len(times) - 1, call_text(r)[:500]
        await asyncio.sleep(0.05)
    return times


# The attacker runs in a process of its own, so that reading its answers never
# stalls the event loop that times beta's calls.
ATTACKER = textwrap.dedent(
    """
    import asyncio, json, sys, time
    import httpx

    url, token, sid, seconds, concurrency = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25", "Authorization": "Bearer " + token, "Mcp-Session-Id": sid}

    async def one(client, rid):
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": {}}
        try:
            r = await client.post(url, headers=headers, json=body, timeout=120)
        except httpx.HTTPError as e:
            return {"kind": "transport", "text": repr(e)}
        text = r.text
        if r.status_code == 200 and '"tools":[' in text:
            return {"kind": "list", "bytes": len(text)}
        return {"kind": "refused", "status": r.status_code, "text": text[:2000]}

    async def main():
        out, rid = [], 1000
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits) as client:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                out += await asyncio.gather(*(one(client, rid + i) for i in range(concurrency)))
                rid += concurrency
        print(json.dumps(out))

    asyncio.run(main())
    """
)


async def test_a_tenants_tool_lists_are_bounded_and_do_not_slow_another(tmp_path):
    data = tmp_path / "data"
    with tenant_server(env={"STEPHOST_DATA_DIR": str(data)}) as server:
        url = server.url
        # Alpha saves as many long saved batches as it may, up to 100
        # (saved_batches.max_per_tenant).
        saved, refusals = 0, []
        async with httpx.AsyncClient(timeout=120) as client:
            for n in range(100):
                r = await stateless_call(client, url, "save_batch", long_batch(n), A_TOKEN, request_id=n + 1, timeout=120)
                if r.result and not r.result.get("isError"):
                    saved += 1
                else:
                    refusals.append(call_text(r))
            sid = await raw_session(client, url, A_TOKEN)
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            one_list = await client.post(url, headers=session_headers(A_TOKEN, sid), json=body, timeout=120)
        print(f"alpha saved {saved} long batches; one tools/list is {len(one_list.text)} bytes")
        assert saved >= 1
        if refusals:
            assert f"saved_batches.max_list_bytes = {MAX_LIST_BYTES}" in refusals[0], refusals[0][:600]
            assert str(data) not in refusals[0]

        async with http_session_with_id(url, B_TOKEN) as (b, _):
            await b.call_tool("testkit_echo", {"value": "warm"})
            quiet_stop = asyncio.Event()
            quiet_stop.set()
            quiet = await victim_latencies(b, quiet_stop, at_least=30)
            await asyncio.sleep(0.5)
            idle = proc_status(server.pid)["VmRSS"]
            reset_peak_rss(server.pid)

            attacker = await asyncio.create_subprocess_exec(
                sys.executable, "-c", ATTACKER, url, A_TOKEN, sid, str(ATTACK_S), str(CONCURRENT_LISTS),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
            stop = asyncio.Event()

            async def attack():
                try:
                    out, err = await asyncio.wait_for(attacker.communicate(), timeout=400)
                finally:
                    stop.set()
                assert attacker.returncode == 0, err.decode()[-2000:]
                return json.loads(out)

            outcomes, during = await asyncio.gather(attack(), victim_latencies(b, stop))
            peak = proc_status(server.pid)["VmHWM"]
        assert server.proc.poll() is None, "the server died"

    lists = [o for o in outcomes if o["kind"] == "list"]
    refused = [o for o in outcomes if o["kind"] == "refused"]
    others = [o for o in outcomes if o["kind"] not in ("list", "refused")]
    quiet_p99, during_p99 = percentile(quiet, 0.99), percentile(during, 0.99)
    growth = peak - idle
    print(
        f"{len(lists)} lists answered, {len(refused)} refused; beta p99 quiet {quiet_p99 * 1e3:.0f} ms, "
        f"during {during_p99 * 1e3:.0f} ms over {len(during)} calls; RSS idle {idle / MIB:.0f} MiB, "
        f"peak {peak / MIB:.0f} MiB"
    )
    assert len(one_list.text) < MAX_LIST_BYTES + 512 * 1024, "the list is capped"
    assert not others, others[:3]
    assert lists, "some of alpha's lists are answered"
    for o in refused:
        assert "mcp.tool_lists_per_minute" in o["text"], o
    assert max(o["bytes"] for o in lists) < MAX_LIST_BYTES + 512 * 1024
    assert during_p99 < 2 * quiet_p99 + 0.2, f"beta's p99 went from {quiet_p99 * 1e3:.0f} ms to {during_p99 * 1e3:.0f} ms"
    assert growth < RSS_BOUND, f"peak RSS grew by {growth / MIB:.0f} MiB"


GREET = {
    "name": "greet",
    "description": "Echo a greeting.",
    "parameters": {"type": "object", "properties": {"who": {"type": "string"}}},
    "steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": "hello ${params.who}"}}],
}


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


async def call(client, url, tool, args, token, rid=1):
    return await stateless_call(client, url, tool, args, token, request_id=rid, timeout=60)


def is_error(r):
    return r.result is None or bool(r.result.get("isError"))


def saved_file(store, tenant, batches):
    store.mkdir(parents=True, exist_ok=True)
    (store / f"{tenant}.json").write_text(json.dumps({"saved_batches": 1, "batches": batches}))


def no_data_path(texts, *paths):
    for text in texts:
        for path in paths:
            assert str(path) not in text, f"an error shows the server's data path: {text[:600]}"


async def test_saved_batches_are_the_host_users_alone(tmp_path):
    data = tmp_path / "data"
    store = data / "saved-batches"
    env = {"STEPHOST_DATA_DIR": str(data)}
    with tenant_server(env=env) as server:
        async with httpx.AsyncClient(timeout=60) as client:
            r = await call(client, server.url, "save_batch", GREET, A_TOKEN)
            assert not is_error(r), r
        # Nobody else on the machine reads a tenant's steps.
        assert (oct(mode(store)), oct(mode(store / "alpha.json"))) == ("0o700", "0o600")

    # A file from an older host (0644 in a 0755 folder) and the temporary file
    # of a write a crash cut short: fixed and removed at start.
    os.chmod(store / "alpha.json", 0o644)
    os.chmod(store, 0o755)
    (store / "alpha.json.tmp-2147483646").write_text("{half a fi")
    with tenant_server(env=env) as server:
        assert (oct(mode(store)), oct(mode(store / "alpha.json"))) == ("0o700", "0o600")
        assert not (store / "alpha.json.tmp-2147483646").exists(), "a crash's temporary file is removed at start"
        async with httpx.AsyncClient(timeout=60) as client:
            r = await call(client, server.url, "greet", {"who": "Ada"}, A_TOKEN)
        assert not is_error(r) and r.structured["steps"][0]["value"] == "hello Ada", r


async def test_a_failed_write_leaves_no_temporary_file_and_names_no_path(tmp_path):
    data = tmp_path / "data"
    store = data / "saved-batches"
    with tenant_server(env={"STEPHOST_DATA_DIR": str(data)}) as server:
        async with httpx.AsyncClient(timeout=60) as client:
            r = await call(client, server.url, "save_batch", GREET, A_TOKEN)
            assert not is_error(r), r
            # The next write fails at its last step: the file became a folder.
            (store / "alpha.json").unlink()
            (store / "alpha.json").mkdir()
            (store / "alpha.json" / "in-the-way").write_text("x")
            r = await call(client, server.url, "save_batch", {**GREET, "name": "greet2"}, A_TOKEN, rid=2)
            assert is_error(r), r
            text = call_text(r)
            leftovers = sorted(p.name for p in store.iterdir() if ".tmp-" in p.name)
            r = await call(client, server.url, "list_batches", {}, A_TOKEN, rid=3)
            kept = [b["name"] for b in r.structured["batches"]]
        log = "".join(server.log)
    assert not leftovers, leftovers
    no_data_path([text], tmp_path)
    assert "saved-batch store" in text, text[:600]
    assert kept == ["greet"], "what was not written is not kept"
    assert "alpha.json" in log, "the operator's log names the file"


async def test_an_unreadable_store_is_an_error_not_an_empty_one(tmp_path):
    data = tmp_path / "data"
    store = data / "saved-batches"
    saved_file(store, "alpha", [GREET])
    (store / "beta.json").write_text("{not json")
    texts = []
    with tenant_server(env={"STEPHOST_DATA_DIR": str(data)}) as server:
        async with httpx.AsyncClient(timeout=60) as client:
            r = await call(client, server.url, "list_batches", {}, B_TOKEN)
            texts.append(call_text(r))
            assert is_error(r), f"an unreadable store reads as: {texts[-1][:600]}"
            assert "no saved batches" not in texts[-1]
            assert "saved-batch store cannot be read" in texts[-1], texts[-1][:600]
            for rid, (tool, args) in enumerate([("save_batch", GREET), ("delete_batch", {"name": "greet"})], 2):
                r = await call(client, server.url, tool, args, B_TOKEN, rid=rid)
                texts.append(call_text(r))
                assert is_error(r) and "saved-batch store cannot be read" in texts[-1], texts[-1][:600]
            # Beta's other tools still work; alpha's store is its own.
            r = await call(client, server.url, "testkit_echo", {"value": 1}, B_TOKEN, rid=5)
            assert not is_error(r), r
            r = await call(client, server.url, "greet", {"who": "Ada"}, A_TOKEN, rid=6)
            assert not is_error(r) and r.structured["steps"][0]["value"] == "hello Ada", r
        log = "".join(server.log)
    assert (store / "beta.json").read_text() == "{not json", "an unreadable file is never overwritten"
    assert "beta.json" in log, "the operator's log names the file"
    no_data_path(texts, tmp_path)
