"""The browser plugin and `browser_batch`, end to end: the Python MCP client drives
`stephost serve` (stdio), which drives real headless Chromium through chromedriver
(and Firefox through geckodriver), on pages this test serves on loopback.

Needs the Debian packages chromium + chromium-driver (and firefox-esr + geckodriver
from crates.io for the Firefox tests); scripts/test.sh installs them.
"""

import base64
import json
import contextlib
import shutil
import struct
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import stdio_session

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

FORM = """<!doctype html><html><head><title>Signup</title></head><body>
<h1>Sign up</h1>
<form action="/done.html" method="get">
  <label for="name">Full name</label> <input id="name" name="name" placeholder="Your name">
  <label>Email <input type="email" name="email"></label>
  <select name="plan" aria-label="Plan"><option value="free">Free</option><option value="pro">Pro plan</option></select>
  <label><input type="checkbox" name="terms" value="yes"> I accept the terms</label>
  <button type="submit">Create account</button>
</form>
<button id="counter" onclick="this.dataset.n = (+(this.dataset.n || 0) + 1); this.textContent = 'Clicked ' + this.dataset.n">Click me</button>
<button onclick="alert('hello there')">Alert me</button>
<button onclick="document.getElementById('out').textContent = confirm('Sure?') ? 'yes' : 'no'">Confirm me</button>
<button onclick="document.getElementById('out').textContent = 'prompt: ' + prompt('Name?')">Prompt me</button>
<button id="vanish" onclick="this.remove()">Remove me</button>
<p id="out">nothing yet</p>
</body></html>"""

DONE = """<!doctype html><html><head><title>Done</title></head><body><h1>Welcome</h1><p id="q"></p>
<script>document.getElementById('q').textContent = 'Query: ' +
  decodeURIComponent(location.search.slice(1)).replace(/\\+/g, ' ');</script></body></html>"""

OTHER = """<!doctype html><html><head><title>Other page</title></head><body><h1>Another page</h1>
<a href="/form.html">Back to the form</a></body></html>"""

SHADOW = """<!doctype html><html><head><title>Shadow</title></head><body><h1>Shadow widgets</h1>
<x-counter></x-counter><p id="out">count: 0</p>
<script>
customElements.define('x-counter', class extends HTMLElement {
  constructor() {
    super();
    const root = this.attachShadow({mode: 'open'});
    root.innerHTML = '<label>Nickname <input id="nick"></label> <button id="inc">Increment counter</button>';
    let n = 0;
    root.getElementById('inc').addEventListener('click', () => {
      n++;
      document.getElementById('out').textContent = 'count: ' + n + ' nick: ' + root.getElementById('nick').value;
    });
  }
});
</script></body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A threaded HTTP server on 127.0.0.1 serving the test pages; yields its base URL."""
    root = tmp_path_factory.mktemp("site")
    (root / "form.html").write_text(FORM)
    (root / "done.html").write_text(DONE)
    (root / "other.html").write_text(OTHER)
    (root / "shadow.html").write_text(SHADOW)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def host_args(browser=None):
    """Arguments for `stephost`: which browser the built-in browser plugin drives."""
    return ["--browser", browser] if browser else []


def firefox_available():
    home_bin = Path.home() / ".cargo" / "bin" / "geckodriver"
    return shutil.which("firefox-esr") is not None and (shutil.which("geckodriver") or home_bin.exists())


class Session:
    """An MCP client session; with a session_id every call names that stephost
    session, without one they use the connection's. Either way single tools and
    batches share one browser."""

    def __init__(self, client, session_id=None):
        self.client = client
        self.session_id = session_id

    async def call_tool(self, tool, args):
        if self.session_id is not None:
            args = {**args, "session_id": self.session_id}
        return await self.client.call_tool(tool, args)


@contextlib.asynccontextmanager
async def browser_session(browser=None, session_id=None):
    async with stdio_session(*host_args(browser)) as client:
        yield Session(client, session_id)


async def call(session, tool, args, ok=True):
    """Calls a tool; with ok=True asserts it passed and returns its value."""
    result = await session.call_tool(tool, args)
    data = result.structuredContent
    if ok:
        assert result.isError is False, f"{tool} {args}: {data}"
        return data["value"]
    return result


