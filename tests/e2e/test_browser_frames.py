"""Cross-origin frames are part of the page (issue 15): `read_page` lists a frame of
another origin's content under its `iframe` line, `find` searches it, and refs inside
it work for clicks, typing, `form_input`, scrolling and `wait_for_page`, also one
cross-origin frame inside another. The plugin enters such frames with WebDriver frame
switching; each flow is written as an agent writes it from the tool descriptions,
and each end state is read back independently: the frame posts what it did to the
top page, which records it where `javascript_tool` (top document) can read it.

Two loopback origins served by this test: the top page on 127.0.0.1:A, the form on
localhost:B (another site, so Chromium and Firefox run it in its own process), a
nested frame on 127.0.0.1:B. Chromium, and Firefox when installed.
"""

import json

import pytest

from conftest import serve_folder
from test_browser import batch, call, each_browser, js, ref_in

# The `session` fixture: one MCP session per browser for the module.
SESSION = each_browser

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

# The top page: a button of its own, then, below the fold, the payment form of
# another origin. Messages the frames post are recorded in #log.
TOP = """<!doctype html><html><head><title>Shop</title></head><body>
<h1>Checkout</h1>
<button id="note" onclick="this.textContent = 'Note added'">Add a note</button>
<p id="log">no message</p>
<div style="height: 900px"></div>
<iframe id="pay" src="{form}" title="Payment" style="width: 700px; height: 520px; border: 6px solid #888; padding: 4px"></iframe>
<script>
addEventListener('message', (e) => {{
  const log = document.getElementById('log');
  log.textContent = log.textContent === 'no message' ? e.data : log.textContent + ' | ' + e.data;
}});
</script></body></html>"""

# The form in the frame; its button writes the result into the frame's DOM and
# posts it to the top page. It holds a frame of a third origin.
FORM = """<!doctype html><html><head><title>Pay</title></head><body>
<h2>Payment details</h2>
<label for="email">Email</label> <input id="email" type="email">
<label for="plan">Plan</label> <select id="plan"><option>Basic</option><option>Pro</option></select>
<label><input type="checkbox" id="terms"> I accept the terms</label>
<button id="paybtn" onclick="pay()">Pay now</button>
<p id="result"></p>
<iframe id="inner" src="{nested}" style="width: 500px; height: 120px; border: 0"></iframe>
<script>
function pay() {{
  const r = 'paid ' + document.getElementById('email').value + ' ' + document.getElementById('plan').value +
    ' terms=' + document.getElementById('terms').checked;
  document.getElementById('result').textContent = r;
  parent.postMessage(r, '*');
}}
</script></body></html>"""

