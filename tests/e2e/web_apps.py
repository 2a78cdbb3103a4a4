"""The third-party web apps scripts/webapps.sh fetches, served on loopback: shared by
tests/e2e/test_web_apps.py and bench/web_flows_bench.py, so the test and the
benchmark run the same apps the same way. Also the `browser_batch` entries both
write their flows with."""

import socket
import sqlite3
import subprocess
import threading
import time
import urllib.request
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "webapps"
GLUE = Path(__file__).parent / "webapps"

DOCS = "/usr/share/doc/python3.11/html"
JQUI = "/usr/share/doc/libjs-jquery-ui-docs/examples"
TODO = "/npm/todomvc/package/examples/vanillajs/index.html"


def fetched():
    """Whether scripts/webapps.sh has fetched every part."""
    return all((CACHE / part / ".done").exists() for part in ("npm", "deb", "venv"))


class Static(SimpleHTTPRequestHandler):
    """/npm/... from the unpacked npm packages, /glue/... from tests/e2e/webapps,
    everything else from the unpacked Debian packages as if they were / (jQuery UI's
    demos link /usr/share/javascript/...)."""

    def translate_path(self, path):
        for prefix, folder in (("/npm/", CACHE / "npm"), ("/glue/", GLUE)):
            if path.startswith(prefix):
                rest = super().translate_path(path[len(prefix) - 1 :])[len(self.directory) :]
                return str(folder) + rest
        return super().translate_path(path)

    def log_message(self, *args):
        pass


def static_site():
    """The static server, running; returns (server, base URL)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Static, directory=str(CACHE / "deb")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_server(program, args, probe):
    """Starts PROGRAM of the cache's venv with ARGS ({port} is a free port); returns
    (process, base URL) once the path `probe` answers."""
    port = free_port()
    proc = subprocess.Popen(
        [str(CACHE / "venv" / "bin" / program), *(a.format(port=port) for a in args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(base + probe, timeout=2).read()
            return proc, base
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"{program} did not start")
            time.sleep(0.1)


def httpbin_server():
    """httpbin (Flask's server), running; returns (process, base URL)."""
    return app_server(
        "python", ["-c", "from httpbin import app; app.run(host='127.0.0.1', port={port}, threaded=True)"], "/get"
    )


def garden_server(db):
    """Writes garden.db, a small SQLite database, at `db` and serves it with datasette;
    returns (process, base URL)."""
    with sqlite3.connect(db) as conn:
        conn.execute("create table plants (id integer primary key, name text, color text, height integer)")
        conn.executemany(
            "insert into plants (name, color, height) values (?, ?, ?)",
            [("Rose", "red", 60), ("Tulip", "red", 40), ("Daisy", "white", 30), ("Iris", "blue", 70), ("Poppy", "red", 50)],
        )
    return app_server("datasette", ["serve", str(db), "--host", "127.0.0.1", "--port", "{port}"], "/-/versions.json")


def ref_on_line(tree, *words):
    """The ref on the first line of a read_page tree that holds every one of `words`."""
    line = next(line for line in tree.splitlines() if all(w in line for w in words))
    return "ref_" + line.split("[ref_")[1].split("]")[0]


def click(ref):
    return {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": ref}}


def typing(text):
    return {"name": "computer", "input": {"tabId": 1, "action": "type", "text": text}}


def key(text):
    return {"name": "computer", "input": {"tabId": 1, "action": "key", "text": text}}


# Entries that name their element by description (`find`), so a whole flow can be one
# browser_batch written before looking at the page.

def nav(url):
    return {"name": "navigate", "input": {"tabId": 1, "url": url}}


def press(find, action="left_click"):
    return {"name": "computer", "input": {"tabId": 1, "action": action, "find": find}}


def type_into(find, text):
    return {"name": "computer", "input": {"tabId": 1, "action": "type", "find": find, "text": text}}


def fill(find, value):
    return {"name": "form_input", "input": {"tabId": 1, "find": find, "value": value}}
