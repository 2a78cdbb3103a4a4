#!/usr/bin/env bash
# Fetches the third-party web apps tests/e2e/test_web_apps.py drives, at pinned
# versions, into .cache/webapps/ (gitignored): npm tarballs (TodoMVC's examples,
# Shoelace, Quill, flatpickr, SortableJS, Infinite Scroll), Debian packages
# unpacked without installing (the Python 3.11 Sphinx docs, jQuery UI's demos and
# the script packages they link to) and a venv with PyPI's datasette and httpbin.
# Two more venvs hold the PyPI apps of tests/e2e/test_web_apps_pypi.py (issue 40).
# a11y/ holds the accessible-name test material (WPT accname cases, html-aam roles).
# Idempotent: each part is skipped once its marker exists.
# Usage: scripts/webapps.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cache=$PWD/.cache/webapps
mkdir -p "$cache"
cd "$cache"

# --- npm: the package tarballs, unpacked to npm/NAME/package/ ----------------------
npm_pkgs=(todomvc@0.1.1 @shoelace-style/shoelace@2.20.1 quill@2.0.3 flatpickr@4.6.13 sortablejs@1.15.7 infinite-scroll@5.0.0)
if [ ! -e npm/.done ]; then
  rm -rf npm && mkdir -p npm/tgz
  (cd npm/tgz && npm pack --silent "${npm_pkgs[@]}" >/dev/null)
  for spec in "${npm_pkgs[@]}"; do
    name=${spec%@*}
    tgz=npm/tgz/$(echo "${name#@}" | tr / -)-${spec##*@}.tgz
    mkdir -p "npm/$name"
    tar xzf "$tgz" -C "npm/$name"
  done
  rm -rf npm/tgz
  touch npm/.done
fi

# --- Debian: unpacked into deb/ as if it were / (the demos link /usr/share/...) ----
deb_pkgs=(python3.11-doc libjs-jquery libjs-underscore libjs-jquery-ui libjs-jquery-ui-docs libjs-jquery-mousewheel node-requirejs)
if [ ! -e deb/.done ]; then
  rm -rf deb && mkdir -p deb/pkgs
  # apt-get download takes the candidate version: the release pins it (Debian 12),
  # up to its point updates, which replace older builds on the mirror.
  download() { (cd deb/pkgs && apt-get download -qq "${deb_pkgs[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true); }
  download
  if [ "$(ls deb/pkgs | wc -l)" -ne ${#deb_pkgs[@]} ]; then
    # No package lists yet (a fresh machine): fetch them once and try again.
    if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
    $SUDO apt-get update -qq
    rm -f deb/pkgs/*.deb
    download
  fi
  [ "$(ls deb/pkgs | wc -l)" -eq ${#deb_pkgs[@]} ] || { echo "apt-get download failed: ${deb_pkgs[*]}" >&2; exit 1; }
  for pkg in deb/pkgs/*.deb; do dpkg-deb -x "$pkg" deb; done
  rm -rf deb/pkgs
  # jQuery UI's demos load /usr/share/nodejs/require.js; node-requirejs ships it one folder down.
  ln -sf requirejs/require.js deb/usr/share/nodejs/require.js
  touch deb/.done
fi

# --- PyPI: datasette and httpbin in a venv of their own (Flask, asgi servers) -----
if [ ! -e venv/.done ]; then
  rm -rf venv
  python3 -m venv venv
  venv/bin/pip install -q --disable-pip-version-check datasette==0.65.1 httpbin==0.10.2
  touch venv/.done
fi

# --- PyPI (issue 40): Django's admin, Shiny, Dash and MkDocs Material in a venv of
# their own, JupyterLab (+ ipykernel) in another (Dash ships a JupyterLab extension that
# makes JupyterLab open on a "Build Recommended" dialog). All wheels. ---------------
pypi_pkgs=(django==5.2.20 shiny==1.8.0 dash==4.4.1 mkdocs==1.6.1 mkdocs-material==9.8.2)
jupyter_pkgs=(jupyterlab==4.6.6 ipykernel==7.4.0)
for part in pypi jupyter; do
  if [ ! -e $part/.done ]; then
    rm -rf $part
    python3 -m venv $part
    pkgs=${part}_pkgs[@]
    $part/bin/pip install -q --disable-pip-version-check --only-binary=:all: "${!pkgs}"
    touch $part/.done
  fi
done

# --- npm (issue 40): accessible-name test material in a11y/: the web-platform-tests
# accname cases as npm `accname` ships them (dist/testing/wpt_testdata.js) and
# html-aam's element-to-role table as npm `aria-query` has it (elementRoles), each
# written out as JSON for tests/e2e/test_browser_accname.py. ------------------------
a11y_pkgs=(accname@1.1.0 aria-query@5.3.2)
if [ ! -e a11y/.done ]; then
  rm -rf a11y && mkdir -p a11y/tgz
  (cd a11y/tgz && npm pack --silent "${a11y_pkgs[@]}" >/dev/null)
  for spec in "${a11y_pkgs[@]}"; do
    name=${spec%@*}
    mkdir -p "a11y/$name"
    tar xzf "a11y/tgz/$name-${spec##*@}.tgz" -C "a11y/$name"
  done
  rm -rf a11y/tgz
  (cd a11y && node -e '
    const fs = require("fs");
    const wpt = require("./accname/package/dist/testing/wpt_testdata.js").WPT_TEST_CASES;
    fs.writeFileSync("accname-wpt.json", JSON.stringify(wpt, null, 1));
    const roles = [];
    for (const [element, set] of require("./aria-query/package").elementRoles.entries()) {
      roles.push({ element, roles: [...set] });
    }
    fs.writeFileSync("html-aam-roles.json", JSON.stringify(roles, null, 1));
  ')
  touch a11y/.done
fi
