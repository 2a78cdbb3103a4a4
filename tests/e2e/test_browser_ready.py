"""The browser plugin waits for the page the way a person does (issue 15): clicks by
ref wait until the element is visible, still, enabled and not covered; input lets
the page's deferred handlers run before the next entry; `find` and `read_page` give a
page that is still revealing its content a moment; `wait_for` waits for text, refs,
URLs and the network; web components (slots, shadow trees) and same-origin frames are
part of the tree. Each flow is written as an agent writes it from the tool
descriptions, and each end state is read back from the page with JavaScript.

Pages are served on loopback by this test; headless Chromium through chromedriver
(the Debian packages chromium + chromium-driver), and Firefox for the core flows.
"""

import json
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from test_browser import batch, call, each_browser, js, ref_in

# The `session` fixture: one MCP session per browser for the module.
SESSION = each_browser

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

# A list whose keydown handler defers its work the way frameworks do: React's
# scheduler posts a task (MessageChannel); other renderers wait for a frame.
TODO = """<!doctype html><html><head><title>Todo</title></head><body>
<h1>todos</h1>
<input id="new" placeholder="What needs to be done?" aria-label="New todo">
<ul id="list"></ul>
<script>
const input = document.getElementById('new');
const list = document.getElementById('list');
const defer = location.hash === '#frame' ? (f) => requestAnimationFrame(f)
  : (f) => { const c = new MessageChannel(); c.port1.onmessage = f; c.port2.postMessage(0); };
input.addEventListener('keydown', (e) => {
  if (e.key !== 'Enter') return;
  const text = input.value;
  defer(() => {
    if (!text.trim()) return;
    const li = document.createElement('li');
    li.textContent = text;
    list.appendChild(li);
    input.value = '';
  });
});
</script></body></html>"""

# Content that scripts reveal after the page loaded; a button enabled late; an
# overlay that fades out; a panel that slides in.
LATE = """<!doctype html><html><head><title>Late</title>
<style>
#overlay { position: fixed; inset: 0; background: rgba(0,0,0,.5); transition: opacity .3s; }
#panel { position: absolute; top: 300px; left: 0; animation: slide .6s ease-out; }
@keyframes slide { from { transform: translateX(600px); } to { transform: none; } }
</style></head><body>
<h1>Late page</h1>
<div id="slot"></div>
<button id="go" disabled onclick="this.dataset.n = (+(this.dataset.n || 0) + 1)">Start the job</button>
<div id="overlay"></div>
<div id="panel"><button id="slid" onclick="this.textContent = 'Panel done'">Panel action</button></div>
<p id="net">no data</p>
<script>
setTimeout(() => {
  document.getElementById('slot').innerHTML = '<label>Coupon code <input id="coupon"></label><button id="apply">Apply coupon</button>';
}, 800);
setTimeout(() => { document.getElementById('go').disabled = false; }, 700);
setTimeout(() => {
  const o = document.getElementById('overlay');
  o.style.opacity = '0';
  setTimeout(() => o.remove(), 350);
}, 500);
</script></body></html>"""

# Web components in the shape the big libraries use: the label, the option text
# and the button text are light-DOM content shown through slots.
COMPONENTS = """<!doctype html><html><head><title>Components</title></head><body>
<h1>Order</h1>
<x-button id="buy">Buy now</x-button>
<x-checkbox id="gift">Wrap as a gift</x-checkbox>
<p id="out">nothing</p>
<script>
customElements.define('x-button', class extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: 'open' }).innerHTML =
      '<style>button { padding: 8px 20px; font-size: 16px; }</style><button part="base"><span><slot></slot></span></button>';
    this.shadowRoot.querySelector('button').addEventListener('click', () => {
      document.getElementById('out').textContent = 'bought, gift: ' + document.getElementById('gift').checked;
    });
  }
});
customElements.define('x-checkbox', class extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: 'open' }).innerHTML =
      '<label part="base"><input type="checkbox"> <span part="label"><slot></slot></span></label>';
  }
  get checked() { return this.shadowRoot.querySelector('input').checked; }
});
</script></body></html>"""

FRAMED = """<!doctype html><html><head><title>Framed</title></head><body>
<h1>Outer page</h1>
<p>The form is in a frame below.</p>
<iframe id="f" src="/inner.html" style="margin-top: 40px; width: 600px; height: 300px; border: 4px solid #888"></iframe>
</body></html>"""

