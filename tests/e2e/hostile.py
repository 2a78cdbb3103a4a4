"""Hostile arguments for every tool a server offers (issue 39), and the campaign
that fires them at a shared `stephost serve --http --tenants` while a second
tenant makes ordinary calls.

Used by tests/e2e/test_adversarial.py (CI, bounded to a few minutes) and
bench/adversarial.py (the same campaign, bigger, printing JSON).

How it works, in one paragraph: the attacker reads `tools/list` (built-ins,
plugins, its own saved batches: whatever is offered) and derives, from each
tool's `inputSchema` alone, a set of hostile argument sets (`variants`): the
largest strings the server accepts, `${...}` reference fan-out, nesting at and
past the depth limit, arrays at their largest, integers at their extremes,
backtracking bait for patterns, and, for batch-like tools (a property that is
an array of objects), many steps fanning one large value out through
references, with every boolean option (`dry_run`, `trace`, `output_xml`, ...)
switched on. Each tool is one *attack*: its variants fired concurrently, again
and again for a minimum time, while a separate victim process (its own
tenant, its own source address) times ordinary calls. Variants only ever
refused at admission (busy, pool share, session cap) are sent again, a few at
a time, so every tool is exercised past the gate. Three more attacks follow:
saved batches filled to the tenant's cap at the largest size, a flood of
`tools/list`, and every session the attacker may hold filled with an instance
of every plugin (and a Python evaluator). Per attack the campaign records the
server's peak RSS (VmHWM reset before each attack, and the host's own part
outside the WebAssembly pool, sampled), its CPU, the victim's latency and
errors, and each variant's outcome, time and answer size; `Campaign.judge`
turns them into failures.

Nothing here knows a tool by name except `item_seeds` (how to make a valid
step holding a value for the two batch formats whose step schema cannot say:
the generic one, from the `batch` tool's own list of verbs, and Robot
Framework's, with `Set Variable`) and the victim's own calls. A tool added
next month is attacked by the generic part without anyone writing anything.

Narrowing a run (to confirm a fix): STEPHOST_ADVERSARIAL_ONLY=REGEX keeps the
attacks whose name matches (`tool:batch$`, `tools/list`), and
STEPHOST_ADVERSARIAL_SKIP=REGEX leaves out the variants whose name matches
(`^refs@`).

Run it alone: `python tests/e2e/hostile.py victim URL TOKEN OUT` is the victim
process (started by the campaign).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from conftest import BIN, mcp_messages, response_for, server_env, stateless_request  # noqa: E402

KIB = 1024
MIB = 1024 * 1024

# --------------------------------------------------------------------------------------
# Configuration: the server's and the tenants' limits. Every bound the campaign
# checks is computed from these same numbers (see `rss_bounds`).
# --------------------------------------------------------------------------------------

ATTACKER = "attacker"
VICTIM = "victim"


@dataclass
class Setup:
    """The limits the server runs with. Defaults: small enough that every attack
    finishes in seconds on a 2-core machine, large enough to be realistic (a
    tenant on a small shared host)."""

    # [server.http] max_body_bytes: the documented default, 4 MiB.
    max_body_bytes: int = 4 * MIB
    # [server.http] max_inflight_bytes_per_tenant: what one tenant's request
    # bodies in flight may cost once parsed (estimated before parsing).
    inflight_bytes_per_tenant: int = 256 * MIB  # the default
    # [limits] max_input_depth (host-wide; tenants cannot narrow it): the default.
    max_input_depth: int = 64
    # [server]
    max_concurrent_batches: int = 8
    max_connections: int = 256
    max_connections_per_peer: int = 128
    # [sessions] max_sessions: the tenants' caps must fit in it.
    max_sessions: int = 64
    unclaimed_idle_timeout_s: int = 10
    # [saved_batches]
    saved_max_per_tenant: int = 24
    saved_max_bytes: int = 256 * KIB
    attacker: dict = field(
        default_factory=lambda: {
            "memory_mib": 64,
            "fuel_per_step": 30_000_000_000,  # about 3 s of busy CPU
            "max_step_timeout_ms": 3_000,
            "max_batch_timeout_ms": 6_000,
            "max_steps_per_batch": 100,
            "max_result_bytes": 1 * MIB,
            "max_report_bytes": 4 * MIB,
            "max_session_vars_bytes": 2 * MIB,
            "max_input_bytes": 1 * MIB,
            # One batch per core of the 2-core CI machine.
            "max_concurrent_batches": 2,
            "max_sessions": 8,
            # The rate is not what this suite attacks (test_abuse.py does): a
            # flood of refused calls must not use up the minute before every
            # tool has been attacked for real.
            "batches_per_minute": 60_000,
        }
    )
    victim: dict = field(
        default_factory=lambda: {
            "memory_mib": 64,
            "max_result_bytes": 1 * MIB,
            "max_report_bytes": 1 * MIB,
            "max_session_vars_bytes": 1 * MIB,
            "max_input_bytes": 1 * MIB,
            "max_concurrent_batches": 2,
            "max_sessions": 8,
            "batches_per_minute": 6_000,
        }
    )
    victim_plugins: tuple = ("testkit", "rf")
    # Concurrency of one attack: calls in flight at once.
    concurrency: int = 16
    # Each attack keeps firing its variants for at least this long (so the
    # victim gets enough samples), then waits for the calls it started.
    min_attack_s: float = 1.2
    # Per-call budget past the attacker's batch timeout: queueing, a 4 MiB
    # upload and a large answer on a busy 2-core machine.
    budget_slack_s: float = 10.0
    # The victim's p99 under attack may be max(2 x quiet, quiet + floor).
    # 1 s, not 2x quiet alone: on 2 cores an attacker allowed 2 concurrent
    # batches may keep both cores busy with legitimate work, and the victim
    # then waits for a core (docs/security.md, "Denial of service below the
    # limits"). What this bound catches is a host that stalls (a worker held
    # by one request, a lock, a pool exhausted), which shows as seconds.
    p99_floor_s: float = 1.0
    quiet_s: float = 4.0
    # Attacks not started by then are reported as not run (0: no budget). A
    # passing run takes about 2.5 minutes on 2 cores; failing attacks take
    # longer (re-measured, the server restarted).
    time_budget_s: float = 0.0


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def toml_table(d: dict) -> str:
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in d.items())


def config_text(setup: Setup, tmp: Path, metrics_token: str, max_instances: int) -> str:
    nowhere = "/nonexistent/stephost-adversarial"
    return f"""
[engine]
max_instances = {max_instances}

[sessions]
max_sessions = {setup.max_sessions}
# Stateless calls (no session_id) leave sessions behind that hold instance-pool
# slots until they expire: short, so the attacker's own leftovers do not keep
# it busy for a minute between attacks.
unclaimed_idle_timeout_s = {setup.unclaimed_idle_timeout_s}

[server]
max_concurrent_batches = {setup.max_concurrent_batches}
metrics_token_sha256 = "{sha(metrics_token)}"

[server.http]
max_body_bytes = {setup.max_body_bytes}
max_inflight_bytes_per_tenant = {setup.inflight_bytes_per_tenant}
max_connections = {setup.max_connections}
max_connections_per_peer = {setup.max_connections_per_peer}

# No browser ever starts in this suite: the browser tools are attacked at the
# argument level and must fail cleanly and quickly.
[browser]
chromium = "{nowhere}/chromium"
chromedriver = "{nowhere}/chromedriver"
firefox = "{nowhere}/firefox"
geckodriver = "{nowhere}/geckodriver"

[saved_batches]
dir = "{tmp / 'saved'}"
max_per_tenant = {setup.saved_max_per_tenant}
max_bytes = {setup.saved_max_bytes}
"""


def tenants_text(setup: Setup, tokens: dict) -> str:
    return f"""
[[tenants]]
id = "{ATTACKER}"
token_sha256 = ["{sha(tokens[ATTACKER])}"]
plugins = ["*"]
[tenants.limits]
{toml_table(setup.attacker)}
[[tenants]]
id = "{VICTIM}"
token_sha256 = ["{sha(tokens[VICTIM])}"]
plugins = {json.dumps(list(setup.victim_plugins))}
[tenants.limits]
{toml_table(setup.victim)}
"""


def loaded_plugins() -> list[str]:
    """The plugins the binary loads (`stephost plugins`), by name."""
    p = subprocess.run([BIN, "plugins", "--json"], capture_output=True, text=True, timeout=120, env=server_env())
    names = []
    with contextlib.suppress(ValueError):
        names = [info["name"] for info in json.loads(p.stdout)]
    if p.returncode != 0 or not names:
        raise RuntimeError(f"`stephost plugins` failed: {p.stdout[-800:]}{p.stderr[-800:]}")
    return list(dict.fromkeys(names))


def slots_per_instance() -> int:
    """The most pool slots one session's instance of a plugin may take, as the
    host says at start when a tenant's share is too small (the rf plugin with
    its Python evaluator); 1 for a host that counts instances, not slots."""
    with tempfile.TemporaryDirectory(prefix="stephost-adversarial-probe-") as tmp:
        cfg, ten = Path(tmp) / "c.toml", Path(tmp) / "t.toml"
        cfg.write_text("[engine]\nmax_instances = 1\n")
        ten.write_text(f'[[tenants]]\nid = "probe"\ntoken_sha256 = ["{sha("probe")}"]\n')
        env = server_env({"STEPHOST_LOG": "warn", "STEPHOST_DATA_DIR": tmp})
        proc = subprocess.Popen([BIN, "--config", str(cfg), "serve", "--http", "127.0.0.1:0", "--tenants", str(ten)],
                                stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
        needed = 1
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                line = proc.stderr.readline()
                if not line or "serving MCP" in line:
                    break
                m = re.search(r"needs (\d+) instance-pool slots", line)
                if m:
                    needed = max(needed, int(m.group(1)))
        finally:
            proc.kill()
            proc.wait(10)
        return needed


def pool_slots(setup: Setup, plugins: list[str], per_instance: int) -> int:
    """`engine.max_instances` as docs/security.md asks: each tenant's
    `max_sessions` times the plugins it may use, added up, so no tenant at its
    cap can exhaust the pool for the others; counted in the host's pool slots
    (`per_instance`: the most one plugin's instance takes, its Python evaluator
    included), so each tenant's even share holds all its sessions."""
    tenants = [(setup.attacker, len(plugins)), (setup.victim, len(setup.victim_plugins))]
    return len(tenants) * max(t["max_sessions"] * n * per_instance for t, n in tenants)


