"""Inline Python in the rf plugin: what an `Evaluate` costs when the plugin's own
evaluator answers it, when it goes to the CPython evaluator component, and in real
Robot Framework.

    .venv/bin/python bench/rf_python_bench.py [--calls 200] [--runs 5]

Peers, same machine, same run, the same N `Evaluate` calls:
- stephost `run`, an expression the plugin evaluates itself (`${i} * 2 + 1`);
- stephost `run`, one that needs Python (`math.ceil(${i} / 3)`: a module), evaluated
  by CPython compiled to a WebAssembly component;
- real RF 7 `robot`, both expressions (keyword times from output.xml).
The first `stephost run` of a fresh cache compiles the evaluator (reported apart, as
"cold"); later runs load it compiled. Prints a Markdown table; medians over the runs.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from robot.api import ExecutionResult

ROOT = Path(__file__).resolve().parents[1]
BIN = os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost"))
PYTHON = sys.executable
NATIVE = "${i} * 2 + 1"
CPYTHON = "math.ceil(${i} / 3)"


def stephost_run(folder, expression, calls, cache):
    steps = [
        {"plugin": "rf", "verb": "run_keyword", "input": {"keyword": "Evaluate", "args": [expression.replace("${i}", str(i))]}}
        for i in range(calls)
    ]
    path = folder / "b.json"
    path.write_text(json.dumps({"steps": steps}))
    env = dict(os.environ, STEPHOST_CACHE_DIR=str(cache))
    started = time.perf_counter()
    out = subprocess.run([BIN, "run", "-q", str(path)], capture_output=True, text=True, timeout=300, env=env)
    wall = (time.perf_counter() - started) * 1000
    report = json.loads(out.stdout)
    assert report["status"] == "passed", out.stdout[-2000:]
    return [s["time_ms"] for s in report["steps"]], wall


def robot_run(folder, expression, calls):
    suite = folder / "s.robot"
    body = "\n".join(f"    Evaluate    {expression.replace('${i}', str(i))}" for i in range(calls))
    suite.write_text(f"*** Test Cases ***\nT\n{body}\n")
    started = time.perf_counter()
    subprocess.run(
        [PYTHON, "-m", "robot", "--output", "o.xml", "--log", "NONE", "--report", "NONE", "--outputdir", folder, suite],
        capture_output=True, text=True, timeout=300, check=True,
    )
    wall = (time.perf_counter() - started) * 1000
    test = ExecutionResult(str(folder / "o.xml")).suite.tests[0]
    return [kw.elapsed_time.total_seconds() * 1000 for kw in test.body], wall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cache = folder / "cache"
        times, wall = stephost_run(folder, CPYTHON, args.calls, cache)
        rows["cold"] = (times[0], statistics.median(times[1:]), sum(times), wall)
        for _ in range(args.runs):
            for name, run in [
                ("stephost, plugin's evaluator", lambda: stephost_run(folder, NATIVE, args.calls, cache)),
                ("stephost, CPython component", lambda: stephost_run(folder, CPYTHON, args.calls, cache)),
                ("real RF 7, plugin's expression", lambda: robot_run(folder, NATIVE, args.calls)),
                ("real RF 7, Python expression", lambda: robot_run(folder, CPYTHON, args.calls)),
            ]:
                times, wall = run()
                rows.setdefault(name, []).append((times[0], statistics.median(times), sum(times), wall))
    print(f"| peer | first call | per call, median | {args.calls} calls | whole run, wall |")
    print("|---|---:|---:|---:|---:|")
    first, per, total, wall = rows.pop("cold")
    print(f"| stephost, CPython component, cold cache (compiles the evaluator) | {first:.1f} ms | {per:.3f} ms | {total:.1f} ms | {wall:.0f} ms |")
    for name, samples in rows.items():
        med = [statistics.median(s[k] for s in samples) for k in range(4)]
        print(f"| {name} | {med[0]:.2f} ms | {med[1]:.3f} ms | {med[2]:.1f} ms | {med[3]:.0f} ms |")


if __name__ == "__main__":
    main()
