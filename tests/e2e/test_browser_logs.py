"""What a page logged and requested, as verbs (issue 15): `read_console_messages`
and `read_network_requests`. A shop page served on loopback logs while it loads
and after a click, throws an uncaught error, rejects a promise, and fetches a 200
and a 404 URL; each flow is written as an agent writes it from the tool
descriptions, and checked against what the test server itself saw. Filters,
clearing, a flood of 10,000 messages, a navigation starting afresh, and one flow
inside `browser_batch`. Headless Chromium (capture from document start), and
Firefox for the core flow (capture from when the plugin first looks, said so).
"""

import json
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from test_browser import browser_session, call, firefox_available

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

SHOP = """<!doctype html><html><head><title>Shop</title>
<script>console.log('boot: head script ran'); console.info('config %s', 'loaded', {env: 'test', n: 3});</script>
</head><body>
<h1>Shop</h1>
<button id="buy" onclick="buy()">Buy now</button>
<button id="flood" onclick="flood()">Flood the console</button>
<p id="out">nothing bought</p>
<script src="shop.js"></script>
</body></html>"""

SHOP_JS = """console.warn('deprecated: the old cart API is in use');
setTimeout(() => { throw new Error('boom at load'); }, 0);
Promise.reject(new Error('rejected at load'));
fetch('/api/item?load=1');
fetch('/api/missing?load=1');
function buy() {
  console.log('clicked buy', {item: 7});
  fetch('/api/missing?click=1');
  fetch('/api/item?click=1').then((r) => r.json()).then((d) => {
    document.getElementById('out').textContent = 'bought ' + d.id;
  });
  setTimeout(() => { throw new TypeError('checkout failed'); }, 0);
  Promise.reject(new Error('payment declined'));
}
function flood() {
  for (let i = 0; i < 10000; i++) console.log('flood ' + i + ' ' + 'z'.repeat(3000));
  document.getElementById('out').textContent = 'flooded';
}
"""

