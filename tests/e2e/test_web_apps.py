"""The browser tools against real third-party web apps (issue 15): each flow is
written the way an agent would write it from the tool descriptions alone (look with
`find` / `read_page`, act with `computer` / `form_input`, batch what needs no
looking), and each checks the end state independently of the tools' own claims: the
app's DOM or localStorage through `javascript_tool`, the app server's data (httpbin's
echo, datasette's SQLite file) or the disk.

The apps come from package registries at pinned versions (scripts/webapps.sh fetches
them into .cache/webapps/): TodoMVC's examples, Shoelace, Quill, flatpickr, SortableJS
and Infinite Scroll from npm; the Python 3.11 docs (Sphinx) and jQuery UI's demos from
Debian; datasette and httpbin from PyPI, each run as its own server on loopback. The
glue pages in tests/e2e/webapps/ only load a package's components; the package does
the rest. Every flow must pass on the first try, with no waits or workarounds added:
tests/e2e/webapps/RESULTS.md has the results before and after issue 15 and what
each failure was.
"""

import datetime
import json
import sqlite3
from pathlib import Path

import pytest

from conftest import stdio_session
from test_browser import call, firefox_available
from web_apps import (
    DOCS, JQUI, TODO, click, fetched, fill, garden_server, httpbin_server, key, nav, press, ref_on_line, static_site,
    type_into, typing,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

if not fetched():
    pytest.skip("the web apps are not fetched: run scripts/webapps.sh", allow_module_level=True)

# The core flows also run on Firefox (skipped without firefox-esr + geckodriver).
BROWSERS = [
    pytest.param(None, id="chromium"),
    pytest.param(
        "firefox",
        id="firefox",
        marks=pytest.mark.skipif(not firefox_available(), reason="firefox-esr and geckodriver are not installed"),
    ),
]


@pytest.fixture(scope="module")
def site():
    server, base = static_site()
    yield base
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def httpbin():
    proc, base = httpbin_server()
    yield base
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def garden(tmp_path_factory):
    """datasette serving garden.db, a small SQLite database; yields (base URL, db path)."""
    db = tmp_path_factory.mktemp("datasette") / "garden.db"
    proc, base = garden_server(db)
    yield base, db
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


@pytest.fixture
def browser():
    """Chromium, unless a test is parametrized over BROWSERS."""
    return None


@pytest.fixture(scope="module")
async def chromium():
    async with stdio_session() as session:
        yield session


@pytest.fixture(scope="module")
async def firefox_browser():
    async with stdio_session("--browser", "firefox") as session:
        yield session


@pytest.fixture
def session(request, browser):
    """The module's MCP session (so its one browser) for `browser`: the flows share
    it, each starting with a navigate on tab 1."""
    return request.getfixturevalue("firefox_browser" if browser == "firefox" else "chromium")


async def batch(session, actions):
    """Runs `browser_batch`, asserts every entry passed; returns the outputs."""
    result = await session.call_tool("browser_batch", {"actions": actions})
    data = result.structuredContent
    assert result.isError is False, data
    return [r["output"] for r in data["results"]]


async def first(session, query):
    """`find`'s best match for `query` (asserting there is one)."""
    found = await call(session, "find", {"tabId": 1, "query": query})
    assert found["matches"], f"find {query!r} matched nothing"
    return found["matches"][0]


async def js(session, text, tab=1):
    return (await call(session, "javascript_tool", {"tabId": tab, "text": text}))["result"]


def centre(match):
    x, y, w, h = match["box"]
    return [x + w / 2, y + h / 2]


# --- TodoMVC (npm todomvc 0.1.1, the vanilla JS example) ---------------------------


@pytest.mark.parametrize("browser", BROWSERS)
async def test_todomvc_add_and_complete(site, session):
    await call(session, "navigate", {"tabId": 1, "url": site + TODO})
    box = await first(session, "What needs to be done? input")
    await batch(
        session,
        [click(box["ref"]), typing("Buy milk"), key("Return"), typing("Walk the dog"), key("Return"),
         typing("Write report"), key("Return")],
    )
    toggle = await first(session, "Walk the dog checkbox")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": toggle["ref"]})
    stored = await js(session, "JSON.parse(localStorage.getItem('todos-vanillajs')).todos.map(t => [t.title, t.completed])")
    assert stored == [["Buy milk", False], ["Walk the dog", True], ["Write report", False]]
    assert "2 items left" in await js(session, "document.getElementById('todo-count').innerText")


# --- Python 3.11 docs (Debian python3.11-doc, Sphinx with its JS search) -----------


@pytest.mark.parametrize(
    "browser",
    BROWSERS,
)
async def test_sphinx_docs_search(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}{DOCS}/index.html"})
    box = await first(session, "Quick search box")
    await batch(session, [click(box["ref"]), typing("asyncio.gather"), key("Return")])
    # Sphinx fills the results in from its index after the page loads.
    await call(session, "wait_for_page", {"tabId": 1, "condition": "appears", "by": "selector", "pattern": "ul.search li"})
    hit = await first(session, "asyncio.gather link")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": hit["ref"]})
    where = await js(session, "[location.pathname, location.hash]")
    assert where == [f"{DOCS}/library/asyncio-task.html", "#asyncio.gather"], where


# --- Shoelace web components (npm @shoelace-style/shoelace 2.20.1) -----------------


@pytest.mark.parametrize("browser", BROWSERS)
async def test_shoelace_form(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/glue/shoelace.html"})
    name = await first(session, "Customer name field")
    await call(session, "form_input", {"tabId": 1, "ref": name["ref"], "value": "Ada Lovelace"})
    size = await first(session, "Size select")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": size["ref"]})
    large = await first(session, "Large option")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": large["ref"]})
    gift = await first(session, "Gift wrap checkbox")
    await call(session, "form_input", {"tabId": 1, "ref": gift["ref"], "value": True})
    submit = await first(session, "Place order button")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": submit["ref"]})
    state = await js(
        session,
        "[document.querySelector('sl-input').value, document.querySelector('sl-select').value,"
        " document.querySelector('sl-checkbox').checked, document.getElementById('submitted').textContent]",
    )
    assert state[:3] == ["Ada Lovelace", "large", True], state
    assert json.loads(state[3]) == {"customer": "Ada Lovelace", "size": "large", "gift": "yes"}


# --- jQuery UI demos (Debian libjs-jquery-ui-docs 1.13.2) ---------------------------


@pytest.mark.parametrize("browser", BROWSERS)
async def test_jquery_ui_modal_dialog(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}{JQUI}/dialog/modal-confirmation.html"})
    delete = await first(session, "Delete all items button")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": delete["ref"]})
    assert await js(session, "$('#dialog-confirm').dialog('isOpen')") is False


async def test_jquery_ui_autocomplete(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}{JQUI}/autocomplete/default.html"})
    tags = await first(session, "Tags input")
    await batch(session, [click(tags["ref"]), typing("Ja")])
    option = await first(session, "JavaScript option")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": option["ref"]})
    assert await js(session, "document.getElementById('tags').value") == "JavaScript"


async def test_jquery_ui_datepicker(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}{JQUI}/datepicker/default.html"})
    date = await first(session, "Date input")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": date["ref"]})
    day = await first(session, "15")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": day["ref"]})
    today = datetime.date.today()
    assert await js(session, "document.getElementById('datepicker').value") == f"{today:%m}/15/{today:%Y}"


async def test_jquery_ui_hover_menu(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}{JQUI}/menu/default.html"})
    music = await first(session, "Music")
    await call(session, "computer", {"tabId": 1, "action": "hover", "ref": music["ref"]})
    jazz = await first(session, "Jazz")
    await call(session, "computer", {"tabId": 1, "action": "hover", "ref": jazz["ref"]})
    # The check's own observer (the menu collapses once an item is chosen): what the
    # menu widget says was selected.
    await js(session, "$('#menu').on('menuselect', (event, ui) => { window.picked = ui.item.text(); }), 0")
    band = await first(session, "Big Band")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": band["ref"]})
    assert await js(session, "window.picked") == "Big Band"


# --- Quill rich-text editor (npm quill 2.0.3) -----------------------------------------


async def test_quill_bold_text(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/glue/quill.html"})
    editor = await first(session, "Write your note editor")
    await batch(session, [click(editor["ref"]), typing("Hello "), key("ctrl+b"), typing("world")])
    ops = await js(session, "editor.getContents().ops")
    assert ops == [{"insert": "Hello "}, {"insert": "world", "attributes": {"bold": True}}, {"insert": "\n"}], ops


# --- flatpickr date picker (npm flatpickr 4.6.13) -----------------------------------


async def test_flatpickr_pick_a_day(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/glue/flatpickr.html"})
    field = await first(session, "Visit date")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": field["ref"]})
    today = datetime.date.today()
    day = await first(session, f"{today:%B} 15, {today:%Y}")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": day["ref"]})
    assert await js(session, "document.getElementById('visit').value") == f"{today:%Y-%m}-15"


# --- SortableJS drag and drop (npm sortablejs 1.15.7) -------------------------------


async def test_sortable_drag_to_reorder(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/glue/sortable.html"})
    apple = await first(session, "Apple")
    cherry = await first(session, "Cherry")
    await call(
        session,
        "computer",
        {"tabId": 1, "action": "left_click_drag", "start_coordinate": centre(apple), "coordinate": centre(cherry)},
    )
    order = await js(session, "[...document.querySelectorAll('#fruits li')].map(li => li.textContent)")
    assert order == ["Banana", "Cherry", "Apple", "Damson"], order


# --- Infinite Scroll (npm infinite-scroll 5.0.0) ------------------------------------


async def test_infinite_scroll_loads_more(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/glue/feed.html"})
    await call(session, "computer", {"tabId": 1, "action": "scroll", "scroll_direction": "down", "scroll_amount": 10})
    await call(session, "computer", {"tabId": 1, "action": "scroll", "scroll_direction": "down", "scroll_amount": 10})
    post = await first(session, "Post 8")
    assert "Post 8" in json.dumps(post), post
    count = await js(session, "document.querySelectorAll('#feed .post').length")
    assert count >= 8, count


# --- httpbin (PyPI httpbin 0.10.2): a form post, redirects, a 404, a download -------


async def test_httpbin_form_post(httpbin, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{httpbin}/forms/post"})
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    fill = [
        ("Customer name", "Grace Hopper"), ("Telephone", "555-0100"), ("E-mail address", "grace@example.com"),
        ("Large", True), ("Cheese", True), ("Onion", True), ("Delivery instructions", "Ring twice"),
    ]
    actions = [
        {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, label), "value": value}}
        for label, value in fill
    ]
    actions.append(click(ref_on_line(tree, "Submit order")))
    actions.append({"name": "get_page_text", "input": {"tabId": 1}})
    outputs = await batch(session, actions)
    assert "Grace Hopper" in outputs[-1]["text"]
    echoed = json.loads(await js(session, "document.querySelector('pre').textContent"))
    assert echoed["form"] == {
        "custname": "Grace Hopper", "custtel": "555-0100", "custemail": "grace@example.com",
        "size": "large", "topping": ["cheese", "onion"], "delivery": "", "comments": "Ring twice",
    }, echoed["form"]


async def test_httpbin_redirects_are_followed(httpbin, session):
    page = await call(session, "navigate", {"tabId": 1, "url": f"{httpbin}/redirect/3"})
    assert page["url"] == f"{httpbin}/get", page
    assert await js(session, "location.pathname") == "/get"


async def test_httpbin_404_is_reported(httpbin, session):
    result = await session.call_tool("navigate", {"tabId": 1, "url": f"{httpbin}/status/404"})
    assert "404" in json.dumps(result.structuredContent), result.structuredContent


# --- around pages: a new tab, a native confirm, a frame, a download


async def test_link_opens_a_new_tab(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/glue/links.html?httpbin=x"})
    before = {t["tabId"] for t in (await call(session, "tabs_context", {}))["tabs"]}
    link = await first(session, "Python documentation link")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": link["ref"]})
    tabs = (await call(session, "tabs_context", {}))["tabs"]
    new = [t["tabId"] for t in tabs if t["tabId"] not in before]
    assert len(new) == 1, tabs
    text = await call(session, "get_page_text", {"tabId": new[0]})
    assert text["title"] == "3.11.2 Documentation", text["title"]
    assert await js(session, "location.pathname", tab=new[0]) == f"{DOCS}/index.html"
    await call(session, "tabs_close", {"tabId": new[0]})


@pytest.mark.parametrize("browser", BROWSERS)
async def test_native_confirm_accepted(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/glue/links.html?httpbin=x"})
    button = await first(session, "Delete draft button")
    outputs = await batch(
        session, [click(button["ref"]), {"name": "dialog", "input": {"tabId": 1, "action": "accept"}}]
    )
    assert outputs[1]["dialog_text"] == "Delete the draft?"
    assert await js(session, "document.getElementById('answer').textContent") == "deleted"


async def test_todo_app_inside_a_frame(site, session):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/glue/links.html?httpbin=x"})
    box = await first(session, "What needs to be done? input")
    await batch(session, [click(box["ref"]), typing("Framed todo"), key("Return")])
    # The frame is the TodoMVC page of test_todomvc_add_and_complete, whose todos may be there too.
    stored = await js(session, "JSON.parse(localStorage.getItem('todos-vanillajs')).todos.map(t => t.title)")
    assert stored[-1:] == ["Framed todo"], stored


async def test_download_is_reported(site, httpbin, session):
    downloads = Path.home() / "Downloads"
    before = set(downloads.glob("report*.txt")) if downloads.exists() else set()
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/glue/links.html?httpbin={httpbin}"})
    link = await first(session, "Download report link")
    clicked = await session.call_tool("computer", {"tabId": 1, "action": "left_click", "ref": link["ref"]})
    tabs = await session.call_tool("tabs_context", {})
    reported = json.dumps([clicked.structuredContent, tabs.structuredContent])
    saved = sorted(set(downloads.glob("report*.txt")) - before) if downloads.exists() else []
    for path in saved:
        path.unlink()
    assert "report.txt" in reported, f"no tool reported the download (saved: {saved}): {reported}"


# --- datasette (PyPI datasette 0.65.1) with a small SQLite database -----------------


async def test_datasette_sql_editor(garden, session):
    base, db = garden
    query = "select name, height from plants where color = 'red' order by height desc"
    await call(session, "navigate", {"tabId": 1, "url": f"{base}/garden"})
    editor = await first(session, "SQL query editor")
    await batch(session, [click(editor["ref"]), key("ctrl+a Delete"), typing(query)])
    run = await first(session, "Run SQL button")
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": run["ref"]})
    shown = await js(
        session,
        "[...document.querySelectorAll('table.rows-and-columns tbody tr')].map(tr => [...tr.cells].map(c => c.innerText.trim()))",
    )
    with sqlite3.connect(db) as conn:
        expected = [[name, str(height)] for name, height in conn.execute(query)]
    assert shown == expected, shown
    assert await js(session, "new URLSearchParams(location.search).get('sql')") == query


# --- The same apps, each flow as one browser_batch written before looking ----------
# Elements are named by description (`find` on computer / form_input), resolved when
# each entry runs; the end states are checked as above.


@pytest.mark.parametrize("browser", BROWSERS)
async def test_one_batch_todomvc(site, session):
    await batch(session, [
        nav(site + TODO), type_into("What needs to be done? input", "Feed the cat"), key("Return"),
        typing("Water the plants"), key("Return"), press("Water the plants checkbox"),
    ])
    stored = await js(session, "JSON.parse(localStorage.getItem('todos-vanillajs')).todos.map(t => [t.title, t.completed])")
    assert stored[-2:] == [["Feed the cat", False], ["Water the plants", True]], stored


@pytest.mark.parametrize("browser", BROWSERS)
async def test_one_batch_shoelace_form(site, session):
    await batch(session, [
        nav(f"{site}/glue/shoelace.html"), fill("Customer name field", "Ada Lovelace"), press("Size select"),
        press("Large option"), fill("Gift wrap checkbox", True), press("Place order button"),
    ])
    submitted = await js(session, "document.getElementById('submitted').textContent")
    assert json.loads(submitted) == {"customer": "Ada Lovelace", "size": "large", "gift": "yes"}, submitted


async def test_one_batch_datepicker_and_autocomplete(site, session):
    await batch(session, [
        nav(f"{site}{JQUI}/datepicker/default.html"), press("Date input"), press("15"),
    ])
    today = datetime.date.today()
    assert await js(session, "document.getElementById('datepicker').value") == f"{today:%m}/15/{today:%Y}"
    await batch(session, [
        nav(f"{site}{JQUI}/autocomplete/default.html"), type_into("Tags input", "Ja"), press("JavaScript option"),
    ])
    assert await js(session, "document.getElementById('tags').value") == "JavaScript"


async def test_one_batch_httpbin_form(httpbin, session):
    outputs = await batch(session, [
        nav(f"{httpbin}/forms/post"), fill("Customer name", "Grace Hopper"), fill("Telephone", "555-0100"),
        fill("Large", True), fill("Cheese", True), press("Submit order button"),
        {"name": "get_page_text", "input": {"tabId": 1}},
    ])
    form = json.loads(outputs[-1]["text"])["form"]
    assert form["custname"] == "Grace Hopper" and form["size"] == "large" and form["topping"] == "cheese", form