INNER = """<!doctype html><html><head><title>Inner</title></head><body>
<h2>Newsletter</h2>
<label for="email">Email address</label> <input id="email" type="email">
<button id="sub" onclick="document.getElementById('msg').textContent = 'subscribed ' + document.getElementById('email').value">Subscribe</button>
<p id="msg"></p>
</body></html>"""

WAITS = """<!doctype html><html><head><title>Waits</title></head><body>
<h1>Report</h1>
<p id="status">Loading report…</p>
<button id="fetch" onclick="go()">Fetch data</button>
<p id="data"></p>
<button onclick="alert('Saved!')">Save</button>
<p>Enter the address where we send the receipt. We never share your email address.</p>
<input aria-label="Email address" id="mail">
<div id="suggest"></div>
<script>
setTimeout(() => { document.getElementById('status').textContent = 'Report ready'; }, 1000);
function go() {
  fetch('/slow?ms=700').then((r) => r.text()).then((t) => { document.getElementById('data').textContent = t; });
}
document.getElementById('suggest').innerHTML = ['Paris', 'Parma', 'Porto']
  .map((c) => '<div class="item" style="cursor: pointer" onclick="document.getElementById(\\'mail\\').value = \\'' + c + '\\'">' + c + '</div>').join('');
</script></body></html>"""

DRAG = """<!doctype html><html><head><title>Drag</title>
<style>.card { width: 120px; height: 40px; background: #cdf; margin: 8px; }
#done { width: 200px; height: 120px; background: #efe; position: absolute; left: 400px; top: 100px; }</style>
</head><body>
<div class="card" id="card" role="button" aria-label="Card A">Card A</div>
<div id="done" role="region" aria-label="Done column">Done</div>
<script>
let dragging = false;
const card = document.getElementById('card');
card.addEventListener('pointerdown', () => { dragging = true; });
document.addEventListener('pointerup', (e) => {
  if (!dragging) return;
  dragging = false;
  const d = document.getElementById('done').getBoundingClientRect();
  if (e.clientX >= d.left && e.clientX <= d.right && e.clientY >= d.top && e.clientY <= d.bottom) {
    document.getElementById('done').appendChild(card);
  }
});
</script></body></html>"""


