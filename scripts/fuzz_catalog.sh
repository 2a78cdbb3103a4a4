#!/usr/bin/env bash
# Writes fuzz/catalog.json, the fuzz targets' snapshot of the built-in plugins'
# descriptions (names, verbs, input and output schemas), from a built stephost
# binary, so the fuzz crate builds without the WebAssembly runtime.
#
#   scripts/fuzz_catalog.sh            # regenerate fuzz/catalog.json
#   scripts/fuzz_catalog.sh --check    # exit 1 if fuzz/catalog.json is out of date
#
# Environment:
#   STEPHOST_BIN   the stephost binary to ask (default: target/release/stephost)
#
# The snapshot is `stephost plugins --json` without the fields that change with
# every build (`source`, `sha256`, `contract`), pretty-printed with sorted keys.
# The binary runs with no configuration, so only the built-in plugins are listed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
default_bin=$root/target/release/stephost
bin=${STEPHOST_BIN:-$default_bin}
out=$root/fuzz/catalog.json
regenerate=scripts/fuzz_catalog.sh
if [[ "$bin" != "$default_bin" ]]; then
  regenerate="STEPHOST_BIN=$bin $regenerate"
fi

check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  *) echo "usage: scripts/fuzz_catalog.sh [--check]" >&2; exit 2 ;;
esac

if [[ ! -x "$bin" ]]; then
  echo "fuzz_catalog: no stephost binary at $bin; build it (cargo build --release) or set STEPHOST_BIN" >&2
  exit 2
fi

listing=$(mktemp)
snapshot=$(mktemp)
trap 'rm -f "$listing" "$snapshot"' EXIT
# No config file (STEPHOST_CONFIG) and no overrides: the built-in plugins only,
# as a default host loads them.
if ! env -u STEPHOST_CONFIG -u STEPHOST_BROWSER "$bin" plugins --json >"$listing"; then
  echo "fuzz_catalog: \`$bin plugins --json\` failed" >&2
  exit 2
fi

python3 - "$listing" "$snapshot" <<'PY'
import json
import sys

# Fields that differ from build to build; the fuzz fixture fills them in itself.
PER_BUILD = ("source", "sha256", "contract")

with open(sys.argv[1], encoding="utf-8") as f:
    plugins = json.load(f)
if not isinstance(plugins, list) or not all(isinstance(p, dict) for p in plugins):
    sys.exit("fuzz_catalog: `plugins --json` did not print a JSON array of plugins")
for plugin in plugins:
    for field in PER_BUILD:
        plugin.pop(field, None)
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(plugins, f, indent=2, sort_keys=True, ensure_ascii=False)
    f.write("\n")
PY

if $check; then
  if [[ ! -f "$out" ]]; then
    echo "fuzz_catalog: fuzz/catalog.json is missing; run $regenerate" >&2
    exit 1
  fi
  if ! cmp -s "$snapshot" "$out"; then
    echo "fuzz_catalog: fuzz/catalog.json differs from what $bin describes:" >&2
    diff -u --label fuzz/catalog.json --label "$bin plugins --json" "$out" "$snapshot" | head -40 >&2 || true
    echo "fuzz_catalog: regenerate it with $regenerate and commit the result" >&2
    exit 1
  fi
  echo "fuzz_catalog: fuzz/catalog.json is up to date" >&2
  exit 0
fi

if [[ -f "$out" ]] && cmp -s "$snapshot" "$out"; then
  echo "fuzz_catalog: fuzz/catalog.json unchanged" >&2
else
  cp "$snapshot" "$out"
  echo "fuzz_catalog: wrote fuzz/catalog.json" >&2
fi
