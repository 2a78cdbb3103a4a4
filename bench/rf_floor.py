"""What one MCP call costs before a server does anything, beside what it costs in all.

Companion of bench/rf_bench.py (which interleaves the two servers, so every call finds
a server idle): the same binary, client and keyword, but 40 calls back to back, and
then the bare client's `execute_step` after 5, 50 and 200 ms of idling.

    .venv/bin/python bench/rf_floor.py                # stephost and rf-mcp
    .venv/bin/python bench/rf_floor.py --only stephost

Prints medians in ms: the SDK's `ping`, `execute_step` and the 200-step batch, the same
through the bare JSON-RPC client with the reply's size, and for stephost the idle
series with the server's own `total_time_ms`.
"""

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "rf"))
import rf_bench as rb  # noqa: E402
from stdio_mcp import StdioClient  # noqa: E402

CALLS = 40
WARMUP = 3


def median_ms(fn):
    times = []
    for _ in range(CALLS + WARMUP):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times[WARMUP:]) * 1e3


async def sdk(server):
    out = {}
    async with server.session() as client:
        await client.initialize()
        await server.setup(client, "floor")
        for name, batch in (("ping", None), ("execute_step", rb.SINGLE), ("200 steps", "200 steps")):
            times = []
            for _ in range(CALLS + WARMUP):
                started = time.perf_counter()
                if batch is None:
                    await client.send_ping()
                else:
                    await client.call_tool(*rb.call_args(batch, "floor", rb.BATCHES[batch]))
                times.append(time.perf_counter() - started)
            out[name] = statistics.median(times[WARMUP:]) * 1e3
    return out


def bare(server):
    client = StdioClient([server.command, *server.args], env=server.env, cwd=server.cwd, name="rf_floor")
    try:
        if server.name == "rf-mcp":
            client.call_tool("manage_session", {"action": "init", "session_id": "floor",
                                                "libraries": ["BuiltIn", "String", "Collections"]})
        out = {"ping": median_ms(lambda: client.request("ping", {}))}
        for name, batch in (("execute_step", rb.SINGLE), ("200 steps", "200 steps")):
            out[name] = median_ms(lambda: client.call_tool(*rb.call_args(batch, "floor", rb.BATCHES[batch])))
            out[f"{name} reply bytes"] = client.last_bytes
        if server.name == "stephost":
            tool, args = rb.call_args(rb.SINGLE, "floor", rb.BATCHES[rb.SINGLE])
            for gap in (0.005, 0.05, 0.2):
                times, served = [], []
                for _ in range(CALLS):
                    time.sleep(gap)
                    started = time.perf_counter()
                    _, reply = client.call_tool(tool, args)
                    times.append(time.perf_counter() - started)
                    served.append(reply.get("total_time_ms", 0.0))
                idle = f"after {gap * 1e3:.0f} ms idle"
                out[f"execute_step {idle}"] = statistics.median(times) * 1e3
                out[f"  its server time {idle}"] = statistics.median(served)
    finally:
        client.close()
    return out


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stephost", default=os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost")))
    parser.add_argument("--rfmcp-python", help="Python of a venv with rf-mcp installed (default: .venv-rfmcp)")
    parser.add_argument("--only", choices=["stephost", "rf-mcp"])
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rf-floor-"))
    servers = [rb.Server("stephost", str(Path(opts.stephost).resolve()), ["serve"],
                         dict(os.environ, STEPHOST_LOG="warn"), str(work), work / "stephost.stderr")]
    if opts.only != "stephost":
        python = rb.ensure_rfmcp_python(opts.rfmcp_python)
        servers.append(rb.Server("rf-mcp", python, ["-m", "robotmcp.entry"], dict(os.environ), str(work),
                                 work / "rf-mcp.stderr"))
    for server in servers:
        if opts.only and server.name != opts.only:
            continue
        for client, figures in (("SDK", await sdk(server)), ("bare", bare(server))):
            for name, value in figures.items():
                unit = "B" if name.endswith("bytes") else "ms"
                print(f"{server.name:9} {client:5} {name:36} {value:10.3f} {unit}" if unit == "ms"
                      else f"{server.name:9} {client:5} {name:36} {value:10.0f} {unit}")


if __name__ == "__main__":
    asyncio.run(main())
