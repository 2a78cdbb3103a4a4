#!/usr/bin/env python3
"""Load test: many MCP clients of several tenants against one stephost, with and
without an attacker tenant running runaway batches.

It starts `target/release/stephost serve --http 127.0.0.1:0 --tenants FILE`
itself, with a generated tenants file (one token per tenant; the file holds only
their sha256), and then runs two phases:

1. baseline: N concurrent MCP clients (streamable HTTP, the `mcp` SDK), spread
   over T tenants, each doing K small batches;
2. under attack: the same, while an extra `attacker` tenant keeps C batches
   running at once, alternating `testkit.spin` (runs until its step timeout, the
   tenant's maximum) and `testkit.alloc` past its memory limit.

Each client batch is a 3-step chain with a value unique to the client and batch:
`echo {client, batch, nonce}` -> `echo ${STEP_1.nonce}` -> `count`. The client
checks that step 2 returned its own nonce and that `count` returned its batch
number (the counter lives in the client's session, and the session ids of
different tenants deliberately collide: tenant scoping keeps them apart). A batch
that does not come back passed is *lost*; a value that belongs to someone else
or a counter that skips is *mixed*. Both must be 0: the script exits 1 otherwise.

It reports p50/p99 batch latency of the normal tenants in both phases, how many
attacker batches ended as expected (timed out / memory limit), `busy`
back-pressure seen, and the server's memory (VmRSS, VmHWM) before, between and
after the phases.

    .venv/bin/python bench/load_test.py                  # 200 clients, 4 tenants
    .venv/bin/python bench/load_test.py --small          # CI size
    .venv/bin/python bench/load_test.py --clients 400 --batches 10 --json out.json

Without tenancy in the binary (`serve --help` lists no `--tenants`), it runs every
client and the attacker in the one local tenant, and says so.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BIN = ROOT / "target" / "release" / "stephost"

# Limits of the attacker tenant: small, so its runaway batches hit them quickly.
ATTACKER_MEMORY_MIB = 16
ATTACKER_STEP_TIMEOUT_MS = 2000


# --------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------


@dataclass
class Tenant:
    id: str
    token: str
    clients: int = 0


def host_config(args: argparse.Namespace, cache_dir: Path) -> str:
    """stephost.toml for the run: enough pool slots and sessions for every client of
    both phases (sessions outlive their MCP connections until reaped) and the attacker."""
    sessions = 2 * args.clients + args.attacker_concurrency * 4 + 16
    return f"""
[limits]
max_step_timeout_ms = {max(ATTACKER_STEP_TIMEOUT_MS, 30000)}

[engine]
max_instances = {sessions + 64}
max_memory_mib = 256
cache_dir = "{cache_dir}"

[sessions]
max_sessions = {sessions * 2}
idle_timeout_s = 600
"""


def tenants_file(tenants: list[Tenant], attacker: Tenant, args: argparse.Namespace) -> str:
    """The tenants TOML: normal tenants with room for their clients, and the
    attacker with small memory and step-time limits."""
    out = []
    for t in tenants:
        out.append(f"""
[[tenants]]
id = "{t.id}"
token_sha256 = ["{hashlib.sha256(t.token.encode()).hexdigest()}"]
plugins = ["testkit"]
[tenants.limits]
max_concurrent_batches = {max(4, t.clients)}
max_sessions = {t.clients * 2 + 4}
batches_per_minute = 100000
""")
    out.append(f"""
