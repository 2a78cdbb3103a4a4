"""Host-run RF libraries: what `Import Library` of a granted Python library costs (the
server's start) and what each keyword call through it costs, beside real Robot
Framework running the same library in-process and through its own Remote client
against the same server script.

    .venv/bin/python bench/rf_library_bench.py [--calls 200] [--runs 5]

Peers, same machine, same run, same library (a team library `Billing` written to a
temporary folder), same keyword:
- stephost: `stephost run` of a batch `Import Library Billing` + N x `Add Line` (the
  step times of its report: the plugin, XML-RPC over loopback, the Python call);
- RF in-process: `robot` with `Library Billing` and the same N calls (keyword times
  from output.xml);
- RF Remote: `robot` with `Library Remote` at the host's server script
  (`capabilities/rf_library/server.py`) started by hand, same N calls.
Prints a Markdown table; medians over the runs.
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
SCRIPT = ROOT / "host" / "runtime" / "src" / "capabilities" / "rf_library" / "server.py"
PYTHON = sys.executable

BILLING = '''
class Billing:
    def __init__(self):
        self.lines = []

    def add_line(self, item, amount: int):
        self.lines.append((item, amount))
        return len(self.lines)
'''


def stephost_run(folder, calls):
    config = folder / "c.toml"
    config.write_text(
        '[plugins.grants.rf]\nhttp = ["loopback:*"]\n\n[plugins.grants.rf.rf_libraries]\n'
        f'python = "{PYTHON}"\nlibraries = ["Billing"]\npythonpath = ["{folder}"]\n'
    )

    def kw(name, *args):
        return {"plugin": "rf", "verb": "run_keyword", "input": {"keyword": name, "args": list(args)}}

    batch = {"steps": [kw("Import Library", "Billing")] + [kw("Add Line", f"item {i}", str(i)) for i in range(calls)]}
    path = folder / "b.json"
    path.write_text(json.dumps(batch))
    started = time.perf_counter()
    out = subprocess.run([BIN, "--config", str(config), "run", str(path)], capture_output=True, text=True, timeout=300)
    wall = (time.perf_counter() - started) * 1000
    report = json.loads(out.stdout)
    assert report["status"] == "passed", out.stdout[-2000:]
    steps = report["steps"]
    return steps[0]["time_ms"], [s["time_ms"] for s in steps[1:]], wall


def robot_run(folder, calls, library_line):
    suite = folder / "s.robot"
    body = "\n".join(f"    Add Line    item {i}    {i}" for i in range(calls))
    suite.write_text(f"*** Settings ***\n{library_line}\n\n*** Test Cases ***\nT\n{body}\n")
    env = dict(os.environ, PYTHONPATH=str(folder))
    started = time.perf_counter()
    subprocess.run(
        [PYTHON, "-m", "robot", "--output", "o.xml", "--log", "NONE", "--report", "NONE", "--outputdir", folder, suite],
        capture_output=True, text=True, timeout=300, env=env, check=True,
    )
    wall = (time.perf_counter() - started) * 1000
    result = ExecutionResult(str(folder / "o.xml"))
    test = result.suite.tests[0]
    times = [kw.elapsed_time.total_seconds() * 1000 for kw in test.body]
    return times, wall


def start_server(folder):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(folder),
        "STEPHOST_RF_LIBRARY": json.dumps({"name": "Billing", "args": []}),
        "STEPHOST_RF_TOKEN": "bench",
    }
    started = time.perf_counter()
    proc = subprocess.Popen([PYTHON, "-c", SCRIPT.read_text()], env=env, stdout=subprocess.PIPE, text=True)
    ready = json.loads(proc.stdout.readline())
    return proc, ready["ready"]["port"], (time.perf_counter() - started) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    rows = {"stephost": [], "rf-inproc": [], "rf-remote": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "Billing.py").write_text(BILLING)
        for _ in range(opts.runs):
            start, times, wall = stephost_run(folder, opts.calls)
            rows["stephost"].append((start, statistics.median(times), sum(times), wall))
            times, wall = robot_run(folder, opts.calls, "Library    Billing")
            rows["rf-inproc"].append((None, statistics.median(times), sum(times), wall))
            proc, port, start = start_server(folder)
            try:
                times, wall = robot_run(folder, opts.calls, f"Library    Remote    http://127.0.0.1:{port}/bench")
            finally:
                proc.kill()
                proc.wait()
            rows["rf-remote"].append((start, statistics.median(times), sum(times), wall))

    def med(values):
        values = [v for v in values if v is not None]
        return f"{statistics.median(values):.2f}" if values else "-"

    print(f"{opts.calls} calls of `Add Line`, median of {opts.runs} runs\n")
    print("| peer | library start (ms) | per call, median (ms) | all calls (ms) | whole run, wall (ms) |")
    print("|---|---|---|---|---|")
    names = {
        "stephost": "stephost `run`: hosted library (server.py), via the rf plugin",
        "rf-inproc": "real RF 7 `robot`, library in-process",
        "rf-remote": "real RF 7 `robot`, `Library Remote` to the same server.py",
    }
    for key, label in names.items():
        r = rows[key]
        print(f"| {label} | {med([x[0] for x in r])} | {med([x[1] for x in r])} | {med([x[2] for x in r])} | {med([x[3] for x in r])} |")


if __name__ == "__main__":
    main()
