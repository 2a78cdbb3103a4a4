#!/usr/bin/env python3
"""What a plugin costs by language: the `plugin new` project of each of Rust,
JavaScript and Python, built with its pinned toolchain, measured side by side
in one run with the built-in testkit (Rust on the SDK) as the reference.

  - size: the component's bytes;
  - first compile: Cranelift compiling it from scratch (`plugin check`'s
    `first_compile_ms`, which never uses the cache), median of --runs;
  - cached load: mapping it from the compile cache (`cached_load_ms`);
  - host start: `stephost plugins --plugins FILE` wall time with a warm cache
    (what `serve` or `run` pays before the first step);
  - per call: a batch of --calls `count` steps through `stephost run`, the
    median of each step's own `time_ms` (plugin call plus the host's work
    around it; the instance is created by the first step and reused).

Usage: bench/plugin_langs.py [--runs 3] [--calls 200] [--work /tmp/stephost-langs]
Needs cargo (wasm32-wasip2), npm and python3; STEPHOST_BIN names the binary.
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
BIN = os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost"))

BUILDS = {
    "rust": ([["cargo", "build", "--quiet", "--release", "--target", "wasm32-wasip2"]], "target/wasm32-wasip2/release/{module}.wasm"),
    "js": ([["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], ["npm", "run", "build", "--silent"]], "{name}.wasm"),
    "python": ([["sh", "build.sh"]], "{name}.wasm"),
}


def sh(cmd, cwd=None, env=None):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{cmd} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc


def build(lang, work):
    name = f"bench-{lang}"
    project = work / name
    if not project.exists():
        sh([BIN, "plugin", "new", name, "--lang", lang, "--dir", str(project)])
    commands, wasm = BUILDS[lang]
    started = time.monotonic()
    for cmd in commands:
        sh(cmd, cwd=project)
    return name, project / wasm.format(name=name, module=name.replace("-", "_")), time.monotonic() - started


def measure(name, wasm, runs, calls):
    cache = Path(tempfile.mkdtemp(prefix="stephost-langs-cache-"))
    env = dict(os.environ, STEPHOST_CACHE_DIR=str(cache), STEPHOST_LOG="error")
    compiles, cached = [], []
    for _ in range(runs):
        report = json.loads(sh([BIN, "plugin", "check", "--json", str(wasm)], env=env).stdout)
        assert report["ok"], report["problems"]
        compiles.append(report["first_compile_ms"])
        cached.append(report["cached_load_ms"])
    starts = []
    for _ in range(runs):
        started = time.monotonic()
        sh([BIN, "plugins", "--plugins", str(wasm)], env=env)
        starts.append((time.monotonic() - started) * 1e3)
    batch = {"steps": [{"plugin": name, "verb": "count", "input": {}} for _ in range(calls)]}
    path = cache / "batch.json"
    path.write_text(json.dumps(batch))
    per_call = []
    for _ in range(runs):
        report = json.loads(sh([BIN, "run", "--quiet", "--compact", "--plugins", str(wasm), str(path)], env=env).stdout)
        assert report["status"] == "passed", report.get("errors")
        times = [s["time_ms"] for s in report["steps"]]
        per_call.append(statistics.median(times[1:]))
    return {
        "size_bytes": wasm.stat().st_size,
        "first_compile_ms": statistics.median(compiles),
        "cached_load_ms": statistics.median(cached),
        "host_start_ms": statistics.median(starts),
        "per_call_us": statistics.median(per_call) * 1e3,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "stephost-langs")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    testkit = ROOT / "plugins" / "target" / "wasm32-wasip2" / "release" / "testkit.wasm"
    for lang in ["rust", "js", "python"]:
        name, wasm, build_s = build(lang, args.work)
        rows.append((lang, build_s, measure(name, wasm, args.runs, args.calls)))
    print("| plugin | size | first compile | cached load | host start (warm cache) | per call in a batch | build |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for lang, build_s, m in rows:
        print(
            f"| {lang} (`plugin new`) | {m['size_bytes'] / 1e6:.2f} MB | {m['first_compile_ms']:,.0f} ms | "
            f"{m['cached_load_ms']:.1f} ms | {m['host_start_ms']:,.0f} ms | {m['per_call_us']:.1f} µs | {build_s:.0f} s |"
        )
    if testkit.is_file():
        env = dict(os.environ, STEPHOST_LOG="error")
        report = json.loads(subprocess.run([BIN, "plugin", "check", "--json", str(testkit)], env=env, capture_output=True, text=True).stdout)
        print(f"| testkit (built in, reference) | {report['size_bytes'] / 1e6:.2f} MB | {report['first_compile_ms']:,.0f} ms | {report['cached_load_ms']:.1f} ms | | | |")


if __name__ == "__main__":
    main()
