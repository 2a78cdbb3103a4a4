"""The page library in pages that fight it (issue 40): DOM clobbering (named form
controls that shadow the form's properties, named images that shadow the
document's), built-ins the page replaced with throwing or lying functions, frozen
prototypes, and a huge DOM. Each test drives the tools as an agent would (find,
read_page, form_input, computer) and then checks that they answered AND acted on the
right element, reading the end state with JavaScript that does not go through
anything the page replaced (the page's own records, or prototype accessors).

Also the rules of resolution by description: an exact name beats a partial one, a
value is not a name, `matches` hold only elements that fit every word (the rest are
`partial_matches`), and an action by description never guesses.

Pages are served on loopback by this test; Chromium, and Firefox for the core tests.
"""

import json
import time

import pytest

from conftest import serve_folder
from test_browser import call, each_browser, js

# The `session` fixture: one MCP session per browser for the module.
SESSION = each_browser

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

# Every name a form control can use to shadow a property of its form that a
# script may read, and images that shadow properties of the document.
CLOBBERED = ["title", "action", "id", "name", "elements", "length", "method", "submit", "nodeName",
             "attributes", "children", "style", "className", "tagName", "getAttribute", "hasAttribute",
             "querySelectorAll", "closest", "parentNode", "childNodes", "textContent", "isConnected"]

CLOBBER = """<!doctype html><html><head><title>Add article</title></head><body>
<h1>Add article</h1>
<img name="body" alt=""><img name="querySelectorAll" alt=""><img name="getElementById" alt="">
<img name="createElement" alt=""><img name="documentElement" alt=""><img name="activeElement" alt="">
<form id="add" method="post" action="/save" title="Article form">
  {fields}
  <button type="button" id="save" onclick="this.dataset.saved = 'yes'">Save article</button>
</form>
<p id="out">nothing yet</p>
</body></html>"""

FIELDS = "\n  ".join(
    f'<label for="f-{n}">Field {n}</label> <input id="f-{n}" name="{n}">' for n in CLOBBERED
).replace('<label for="f-title">Field title</label>', '<label for="f-title">Title</label>')

# Read back through the prototypes: the page's clobbered names cannot lie to these.
PRISTINE_VALUE = ("Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').get.call("
                  "Document.prototype.getElementById.call(document, {id}))")

# A page whose scripts replaced the built-ins a script reads the page with: some
# throw, some lie. The page's own handlers use none of them.
# A page whose scripts replaced the built-ins a script reads the page with: some
# throw, some lie. The page's own handlers use none of them. JS: the language's
# built-ins; DOM: the DOM's methods and window.getComputedStyle.
REPLACED = """<!doctype html><html><head><title>Replaced</title></head><body>
<h1>Checkout</h1>
<label for="coupon">Coupon code</label> <input id="coupon">
<label for="mail">Email address</label> <input id="mail" type="email">
<button id="buy" onclick="this.dataset.bought = 'yes'">Buy now</button>
<button id="decoy" onclick="this.dataset.bought = 'yes'">Cancel order</button>
<script>
const boom = () => { throw new Error('replaced by the page'); };
if (location.hash.includes('dom')) {
  Element.prototype.getAttribute = function () { return 'lie'; };
  Element.prototype.hasAttribute = function () { return true; };
  Element.prototype.closest = boom;
  Element.prototype.matches = boom;
  Element.prototype.getBoundingClientRect = function () { return { left: 0, top: 0, right: 1, bottom: 1, width: 1, height: 1 }; };
  Document.prototype.getElementById = boom;
  Document.prototype.querySelectorAll = boom;
  Element.prototype.querySelectorAll = boom;
  Node.prototype.contains = boom;
  window.getComputedStyle = boom;
}
if (location.hash.includes('js')) {
  Array.prototype.map = boom;
  Array.prototype.filter = function () { return []; };
  Array.from = boom;
  String.prototype.replace = function () { return 'lie'; };
  String.prototype.toLowerCase = function () { return 'lie'; };
  String.prototype.trim = boom;
  // ChromeDriver serializes every script's answer with the page's JSON.stringify,
  // so a throwing one breaks all WebDriver scripts (not only this library's); a
  // wrapper, as polyfills install, is what pages do.
  const nativeStringify = JSON.stringify;
  JSON.stringify = function (v, r, s) { return nativeStringify(v, r, s); };
  JSON.parse = boom;
  window.Map = function () { throw new Error('no Map'); };
  window.Set = function () { throw new Error('no Set'); };
  Reflect.apply = boom;
  Object.getOwnPropertyDescriptor = boom;
}
</script>
</body></html>"""

