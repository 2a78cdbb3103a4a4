"""The browser tools against third-party web apps from PyPI (issue 40), of other kinds
than test_web_apps.py's: an admin site with real forms (Django's admin), a notebook app
(JupyterLab), two data-app frameworks with sliders and reruns (Shiny for Python, Dash)
and a documentation site with client-side search (MkDocs Material). scripts/webapps.sh
installs them at pinned versions into .cache/webapps/pypi and .cache/webapps/jupyter;
each app is made at test time in a temporary folder (a Django project, a notebook root,
an app file, an MkDocs site) and served on a free loopback port.

As in test_web_apps.py, each flow is written the way an agent would write it from the
tool descriptions alone (look with `find` / `read_page`, act with `computer` /
`form_input`, batch what needs no looking; no sleeps, retries or workarounds; a
`wait_for_page` only where an agent waits for what the app draws later), and checks
its end state outside the browser: Django's SQLite file, the notebook file on disk, the
log each data app appends every value its server computes with. tests/e2e/webapps/
RESULTS.md ("Issue 40: PyPI apps") has the first-try results and what each failure was.
"""

import json
import sqlite3

import pytest

from conftest import stdio_session
from test_browser import call
from web_apps import (
    DJANGO_PASSWORD, DJANGO_USER, click, dash_server, django_site, fill, jupyter_server, key, mkdocs_site, nav, press,
    pypi_fetched, ref_on_line, shiny_server, stop, type_into, typing,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

if not pypi_fetched():
    pytest.skip("the PyPI web apps are not installed: run scripts/webapps.sh", allow_module_level=True)

# Chromium, and Firefox for the core flows; a module-scoped MCP session per browser,
# shared by the flows: test_web_apps.py's fixtures, instantiated for this module.
from test_web_apps import (  # noqa: E402,F401
    BROWSERS, anyio_backend, batch, browser, chromium, first, firefox_browser, js, session,
)


@pytest.fixture(scope="module")
def django(tmp_path_factory):
    """Django's admin over a fresh project; yields (base URL, SQLite path)."""
    proc, base, db = django_site(tmp_path_factory.mktemp("django"))
    yield base, db
    stop(proc)


@pytest.fixture
def jupyter(tmp_path):
    """JupyterLab with a token over an empty folder; yields (base URL, token, folder).
    One per flow: JupyterLab reopens the last flow's notebook (its workspace) in place
    of the launcher."""
    token = "e2e-token-40"
    proc, base, work = jupyter_server(tmp_path, token)
    yield base, token, work
    stop(proc)


@pytest.fixture(scope="module")
def shiny(tmp_path_factory):
    proc, base, log = shiny_server(tmp_path_factory.mktemp("shiny"))
    yield base, log
    stop(proc)


@pytest.fixture(scope="module")
def dash(tmp_path_factory):
    proc, base, log = dash_server(tmp_path_factory.mktemp("dash"))
    yield base, log
    stop(proc)


@pytest.fixture(scope="module")
def mkdocs(tmp_path_factory):
    server, base = mkdocs_site(tmp_path_factory.mktemp("mkdocs"))
    yield base
    server.shutdown()
    server.server_close()


async def text_of(session):
    return (await call(session, "get_page_text", {"tabId": 1}))["text"]


def last_line(path):
    lines = path.read_text().splitlines() if path.exists() else []
    return lines[-1] if lines else None


# --- Django admin (PyPI django 5.2.20): log in, add a Book, save ------------------


async def django_login(session, base):
    await call(session, "navigate", {"tabId": 1, "url": f"{base}/admin/"})
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    await batch(session, [
        {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, "Username"), "value": DJANGO_USER}},
        {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, "Password"), "value": DJANGO_PASSWORD}},
        click(ref_on_line(tree, "Log in")),
    ])


def book_rows(db):
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "select b.title, a.name, b.published, b.in_print from library_book b"
            " join library_author a on a.id = b.author_id order by b.id"
        ).fetchall()


