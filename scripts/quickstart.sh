#!/usr/bin/env bash
# The main job on a fresh machine: install the build dependencies, build the host
# with its built-in plugins, and run a batch (examples/quickstart.json unless a
# file is given). Usage: scripts/quickstart.sh [BATCH.json]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
exec cargo run --release -- run "${1:-examples/quickstart.json}"
