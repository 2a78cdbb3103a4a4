#!/usr/bin/env python3
"""stephost's `execute_batch` against the original implementation, rf-mcp 0.36 (PyPI
`rf-mcp`, module `robotmcp`), through the same Python MCP client over stdio.

Measured, for both servers:

  start     N cold starts each (interleaved): spawn -> `initialize` done, -> first
            `tools/list` answered, -> first one-step `execute_batch` answered (session
            auto-created). One untimed start of each comes first, so the OS file cache,
            Python's bytecode cache and stephost's compile cache are warm: what a user
            sees from the second start on. stephost's first start with an empty compile
            cache is shown too.
  per step  one `execute_step` call, a 20-, a 100- and a 200-step batch of BuiltIn/String/Collections keywords
            (Set Variable, Catenate, Should Be Equal, Convert To Integer, Create List,
            Append To List, Get Length, Should Contain, Replace String, Evaluate, ...),
            each step feeding later ones through `assign_to` variables, and a 20-step
            batch of XML library keywords on a parsed tree. Warm-up runs
            first, then R runs per batch and server, interleaved with rotating order so
            load from elsewhere falls on both. Wall clock per `execute_batch` call divided
            by the step count; median and p90 (nearest rank). Every call must come back
            PASS with every step executed, or the script stops and prints the failure.
            Twice: (a) through the MCP Python SDK (`ClientSession.call_tool`), also
            timing the SDK's check of the reply against the tool's output schema, and
            (b) through a bare JSON-RPC client written here (no SDK), to show what the
            servers and the pipe cost on their own. The servers' own `total_time_ms`
            is reported as well.
  checks    return values of the same keywords on both (`execute_step`), and a few
            behaviours (`${STEP_N}` chaining, list mutation, what a batch reply
            carries), reported as found. The timed batches chain through RF variables
            (`assign_to` -> `${name}`) because rf-mcp 0.36 does not carry return values
            into `${STEP_N}` (see the checks table).

Servers: `stephost serve` (STEPHOST_LOG=warn, as the end-to-end tests run it, default
compile cache) and rf-mcp's console entry point (`python -m robotmcp.entry`, the same as
the `robotmcp` script) with its defaults: stdio transport, no frontend, its background
engine warm-up, instruction learning on. rf-mcp's session gets String and Collections
through `manage_session(action="init")` (an auto-created session has BuiltIn only);
stephost's `rf` plugin has them built in and has no such tool. Both run in a temporary
working directory; their stderr goes to log files, summarised at the end.

rf-mcp runs from its own venv (default `.venv-rfmcp` in the repository, created with
`python3 -m venv` and `pip install -r bench/requirements-rf-mcp.txt` when missing). The
client is the `mcp` SDK of the Python running this script; the repository's test venv
has it. Without `mcp`, the script re-runs itself with the rf-mcp venv's Python.

The stephost binary is copied to a temporary directory first, so a build finishing
during the run cannot swap it.

Usage (from the repository root, with target/release/stephost built):
  .venv/bin/python bench/rf_bench.py [--starts 5] [--runs 30] [--warmup 3] [--json out.json]
  .venv/bin/python bench/rf_bench.py --quick          # 2 starts, 5 runs: about 30 s
  .venv-rfmcp/bin/python bench/rf_bench.py            # the same with that venv's newer mcp SDK
Options: --rfmcp-python PATH, --rfmcp-env KEY=VALUE (e.g. ROBOTMCP_OUTPUT_MODE=inline),
--no-bare, --markdown FILE.
"""

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "rf"))
from stdio_mcp import StdioClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_VENV = ROOT / ".venv-rfmcp"
REQUIREMENTS = ROOT / "bench" / "requirements-rf-mcp.txt"


# --- rf-mcp's venv --------------------------------------------------------------------

def ensure_rfmcp_python(explicit):
    if explicit:
        return explicit
    python = DEFAULT_VENV / "bin" / "python"
    if not python.exists() or subprocess.run([str(python), "-c", "import robotmcp"], capture_output=True).returncode != 0:
        print(f"creating {DEFAULT_VENV} with rf-mcp ({REQUIREMENTS.name}) ...", file=sys.stderr)
        subprocess.run(["python3", "-m", "venv", str(DEFAULT_VENV)], check=True)
        # Keep the venv out of git whatever .gitignore says (Python 3.13's venv does the same).
        (DEFAULT_VENV / ".gitignore").write_text("*\n")
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)], check=True)
    return str(python)


def rfmcp_versions(python):
    code = (
        "import importlib.metadata as m, json, platform\n"
        "v = {p: m.version(p) for p in ('rf-mcp', 'fastmcp', 'mcp', 'robotframework')}\n"
        "v['python'] = platform.python_version()\n"
        "print(json.dumps(v))"
    )
    return json.loads(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout)


