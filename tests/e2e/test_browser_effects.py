"""Effects checked and settling that covers app work (issue 40, items 5 and 6).

`form_input` and typing read the value back once the page settled: a value the app
reverted fails world-moved naming what was set and what the app shows, while the
forms a field legitimately makes of a value (a number written another way, an input
mask, a select's label) pass with the value the field holds. Sliders are set by keys
after the page gives them the focus, as a person sets them, even under a transparent
overlay. After a click the plugin waits for the requests it started and the DOM they
change, and for a download it started, so the next step reads the result without a
wait of its own.

Pages are served on loopback by this test; headless Chromium, and Firefox when
installed (scripts/test.sh installs it).
"""

import base64
import hashlib
import threading
import time
from http.server import SimpleHTTPRequestHandler

import pytest

from conftest import send_body, serve_folder
from test_browser import batch, call, each_browser, js

# The `session` fixture: one MCP session per browser for the module.
SESSION = each_browser

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

# A data app's slider: it commits on key or pointer release, and renders the input
# from its own state after a change, so a value written into the input goes back.
SLIDER = """<!doctype html><html><head><title>Slider</title>
<style>.wrap { position: relative; width: 300px; margin-top: 30px; } .glass { position: absolute; inset: -10px; z-index: 5; }
#aria { width: 200px; height: 20px; background: #ddd; }
.track { position: relative; width: 200px; height: 16px; background: #ccc; }
.thumb { position: absolute; left: 96px; width: 8px; height: 16px; background: #333; } </style></head><body>
<h1>Settings</h1>
<div class="wrap"><label for="thr">Threshold</label>
<input type="range" id="thr" min="0" max="100" step="5" value="20"></div>
<p id="committed">Committed 20</p>
<div class="wrap"><label for="covered">Opacity</label>
<input type="range" id="covered" min="0" max="1" step="0.1" value="0.5"><div class="glass"></div></div>
<div class="wrap"><span id="vol-label">Volume</span>
<div id="aria" role="slider" tabindex="0" aria-labelledby="vol-label" aria-valuemin="0" aria-valuemax="40" aria-valuenow="10"></div>
<div class="glass"></div></div>
<div class="wrap"><span id="bal-label">Balance</span>
<div class="track"><div id="bal" class="thumb" role="slider" aria-labelledby="bal-label" aria-valuemin="0" aria-valuemax="100" aria-valuenow="50"></div></div></div>
<div class="wrap"><span id="pan-label">Pan</span>
<div class="track"><div class="thumb" role="slider" aria-labelledby="pan-label" aria-valuemin="0" aria-valuemax="100" aria-valuenow="50"></div></div>
<div class="glass"></div></div>
<script>
// Sliders that take no focus: a press on the track moves the thumb there (steps of 10).
for (const track of document.querySelectorAll('.track')) {
  track.addEventListener('pointerdown', (e) => {
    const b = track.getBoundingClientRect();
    const v = Math.round((e.clientX - b.left) / b.width * 10) * 10;
    track.firstElementChild.setAttribute('aria-valuenow', String(v));
    track.firstElementChild.style.left = (v * 2 - 4) + 'px';
  });
}
let committed = 20;
const s = document.getElementById('thr');
const commit = () => { committed = Number(s.value); document.getElementById('committed').textContent = 'Committed ' + committed; };
s.addEventListener('pointerup', commit);
s.addEventListener('keyup', commit);
s.addEventListener('change', () => setTimeout(() => { s.value = committed; }, 150));
// An ARIA slider in steps of 2, keys only.
const v = document.getElementById('aria');
v.addEventListener('keydown', (e) => {
  let n = Number(v.getAttribute('aria-valuenow'));
  if (e.key === 'ArrowRight' || e.key === 'ArrowUp') n += 2;
  else if (e.key === 'ArrowLeft' || e.key === 'ArrowDown') n -= 2;
  else if (e.key === 'Home') n = 0;
  else if (e.key === 'End') n = 40;
  else return;
  e.preventDefault();
  v.setAttribute('aria-valuenow', String(Math.max(0, Math.min(40, n))));
});
</script></body></html>"""

