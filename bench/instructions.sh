#!/usr/bin/env bash
# Instruction counts (valgrind callgrind) of the host's hot paths, for comparing two
# builds on a machine too busy for wall-clock timings. Prints, per binary, the
# instructions of a step in a batch, a chained step, one MCP call over stdio and one
# stateless call over HTTP.
#   bench/instructions.sh BIN [BIN...]
# Needs valgrind and the e2e venv (.venv, for httpx). See BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export STEPHOST_CACHE_DIR=$work/cache STEPHOST_LOG=warn
# The pooling allocator reserves its slots up front; valgrind refuses a reservation
# the size of the default pool.
printf '[engine]\nmax_instances = 4\nmax_memory_mib = 64\n[limits]\nmemory_mib = 64\n' > "$work/vg.toml"
"$py" - "$work" <<'PY'
import json, sys
w = sys.argv[1]
obj = {"n": 0, "tags": ["a", "b"], "name": "bench"}
echo = [{"plugin": "testkit", "verb": "echo", "input": {"value": dict(obj, n=i)}} for i in range(1000)]
chained = echo[:1] + [{"plugin": "testkit", "verb": "echo", "input": {"value": "${STEP_%d}" % i}} for i in range(1, 1000)]
for name, steps in (("one", echo[:1]), ("echo", echo), ("chained", chained)):
    json.dump({"steps": steps}, open(f"{w}/{name}.json", "w"))
init = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "vg", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
calls = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "batch", "arguments": {"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": {"i": i, "s": "x" * 200}}}]}}} for i in range(1, 201)]
for name, lines in (("stdio0", init), ("stdio200", init + calls)):
    open(f"{w}/{name}.jsonl", "w").write("".join(json.dumps(l) + "\n" for l in lines))
PY
count() { grep -oE 'Collected : [0-9]+' "$1" | grep -oE '[0-9]+$'; }
for bin in "$@"; do
  "$bin" --config "$work/vg.toml" run -q "$work/one.json" >/dev/null  # fills the compile cache
  declare -A ir=()
  for f in one echo chained; do
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" --config "$work/vg.toml" run -q --compact "$work/$f.json" >/dev/null 2>"$work/err"
    ir[$f]=$(count "$work/err")
  done
  for f in stdio0 stdio200; do
    (cat "$work/$f.jsonl"; sleep 8) | valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" --config "$work/vg.toml" serve >/dev/null 2>"$work/err"
    ir[$f]=$(count "$work/err")
  done
  for n in 0 200; do
    ir[http$n]=$("$py" bench/instructions_http.py "$bin" "$n" "$work/vg.toml")
  done
  echo "$bin"
  echo "  step in a batch:      $(( (ir[echo] - ir[one]) / 999 ))"
  echo "  chained step:         $(( (ir[chained] - ir[one]) / 999 ))"
  echo "  MCP call over stdio:  $(( (ir[stdio200] - ir[stdio0]) / 200 ))"
  echo "  stateless HTTP call:  $(( (ir[http200] - ir[http0]) / 200 ))"
  unset ir
done