# Re-run under the rf-mcp venv when this Python has no MCP client.
try:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError:
    if os.environ.get("RF_BENCH_REEXEC"):
        raise
    _python = ensure_rfmcp_python(next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--rfmcp-python=")), None)
                                  or (sys.argv[sys.argv.index("--rfmcp-python") + 1] if "--rfmcp-python" in sys.argv else None))
    print(f"no `mcp` module here; re-running with {_python}", file=sys.stderr)
    os.execve(_python, [_python, __file__, *sys.argv[1:]], dict(os.environ, RF_BENCH_REEXEC="1"))


# --- MCP result helpers (mcp 1.x camelCase, 2.x snake_case) ----------------------------

def structured(result):
    data = getattr(result, "structuredContent", None)
    if data is None:
        data = getattr(result, "structured_content", None)
    if data is None:
        texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
        with contextlib.suppress(Exception):
            data = json.loads(texts[0])
    # fastmcp wraps non-object results as {"result": ...}; execute_batch returns an object.
    return data


def is_error(result):
    value = getattr(result, "isError", None)
    return bool(value if value is not None else getattr(result, "is_error", False))


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# Time the client spends checking a tool result against the tool's output schema
# (`jsonschema`, inside `call_tool`): mcp 1.x compiles the schema on every call, 2.x once.
VALIDATION = []