# Helpers the other browser test files share: a module-scoped session per
# browser (Chromium, and Firefox when installed), the page's JavaScript, batches
# and refs read off a tree.
BROWSERS = ["chromium", pytest.param("firefox", marks=pytest.mark.skipif(not firefox_available(), reason="no Firefox"))]


@pytest.fixture(scope="module", params=BROWSERS, name="session")
async def each_browser(request):
    """The module's MCP session, once per browser; a module using it sets a
    module-scoped `anyio_backend`."""
    async with stdio_session(*host_args(None if request.param == "chromium" else request.param)) as client:
        yield Session(client)


async def js(session, text):
    """What a JavaScript expression evaluates to in tab 1."""
    value = await call(session, "javascript_tool", {"tabId": 1, "text": text})
    return value["result"] if isinstance(value, dict) and "result" in value else value


async def batch(session, actions, ok=True):
    """`browser_batch`'s structured result; with ok=True asserts it passed."""
    result = await session.call_tool("browser_batch", {"actions": actions})
    data = result.structuredContent
    if ok:
        assert result.isError is False, json.dumps(data)[:3000]
    return data


def ref_in(tree, needle):
    """The ref on the first line of a read_page tree holding `needle`."""
    line = next(line for line in tree.splitlines() if needle in line)
    return line.split("[", 1)[1].split("]", 1)[0]


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


async def core_flow(session, site):
    """find -> form_input -> computer left_click -> get_page_text, on tab 1."""
    tabs = await call(session, "tabs_context", {})
    assert [t["tabId"] for t in tabs["tabs"]] == [1]
    page = await call(session, "navigate", {"tabId": 1, "url": f"{site}/form.html"})
    assert page["title"] == "Signup"

    name = await call(session, "find", {"tabId": 1, "query": "full name field"})
    assert name["matches"][0]["role"] == "textbox" and name["matches"][0]["name"] == "Full name"
    await call(session, "form_input", {"tabId": 1, "ref": name["matches"][0]["ref"], "value": "Ada Lovelace"})

    plan = await call(session, "find", {"tabId": 1, "query": "plan dropdown"})
    await call(session, "form_input", {"tabId": 1, "ref": plan["matches"][0]["ref"], "value": "Pro plan"})
    terms = await call(session, "find", {"tabId": 1, "query": "accept the terms checkbox"})
    checked = await call(session, "form_input", {"tabId": 1, "ref": terms["matches"][0]["ref"], "value": True})
    assert checked["checked"] is True

    submit = await call(session, "find", {"tabId": 1, "query": "Create account button"})
    assert submit["matches"][0]["role"] == "button"
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": submit["matches"][0]["ref"]})

    text = await call(session, "get_page_text", {"tabId": 1})
    assert text["title"] == "Done"
    assert "Query: name=Ada Lovelace&email=&plan=pro&terms=yes" in text["text"], text


async def test_form_filled_and_submitted(site):
    async with browser_session() as session:
        await core_flow(session, site)


async def test_read_page_refs_are_stable_and_drive_tools(site):
    async with browser_session() as session:
        await call(session, "navigate", {"tabId": 1, "url": f"{site}/form.html"})
        first = await call(session, "read_page", {"tabId": 1, "filter": "interactive"})
        tree = first["tree"]
        assert 'textbox "Full name"' in tree and 'button "Create account"' in tree
        assert "heading" not in tree, "interactive filter lists only interactive elements"
        ref = next(line for line in tree.splitlines() if '"Click me"' in line).split("[")[1].split("]")[0]

        everything = await call(session, "read_page", {"tabId": 1, "filter": "all"})
        assert 'heading "Sign up"' in everything["tree"]
        assert f"[{ref}]" in everything["tree"], "the same element keeps its ref"

        clicked = await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": ref})
        assert clicked["ref"] == ref
        after = await call(session, "read_page", {"tabId": 1, "filter": "interactive", "ref_id": ref})
        assert f'button "Clicked 1" [{ref}]' in after["tree"]

        # An element that left the DOM: its ref is world-moved, nothing is clicked.
        vanish = next(line for line in tree.splitlines() if '"Remove me"' in line).split("[")[1].split("]")[0]
        await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": vanish})
        gone = await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": vanish}, ok=False)
        error = gone.structuredContent["error"]
        assert error["code"] == "world-moved" and error["input_fired"] is False, error

        # A click on nothing: a point outside the viewport.
        nothing = await call(
            session, "computer", {"tabId": 1, "action": "left_click", "coordinate": [5000, 5000]}, ok=False
        )
        error = nothing.structuredContent["error"]
        assert error["code"] == "not-found" and error["input_fired"] is False, error