def rss_bounds(setup: Setup, baseline_host: int, plugins: list[str]) -> dict:
    """The documented bound on the server's resident memory, from the config.

    docs/security.md: one tenant's worst case is about
        max_concurrent_batches x max_report_bytes + max_sessions x max_session_vars_bytes
    on top of instance memory; docs/trace.md: each tenant keeps at most 64 MiB
    of traces. Requests are read within server.http.max_body_bytes.

    host part (everything outside the WebAssembly pool's mappings) <=
        baseline                                   idle, after warm-up
      + sum over tenants  max_concurrent_batches x max_report_bytes x K_REPORT
      + sum over tenants  max_sessions x max_session_vars_bytes
      + sum over tenants  64 MiB of traces
      + sum over tenants  max_inflight_bytes_per_tenant   requests in flight,
                                                 charged by their parsed size
      + SLACK
    with K_REPORT = 4 (the report, its JSON, the text rendering, the SSE frame);

    WebAssembly pool <= sum over tenants max_sessions x (plugins + 1) x memory_mib
    (every instance, and a Python evaluator per session, at its memory limit:
    loose, by design of the limits);

    whole process (VmHWM) <= host part + pool part.
    """
    k_report, trace_store, slack = 4, 64 * MIB, 64 * MIB
    tenants = [(setup.attacker, len(plugins)), (setup.victim, len(setup.victim_plugins))]
    terms = {
        "baseline": baseline_host,
        "reports": sum(t["max_concurrent_batches"] * t["max_report_bytes"] * k_report for t, _ in tenants),
        "session_vars": sum(t["max_sessions"] * t["max_session_vars_bytes"] for t, _ in tenants),
        "traces": trace_store * len(tenants),
        "bodies": setup.inflight_bytes_per_tenant * len(tenants),
        "slack": slack,
    }
    host = sum(terms.values())
    # The Python evaluator is an instance of its own, under the same limit.
    pool = sum(t["max_sessions"] * (n + 1) * t["memory_mib"] * MIB for t, n in tenants)
    return {"host": host, "pool": pool, "total": host + pool, "terms": terms,
            "formula": "host <= baseline + sum(cb x report x 4) + sum(sessions x vars) + tenants x 64 MiB traces"
                       " + tenants x max_inflight_bytes_per_tenant + 64 MiB; pool <= sum(sessions x (plugins + 1) x memory_mib)"}


def response_bound(setup: Setup) -> int:
    """Largest answer a tools/call may give: a report is bounded by
    max_report_bytes; the answer holds it as structured content and as text,
    JSON-escaped in an SSE frame (x4), plus the echoed request at most."""
    return 4 * setup.attacker["max_report_bytes"] + setup.max_body_bytes


# --------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------


class Server:
    """`stephost --config C serve --http 127.0.0.1:0 --tenants T --tools ...`,
    without DISPLAY (no desktop is reached) and with its own data directory."""

    def __init__(self, config: str, tenants: str, tools: str, tmp: Path):
        self.config, self.tenants, self.tools, self.tmp = config, tenants, tools, tmp
        self.proc = None
        self.url = None
        self.log: list[str] = []

    def start(self):
        cfg = self.tmp / "stephost.toml"
        cfg.write_text(self.config)
        ten = self.tmp / "tenants.toml"
        ten.write_text(self.tenants)
        env = server_env({"STEPHOST_DATA_DIR": str(self.tmp / "data")})
        for key in ("DISPLAY", "WAYLAND_DISPLAY"):
            env.pop(key, None)
        cmd = [BIN, "--config", str(cfg), "serve", "--http", "127.0.0.1:0", "--tenants", str(ten), "--tools", self.tools]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)
        deadline = time.monotonic() + 60
        self.log = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"at (http://\S+/mcp)", line)
            if m:
                self.url = m.group(1)
                threading.Thread(target=self._drain, daemon=True).start()
                return self
        self.proc.kill()
        raise RuntimeError("server did not start: " + "".join(self.log)[-3000:])

    def _drain(self):
        for line in self.proc.stderr:
            if len(self.log) < 20_000:
                self.log.append(line)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def exit_description(self):
        code = self.proc.poll()
        if code is None:
            return "running"
        if code < 0:
            return f"killed by signal {signal.Signals(-code).name}"
        tail = "".join(self.log[-15:])[-1500:]
        return f"exited with code {code}: {tail}"


# --------------------------------------------------------------------------------------
# Memory and CPU of the server process
# --------------------------------------------------------------------------------------


def status(pid) -> dict:
    out = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * KIB
    return out


def reset_peak(pid):
    """VmHWM := VmRSS (Linux `clear_refs` 5)."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


# The WebAssembly pooling allocator reserves one range for the linear memories
# of every slot (slots x 2 x 288 MiB by default): a mapping at least this large
# (virtual) is part of it. Inside, each slot in use has its memory image mapped
# from the compile cache and its heap anonymous, all adjacent; mimalloc's arenas
# (1 GiB) and everything else in the process lie elsewhere.
POOL_MAPPING = 4 << 30


def split_rss(pid) -> tuple[int, int] | None:
    """(host, pool) resident bytes: outside the pool's reservation, and the
    writable mappings inside it (instances' linear memories)."""
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return None
    vmas = []  # [start, end, writable, rss]
    header = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) ")
    for line in text.splitlines():
        m = header.match(line)
        if m:
            vmas.append([int(m.group(1), 16), int(m.group(2), 16), "w" in m.group(3), 0])
        elif line.startswith("Rss:") and vmas:
            vmas[-1][3] += int(line.split()[1]) * KIB
    total = sum(v[3] for v in vmas)
    pool = 0
    run = []
    for v in vmas + [[None, None, False, 0]]:
        if run and v[0] == run[-1][1]:
            run.append(v)
            continue
        if run and any(r[1] - r[0] >= POOL_MAPPING for r in run):
            pool += sum(r[3] for r in run if r[2])
        run = [v]
    return total - pool, pool


def cpu_seconds(pid) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sampler:
    """Samples the server's host/pool RSS split every `interval` s; `window()`
    gives the peaks since the last call."""

    def __init__(self, pid, interval=0.1):
        self.pid, self.interval = pid, interval
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.peak_host = self.peak_pool = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop_event.is_set():
            s = split_rss(self.pid)
            if s:
                with self.lock:
                    self.peak_host = max(self.peak_host, s[0])
                    self.peak_pool = max(self.peak_pool, s[1])
            self.stop_event.wait(self.interval)

    def window(self):
        with self.lock:
            out = (self.peak_host, self.peak_pool)
            self.peak_host = self.peak_pool = 0
        return out

    def stop(self):
        self.stop_event.set()
        self.thread.join(5)


# --------------------------------------------------------------------------------------
# Raw MCP calls (stateless 2026-07-28 POSTs), answers read with a size cap
# --------------------------------------------------------------------------------------

PARSE_BYTES = 4 * MIB  # answers up to this size are parsed; larger ones are
EDGE_BYTES = 64 * KIB  # counted, and judged by their first and last bytes


@dataclass
class Outcome:
    tool: str
    variant: str
    seconds: float
    status: int | None = None
    answer_bytes: int = 0
    request_bytes: int = 0
    kind: str = ""  # ok | tool-error | rpc-error | http | transport | timeout
    detail: str = ""
    session_id: str | None = None
    structured: dict | None = None

    def short(self):
        return f"{self.kind}: {self.detail}"[:160]