FROZEN = """<!doctype html><html><head><title>Frozen</title></head><body>
<h1>Settings</h1>
<label for="nick">Nickname</label> <input id="nick">
<button id="apply" onclick="this.setAttribute('data-done', 'yes')">Apply settings</button>
<script>
for (const o of [Object.prototype, Array.prototype, String.prototype, Function.prototype, RegExp.prototype,
                 Element.prototype, Node.prototype, HTMLElement.prototype, Document.prototype, EventTarget.prototype,
                 Object, Array, String, JSON, Reflect, Map, Set, WeakMap]) Object.freeze(o);
</script>
</body></html>"""

# 50,000 elements: 10,000 rows of a table, each 5 elements, and the one button
# asked for at the end; a 400-deep nest beside it (much deeper crashes Chromium's renderer on its own).
HUGE_ROWS = 10_000
DEEP = 400
HUGE = """<!doctype html><html><head><title>Huge</title></head><body>
<h1>Big table</h1>
<table id="t"><tbody></tbody></table>
<div id="deep"></div>
<button id="needle" onclick="this.setAttribute('data-hit', 'yes')">Export everything</button>
<script>
const body = document.querySelector('#t tbody');
const html = [];
for (let i = 0; i < %d; i++) html.push('<tr><td>Row ' + i + '</td><td><span>cell ' + i + '</span></td><td><a href="#r' + i + '">open</a></td></tr>');
body.innerHTML = html.join('');
let d = document.getElementById('deep');
for (let i = 0; i < DEEP; i++) { const c = document.createElement('div'); d.appendChild(c); d = c; }
d.textContent = 'bottom of the nest';
</script>
</body></html>""".replace("DEEP", str(DEEP)) % HUGE_ROWS

# Resolution: a slider whose value is 1 and whose name says nothing of items;
# eleven elements whose text is exactly "Item 1"; an "Item 10".
ITEMS = """<!doctype html><html><head><title>Items</title></head><body>
<h1>Sortable</h1>
<label for="swap">Swap Threshold</label> <input id="swap" type="range" min="0" max="10" value="1">
<ul>%s<li tabindex="0">Item 10</li></ul>
<p id="out"></p>
<script>
document.querySelectorAll('li').forEach((li) => li.addEventListener('click', () => {
  document.getElementById('out').textContent = 'clicked ' + li.textContent; }));
</script>
</body></html>""" % "".join('<li tabindex="0">Item 1</li>' for _ in range(11))

# "editor text area": a date field and a rich-text editor with no label.
EDITOR = """<!doctype html><html><head><title>Post</title></head><body>
<h1>New post</h1>
<label for="when">Publish date</label> <input id="when" type="date">
<div id="editor" contenteditable="true" role="textbox" aria-multiline="true"
     style="border: 1px solid #888; min-height: 80px"></div>
</body></html>"""

# A launcher still opening the notebook: until the editor appears, the only
# control that mentions code is a help button.
LAUNCHER = """<!doctype html><html><head><title>Launcher</title></head><body>
<h1>Notebook</h1>
<button id="help" aria-describedby="tip" onclick="this.setAttribute('data-pressed', 'yes')">Show Contextual Help</button>
<span id="tip">Help for the code under the cursor</span>
<div id="cells"></div>
<script>
setTimeout(() => {
  document.getElementById('cells').innerHTML =
    '<div contenteditable="true" role="textbox" aria-label="Code cell" id="cell" style="min-height: 40px; border: 1px solid"></div>';
}, 1500);
</script>
</body></html>"""