async def test_find_and_click_reach_into_open_shadow_roots(site):
    async with browser_session() as session:
        await call(session, "navigate", {"tabId": 1, "url": f"{site}/shadow.html"})
        nick = await call(session, "find", {"tabId": 1, "query": "nickname field"})
        assert nick["matches"] and nick["matches"][0]["role"] == "textbox", nick
        await call(session, "form_input", {"tabId": 1, "ref": nick["matches"][0]["ref"], "value": "Ada"})
        button = await call(session, "find", {"tabId": 1, "query": "Increment counter button"})
        assert button["matches"][0]["role"] == "button", button
        await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": button["matches"][0]["ref"]})
        text = await call(session, "get_page_text", {"tabId": 1})
        assert "count: 1 nick: Ada" in text["text"], text


async def test_stale_ref_after_navigation_is_world_moved(site):
    async with browser_session() as session:
        await call(session, "navigate", {"tabId": 1, "url": f"{site}/form.html"})
        found = await call(session, "find", {"tabId": 1, "query": "Click me button"})
        ref = found["matches"][0]["ref"]
        await call(session, "navigate", {"tabId": 1, "url": f"{site}/form.html"})
        stale = await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": ref}, ok=False)
        error = stale.structuredContent["error"]
        assert error["code"] == "world-moved" and error["input_fired"] is False, error
        assert "navigat" in error["message"]
        # Nothing was clicked on the new page.
        value = await call(session, "javascript_tool", {"tabId": 1, "text": "document.getElementById('counter').textContent"})
        assert value["result"] == "Click me"
        # A ref from before the navigation never resolves to an element of the new page,
        # even after the new page hands out refs of its own.
        fresh = await call(session, "find", {"tabId": 1, "query": "Click me button"})
        assert fresh["matches"][0]["ref"] != ref
        again = await call(session, "form_input", {"tabId": 1, "ref": ref, "value": "x"}, ok=False)
        assert again.structuredContent["error"]["code"] == "world-moved"


async def test_tabs_open_list_and_close(site):
    async with browser_session() as session:
        created = await call(session, "tabs_create", {"url": f"{site}/other.html"})
        tab = created["tabId"]
        assert tab != 1 and created["title"] == "Other page"
        await call(session, "navigate", {"tabId": 1, "url": f"{site}/form.html"})
        listed = await call(session, "tabs_context", {})
        titles = {t["tabId"]: t["title"] for t in listed["tabs"]}
        assert titles == {1: "Signup", tab: "Other page"}
        text = await call(session, "get_page_text", {"tabId": tab})
        assert "Another page" in text["text"]
        closed = await call(session, "tabs_close", {"tabId": tab})
        assert closed["tabs_left"] == [1]
        missing = await call(session, "get_page_text", {"tabId": tab}, ok=False)
        assert missing.structuredContent["error"]["code"] == "not-found"
        listed = await call(session, "tabs_context", {})
        assert [t["tabId"] for t in listed["tabs"]] == [1]

        # In a batch, an entry after tabs_create names the new tab by reference.
        result = await session.call_tool(
            "browser_batch",
            {
                "actions": [
                    {"name": "tabs_create", "input": {"url": f"{site}/other.html"}},
                    {"name": "get_page_text", "input": {"tabId": "${STEP_1.tabId}"}},
                    {"name": "tabs_close", "input": {"tabId": "${STEP_1.tabId}"}},
                ]
            },
        )
        data = result.structuredContent
        assert result.isError is False, data
        assert "Another page" in data["results"][1]["output"]["text"]
        assert data["results"][2]["output"]["tabs_left"] == [1]


