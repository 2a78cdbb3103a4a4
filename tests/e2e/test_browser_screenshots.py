"""Screenshots of one element and of the whole page (issue 15), as an agent asks
for them from the `computer` description: `screenshot` with a ref (from find or
read_page) or with `full_page: true`. Each image is decoded here (PNG, with zlib)
and its size and colours are checked against the page that drew it.

Pages are served on loopback by this test; headless Chromium through chromedriver
and Firefox through geckodriver. The host's gate keeping the drivers' other vendor
endpoints shut is tested in Rust (host/runtime/src/capabilities/http.rs, webdriver/vendor.rs).
"""

import base64
import struct
import threading
import zlib
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from test_browser import call, each_browser, js

# The `session` fixture: one MCP session per browser for the module.
SESSION = each_browser

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

RED, GREEN, BLUE, YELLOW = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0)

# 3,000 px of coloured bands, and a 120 x 40 red button far below the fold.
BANDS = """<!doctype html><html><head><title>Bands</title><style>
body { margin: 0; } .band { height: 1000px; }
#send { position: absolute; top: 2600px; left: 40px; width: 120px; height: 40px;
        background: rgb(255, 0, 0); border: 0; padding: 0; }
</style></head><body>
<div class="band" style="background: rgb(255, 0, 0)"></div>
<div class="band" style="background: rgb(0, 255, 0)"></div>
<div class="band" style="background: rgb(0, 0, 255)"></div>
<button id="send" aria-label="Send report" onclick="this.dataset.n = 1"></button>
</body></html>"""

# A web component whose button lives in its open shadow root.
SHADOW = """<!doctype html><html><head><title>Shadow</title></head><body style="margin: 0">
<h1>Widgets</h1>
<x-pay></x-pay>
<script>
customElements.define('x-pay', class extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: 'open' }).innerHTML =
      '<button style="width: 100px; height: 30px; background: rgb(0, 255, 0); border: 0; padding: 0" aria-label="Pay now"></button>';
  }
});
</script></body></html>"""

# A same-origin frame holding a blue button.
FRAMED = """<!doctype html><html><head><title>Framed</title></head><body style="margin: 0">
<h1>Outer</h1>
<iframe src="/inner.html" style="margin-top: 900px; width: 400px; height: 200px; border: 0"></iframe>
</body></html>"""

INNER = """<!doctype html><html><body style="margin: 0"><div style="height: 50px"></div>
<button aria-label="Subscribe" style="width: 120px; height: 40px; background: rgb(0, 0, 255); border: 0; padding: 0"></button>
</body></html>"""

