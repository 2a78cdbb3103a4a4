#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what the tests need when
# it is missing, then runs formatting, lint, the Rust tests and the end-to-end
# tests. Usage: scripts/test.sh   (CI runs exactly this through .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

say() { printf '\n==> %s\n' "$*" >&2; }

# --- system packages -------------------------------------------------------
need_pkgs=()
have() { command -v "$1" >/dev/null 2>&1; }
have pkg-config || need_pkgs+=(pkg-config)
have cc || need_pkgs+=(build-essential)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3-venv)
if ((${#need_pkgs[@]})); then
  say "installing Debian packages: ${need_pkgs[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# --- Rust toolchain and the wasm target ------------------------------------
# rustup does not install a toolchain file's targets when RUSTUP_AUTO_INSTALL=0.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  say "adding the wasm32-wasip2 target"
  rustup target add wasm32-wasip2
fi

# --- Python venv with the MCP test client ----------------------------------
venv=$root/.venv
if [ ! -x "$venv/bin/python" ]; then
  say "creating the Python venv for the end-to-end tests"
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import mcp, pytest' >/dev/null 2>&1; then
  say "installing the Python test client (mcp, pytest)"
  "$venv/bin/pip" install -q --disable-pip-version-check -r tests/requirements.txt
fi

# --- checks ------------------------------------------------------------------
say "cargo fmt --check"
cargo fmt --all --check

say "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --release -- -D warnings

say "cargo build --release"
cargo build --release

say "cargo test --release"
cargo test --release --workspace

if ls tests/e2e/test_*.py >/dev/null 2>&1; then
  say "end-to-end tests (pytest)"
  STEPHOST_BIN=$root/target/release/stephost "$venv/bin/python" -m pytest -q tests/e2e
fi
say "all tests passed"
