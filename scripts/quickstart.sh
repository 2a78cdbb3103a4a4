#!/usr/bin/env bash
# The main job on a fresh machine: install the build dependencies and Chromium,
# build the host with its built-in plugins, and run a batch
# (examples/quickstart.json, Robot Framework keywords and a browser flow on the
# sign-up page bundled in it, unless a file is given). Usage: scripts/quickstart.sh [BATCH.json]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
# The quickstart batch drives a real browser: Chromium and its WebDriver driver.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  printf '\n==> installing chromium chromium-driver\n' >&2
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
exec cargo run --release -- run "${1:-examples/quickstart.json}"
