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


# --- Issue 40: apps from PyPI, in a venv of their own (scripts/webapps.sh's "pypi"
# part): Django's admin, JupyterLab, Shiny, Dash and an MkDocs Material site. Each is
# made at test time in a folder the caller gives, so its end state (a SQLite file, a
# notebook, a log the app writes) can be read there.

PYPI = CACHE / "pypi"
JUPYTER = CACHE / "jupyter"  # JupyterLab's venv (Dash's JupyterLab extension stays out of it)


def pypi_fetched():
    """Whether scripts/webapps.sh has installed the PyPI apps' venvs."""
    return (PYPI / ".done").exists() and (JUPYTER / ".done").exists()


def pypi_server(args, probe, cwd, env=None, timeout=60, log=None, venv=PYPI):
    """Starts ARGS (the first one a program of `venv`; {port} is a free port) in CWD;
    returns (process, base URL) once the path `probe` answers. The process's output
    goes to `log` (a path) when given."""
    port = free_port()
    out = open(log, "wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(
        [str(venv / "bin" / args[0]), *(a.format(port=port) for a in args[1:])],
        cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(base + probe, timeout=5).read()
            return proc, base
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop(proc)
                raise RuntimeError(f"{args[0]} did not start" + (f" (see {log})" if log else ""))
            time.sleep(0.1)


def stop(proc):
    """Ends a server pypi_server started and whatever it started (its own process group)."""
    import os
    import signal

    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def pypi_env(home):
    """The environment the PyPI apps run in: HOME and Jupyter's folders in `home`, so
    nothing is read from or written to the user's."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTHON", "DJANGO"))}
    env.update(
        HOME=str(home), JUPYTER_CONFIG_DIR=str(home / "jupyter-config"), JUPYTER_DATA_DIR=str(home / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(home / "jupyter-runtime"), IPYTHONDIR=str(home / "ipython"), PYTHONUNBUFFERED="1",
        NO_MKDOCS_2_WARNING="1",
    )
    return env


DJANGO_MODELS = '''from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=100)

    def __str__(self):
        return self.name


class Book(models.Model):
    title = models.CharField(max_length=200)
    author = models.ForeignKey(Author, on_delete=models.CASCADE)
    published = models.DateField("publication date")
    in_print = models.BooleanField("in print", default=False)

    def __str__(self):
        return self.title
'''

DJANGO_ADMIN = '''from django.contrib import admin

from .models import Author, Book

admin.site.register(Author)
admin.site.register(Book)
'''

DJANGO_USER, DJANGO_PASSWORD = "admin", "correct-horse-battery"
DJANGO_AUTHORS = ["Ursula K. Le Guin", "Octavia E. Butler", "Terry Pratchett"]


def django_site(root):
    """A Django project made in ROOT: `startproject bookshop`, an app `library` whose Book
    has a `title` (the form's `<input name="title">`), a ForeignKey select, a date and a
    boolean, migrated, a superuser and three authors; served by runserver. Returns
    (process, base URL, path of the SQLite database)."""
    env = pypi_env(root)
    env["DJANGO_SUPERUSER_PASSWORD"] = DJANGO_PASSWORD
    python = str(PYPI / "bin" / "python")
    run = partial(subprocess.run, check=True, cwd=root, env=env, stdout=subprocess.DEVNULL)
    run([str(PYPI / "bin" / "django-admin"), "startproject", "bookshop", str(root)])
    run([python, "manage.py", "startapp", "library"])
    (root / "library" / "models.py").write_text(DJANGO_MODELS)
    (root / "library" / "admin.py").write_text(DJANGO_ADMIN)
    settings = root / "bookshop" / "settings.py"
    settings.write_text(settings.read_text() + '\nINSTALLED_APPS += ["library"]\n')
    run([python, "manage.py", "makemigrations", "library"])
    run([python, "manage.py", "migrate"])
    run([python, "manage.py", "createsuperuser", "--noinput", "--username", DJANGO_USER, "--email", "admin@example.com"])
    db = root / "db.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.executemany("insert into library_author (name) values (?)", [(n,) for n in DJANGO_AUTHORS])
    proc, base = pypi_server(
        ["python", "manage.py", "runserver", "--noreload", "127.0.0.1:{port}"], "/admin/login/", root, env,
        log=root / "runserver.log",
    )
    return proc, base, db


def jupyter_server(root, token):
    """JupyterLab on loopback, its files in ROOT/work (empty), with a token; returns
    (process, base URL, the files' folder)."""
    work = root / "work"
    work.mkdir()
    proc, base = pypi_server(
        ["jupyter-lab", "--no-browser", "--allow-root", "--ip=127.0.0.1", "--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}", "--ServerApp.port_retries=0"],
        "/api/status?token=" + token, root, pypi_env(root), log=root / "jupyter.log", venv=JUPYTER,
    )
    return proc, base, work


SHINY_APP = '''from pathlib import Path

from shiny import App, reactive, render, ui

LOG = Path(__file__).with_name("committed.log")

app_ui = ui.page_fluid(
    ui.h2("Tea order"),
    ui.input_slider("cups", "Number of cups", min=0, max=20, value=5),
    ui.input_text("name", "Your name", value=""),
    ui.output_text_verbatim("summary"),
)


def server(input, output, session):
    @render.text
    def summary():
        return f"{input.name() or 'Nobody'} orders {input.cups()} cups"

    @reactive.effect
    def _():
        with LOG.open("a") as f:
            f.write(f"cups={input.cups()} name={input.name()}\\n")


app = App(app_ui, server)
'''


def shiny_server(root):
    """A Shiny for Python app written in ROOT (a slider, a text input, an output; each
    value the server sees is appended to ROOT/committed.log); returns (process, base
    URL, log path)."""
    (root / "app.py").write_text(SHINY_APP)
    proc, base = pypi_server(
        ["shiny", "run", "--host", "127.0.0.1", "--port", "{port}", "app.py"], "/", root, pypi_env(root),
        log=root / "shiny.log",
    )
    return proc, base, root / "committed.log"


DASH_APP = '''import sys
from pathlib import Path

from dash import Dash, Input, Output, dcc, html

LOG = Path(__file__).with_name("committed.log")

app = Dash(__name__)
app.layout = html.Div([
    html.H2("Plant watering"),
    html.Label("Litres per week", htmlFor="litres"),
    dcc.Slider(id="litres", min=0, max=10, step=1, value=3),
    html.Label("Plant name", htmlFor="plant"),
    dcc.Input(id="plant", type="text", value="", placeholder="Plant name"),
    html.Div(id="summary"),
])


@app.callback(Output("summary", "children"), Input("litres", "value"), Input("plant", "value"))
def summary(litres, plant):
    with LOG.open("a") as f:
        f.write(f"litres={litres} plant={plant}\\n")
    return f"{plant or 'Nothing'} gets {litres} litres"


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(sys.argv[1]), debug=False)
'''


def dash_server(root):
    """A Dash app written in ROOT (a slider, a text input, an output; each callback's
    values are appended to ROOT/committed.log); returns (process, base URL, log path)."""
    (root / "app.py").write_text(DASH_APP)
    proc, base = pypi_server(["python", "app.py", "{port}"], "/", root, pypi_env(root), log=root / "dash.log")
    return proc, base, root / "committed.log"


MKDOCS_YML = """site_name: Garden Handbook
theme:
  name: material
plugins:
  - search
nav:
  - Home: index.md
  - Soil: soil.md
  - Watering: watering.md
  - Pruning: pruning.md
"""

MKDOCS_PAGES = {
    "index.md": "# Garden Handbook\n\nNotes on keeping a small garden alive.\n",
    "soil.md": "# Soil\n\nLoam holds water and air. Add compost every spring.\n\n## Acidity\n\nMost vegetables like a pH near 6.5.\n",
    "watering.md": "# Watering\n\nWater early in the morning, at the roots.\n\n## Drip irrigation\n\n"
    "A drip line saves water: the emitters feed each plant slowly.\n",
    "pruning.md": "# Pruning\n\nCut above an outward-facing bud with clean shears.\n",
}


def mkdocs_site(root):
    """An MkDocs Material site written in ROOT and built (`mkdocs build`) into
    ROOT/site, served statically; returns (server, base URL)."""
    docs = root / "docs"
    docs.mkdir()
    (root / "mkdocs.yml").write_text(MKDOCS_YML)
    for name, text in MKDOCS_PAGES.items():
        (docs / name).write_text(text)
    subprocess.run([str(PYPI / "bin" / "mkdocs"), "build", "-q"], cwd=root, env=pypi_env(root), check=True)
    handler = type("Site", (SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root / "site")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
