#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against
# `stephost serve --http`. Usage: scripts/conformance.sh [extra conformance args]
#
# Version 0.1.12 is pinned: 0.1.14 and later import `fs.globSync`, which needs
# Node.js 22, and these machines have Node.js 20.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${STEPHOST_BIN:-target/release/stephost}
[ -x "$bin" ] || cargo build --release
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$work" && npm install --silent --no-audit --no-fund @modelcontextprotocol/conformance@0.1.12 >/dev/null)
"$bin" serve --http 127.0.0.1:0 2>"$work/serve.log" &
server=$!
for _ in $(seq 50); do
  url=$(grep -o 'http://[^ ]*/mcp' "$work/serve.log" || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat "$work/serve.log"; exit 1; }
(cd "$work" && npx conformance server --url "$url" "$@")