# Rows with buttons of the same name: a description must say which row.
ROWS = """<!doctype html><html><head><title>Rows</title></head><body>
<input id="search-top" aria-label="Search the shop">
<h1>Cart</h1>
<ul>
<li>Blue shirt <button onclick="document.getElementById('out').textContent = 'removed blue'">Remove</button></li>
<li>Red scarf <button onclick="document.getElementById('out').textContent = 'removed red'">Remove</button></li>
</ul>
<label>Gift note <input id="note"></label>
<label><input type="checkbox" id="wrap"> Wrap it</label>
<p id="out"></p>
<div style="height: 3000px"></div>
<input id="search-foot" aria-label="Search the shop">
</body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("ready")
    pages = {
        "todo.html": TODO, "late.html": LATE, "components.html": COMPONENTS, "framed.html": FRAMED,
        "inner.html": INNER, "waits.html": WAITS, "drag.html": DRAG, "rows.html": ROWS,
    }
    for name, body in pages.items():
        (root / name).write_text(body)
    big = "".join(f'<a href="#a{i}">Endpoint number {i} with a long descriptive name</a>\n' for i in range(3000))
    (root / "big.html").write_text(f"<!doctype html><title>Big</title><body>{big}</body>")

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path.startswith("/slow"):
                ms = int(self.path.split("ms=")[1])
                threading.Event().wait(ms / 1000)
                body = b"rows: 42"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


@pytest.mark.parametrize("defer", ["task", "frame"])
async def test_keystrokes_wait_for_the_deferred_render(session, site, defer):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/todo.html#{defer}"})
    await call(session, "navigate", {"tabId": 1, "url": "reload"})
    box = (await call(session, "find", {"tabId": 1, "query": "new todo"}))["matches"][0]["ref"]
    await batch(session, [
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": box}},
        {"name": "computer", "input": {"tabId": 1, "action": "type", "text": "Buy milk"}},
        {"name": "computer", "input": {"tabId": 1, "action": "key", "text": "Return"}},
        {"name": "computer", "input": {"tabId": 1, "action": "type", "text": "Walk the dog"}},
        {"name": "computer", "input": {"tabId": 1, "action": "key", "text": "Return"}},
    ])
    items = await js(session, "Array.from(document.querySelectorAll('#list li')).map((l) => l.textContent)")
    assert items == ["Buy milk", "Walk the dog"]


async def test_find_right_after_navigate_sees_content_revealed_later(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/late.html"})
    found = await call(session, "find", {"tabId": 1, "query": "coupon code field"})
    assert found["matches"], found
    assert found["matches"][0]["role"] == "textbox" and found["matches"][0]["name"] == "Coupon code"


async def test_clicks_wait_for_enabled_uncovered_and_still_elements(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/late.html"})
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    go, slid = ref_in(tree, '"Start the job"'), ref_in(tree, '"Panel action"')
    # Disabled for 0.7 s, covered by an overlay fading out for 0.85 s, the panel sliding for 0.6 s.
    await batch(session, [
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": go}},
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": slid}},
    ])
    assert await js(session, "document.getElementById('go').dataset.n") == "1"
    assert await js(session, "document.getElementById('slid').textContent") == "Panel done"


async def test_a_disabled_button_that_stays_disabled_fails_saying_so(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/late.html"})
    go = (await call(session, "find", {"tabId": 1, "query": "Start the job button"}))["matches"][0]["ref"]
    await js(session, "document.getElementById('go').setAttribute('aria-disabled', 'true')")
    failed = await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": go}, ok=False)
    error = failed.structuredContent["error"]
    assert "disabled" in error["message"] and "waited" in error["message"], error
    assert error["input_fired"] is False
    assert await js(session, "document.getElementById('go').dataset.n || 'none'") == "none"


async def test_web_components_show_their_slotted_content_and_take_clicks(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/components.html"})
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "all"}))["tree"]
    assert 'button "Buy now"' in tree, tree
    assert 'checkbox "Wrap as a gift"' in tree, tree
    gift = (await call(session, "find", {"tabId": 1, "query": "wrap as a gift checkbox"}))["matches"][0]
    assert gift["role"] == "checkbox", gift
    buy = ref_in(tree, 'button "Buy now"')
    await batch(session, [
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": gift["ref"]}},
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": buy}},
    ])
    assert await js(session, "document.getElementById('out').textContent") == "bought, gift: true"


async def test_same_origin_frames_are_read_found_and_acted_in(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/framed.html"})
    tree = (await call(session, "read_page", {"tabId": 1}))["tree"]
    assert 'heading "Newsletter"' in tree and 'button "Subscribe"' in tree, tree
    email = (await call(session, "find", {"tabId": 1, "query": "email address field"}))["matches"][0]
    assert email["name"] == "Email address" and email.get("frame"), email
    sub = (await call(session, "find", {"tabId": 1, "query": "subscribe button"}))["matches"][0]["ref"]
    await batch(session, [
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": email["ref"]}},
        {"name": "computer", "input": {"tabId": 1, "action": "type", "text": "ada@example.org"}},
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": sub}},
    ])
    msg = await js(session, "document.getElementById('f').contentDocument.getElementById('msg').textContent")
    assert msg == "subscribed ada@example.org"


async def test_wait_for_in_a_batch(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/waits.html"})
    fetch = (await call(session, "find", {"tabId": 1, "query": "fetch data button"}))["matches"][0]["ref"]
    data = await batch(session, [
        {"name": "wait_for", "input": {"tabId": 1, "text": "Report ready"}},
        {"name": "wait_for", "input": {"tabId": 1, "text_gone": "Loading report"}},
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": fetch}},
        {"name": "wait_for", "input": {"tabId": 1, "condition": "network_idle", "timeout_ms": 5000}},
        {"name": "get_page_text", "input": {"tabId": 1}},
    ])
    assert "rows: 42" in json.dumps(data)
    missing = await batch(session, [
        {"name": "wait_for", "input": {"tabId": 1, "text": "Never shown", "timeout_ms": 300}},
    ], ok=False)
    assert "Never shown" in json.dumps(missing) and "timeout" in json.dumps(missing)


async def test_reports_a_dialog_the_click_opened(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/waits.html"})
    save = (await call(session, "find", {"tabId": 1, "query": "save button"}))["matches"][0]["ref"]
    clicked = await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": save})
    assert clicked["dialog_opened"]["text"] == "Saved!", clicked
    await call(session, "dialog", {"tabId": 1, "action": "accept"})


async def test_find_ranks_the_labelled_field_first_and_names_text_matches(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/waits.html"})
    found = await call(session, "find", {"tabId": 1, "query": "email address"})
    assert found["matches"][0]["role"] == "textbox", found["matches"][:3]
    porto = await call(session, "find", {"tabId": 1, "query": "Porto"})
    top = porto["matches"][0]
    assert top.get("text") == "Porto" or top.get("name") == "Porto", top
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": top["ref"]})
    assert await js(session, "document.getElementById('mail').value") == "Porto"


async def test_bad_refs_and_missing_points_get_plain_errors(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/waits.html"})
    bad = await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": "Save"}, ok=False)
    error = bad.structuredContent["error"]
    assert "is not a ref" in error["message"] and error["code"] == "invalid-input", error
    missing = await call(session, "computer", {"tabId": 1, "action": "left_click"}, ok=False)
    text = json.dumps(missing.structuredContent)
    assert "coordinate" in text and "anyOf" not in text, text


async def test_drag_by_ref(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/drag.html"})
    card = (await call(session, "find", {"tabId": 1, "query": "Card A"}))["matches"][0]["ref"]
    done = (await call(session, "find", {"tabId": 1, "query": "Done column"}))["matches"][0]["ref"]
    await call(session, "computer", {"tabId": 1, "action": "left_click_drag", "start_ref": card, "ref": done})
    assert await js(session, "document.getElementById('card').parentElement.id") == "done"


async def test_the_interactive_filter_is_capped(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/big.html"})
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    assert len(tree) < 45_000 and "more lines not shown" in tree, len(tree)


def by(action, find, **more):
    return {"name": "computer", "input": {"tabId": 1, "action": action, "find": find, **more}}


async def test_one_batch_acts_by_description_on_content_revealed_later(session, site):
    # Written before looking: the coupon field appears 0.8 s after load, the button
    # is enabled at 0.7 s and covered by an overlay until 0.85 s.
    data = await batch(session, [
        {"name": "navigate", "input": {"tabId": 1, "url": f"{site}/late.html"}},
        by("type", "Coupon code field", text="SPRING"),
        by("left_click", "Start the job button"),
        {"name": "form_input", "input": {"tabId": 1, "find": "Coupon code", "value": "SUMMER"}},
    ])
    typed, clicked, filled = (r["output"] for r in data["results"][1:])
    assert typed["element"].startswith('textbox "Coupon code"') and typed["ref"].startswith("ref_"), typed
    assert clicked["element"].startswith('button "Start the job"'), clicked
    assert filled["ref"] == typed["ref"], (filled, typed)
    assert await js(session, "document.getElementById('coupon').value") == "SUMMER"
    assert await js(session, "document.getElementById('go').dataset.n") == "1"


async def test_a_description_that_fits_several_elements_acts_on_none(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/rows.html"})
    failed = await call(session, "computer", {"tabId": 1, "action": "left_click", "find": "Remove button"}, ok=False)
    error = failed.structuredContent["error"]
    assert error["code"] == "invalid-input" and error["details"]["field"] == "find", error
    assert error["message"].count('button "Remove"') == 2 and "nothing was done" in error["message"], error
    assert await js(session, "document.getElementById('out').textContent") == ""
    # Words that tell them apart: the row's text.
    await call(session, "computer", {"tabId": 1, "action": "left_click", "find": "Red scarf remove button"})
    assert await js(session, "document.getElementById('out').textContent") == "removed red"


async def test_form_input_and_checkboxes_by_description(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/rows.html"})
    await batch(session, [
        {"name": "form_input", "input": {"tabId": 1, "find": "Gift note field", "value": "Happy birthday"}},
        {"name": "form_input", "input": {"tabId": 1, "find": "Wrap it checkbox", "value": True}},
    ])
    assert await js(session, "[document.getElementById('note').value, document.getElementById('wrap').checked]") == [
        "Happy birthday", True]


async def test_a_description_that_matches_nothing_waits_then_says_so(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/rows.html"})
    failed = await call(session, "computer", {"tabId": 1, "action": "left_click", "find": "Checkout button"}, ok=False)
    error = failed.structuredContent["error"]
    assert error["code"] == "not-found" and "matches every word" in error["message"], error
    assert "waited" in error["message"] and error["input_fired"] is False, error
    both = await call(session, "computer", {"tabId": 1, "action": "left_click", "find": "Remove", "ref": "ref_1"}, ok=False)
    assert "not both" in both.structuredContent["error"]["message"], both.structuredContent


async def test_of_equal_matches_the_one_on_screen_is_meant(session, site):
    # The same search box at the head and the foot of the page: only the head's is in view.
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/rows.html"})
    await call(session, "computer", {"tabId": 1, "action": "type", "find": "Search the shop field", "text": "scarf"})
    assert await js(session, "[document.getElementById('search-top').value, document.getElementById('search-foot').value]") == [
        "scarf", ""]