def summarize_result(result: dict) -> tuple[str, str]:
    """(kind, detail) of a CallToolResult."""
    sc = result.get("structuredContent") or {}
    texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict)]
    detail = ""
    if isinstance(sc, dict):
        st = str(sc.get("status") or "")
        code = ""
        if isinstance(sc.get("error"), dict):
            code = str(sc["error"].get("code") or "") + " " + str(sc["error"].get("message") or "")[:100]
        steps = sc.get("steps") if isinstance(sc.get("steps"), list) else []
        for s in steps:
            if code:
                break
            if isinstance(s, dict) and isinstance(s.get("error"), dict):
                code = str(s["error"].get("code") or "") + " " + str(s["error"].get("message") or "")[:100]
            elif isinstance(s, dict) and s.get("status") in ("FAIL", "failed") and s.get("message"):
                code = str(s["message"])[:120]
        errs = sc.get("errors") if isinstance(sc.get("errors"), list) else []
        if not code and errs and isinstance(errs[0], dict):
            code = (errs[0].get("code") or errs[0].get("message") or "")[:90]
        if not code and isinstance(sc.get("summary"), str):
            code = sc["summary"][:120]
        detail = " ".join(x for x in (st, code.strip()) if x)
        if st == "rejected" and not code.strip() and texts:
            detail += " " + texts[0][:160]
    if not detail and texts:
        detail = texts[0].splitlines()[0][:120] if texts[0] else ""
    kind = "tool-error" if result.get("isError") else "ok"
    return kind, detail or ("error" if result.get("isError") else "ok")


def is_busy(o: Outcome) -> bool:
    """Refused at the tenant's or the server's admission (concurrency, rate,
    session cap): the tool itself was not exercised by that call."""
    d = o.detail
    return bool(re.search(r"\bbusy\b|rate-limited|max_concurrent_batches = |batches_per_minute = |live sessions, its cap", d)
                or o.status in (429, 503))


async def call(client, url, token, method, params, tool, variant, timeout, request_id=1, body=None,
               parse_limit=PARSE_BYTES) -> Outcome:
    if params is None:
        params = {"name": tool} if method == "tools/call" else {}
    headers, payload = stateless_request(method, params, request_id, token)
    data = body if body is not None else json.dumps(payload, separators=(",", ":")).encode()
    start = time.monotonic()
    out = Outcome(tool=tool, variant=variant, seconds=0.0, request_bytes=len(data))
    kept = bytearray()
    tail = b""
    try:
        async with client.stream("POST", url, headers=headers, content=data, timeout=timeout) as r:
            out.status = r.status_code
            async for chunk in r.aiter_bytes():
                out.answer_bytes += len(chunk)
                if len(kept) < parse_limit:
                    kept += chunk
                else:
                    tail = (tail + chunk)[-EDGE_BYTES:]
            ctype = r.headers.get("content-type", "")
    except Exception as e:  # noqa: BLE001 - every failure is an outcome here
        out.seconds = time.monotonic() - start
        name = type(e).__name__
        out.kind = "timeout" if "Timeout" in name else "transport"
        out.detail = f"{name}: {e}"[:200]
        return out
    out.seconds = time.monotonic() - start
    if out.answer_bytes > len(kept):
        # Too large to parse here: judged by its edges (isError comes last).
        head = bytes(kept[:EDGE_BYTES]).decode("utf-8", "replace")
        end = (bytes(kept[-EDGE_BYTES:]) + tail)[-EDGE_BYTES:].decode("utf-8", "replace")
        text = re.search(r'"text":"((?:[^"\\]|\\.){0,120})', head)
        out.kind = "tool-error" if re.search(r'"isError":\s*true', end) else "ok"
        if '"error":{' in head[:300]:
            out.kind = "rpc-error"
        out.detail = f"{out.answer_bytes / MIB:.1f} MiB answer: {text.group(1) if text else head[:120]}"
        return out
    messages = mcp_messages(kept.decode("utf-8", "replace"), ctype)
    message = response_for(messages, request_id)
    if out.status != 200 or message is None:
        out.kind = "http"
        out.detail = f"HTTP {out.status}: {bytes(kept[:160]).decode('utf-8', 'replace')}"
        return out
    if "error" in message:
        err = message["error"]
        out.kind, out.detail = "rpc-error", f"{err.get('code')} {str(err.get('message'))[:140]}"
        return out
    result = message.get("result") or {}
    if method == "tools/call":
        out.kind, out.detail = summarize_result(result)
        sc = result.get("structuredContent")
        if isinstance(sc, dict):
            out.session_id = sc.get("session_id")
            if out.answer_bytes < 2 * MIB:
                out.structured = sc
    else:
        out.kind, out.detail = "ok", f"{len(result.get('tools') or [])} tools"
        out.structured = result
    return out


async def tool_call(client, url, token, tool, args, variant="", timeout=60, request_id=1, body=None):
    return await call(client, url, token, "tools/call", {"name": tool, "arguments": args}, tool, variant, timeout,
                      request_id, body)


async def list_tools(client, url, token, timeout=60):
    o = await call(client, url, token, "tools/list", {}, "tools/list", "", timeout, parse_limit=256 * MIB)
    if o.kind != "ok" or not o.structured:
        raise RuntimeError(f"tools/list failed: {o.short()}")
    return o.structured["tools"]


def encode_call(tool, args, token, request_id=1) -> bytes:
    _, payload = stateless_request("tools/call", {"name": tool, "arguments": args}, request_id, token)
    return json.dumps(payload, separators=(",", ":")).encode()


# --------------------------------------------------------------------------------------
# Schemas: a minimal valid value, the leaves, and values at their extremes
# --------------------------------------------------------------------------------------

HOST_OPTIONS = {"session_id"}  # set by the campaign, never generated
STRING_CANDIDATES = ["a", "ab", "a1", "x", "A", "0", "1", "key", "a.b", "a_b", "a-b", "Log", "http://127.0.0.1:9/"]


def deref(schema, root):
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 16:
        ref = schema["$ref"]
        seen += 1
        if not ref.startswith("#"):
            return {}
        node = root
        for part in ref.lstrip("#").strip("/").split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part, {}) if isinstance(node, dict) else {}
        merged = dict(node) if isinstance(node, dict) else {}
        merged.update({k: v for k, v in schema.items() if k != "$ref"})
        schema = merged
    return schema if isinstance(schema, dict) else {}


def kind_of(s) -> str:
    t = s.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), t[0] if t else None)
    if t:
        return t
    if "properties" in s or "additionalProperties" in s:
        return "object"
    if "items" in s or "prefixItems" in s:
        return "array"
    if "enum" in s and s["enum"]:
        return {str: "string", bool: "boolean", int: "integer", float: "number"}.get(type(s["enum"][0]), "any")
    if "pattern" in s or "maxLength" in s or "minLength" in s:
        return "string"
    return "any"


def pattern_ok(pattern, text) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return True


class Gen:
    """Values for one tool's schema (`root` resolves `$ref`)."""

    def __init__(self, root):
        self.root = root

    def s(self, schema):
        return deref(schema, self.root)

    def valid(self, schema, depth=0):
        s = self.s(schema)
        if depth > 12:
            return None
        if "const" in s:
            return copy.deepcopy(s["const"])
        if s.get("enum"):
            return copy.deepcopy(s["enum"][0])
        for key in ("oneOf", "anyOf"):
            if s.get(key):
                return self.valid(s[key][0], depth + 1)
        if s.get("allOf"):
            merged = {}
            for part in s["allOf"]:
                part = self.s(part)
                for k, v in part.items():
                    if k == "properties":
                        merged.setdefault("properties", {}).update(v)
                    elif k == "required":
                        merged.setdefault("required", []).extend(v)
                    else:
                        merged.setdefault(k, v)
            rest = {k: v for k, v in s.items() if k != "allOf"}
            merged.update(rest)
            return self.valid(merged, depth + 1)
        k = kind_of(s)
        if k == "object":
            props = s.get("properties") or {}
            out = {}
            for name in s.get("required") or []:
                out[name] = self.valid(props.get(name, {}), depth + 1)
            return out
        if k == "array":
            items = s.get("items") or {}
            if isinstance(items, list):
                return [self.valid(i, depth + 1) for i in items]
            return [self.valid(items, depth + 1) for _ in range(int(s.get("minItems", 0)))]
        if k == "string":
            return self.string(s)
        if k in ("integer", "number"):
            lo = s.get("minimum", s.get("exclusiveMinimum", 0) + (1 if "exclusiveMinimum" in s else 0))
            value = max(1, lo) if "default" not in s else s["default"]
            if "maximum" in s:
                value = min(value, s["maximum"])
            return int(value) if k == "integer" else value
        if k == "boolean":
            return bool(s.get("default", False))
        if k == "null":
            return None
        return "a"

    def string(self, s):
        lo, hi = int(s.get("minLength", 0)), int(s.get("maxLength", 1 << 30))
        pattern = s.get("pattern")
        candidates = []
        if isinstance(s.get("default"), str):
            candidates.append(s["default"])
        candidates += [e for e in s.get("examples") or [] if isinstance(e, str)]
        candidates += STRING_CANDIDATES
        for c in candidates:
            if lo <= len(c) <= hi and (not pattern or pattern_ok(pattern, c)):
                return c
        return "a" * max(lo, 1)

    def leaves(self, schema, path=(), depth=0, out=None):
        """Every property and array item under `schema`: (path, schema, kind)."""
        out = [] if out is None else out
        s = self.s(schema)
        if depth > 6:
            return out
        for key in ("oneOf", "anyOf"):
            if s.get(key):
                return self.leaves(s[key][0], path, depth + 1, out)
        k = kind_of(s)
        if path:
            out.append((path, s, k))
        if k == "object":
            props = s.get("properties") or {}
            required = set(s.get("required") or [])
            for name in sorted(props, key=lambda n: (n not in required, n)):
                if depth == 0 and name in HOST_OPTIONS:
                    continue
                self.leaves(props[name], path + (name,), depth + 1, out)
        elif k == "array":
            items = s.get("items")
            if isinstance(items, dict):
                self.leaves(items, path + (0,), depth + 1, out)
        return out