async def test_dialogs_block_the_page_until_answered(site):
    async with browser_session() as session:
        await call(session, "navigate", {"tabId": 1, "url": f"{site}/form.html"})
        alert = await call(session, "find", {"tabId": 1, "query": "Alert me button"})
        await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": alert["matches"][0]["ref"]})
        blocked = await call(session, "get_page_text", {"tabId": 1}, ok=False)
        error = blocked.structuredContent["error"]
        assert error["code"] == "dialog-open", error
        assert "`dialog`" in error["message"] and "hello there" in error["message"], error
        answered = await call(session, "dialog", {"tabId": 1, "action": "accept"})
        assert answered["dialog_text"] == "hello there"
        await call(session, "get_page_text", {"tabId": 1})

        none = await call(session, "dialog", {"tabId": 1, "action": "accept"}, ok=False)
        assert none.structuredContent["error"]["code"] == "not-found"

        # A prompt answered with text, then a confirm dismissed, through browser_batch
        # under the seed's name firefox_dialog.
        prompt = await call(session, "find", {"tabId": 1, "query": "Prompt me button"})
        confirm = await call(session, "find", {"tabId": 1, "query": "Confirm me button"})
        result = await session.call_tool(
            "browser_batch",
            {
                "actions": [
                    {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": prompt["matches"][0]["ref"]}},
                    {"name": "firefox_dialog", "input": {"tabId": 1, "action": "accept", "text": "Grace"}},
                    {"name": "javascript_tool", "input": {"tabId": 1, "text": "document.getElementById('out').textContent"}},
                    {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": confirm["matches"][0]["ref"]}},
                    {"name": "dialog", "input": {"tabId": 1, "action": "dismiss"}},
                    {"name": "get_page_text", "input": {"tabId": 1}},
                ]
            },
        )
        data = result.structuredContent
        assert result.isError is False, data
        outputs = [r["output"] for r in data["results"]]
        assert outputs[1]["dialog_text"] == "Name?" and outputs[1]["typed"] == "Grace"
        assert outputs[2]["result"] == "prompt: Grace"
        assert "\nno\n" in outputs[5]["text"] or outputs[5]["text"].rstrip().endswith("no")


async def test_screenshot_is_a_png_of_the_page_size(site):
    async with browser_session(session_id="shots") as session:
        await call(session, "navigate", {"tabId": 1, "url": f"{site}/form.html"})
        result = await session.call_tool("computer", {"tabId": 1, "action": "screenshot"})
        assert result.isError is False, result.structuredContent
        images = [c for c in result.content if c.type == "image"]
        assert len(images) == 1 and images[0].mimeType == "image/png"
        width, height = png_size(base64.b64decode(images[0].data))
        size = await call(
            session,
            "javascript_tool",
            {"tabId": 1, "text": "[Math.round(innerWidth * devicePixelRatio), Math.round(innerHeight * devicePixelRatio)]"},
        )
        assert [width, height] == size["result"]
        assert result.structuredContent["value"] == {"action": "screenshot", "tabId": 1, "width": width, "height": height}


async def test_browser_batch_rejects_a_bad_list_before_touching_the_page(site):
    async with browser_session() as session:
        await call(session, "navigate", {"tabId": 1, "url": f"{site}/form.html"})
        click = {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": "ref_1"}}
        found = await call(session, "find", {"tabId": 1, "query": "Click me button"})
        click["input"]["ref"] = found["matches"][0]["ref"]
        cases = [
            ({"name": "teleport", "input": {"tabId": 1}}, "actions[1].name", "unknown browser tool"),
            ({"name": "browser_batch", "input": {"actions": []}}, "actions[1].name", "inside browser_batch"),
            ({"name": "get_page_text", "input": {}}, "actions[1].input.tabId", "needs tabId"),
            ({"name": "computer", "input": {"tabId": 1, "action": "fly"}}, "actions[1].input.action", ""),
        ]
        for bad, field, words in cases:
            result = await session.call_tool("browser_batch", {"actions": [click, bad, click]})
            data = result.structuredContent
            assert result.isError is True and data["status"] == "invalid", data
            assert data["results"] == [] and data["never_started"] == 3
            assert any(e["field"] == field and words in e["message"] for e in data["errors"]), data["errors"]
            assert "rejected" in result.content[0].text
        counter = await call(session, "javascript_tool", {"tabId": 1, "text": "document.getElementById('counter').textContent"})
        assert counter["result"] == "Click me", "no entry of a rejected list ran"


async def test_browser_batch_runs_in_order_halts_and_labels_images(site):
    async with browser_session() as session:
        # Batches and single tools share the session's browser: tab 1 from here.
        await call(session, "navigate", {"tabId": 1, "url": f"{site}/form.html"})
        result = await session.call_tool(
            "browser_batch",
            {
                "actions": [
                    {"name": "find", "input": {"tabId": 1, "query": "full name field"}},
                    {"name": "form_input", "input": {"tabId": 1, "ref": "${STEP_1.matches[0].ref}", "value": "Alan Turing"}},
                    {"name": "find", "input": {"tabId": 1, "query": "Create account button"}},
                    {"name": "computer", "input": {"tabId": 1, "action": "screenshot"}},
                    {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": "${STEP_3.matches[0].ref}"}},
                    {"name": "get_page_text", "input": {"tabId": 1}},
                    {"name": "computer", "input": {"tabId": 1, "action": "screenshot"}},
                ]
            },
        )
        data = result.structuredContent
        assert result.isError is False, data
        assert data["status"] == "passed" and data["error_count"] == 0 and data["never_started"] == 0
        assert [r["name"] for r in data["results"]] == [
            "find", "form_input", "find", "computer", "computer", "get_page_text", "computer"
        ]
        assert "Alan Turing" in data["results"][5]["output"]["text"]
        # Images inline, each right after the text whose last line names its entry.
        kinds = [(c.type, c.text.splitlines()[-1] if c.type == "text" else None) for c in result.content]
        for index in (3, 6):
            label = f"[actions[{index}] computer image]"
            at = kinds.index(("text", label))
            assert kinds[at + 1][0] == "image", kinds
        assert data["results"][3]["images"] == ["actions[3] computer image"]

        # The same browser answers a single tool call afterwards.
        text = await call(session, "get_page_text", {"tabId": 1})
        assert text["title"] == "Done"

        # Halting: the stale ref in entry 2 breaks the run; entry 3 never starts.
        halted = await session.call_tool(
            "browser_batch",
            {
                "actions": [
                    {"name": "navigate", "input": {"tabId": 1, "url": f"{site}/form.html"}},
                    {"name": "get_page_text", "input": {"tabId": 1}},
                    {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": "ref_1"}},
                    {"name": "get_page_text", "input": {"tabId": 1}},
                ]
            },
        )
        data = halted.structuredContent
        assert halted.isError is True
        assert data["status"] == "failed" and data["error_count"] == 1 and data["never_started"] == 1
        assert [r["index"] for r in data["results"]] == [0, 1]
        assert data["error"]["index"] == 2 and data["error"]["code"] == "world-moved"
        assert "actions[2] (computer) failed" in halted.content[0].text


@pytest.mark.skipif(not firefox_available(), reason="firefox-esr and geckodriver are not installed")
async def test_firefox_core_flow(site):
    async with browser_session("firefox") as session:
        tabs = await call(session, "tabs_context", {})
        assert tabs["browser"] == "firefox"
        await core_flow(session, site)
        # A dialog and a screenshot on Firefox too.
        await call(session, "navigate", {"tabId": 1, "url": f"{site}/form.html"})
        alert = await call(session, "find", {"tabId": 1, "query": "Alert me button"})
        result = await session.call_tool(
            "browser_batch",
            {
                "actions": [
                    {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": alert["matches"][0]["ref"]}},
                    {"name": "get_page_text", "input": {"tabId": 1}},
                ]
            },
        )
        assert result.structuredContent["error"]["code"] == "dialog-open", result.structuredContent
        await call(session, "dialog", {"tabId": 1, "action": "accept"})
        shot = await session.call_tool("computer", {"tabId": 1, "action": "screenshot"})
        images = [c for c in shot.content if c.type == "image"]
        width, height = png_size(base64.b64decode(images[0].data))
        assert width > 100 and height > 100