@pytest.mark.parametrize("browser", BROWSERS)
async def test_django_admin_add_book(django, session, browser):
    base, db = django
    title = f"Kindred ({browser or 'chromium'})"
    await django_login(session, base)
    # The index lists each model with an "Add" link: the one to library/book/add/.
    index = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": ref_on_line(index, '"Add"', "book/add/")})
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    await batch(session, [
        {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, 'textbox "Title:"'), "value": title}},
        {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, 'combobox "Author:"'), "value": "Octavia E. Butler"}},
        {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, 'textbox "Publication date:"'), "value": "1979-06-01"}},
        {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, 'checkbox "In print"'), "value": True}},
        click(ref_on_line(tree, 'button "Save"')),
    ])
    assert (title, "Octavia E. Butler", "1979-06-01", 1) in book_rows(db), book_rows(db)


async def test_one_batch_django_admin(django):
    """The same, as one batch written before looking, elements named by description
    (the add form's `<input name="title">` clobbers `form.title`). A browser of its
    own, so it starts logged out."""
    base, db = django
    async with stdio_session() as session:
        await batch(session, [
            nav(f"{base}/admin/library/book/add/"),
            fill("Username", DJANGO_USER), fill("Password", DJANGO_PASSWORD), press("Log in button"),
            fill("Title field", "Parable of the Sower"), fill("Author select", "Octavia E. Butler"),
            fill("Publication date field", "1993-10-01"), fill("In print checkbox", True), press("Save button"),
        ])
    assert ("Parable of the Sower", "Octavia E. Butler", "1993-10-01", 1) in book_rows(db), book_rows(db)


# --- JupyterLab (PyPI jupyterlab 4.6.6 + ipykernel 7.4.0): a notebook, run, save ----


async def appears(session, by, pattern):
    """wait_for_page until something `by` `pattern` shows; returns what it matched."""
    found = await call(
        session, "wait_for_page",
        {"tabId": 1, "condition": "appears", "by": by, "pattern": pattern, "timeout_ms": 20000},
    )
    return found["match"]


@pytest.mark.parametrize("browser", BROWSERS)
async def test_jupyterlab_notebook_run_and_save(jupyter, session):
    base, token, work = jupyter
    await call(session, "navigate", {"tabId": 1, "url": f"{base}/lab?token={token}"})
    # JupyterLab draws its launcher after the page has loaded (RESULTS.md: a find right
    # after navigate mostly comes too early). The launcher's first tile is under
    # "Notebook" (the one under "Console" has the same name).
    tile = await appears(session, "description", "Python 3 (ipykernel)")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": tile["ref"]})
    # The new notebook's one cell: its editor is the page's only textbox (unnamed),
    # resolved when the entry runs (JupyterLab redraws the cell as the notebook opens).
    await batch(session, [
        type_into("textbox", NOTEBOOK_CODE), key("shift+Return"),
        {"name": "wait_for", "input": {"tabId": 1, "text": "45045", "timeout_ms": 20000}}, key("ctrl+s"),
        # JupyterLab asks for a name on an untitled notebook's first save.
        fill("File name", "sums.ipynb"), press("Rename and Save button"),
    ])
    check_notebook(work / "sums.ipynb")


NOTEBOOK_CODE = "print(sum(range(10)) * 1001)"


def check_notebook(path):
    """The notebook at `path` holds the code in its first cell and the code's output."""
    cells = json.loads(path.read_text())["cells"]
    assert "".join(cells[0]["source"]) == NOTEBOOK_CODE, cells
    assert ["".join(o.get("text", "")) for o in cells[0]["outputs"]] == ["45045\n"], cells[0]["outputs"]


async def test_one_batch_jupyterlab(jupyter, session):
    """The same as one batch by description, the cell's editor named as the issue's agent did."""
    base, token, work = jupyter
    await batch(session, [
        nav(f"{base}/lab?token={token}"), press("Python 3 (ipykernel) notebook"),
        type_into("code cell editor", NOTEBOOK_CODE), key("shift+Return"),
        {"name": "wait_for", "input": {"tabId": 1, "text": "45045", "timeout_ms": 20000}}, key("ctrl+s"),
        fill("File name", "sums.ipynb"), press("Rename and Save button"),
    ])
    check_notebook(work / "sums.ipynb")


# --- Shiny for Python (PyPI shiny 1.8.0): a slider and a text input, reruns ---------