def set_at(gen: Gen, schema, value, path, leaf):
    """`value` (valid for `schema`) with `leaf` at `path`, creating what is missing."""
    if not path:
        return leaf
    s = gen.s(schema)
    for key in ("oneOf", "anyOf"):
        if s.get(key):
            s = gen.s(s[key][0])
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        items = s.get("items") or {}
        value = list(value) if isinstance(value, list) else []
        if not value:
            value = [gen.valid(items)]
        value[0] = set_at(gen, items, value[0], rest, leaf)
        return value
    props = s.get("properties") or {}
    value = dict(value) if isinstance(value, dict) else {}
    sub = props.get(head, {})
    current = value.get(head, gen.valid(sub))
    value[head] = set_at(gen, sub, current, rest, leaf)
    return value


def deep(depth, leaf="a"):
    """Objects nested `depth` deep: {"a": {"a": ... leaf}}."""
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def deep_array(depth, leaf="a"):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


BAIT = "a" * 25 + "b"  # backtracking bait for (a+)+, (a|aa)+ and friends
DEEPER = 126  # past max_input_depth, under serde_json's recursion limit of 128


def booleans(gen: Gen, schema) -> list[str]:
    s = gen.s(schema)
    return [n for n, p in (s.get("properties") or {}).items() if kind_of(gen.s(p)) == "boolean"]


# --------------------------------------------------------------------------------------
# Steps of batch-like tools
# --------------------------------------------------------------------------------------


def verb_steps(tools: dict) -> dict:
    """(plugin, verb) -> a valid input, for every verb the generic `batch` tool
    lists (its description names each plugin's verbs; its schema the plugins),
    from the verb's own tool: `<plugin>_<verb>`, or the bare verb when only one
    plugin without a prefixed tool lists it. Input {} where no tool shows it."""
    batch = tools.get("batch")
    if not batch:
        return {}
    gen = Gen(batch["inputSchema"])
    item = gen.s(gen.s(gen.s(batch["inputSchema"]).get("properties", {}).get("steps", {})).get("items", {}))
    plugins = (gen.s(item.get("properties", {}).get("plugin", {})).get("enum")) or []
    listed = []
    for line in (batch.get("description") or "").splitlines():
        m = re.match(r"^- ([A-Za-z0-9_-]+): (.+)$", line.strip())
        if m and m.group(1) in plugins:
            listed += [(m.group(1), v.strip()) for v in m.group(2).split(",") if v.strip()]
    if not listed:
        for name in tools:
            for plugin in plugins:
                if name.startswith(plugin + "_"):
                    listed.append((plugin, name[len(plugin) + 1:]))
    bare = {}
    for plugin, verb in listed:
        if f"{plugin}_{verb}" not in tools:
            bare.setdefault(verb, []).append(plugin)
    out = {}
    for plugin, verb in listed:
        tool = tools.get(f"{plugin}_{verb}")
        if tool is None and bare.get(verb) == [plugin]:
            tool = tools.get(verb)
        value = None  # no tool shows this verb's input
        if tool:
            value = Gen(tool["inputSchema"]).valid(tool["inputSchema"])
            if isinstance(value, dict):
                value.pop("session_id", None)
            else:
                value = {}
        out[(plugin, verb)] = value
    return out


def every_plugin(steps: dict) -> list[dict]:
    """One step of each plugin: the first of its verbs (by name) with its
    minimal valid input."""
    first = {}
    for (plugin, verb), value in sorted(steps.items(), key=lambda kv: (kv[0][0], kv[1] is None, kv[0][1])):
        first.setdefault(plugin, {"plugin": plugin, "verb": verb, "input": value or {}})
    return list(first.values())


def echo_like(tools: dict, steps: dict):
    """A verb whose input has one required property of any type (an echo):
    the generic way to put a large value into a step's result."""
    best = None
    for (plugin, verb), _ in steps.items():
        tool = tools.get(f"{plugin}_{verb}") or tools.get(verb)
        if not tool:
            continue
        gen = Gen(tool["inputSchema"])
        s = gen.s(tool["inputSchema"])
        req = [r for r in s.get("required") or [] if r not in HOST_OPTIONS]
        if len(req) != 1:
            continue
        k = kind_of(gen.s((s.get("properties") or {}).get(req[0], {})))
        rank = {"any": 0, "string": 1}.get(k)
        if rank is None:
            continue
        cand = (rank, len(json.dumps(tool["inputSchema"])), plugin, verb, req[0])
        best = min(best, cand) if best else cand
    return best and (best[2], best[3], best[4])


# How to make a valid step that holds `value`, for the two batch formats whose
# step schema does not say which plugin, verb or keyword exists. Keyed by the
# properties the item schema has; anything else gets the generic treatment
# (its minimal valid item with the value in its first string leaf).
def item_seeds(tools, steps):
    echo = echo_like(tools, steps)
    seeds = []
    if echo:
        plugin, verb, prop = echo
        seeds.append(({"plugin", "verb", "input"},
                      lambda v, a=None: {"plugin": plugin, "verb": verb, "input": {prop: v}, **({"assign_to": a} if a else {})}))
    seeds.append(({"keyword", "arguments"},
                  lambda v, a=None: {"keyword": "Set Variable", "arguments": [v], **({"assign_to": a} if a else {})}))
    return seeds


def batch_arrays(gen: Gen, schema):
    """Top-level properties that are arrays of objects: the steps of a batch-like tool."""
    s = gen.s(schema)
    out = []
    for name, p in (s.get("properties") or {}).items():
        p = gen.s(p)
        if kind_of(p) == "array" and isinstance(p.get("items"), dict) and kind_of(gen.s(p["items"])) == "object":
            out.append((name, p))
    return out


@dataclass
class Ctx:
    """What the generator may assume about the server."""

    input_cap: int  # just under the attacker's max_input_bytes
    body_cap: int  # just under server.http.max_body_bytes (request envelope included)
    steps_cap: int  # the attacker's max_steps_per_batch
    depth: int  # limits.max_input_depth
    var: str | None = None  # a large session variable...
    var_bytes: int = 0  # ...of this many bytes (as JSON)...
    session: str | None = None  # ...in this session
    seeds: list = field(default_factory=list)
    batch_timeout_ms: int = 0  # the attacker's max_batch_timeout_ms