NESTED = """<!doctype html><html><head><title>Code</title></head><body style="margin: 0">
<input aria-label="Security code" id="code">
<button id="confirm" onclick="this.textContent = 'Confirmed'; top.postMessage('confirmed ' + document.getElementById('code').value, '*')">Confirm code</button>
</body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("frames")
    # Two servers of one folder: the frames come from another origin (port).
    with serve_folder(root) as a, serve_folder(root) as b:
        (root / "nested.html").write_text(NESTED)
        (root / "form.html").write_text(FORM.format(nested=f"{b}/nested.html"))
        (root / "top.html").write_text(TOP.format(form=f"{b.replace('127.0.0.1', 'localhost')}/form.html"))
        yield a


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


async def open_shop(session, site):
    # The page's load waits for its frames.
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/top.html"})


async def log(session, expected):
    """The top page's record of the frames' messages, once it reads `expected` (a
    message from another process arrives a moment after the click), or after 3 s."""
    return await js(session, "new Promise((done) => { const t0 = performance.now(); const look = () => { "
                             "const v = document.getElementById('log').textContent; "
                             f"if (v === {json.dumps(expected)} || performance.now() - t0 > 3000) done(v); "
                             "else setTimeout(look, 50); }; look(); })")


async def test_read_page_lists_the_cross_origin_form_under_its_frame(session, site):
    await open_shop(session, site)
    tree = (await call(session, "read_page", {"tabId": 1}))["tree"]
    for needle in ['heading "Payment details"', 'textbox "Email"', 'combobox "Plan"',
                   'checkbox "I accept the terms"', 'button "Pay now"', 'button "Confirm code"']:
        assert needle in tree, tree
    assert "another origin" not in tree, tree
    lines = tree.splitlines()
    indent = lambda needle: next(len(l) - len(l.lstrip()) for l in lines if needle in l)  # noqa: E731
    frame_line = next(i for i, l in enumerate(lines) if l.lstrip().startswith("- iframe"))
    email_line = next(i for i, l in enumerate(lines) if 'textbox "Email"' in l)
    # Nested under the frame's line, the nested frame's button deeper still.
    assert email_line > frame_line and indent('textbox "Email"') > indent("- iframe"), tree
    assert indent('button "Confirm code"') > indent('textbox "Email"'), tree
    # Refs are unique across the documents.
    refs = [l.split("[", 1)[1].split("]", 1)[0] for l in lines if "[ref_" in l]
    assert len(refs) == len(set(refs)), tree
    # The interactive filter lists the frames' controls too, and reading the frame's
    # own ref reads just its content.
    flat = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    assert 'textbox "Email"' in flat and 'button "Confirm code"' in flat and 'button "Add a note"' in flat, flat
    part = (await call(session, "read_page", {"tabId": 1, "ref_id": ref_in(tree, "- iframe")}))["tree"]
    assert 'button "Pay now"' in part and "Add a note" not in part, part
    # A ref inside the frame as the root reads that part of the frame.
    sub = (await call(session, "read_page", {"tabId": 1, "ref_id": ref_in(tree, 'heading "Payment details"')}))["tree"]
    assert 'heading "Payment details"' in sub and "Pay now" not in sub, sub


async def test_find_fill_and_click_in_the_cross_origin_form(session, site):
    await open_shop(session, site)
    found = await call(session, "find", {"tabId": 1, "query": "Email field"})
    email = found["matches"][0]
    assert email["role"] == "textbox" and email["name"] == "Email" and email.get("frame"), found
    # Its box is in top-viewport coordinates: inside the iframe's box.
    frame_box = await js(session, "(() => { const b = document.getElementById('pay').getBoundingClientRect(); "
                                  "return [b.left, b.top, b.right, b.bottom]; })()")
    x, y, w, h = email["box"]
    assert frame_box[0] < x and x + w < frame_box[2] and frame_box[1] < y and y + h < frame_box[3], (email, frame_box)
    plan = (await call(session, "find", {"tabId": 1, "query": "Plan dropdown"}))["matches"][0]["ref"]
    terms = (await call(session, "find", {"tabId": 1, "query": "accept the terms checkbox"}))["matches"][0]["ref"]
    pay = (await call(session, "find", {"tabId": 1, "query": "Pay now button"}))["matches"][0]
    assert pay.get("frame") == email["frame"], pay
    await call(session, "form_input", {"tabId": 1, "ref": email["ref"], "value": "ada@example.org"})
    await call(session, "form_input", {"tabId": 1, "ref": plan, "value": "Pro"})
    await call(session, "form_input", {"tabId": 1, "ref": terms, "value": True})
    # The frame is below the fold: the click scrolls it into view first.
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": pay["ref"]})
    assert await log(session, "paid ada@example.org Pro terms=true") == "paid ada@example.org Pro terms=true"
    tree = (await call(session, "read_page", {"tabId": 1}))["tree"]
    assert 'textbox "Email" ' in tree and 'value="ada@example.org"' in tree, tree
    assert 'text "paid ada@example.org Pro terms=true"' in tree, tree


@pytest.mark.xfail(
    strict=False,
    reason="issue 15 follow-up: on Chromium, keys typed right after a click into a cross-origin frame can "
    "arrive before the frame has the focus (the e-mail stays empty); the wait after input watches the top "
    "document, and the extra settle round trip when the focus went into a frame makes it rarer (1 in 6 runs "
    "here), not gone",
)
async def test_one_batch_acts_across_the_top_page_and_both_frames(session, site):
    await open_shop(session, site)
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    note, email = ref_in(tree, '"Add a note"'), ref_in(tree, 'textbox "Email"')
    code, confirm = ref_in(tree, '"Security code"'), ref_in(tree, '"Confirm code"')
    pay = ref_in(tree, '"Pay now"')
    data = await batch(session, [
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": note}},
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": email}},
        {"name": "computer", "input": {"tabId": 1, "action": "type", "text": "bob@example.org"}},
        {"name": "computer", "input": {"tabId": 1, "action": "type", "ref": code, "text": "4711"}},
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": confirm}},
        {"name": "wait_for", "input": {"tabId": 1, "ref": confirm}},
        {"name": "computer", "input": {"tabId": 1, "action": "scroll", "ref": pay}},
        {"name": "computer", "input": {"tabId": 1, "action": "hover", "ref": pay}},
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": pay}},
    ])
    assert await js(session, "document.getElementById('note').textContent") == "Note added", data
    expected = "confirmed 4711 | paid bob@example.org Basic terms=false"
    assert await log(session, expected) == expected, data
    # wait_for_page by a ref inside the frame.
    waited = await call(session, "wait_for_page", {"tabId": 1, "ref": pay, "timeout_ms": 2000})
    assert waited, waited


async def test_a_ref_in_a_frame_that_went_is_world_moved(session, site):
    await open_shop(session, site)
    found = await call(session, "find", {"tabId": 1, "query": "Pay now button"})
    pay = found["matches"][0]["ref"]
    email = (await call(session, "find", {"tabId": 1, "query": "Email field"}))["matches"][0]["ref"]
    await js(session, "document.getElementById('pay').remove()")
    failed = await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": pay}, ok=False)
    error = failed.structuredContent["error"]
    assert error["code"] == "world-moved" and error["input_fired"] is False, error
    failed = await call(session, "form_input", {"tabId": 1, "ref": email, "value": "x"}, ok=False)
    assert failed.structuredContent["error"]["code"] == "world-moved", failed.structuredContent
    # The top page still answers: nothing was left switched into the frame.
    tree = (await call(session, "read_page", {"tabId": 1}))["tree"]
    assert 'button "Add a note"' in tree and "Pay now" not in tree, tree


async def test_a_ref_in_a_frame_that_navigated_is_world_moved(session, site):
    await open_shop(session, site)
    pay = (await call(session, "find", {"tabId": 1, "query": "Pay now button"}))["matches"][0]["ref"]
    loaded = await js(session, "(() => { const f = document.getElementById('pay'); "
                               "const p = new Promise((r) => f.addEventListener('load', r, { once: true })); "
                               "f.src += '?again'; return p.then(() => 'loaded'); })()")
    assert loaded == "loaded"
    failed = await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": pay}, ok=False)
    assert failed.structuredContent["error"]["code"] == "world-moved", failed.structuredContent
    # A fresh find gives a ref that works.
    pay = (await call(session, "find", {"tabId": 1, "query": "Pay now button"}))["matches"][0]["ref"]
    await call(session, "computer", {"tabId": 1, "action": "left_click", "ref": pay})
    assert await log(session, "paid  Basic terms=false") == "paid  Basic terms=false"


# Frames in every view (issue 40): a page that embeds a same-origin copy of its own
# form, the copy first in document order. Acting by description fills the page's
# own form; every read_page filter and every find match says which document an
# element is in (` frame=ref_N` at the end of a line, `frame` on a match).
SIGNUP_FORM = """<form>
  <label for="email">Email</label> <input id="email" type="email">
  <label for="name">Full name</label> <input id="name">
  <label><input type="checkbox" id="news"> Send me news</label>
  <button type="button" id="send" onclick="this.dataset.sent = 'yes'">Sign up</button>