# Fields whose app rewrites what it gets: a controlled input that takes digits only
# and renders from its state on the next frame (React's shape); a price the app
# normalises; a phone number through a mask; a plan picked by its label; a date.
FIELDS = """<!doctype html><html><head><title>Fields</title></head><body>
<label>Age <input id="age" value="42"></label>
<label>Price <input id="price" type="number" step="0.01"></label>
<label>Phone <input id="phone"></label>
<label>Plan <select id="plan"><option value="free">Free</option><option value="pro">Pro plan</option></select></label>
<label>Start <input id="start" type="date"></label>
<label>Cups <input id="cups" value="5" readonly></label>
<script>
let age = '42';
const a = document.getElementById('age');
a.addEventListener('input', () => {
  if (/^[0-9]*$/.test(a.value)) age = a.value;
  requestAnimationFrame(() => { a.value = age; });
});
const p = document.getElementById('price');
p.addEventListener('change', () => { if (p.value !== '') p.value = String(Number(p.value)); });
const ph = document.getElementById('phone');
ph.addEventListener('input', () => {
  const d = ph.value.replace(/[^0-9]/g, '').slice(0, 10);
  ph.value = d.length > 6 ? '(' + d.slice(0, 3) + ') ' + d.slice(3, 6) + '-' + d.slice(6) : d;
});
</script></body></html>"""

# Work a click starts: a request that answers after 800 ms and is then rendered; a
# download that starts 300 ms after the click, by a link the page makes, or by
# moving to an attachment.
WORK = """<!doctype html><html><head><title>Work</title></head><body>
<button id="load" onclick="load()">Load report</button>
<button onclick="later(() => { const l = document.createElement('a'); l.href = '/data.bin'; l.download = 'data.bin'; document.body.appendChild(l); l.click(); })">Export data</button>
<button onclick="later(() => { location.href = '/report'; })">Export report</button>
<button id="nothing">Does nothing</button>
<div id="out"></div>
<script>
function later(f) { setTimeout(f, 300); }
async function load() {
  const r = await fetch('/slow?ms=800');
  const text = await r.text();
  // The app's scheduler renders a few short ticks later (each too short to be
  // counted as a pending timer): only the quiet window after the request ended
  // covers this.
  for (let i = 0; i < 6; i++) await new Promise((ok) => setTimeout(ok, 5));
  const p = document.createElement('p');
  p.id = 'result';
  p.textContent = text;
  document.getElementById('out').appendChild(p);
}
</script></body></html>"""

# A websocket app (a notebook's kernel, a data app's rerun): the click sends a
# message, the server answers 600 ms later, and the page renders the answer.
SOCKET = """<!doctype html><html><head><title>Socket</title></head><body>
<button onclick="ws.send('run')">Run cell</button>
<pre id="cell"></pre>
<script>
const ws = new WebSocket('ws://' + location.host + '/ws');
ws.onmessage = (e) => { setTimeout(() => { document.getElementById('cell').textContent = e.data; }, 5); };
ws.onopen = () => { document.title = 'Socket open'; };
</script></body></html>"""