def instrument_validation():
    name = next((n for n in ("_validate_tool_result", "validate_tool_result") if hasattr(ClientSession, n)), None)
    if name is None:
        return None
    original = getattr(ClientSession, name)

    async def timed(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return await original(self, *args, **kwargs)
        finally:
            VALIDATION.append(time.perf_counter() - started)

    setattr(ClientSession, name, timed)
    return name


# --- a bare JSON-RPC client: the same servers and batches without the SDK -----------------

class RawClient(StdioClient):
    """tests/rf/stdio_mcp.py's bare client on a benchmarked server, its stderr kept in
    the server's log."""

    def __init__(self, server):
        self.errlog = open(server.log_path, "a")
        super().__init__([server.command, *server.args], env=server.env, cwd=server.cwd, stderr=self.errlog,
                         name="rf_bench-raw")

    def close(self):
        super().close()
        self.errlog.close()


def measure_raw(servers, runs, warmup, log):
    times = {(s.name, b): [] for s in servers for b in BATCHES}
    times["wire_bytes"] = {}
    clients = {}
    try:
        for s in servers:
            clients[s.name] = RawClient(s)
            if s.name == "rf-mcp":
                _, out = clients[s.name].call_tool("manage_session", {
                    "action": "init", "session_id": "raw", "libraries": ["BuiltIn", "String", "Collections"]})
                if not out.get("success"):
                    raise RuntimeError(f"rf-mcp manage_session init failed: {out}")
        order = [(s, b) for b in BATCHES for s in servers]
        for run in range(warmup + runs):
            k = run % len(order)
            for s, b in order[k:] + order[:k]:
                steps = BATCHES[b]
                tool, args = call_args(b, "raw", steps)
                started = time.perf_counter()
                result, out = clients[s.name].call_tool(tool, args)
                elapsed = time.perf_counter() - started
                if not passed(s, result, out, steps, b):
                    raise RuntimeError(f"{s.name} {b} batch did not PASS (bare client, run {run + 1}):\n" + failure_text(s, out))
                times["wire_bytes"][(s.name, b)] = clients[s.name].last_bytes
                if run >= warmup:
                    times[(s.name, b)].append(elapsed)
        log(f"bare JSON-RPC client: {warmup + runs} runs done")
    finally:
        for c in clients.values():
            c.close()
    return times


# --- the workload -----------------------------------------------------------------------

def block():
    """20 steps, each value flowing on through `assign_to` -> `${name}`."""
    s = lambda kw, *args, to=None: {"keyword": kw, "arguments": list(args), **({"assign_to": to} if to else {})}
    return [
        s("Set Variable", "hello", to="greeting"),
        s("Catenate", "${greeting}", "world", to="phrase"),
        s("Should Be Equal", "${phrase}", "hello world"),
        s("Get Length", "${phrase}", to="length"),
        s("Should Be Equal As Integers", "${length}", "11"),
        s("Convert To Integer", "41", to="number"),
        s("Evaluate", "${number} + 1", to="answer"),
        s("Should Be Equal As Integers", "${answer}", "42"),
        s("Create List", "alpha", "beta", to="items"),
        s("Append To List", "${items}", "gamma"),
        s("Should Contain", "${items}", "alpha"),
        s("Replace String", "${phrase}", "world", "there", to="replaced"),
        s("Should Be Equal", "${replaced}", "hello there"),
        s("Should Contain", "${replaced}", "there"),
        s("Catenate", "SEPARATOR=-", "${greeting}", "${answer}", to="joined"),
        s("Should Be Equal", "${joined}", "hello-42"),
        s("Evaluate", "${length} + ${answer}", to="total"),
        s("Convert To Integer", "${total}", to="total_int"),
        s("Should Be Equal As Integers", "${total_int}", "53"),
        s("Get Length", "${replaced}", to="replaced_length"),
    ]


CATALOG = ('<catalog><book id="b1"><title>Dune</title><price>9.99</price></book>'
           '<book id="b2"><title>Emma</title><price>5.50</price></book>'
           '<book id="b3"><title>Ulysses</title><price>12.00</price></book></catalog>')


def xml_block():
    """20 steps of Robot Framework's XML library on a parsed tree: reads, checks and
    in-place changes (stephost runs RF's own XML code in its sandboxed CPython)."""
    s = lambda kw, *args, to=None: {"keyword": kw, "arguments": list(args), **({"assign_to": to} if to else {})}
    return [
        s("Import Library", "XML"),
        s("Parse XML", CATALOG, to="doc"),
        s("Get Element Count", "${doc}", "book", to="count"),
        s("Should Be Equal As Integers", "${count}", "3"),
        s("Get Element Text", "${doc}", "book[1]/title", to="t1"),
        s("Should Be Equal", "${t1}", "Dune"),
        s("Get Element Attribute", "${doc}", "id", "xpath=book[2]", to="id2"),
        s("Should Be Equal", "${id2}", "b2"),
        s("Get Elements Texts", "${doc}", "book/title", to="titles"),
        s("Length Should Be", "${titles}", "3"),
        s("Set Element Text", "${doc}", "Dune Messiah", "xpath=book[1]/title"),
        s("Element Text Should Be", "${doc}", "Dune Messiah", "xpath=book[1]/title"),
        s("Set Element Attribute", "${doc}", "lang", "en", "xpath=book[1]"),
        s("Element Attribute Should Be", "${doc}", "lang", "en", "xpath=book[1]"),
        s("Element Should Exist", "${doc}", "book[3]/price"),
        s("Element Should Not Exist", "${doc}", "book[4]"),
        s("Get Element", "${doc}", "book[3]", to="third"),
        s("Get Element Text", "${third}", "title", to="t3"),
        s("Should Be Equal", "${t3}", "Ulysses"),
        s("Element To String", "${doc}", "xpath=book[2]", to="text"),
    ]


# "1 step" is one `execute_step` call (each server's single-keyword tool), not a batch.
SINGLE = "1 step"
BATCHES = {SINGLE: [{"keyword": "Should Be Equal", "arguments": ["hello", "hello"]}],
           "20 steps": block(), "100 steps": block() * 5, "200 steps": block() * 10,
           "XML, 20 steps": xml_block()}


def call_args(name, session_id, steps):
    """The tool and arguments that run `steps` of batch `name`."""
    if name == SINGLE:
        return "execute_step", {"session_id": session_id, **steps[0]}
    return "execute_batch", {"session_id": session_id, "steps": steps}

# Keywords whose return values are compared (execute_step on both servers).
RETURN_CASES = [
    ("Set Variable", ["hello"]),
    ("Catenate", ["hello", "world"]),
    ("Catenate", ["SEPARATOR=-", "hello", "42"]),
    ("Get Length", ["hello world"]),
    ("Convert To Integer", ["41"]),
    ("Convert To Integer", ["ff", "16"]),
    ("Evaluate", ["41 + 1"]),
    ("Evaluate", ["0"]),
    ("Evaluate", ["1 / 4"]),
    ("Evaluate", ["[1, 2] + [3]"]),
    ("Evaluate", ["{'a': 1, 'b': [True, None]}"]),
    ("Create List", ["alpha", "beta"]),
    ("Create Dictionary", ["a=1", "b=2"]),
    ("Replace String", ["hello world", "world", "there"]),
    ("Split String", ["a b c"]),
    ("Get Substring", ["hello", "1", "3"]),
    ("Convert To Upper Case", ["hello"]),
    ("Get Count", ["banana", "a"]),
]

# Behaviours checked with small batches (on_failure=stop, so no recovery waits).
BEHAVIOUR_CASES = [
    (
        "`${STEP_N}` carries a step's return value (both document it)",
        [
            {"keyword": "Set Variable", "arguments": ["hello"]},
            {"keyword": "Catenate", "arguments": ["${STEP_1}", "world"]},
            {"keyword": "Should Be Equal", "arguments": ["${STEP_2}", "hello world"]},
        ],
    ),
    (
        "`Append To List` changes the list in place (Robot Framework semantics)",
        [
            {"keyword": "Create List", "arguments": ["a", "b"], "assign_to": "letters"},
            {"keyword": "Append To List", "arguments": ["${letters}", "c"]},
            {"keyword": "Length Should Be", "arguments": ["${letters}", "3"]},
        ],
    ),
]


# --- the two servers --------------------------------------------------------------------

class Server:
    def __init__(self, name, command, args, env, cwd, log):
        self.name = name
        self.command, self.args, self.env, self.cwd = command, args, env, cwd
        self.params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
        self.log_path = log

    @contextlib.asynccontextmanager
    async def session(self):
        with open(self.log_path, "a") as errlog:
            async with stdio_client(self.params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as client:
                    yield client

    async def setup(self, client, session_id):
        if self.name == "rf-mcp":
            result = await client.call_tool("manage_session", {
                "action": "init", "session_id": session_id, "libraries": ["BuiltIn", "String", "Collections"],
            })
            out = structured(result)
            if not out or not out.get("success"):
                raise RuntimeError(f"rf-mcp manage_session init failed: {out}")

    async def batch(self, client, session_id, steps, **extra):
        return await self.call(client, "execute_batch", {"session_id": session_id, "steps": steps, **extra})

    async def call(self, client, tool, args):
        VALIDATION.clear()
        result = await client.call_tool(tool, args)
        return result, structured(result) or {}

    async def step_value(self, client, session_id, keyword, arguments):
        result = await client.call_tool("execute_step", {"session_id": session_id, "keyword": keyword, "arguments": arguments})
        out = structured(result) or {}
        if self.name == "stephost":
            st = (out.get("steps") or [{}])[0]
            return out.get("status") == "PASS", st.get("return_value"), out
        return bool(out.get("success")), out.get("output"), out


def passed(server, result, out, steps, batch=None):
    error = result.get("isError") if isinstance(result, dict) else is_error(result)
    if batch == SINGLE:
        # Both servers' execute_step say `success`.
        return not error and out.get("success") is True
    if server.name == "stephost":
        return not error and out.get("status") == "PASS" and out.get("steps_executed") == len(steps)
    return (out.get("status") == "PASS" and out.get("steps_executed") == len(steps)
            and (out.get("digest") or {}).get("passed") == len(steps))


def failure_text(server, out):
    steps = out.get("steps") if isinstance(out.get("steps"), list) else []
    bad = [s for s in steps if isinstance(s, dict) and s.get("status") != "PASS"]
    return json.dumps({"server": server.name, "status": out.get("status"), "summary": out.get("summary"),
                       "failure": out.get("failure"), "first_bad_step": bad[:1], "error": out.get("error")},
                      default=str, indent=1)


def server_time_ms(out):
    value = out.get("total_time_ms")
    return float(value) if isinstance(value, (int, float)) else None


# --- measurements ------------------------------------------------------------------------

ONE_STEP = [{"keyword": "Set Variable", "arguments": ["ready"]}]


async def cold_start(server):
    t0 = time.perf_counter()
    async with server.session() as client:
        await client.initialize()
        t_init = time.perf_counter()
        tools = (await client.list_tools()).tools
        t_list = time.perf_counter()
        result, out = await server.batch(client, "start", ONE_STEP)
        t_first = time.perf_counter()
        if not passed(server, result, out, ONE_STEP):
            raise RuntimeError("first batch after start failed:\n" + failure_text(server, out))
        assert any(t.name == "execute_batch" for t in tools)
    return {"initialize": t_init - t0, "tools_list": t_list - t0, "first_batch": t_first - t0,
            "tools": len(tools)}


async def measure_starts(servers, n, log):
    results = {s.name: [] for s in servers}
    for s in servers:
        log(f"start: one untimed start of {s.name}")
        await cold_start(s)
    for i in range(n):
        order = servers if i % 2 == 0 else servers[::-1]
        for s in order:
            results[s.name].append(await cold_start(s))
        log(f"start {i + 1}/{n}: " + ", ".join(f"{s.name} {results[s.name][-1]['tools_list'] * 1e3:.0f} ms" for s in servers))
    return results


async def measure_steps(servers, runs, warmup, log):
    times = {(s.name, b): [] for s in servers for b in BATCHES}
    server_ms = {(s.name, b): [] for s in servers for b in BATCHES}
    validation = {(s.name, b): [] for s in servers for b in BATCHES}
    sample = {}
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for s in servers:
            client = await stack.enter_async_context(s.session())
            await client.initialize()
            await s.setup(client, "bench")
            clients[s.name] = client
        order = [(s, b) for b in BATCHES for s in servers]
        for run in range(warmup + runs):
            k = run % len(order)
            for s, b in order[k:] + order[:k]:
                steps = BATCHES[b]
                tool, args = call_args(b, "bench", steps)
                started = time.perf_counter()
                result, out = await s.call(clients[s.name], tool, args)
                elapsed = time.perf_counter() - started
                if not passed(s, result, out, steps, b):
                    raise RuntimeError(f"{s.name} {b} batch did not PASS (run {run + 1}):\n" + failure_text(s, out))
                sample[(s.name, b)] = out
                if run >= warmup:
                    times[(s.name, b)].append(elapsed)
                    server_ms[(s.name, b)].append(server_time_ms(out))
                    validation[(s.name, b)].append(sum(VALIDATION))
            log(f"batches: run {run + 1}/{warmup + runs}" + (" (warm-up)" if run < warmup else ""))
    return times, server_ms, validation, sample


def render_value(value):
    """A JSON value as Python's str() shows it (how rf-mcp renders `output`)."""
    return value if isinstance(value, str) else repr(value)


async def cross_check(servers):
    rows, behaviours = [], []
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for s in servers:
            client = await stack.enter_async_context(s.session())
            await client.initialize()
            await s.setup(client, "check")
            clients[s.name] = client
        for keyword, args in RETURN_CASES:
            row = {"keyword": keyword, "arguments": args}
            for s in servers:
                ok, value, out = await s.step_value(clients[s.name], "check", keyword, args)
                row[s.name] = {"ok": ok, "value": value, "raw": None if ok else out}
            sh, rf = row["stephost"], row["rf-mcp"]
            row["agree"] = sh["ok"] and rf["ok"] and (
                sh["value"] == rf["value"] or render_value(sh["value"]) == render_value(rf["value"]))
            rows.append(row)
        for i, (title, steps) in enumerate(BEHAVIOUR_CASES):
            row = {"check": title}
            for s in servers:
                sid = f"behaviour{i}"
                await s.setup(clients[s.name], sid)
                result, out = await s.batch(clients[s.name], sid, steps, on_failure="stop")
                row[s.name] = {
                    "pass": passed(s, result, out, steps),
                    "status": out.get("status"),
                    "args_resolved": [st.get("args_resolved") for st in out.get("steps", [])],
                    "error": (out.get("failure") or {}).get("error") or out.get("error"),
                }
            behaviours.append(row)
    return rows, behaviours


# --- machine notes ------------------------------------------------------------------------

def busy_processes():
    names = {}
    for comm in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            name = comm.read_text().strip()
            if name in ("rustc", "cargo", "cc1", "cc1plus", "ld", "rust-lld", "clang", "node"):
                names[name] = names.get(name, 0) + 1
    return names


class BusySampler:
    """Looks for compiler processes once a second during the run (others share this machine)."""

    def __init__(self):
        import threading
        self.samples, self.busy = 0, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop.wait(1.0):
            found = busy_processes()
            self.samples += 1
            self.busy += bool(found.keys() & {"rustc", "cc1", "cc1plus", "rust-lld", "ld", "clang"})

    def close(self):
        self.stop.set()
        self.thread.join()
        return self.busy, self.samples


def machine_notes(stephost_bin, rfmcp_python):
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem = next((line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")), "0")
    os_name = "unknown"
    with contextlib.suppress(OSError):
        os_name = re.search(r'PRETTY_NAME="([^"]*)"', Path("/etc/os-release").read_text()).group(1)
    git = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %cd", "--date=iso"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
    version = subprocess.run([stephost_bin, "--version"], capture_output=True, text=True).stdout.strip()
    st = os.stat(stephost_bin)
    import importlib.metadata as md
    return {
        "cpu": cpu, "cores": os.cpu_count(), "mem_gib": round(int(mem) / 2**20, 1), "os": os_name,
        "kernel": platform.release(), "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "git": git, "worktree_dirty": bool(dirty), "stephost_version": version,
        "stephost_binary": stephost_bin,
        "stephost_binary_mtime": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.st_mtime)),
        "client_python": platform.python_version(), "client_mcp": md.version("mcp"),
        "rfmcp": rfmcp_versions(rfmcp_python), "rfmcp_python": rfmcp_python,
    }


def summarize_log(path):
    lines = Path(path).read_text(errors="replace").splitlines() if Path(path).exists() else []
    counts = {}
    for line in lines:
        key = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z\s*", "", line).strip()
        key = re.sub(r"\b[0-9a-f]{8,}\b", "<id>", key)
        if key:
            counts[key] = counts.get(key, 0) + 1
    return len(lines), sorted(counts.items(), key=lambda kv: -kv[1])


# --- report -------------------------------------------------------------------------------

def ms(x):
    return f"{x * 1e3:.1f} ms" if x >= 0.01 else f"{x * 1e3:.2f} ms"


def step_ms(x):
    return f"{x * 1e3:.3f} ms" if x < 0.1 else f"{x * 1e3:.2f} ms"


def report(opts, notes, load_before, load_after, busy_before, busy_after, busy_share, starts, empty_cache, times, server_ms,
           validation, raw, sample, checks, behaviours, logs):
    out = []
    p = out.append
    p("## rf-mcp 0.36 vs stephost: `execute_batch` over MCP stdio (`bench/rf_bench.py`)\n")
    p("### Start-up (spawn of the server process to ...)\n")
    p(f"{opts.starts} cold starts each, interleaved, after one untimed start of each (warm file, bytecode and "
      "compile caches). Median (p90).\n")
    p("| server | `initialize` done | first `tools/list` answered | first 1-step `execute_batch` answered | tools listed |")
    p("|---|---:|---:|---:|---:|")
    for name, rows in starts.items():
        cells = []
        for key in ("initialize", "tools_list", "first_batch"):
            vals = [r[key] for r in rows]
            cells.append(f"{ms(statistics.median(vals))} ({ms(pct(vals, 0.9))})")
        p(f"| {name} | " + " | ".join(cells) + f" | {rows[0]['tools']} |")
    sh = {k: statistics.median(r[k] for r in starts["stephost"]) for k in ("initialize", "tools_list", "first_batch")}
    rf = {k: statistics.median(r[k] for r in starts["rf-mcp"]) for k in ("initialize", "tools_list", "first_batch")}
    p(f"| rf-mcp / stephost | {rf['initialize'] / sh['initialize']:.1f}x | {rf['tools_list'] / sh['tools_list']:.1f}x | "
      f"{rf['first_batch'] / sh['first_batch']:.1f}x | |")
    if empty_cache:
        p(f"\nstephost's very first start with an empty compile cache (one run, STEPHOST_CACHE_DIR set to a new "
          f"directory): `initialize` {ms(empty_cache['initialize'])}, `tools/list` {ms(empty_cache['tools_list'])}, "
          f"first batch {ms(empty_cache['first_batch'])}.")

    p("\n### Per step\n")
    p(f"{opts.warmup} warm-up runs, then {opts.runs} runs per batch and server, interleaved. Wall clock of one "
      "`execute_batch` call (request sent to reply parsed) divided by the step count; median and p90 (nearest rank).\n")
    p(f"**a. Through the MCP Python SDK** (mcp {notes['client_mcp']}, `ClientSession.call_tool`). "
      "`client schema check` is the part of each call the SDK spends validating the reply against the tool's "
      "output schema (`jsonschema`); `server time` is the run time the server reports in `total_time_ms` "
      "(rf-mcp rounds it to whole ms).\n")
    p("| batch | server | per step, median | per step, p90 | call, median | call, p90 | client schema check / call | server time / step |")
    p("|---|---|---:|---:|---:|---:|---:|---:|")
    ratios = {}
    for b, steps in BATCHES.items():
        n = len(steps)
        for name in ("stephost", "rf-mcp"):
            t = times[(name, b)]
            srv = [x for x in server_ms[(name, b)] if x is not None]
            val = validation[(name, b)]
            p(f"| {b} | {name} | {step_ms(statistics.median(t) / n)} | {step_ms(pct(t, 0.9) / n)} | "
              f"{ms(statistics.median(t))} | {ms(pct(t, 0.9))} | "
              + (f"{ms(statistics.median(val))}" if val and any(val) else "n/a") + " | "
              + (f"{statistics.median(srv) / n:.3f} ms" if srv else "n/a") + " |")
        r_med = statistics.median(times[("rf-mcp", b)]) / statistics.median(times[("stephost", b)])
        r_p90 = pct(times[("rf-mcp", b)], 0.9) / pct(times[("stephost", b)], 0.9)
        srv_sh = [x for x in server_ms[("stephost", b)] if x]
        srv_rf = [x for x in server_ms[("rf-mcp", b)] if x]
        ratios[("sdk", b)] = (r_med, r_p90)
        server_ratio = ""
        if srv_sh and srv_rf:
            ratio = statistics.median(srv_rf) / statistics.median(srv_sh)
            ratios[("server", b)] = (ratio, None)
            server_ratio = f"{ratio:.0f}x"
        p(f"| {b} | **rf-mcp / stephost** | **{r_med:.1f}x** | {r_p90:.1f}x | | | | {server_ratio} |")
    if raw:
        p("\n**b. Through a bare JSON-RPC client** (the same batches, servers and interleaving; newline-delimited "
          "JSON-RPC written to and read from the server's pipes by this script, no SDK, no schema check): what the "
          "servers and the transport cost with the least work a client can do.\n")
        p("| batch | server | per step, median | per step, p90 | call, median | call, p90 |")
        p("|---|---|---:|---:|---:|---:|")
        for b, steps in BATCHES.items():
            n = len(steps)
            for name in ("stephost", "rf-mcp"):
                t = raw[(name, b)]
                p(f"| {b} | {name} | {step_ms(statistics.median(t) / n)} | {step_ms(pct(t, 0.9) / n)} | "
                  f"{ms(statistics.median(t))} | {ms(pct(t, 0.9))} |")
            r_med = statistics.median(raw[("rf-mcp", b)]) / statistics.median(raw[("stephost", b)])
            r_p90 = pct(raw[("rf-mcp", b)], 0.9) / pct(raw[("stephost", b)], 0.9)
            ratios[("raw", b)] = (r_med, r_p90)
            p(f"| {b} | **rf-mcp / stephost** | **{r_med:.1f}x** | {r_p90:.1f}x | | |")

    p("\n### Targets\n")
    p("| target | measured (rf-mcp / stephost, per step, medians) | met |")
    p("|---|---|---|")
    labels = {"sdk": f"MCP Python SDK {notes['client_mcp']}", "raw": "bare JSON-RPC client", "server": "server-reported run time"}
    for kind in ("sdk", "raw", "server"):
        rows = [(b, ratios[(kind, b)]) for b in BATCHES if (kind, b) in ratios and b != SINGLE]
        if not rows:
            continue
        worst = min(r[0] for _, r in rows)
        p(f"| stephost at least 20x faster per step ({labels[kind]}) | "
          + ", ".join(f"{b}: {r[0]:.1f}x" + (f" (p90 {r[1]:.1f}x)" if r[1] else "") for b, r in rows)
          + f" | {'yes' if worst >= 20 else 'no'} |")
    for kind in ("sdk", "raw"):
        for b, target in (("200 steps", 50), (SINGLE, 5)):
            if (kind, b) in ratios:
                r = ratios[(kind, b)]
                what = "the 200-step batch" if b != SINGLE else "one `execute_step`"
                p(f"| at least {target}x on {what} ({labels[kind]}) | {r[0]:.1f}x (p90 {r[1]:.1f}x) | "
                  f"{'yes' if r[0] >= target else 'no'} |")
    p(f"| stephost faster to start | to `tools/list`: {sh['tools_list'] * 1e3:.0f} ms vs {rf['tools_list'] * 1e3:.0f} ms; "
      f"to first batch result: {sh['first_batch'] * 1e3:.0f} ms vs {rf['first_batch'] * 1e3:.0f} ms | "
      f"{'yes' if sh['tools_list'] < rf['tools_list'] and sh['first_batch'] < rf['first_batch'] else 'no'} |")

    p("\n### Same keywords, same values\n")
    p("Every timed batch came back PASS with every step executed on both servers; the batches assert the chained "
      "values themselves (`Should Be Equal ${replaced} hello there`, `Should Be Equal As Integers ${total_int} 53`, ...). "
      "Return values of single keywords (`execute_step`; rf-mcp reports them as text, compared with the Python "
      "rendering of stephost's JSON value):\n")
    p("| keyword | arguments | stephost | rf-mcp | same |")
    p("|---|---|---|---|---|")
    for r in checks:
        cell = lambda v: ("`" + json.dumps(v["value"]) + "`") if v["ok"] else "FAIL"
        p(f"| {r['keyword']} | `{json.dumps(r['arguments'])}` | {cell(r['stephost'])} | {cell(r['rf-mcp'])} | "
          f"{'yes' if r['agree'] else '**no**'} |")
    p("\nBehaviours (3-step batches, `on_failure=stop`):\n")
    p("| check | stephost | rf-mcp |")
    p("|---|---|---|")
    for r in behaviours:
        cell = lambda v: (("PASS" if v["pass"] else f"**{v['status']}**: {str(v['error'])[:90]}")
                          + f"; args_resolved {json.dumps(v['args_resolved'])[:120]}")
        p(f"| {r['check']} | {cell(r['stephost'])} | {cell(r['rf-mcp'])} |")
    p("\nWhat an `execute_batch` reply carries (the last timed run):\n")
    wire = raw["wire_bytes"] if raw else {}
    p("| batch | server | reply on the wire (JSON-RPC line) | `structuredContent` | per-step results inline | steps with a `return_value` |")
    p("|---|---|---:|---:|---|---:|")
    for b, steps in BATCHES.items():
        for name in ("stephost", "rf-mcp"):
            reply = sample[(name, b)]
            st = reply.get("steps")
            if isinstance(st, list):
                inline = "yes"
                values = sum(1 for x in st if isinstance(x, dict) and x.get("return_value") is not None)
            else:
                inline = f"no: `{re.sub(r'/[^ ]*/', '.../', str(st))[:90]}`"
                values = 0
            size = f"{wire[(name, b)]:,} B" if (name, b) in wire else "n/a"
            p(f"| {b} | {name} | {size} | {len(json.dumps(reply)):,} B | {inline} | {values} of {len(steps)} |")

    p("\n### Server stderr during the run\n")
    for name, (count, top) in logs.items():
        p(f"- {name}: {count} lines" + (":" if top else "."))
        for text, c in top[:6]:
            p(f"  - {c}x `{text[:160]}`")

    p("\n### Machine and versions\n")
    p(f"- Machine: {notes['cores']} cores, {notes['cpu']}, {notes['mem_gib']} GiB RAM, {notes['os']}, Linux {notes['kernel']}.")
    p(f"- Load average (1/5/15 min) before: {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f}; "
      f"after: {load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f}. Build processes before: "
      f"{busy_before or 'none'}; after: {busy_after or 'none'}. A compiler (rustc, cc1, ld, ...) was running in "
      f"{busy_share[0]} of {busy_share[1]} one-second samples taken during the run"
      + (": the machine was shared, read the figures as disturbed." if busy_share[0] else "."))
    p(f"- Date: {notes['date']}. Code: commit {notes['git']}" + (" (work tree has uncommitted changes)" if notes["worktree_dirty"] else "")
      + f"; `{notes['stephost_version']}`, binary `{os.path.relpath(notes['stephost_binary'], ROOT)}` built {notes['stephost_binary_mtime']}.")
    v = notes["rfmcp"]
    p(f"- rf-mcp {v['rf-mcp']} (fastmcp {v['fastmcp']}, mcp {v['mcp']}, Robot Framework {v['robotframework']}, "
      f"Python {v['python']}), from `{os.path.relpath(notes['rfmcp_python'], ROOT)}`, "
      + (f"with {', '.join('`' + e + '`' for e in notes['rfmcp_env'])}." if notes["rfmcp_env"] else "with its default settings."))
    p(f"- Client: Python {notes['client_python']}, mcp {notes['client_mcp']} (the same client for both servers).")
    return "\n".join(out)


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stephost", default=os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost")))
    parser.add_argument("--rfmcp-python", help="Python of a venv with rf-mcp installed (default: .venv-rfmcp, created when missing)")
    parser.add_argument("--starts", type=int, default=5, help="cold starts per server (default 5)")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per batch and server (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs per batch and server first (default 3)")
    parser.add_argument("--quick", action="store_true", help="2 starts, 5 runs, 1 warm-up")
    parser.add_argument("--rfmcp-env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for rf-mcp (e.g. ROBOTMCP_OUTPUT_MODE=inline); default: none, its defaults")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare JSON-RPC client pass")
    parser.add_argument("--json", help="also write the raw figures to this file")
    parser.add_argument("--markdown", help="also write the Markdown report to this file")
    opts = parser.parse_args()
    if opts.quick:
        opts.starts, opts.runs, opts.warmup = 2, 5, 1
    stephost_bin = str(Path(opts.stephost).resolve())
    if not os.access(stephost_bin, os.X_OK):
        sys.exit(f"no stephost binary at {stephost_bin}: build it with `cargo build --release` or pass --stephost")
    rfmcp_python = ensure_rfmcp_python(opts.rfmcp_python)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)

    work = Path(tempfile.mkdtemp(prefix="rf-bench-"))
    # Run a private copy: a `cargo build` finishing mid-run would otherwise swap the binary.
    shutil.copy2(stephost_bin, work / "stephost")
    run_bin = str(work / "stephost")
    validated = instrument_validation()
    stephost_env = dict(os.environ, STEPHOST_LOG="warn")
    stephost_env.pop("STEPHOST_CACHE_DIR", None)
    servers = [
        Server("stephost", run_bin, ["serve"], stephost_env, str(work), work / "stephost.stderr"),
        Server("rf-mcp", rfmcp_python, ["-m", "robotmcp.entry"],
               dict(os.environ, **dict(kv.split("=", 1) for kv in opts.rfmcp_env)), str(work), work / "rf-mcp.stderr"),
    ]
    notes = machine_notes(stephost_bin, rfmcp_python)
    notes["rfmcp_env"] = opts.rfmcp_env
    load_before, busy_before = os.getloadavg(), busy_processes()
    sampler = BusySampler()
    log(f"load average {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; build processes: {busy_before or 'none'}")
    try:
        # stephost's first start with an empty compile cache, for reference.
        fresh_cache = work / "empty-cache"
        fresh = Server("stephost", run_bin, ["serve"], dict(stephost_env, STEPHOST_CACHE_DIR=str(fresh_cache)),
                       str(work), work / "stephost.stderr")
        log("start: stephost with an empty compile cache")
        empty_cache = await cold_start(fresh)
        starts = await measure_starts(servers, opts.starts, log)
        times, server_ms, validation, sample = await measure_steps(servers, opts.runs, opts.warmup, log)
        if validated is None:
            log("note: this mcp client has no known output-schema check to time")
        raw = None if opts.no_bare else measure_raw(servers, opts.runs, opts.warmup, log)
        log("cross-checking return values and behaviours")
        checks, behaviours = await cross_check(servers)
        load_after, busy_after = os.getloadavg(), busy_processes()
        busy_share = sampler.close()
        if os.stat(stephost_bin).st_mtime != os.stat(run_bin).st_mtime:
            log(f"note: {stephost_bin} was rebuilt during the run; the figures are for the copy taken at the start "
                f"(built {notes['stephost_binary_mtime']})")
        logs = {s.name: summarize_log(s.log_path) for s in servers}
        text = report(opts, notes, load_before, load_after, busy_before, busy_after, busy_share, starts, empty_cache, times,
                      server_ms, validation, raw, sample, checks, behaviours, logs)
        print(text)
        if opts.markdown:
            Path(opts.markdown).write_text(text + "\n")
        if opts.json:
            Path(opts.json).write_text(json.dumps({
                "notes": notes, "load_before": load_before, "load_after": load_after,
                "compiler_samples": {"busy": busy_share[0], "total": busy_share[1]},
                "starts": starts, "empty_cache_start": empty_cache,
                "batches": {f"{name} / {b}": {"steps": len(BATCHES[b]), "sdk_seconds": times[(name, b)],
                                              "sdk_schema_check_seconds": validation[(name, b)],
                                              "server_total_time_ms": server_ms[(name, b)],
                                              "bare_seconds": raw[(name, b)] if raw else None,
                                              "wire_bytes": raw["wire_bytes"].get((name, b)) if raw else None}
                            for (name, b) in times},
                "return_values": checks, "behaviours": behaviours,
            }, indent=2, default=str))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