</form>"""

SIGNUP = f"""<!doctype html><html><head><title>Signup copy</title></head><body>
{SIGNUP_FORM}</body></html>"""

OWN = f"""<!doctype html><html><head><title>Our page</title></head><body>
<h1>Join us</h1>
<iframe id="copy" src="signup.html" title="Embedded copy" style="width: 600px; height: 160px"></iframe>
{SIGNUP_FORM}</body></html>"""


@pytest.fixture(scope="module")
def own_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("own")
    (root / "signup.html").write_text(SIGNUP)
    (root / "own.html").write_text(OWN)
    with serve_folder(root) as base:
        yield base


def marked(lines, needle):
    """The frame marker (`ref_N`) of each line holding `needle`, None where unmarked."""
    out = []
    for line in lines:
        if needle in line:
            out.append(line.rsplit(" frame=", 1)[1] if " frame=ref_" in line else None)
    return out


async def test_acting_by_description_fills_the_pages_own_form_not_its_framed_copy(session, own_site):
    await call(session, "navigate", {"tabId": 1, "url": f"{own_site}/own.html"})
    await batch(session, [
        {"name": "form_input", "input": {"tabId": 1, "find": "Email field", "value": "ada@example.org"}},
        {"name": "form_input", "input": {"tabId": 1, "find": "Full name field", "value": "Ada Lovelace"}},
        {"name": "form_input", "input": {"tabId": 1, "find": "Send me news checkbox", "value": True}},
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "find": "Sign up button"}},
    ])
    own = await js(session, "[email.value, document.getElementById('name').value, news.checked, send.dataset.sent || '']")
    assert own == ["ada@example.org", "Ada Lovelace", True, "yes"], own
    copy = await js(session, "(() => { const d = document.getElementById('copy').contentDocument; return "
                             "[d.getElementById('email').value, d.getElementById('name').value, "
                             "d.getElementById('news').checked, d.getElementById('send').dataset.sent || '']; })()")
    assert copy == ["", "", False, ""], copy


async def test_every_view_marks_the_lines_and_matches_of_a_same_origin_frame(session, own_site):
    await call(session, "navigate", {"tabId": 1, "url": f"{own_site}/own.html"})
    for read in ({"filter": "interactive"}, {"filter": "all"}, {}):
        tree = (await call(session, "read_page", {"tabId": 1, **read}))["tree"]
        lines = tree.splitlines()
        frame = ref_in(tree, '- iframe "Embedded copy"')
        # Both copies listed; the copy's lines name its iframe, the page's own do not.
        for needle in ['textbox "Email"', 'textbox "Full name"', 'checkbox "Send me news"', 'button "Sign up"']:
            assert marked(lines, needle) == [frame, None], (read, needle, tree)
        assert marked(lines, '- iframe "Embedded copy"') == [None], tree
        # The copy's lines sit under the iframe's line, indented deeper.
        at = next(i for i, l in enumerate(lines) if "- iframe" in l)
        inner = next(i for i, l in enumerate(lines) if 'textbox "Email"' in l and f"frame={frame}" in l)
        indent = lambda l: len(l) - len(l.lstrip())  # noqa: E731
        assert inner > at and indent(lines[inner]) > indent(lines[at]), (read, tree)
    found = await call(session, "find", {"tabId": 1, "query": "Email field"})
    assert found["total"] == 2 and len(found["matches"]) == 2, found
    # The page's own first, the copy's naming its frame.
    assert "frame" not in found["matches"][0] and found["matches"][1]["frame"] == frame, found


async def test_the_cross_origin_frames_lines_carry_the_same_marker(session, site):
    await open_shop(session, site)
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    lines = tree.splitlines()
    pay = ref_in(tree, '- iframe "Payment"')
    inner = ref_in(tree, "- iframe [ref_")
    assert marked(lines, 'button "Add a note"') == [None], tree
    for needle in ['textbox "Email"', 'combobox "Plan"', 'button "Pay now"']:
        assert marked(lines, needle) == [pay], (needle, tree)
    # The nested frame's own line is in the payment frame; its content in it.
    assert marked(lines, f"[{inner}]") == [pay], tree
    assert marked(lines, 'button "Confirm code"') == [inner], tree
    full = (await call(session, "read_page", {"tabId": 1}))["tree"]
    assert marked(full.splitlines(), 'heading "Payment details"') == [pay], full
    found = await call(session, "find", {"tabId": 1, "query": "Pay now button"})
    assert found["matches"][0]["frame"] == pay, found