DATA = b"\x00\x01stephost data\xff" * 64
REPORT = b"a,b\n1,2\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("effects")
    for name, body in {"slider.html": SLIDER, "fields.html": FIELDS, "work.html": WORK, "socket.html": SOCKET}.items():
        (root / name).write_text(body)

    class Handler(SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def socket(self):
            """A minimal websocket (RFC 6455): each text message is answered
            600 ms later with "Out[1]: 42"."""
            key = self.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", base64.b64encode(hashlib.sha1(key.encode()).digest()).decode())
            self.end_headers()
            self.wfile.flush()
            self.close_connection = True
            while True:
                head = self.rfile.read(2)
                if len(head) < 2 or head[0] & 0x0F == 0x8:
                    return
                length = head[1] & 0x7F
                if length == 126:
                    length = int.from_bytes(self.rfile.read(2), "big")
                elif length == 127:
                    length = int.from_bytes(self.rfile.read(8), "big")
                self.rfile.read(4 + length)
                threading.Event().wait(0.6)
                reply = b"Out[1]: 42"
                self.wfile.write(bytes([0x81, len(reply)]) + reply)
                self.wfile.flush()

        send = send_body

        def do_GET(self):
            if self.path == "/ws":
                self.socket()
            elif self.path.startswith("/slow"):
                threading.Event().wait(int(self.path.split("ms=")[1]) / 1000)
                self.send(200, b"rows: 42", [("Content-Type", "text/plain")])
            elif self.path == "/data.bin":
                self.send(200, DATA, [("Content-Type", "application/octet-stream")])
            elif self.path == "/report":
                self.send(200, REPORT, [("Content-Type", "text/csv"), ("Content-Disposition", 'attachment; filename="report.csv"')])
            else:
                super().do_GET()

    with serve_folder(root, Handler) as base:
        yield base


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


async def failure(session, tool, args):
    """The error of a call that must fail."""
    result = await call(session, tool, args, ok=False)
    assert result.isError is True, result.structuredContent
    return result.structuredContent["error"]


async def test_a_slider_that_commits_on_release_is_set_by_keys(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/slider.html"})
    done = await call(session, "form_input", {"tabId": 1, "find": "Threshold slider", "value": 35})
    assert done["value"] == "35" and done["set_by"] == "keys", done
    # The app's own state took it, and still holds it after its re-render.
    assert await js(session, "document.getElementById('committed').textContent") == "Committed 35"
    assert await js(session, "document.getElementById('thr').value") == "35"
    # The ends, and a value off the step (the input snaps it; the reported value is what it holds).
    done = await call(session, "form_input", {"tabId": 1, "find": "Threshold slider", "value": "100"})
    assert done["value"] == "100", done
    done = await call(session, "form_input", {"tabId": 1, "find": "Threshold slider", "value": 0})
    assert done["value"] == "0", done
    assert await js(session, "document.getElementById('committed').textContent") == "Committed 0"
    error = await failure(session, "form_input", {"tabId": 1, "find": "Threshold slider", "value": 250})
    assert error["code"] == "invalid-input" and "goes from 0 to 100" in error["message"], error


async def test_sliders_under_a_transparent_overlay_are_set(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/slider.html"})
    # A click at its centre would hit the overlay; focus and keys do not.
    done = await call(session, "form_input", {"tabId": 1, "find": "Opacity slider", "value": 0.8})
    assert float(done["value"]) == pytest.approx(0.8) and done["set_by"] == "keys", done
    assert float(await js(session, "document.getElementById('covered').value")) == pytest.approx(0.8)
    # An ARIA slider: its step (2) is measured from one key.
    done = await call(session, "form_input", {"tabId": 1, "find": "Volume slider", "value": 16})
    assert done["set_by"] == "keys", done
    assert await js(session, "document.getElementById('aria').getAttribute('aria-valuenow')") == "16"
    # A value between its steps cannot be held: said, with what it holds.
    error = await failure(session, "form_input", {"tabId": 1, "find": "Volume slider", "value": 7})
    assert error["code"] == "world-moved" and "did not keep 7" in error["message"], error
    assert "steps of 2" in error["message"], error


async def test_a_slider_that_takes_no_focus_is_pressed_on_its_track(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/slider.html"})
    done = await call(session, "form_input", {"tabId": 1, "find": "Balance slider", "value": 70})
    assert done["set_by"] == "pointer", done
    assert await js(session, "document.getElementById('bal').getAttribute('aria-valuenow')") == "70"
    # Neither route works under an overlay: refused, saying which were tried and why.
    error = await failure(session, "form_input", {"tabId": 1, "find": "Pan slider", "value": 30})
    assert "did not take the keyboard focus" in error["message"], error
    assert "would land on" in error["message"] and "nothing was changed" in error["message"], error
    assert not error["input_fired"], error


async def test_a_value_the_app_reverts_fails_naming_both(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/fields.html"})
    error = await failure(session, "form_input", {"tabId": 1, "find": "Age field", "value": "abc"})
    assert error["code"] == "world-moved", error
    assert 'did not keep "abc"' in error["message"] and 'it shows "42"' in error["message"], error
    done = await call(session, "form_input", {"tabId": 1, "find": "Age field", "value": "57"})
    assert done["value"] == "57", done
    # Typed keys the app refuses: the same, for computer type.
    field = (await call(session, "find", {"tabId": 1, "query": "Age field"}))["matches"][0]["ref"]
    error = await failure(session, "computer", {"tabId": 1, "action": "type", "ref": field, "text": "xyz"})
    assert error["code"] == "world-moved" and "it shows \"57\"" in error["message"], error
    typed = await call(session, "computer", {"tabId": 1, "action": "type", "ref": field, "text": "1"})
    assert typed["value"] in ("571", "157"), typed


async def test_what_a_field_legitimately_makes_of_a_value_passes(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/fields.html"})
    price = await call(session, "form_input", {"tabId": 1, "find": "Price field", "value": "1.50"})
    assert price["value"] == "1.5", price
    phone = await call(session, "form_input", {"tabId": 1, "find": "Phone field", "value": "5551234567"})
    assert phone["value"] == "(555) 123-4567", phone
    plan = await call(session, "form_input", {"tabId": 1, "find": "Plan", "value": "Pro plan"})
    assert plan["value"] == "Pro plan", plan
    start = await call(session, "form_input", {"tabId": 1, "find": "Start", "value": "2024-12-31"})
    assert start["value"] == "2024-12-31", start
    # A value the field's type cannot hold is refused before anything changes.
    error = await failure(session, "form_input", {"tabId": 1, "find": "Start", "value": "12/31/2024"})
    assert error["code"] == "invalid-input" and "yyyy-mm-dd" in error["message"], error
    assert await js(session, "document.getElementById('start').value") == "2024-12-31"


async def test_a_click_answers_once_the_request_it_started_is_rendered(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/work.html"})
    started = time.monotonic()
    result = await batch(session, [
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "find": "Load report button"}},
        {"name": "javascript_tool", "input": {"tabId": 1, "text": "(document.getElementById('result') || {}).textContent || 'missing'"}},
    ])
    took = time.monotonic() - started
    assert result["results"][1]["output"]["result"] == "rows: 42", result
    assert took >= 0.8, took


async def test_a_click_answers_once_the_websocket_reply_is_rendered(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/socket.html"})
    assert await js(session, "new Promise((ok) => { const t = () => document.title === 'Socket open' ? ok(true) : setTimeout(t, 20); t(); })")
    result = await batch(session, [
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "find": "Run cell button"}},
        {"name": "javascript_tool", "input": {"tabId": 1, "text": "document.getElementById('cell').textContent || 'empty'"}},
    ])
    assert result["results"][1]["output"]["result"] == "Out[1]: 42", result


@pytest.mark.parametrize("button", ["Export data button", "Export report button"])
async def test_a_click_that_starts_a_download_later_reports_it(session, site, button):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/work.html"})
    clicked = await call(session, "computer", {"tabId": 1, "action": "left_click", "find": button})
    assert "downloads" in clicked, clicked
    [entry] = clicked["downloads"]
    expected = {"Export data button": ("data.bin", DATA), "Export report button": ("report.csv", REPORT)}[button]
    assert entry["file"] == expected[0] and entry["bytes"] == len(expected[1]), entry


async def test_a_click_that_starts_nothing_stays_fast(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/work.html"})
    button = (await call(session, "find", {"tabId": 1, "query": "Does nothing button"}))["matches"][0]["ref"]
    took = []
    for _ in range(5):
        started = time.monotonic()
        await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": button})
        took.append(time.monotonic() - started)
    # Generous: a loaded machine; the point is that no settle wait (100 ms and up) runs.
    assert sorted(took)[2] < 0.5, took


async def test_a_read_only_field_is_refused_and_keeps_its_value(session, site):
    # A widget's hidden input (a slider library's) is read-only: the page sets it.
    # Writing it would report a value the app never took.
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/fields.html"})
    error = await failure(session, "form_input", {"tabId": 1, "find": "Cups field", "value": "12"})
    assert error["code"] == "invalid-input" and "read-only" in error["message"], error
    assert await js(session, "document.getElementById('cups').value") == "5"