[[tenants]]
id = "{attacker.id}"
token_sha256 = ["{hashlib.sha256(attacker.token.encode()).hexdigest()}"]
plugins = ["testkit"]
[tenants.limits]
memory_mib = {ATTACKER_MEMORY_MIB}
max_step_timeout_ms = {ATTACKER_STEP_TIMEOUT_MS}
max_concurrent_batches = {args.attacker_concurrency}
max_sessions = {args.attacker_concurrency * 4 + 4}
batches_per_minute = 100000
""")
    return "".join(out)


def supports_tenants(binary: Path) -> bool:
    help_text = subprocess.run([str(binary), "serve", "--help"], capture_output=True, text=True, check=False).stdout
    return "--tenants" in help_text


class Server:
    """`stephost serve --http 127.0.0.1:0`, with its stderr in a log file and the
    port read from it."""

    def __init__(self, binary: Path, workdir: Path, config: str, tenants: str | None):
        self.binary = binary
        self.workdir = workdir
        self.config = config
        self.tenants = tenants
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.log = workdir / "server.log"

    def __enter__(self) -> Server:
        config_path = self.workdir / "stephost.toml"
        config_path.write_text(self.config)
        cmd = [str(self.binary), "--config", str(config_path), "serve", "--http", "127.0.0.1:0"]
        if self.tenants is not None:
            tenants_path = self.workdir / "tenants.toml"
            tenants_path.write_text(self.tenants)
            cmd += ["--tenants", str(tenants_path)]
        env = dict(os.environ)
        env.setdefault("STEPHOST_LOG", "warn")
        self._log_file = open(self.log, "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._log_file, env=env, cwd=self.workdir)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = re.search(r"at (http://\S+/mcp)", self.log.read_text())
            if m:
                self.url = m.group(1)
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.__exit__(None, None, None)
        raise RuntimeError(f"stephost did not start:\n{self.log.read_text()}")

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log_file.close()

    def memory(self) -> dict[str, int]:
        """VmRSS, VmHWM and VmSize of the server, in KiB."""
        out = {}
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "VmSize", "Threads"):
                out[key] = int(value.split()[0])
        return out


# --------------------------------------------------------------------------------------
# Clients
# --------------------------------------------------------------------------------------


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    passed: int = 0
    lost: int = 0
    mixed: int = 0
    busy_retries: int = 0
    problems: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(text)


def structured(result) -> dict:
    """The structured result of a tool call (falling back to its JSON text)."""
    if result.structuredContent:
        return result.structuredContent
    for item in result.content:
        text = getattr(item, "text", None)
        if text:
            try:
                return json.loads(text)
            except ValueError:
                continue
    return {}


def result_text(result) -> str:
    return " ".join(getattr(item, "text", "") or "" for item in result.content)


def is_busy(result) -> bool:
    if not result.isError:
        return False
    data = structured(result)
    code = data.get("code") or (data.get("error") or {}).get("code")
    return code == "busy" or "retry after" in result_text(result).lower()


async def call_with_retry(session: ClientSession, tally: Tally, tool: str, args: dict, timeout_s: float):
    """Calls a tool, retrying `busy` answers with a short backoff."""
    delay = 0.02
    for _ in range(12):
        result = await session.call_tool(tool, args, read_timeout_seconds=timedelta(seconds=timeout_s))
        if not is_busy(result):
            return result
        tally.busy_retries += 1
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)
    return result


def http_client(token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return create_mcp_http_client(headers=headers, timeout=httpx.Timeout(60, read=600))


async def normal_client(
    url: str, tenant: Tenant | None, index: int, session_id: str, batches: int, tally: Tally, start: asyncio.Event
) -> None:
    """One MCP client doing `batches` 3-step chains in its own session."""
    token = tenant.token if tenant else None
    label = f"{tenant.id if tenant else 'local'}/{session_id}"
    try:
        async with http_client(token) as client:
            async with streamable_http_client(url, http_client=client) as (read, write, _):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await start.wait()
                    for k in range(1, batches + 1):
                        nonce = f"{label}#{k}#{secrets.token_hex(8)}"
                        batch = {
                            "session_id": session_id,
                            "steps": [
                                {
                                    "plugin": "testkit",
                                    "verb": "echo",
                                    "input": {"value": {"client": label, "batch": k, "nonce": nonce}},
                                },
                                {"plugin": "testkit", "verb": "echo", "input": {"value": "${STEP_1.nonce}"}},
                                {"plugin": "testkit", "verb": "count"},
                            ],
                        }
                        started = time.perf_counter()
                        try:
                            result = await call_with_retry(session, tally, "batch", batch, 120)
                        except Exception as e:  # noqa: BLE001 - every failure is a lost result
                            tally.lost += 1
                            tally.note(f"{label} batch {k}: {type(e).__name__}: {e}")
                            continue
                        elapsed = (time.perf_counter() - started) * 1e3
                        report = structured(result)
                        if result.isError or report.get("status") != "passed":
                            tally.lost += 1
                            tally.note(f"{label} batch {k}: {report.get('status')} {result_text(result)[:300]}")
                            continue
                        values = [s.get("value") for s in report.get("steps", [])]
                        if values[:1] != [{"client": label, "batch": k, "nonce": nonce}] or values[1:2] != [nonce]:
                            tally.mixed += 1
                            tally.note(f"{label} batch {k}: got values {str(values)[:300]}")
                        elif values[2:3] != [k]:
                            tally.mixed += 1
                            tally.note(f"{label} batch {k}: count {values[2:3]}, expected {k}")
                        elif report.get("session_id") not in (None, session_id):
                            tally.mixed += 1
                            tally.note(f"{label} batch {k}: ran in session {report.get('session_id')}")
                        else:
                            tally.passed += 1
                            tally.latencies_ms.append(elapsed)
                            tally.server_ms.append(float(report.get("time_ms") or 0.0))
    except Exception as e:  # noqa: BLE001
        tally.lost += 1
        tally.note(f"{label}: connection failed: {type(e).__name__}: {e}")


@dataclass
class AttackTally:
    spin_timed_out: int = 0
    alloc_limited: int = 0
    other: int = 0
    busy: int = 0
    samples: list[str] = field(default_factory=list)


async def attacker_loop(url: str, tenant: Tenant | None, index: int, stop: asyncio.Event, tally: AttackTally) -> None:
    """Keeps one runaway batch running at a time until `stop`."""
    token = tenant.token if tenant else None
    step_timeout = ATTACKER_STEP_TIMEOUT_MS
    # Past the attacker tenant's memory limit; without tenants, past the host's
    # largest pool slot (engine.max_memory_mib).
    alloc_mib = ATTACKER_MEMORY_MIB * 4 if tenant else 1024
    try:
        async with http_client(token) as client:
            async with streamable_http_client(url, http_client=client) as (read, write, _):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    n = 0
                    while not stop.is_set():
                        n += 1
                        spin = n % 2 == 1
                        step = (
                            {"plugin": "testkit", "verb": "spin", "timeout_ms": step_timeout}
                            if spin
                            else {"plugin": "testkit", "verb": "alloc", "input": {"mib": alloc_mib}}
                        )
                        batch = {"session_id": f"attack-{index}", "steps": [step, step]}
                        result = await session.call_tool("batch", batch, read_timeout_seconds=timedelta(seconds=120))
                        if is_busy(result):
                            tally.busy += 1
                            await asyncio.sleep(0.05)
                            continue
                        report = structured(result)
                        steps = report.get("steps") or [{}]
                        code = (steps[0].get("error") or {}).get("code")
                        if spin and code == "timeout":
                            tally.spin_timed_out += 1
                        elif not spin and code == "memory-limit":
                            tally.alloc_limited += 1
                        else:
                            tally.other += 1
                            if len(tally.samples) < 5:
                                tally.samples.append(f"{'spin' if spin else 'alloc'}: {str(report)[:300]}")
    except Exception as e:  # noqa: BLE001
        tally.other += 1
        if len(tally.samples) < 5:
            tally.samples.append(f"attacker {index}: {type(e).__name__}: {e}")


async def refused_without_token(url: str) -> bool:
    """A request with a wrong token must get HTTP 401."""
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.post(
            url,
            headers={"Authorization": "Bearer wrong", "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
        return response.status_code == 401


async def phase(url: str, tenants: list[Tenant] | None, args: argparse.Namespace, tag: str) -> Tally:
    """N clients, K batches each; returns their tally."""
    tally = Tally()
    start = asyncio.Event()
    tasks = []
    for i in range(args.clients):
        if tenants:
            tenant = tenants[i % len(tenants)]
            # The same session ids in every tenant: tenant scoping keeps them apart.
            session_id = f"{tag}-s{i // len(tenants)}"
        else:
            tenant = None
            session_id = f"{tag}-c{i}"
        tasks.append(asyncio.create_task(normal_client(url, tenant, i, session_id, args.batches, tally, start)))
    # Let every client connect and initialize, then start them together.
    await asyncio.sleep(min(10.0, 0.5 + args.clients * 0.02))
    start.set()
    await asyncio.gather(*tasks)
    return tally


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    i = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[i]


async def run(args: argparse.Namespace) -> int:
    binary = Path(args.binary)
    if not binary.exists():
        print(f"no stephost binary at {binary}: build it with `cargo build --release`", file=sys.stderr)
        return 2
    with_tenants = supports_tenants(binary) and not args.no_tenants
    tenants = [Tenant(f"tenant{i}", secrets.token_urlsafe(32)) for i in range(args.tenants)]
    for i in range(args.clients):
        tenants[i % len(tenants)].clients += 1
    attacker = Tenant("attacker", secrets.token_urlsafe(32))
    with tempfile.TemporaryDirectory(prefix="stephost-load-") as tmp:
        workdir = Path(tmp)
        cache = Path(tempfile.gettempdir()) / "stephost-load-cache"
        config = host_config(args, cache)
        tenant_toml = tenants_file(tenants, attacker, args) if with_tenants else None
        with Server(binary, workdir, config, tenant_toml) as server:
            url = server.url
            mode = (
                f"{args.tenants} tenants + attacker tenant"
                if with_tenants
                else "one local tenant (no --tenants in this binary)"
            )
            print(
                f"stephost at {url}: {args.clients} clients x {args.batches} batches, {mode}, "
                f"attacker concurrency {args.attacker_concurrency}",
                file=sys.stderr,
            )
            auth_ok = await refused_without_token(url) if with_tenants else None
            mem_start = server.memory()

            baseline = await phase(url, tenants if with_tenants else None, args, "base")
            mem_baseline = server.memory()

            stop = asyncio.Event()
            attack = AttackTally()
            attackers = [
                asyncio.create_task(attacker_loop(url, attacker if with_tenants else None, i, stop, attack))
                for i in range(args.attacker_concurrency)
            ]
            # Let the runaway batches get going first.
            await asyncio.sleep(1.0)
            attacked = await phase(url, tenants if with_tenants else None, args, "attack")
            stop.set()
            await asyncio.gather(*attackers)
            mem_end = server.memory()

    rows = [
        ("clients x batches", f"{args.clients} x {args.batches}", f"{args.clients} x {args.batches}"),
        ("batches passed", baseline.passed, attacked.passed),
        ("lost", baseline.lost, attacked.lost),
        ("mixed up", baseline.mixed, attacked.mixed),
        ("busy retries", baseline.busy_retries, attacked.busy_retries),
        ("latency p50 ms", f"{pct(baseline.latencies_ms, 50):.1f}", f"{pct(attacked.latencies_ms, 50):.1f}"),
        ("latency p99 ms", f"{pct(baseline.latencies_ms, 99):.1f}", f"{pct(attacked.latencies_ms, 99):.1f}"),
        (
            "latency max ms",
            f"{max(baseline.latencies_ms, default=float('nan')):.1f}",
            f"{max(attacked.latencies_ms, default=float('nan')):.1f}",
        ),
        ("in-host p50 ms", f"{pct(baseline.server_ms, 50):.2f}", f"{pct(attacked.server_ms, 50):.2f}"),
        ("in-host p99 ms", f"{pct(baseline.server_ms, 99):.2f}", f"{pct(attacked.server_ms, 99):.2f}"),
    ]
    print()
    print(f"{'':24} {'baseline':>12} {'under attack':>14}")
    for name, a, b in rows:
        print(f"{name:24} {a!s:>12} {b!s:>14}")
    print()
    print(
        f"attacker batches: {attack.spin_timed_out} spin timed out, {attack.alloc_limited} alloc hit the memory "
        f"limit, {attack.other} other, {attack.busy} busy"
    )
    for sample in attack.samples:
        print(f"  attacker sample: {sample}")

    def mib(kib: int) -> str:
        return f"{kib / 1024:.0f} MiB"

    print(
        f"server RSS: start {mib(mem_start['VmRSS'])}, after baseline {mib(mem_baseline['VmRSS'])}, "
        f"after attack {mib(mem_end['VmRSS'])}; peak {mib(mem_end['VmHWM'])}; "
        f"virtual {mem_end['VmSize'] / 1024 / 1024:.1f} GiB; threads {mem_end['Threads']}"
    )
    if auth_ok is not None:
        print(f"wrong token refused with 401: {auth_ok}")
    for problem in (baseline.problems + attacked.problems)[:20]:
        print(f"  problem: {problem}")

    summary = {
        "clients": args.clients,
        "batches": args.batches,
        "tenants": args.tenants if with_tenants else 1,
        "with_tenants": with_tenants,
        "attacker_concurrency": args.attacker_concurrency,
        "baseline": {
            "passed": baseline.passed,
            "lost": baseline.lost,
            "mixed": baseline.mixed,
            "busy_retries": baseline.busy_retries,
            "p50_ms": pct(baseline.latencies_ms, 50),
            "p99_ms": pct(baseline.latencies_ms, 99),
            "in_host_p50_ms": pct(baseline.server_ms, 50),
            "in_host_p99_ms": pct(baseline.server_ms, 99),
            "mean_ms": statistics.fmean(baseline.latencies_ms) if baseline.latencies_ms else None,
        },
        "attack": {
            "passed": attacked.passed,
            "lost": attacked.lost,
            "mixed": attacked.mixed,
            "busy_retries": attacked.busy_retries,
            "p50_ms": pct(attacked.latencies_ms, 50),
            "p99_ms": pct(attacked.latencies_ms, 99),
            "in_host_p50_ms": pct(attacked.server_ms, 50),
            "in_host_p99_ms": pct(attacked.server_ms, 99),
            "mean_ms": statistics.fmean(attacked.latencies_ms) if attacked.latencies_ms else None,
            "attacker": {
                "spin_timed_out": attack.spin_timed_out,
                "alloc_limited": attack.alloc_limited,
                "other": attack.other,
                "busy": attack.busy,
            },
        },
        "memory_kib": {"start": mem_start, "after_baseline": mem_baseline, "after_attack": mem_end},
        "auth_refused": auth_ok,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))

    bad = baseline.lost + baseline.mixed + attacked.lost + attacked.mixed
    if auth_ok is False:
        print("FAIL: a wrong token was not refused with 401", file=sys.stderr)
        return 1
    if bad:
        print(f"FAIL: {bad} lost or mixed-up results", file=sys.stderr)
        return 1
    if attack.spin_timed_out + attack.alloc_limited == 0:
        print("FAIL: no attacker batch ended at its limit", file=sys.stderr)
        return 1
    print("ok: no lost or mixed-up results")
    return 0


def main() -> int:
    # The SDK logs a warning for every session whose DELETE is answered 202.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.environ.get("STEPHOST_BIN", str(DEFAULT_BIN)))
    parser.add_argument("--clients", type=int, default=200, help="concurrent MCP clients (default 200)")
    parser.add_argument("--tenants", type=int, default=4, help="tenants the clients are spread over (default 4)")
    parser.add_argument("--batches", type=int, default=5, help="batches per client (default 5)")
    parser.add_argument(
        "--attacker-concurrency",
        type=int,
        default=4,
        help="runaway batches the attacker keeps running at once (default 4)",
    )
    parser.add_argument("--small", action="store_true", help="CI size: 20 clients, 5 batches, attacker concurrency 2")
    parser.add_argument("--no-tenants", action="store_true", help="run without a tenants file even if supported")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    if args.small:
        args.clients, args.batches, args.attacker_concurrency = 20, 5, 2
    if args.clients < 1 or args.tenants < 1 or args.batches < 1 or args.attacker_concurrency < 0:
        parser.error("--clients, --tenants and --batches must be at least 1")
    args.tenants = min(args.tenants, args.clients)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
