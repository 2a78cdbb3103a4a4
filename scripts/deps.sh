#!/usr/bin/env bash
# Installs what building stephost needs on a fresh Debian machine, when missing:
# a C toolchain, the -dev packages xcap (screen capture) links against, and the
# wasm32-wasip2 Rust target the plugins build for. Safe to run again: it only
# installs what is missing. Sourced by scripts/quickstart.sh and scripts/test.sh.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }

build_pkgs=()
have cc || build_pkgs+=(build-essential)
for pkg in pkg-config libwayland-dev libpipewire-0.3-dev libclang-dev libgbm-dev libxcb1-dev libegl-dev; do
  installed "$pkg" || build_pkgs+=("$pkg")
done
if ((${#build_pkgs[@]})); then
  printf '\n==> installing build packages: %s\n' "${build_pkgs[*]}" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${build_pkgs[@]}" >/dev/null
fi

# rustup does not install a toolchain file's targets when RUSTUP_AUTO_INSTALL=0.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  printf '\n==> adding the wasm32-wasip2 target\n' >&2
  rustup target add wasm32-wasip2
fi

# The Python evaluator (host/runtime/python) is CPython compiled to a component by
# componentize-py, with Robot Framework beside it. Both come from PyPI into
# .cache/evaluator, reinstalled when the pinned versions change; host/runtime/build.rs
# reads them from there (or from STEPHOST_COMPONENTIZE_PY and STEPHOST_EVALUATOR_SITE).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
evaluator=$root/.cache/evaluator
reqs=$root/host/runtime/python
want=$(cat "$reqs/build-requirements.txt" "$reqs/requirements.txt" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$evaluator/stamp" 2>/dev/null)" != "$want" ]; then
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    printf '\n==> installing python3-venv\n' >&2
    if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
  fi
  printf '\n==> installing componentize-py and Robot Framework for the Python evaluator\n' >&2
  rm -rf "$evaluator"
  python3 -m venv "$evaluator/venv"
  "$evaluator/venv/bin/pip" install -q --disable-pip-version-check -r "$reqs/build-requirements.txt"
  "$evaluator/venv/bin/pip" install -q --disable-pip-version-check --no-compile \
    --target "$evaluator/site" -r "$reqs/requirements.txt"
  printf '%s\n' "$want" >"$evaluator/stamp"
fi
