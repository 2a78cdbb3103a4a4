#!/bin/sh
# Builds {{name}}.wasm from app.py and verbs.py with the componentize-py that
# requirements.txt pins, installed into .venv on first use.
set -eu
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
# componentize-py bundles the modules the app imports from its own folder and
# from the venv named here, and nothing else installed on this machine.
VIRTUAL_ENV="$PWD/.venv" exec .venv/bin/componentize-py -d wit -w plugin componentize app -o {{name}}.wasm