def fit(make, cap, unit):
    """`make(n)` with the largest n whose JSON stays within `cap` bytes, assuming
    each n adds about `unit` bytes."""
    base = len(json.dumps(make(0)))
    n = max(0, (cap - base) // max(unit, 1))
    while n > 0 and len(json.dumps(make(n))) > cap:
        n = int(n * 0.9)
    return make(n)


def variants(tool: dict, ctx: Ctx, max_string_leaves=3) -> list[tuple[str, dict]]:
    """Hostile argument sets for `tool`, from its inputSchema alone."""
    schema = tool.get("inputSchema") or {"type": "object"}
    gen = Gen(schema)
    base = gen.valid(schema)
    if not isinstance(base, dict):
        base = {}
    if "session_id" in base and ctx.session:
        base["session_id"] = ctx.session + "-req"  # a tool that needs one gets the attacker's own
    # A client that knows its limits asks for at most its own batch timeout: a
    # tool whose default timeout is past the tenant's cap would refuse every
    # call before reaching anything else (execute_batch's 120000 ms default).
    for name, p in (gen.s(schema).get("properties") or {}).items():
        p = gen.s(p)
        if name.endswith("timeout_ms") and kind_of(p) == "integer" and ctx.batch_timeout_ms:
            base.setdefault(name, min(int(p.get("maximum", ctx.batch_timeout_ms)), ctx.batch_timeout_ms))
    flags = booleans(gen, schema)
    has_session = "session_id" in (gen.s(schema).get("properties") or {})
    out: list[tuple[str, dict]] = []

    def add(name, args, flags_on=False, in_session=False):
        args = dict(args)
        if flags_on:
            for f in flags:
                args[f] = True
        if in_session and has_session and ctx.session:
            args["session_id"] = ctx.session
        out.append((name, args))

    # A batch-like tool's minimal steps are valid ones where a seed knows how.
    for name, arr in batch_arrays(gen, schema):
        props = set(gen.s(arr["items"]).get("properties") or {})
        seed = next((make for keys, make in ctx.seeds if keys <= props), None)
        if seed and name in base:
            base[name] = [seed("a")] * max(1, int(arr.get("minItems", 1)))
    add("valid", base)
    if flags:
        add("flags", base, flags_on=True)
    leaves = gen.leaves(schema)
    strings = [x for x in leaves if x[2] == "string" and not (gen.s(x[1]).get("enum") or "const" in x[1])]
    anys = [x for x in leaves if x[2] == "any"]
    # Free-form objects (no properties of their own) first: inputs, details.
    objects = sorted((x for x in leaves if x[2] == "object"), key=lambda x: bool(x[1].get("properties")))
    arrays = [x for x in leaves if x[2] == "array"]
    numbers = [x for x in leaves if x[2] in ("integer", "number")]

    def dotted(path):
        return ".".join(str(p) for p in path)

    # Strings: the largest the limits allow, the largest the body allows,
    # references fanned out, backtracking bait.
    for i, (path, s, _) in enumerate((strings + anys)[:max_string_leaves]):
        hi = int(s.get("maxLength", 1 << 40))
        n = min(hi, ctx.input_cap)
        add(f"big@{dotted(path)}", set_at(gen, schema, base, path, "A" * n), flags_on=bool(flags))
        if i == 0:
            add(f"huge@{dotted(path)}",
                fit(lambda k: set_at(gen, schema, base, path, "A" * min(k, hi)), ctx.body_cap, 1))
            add(f"refs@{dotted(path)}",
                fit(lambda k: set_at(gen, schema, base, path, "${STEP_1}" * k), ctx.input_cap, 9), flags_on=bool(flags))
            if ctx.var and has_session:
                # Sizes of session variables are known: a bomb must be refused before anything is copied.
                add(f"varbomb@{dotted(path)}",
                    fit(lambda k: set_at(gen, schema, base, path, ("${%s}" % ctx.var) * k), ctx.body_cap, len(ctx.var) + 3),
                    in_session=True)
        if s.get("pattern") or i == 0:
            add(f"bait@{dotted(path)}", fit(lambda k: set_at(gen, schema, base, path, BAIT * k + "!"),
                                           min(ctx.input_cap, hi + 64), len(BAIT)))
    # Arrays of patterned strings: one bait per item, as many items as fit.
    for path, s, _ in arrays[:3]:
        items = gen.s(s.get("items") or {}) if isinstance(s.get("items"), dict) else {}
        hi = int(s.get("maxItems", 1 << 30))
        if items.get("pattern"):
            add(f"baits@{dotted(path)}",
                fit(lambda k: set_at(gen, schema, base, path, [BAIT] * min(k, hi)), ctx.body_cap, len(BAIT) + 3))
        elif kind_of(items) in ("string", "any", "integer", "number", "boolean"):
            one = gen.valid(items)
            add(f"wide@{dotted(path)}",
                fit(lambda k: set_at(gen, schema, base, path, [one] * min(k, hi)), ctx.body_cap,
                    len(json.dumps(one)) + 1))
    # Nesting at the depth limit and past it, where any object or value goes.
    for path, s, _ in (anys + objects)[:2]:
        add(f"deep@{dotted(path)}", set_at(gen, schema, base, path, deep(ctx.depth - len(path))))
        add(f"deeper@{dotted(path)}", set_at(gen, schema, base, path, deep_array(DEEPER - len(path) - 6)))
    # Integers at their extremes.
    if numbers:
        args = base
        for path, s, k in numbers:
            top = s.get("maximum", 2**63 - 1 if k == "integer" else 1e308)
            args = set_at(gen, schema, args, path, top)
        add("maxints", args, flags_on=bool(flags))
        args = base
        for path, s, k in numbers:
            args = set_at(gen, schema, args, path, 2**64 if k == "integer" else -1e308)
        add("overflow", args)
    # Batch-like tools: many steps, one large value fanned out through references.
    for name, arr in batch_arrays(gen, schema):
        item_schema = gen.s(arr["items"])
        props = set(item_schema.get("properties") or {})
        hi = int(arr.get("maxItems", 1 << 30))
        n = max(1, min(hi, ctx.steps_cap))
        seed = next((make for keys, make in ctx.seeds if keys <= props), None)
        first_string = next((p for p, s, k in gen.leaves(item_schema) if k in ("string", "any")
                             and not gen.s(s).get("enum")), None)

        def item(value, seed=seed, item_schema=item_schema, first_string=first_string):
            if seed:
                return seed(value)
            it = gen.valid(item_schema)
            return set_at(gen, item_schema, it, first_string, value) if first_string else it

        plain = item("a")
        add(f"{name}:many", {**base, name: [plain] * n}, flags_on=True)
        add(f"{name}:past-limit", {**base, name: [plain] * (ctx.steps_cap + 1)})
        big = "A" * (ctx.input_cap - 512)
        fan = [item(big)] + [item("${STEP_1}")] * (n - 1)
        add(f"{name}:fanout", {**base, name: fan, **({"trace": True} if "trace" in flags else {})})
        if "dry_run" in flags:
            add(f"{name}:fanout-dry", {**base, name: fan}, flags_on=True)
        spliced = [item(big[: ctx.input_cap // 4])] + [item("${STEP_1}" * 64)] * (n - 1)
        add(f"{name}:splice", {**base, name: spliced, **({"trace": True} if "trace" in flags else {})})
        if ctx.var and has_session:
            k = max(1, ctx.input_cap // max(ctx.var_bytes, 1))
            refs = [item(("${%s}" % ctx.var) * k)] * n
            add(f"{name}:varfan-dry", {**base, name: refs}, flags_on=True, in_session=True)
            add(f"{name}:varfan", {**base, name: refs, **({"trace": True} if "trace" in flags else {})},
                in_session=True)
        add(f"{name}:deep", {**base, name: [item(deep(ctx.depth - 4))] * n}, flags_on=True)
    return out


# --------------------------------------------------------------------------------------
# Saved batches the attacker keeps, so that saved tools are attacked like the rest
# --------------------------------------------------------------------------------------


def hostile_saved_batches(steps_cap, steps_of):
    """(definition, why) for save_batch. `steps_of(value)` is a valid step holding value."""
    n = steps_cap
    return [
        ({"name": "adv_fan_params", "description": "every step echoes the parameter v",
          "parameters": {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]},
          "steps": [steps_of("${params.v}") for _ in range(n)], "replace": True},
         "parameter fan-out: one value copied into every step"),
        ({"name": "adv_patterns", "description": "parameters with backtracking patterns",
          "parameters": {"type": "object", "properties": {
              "s": {"type": "string", "pattern": "^(?:(?=a)(a|aa))+$"},
              "nested": {"type": "array", "items": {"type": "string", "pattern": "^(a+)+$"}},
              "look": {"type": "array", "items": {"type": "string", "pattern": "^(?:(?=a)(a|aa))+$"}}}},
          "steps": [steps_of("${params.s}")], "replace": True},
         "pathological parameter patterns"),
        ({"name": "adv_nested_patterns", "description": "parameters with a nested quantifier",
          "parameters": {"type": "object", "properties": {
              "nested": {"type": "array", "items": {"type": "string", "pattern": "^(a+)+$"}}}},
          "steps": [steps_of("${params.nested}")], "replace": True},
         "nested-quantifier pattern on many items (kept if look-ahead is refused)"),
        ({"name": "adv_any", "description": "a free-form parameter in every step",
          "parameters": {"type": "object", "properties": {"d": {}}},
          "steps": [steps_of("${params.d}") for _ in range(n)], "replace": True},
         "free-form parameter: depth and size fan-out"),
    ]


def bulky_saved_batch(i, max_bytes, steps_of):
    """A saved batch as large as `saved_batches.max_bytes` allows, mostly its
    parameter schema: what it adds to the tenant's tools/list."""
    props = {}
    definition = {"name": f"adv_bulk_{i:02d}", "description": "d" * 1990,
                  "parameters": {"type": "object", "properties": props},
                  "steps": [steps_of("x")], "replace": True}
    k = 0
    while len(json.dumps(definition)) < max_bytes - 4096:
        props[f"p{k:05d}"] = {"type": "string", "description": "q" * 400}
        k += 1
    return definition


# --------------------------------------------------------------------------------------
# The victim: a separate process timing ordinary calls
# --------------------------------------------------------------------------------------

VICTIM_CALLS = {
    "batch": ("batch", {"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": "victim"}}]}),
    # execute_batch needs a session: the victim's one, kept warm.
    "rf": ("execute_batch", {"session_id": "victim-rf", "steps": [{"keyword": "Evaluate", "arguments": ["1+1"]}]}),
}


def victim_ok(kind, message):
    if message is None or "result" not in message:
        return False, f"no result: {json.dumps(message)[:300]}"
    result = message["result"]
    if result.get("isError"):
        return False, json.dumps(result)[:400]
    sc = result.get("structuredContent") or {}
    text = json.dumps(sc)
    if kind == "batch" and not (sc.get("status") == "passed" and sc["steps"][0].get("value") == "victim"):
        return False, text[:400]
    if kind == "rf" and not (sc.get("status") == "PASS" and sc["steps"][0].get("return_value") == 2):
        return False, text[:400]
    return True, ""


def victim_main(url, token, out_path, pause=0.03):
    """Ordinary calls, one at a time, alternating kinds, stateless (each mints a
    session, as a 2026-07-28 client does), from 127.0.0.2; one JSON line per
    call to `out_path`."""
    import httpx

    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    n = 0
    with httpx.Client(transport=transport, timeout=30) as client, open(out_path, "a", buffering=1) as out:
        while not stop.is_set():
            kind = ("batch", "rf")[n % 2]
            tool, args = VICTIM_CALLS[kind]
            headers, body = stateless_request("tools/call", {"name": tool, "arguments": args}, n + 1, token)
            t0 = time.monotonic()
            try:
                r = client.post(url, headers=headers, json=body)
                message = response_for(mcp_messages(r.text, r.headers.get("content-type", "")), n + 1)
                ok, err = victim_ok(kind, message) if r.status_code == 200 else (False, f"HTTP {r.status_code} {r.text[:300]}")
            except Exception as e:  # noqa: BLE001
                ok, err = False, f"{type(e).__name__}: {e}"[:300]
            t1 = time.monotonic()
            out.write(json.dumps({"k": kind, "t0": t0, "t1": t1, "ok": ok, "err": err}) + "\n")
            n += 1
            stop.wait(pause)


class Victim:
    def __init__(self, url, token, tmp: Path):
        self.path = tmp / f"victim-{secrets.token_hex(4)}.jsonl"
        self.path.touch()
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__)), "victim", url, token, str(self.path)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._read = 0
        self.samples: list[dict] = []

    def poll(self):
        with open(self.path) as f:
            f.seek(self._read)
            data = f.read()
        end = data.rfind("\n") + 1
        self._read += end
        for line in data[:end].splitlines():
            with contextlib.suppress(ValueError):
                self.samples.append(json.loads(line))
        return self.samples

    def between(self, t0, t1):
        """The calls that overlapped [t0, t1] (a call stalled across the whole
        window counts too)."""
        self.poll()
        return [s for s in self.samples if s["t0"] <= t1 and s["t1"] >= t0]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.poll()