# 40,000 px tall: more than one capture holds.
TALL = """<!doctype html><html><head><title>Tall</title></head><body style="margin: 0">
<div style="height: 20000px; background: rgb(255, 255, 0)"></div>
<div style="height: 20000px; background: rgb(0, 0, 255)"></div>
</body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("shots")
    for name, body in {
        "bands.html": BANDS, "shadow.html": SHADOW, "framed.html": FRAMED, "inner.html": INNER, "tall.html": TALL,
    }.items():
        (root / name).write_text(body)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


class Png:
    """A decoded 8-bit RGB(A), non-interlaced PNG: its size and pixels."""

    def __init__(self, data):
        assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
        pos, chunks = 8, []
        while pos < len(data):
            (n,) = struct.unpack(">I", data[pos:pos + 4])
            kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
            pos += 12 + n
            if kind == b"IHDR":
                self.width, self.height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
                assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            elif kind == b"IDAT":
                chunks.append(body)
        self.bpp = 3 if color == 2 else 4
        self.raw = zlib.decompress(b"".join(chunks))
        self.prefixes = {}

    def pixel(self, x, y):
        """The RGB of (x, y). Every PNG filter reads only bytes to the left and
        above, so rows are unfiltered only as far as column x, and only once."""
        bpp, stride, n = self.bpp, self.width * self.bpp, (x + 1) * self.bpp
        rows = self.prefixes.setdefault(n, [])
        prev = rows[-1] if rows else bytearray(n)
        for r in range(len(rows), y + 1):
            at = r * (stride + 1)
            kind, line = self.raw[at], bytearray(self.raw[at + 1:at + 1 + n])
            for i in range(n):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                if kind == 1:
                    line[i] = (line[i] + a) & 255
                elif kind == 2:
                    line[i] = (line[i] + b) & 255
                elif kind == 3:
                    line[i] = (line[i] + (a + b) // 2) & 255
                elif kind == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            rows.append(line)
            prev = line
        return tuple(rows[y][x * bpp:x * bpp + 3])


def near(colour, want, slack=8):
    return all(abs(a - b) <= slack for a, b in zip(colour, want))


async def shoot(session, args):
    """`computer` screenshot: its value and its one decoded image."""
    result = await session.call_tool("computer", {"tabId": 1, "action": "screenshot", **args})
    assert result.isError is False, result.structuredContent
    images = [c for c in result.content if c.type == "image"]
    assert len(images) == 1 and images[0].mimeType == "image/png"
    png = Png(base64.b64decode(images[0].data))
    value = result.structuredContent["value"]
    assert (value["width"], value["height"]) == (png.width, png.height), value
    return value, png


async def test_full_page_has_the_page_height_and_its_bands(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/bands.html"})
    dpr = await js(session, "window.devicePixelRatio")
    scroll = await js(session, "(window.scrollTo(0, 700), window.scrollY)")
    width = await js(session, "document.documentElement.scrollWidth")
    value, png = await shoot(session, {"full_page": True})
    assert value["full_page"] is True and value["clipped"] is False, value
    assert png.height == round(3000 * dpr) and png.width == round(width * dpr), value
    for y, colour in [(10, RED), (990, RED), (1010, GREEN), (1990, GREEN), (2010, BLUE), (2990, BLUE)]:
        assert near(png.pixel(20, int(y * dpr)), colour), (y, png.pixel(20, int(y * dpr)))
    assert await js(session, "window.scrollY") == scroll, "the page stays where it was"
    # The viewport screenshot is still the viewport, in the shape it had.
    view, small = await shoot(session, {})
    assert set(view) == {"action", "tabId", "width", "height"} and small.height < png.height


async def test_element_screenshot_is_just_that_element(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/bands.html"})
    await js(session, "(window.scrollTo(0, 0), 0)")
    found = await call(session, "find", {"tabId": 1, "query": "Send report button"})
    ref = found["matches"][0]["ref"]
    dpr = await js(session, "window.devicePixelRatio")
    value, png = await shoot(session, {"ref": ref})
    assert value["ref"] == ref and "Send report" in value["element"] and value["clipped"] is False, value
    assert abs(png.width - 120 * dpr) <= dpr and abs(png.height - 40 * dpr) <= dpr, value
    for x, y in [(2, 2), (png.width // 2, png.height // 2), (png.width - 3, png.height - 3)]:
        assert near(png.pixel(x, y), RED), (x, y, png.pixel(x, y))
    # Scrolled into view first, and not pressed.
    assert await js(session, "(() => { const r = document.getElementById('send').getBoundingClientRect(); "
                             "return r.top >= 0 && r.bottom <= innerHeight; })()") is True
    assert await js(session, "document.getElementById('send').dataset.n || 'none'") == "none"
    # By description too, as the other actions take it.
    value, png = await shoot(session, {"find": "Send report button"})
    assert value["ref"] == ref and abs(png.width - 120 * dpr) <= dpr


async def test_elements_in_shadow_roots_and_frames(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/shadow.html"})
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    line = next(line for line in tree.splitlines() if '"Pay now"' in line)
    ref = line.split("[")[1].split("]")[0]
    dpr = await js(session, "window.devicePixelRatio")
    value, png = await shoot(session, {"ref": ref})
    assert abs(png.width - 100 * dpr) <= dpr and abs(png.height - 30 * dpr) <= dpr, value
    assert near(png.pixel(png.width // 2, png.height // 2), GREEN), png.pixel(png.width // 2, png.height // 2)

    await call(session, "navigate", {"tabId": 1, "url": f"{site}/framed.html"})
    found = await call(session, "find", {"tabId": 1, "query": "Subscribe button"})
    match = found["matches"][0]
    assert match.get("frame"), match
    value, png = await shoot(session, {"ref": match["ref"]})
    assert value["frame"] == match["frame"], value
    assert abs(png.width - 120 * dpr) <= dpr and abs(png.height - 40 * dpr) <= dpr, value
    assert near(png.pixel(png.width // 2, png.height // 2), BLUE), png.pixel(png.width // 2, png.height // 2)


async def test_bad_refs_and_mixed_requests_fail_clearly(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/bands.html"})
    gone = await call(session, "computer", {"tabId": 1, "action": "screenshot", "ref": "ref_987654"}, ok=False)
    error = gone.structuredContent["error"]
    assert error["code"] == "world-moved" and "read_page or find" in error["message"], error
    named = await call(session, "computer", {"tabId": 1, "action": "screenshot", "ref": "Send report"}, ok=False)
    error = named.structuredContent["error"]
    assert error["code"] == "invalid-input" and "is not a ref" in error["message"], error
    found = await call(session, "find", {"tabId": 1, "query": "Send report button"})
    both = await call(session, "computer", {
        "tabId": 1, "action": "screenshot", "ref": found["matches"][0]["ref"], "full_page": True,
    }, ok=False)
    error = both.structuredContent["error"]
    assert error["code"] == "invalid-input" and error["details"]["field"] == "full_page", error
    assert not [c for c in both.content if c.type == "image"]


async def test_a_very_tall_page_is_clipped_and_says_so(session, site):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/tall.html"})
    inner = await js(session, "[window.outerWidth, window.outerHeight, window.scrollY]")
    value, png = await shoot(session, {"full_page": True})
    assert value["clipped"] is True and value["whole"][1] == 40000 and "40000" in value["note"], value
    # At most 16,384 device px (Firefox keeps its window a little under that).
    assert 15000 <= png.height <= 16384, value
    assert near(png.pixel(10, 100), YELLOW) and near(png.pixel(10, png.height - 10), YELLOW)
    assert await js(session, "[window.outerWidth, window.outerHeight, window.scrollY]") == inner, \
        "the window and the scroll are as they were"
    assert await js(session, "document.querySelectorAll('stephost-shot').length") == 0


async def test_images_come_back_inline_in_browser_batch(session, site):
    result = await session.call_tool("browser_batch", {"actions": [
        {"name": "navigate", "input": {"tabId": 1, "url": f"{site}/bands.html"}},
        {"name": "computer", "input": {"tabId": 1, "action": "screenshot", "full_page": True}},
        {"name": "computer", "input": {"tabId": 1, "action": "screenshot", "find": "Send report button"}},
    ]})
    data = result.structuredContent
    assert result.isError is False, data
    assert data["results"][1]["output"]["full_page"] is True
    assert data["results"][2]["output"]["element"].startswith("button")
    kinds = [(c.type, c.text.splitlines()[-1] if c.type == "text" else None) for c in result.content]
    images = []
    for index in (1, 2):
        at = kinds.index(("text", f"[actions[{index}] computer image]"))
        assert kinds[at + 1][0] == "image", kinds
        images.append(Png(base64.b64decode(result.content[at + 1].data)))
    assert images[0].height > images[1].height and images[1].width < images[0].width