OTHER = "<!doctype html><title>Other</title><p>Another page</p><script>console.log('other page says hi')</script>"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The shop on 127.0.0.1; yields (base URL, the list of "METHOD path status" the server answered)."""
    root = tmp_path_factory.mktemp("logs")
    (root / "shop.html").write_text(SHOP)
    (root / "shop.js").write_text(SHOP_JS)
    (root / "other.html").write_text(OTHER)
    seen = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def api(self, method):
            if self.path == "/api/item?load=1":
                # A backend's pace: the page's load event fires long before this
                # answer, and `navigate` must still wait for it (Chromium counts it).
                time.sleep(0.4)
            status = 200 if self.path.startswith("/api/item") else 404
            body = json.dumps({"id": 7} if status == 200 else {"error": "no such thing"}).encode()
            seen.append(f"{method} {self.path} {status}")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.startswith("/api/"):
                return self.api("GET")
            super().do_GET()

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.api("POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def texts(reply):
    return [m["text"] for m in reply["messages"]]


def find_request(reply, path):
    hits = [r for r in reply["requests"] if r["url"].endswith(path)]
    assert hits, (path, reply["requests"])
    return hits[-1]


async def buy(session, tab=1):
    """What an agent does: find the button, click it, wait for the page to say so."""
    found = await call(session, "find", {"tabId": tab, "query": "Buy now button"})
    await call(session, "computer", {"tabId": tab, "action": "left_click", "ref": found["matches"][0]["ref"]})
    await call(session, "wait_for_page", {"tabId": tab, "text": "bought 7", "timeout_ms": 5000})


async def click_flow(session, base, seen):
    """The flow both browsers share: a click that logs, fails, rejects and fetches."""
    await buy(session)
    errors = await call(session, "read_console_messages", {"tabId": 1, "onlyErrors": True})
    assert all(m["level"] == "error" for m in errors["messages"]), errors
    checkout = [m for m in errors["messages"] if "checkout failed" in m["text"]]
    assert len(checkout) == 1, errors
    assert checkout[0]["text"].startswith("Uncaught TypeError: checkout failed"), checkout
    assert "shop.js" in checkout[0]["source"], checkout
    assert any(m["text"] == "Uncaught (in promise) Error: payment declined" for m in errors["messages"]), errors
    clicked = await call(session, "read_console_messages", {"tabId": 1, "pattern": "CLICKED\\s+buy"})
    assert texts(clicked) == ['clicked buy {"item":7}'], clicked
    assert clicked["messages"][0]["level"] == "log"
    assert clicked["messages"][0]["time"].endswith("Z")

    net = await call(session, "read_network_requests", {"tabId": 1, "urlPattern": "click=1"})
    ok, missing = find_request(net, "/api/item?click=1"), find_request(net, "/api/missing?click=1")
    assert (ok["method"], ok["status"], ok["type"]) == ("GET", 200, "fetch"), ok
    assert (missing["method"], missing["status"]) == ("GET", 404), missing
    assert isinstance(ok["duration_ms"], int) and ok.get("size", 1) > 0, ok
    assert "GET /api/item?click=1 200" in seen and "GET /api/missing?click=1 404" in seen, seen
    bad = await call(session, "read_network_requests", {"tabId": 1, "onlyErrors": True})
    assert bad["requests"] and all(r.get("status", 0) >= 400 or r.get("failed") for r in bad["requests"]), bad
    assert any(r["url"].endswith("/api/missing?click=1") for r in bad["requests"]), bad

    # clear: what was read is gone, what comes after is there.
    before = await call(session, "read_console_messages", {"tabId": 1, "clear": True})
    assert before["matched"] >= 3
    after = await call(session, "read_console_messages", {"tabId": 1})
    assert after["messages"] == [] and after["matched"] == 0, after
    await call(session, "read_network_requests", {"tabId": 1, "clear": True})
    await call(session, "javascript_tool", {"tabId": 1, "text": "fetch('/api/item?posted=1', {method: 'POST', body: 'x'}).then((r) => r.status)"})
    fresh = await call(session, "read_network_requests", {"tabId": 1})
    assert [(r["method"], r["url"].split("/")[-1], r["status"]) for r in fresh["requests"]] == [
        ("POST", "item?posted=1", 200)
    ], fresh
    assert "POST /api/item?posted=1 200" in seen


async def test_console_and_requests_from_document_start_on_chromium(site):
    base, seen = site
    async with browser_session() as session:
        page = await call(session, "navigate", {"tabId": 1, "url": f"{base}/shop.html"})
        assert page["status"] == 200
        console = await call(session, "read_console_messages", {"tabId": 1})
        # Captured from the document's start: even the first inline script's line.
        assert console["since"] == "document start" and "note" not in console, console
        by_text = {m["text"]: m for m in console["messages"]}
        assert by_text["boot: head script ran"]["level"] == "log"
        assert by_text['config loaded {"env":"test","n":3}']["level"] == "info"
        assert by_text["deprecated: the old cart API is in use"]["level"] == "warn"
        boom = next(m for m in console["messages"] if "boom at load" in m["text"])
        assert boom["level"] == "error" and boom["text"].startswith("Uncaught Error: boom at load"), boom
        assert boom["source"].startswith(f"{base}/shop.js:2:"), boom
        assert "stack" in boom
        assert "Uncaught (in promise) Error: rejected at load" in by_text
        assert texts(console)[0] == "boot: head script ran", "oldest first"
        assert console["url"] == f"{base}/shop.html" and "url" not in console["messages"][0]

        net = await call(session, "read_network_requests", {"tabId": 1})
        doc = net["requests"][0]
        assert (doc["type"], doc["status"], doc["url"]) == ("document", 200, f"{base}/shop.html"), net
        script = find_request(net, "/shop.js")
        assert (script["method"], script["status"], script["type"]) == ("GET", 200, "script"), script
        assert find_request(net, "/api/item?load=1")["status"] == 200
        missing = find_request(net, "/api/missing?load=1")
        assert (missing["method"], missing["status"], missing["type"]) == ("GET", 404, "fetch"), missing
        assert "GET /api/missing?load=1 404" in seen
        assert net["since"] == "document start"

        # A pattern that is not a regex says which field.
        result = await call(session, "read_console_messages", {"tabId": 1, "pattern": "("}, ok=False)
        assert result.isError is True
        error = result.structuredContent["error"]
        assert error["code"] == "invalid-input" and error["details"]["field"] == "pattern", error

        await click_flow(session, base, seen)

        # A navigation starts afresh: the new document's messages only.
        await call(session, "navigate", {"tabId": 1, "url": f"{base}/other.html"})
        other = await call(session, "read_console_messages", {"tabId": 1})
        assert texts(other) == ["other page says hi"], other
        assert other["since"] == "document start"
        net = await call(session, "read_network_requests", {"tabId": 1})
        assert [r["type"] for r in net["requests"]] == ["document"], net


async def test_a_flood_of_messages_stays_bounded(site):
    base, _ = site
    async with browser_session() as session:
        await call(session, "navigate", {"tabId": 1, "url": f"{base}/shop.html"})
        found = await call(session, "find", {"tabId": 1, "query": "Flood the console button"})
        await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": found["matches"][0]["ref"]})
        await call(session, "wait_for_page", {"tabId": 1, "text": "flooded"})
        result = await session.call_tool("read_console_messages", {"tabId": 1, "limit": 500})
        reply = result.structuredContent["value"]
        size = len(json.dumps(reply))
        assert size < 40_000, size
        assert sum(len(c.text) for c in result.content if c.type == "text") < 60_000
        assert reply["matched"] == 500 and reply["dropped"] >= 9_500, {k: reply[k] for k in ("matched", "dropped")}
        listed = texts(reply)
        assert 5 <= len(listed) < 500
        assert listed[-1].startswith("flood 9999 ") and len(listed[-1]) <= 2000, len(listed[-1])
        assert "older messages were dropped" in reply["note"] and "narrow with" in reply["note"], reply["note"]
        # A narrow pattern finds one of the kept ones whole.
        one = await call(session, "read_console_messages", {"tabId": 1, "pattern": "^flood 9876 "})
        assert len(one["messages"]) == 1 and one["matched"] == 1
        # The page keeps working.
        text = await call(session, "get_page_text", {"tabId": 1})
        assert "flooded" in text["text"]


async def test_a_batch_clicks_then_reads_what_the_page_said(site):
    base, seen = site
    async with browser_session() as session:
        await call(session, "navigate", {"tabId": 1, "url": f"{base}/shop.html"})
        found = await call(session, "find", {"tabId": 1, "query": "Buy now button"})
        result = await session.call_tool(
            "browser_batch",
            {
                "actions": [
                    {"name": "read_console_messages", "input": {"tabId": 1, "clear": True}},
                    {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": found["matches"][0]["ref"]}},
                    {"name": "wait_for", "input": {"tabId": 1, "text": "bought 7"}},
                    {"name": "read_console_messages", "input": {"tabId": 1, "onlyErrors": True}},
                    {"name": "read_network_requests", "input": {"tabId": 1, "urlPattern": "/api/", "onlyErrors": True}},
                ]
            },
        )
        data = result.structuredContent
        assert result.isError is False, data
        assert data["status"] == "passed" and data["error_count"] == 0
        errors = data["results"][3]["output"]
        assert sorted(m["text"].split(" at ")[0].split("\n")[0] for m in errors["messages"]) == [
            "Uncaught (in promise) Error: payment declined",
            "Uncaught TypeError: checkout failed",
        ], errors
        failing = data["results"][4]["output"]["requests"]
        assert sorted(r["url"].split("/")[-1] for r in failing) == ["missing?click=1", "missing?load=1"], failing
        assert all(r["status"] == 404 for r in failing)
        assert seen.count("GET /api/missing?click=1 404") >= 1


@pytest.mark.skipif(not firefox_available(), reason="firefox-esr and geckodriver are not installed")
async def test_firefox_core_flow(site):
    base, seen = site
    async with browser_session("firefox") as session:
        tabs = await call(session, "tabs_context", {})
        assert tabs["browser"] == "firefox"
        await call(session, "navigate", {"tabId": 1, "url": f"{base}/shop.html"})
        console = await call(session, "read_console_messages", {"tabId": 1})
        # Firefox has no way to run the hook first: the reply says from when.
        assert console["since"] != "document start" and console["since"].endswith("Z"), console
        assert "capture began" in console["note"] and "earlier messages were not captured" in console["note"]
        # Requests from before capture still come from resource timing.
        net = await call(session, "read_network_requests", {"tabId": 1})
        assert net["requests"][0]["type"] == "document" and net["requests"][0]["status"] == 200, net
        assert find_request(net, "/api/missing?load=1")["status"] == 404
        await click_flow(session, base, seen)