def quantile(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def latency_stats(samples):
    out = {}
    for kind in VICTIM_CALLS:
        d = [s["t1"] - s["t0"] for s in samples if s["k"] == kind]
        out[kind] = {"n": len(d), "p50": quantile(d, 0.5), "p99": quantile(d, 0.99)}
    return out



# --------------------------------------------------------------------------------------
# The campaign
# --------------------------------------------------------------------------------------

# Past this the campaign kills the server rather than the shared machine.
SAFETY_RSS = 8 * 1024 * MIB


@dataclass
class Attack:
    """One attack: its calls (variant, method, tool, body), fired concurrently."""

    name: str
    calls: list
    coverage: bool = True  # re-run variants that were only ever refused as busy
    min_s: float | None = None
    hold_s: float = 0.0  # keep measuring the victim this long after the calls


def variant_summary(outcomes):
    """Per variant: calls, outcome kinds (busy counted apart), slowest call,
    largest answer and request, and one outcome's detail (not a busy one, when
    there is another)."""
    by = {}
    for o in outcomes:
        v = by.setdefault(o.variant, {"calls": 0, "kinds": {}, "max_s": 0.0, "max_answer": 0, "request": 0,
                                      "detail": ""})
        v["calls"] += 1
        key = "busy" if is_busy(o) else o.kind
        v["kinds"][key] = v["kinds"].get(key, 0) + 1
        v["max_s"] = round(max(v["max_s"], o.seconds), 3)
        v["max_answer"] = max(v["max_answer"], o.answer_bytes)
        v["request"] = max(v["request"], o.request_bytes)
        if not v["detail"] or (key != "busy" and set(v["kinds"]) == {"busy", key} and v["kinds"][key] == 1):
            v["detail"] = o.short()
    return by


class Campaign:
    def __init__(self, setup: Setup | None = None, log=print):
        self.setup = setup or Setup()
        self.log = log
        self.tokens = {ATTACKER: "att-" + secrets.token_hex(16), VICTIM: "vic-" + secrets.token_hex(16)}
        self.metrics_token = "op-" + secrets.token_hex(16)
        self.records: list[dict] = []
        self.saved: list[dict] = []
        self.restarts: list[str] = []
        self.victim_samples: list[dict] = []

    # --- the server and the victim ---------------------------------------------------

    def start(self):
        self.server = Server(self.config, self.tenants, self.tools_arg, self.tmp).start()
        self.sampler = Sampler(self.server.pid)
        self.victim = Victim(self.server.url, self.tokens[VICTIM], self.tmp)
        self.guard_stop = threading.Event()
        self.guard = threading.Thread(target=self._guard, daemon=True)
        self.guard.start()

    def _guard(self):
        pid = self.server.pid
        while not self.guard_stop.wait(0.05):
            rss = status(pid).get("VmRSS", 0)
            if rss > SAFETY_RSS:
                self.killed_for_rss = rss
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                return

    def stop(self):
        self.guard_stop.set()
        self.victim.stop()
        self.victim_samples += self.victim.samples
        self.sampler.stop()
        self.server.stop()

    async def restart(self, why):
        self.log(f"  restarting the server: {why}")
        self.restarts.append(why)
        self.stop()
        self.killed_for_rss = 0
        self.start()
        await self.prepare(save=False)
        await self.wait_victim(4)

    async def wait_victim(self, n, timeout=60):
        deadline = time.monotonic() + timeout
        while len(self.victim.poll()) < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the victim made fewer than {n} calls in {timeout} s: "
                                   + (self.victim.proc.stderr.read(2000).decode() if self.victim.proc.poll() is not None else ""))
            await asyncio.sleep(0.1)

    # --- the attacker's preparations ---------------------------------------------------

    async def prepare(self, save=True):
        """Lists the tools, saves the hostile batches (first time), sets the large
        session variable the reference attacks use, warms every plugin up."""
        c, url, tok = self.client, self.server.url, self.tokens[ATTACKER]
        tools = {t["name"]: t for t in await list_tools(c, url, tok)}
        steps = verb_steps(tools)
        self.seeds = item_seeds(tools, steps)
        batch_seed = next((make for keys, make in self.seeds if "plugin" in keys), None)
        if batch_seed is None:
            raise RuntimeError("no verb to make a step of: the batch tool lists no plugin with an echo-like verb")
        self.steps_of = batch_seed
        if save:
            for definition, why in hostile_saved_batches(self.setup.attacker["max_steps_per_batch"], batch_seed):
                o = await tool_call(c, url, tok, "save_batch", definition, "save", timeout=60)
                self.saved.append({"name": definition["name"], "why": why, "outcome": o.short()})
                self.log(f"  save_batch {definition['name']}: {o.short()}")
        # The large session variable: an echo's value and its text both count
        # towards max_result_bytes, so half of it.
        size = min(self.setup.attacker["max_result_bytes"] // 2, self.setup.attacker["max_session_vars_bytes"]) - 16 * KIB
        self.session = "adv-vars"
        while size > 1024:
            args = {"session_id": self.session, "steps": [batch_seed("V" * size, "adv_big")]}
            o = await tool_call(c, url, tok, "batch", args, "setup", timeout=60)
            if o.kind == "ok":
                break
            size //= 2
        else:
            raise RuntimeError(f"could not set a session variable: {o.short()}")
        self.var_bytes = size + 2
        # Every plugin instantiated once (the baseline includes them), nothing acting.
        await tool_call(c, url, tok, "batch", {"on_failure": "continue", "steps": every_plugin(steps)}, "warm",
                        timeout=60)
        o = await tool_call(c, url, tok, "execute_batch", {**VICTIM_CALLS["rf"][1], "session_id": "adv-warm",
                                                          "timeout_ms": self.setup.attacker["max_batch_timeout_ms"]},
                            "warm", timeout=60)
        if o.kind != "ok":
            self.log(f"  warm-up execute_batch: {o.short()}")
        self.tools = {t["name"]: t for t in await list_tools(c, url, tok)}
        self.verb_steps = verb_steps(self.tools)
        self.ctx = Ctx(input_cap=self.setup.attacker["max_input_bytes"] - KIB,
                       body_cap=self.setup.max_body_bytes - 4 * KIB,
                       steps_cap=self.setup.attacker["max_steps_per_batch"],
                       depth=self.setup.max_input_depth,
                       var="adv_big", var_bytes=self.var_bytes, session=self.session, seeds=self.seeds,
                       batch_timeout_ms=self.setup.attacker["max_batch_timeout_ms"])

    # --- measuring ---------------------------------------------------------------------

    def cpu_rate(self, seconds):
        a = cpu_seconds(self.server.pid)
        time.sleep(seconds)
        return (cpu_seconds(self.server.pid) - a) / seconds

    async def settle(self, limit_s=10.0):
        """Waits until the server's CPU is back near its rate with the victim alone
        (and its RSS back under the host bound, for up to as long); returns the
        CPU seconds spent meanwhile and whether the CPU settled."""
        start_cpu = cpu_seconds(self.server.pid)
        deadline = time.monotonic() + limit_s
        settled = False
        while time.monotonic() < deadline and self.server.alive():
            rate = await asyncio.to_thread(self.cpu_rate, 0.3)
            if rate <= self.quiet_cpu + 0.3:
                settled = True
                break
        cpu = cpu_seconds(self.server.pid) - start_cpu
        deadline = time.monotonic() + 3.0
        while settled and self.server.alive() and time.monotonic() < deadline:
            if status(self.server.pid).get("VmRSS", 0) <= self.bounds["host"]:
                break
            await asyncio.sleep(0.25)
        return cpu, settled

    def thresholds(self):
        return {k: max(2 * q["p99"], q["p99"] + self.setup.p99_floor_s) for k, q in self.quiet.items()}

    # --- one attack ----------------------------------------------------------------------

    async def fire(self, attack: Attack):
        s = self.setup
        budget = s.attacker["max_batch_timeout_ms"] / 1000 + s.budget_slack_s
        timeout = budget * 1.5
        c, url, tok = self.client, self.server.url, self.tokens[ATTACKER]
        outcomes: list[Outcome] = []
        sem = asyncio.Semaphore(s.concurrency)
        tasks = []

        async def one(variant, method, tool, body, gate):
            try:
                o = await call(c, url, tok, method, None, tool, variant, timeout, body=body, parse_limit=256 * KIB)
                outcomes.append(o)
            finally:
                gate.release()

        status_before = status(self.server.pid)
        reset_peak(self.server.pid)
        self.sampler.window()
        cpu0 = cpu_seconds(self.server.pid)
        client0 = time.process_time()
        t0 = time.monotonic()
        min_s = s.min_attack_s if attack.min_s is None else attack.min_s
        i = 0
        while attack.calls and (i < len(attack.calls) or time.monotonic() - t0 < min_s):
            if not self.server.alive():
                break
            variant, method, tool, body = attack.calls[i % len(attack.calls)]
            await sem.acquire()
            tasks.append(asyncio.create_task(one(variant, method, tool, body, sem)))
            i += 1
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        for round_ in range(4 if attack.coverage else 0):
            # Variants that never got past the tenant's admission (concurrency,
            # pool share, session cap) run again, as many at once as the tenant
            # may run, after a pause from the second round on (its leftover
            # sessions expire). Admission is not what is under test here.
            ran = {o.variant for o in outcomes if not is_busy(o)}
            todo = list({x[0]: x for x in attack.calls if x[0] not in ran}.values())
            if not todo or not self.server.alive():
                break
            if round_:
                await asyncio.sleep(s.unclaimed_idle_timeout_s / 3)
            # One under the tenant's limit: a batch's slot is given back just
            # after its answer is sent, so the next call could still find it taken.
            gate = asyncio.Semaphore(max(1, s.attacker["max_concurrent_batches"] - 1))
            retry = []
            for x in todo:
                await gate.acquire()
                retry.append(asyncio.create_task(one(x[0], x[1], x[2], x[3], gate)))
            await asyncio.gather(*retry)
        if attack.hold_s:
            await asyncio.sleep(attack.hold_s)
        t1 = time.monotonic()
        cpu1 = cpu_seconds(self.server.pid)
        st = status(self.server.pid)
        host_peak, pool_peak = self.sampler.window()
        rec = {
            "_window": (t0, t1),
            "attack": attack.name,
            "seconds": round(t1 - t0, 2),
            "calls": len(outcomes),
            "server_cpu_s": round(cpu1 - cpu0, 2),
            "client_cpu_s": round(time.process_time() - client0, 2),
            "rss_before": status_before.get("VmRSS", 0),
            "rss_peak": st.get("VmHWM", 0),
            "host_peak": host_peak,
            "pool_peak": pool_peak,
            "variants": variant_summary(outcomes),
            "slow": sorted({(o.variant, round(o.seconds, 1), o.short()) for o in outcomes if o.seconds > budget
                            or o.kind == "timeout"})[:10],
            "big_answers": sorted({(o.variant, o.answer_bytes) for o in outcomes
                                   if o.answer_bytes > response_bound(s) and o.tool != "tools/list"})[:10],
            "unclean": sorted({(o.variant, o.short()) for o in outcomes
                               if o.kind == "transport"
                               # A 503 naming its limit (bytes in flight, draining) is a clean refusal.
                               or (o.kind == "http" and (o.status or 0) >= 500
                                   and not (o.status == 503 and "\"limit\"" in o.detail))
                               or (o.kind == "rpc-error" and o.detail.startswith("-32603"))})[:10],
            "budget_s": budget,
            "alive": self.server.alive(),
        }
        if not rec["alive"]:
            rec["exit"] = self.server.exit_description()
            if getattr(self, "killed_for_rss", 0):
                rec["exit"] = f"killed by the campaign at {self.killed_for_rss / MIB:.0f} MiB RSS (safety cap)"
        return rec

    def victim_window(self, rec):
        """The victim's calls during the attack, read once the server has
        settled (so a call it stalled past the attack's end is in)."""
        window = rec.pop("_window")
        self.windows.append(window)
        samples = self.victim.between(*window)
        rec["victim"] = latency_stats(samples)
        rec["victim_errors"] = [x for x in samples if not x["ok"]][:5]
        rec["victim_error_count"] = sum(1 for x in samples if not x["ok"])

    def judge(self, rec):
        """The failures of one attack record, as short sentences."""
        f = []
        b = self.bounds
        if not rec["alive"]:
            f.append(f"server died: {rec['exit']}")
        if rec["victim_error_count"]:
            f.append(f"{rec['victim_error_count']} victim call(s) failed, e.g. {rec['victim_errors'][0]['err'][:300]}")
        if rec["host_peak"] > b["host"]:
            f.append(f"host RSS {rec['host_peak'] / MIB:.0f} MiB > bound {b['host'] / MIB:.0f} MiB")
        if rec["rss_peak"] > b["total"]:
            f.append(f"peak RSS {rec['rss_peak'] / MIB:.0f} MiB > bound {b['total'] / MIB:.0f} MiB")
        for kind, p99 in self.p99_over(rec["victim"]).items():
            f.append(self.p99_message(kind, [p99]))
        for variant, secs, short in rec["slow"]:
            f.append(f"{variant} took {secs} s > budget {rec['budget_s']:.0f} s ({short})")
        for variant, size in rec["big_answers"]:
            f.append(f"{variant}: a {size / MIB:.1f} MiB answer > {response_bound(self.setup) / MIB:.0f} MiB bound")
        for variant, short in rec["unclean"]:
            f.append(f"{variant}: unclean failure {short}")
        if rec.get("left_busy"):
            f.append(f"left the server busy: {rec['cpu_after_s']:.1f} s of CPU after its calls returned")
        return f

    def p99_over(self, victim):
        """{kind: p99} for the victim's call kinds whose p99 is past the threshold."""
        out = {}
        for kind, limit in self.thresholds().items():
            p99, n = victim[kind]["p99"], victim[kind]["n"]
            if p99 is not None and n >= 1 and p99 > limit:
                out[kind] = p99
        return out

    def p99_message(self, kind, p99s):
        measured = ", then ".join(f"{p * 1000:.0f} ms" for p in p99s)
        return (f"victim {kind} p99 {measured} > {self.thresholds()[kind] * 1000:.0f} ms "
                f"(quiet {self.quiet[kind]['p99'] * 1000:.0f} ms)")

    async def run_attack(self, attack: Attack):
        if self.setup.time_budget_s and time.monotonic() - self.started > self.setup.time_budget_s:
            self.skipped.append(attack.name)
            self.log(f"  {attack.name:<34} not run: the campaign is past its time budget "
                     f"({self.setup.time_budget_s:.0f} s)")
            return None
        if not self.server.alive():
            await self.restart("the server was not running")
        elif status(self.server.pid).get("VmRSS", 0) > self.bounds["host"]:
            await self.restart(f"RSS {status(self.server.pid)['VmRSS'] / MIB:.0f} MiB above the host bound before "
                               f"{attack.name}")
        rec = await self.fire(attack)
        if rec["alive"]:
            cpu_after, settled = await self.settle()
            rec["cpu_after_s"] = round(cpu_after, 2)
            rec["left_busy"] = not settled
        self.victim_window(rec)
        failures = self.judge(rec)
        over = self.p99_over(rec["victim"])
        if over and len(failures) == len(over) and rec["alive"]:
            # Latency alone: measure once more (a 2-core machine is noisy). It
            # fails if the same kind of call is past the threshold both times;
            # anything else the second run breaks counts as well.
            again = await self.fire(attack)
            if again["alive"]:
                cpu_after, settled = await self.settle()
                again["cpu_after_s"], again["left_busy"] = round(cpu_after, 2), not settled
            self.victim_window(again)
            again_over = self.p99_over(again["victim"])
            rec["retried"] = {"victim": again["victim"], "rss_peak": again["rss_peak"], "host_peak": again["host_peak"]}
            failures = [self.p99_message(k, [over[k], again_over[k]]) for k in over if k in again_over]
            failures += [x for x in self.judge(again) if not (x.startswith("victim ") and " p99 " in x)]
            rec["alive"] = again["alive"]
            rec["left_busy"] = again.get("left_busy")
            if not again["alive"]:
                rec["exit"] = again.get("exit")
        rec["failures"] = failures
        self.records.append(rec)
        v = rec["victim"]
        self.log(f"  {attack.name:<34} {rec['seconds']:>5.1f}s calls {rec['calls']:>4} "
                 f"peak {rec['rss_peak'] / MIB:>6.0f} MiB host {rec['host_peak'] / MIB:>6.0f} MiB "
                 f"victim p99 batch {fmt_ms(v['batch']['p99'])} rf {fmt_ms(v['rf']['p99'])} "
                 f"{'FAIL: ' + '; '.join(failures) if failures else 'ok'}"[:600])
        if not rec["alive"] or rec.get("left_busy"):
            await self.restart(f"after {attack.name}: " + (rec.get("exit") or "still busy"))
        return rec

    # --- the attacks ---------------------------------------------------------------------

    def tool_attack(self, name, tool) -> Attack:
        tok = self.tokens[ATTACKER]
        calls = []
        skip = os.environ.get("STEPHOST_ADVERSARIAL_SKIP")
        for variant, args in variants(tool, self.ctx):
            if skip and re.search(skip, variant):
                continue
            calls.append((variant, "tools/call", name, encode_call(name, args, tok)))
        return Attack(f"tool:{name}", calls)

    def saved_bulk_attack(self) -> Attack:
        tok = self.tokens[ATTACKER]
        have = len([x for x in self.tools if x.startswith("adv_")])
        room = max(1, self.setup.saved_max_per_tenant - have)
        calls = []
        for i in range(room):
            d = bulky_saved_batch(i, self.setup.saved_max_bytes, self.steps_of)
            calls.append((f"save {d['name']}", "tools/call", "save_batch", encode_call("save_batch", d, tok)))
        return Attack("saved:fill-to-cap", calls, coverage=True, min_s=0, hold_s=1.0)

    def list_attack(self) -> Attack:
        tok = self.tokens[ATTACKER]
        headers, payload = stateless_request("tools/list", {}, 1, tok)
        body = json.dumps(payload).encode()
        return Attack("tools/list:flood", [("tools/list", "tools/list", "tools/list", body)], coverage=False,
                      min_s=max(3.0, self.setup.min_attack_s))

    def sessions_attack(self) -> Attack:
        """Every session the attacker may hold, each with an instance of every
        plugin it may use and a Python evaluator (the pool is sized for that)."""
        tok = self.tokens[ATTACKER]
        calls = []
        steps = every_plugin(self.verb_steps)
        # Two of the attacker's sessions are taken (adv-vars, adv-warm).
        for i in range(self.setup.attacker["max_sessions"] - 2):
            sid = f"adv-fill-{i}"
            calls.append((f"fill {sid}", "tools/call", "batch",
                          encode_call("batch", {"session_id": sid, "on_failure": "continue", "steps": steps}, tok)))
            calls.append((f"eval {sid}", "tools/call", "execute_batch",
                          encode_call("execute_batch", {**VICTIM_CALLS["rf"][1], "session_id": sid,
                                                        "timeout_ms": self.setup.attacker["max_batch_timeout_ms"]}, tok)))
        return Attack("sessions:fill-every-plugin", calls, coverage=True, min_s=0, hold_s=3.0)

    # --- the whole campaign --------------------------------------------------------------

    async def run(self):
        import httpx

        started = self.started = time.monotonic()
        self.skipped = []
        self.windows = []
        s = self.setup
        with tempfile.TemporaryDirectory(prefix="stephost-adversarial-") as tmp:
            self.tmp = Path(tmp)
            self.plugins = loaded_plugins()
            self.slots_per_instance = slots_per_instance()
            self.max_instances = pool_slots(s, self.plugins, self.slots_per_instance)
            self.config = config_text(s, self.tmp, self.metrics_token, self.max_instances)
            self.tenants = tenants_text(s, self.tokens)
            self.tools_arg = ",".join(self.plugins + ["saved"])
            self.killed_for_rss = 0
            limits = httpx.Limits(max_connections=s.concurrency + 8, max_keepalive_connections=s.concurrency + 8)
            async with httpx.AsyncClient(limits=limits) as client:
                self.client = client
                self.start()
                try:
                    await self.prepare()
                    await self.wait_victim(10)
                    await asyncio.sleep(1.0)
                    self.quiet_cpu = await asyncio.to_thread(self.cpu_rate, 1.0)
                    split = split_rss(self.server.pid) or (status(self.server.pid).get("VmRSS", 0), 0)
                    self.baseline = {"host": split[0], "pool": split[1], "rss": status(self.server.pid).get("VmRSS", 0)}
                    self.bounds = rss_bounds(s, split[0], self.plugins)
                    t0 = time.monotonic()
                    await asyncio.sleep(s.quiet_s)
                    quiet = self.victim.between(t0, time.monotonic())
                    self.quiet = latency_stats(quiet)
                    quiet_errors = [x for x in quiet if not x["ok"]]
                    self.log(f"  baseline host {split[0] / MIB:.0f} MiB, pool {split[1] / MIB:.0f} MiB; bound host "
                             f"{self.bounds['host'] / MIB:.0f} MiB, total {self.bounds['total'] / MIB:.0f} MiB; quiet "
                             f"p50/p99 batch {fmt_ms(self.quiet['batch']['p50'])}/{fmt_ms(self.quiet['batch']['p99'])}"
                             f" rf {fmt_ms(self.quiet['rf']['p50'])}/{fmt_ms(self.quiet['rf']['p99'])}; server CPU "
                             f"{self.quiet_cpu:.2f} cores with the victim alone")
                    if quiet_errors:
                        raise RuntimeError(f"the victim failed without any attack: {quiet_errors[0]['err']}")
                    only = os.environ.get("STEPHOST_ADVERSARIAL_ONLY")
                    attacks = [lambda name=name: self.tool_attack(name, self.tools[name]) for name in sorted(self.tools)]
                    attacks += [self.saved_bulk_attack, self.list_attack, self.sessions_attack]
                    for make in attacks:
                        attack = make()
                        if only and not re.search(only, attack.name):
                            continue
                        await self.run_attack(attack)
                finally:
                    self.stop()
        return self.results(time.monotonic() - started)

    def results(self, runtime):
        offered = sorted(self.tools)
        attacked = {r["attack"].split(":", 1)[1] for r in self.records if r["attack"].startswith("tool:")}
        for r in self.records:
            r["variants"] = {k: v for k, v in r["variants"].items()}
        return {
            "runtime_s": round(runtime, 1),
            "binary": BIN,
            "plugins": self.plugins,
            "engine.max_instances": self.max_instances,
            "slots_per_instance": self.slots_per_instance,
            "setup": {k: v for k, v in self.setup.__dict__.items()},
            "bounds": self.bounds,
            "response_bound": response_bound(self.setup),
            "baseline": self.baseline,
            "quiet": self.quiet,
            "p99_thresholds": self.thresholds(),
            "tools_offered": offered,
            "tools_not_attacked": sorted(set(offered) - attacked),
            "filters": {k: os.environ[k] for k in ("STEPHOST_ADVERSARIAL_ONLY", "STEPHOST_ADVERSARIAL_SKIP")
                        if os.environ.get(k)},
            "saved": self.saved,
            "restarts": self.restarts,
            "attacks": self.records,
            "failures": {r["attack"]: r["failures"] for r in self.records if r["failures"]},
            "not_run": self.skipped,
            # Victim calls that failed outside every attack's window (while the
            # server settled, or after the quiet phase): failures all the same.
            "victim_errors_between_attacks": [
                x for x in self.victim_samples if not x["ok"]
                and not any(x["t0"] <= t1 and x["t1"] >= t0 for t0, t1 in self.windows)][:10],
        }


def fmt_ms(v):
    return "-" if v is None else f"{v * 1000:.0f}ms"


def summary(r):
    """The per-attack table the tests print and bench/adversarial.py shows."""
    out = [f"\nadversarial campaign: {len(r['tools_offered'])} tools, {len(r['attacks'])} attacks, "
           f"{r['runtime_s']} s, restarts {len(r['restarts'])}"]
    b = r["bounds"]
    out.append(f"RSS bound ({b['formula']}): host {b['host'] / MIB:.0f} MiB "
               f"({', '.join(f'{k} {v / MIB:.0f}' for k, v in b['terms'].items())}), "
               f"total {b['total'] / MIB:.0f} MiB")
    q = r["quiet"]
    out.append("victim quiet p50/p99: " + ", ".join(f"{k} {fmt_ms(v['p50'])}/{fmt_ms(v['p99'])}" for k, v in q.items())
               + "; thresholds " + ", ".join(f"{k} {fmt_ms(v)}" for k, v in r["p99_thresholds"].items()))
    out.append(f"{'attack':<36}{'s':>6}{'calls':>6}{'peak MiB':>9}{'host MiB':>9}  victim p50/p99 batch, rf  outcome")
    for a in r["attacks"]:
        v = a["victim"]
        out.append(f"{a['attack']:<36}{a['seconds']:>6.1f}{a['calls']:>6}{a['rss_peak'] / MIB:>9.0f}"
                   f"{a['host_peak'] / MIB:>9.0f}  {fmt_ms(v['batch']['p50'])}/{fmt_ms(v['batch']['p99'])}, "
                   f"{fmt_ms(v['rf']['p50'])}/{fmt_ms(v['rf']['p99'])}  "
                   + ("FAIL: " + "; ".join(a["failures"]) if a["failures"] else "ok"))
    return "\n".join(out)


def write_results(results, path=None):
    path = path or os.environ.get("STEPHOST_ADVERSARIAL_OUT")
    if path:
        Path(path).write_text(json.dumps(results, indent=1, default=str))
    return path


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "victim":
    victim_main(sys.argv[2], sys.argv[3], sys.argv[4])