@pytest.mark.parametrize("browser", BROWSERS)
async def test_shiny_slider_and_text(shiny, session):
    base, log = shiny
    await call(session, "navigate", {"tabId": 1, "url": base})
    # The label names ion.rangeSlider's hidden read-only input, which holds the value
    # Shiny reads; the widget beside it is what moves. find offers the input as the
    # slider, and form_input moves the widget and reads the input back.
    slider = await first(session, "Number of cups")
    assert slider["role"] == "slider" and slider["value"] == "5", slider
    out = await call(session, "form_input", {"tabId": 1, "ref": slider["ref"], "value": 12})
    assert out.get("set_by") in ("keys", "pointer"), out
    name = await first(session, "Your name")
    await batch(session, [click(name["ref"]), typing("Ada")])
    await call(session, "wait_for_page", {"tabId": 1, "text": "Ada orders"})
    assert "Ada orders 12 cups" in await text_of(session)
    assert last_line(log) == "cups=12 name=Ada", log.read_text()


async def test_one_batch_shiny(shiny, session):
    """The same as one batch by description; then a value the slider cannot hold is
    refused, and the app keeps what it had."""
    base, log = shiny
    await batch(session, [nav(base), fill("Number of cups slider", 3), type_into("Your name", "Bo")])
    await call(session, "wait_for_page", {"tabId": 1, "text": "Bo orders 3 cups"})
    assert last_line(log) == "cups=3 name=Bo", log.read_text()
    result = await session.call_tool("browser_batch", {"actions": [fill("Number of cups slider", 99)]})
    data = result.structuredContent
    assert result.isError is True, data
    error = data["error"]
    assert "99" in error["message"] and "20" in error["message"], error
    assert "Bo orders 3 cups" in await text_of(session)


# --- Dash (PyPI dash 4.4.1): a slider and a text input, callbacks -------------------


@pytest.mark.parametrize("browser", BROWSERS)
async def test_dash_slider_and_text(dash, session):
    base, log = dash
    await call(session, "navigate", {"tabId": 1, "url": base})
    # The slider has no name (its label's `for` names the component's wrapper div).
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    await batch(session, [
        {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, "- slider "), "value": 7}},
        click(ref_on_line(tree, 'textbox "Plant name"')), typing("Fern"),
    ])
    await call(session, "wait_for_page", {"tabId": 1, "text": "Fern gets"})
    assert "Fern gets 7 litres" in await text_of(session)
    # Dash's server runs callbacks on threads: one per keystroke, finishing in any order.
    assert "litres=7 plant=Fern" in log.read_text().splitlines(), log.read_text()


async def test_one_batch_dash(dash, session):
    """The same as one batch by description: the slider has no name, and the label
    whose `for` names the div it is drawn in is what a person reads it by."""
    base, log = dash
    await batch(session, [nav(base), fill("Litres per week slider", 4), type_into("Plant name", "Ivy")])
    await call(session, "wait_for_page", {"tabId": 1, "text": "Ivy gets 4 litres"})
    assert "litres=4 plant=Ivy" in log.read_text().splitlines(), log.read_text()


# --- MkDocs Material (PyPI mkdocs 1.6.1 + mkdocs-material 9.8.2): search ----------


@pytest.mark.parametrize("browser", BROWSERS)
async def test_mkdocs_material_search(mkdocs, session):
    await call(session, "navigate", {"tabId": 1, "url": mkdocs + "/"})
    box = await first(session, "Search box")
    await batch(session, [click(box["ref"]), typing("emitters")])
    hit = await first(session, "Drip irrigation link")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": hit["ref"]})
    where = await js(session, "[location.pathname, location.hash, document.querySelector('h1').textContent]")
    assert where[:2] == ["/watering/", "#drip-irrigation"], where
    assert where[2].strip() == "Watering", where


async def test_one_batch_mkdocs_material_search(mkdocs, session):
    """The same as one batch by description."""
    await batch(session, [nav(mkdocs + "/"), type_into("Search box", "vegetables"), press("Acidity link")])
    where = await js(session, "[location.pathname, location.hash, document.querySelector('h1').textContent]")
    assert where[:2] == ["/soil/", "#acidity"] and where[2].strip() == "Soil", where
