"""MCP round-trip benchmark: one 100-step `batch` call vs 100 single `testkit_echo`
calls, over stdio, from the Python MCP SDK.

    .venv/bin/python bench/mcp_roundtrip.py [--steps 100] [--repeat 20]

Prints medians and p90 of each, and the per-step cost.
"""

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[1]
BIN = os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost"))


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(steps, repeat):
    params = StdioServerParameters(command=BIN, args=["serve", "--tools", "testkit"], env=dict(os.environ, STEPHOST_LOG="error"))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            batch = {"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": i}} for i in range(steps)]}
            # Warm up: instantiate the plugin, fill caches.
            await session.call_tool("batch", batch)
            await session.call_tool("testkit_echo", {"value": 0})
            batched, singles = [], []
            for _ in range(repeat):
                started = time.perf_counter()
                result = await session.call_tool("batch", batch)
                batched.append(time.perf_counter() - started)
                assert result.structuredContent["status"] == "passed"
                started = time.perf_counter()
                for i in range(steps):
                    result = await session.call_tool("testkit_echo", {"value": i})
                    assert result.structuredContent["value"] == i
                singles.append(time.perf_counter() - started)
    print(f"{steps} echo steps over stdio, {repeat} runs each (ms)")
    print(f"{'shape':<28}{'median':>10}{'p90':>10}{'per step':>12}")
    for name, values in (("one batch call", batched), (f"{steps} single calls", singles)):
        med = statistics.median(values) * 1e3
        print(f"{name:<28}{med:>10.2f}{pct(values, 0.9) * 1e3:>10.2f}{med / steps:>12.3f}")
    print(f"speed-up: {statistics.median(singles) / statistics.median(batched):.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.repeat))
