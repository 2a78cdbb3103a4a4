"""Desktop benchmarks: host overhead of a 20-step run_macro, and screenshot capture + encode.

Usage (from the repository root, after `cargo build --release`):
    .venv/bin/python bench/desktop_bench.py [--runs 15]

Starts its own Xvfb (1280x800x24, no window manager) with the Tk test window, and
`target/release/stephost serve` over stdio with the Python MCP SDK, as the tests do.

1. run_macro with 20 `move` steps (no sleeps; each step is one XTEST motion plus a
   round trip to the X server). For each run: the client's wall time for the call,
   the engine's batch time, and the sum of the steps' own times (plugin call plus
   host X work). Host overhead = wall - sum of steps: MCP transport, mapping the
   macro onto the batch, validating all 20 steps, dispatch, report and rendering.
   The same 20 moves as 20 separate tool calls are timed for comparison.
2. screenshot of the whole 1280x800 screen as PNG: the step time, and the host's own
   capture and encode times from its debug log (`screen capture` lines).
"""

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from test_desktop import Desktop  # noqa: E402

BIN = os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost"))


def stats(values):
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
    return f"median {statistics.median(values):.2f}, min {values[0]:.2f}, p90 {p90:.2f}"


async def main(runs):
    with Desktop("bare") as desktop, tempfile.TemporaryFile("w+") as log:
        env = dict(os.environ, DISPLAY=desktop.display, STEPHOST_LOG="warn,stephost::capabilities::desktop=debug")
        env.setdefault("STEPHOST_CACHE_DIR", str(Path(tempfile.gettempdir()) / "stephost-e2e-cache"))
        params = StdioServerParameters(command=BIN, args=["serve"], env=env)
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                sid = {"session_id": "bench"}
                steps = [{"tool": "move", "params": {"x": 10 + i, "y": 700}} for i in range(20)]
                await session.call_tool("run_macro", {"steps": steps, **sid})  # warm: instance, X connection
                wall, engine, in_steps, overhead = [], [], [], []
                for _ in range(runs):
                    started = time.perf_counter()
                    r = await session.call_tool("run_macro", {"steps": steps, **sid})
                    ms = (time.perf_counter() - started) * 1e3
                    report = r.structuredContent
                    assert report["status"] == "passed", report
                    step_sum = sum(s["time_ms"] for s in report["results"])
                    wall.append(ms)
                    engine.append(report["time_ms"])
                    in_steps.append(step_sum)
                    overhead.append(ms - step_sum)
                one = []
                for _ in range(runs):
                    started = time.perf_counter()
                    r = await session.call_tool("run_macro", {"steps": steps[:1], **sid})
                    one.append((time.perf_counter() - started) * 1e3)
                separate = []
                for _ in range(max(3, runs // 3)):
                    started = time.perf_counter()
                    for s in steps:
                        await session.call_tool("move", {**s["params"], **sid})
                    separate.append((time.perf_counter() - started) * 1e3)

                shots = []
                for _ in range(runs):
                    r = await session.call_tool("screenshot", sid)
                    assert r.structuredContent["status"] == "passed"
                    shots.append(r.structuredContent["time_ms"])
        log.seek(0)
        capture, encode, raw_capture, sizes = [], [], [], []
        for line in log:
            if "screen capture" not in line or "width=1280" not in line:
                continue
            c = float(re.search(r"capture_ms=([\d.]+)", line).group(1))
            if "png=true" in line:
                capture.append(c)
                encode.append(float(re.search(r"encode_ms=([\d.]+)", line).group(1)))
                sizes.append(int(re.search(r"bytes=(\d+)", line).group(1)))
            else:
                raw_capture.append(c)

    print(f"runs: {runs}")
    print("20-step run_macro of `move` (ms):")
    print(f"  client wall time          {stats(wall)}")
    print(f"  engine batch time         {stats(engine)}")
    print(f"  sum of the steps          {stats(in_steps)}")
    print(f"  host overhead (wall-sum)  {stats(overhead)}  -> per step {statistics.median(overhead) / 20:.3f}")
    print(f"  engine overhead (batch-sum) {stats([e - s for e, s in zip(engine, in_steps)])}")
    print(f"  1-step run_macro wall     {stats(one)}  -> marginal per extra step {(statistics.median(wall) - statistics.median(one)) / 19:.3f}")
    print(f"  same 20 moves as 20 calls {stats(separate)}")
    print("screenshot, whole 1280x800 screen as PNG (ms):")
    print(f"  step time                 {stats(shots)}")
    if capture:
        print(f"  host capture (xcap)       {stats(capture)}")
        print(f"  host PNG encode           {stats(encode)}  ({statistics.median(sizes) / 1024:.0f} KiB)")
    else:
        print("  (no `screen capture` debug lines: is STEPHOST_LOG honoured?)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    asyncio.run(main(parser.parse_args().runs))