# Form controls whose own properties lie or throw (what a hostile page, or a
# framework wrapping its elements, defines on the element itself): focus,
# dispatchEvent, click, disabled, tagName, getAttribute, and each control's value,
# options or checked. The page's change listeners log what the controls really hold,
# read through the prototypes the script kept before it replaced anything.
LYING = """<!doctype html><html><head><title>Order</title></head><body>
<h1>Order</h1>
<label for="who">Full name</label> <input id="who">
<label for="size">Size</label> <select id="size"><option value="s">Small</option><option value="l">Large</option></select>
<label><input type="checkbox" id="gift"> Gift wrap</label>
<p id="log"></p>
<script>
(() => {
  const V = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').get;
  const SV = Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value').get;
  const C = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'checked').get;
  const logged = document.getElementById('log');
  const who = document.getElementById('who'), size = document.getElementById('size'), gift = document.getElementById('gift');
  const seen = [[who, () => V.call(who)], [size, () => SV.call(size)], [gift, () => C.call(gift)]];
  for (const [el, read] of seen) {
    el.addEventListener('change', () => { logged.textContent += el.id + '=' + read() + ';'; });
    for (const k of ['focus', 'dispatchEvent', 'click', 'getAttribute', 'hasAttribute']) {
      Object.defineProperty(el, k, { value() { throw new Error(k + ' is mine'); } });
    }
    Object.defineProperty(el, 'disabled', { get() { return true; } });
    Object.defineProperty(el, 'tagName', { get() { return 'DIV'; } });
  }
  Object.defineProperty(who, 'value', { get() { return 'lie'; }, set(v) { /* swallowed */ } });
  Object.defineProperty(size, 'options', { get() { throw new Error('options are mine'); } });
  Object.defineProperty(size, 'value', { get() { return 'lie'; }, set(v) { /* swallowed */ } });
  Object.defineProperty(gift, 'checked', { get() { return true; }, set(v) { /* swallowed */ } });
})();
</script>
</body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    pages = {"clobber.html": CLOBBER.format(fields=FIELDS), "replaced.html": REPLACED, "frozen.html": FROZEN,
             "huge.html": HUGE, "items.html": ITEMS, "editor.html": EDITOR, "launcher.html": LAUNCHER,
             "lying.html": LYING}
    for name, text in pages.items():
        (root / name).write_text(text)
    with serve_folder(root) as base:
        yield base


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


async def open_page(session, site, name):
    await call(session, "navigate", {"tabId": 1, "url": f"{site}/{name}"})


async def browser_kind(session):
    return (await call(session, "tabs_context", {}))["browser"]


async def attribute(session, element_id, name):
    """An attribute read through the prototypes, past anything the page replaced."""
    return await js(session, "Object.getOwnPropertyDescriptor(Element.prototype, 'getAttribute').value.call("
                             f"Object.getOwnPropertyDescriptor(Document.prototype, 'getElementById').value.call(document, {json.dumps(element_id)}), "
                             f"{json.dumps(name)})")


async def test_named_form_controls_do_not_break_or_mislead_the_tools(session, site):
    await open_page(session, site, "clobber.html")
    # The reproduction: a form holding <input name="title"> made every find throw.
    found = await call(session, "find", {"tabId": 1, "query": "Title field"})
    best = found["matches"][0]
    assert best["role"] == "textbox" and best["name"] == "Title", found
    tree = (await call(session, "read_page", {"tabId": 1}))["tree"]
    assert 'heading "Add article"' in tree and 'textbox "Title"' in tree and 'button "Save article"' in tree, tree
    # Every clobbering control is listed under its own label, and nothing is named
    # after the element that shadows a property ("[object HTMLInputElement]").
    for n in CLOBBERED[1:]:
        assert f'textbox "Field {n}"' in tree, (n, tree)
    assert "object HTML" not in tree, tree
    flat = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    assert flat.count("- textbox") == len(CLOBBERED), flat
    # Acting by description and by ref lands on the right controls.
    await call(session, "form_input", {"tabId": 1, "find": "Title field", "value": "Hostile pages"})
    await call(session, "form_input", {"tabId": 1, "find": "Field action", "value": "publish"})
    typed = await call(session, "computer", {"tabId": 1, "action": "type", "find": "Field name", "text": "Ada"})
    assert typed["element"].startswith('textbox "Field name"'), typed
    await call(session, "computer", {"tabId": 1, "action": "left_click", "find": "Save article button"})
    assert await js(session, PRISTINE_VALUE.format(id=json.dumps("f-title"))) == "Hostile pages"
    assert await js(session, PRISTINE_VALUE.format(id=json.dumps("f-action"))) == "publish"
    assert await js(session, PRISTINE_VALUE.format(id=json.dumps("f-name"))) == "Ada"
    assert await js(session, PRISTINE_VALUE.format(id=json.dumps("f-id"))) == ""
    assert await attribute(session, "save", "data-saved") == "yes"


@pytest.mark.parametrize("replaced", ["js", "dom", "js-dom"])
async def test_replaced_built_ins_neither_break_nor_mislead_the_tools(session, site, replaced):
    if "dom" in replaced and await browser_kind(session) == "firefox":
        # geckodriver runs scripts in a sandbox with its own JS built-ins but the
        # page's DOM prototypes, and no document-start hook keeps the browser's.
        pytest.skip("on Firefox the page library sees the DOM methods the page replaced (page.js says so)")
    await open_page(session, site, f"replaced.html#{replaced}")
    found = await call(session, "find", {"tabId": 1, "query": "Coupon code field"})
    best = found["matches"][0]
    assert best["role"] == "textbox" and best["name"] == "Coupon code", found
    # The lying getBoundingClientRect would put every box at 1x1 in the corner.
    assert best["box"][2] > 20 and best["box"][3] > 5, best
    tree = (await call(session, "read_page", {"tabId": 1}))["tree"]
    assert 'textbox "Email address"' in tree and 'button "Buy now"' in tree and "lie" not in tree, tree
    await call(session, "form_input", {"tabId": 1, "find": "Email address field", "value": "ada@example.org"})
    await call(session, "computer", {"tabId": 1, "action": "left_click", "find": "Buy now button"})
    # Read back with what the page left alone: children, value, dataset
    # (h1, label, input, label, input, button, button: children 4, 5 and 6).
    assert await js(session, "document.body.children[4].id + '=' + document.body.children[4].value") \
        == "mail=ada@example.org"
    assert await js(session, "document.body.children[2].value") == ""
    buy = await js(session, "document.body.children[5].dataset.bought || ''")
    decoy = await js(session, "document.body.children[6].dataset.bought || ''")
    assert (buy, decoy) == ("yes", ""), (buy, decoy)


async def test_controls_whose_own_properties_lie_are_filled_and_read_truly(session, site):
    await open_page(session, site, "lying.html")
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    assert 'textbox "Full name"' in tree and 'combobox "Size"' in tree and 'checkbox "Gift wrap"' in tree, tree
    assert "lie" not in tree and "disabled" not in tree, tree
    await call(session, "form_input", {"tabId": 1, "find": "Full name field", "value": "Ada Lovelace"})
    await call(session, "form_input", {"tabId": 1, "find": "Size", "value": "Large"})
    # The box says it is checked; it is not: form_input checks it.
    await call(session, "form_input", {"tabId": 1, "find": "Gift wrap checkbox", "value": True})
    log = await js(session, "Object.getOwnPropertyDescriptor(Node.prototype, 'textContent').get.call("
                            "Document.prototype.getElementById.call(document, 'log'))")
    assert log.split(";")[:-1] == ["who=Ada Lovelace", "size=l", "gift=true"], log


async def test_frozen_prototypes_and_globals(session, site):
    await open_page(session, site, "frozen.html")
    tree = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    assert 'textbox "Nickname"' in tree and 'button "Apply settings"' in tree, tree
    await call(session, "form_input", {"tabId": 1, "find": "Nickname field", "value": "Grace"})
    await call(session, "computer", {"tabId": 1, "action": "left_click", "find": "Apply settings button"})
    assert await js(session, "document.getElementById('nick').value") == "Grace"
    assert await js(session, "document.getElementById('apply').dataset.done") == "yes"


async def test_a_huge_dom_answers_in_bounded_time_and_size(session, site):
    await open_page(session, site, "huge.html")
    assert await js(session, "document.getElementsByTagName('*').length") > 5 * HUGE_ROWS
    started = time.monotonic()
    tree = (await call(session, "read_page", {"tabId": 1}))["tree"]
    took = time.monotonic() - started
    assert took < 30, took
    assert len(tree) <= 42_000 and "more lines not shown" in tree, (len(tree), tree[-300:])
    started = time.monotonic()
    flat = (await call(session, "read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
    assert time.monotonic() - started < 30
    assert len(flat) <= 42_000 and "more lines not shown" in flat, len(flat)
    started = time.monotonic()
    found = await call(session, "find", {"tabId": 1, "query": "Export everything button"})
    assert time.monotonic() - started < 30
    assert found["matches"][0]["name"] == "Export everything" and found["total"] == 1, found
    # A query that fits thousands answers with the limit, not all of them.
    rows = await call(session, "find", {"tabId": 1, "query": "open link", "limit": 5})
    assert len(rows["matches"]) == 5 and rows["total"] >= HUGE_ROWS, {k: rows[k] for k in ("total",)}
    assert len(json.dumps(rows)) < 10_000
    await call(session, "computer", {"tabId": 1, "action": "left_click", "find": "Export everything button"})
    assert await js(session, "document.getElementById('needle').dataset.hit") == "yes"
    # The deep nest: its text is found, and a read of it stops at the depth cap.
    deep = await call(session, "find", {"tabId": 1, "query": "bottom of the nest"})
    assert deep["matches"], deep


async def test_an_exact_text_beats_a_value_and_equal_exact_matches_are_refused(session, site):
    await open_page(session, site, "items.html")
    found = await call(session, "find", {"tabId": 1, "query": "Item 1", "limit": 30})
    names = [m.get("name") or m.get("text") for m in found["matches"]]
    # Eleven exact matches; never the slider valued 1, never "Item 10".
    assert names == ["Item 1"] * 11, found
    assert all(m.get("exact") for m in found["matches"]), found
    assert not any(m["role"] == "slider" for m in found["matches"] + found.get("partial_matches", [])), found
    # Acting on "Item 1" would be a guess among eleven: refused, naming candidates with refs.
    failed = await call(session, "computer", {"tabId": 1, "action": "left_click", "find": "Item 1"}, ok=False)
    error = failed.structuredContent["error"]
    assert error["code"] == "invalid-input" and "equally well" in error["message"], error
    assert error["message"].count('"Item 1" [ref_') >= 2, error
    assert await js(session, "document.getElementById('out').textContent") == ""
    # "Item 10" is one element: acted on.
    await call(session, "computer", {"tabId": 1, "action": "left_click", "find": "Item 10"})
    assert await js(session, "document.getElementById('out').textContent") == "clicked Item 10"


async def test_matches_never_start_with_a_partial_match(session, site):
    await open_page(session, site, "items.html")
    found = await call(session, "find", {"tabId": 1, "query": "Swap Threshold items checkbox"})
    # Nothing is a checkbox: no match at all, and the slider is listed apart.
    assert found["matches"] == [] and found["total"] == 0, found
    assert found["partial_matches"][0]["role"] == "slider", found
    assert "partial_matches" in found["note"], found
    # An action on that description does nothing and says what came close.
    failed = await call(session, "form_input", {"tabId": 1, "find": "Swap Threshold checkbox", "value": True}, ok=False)
    error = failed.structuredContent["error"]
    assert error["code"] == "not-found" and "matches every word" in error["message"], error
    assert 'slider "Swap Threshold" [ref_' in error["message"], error


async def test_an_editor_is_not_a_date_field(session, site):
    await open_page(session, site, "editor.html")
    found = await call(session, "find", {"tabId": 1, "query": "editor text area"})
    assert found["matches"][0]["ref"] and found["matches"][0]["role"] == "textbox", found
    assert all(m.get("type") != "date" for m in found["matches"]), found
    await call(session, "computer", {"tabId": 1, "action": "type", "find": "editor text area", "text": "Hello"})
    assert await js(session, "document.getElementById('editor').textContent") == "Hello"
    assert await js(session, "document.getElementById('when').value") == ""


async def test_an_action_by_description_waits_for_its_kind_instead_of_guessing(session, site):
    await open_page(session, site, "launcher.html")
    typed = await call(session, "computer", {"tabId": 1, "action": "type", "find": "code cell editor", "text": "print(1)"})
    assert typed["element"].startswith('textbox "Code cell"'), typed
    assert await js(session, "document.getElementById('cell').textContent") == "print(1)"
    assert await js(session, "document.getElementById('help').dataset.pressed || ''") == ""
