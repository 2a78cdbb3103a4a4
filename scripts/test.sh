#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what the tests need when
# it is missing, then runs formatting, lint, the Rust tests and the end-to-end
# tests. Usage: scripts/test.sh   (CI runs exactly this through .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Each stage line carries the time since the start, so a log shows where a run's time went.
say() { printf '\n==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

# --- build dependencies (C toolchain, xcap's -dev packages, wasm target) ----
scripts/deps.sh

# --- test dependencies -------------------------------------------------------
need_pkgs=()
have() { command -v "$1" >/dev/null 2>&1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3-venv)
# The browser plugin's tests drive real browsers: Chromium + chromedriver, Firefox.
[ -x /usr/bin/chromium ] || need_pkgs+=(chromium)
[ -x /usr/bin/chromedriver ] || need_pkgs+=(chromium-driver)
have firefox-esr || need_pkgs+=(firefox-esr)
# npm installs the MCP client tests' Node 22 and packages (tests/clients).
have npm || need_pkgs+=(npm)
# The desktop tests run real X clients under Xvfb, with and without openbox.
# zenity (GTK3 dialogs), mousepad (a GTK3 editor) and x11-apps (xcalc, Xt) are third-party
# apps; at-spi2-core + dbus-x11 give them an accessibility bus; python3-pyatspi checks it.
for pkg in xvfb xauth openbox xterm python3-tk x11-utils zenity mousepad x11-apps at-spi2-core dbus-x11 python3-pyatspi; do
  installed "$pkg" || need_pkgs+=("$pkg")
done
if ((${#need_pkgs[@]})); then
  say "installing Debian packages: ${need_pkgs[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# --- geckodriver (Firefox's WebDriver driver), from crates.io ----------------
if ! have geckodriver && [ ! -x "$HOME/.cargo/bin/geckodriver" ]; then
  say "installing geckodriver (cargo install geckodriver --locked)"
  cargo install geckodriver --locked --quiet
fi

# --- Python venv with the MCP test client ----------------------------------
venv=$root/.venv
if [ ! -x "$venv/bin/python" ]; then
  say "creating the Python venv for the end-to-end tests"
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import mcp, pytest, robot, robotremoteserver, RequestsLibrary, SeleniumLibrary, envoy, yaml' >/dev/null 2>&1; then
  say "installing the Python test dependencies (tests/requirements.txt)"
  "$venv/bin/pip" install -q --disable-pip-version-check -r tests/requirements.txt
fi

# --- MCP client tests: the Python SDK 2.x, the TypeScript SDK, Inspector, conformance
say "MCP client toolchain (scripts/clients.sh)"
scripts/clients.sh

# --- checks ------------------------------------------------------------------
say "cargo fmt --check"
cargo fmt --all --check

say "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --release -- -D warnings

# The layering the crates promise: the batch engine and the contract build
# without wasmtime (docs/architecture.md, "Layers").
say "layering: stephost-batch and stephost-contract are free of wasmtime"
for crate in stephost-batch stephost-contract; do
  if cargo tree --quiet -p "$crate" -e normal,build | grep -q wasmtime; then
    echo "$crate depends on wasmtime:" >&2
    cargo tree -p "$crate" -e normal,build -i wasmtime >&2 || true
    exit 1
  fi
done

say "cargo build --release"
cargo build --release

say "cargo test --release"
cargo test --release --workspace

# The plugins' own unit tests run natively, on the guest SDK's mock host.
say "plugins: fmt, clippy, unit tests"
cargo fmt --manifest-path plugins/Cargo.toml --all --check
cargo clippy --manifest-path plugins/Cargo.toml --workspace --all-targets -- -D warnings
cargo test --manifest-path plugins/Cargo.toml --workspace

# The fuzz targets plan against a snapshot of the built-in plugins' schemas.
say "fuzz catalog snapshot is current (scripts/fuzz_catalog.sh --check)"
STEPHOST_BIN=$root/target/release/stephost scripts/fuzz_catalog.sh --check

say "third-party web apps for the browser tests (scripts/webapps.sh)"
scripts/webapps.sh

# The fuzz targets' cold build (instrumented, so it shares nothing with the
# builds above) takes minutes of CPU while the end-to-end tests mostly wait on
# browsers, X apps and servers: it runs beside them at the lowest priority.
fuzz_build=
if [ "${STEPHOST_SKIP_FUZZ:-0}" != 1 ]; then
  say "building the fuzz targets in the background (scripts/fuzz.sh, FUZZ_BUILD_ONLY=1)"
  FUZZ_BUILD_ONLY=1 FUZZ_SANITIZER=${FUZZ_SANITIZER:-none} nice -n 19 scripts/fuzz.sh >/tmp/stephost-fuzz-build.log 2>&1 &
  fuzz_build=$!
fi
if ls tests/e2e/test_*.py >/dev/null 2>&1; then
  say "end-to-end tests (pytest)"
  STEPHOST_BIN=$root/target/release/stephost "$venv/bin/python" -m pytest -q tests/e2e
fi
# The load test at CI size: concurrent MCP clients of several tenants plus an
# attacker tenant; it exits non-zero on any lost or mixed-up result.
say "load test (bench/load_test.py --small)"
STEPHOST_BIN=$root/target/release/stephost "$venv/bin/python" bench/load_test.py --small
# Bounded fuzzing: every cargo-fuzz target, its saved regressions first. CI runs
# without AddressSanitizer (the host is safe Rust; ASan doubles a cold build that
# already takes most of the time) and for a few seconds per target; longer runs
# with ASan are in fuzz/README.md. STEPHOST_SKIP_FUZZ=1 leaves it out locally.
if [ "${STEPHOST_SKIP_FUZZ:-0}" != 1 ]; then
  if ! wait "$fuzz_build"; then
    echo "building the fuzz targets failed:" >&2
    tail -40 /tmp/stephost-fuzz-build.log >&2
    exit 1
  fi
  say "bounded fuzzing (scripts/fuzz.sh)"
  FUZZ_SANITIZER=${FUZZ_SANITIZER:-none} FUZZ_SECONDS=${FUZZ_SECONDS:-15} scripts/fuzz.sh
fi
say "all tests passed"
