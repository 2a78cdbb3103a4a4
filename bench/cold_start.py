"""A first start of `stephost serve` over stdio with an empty compile cache: when
`initialize`, the first `tools/list` and the first tool call are answered, counted
from the spawn. Each run gets a new cache directory, so every built-in component is
compiled again.

    .venv/bin/python bench/cold_start.py [--runs 3] [--stephost BIN [BIN ...]]

Several binaries are measured in turn, run by run (say, before and after a change).
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

ROOT = Path(__file__).resolve().parents[1]


def one_start(binary):
    with tempfile.TemporaryDirectory(prefix="cold-start-") as cache:
        env = dict(os.environ, STEPHOST_CACHE_DIR=cache, STEPHOST_LOG="warn")
        started = time.perf_counter()
        proc = subprocess.Popen([binary, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)

        def request(rid, method, params):
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
                             + b"\n")
            proc.stdin.flush()
            while True:
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"{binary} closed stdout during {method}")
                message = json.loads(line)
                if message.get("id") == rid:
                    return message

        try:
            request(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "cold_start", "version": "0"}})
            t_init = time.perf_counter()
            proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            proc.stdin.flush()
            tools = request(2, "tools/list", {})["result"]["tools"]
            t_list = time.perf_counter()
            answer = request(3, "tools/call", {"name": "execute_step", "arguments": {
                "session_id": "cold", "keyword": "Set Variable", "arguments": ["ready"]}})
            t_call = time.perf_counter()
            if answer["result"]["structuredContent"]["status"] != "PASS":
                raise RuntimeError(f"first call did not pass: {answer}")
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)
    return {"initialize": t_init - started, "tools/list": t_list - started, "first call": t_call - started,
            "tools": len(tools)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stephost", nargs="+", default=[str(ROOT / "target" / "release" / "stephost")])
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    results = {b: [] for b in opts.stephost}
    for run in range(opts.runs):
        for binary in opts.stephost:
            results[binary].append(one_start(binary))
            print(f"run {run + 1}: {binary}: " + ", ".join(
                f"{k} {v * 1e3:.0f} ms" for k, v in results[binary][-1].items() if k != "tools"), file=sys.stderr)
    print("| binary | `initialize` | first `tools/list` | first call |")
    print("|---|---:|---:|---:|")
    for binary, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) * 1e3 for k in ("initialize", "tools/list", "first call")}
        print(f"| {binary} | {med['initialize']:.0f} ms | {med['tools/list']:.0f} ms | {med['first call']:.0f} ms |")


if __name__ == "__main__":
    main()
