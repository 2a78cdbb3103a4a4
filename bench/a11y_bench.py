"""Accessibility benchmarks: press / set_text / ui_elements latency over AT-SPI, and
one do_steps call against the same steps as single tool calls.

Usage (from the repository root, after `cargo build --release`):
    .venv/bin/python bench/a11y_bench.py [--runs 21]

Starts its own Xvfb, a private D-Bus session bus (the accessibility bus is activated
from it) and two zenity dialogs (GTK3, from Debian): an entry dialog for set_text and
a checklist for press (toggling a row's check box, which leaves the dialog open).
`target/release/stephost serve` runs over stdio with the Python MCP SDK, as the tests
do. Step times are the engine's own (`time_ms` of the step: plugin call plus the
host's bus round trips); wall times are the client's.
"""

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from test_desktop_a11y import Session  # noqa: E402

BIN = os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost"))


def stats(values):
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
    return f"median {statistics.median(values):.2f} ms (min {values[0]:.2f}, p90 {p90:.2f})"


async def step_time(session, tool, args):
    r = await session.call_tool(tool, args)
    s = r.structuredContent
    assert s["status"] == "passed", s
    return s["time_ms"]


async def main(runs):
    with Session("bare") as desktop:
        entry = desktop.zenity("--entry", "--title", "Bench Entry", "--text", "Name:")
        checklist = desktop.zenity("--list", "--checklist", "--title", "Bench List", "--column", "Pick",
                                   "--column", "Item", "FALSE", "apples", "FALSE", "pears")
        env = dict(os.environ, **desktop.env())
        env.setdefault("STEPHOST_CACHE_DIR", "/tmp/stephost-e2e-cache")
        params = StdioServerParameters(command=BIN, args=["serve"], env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                sid = {"session_id": "bench"}
                # Wait for both trees; find the field and a toggle.
                field = toggle = None
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and not (field and toggle):
                    r = await session.call_tool("ui_elements", {"target": "Bench Entry", "interactive": True, **sid})
                    if r.structuredContent["status"] == "passed":
                        field = next((e for e in r.structuredContent["value"]["elements"] if e.get("editable")), None)
                    r = await session.call_tool("ui_elements", {"target": "Bench List", "interactive": True, **sid})
                    if r.structuredContent["status"] == "passed":
                        toggle = next((e for e in r.structuredContent["value"]["elements"]
                                       if any(a.lower() == "toggle" for a in e.get("actions", []))), None)
                    await asyncio.sleep(0.2)
                assert field and toggle, (field, toggle)
                tree, set_text, press = [], [], []
                for i in range(runs):
                    tree.append(await step_time(session, "ui_elements", {"target": "Bench Entry", **sid}))
                    set_text.append(await step_time(session, "set_text", {"path": field["path"], "text": f"run {i}", **sid}))
                    press.append(await step_time(session, "press", {"path": toggle["path"], "action": "toggle", **sid}))
                steps = [{"do": "set_text", "path": field["path"], "text": f"step {n}"} for n in range(4)]
                steps.append({"do": "press", "path": toggle["path"], "action": "toggle"})
                batch_wall, single_wall = [], []
                for _ in range(runs):
                    started = time.perf_counter()
                    r = await session.call_tool("do_steps", {"steps": steps, "look": False, **sid})
                    batch_wall.append((time.perf_counter() - started) * 1000)
                    assert r.structuredContent["status"] == "passed", r.structuredContent
                    started = time.perf_counter()
                    for step in steps:
                        args = {k: v for k, v in step.items() if k != "do"}
                        r = await session.call_tool(step["do"], {**args, **sid})
                        assert r.structuredContent["status"] == "passed", r.structuredContent
                    single_wall.append((time.perf_counter() - started) * 1000)
        entry.terminate()
        checklist.terminate()
        print(f"ui_elements of the entry dialog, step: {stats(tree)}")
        print(f"set_text by path, step:               {stats(set_text)}")
        print(f"press (toggle) by path, step:         {stats(press)}")
        print(f"5-step do_steps (look false), wall:   {stats(batch_wall)}")
        print(f"the same 5 steps as single calls:     {stats(single_wall)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    asyncio.run(main(parser.parse_args().runs))
