#!/usr/bin/env python3
"""The web-app flows of tests/e2e/test_web_apps.py (issue 15), side by side through
stephost and through Playwright MCP, on the same Debian Chromium and the same app
servers:

  stephost        `stephost serve` over stdio; each flow as test_web_apps.py writes it
                  (find / read_page to look, computer / form_input to act,
                  browser_batch where an agent batches what needs no looking)
  stephost_batch  the same server; each flow as one browser_batch written before
                  looking, elements named by description (`find` on computer and
                  form_input, resolved when each entry runs)
  Playwright MCP  `playwright-mcp --headless --isolated --no-sandbox --executable-path
                  /usr/bin/chromium` (npm @playwright/mcp, installed under
                  .cache/bench/playwright-mcp); each flow as an agent writes it from
                  its tool descriptions: browser_snapshot to get refs (read by the
                  role and accessible name on the snapshot line), browser_click /
                  browser_type / browser_fill_form / browser_press_key /
                  browser_handle_dialog to act. A ref read from a snapshot is reused
                  while the page it came from is still showing.

The flows of tests/e2e/test_web_apps_pypi.py (issue 40: Django's admin, JupyterLab,
Shiny, Dash and MkDocs Material, installed from PyPI by scripts/webapps.sh) run too,
against the same app setups (tests/e2e/web_apps.py); `--only Django JupyterLab Shiny
Dash MkDocs` runs just those.

Every flow checks its end state independently of the tools' claims, with the same
checks as the test file (the page's DOM or localStorage through each server's
JS-evaluate tool, datasette's SQLite file). A flow passes only on the first try (no
retries). Its time runs from its first call to the start of its end-state check;
its calls are the MCP tool calls before the check (the check's calls are not
counted). Each run starts both servers afresh (not timed), warms each browser up
with one untimed navigation to about:blank, then runs the flows, alternating which
server goes first from run to run. Medians over the runs.

`--latency` also measures per-action latency on an idle page: a click by ref and a
`type` of 10 characters through stephost's `computer` tool, 50 of each in one
`browser_batch` (per-entry time from the report's time_ms), against the W3C actions
the plugin sends for them, POSTed straight to a chromedriver this script starts, and
the click against WebDriver's own Element Click on an element located once.

Usage (from the repository root, after `cargo build --release` and
scripts/webapps.sh):
  .venv/bin/python bench/web_flows_bench.py [--runs 3] [--latency] [--only NAME ...]
"""

import argparse
import asyncio
import contextlib
import datetime
import http.client
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from web_apps import (  # noqa: E402  (the test suite's app servers, found through the path above)
    DJANGO_PASSWORD, DJANGO_USER, DOCS, JQUI, TODO, click, dash_server, django_site, fetched, fill, free_port,
    garden_server, httpbin_server, jupyter_server, key, mkdocs_site, nav, press, pypi_fetched, ref_on_line,
    shiny_server, static_site, stop, type_into, typing,
)

BENCH_CACHE = ROOT / ".cache" / "bench"
PW_VERSION = "0.0.86"
PW_DIR = BENCH_CACHE / f"playwright-mcp-{PW_VERSION}"
PW_BIN = PW_DIR / "node_modules" / ".bin" / "playwright-mcp"
PW_ARGS = ["--headless", "--isolated", "--no-sandbox", "--executable-path", "/usr/bin/chromium"]

SQL = "select name, height from plants where color = 'red' order by height desc"


# --- the app servers: the test file's (tests/e2e/web_apps.py) --------------------

class Apps:
    """The static site, httpbin and datasette (garden.db), started once for the run;
    with pypi=True also the PyPI apps of tests/e2e/test_web_apps_pypi.py (issue 40):
    Django's admin, JupyterLab, Shiny, Dash and an MkDocs Material site."""

    def __init__(self, pypi=False):
        self.with_pypi = pypi
        self.serial = 0

    def __enter__(self):
        self.server, self.site = static_site()
        self.procs = []
        self.servers = [self.server]
        proc, self.httpbin = httpbin_server()
        self.procs.append(proc)
        self.tmp = Path(tempfile.mkdtemp(prefix="web-flows-bench-"))
        self.db = self.tmp / "garden.db"
        proc, self.datasette = garden_server(self.db)
        self.procs.append(proc)
        if self.with_pypi:
            self.pypi_procs = []
            for name in ("django", "jupyter", "shiny", "dash", "mkdocs"):
                (self.tmp / name).mkdir()
            proc, self.django, self.django_db = django_site(self.tmp / "django")
            self.pypi_procs.append(proc)
            self.jupyter_token = "bench-token-40"
            proc, self.jupyter, self.jupyter_work = jupyter_server(self.tmp / "jupyter", self.jupyter_token)
            self.pypi_procs.append(proc)
            proc, self.shiny, self.shiny_log = shiny_server(self.tmp / "shiny")
            self.pypi_procs.append(proc)
            proc, self.dash, self.dash_log = dash_server(self.tmp / "dash")
            self.pypi_procs.append(proc)
            server, self.mkdocs = mkdocs_site(self.tmp / "mkdocs")
            self.servers.append(server)
        return self

    def next(self):
        """A number new in this run, for values each flow run makes its own."""
        self.serial += 1
        return self.serial

    def __exit__(self, *exc):
        for server in self.servers:
            server.shutdown()
            server.server_close()
        for proc in self.procs:
            proc.terminate()
            with contextlib.suppress(Exception):
                proc.wait(timeout=10)
        for proc in getattr(self, "pypi_procs", []):
            stop(proc)
        shutil.rmtree(self.tmp, ignore_errors=True)


# --- the clients: each counts its calls -------------------------------------------

class FlowFailed(AssertionError):
    pass


def check(cond, what):
    if not cond:
        raise FlowFailed(what)


class Client:
    def __init__(self, session):
        self.session = session
        self.calls = 0
        self.checking = False  # calls made while checking are not counted

    async def raw(self, tool, args):
        if not self.checking:
            self.calls += 1
        return await self.session.call_tool(tool, args)


class Stephost(Client):
    name = "stephost"

    async def call(self, tool, args):
        result = await self.raw(tool, args)
        data = result.structuredContent
        check(result.isError is False, f"{tool} {args}: {data}")
        return data["value"]

    async def batch(self, actions):
        result = await self.raw("browser_batch", {"actions": actions})
        data = result.structuredContent
        check(result.isError is False, f"browser_batch: {data}")
        return [r["output"] for r in data["results"]]

    async def first(self, query):
        found = await self.call("find", {"tabId": 1, "query": query})
        check(found["matches"], f"find {query!r} matched nothing")
        return found["matches"][0]

    async def js(self, text):
        return (await self.call("javascript_tool", {"tabId": 1, "text": text}))["result"]

    async def warm(self):
        await self.call("navigate", {"tabId": 1, "url": "about:blank"})


def text_of(result):
    return "\n".join(c.text for c in result.content if c.type == "text")


SNAP_LINE = re.compile(r'^(\s*)- (\w+)(?: "((?:[^"\\]|\\.)*)")?[^\n]*?\[ref=([^\]]+)\][^:\n]*(?::\s*(.*))?$')


def line_name(m):
    """A snapshot line's accessible name: quoted, or the text after its colon."""
    return m.group(3) if m.group(3) is not None else (m.group(5) or "").strip('"')


class Playwright(Client):
    name = "playwright"

    async def call(self, tool, args):
        result = await self.raw(tool, args)
        text = text_of(result)
        check(not result.isError, f"{tool} {args}: {text[:1500]}")
        return text

    async def snapshot(self):
        self.snap = await self.call("browser_snapshot", {})
        return self.snap

    def ref(self, role, name):
        """The ref on the first snapshot line of `role` whose accessible name holds `name`."""
        for line in self.snap.splitlines():
            m = SNAP_LINE.match(line)
            if m and m.group(2) == role and name in line_name(m):
                return m.group(4)
        raise FlowFailed(f"no {role} {name!r} in the snapshot:\n{self.snap[:3000]}")

    def ref_beside(self, role, text):
        """The ref of the `role` element in the same item as the line holding `text`
        (a TodoMVC row: its checkbox has no name, its title is a sibling)."""
        lines = self.snap.splitlines()
        indent = lambda s: len(s) - len(s.lstrip())
        for i, line in enumerate(lines):
            if text in line:
                own = indent(line)
                start = next(j for j in range(i, -1, -1) if indent(lines[j]) < own)
                for other in lines[start + 1 :]:
                    if indent(other) <= indent(lines[start]):
                        break
                    m = SNAP_LINE.match(other)
                    if m and m.group(2) == role:
                        return m.group(4)
        raise FlowFailed(f"no {role} beside {text!r} in the snapshot:\n{self.snap[:3000]}")

    def ref_after(self, role, text):
        """The ref of the first `role` line after the line holding `text`."""
        lines = self.snap.splitlines()
        start = next((i for i, line in enumerate(lines) if text in line), None)
        for line in lines[start + 1 :] if start is not None else []:
            m = SNAP_LINE.match(line)
            if m and m.group(2) == role:
                return m.group(4)
        raise FlowFailed(f"no {role} after {text!r} in the snapshot:\n{self.snap[:3000]}")

    def parent_of(self, text):
        """The ref of the element whose child line holds `text`."""
        lines = self.snap.splitlines()
        indent = lambda s: len(s) - len(s.lstrip())
        for i, line in enumerate(lines):
            if text in line:
                for j in range(i - 1, -1, -1):
                    if indent(lines[j]) < indent(line):
                        m = SNAP_LINE.match(lines[j])
                        if m:
                            return m.group(4)
                        break
        raise FlowFailed(f"no element holding {text!r} in the snapshot:\n{self.snap[:3000]}")

    async def js(self, expr):
        text = await self.call("browser_evaluate", {"function": f"() => ({expr})"})
        m = re.search(r"### Result\n(.*?)(?:\n### |\Z)", text, re.S)
        check(m, f"no result in {text[:1000]}")
        return json.loads(m.group(1))

    async def warm(self):
        await self.call("browser_navigate", {"url": "about:blank"})


# --- the flows: each side's `act` returns when the flow's work is done; `verify`
# --- (shared) checks the end state. ------------------------------------------------

FLOWS = {}


def flow(name):
    def register(cls):
        FLOWS[name] = cls
        return cls

    return register


@flow("TodoMVC: add 3, complete 1")
class TodoMVC:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": apps.site + TODO})
        box = await c.first("What needs to be done? input")
        await c.batch([click(box["ref"]), typing("Buy milk"), key("Return"), typing("Walk the dog"), key("Return"),
                       typing("Write report"), key("Return")])
        toggle = await c.first("Walk the dog checkbox")
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": toggle["ref"]})

    async def stephost_batch(c, apps):
        await c.batch([nav(apps.site + TODO), type_into("What needs to be done? input", "Buy milk"), key("Return"),
                       typing("Walk the dog"), key("Return"), typing("Write report"), key("Return"),
                       press("Walk the dog checkbox")])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": apps.site + TODO})
        await c.snapshot()
        box = c.ref("textbox", "What needs to be done?")
        for title in ("Buy milk", "Walk the dog", "Write report"):
            await c.call("browser_type", {"element": "New todo input", "target": box, "text": title, "submit": True})
        await c.snapshot()
        toggle = c.ref_beside("checkbox", "Walk the dog")
        await c.call("browser_click", {"element": "Walk the dog checkbox", "target": toggle})

    async def verify(c, apps):
        stored = await c.js("JSON.parse(localStorage.getItem('todos-vanillajs')).todos.map(t => [t.title, t.completed])")
        check(stored == [["Buy milk", False], ["Walk the dog", True], ["Write report", False]], stored)
        count = await c.js("document.getElementById('todo-count').innerText")
        check("2 items left" in count, count)


@flow("Sphinx docs search")
class Sphinx:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": f"{apps.site}{DOCS}/index.html"})
        box = await c.first("Quick search box")
        await c.batch([click(box["ref"]), typing("asyncio.gather"), key("Return")])
        await c.call("wait_for_page", {"tabId": 1, "condition": "appears", "by": "selector", "pattern": "ul.search li"})
        hit = await c.first("asyncio.gather link")
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": hit["ref"]})

    async def stephost_batch(c, apps):
        await c.batch([nav(f"{apps.site}{DOCS}/index.html"), type_into("Quick search box", "asyncio.gather"), key("Return"),
                       {"name": "wait_for", "input": {"tabId": 1, "condition": "appears", "by": "selector", "pattern": "ul.search li"}},
                       press("asyncio.gather link")])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": f"{apps.site}{DOCS}/index.html"})
        await c.snapshot()
        box = c.ref("textbox", "Quick search")
        await c.call("browser_type", {"element": "Quick search box", "target": box, "text": "asyncio.gather", "submit": True})
        # Sphinx fills the results in from its index after the page loads.
        await c.call("browser_wait_for", {"text": "Search finished"})
        await c.snapshot()
        hit = c.ref("link", "asyncio.gather")
        await c.call("browser_click", {"element": "asyncio.gather result link", "target": hit})

    async def verify(c, apps):
        where = await c.js("[location.pathname, location.hash]")
        check(where == [f"{DOCS}/library/asyncio-task.html", "#asyncio.gather"], where)


@flow("Shoelace form")
class Shoelace:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": f"{apps.site}/glue/shoelace.html"})
        name = await c.first("Customer name field")
        await c.call("form_input", {"tabId": 1, "ref": name["ref"], "value": "Ada Lovelace"})
        size = await c.first("Size select")
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": size["ref"]})
        large = await c.first("Large option")
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": large["ref"]})
        gift = await c.first("Gift wrap checkbox")
        await c.call("form_input", {"tabId": 1, "ref": gift["ref"], "value": True})
        submit = await c.first("Place order button")
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": submit["ref"]})

    async def stephost_batch(c, apps):
        await c.batch([nav(f"{apps.site}/glue/shoelace.html"), fill("Customer name field", "Ada Lovelace"),
                       press("Size select"), press("Large option"), fill("Gift wrap checkbox", True),
                       press("Place order button")])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": f"{apps.site}/glue/shoelace.html"})
        await c.snapshot()
        await c.call("browser_type", {"element": "Customer name field", "target": c.ref("textbox", "Customer name"), "text": "Ada Lovelace"})
        await c.call("browser_click", {"element": "Size select", "target": c.ref("combobox", "Size")})
        await c.snapshot()
        await c.call("browser_click", {"element": "Large option", "target": c.ref("option", "Large")})
        # The snapshot's checkbox "Gift wrap" line has no ref (it is inside the
        # component's shadow root); its label beside it has one.
        await c.call("browser_click", {"element": "Gift wrap checkbox label", "target": c.ref("generic", "Gift wrap")})
        await c.call("browser_click", {"element": "Place order button", "target": c.ref("button", "Place order")})

    async def verify(c, apps):
        state = await c.js(
            "[document.querySelector('sl-input').value, document.querySelector('sl-select').value,"
            " document.querySelector('sl-checkbox').checked, document.getElementById('submitted').textContent]"
        )
        check(state[:3] == ["Ada Lovelace", "large", True], state)
        check(state[3] and json.loads(state[3]) == {"customer": "Ada Lovelace", "size": "large", "gift": "yes"}, state)


@flow("jQuery UI autocomplete")
class Autocomplete:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": f"{apps.site}{JQUI}/autocomplete/default.html"})
        tags = await c.first("Tags input")
        await c.batch([click(tags["ref"]), typing("Ja")])
        option = await c.first("JavaScript option")
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": option["ref"]})

    async def stephost_batch(c, apps):
        await c.batch([nav(f"{apps.site}{JQUI}/autocomplete/default.html"), type_into("Tags input", "Ja"),
                       press("JavaScript option")])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": f"{apps.site}{JQUI}/autocomplete/default.html"})
        await c.snapshot()
        # One key at a time ("useful for triggering key handlers"): the widget
        # suggests on key events (a plain fill opens no suggestions).
        await c.call("browser_type", {"element": "Tags input", "target": c.ref("textbox", "Tags"), "text": "Ja", "slowly": True})
        await c.snapshot()
        option = exact_ref(c.snap, "generic", "JavaScript") or exact_ref(c.snap, "option", "JavaScript")
        check(option, f"no JavaScript suggestion in the snapshot:\n{c.snap[:3000]}")
        await c.call("browser_click", {"element": "JavaScript suggestion", "target": option})

    async def verify(c, apps):
        value = await c.js("document.getElementById('tags').value")
        check(value == "JavaScript", value)


@flow("jQuery UI datepicker")
class Datepicker:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": f"{apps.site}{JQUI}/datepicker/default.html"})
        date = await c.first("Date input")
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": date["ref"]})
        day = await c.first("15")
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": day["ref"]})

    async def stephost_batch(c, apps):
        await c.batch([nav(f"{apps.site}{JQUI}/datepicker/default.html"), press("Date input"), press("15")])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": f"{apps.site}{JQUI}/datepicker/default.html"})
        await c.snapshot()
        await c.call("browser_click", {"element": "Date input", "target": c.ref_beside("textbox", "Date:")})
        await c.snapshot()
        day = next((ref for role, name in (("link", "15"), ("cell", "15")) for ref in [exact_ref(c.snap, role, name)] if ref), None)
        check(day, f"no day 15 in the snapshot:\n{c.snap[:3000]}")
        await c.call("browser_click", {"element": "15", "target": day})

    async def verify(c, apps):
        today = datetime.date.today()
        value = await c.js("document.getElementById('datepicker').value")
        check(value == f"{today:%m}/15/{today:%Y}", value)


def exact_ref(snap, role, name):
    for line in snap.splitlines():
        m = SNAP_LINE.match(line)
        if m and m.group(2) == role and line_name(m) == name:
            return m.group(4)
    return None


@flow("Quill bold text")
class Quill:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": f"{apps.site}/glue/quill.html"})
        editor = await c.first("Write your note editor")
        await c.batch([click(editor["ref"]), typing("Hello "), key("ctrl+b"), typing("world")])

    async def stephost_batch(c, apps):
        await c.batch([nav(f"{apps.site}/glue/quill.html"), type_into("Write your note editor", "Hello "), key("ctrl+b"),
                       typing("world")])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": f"{apps.site}/glue/quill.html"})
        await c.snapshot()
        # The editor has no textbox line: it is the element holding the placeholder.
        editor = c.parent_of("Write your note...")
        # One character at a time ("useful for triggering key handlers"), so the
        # second part goes where the caret is rather than replacing the text.
        await c.call("browser_type", {"element": "Note editor", "target": editor, "text": "Hello ", "slowly": True})
        await c.call("browser_press_key", {"key": "Control+b"})
        await c.call("browser_type", {"element": "Note editor", "target": editor, "text": "world", "slowly": True})

    async def verify(c, apps):
        ops = await c.js("editor.getContents().ops")
        check(ops == [{"insert": "Hello "}, {"insert": "world", "attributes": {"bold": True}}, {"insert": "\n"}], ops)


HTTPBIN_FILL = [
    ("Customer name", "Grace Hopper"), ("Telephone", "555-0100"), ("E-mail address", "grace@example.com"),
    ("Large", True), ("Cheese", True), ("Onion", True), ("Delivery instructions", "Ring twice"),
]


@flow("httpbin form post")
class HttpbinForm:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": f"{apps.httpbin}/forms/post"})
        tree = (await c.call("read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
        actions = [
            {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, label), "value": value}}
            for label, value in HTTPBIN_FILL
        ]
        actions.append(click(ref_on_line(tree, "Submit order")))
        actions.append({"name": "get_page_text", "input": {"tabId": 1}})
        outputs = await c.batch(actions)
        check("Grace Hopper" in outputs[-1]["text"], outputs[-1])

    async def stephost_batch(c, apps):
        outputs = await c.batch([nav(f"{apps.httpbin}/forms/post"), *(fill(label, value) for label, value in HTTPBIN_FILL),
                                 press("Submit order button"), {"name": "get_page_text", "input": {"tabId": 1}}])
        check("Grace Hopper" in outputs[-1]["text"], outputs[-1])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": f"{apps.httpbin}/forms/post"})
        await c.snapshot()
        kinds = {"Large": ("radio", "radio"), "Cheese": ("checkbox", "checkbox"), "Onion": ("checkbox", "checkbox")}
        fields = []
        for label, value in HTTPBIN_FILL:
            role, kind = kinds.get(label, ("textbox", "textbox"))
            fields.append({"name": label, "type": kind, "target": c.ref(role, label),
                           "value": "true" if value is True else value})
        await c.call("browser_fill_form", {"fields": fields})
        await c.call("browser_click", {"element": "Submit order button", "target": c.ref("button", "Submit order")})
        await c.snapshot()
        check("Grace Hopper" in c.snap, c.snap[:2000])

    async def verify(c, apps):
        echoed = json.loads(await c.js("document.querySelector('pre').textContent"))
        check(echoed["form"] == {
            "custname": "Grace Hopper", "custtel": "555-0100", "custemail": "grace@example.com",
            "size": "large", "topping": ["cheese", "onion"], "delivery": "", "comments": "Ring twice",
        }, echoed["form"])


@flow("todo app inside an iframe")
class FramedTodo:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": f"{apps.site}/glue/links.html?httpbin=x"})
        box = await c.first("What needs to be done? input")
        await c.batch([click(box["ref"]), typing("Framed todo"), key("Return")])

    async def stephost_batch(c, apps):
        await c.batch([nav(f"{apps.site}/glue/links.html?httpbin=x"), type_into("What needs to be done? input", "Framed todo"),
                       key("Return")])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": f"{apps.site}/glue/links.html?httpbin=x"})
        await c.snapshot()
        box = c.ref("textbox", "What needs to be done?")
        await c.call("browser_type", {"element": "New todo input in the frame", "target": box, "text": "Framed todo", "submit": True})

    async def verify(c, apps):
        stored = await c.js("JSON.parse(localStorage.getItem('todos-vanillajs')).todos.map(t => t.title)")
        check(stored[-1:] == ["Framed todo"], stored)


@flow("native confirm accepted")
class NativeConfirm:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": f"{apps.site}/glue/links.html?httpbin=x"})
        button = await c.first("Delete draft button")
        outputs = await c.batch([click(button["ref"]), {"name": "dialog", "input": {"tabId": 1, "action": "accept"}}])
        check(outputs[1]["dialog_text"] == "Delete the draft?", outputs[1])

    async def stephost_batch(c, apps):
        outputs = await c.batch([nav(f"{apps.site}/glue/links.html?httpbin=x"), press("Delete draft button"),
                                 {"name": "dialog", "input": {"tabId": 1, "action": "accept"}}])
        check(outputs[2]["dialog_text"] == "Delete the draft?", outputs[2])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": f"{apps.site}/glue/links.html?httpbin=x"})
        await c.snapshot()
        text = await c.call("browser_click", {"element": "Delete draft button", "target": c.ref("button", "Delete draft")})
        check("Delete the draft?" in text, text[:1500])
        await c.call("browser_handle_dialog", {"accept": True})

    async def verify(c, apps):
        answer = await c.js("document.getElementById('answer').textContent")
        check(answer == "deleted", answer)


@flow("datasette SQL editor")
class Datasette:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": f"{apps.datasette}/garden"})
        editor = await c.first("SQL query editor")
        await c.batch([click(editor["ref"]), key("ctrl+a Delete"), typing(SQL)])
        run = await c.first("Run SQL button")
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": run["ref"]})

    async def stephost_batch(c, apps):
        await c.batch([nav(f"{apps.datasette}/garden"), press("SQL query editor"), key("ctrl+a Delete"), typing(SQL),
                       press("Run SQL button")])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": f"{apps.datasette}/garden"})
        await c.snapshot()
        # The editor is the unnamed textbox under the "Custom SQL query" heading
        # (CodeMirror 5's hidden textarea, which its text lines cover, so a click
        # goes to the line holding the query). As in the stephost flow: select
        # all, delete, type (a fill alone adds to CodeMirror's text, not replaces it).
        editor = c.ref_after("textbox", "Custom SQL query")
        await c.call("browser_click", {"element": "SQL query editor", "target": c.parent_of("select * from plants")})
        await c.call("browser_press_key", {"key": "Control+a"})
        await c.call("browser_press_key", {"key": "Delete"})
        await c.call("browser_type", {"element": "SQL query editor", "target": editor, "text": SQL})
        await c.call("browser_click", {"element": "Run SQL button", "target": c.ref("button", "Run SQL")})

    async def verify(c, apps):
        shown = await c.js(
            "[...document.querySelectorAll('table.rows-and-columns tbody tr')].map(tr => [...tr.cells].map(c => c.innerText.trim()))"
        )
        with sqlite3.connect(apps.db) as conn:
            expected = [[name, str(height)] for name, height in conn.execute(SQL)]
        check(shown == expected, shown)
        sql = await c.js("new URLSearchParams(location.search).get('sql')")
        check(sql == SQL, sql)


# --- issue 40: the PyPI apps of tests/e2e/test_web_apps_pypi.py, same flows and checks.
# Each flow run makes its own values (apps.next()), since every side and run shares
# the servers; JupyterLab opens with ?reset, so each run starts from its launcher.

NOTEBOOK_CODE = "print(sum(range(10)) * 1001)"


def page_text(c):
    return c.js("document.body.innerText")


@flow("Django admin: add a book")
class DjangoAdmin:
    async def stephost(c, apps):
        c.title = f"Kindred {apps.next()}"
        await c.call("navigate", {"tabId": 1, "url": f"{apps.django}/admin/"})
        tree = (await c.call("read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
        await c.batch([
            {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, "Username"), "value": DJANGO_USER}},
            {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, "Password"), "value": DJANGO_PASSWORD}},
            click(ref_on_line(tree, "Log in")),
        ])
        index = (await c.call("read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": ref_on_line(index, '"Add"', "book/add/")})
        tree = (await c.call("read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
        await c.batch([
            {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, 'textbox "Title:"'), "value": c.title}},
            {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, 'combobox "Author:"'), "value": "Octavia E. Butler"}},
            {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, 'textbox "Publication date:"'), "value": "1979-06-01"}},
            {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, 'checkbox "In print"'), "value": True}},
            click(ref_on_line(tree, 'button "Save"')),
        ])

    async def stephost_batch(c, apps):
        c.title = f"Kindred {apps.next()}"
        await c.batch([
            nav(f"{apps.django}/admin/library/book/add/"),
            fill("Username", DJANGO_USER), fill("Password", DJANGO_PASSWORD), press("Log in button"),
            fill("Title field", c.title), fill("Author select", "Octavia E. Butler"),
            fill("Publication date field", "1979-06-01"), fill("In print checkbox", True), press("Save button"),
        ])

    async def playwright(c, apps):
        c.title = f"Kindred {apps.next()}"
        await c.call("browser_navigate", {"url": f"{apps.django}/admin/"})
        await c.snapshot()
        await c.call("browser_fill_form", {"fields": [
            {"name": "Username", "type": "textbox", "target": c.ref("textbox", "Username"), "value": DJANGO_USER},
            {"name": "Password", "type": "textbox", "target": c.ref("textbox", "Password"), "value": DJANGO_PASSWORD},
        ]})
        await c.call("browser_click", {"element": "Log in button", "target": c.ref("button", "Log in")})
        await c.snapshot()
        # The index's rows: "Books", then its "Add" link.
        await c.call("browser_click", {"element": "Add book link", "target": c.ref_after("link", 'link "Books"')})
        await c.snapshot()
        await c.call("browser_fill_form", {"fields": [
            {"name": "Title", "type": "textbox", "target": c.ref("textbox", "Title"), "value": c.title},
            {"name": "Author", "type": "combobox", "target": c.ref("combobox", "Author"), "value": "Octavia E. Butler"},
            {"name": "Publication date", "type": "textbox", "target": c.ref("textbox", "Publication date"), "value": "1979-06-01"},
            {"name": "In print", "type": "checkbox", "target": c.ref("checkbox", "In print"), "value": "true"},
        ]})
        await c.call("browser_click", {"element": "Save button", "target": exact_ref(c.snap, "button", "Save")})

    async def verify(c, apps):
        with sqlite3.connect(apps.django_db) as conn:
            rows = conn.execute(
                "select b.published, b.in_print, a.name from library_book b join library_author a on a.id = b.author_id"
                " where b.title = ?", (c.title,)).fetchall()
        check(rows == [("1979-06-01", 1, "Octavia E. Butler")], rows)


@flow("JupyterLab: run a cell, save")
class JupyterLab:
    def url(apps):
        return f"{apps.jupyter}/lab?reset&token={apps.jupyter_token}"

    async def stephost(c, apps):
        c.file = f"sums{apps.next()}.ipynb"
        await c.call("navigate", {"tabId": 1, "url": JupyterLab.url(apps)})
        tile = (await c.call("wait_for_page", {"tabId": 1, "condition": "appears", "by": "description",
                                               "pattern": "Python 3 (ipykernel)"}))["match"]
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": tile["ref"]})
        await c.batch([
            type_into("textbox", NOTEBOOK_CODE), key("shift+Return"),
            {"name": "wait_for", "input": {"tabId": 1, "text": "45045", "timeout_ms": 20000}}, key("ctrl+s"),
            fill("File name", c.file), press("Rename and Save button"),
        ])

    async def stephost_batch(c, apps):
        c.file = f"sums{apps.next()}.ipynb"
        await c.batch([
            nav(JupyterLab.url(apps)), press("Python 3 (ipykernel) notebook"),
            type_into("code cell editor", NOTEBOOK_CODE), key("shift+Return"),
            {"name": "wait_for", "input": {"tabId": 1, "text": "45045", "timeout_ms": 20000}}, key("ctrl+s"),
            fill("File name", c.file), press("Rename and Save button"),
        ])

    async def playwright(c, apps):
        c.file = f"sums{apps.next()}.ipynb"
        await c.call("browser_navigate", {"url": JupyterLab.url(apps)})
        # JupyterLab draws its launcher after the page has loaded.
        await c.call("browser_wait_for", {"text": "Python 3 (ipykernel)"})
        await c.snapshot()
        # The tiles are unnamed buttons, each under its section's heading.
        await c.call("browser_click", {"element": "Python 3 (ipykernel) notebook tile",
                                       "target": c.ref_after("button", 'heading "Notebook"')})
        await c.snapshot()
        editor = c.ref("textbox", "")
        await c.call("browser_type", {"element": "code cell editor", "target": editor, "text": NOTEBOOK_CODE})
        await c.call("browser_press_key", {"key": "Shift+Enter"})
        await c.call("browser_wait_for", {"text": "45045"})
        await c.call("browser_press_key", {"key": "Control+s"})
        await c.snapshot()
        await c.call("browser_type", {"element": "File name", "target": c.ref("textbox", "File name"), "text": c.file})
        await c.call("browser_click", {"element": "Rename and Save button", "target": c.ref("button", "Rename and Save")})

    async def verify(c, apps):
        path = apps.jupyter_work / c.file
        check(path.exists(), f"no {path.name}: {sorted(p.name for p in apps.jupyter_work.iterdir())}")
        cells = json.loads(path.read_text())["cells"]
        check(cells and "".join(cells[0]["source"]) == NOTEBOOK_CODE, cells)
        outputs = ["".join(o.get("text", "")) for o in cells[0]["outputs"]]
        check(outputs == ["45045\n"], outputs)

    def after(apps):
        """Ends the notebook sessions (their kernels would be listed, hidden, in the
        next run's page)."""
        api = f"{apps.jupyter}/api/sessions"
        auth = {"Authorization": f"token {apps.jupyter_token}"}
        for session in json.loads(urllib.request.urlopen(urllib.request.Request(api, headers=auth), timeout=10).read()):
            gone = urllib.request.Request(f"{api}/{session['id']}", headers=auth, method="DELETE")
            urllib.request.urlopen(gone, timeout=10).read()


@flow("Shiny: slider + text")
class Shiny:
    async def stephost(c, apps):
        c.name = f"Ada{apps.next()}"
        await c.call("navigate", {"tabId": 1, "url": apps.shiny})
        slider = await c.first("Number of cups")
        await c.call("form_input", {"tabId": 1, "ref": slider["ref"], "value": 12})
        name = await c.first("Your name")
        await c.batch([click(name["ref"]), typing(c.name)])
        await c.call("wait_for_page", {"tabId": 1, "text": f"{c.name} orders"})

    async def stephost_batch(c, apps):
        c.name = f"Ada{apps.next()}"
        await c.batch([
            nav(apps.shiny), fill("Number of cups slider", 12), type_into("Your name", c.name),
            {"name": "wait_for", "input": {"tabId": 1, "text": f"{c.name} orders"}},
        ])

    async def playwright(c, apps):
        c.name = f"Ada{apps.next()}"
        await c.call("browser_navigate", {"url": apps.shiny})
        await c.snapshot()
        slider = exact_ref(c.snap, "slider", "Number of cups") or c.ref("textbox", "Number of cups")
        await c.call("browser_fill_form", {"fields": [
            {"name": "Number of cups", "type": "slider", "target": slider, "value": "12"},
            {"name": "Your name", "type": "textbox", "target": c.ref("textbox", "Your name"), "value": c.name},
        ]})
        await c.call("browser_wait_for", {"text": f"{c.name} orders"})

    async def verify(c, apps):
        text = await page_text(c)
        check(f"{c.name} orders 12 cups" in text, text)
        lines = apps.shiny_log.read_text().splitlines()
        check(f"cups=12 name={c.name}" in lines, lines[-5:])


@flow("Dash: slider + text")
class Dash:
    async def stephost(c, apps):
        c.name = f"Fern{apps.next()}"
        await c.call("navigate", {"tabId": 1, "url": apps.dash})
        tree = (await c.call("read_page", {"tabId": 1, "filter": "interactive"}))["tree"]
        await c.batch([
            {"name": "form_input", "input": {"tabId": 1, "ref": ref_on_line(tree, "- slider "), "value": 7}},
            click(ref_on_line(tree, 'textbox "Plant name"')), typing(c.name),
        ])
        await c.call("wait_for_page", {"tabId": 1, "text": f"{c.name} gets"})

    async def stephost_batch(c, apps):
        c.name = f"Fern{apps.next()}"
        await c.batch([
            nav(apps.dash), fill("Litres per week slider", 7), type_into("Plant name", c.name),
            {"name": "wait_for", "input": {"tabId": 1, "text": f"{c.name} gets"}},
        ])

    async def playwright(c, apps):
        c.name = f"Fern{apps.next()}"
        await c.call("browser_navigate", {"url": apps.dash})
        await c.snapshot()
        await c.call("browser_fill_form", {"fields": [
            {"name": "Litres per week", "type": "slider", "target": c.ref("slider", ""), "value": "7"},
            {"name": "Plant name", "type": "textbox", "target": c.ref("textbox", "Plant name"), "value": c.name},
        ]})
        await c.call("browser_wait_for", {"text": f"{c.name} gets"})

    async def verify(c, apps):
        text = await page_text(c)
        check(f"{c.name} gets 7 litres" in text, text)
        lines = apps.dash_log.read_text().splitlines()
        check(f"litres=7 plant={c.name}" in lines, lines[-5:])


@flow("MkDocs Material search")
class MkDocs:
    async def stephost(c, apps):
        await c.call("navigate", {"tabId": 1, "url": apps.mkdocs + "/"})
        box = await c.first("Search box")
        await c.batch([click(box["ref"]), typing("emitters")])
        hit = await c.first("Drip irrigation link")
        await c.call("computer", {"tabId": 1, "action": "left_click", "ref": hit["ref"]})

    async def stephost_batch(c, apps):
        await c.batch([nav(apps.mkdocs + "/"), type_into("Search box", "emitters"), press("Drip irrigation link")])

    async def playwright(c, apps):
        await c.call("browser_navigate", {"url": apps.mkdocs + "/"})
        await c.snapshot()
        await c.call("browser_type", {"element": "Search box", "target": c.ref("textbox", "Search"), "text": "emitters"})
        await c.call("browser_wait_for", {"text": "Drip irrigation"})
        await c.snapshot()
        # The result's link has no name in the snapshot; its heading is inside it.
        await c.call("browser_click", {"element": "Drip irrigation result", "target": c.ref("heading", "Drip irrigation")})

    async def verify(c, apps):
        where = await c.js("[location.pathname, location.hash, document.querySelector('h1').textContent.trim()]")
        check(where == ["/watering/", "#drip-irrigation", "Watering"], where)


PYPI_FLOWS = {"Django admin: add a book", "JupyterLab: run a cell, save", "Shiny: slider + text", "Dash: slider + text",
              "MkDocs Material search"}


# --- the run ---------------------------------------------------------------------------

@contextlib.asynccontextmanager
async def session_of(params):
    async with stdio_client(params, errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def server_params(side, stephost_bin, workdir):
    if side.startswith("stephost"):
        return StdioServerParameters(command=stephost_bin, args=["serve"], env=dict(os.environ, STEPHOST_LOG="warn"))
    # Its working directory takes the snapshot and console files it writes per call.
    return StdioServerParameters(command=str(PW_BIN), args=PW_ARGS, env=dict(os.environ), cwd=str(workdir))


async def run_side(side, flows, apps, stephost_bin, workdir, log):
    results = {}
    async with session_of(server_params(side, stephost_bin, workdir)) as session:
        cls = Stephost if side.startswith("stephost") else Playwright
        warm = cls(session)
        await warm.warm()
        for name in flows:
            c = cls(session)
            c.snap = ""
            started = time.perf_counter()
            ok, why = True, ""
            try:
                await getattr(FLOWS[name], side)(c, apps)
                elapsed = time.perf_counter() - started
                c.checking = True
                await FLOWS[name].verify(c, apps)
            except Exception as exc:  # a failed flow: record it, go on with the next
                elapsed = time.perf_counter() - started
                ok = False
                why = f"{type(exc).__name__}: {exc}"[:400]
                log.write(f"--- {side} / {name} failed:\n{traceback.format_exc()}\n")
            if hasattr(FLOWS[name], "after"):  # the flow's own clean-up, not timed
                FLOWS[name].after(apps)
            results[name] = {"pass": ok, "ms": elapsed * 1000, "calls": c.calls, "why": why}
            print(f"  {side:<14} {name:<28} {'pass' if ok else 'FAIL'} {elapsed * 1000:8.0f} ms {c.calls:3} calls {why[:120]}",
                  file=sys.stderr)
    return results


# --- per-action latency: computer in a browser_batch vs raw W3C actions -----------

IDLE = """<!doctype html><html><head><title>Idle</title></head><body>
<button id="b" onclick="window.clicks = (window.clicks || 0) + 1">Press me</button>
<input id="t" aria-label="Text field"></body></html>"""


class Driver:
    """chromedriver started here, one session, one kept-alive HTTP connection, with
    the Chromium arguments stephost's host passes by default."""

    ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--no-default-browser-check", "--window-size=1280,800"]

    def __init__(self):
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="web-flows-bench-driver-")
        self.proc = subprocess.Popen(["/usr/bin/chromedriver", f"--port={self.port}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port)
                self.raw("GET", "/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        caps = {"browserName": "chrome", "goog:chromeOptions": {"binary": "/usr/bin/chromium",
                "args": [*self.ARGS, f"--user-data-dir={self.profile}"]}}
        session = self.raw("POST", "/session", {"capabilities": {"alwaysMatch": caps}})
        self.base = f"/session/{session['sessionId']}"

    def raw(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json; charset=utf-8", "Content-Length": str(len(data or b""))}
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        value = json.loads(response.read() or b"null")["value"]
        if response.status >= 400:
            raise RuntimeError(f"{method} {path}: {value}")
        return value

    def cmd(self, method, path, body=None):
        return self.raw(method, self.base + path, {} if method == "POST" and body is None else body)

    def close(self):
        with contextlib.suppress(Exception):
            self.raw("DELETE", self.base)
        self.proc.terminate()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


def raw_latency(url, n):
    """Median ms of a click (pointer move/down/up at the button's centre) and of a
    10-character type (key down/up per character), each one POST /actions."""
    d = Driver()
    try:
        d.cmd("POST", "/url", {"url": url})
        rect = d.cmd("POST", "/execute/sync", {"script":
            "const r = document.getElementById('b').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]",
            "args": []})
        click_body = {"actions": [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": [
            {"type": "pointerMove", "duration": 0, "x": int(rect[0]), "y": int(rect[1]), "origin": "viewport"},
            {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0}]}]}
        keys = []
        for ch in "abcdefghij":
            keys += [{"type": "keyDown", "value": ch}, {"type": "keyUp", "value": ch}]
        type_body = {"actions": [{"type": "key", "id": "keyboard", "actions": keys}]}
        clicks, types, element_clicks = [], [], []
        for _ in range(n):
            t = time.perf_counter()
            d.cmd("POST", "/actions", click_body)
            clicks.append((time.perf_counter() - t) * 1000)
        # WebDriver's own click on an element it located once (as a ref is read
        # once): Element Click scrolls it into view, checks that it is not
        # obscured, clicks its centre and waits for a navigation it started.
        button = d.cmd("POST", "/element", {"using": "css selector", "value": "#b"})
        element = next(iter(button.values()))
        for _ in range(n):
            t = time.perf_counter()
            d.cmd("POST", f"/element/{element}/click")
            element_clicks.append((time.perf_counter() - t) * 1000)
        d.cmd("POST", "/execute/sync", {"script": "document.getElementById('t').focus()", "args": []})
        for _ in range(n):
            t = time.perf_counter()
            d.cmd("POST", "/actions", type_body)
            types.append((time.perf_counter() - t) * 1000)
        got = d.cmd("POST", "/execute/sync", {"script": "return [window.clicks, document.getElementById('t').value.length]", "args": []})
        assert got == [2 * n, 10 * n], got
        return statistics.median(clicks), statistics.median(types), statistics.median(element_clicks)
    finally:
        d.close()


async def stephost_latency(stephost_bin, url, n):
    async with session_of(server_params("stephost", stephost_bin, None)) as session:
        c = Stephost(session)
        await c.call("navigate", {"tabId": 1, "url": url})
        button = await c.first("Press me button")
        result = await session.call_tool("browser_batch", {"actions": [click(button["ref"])] * n})
        check(result.isError is False, result.structuredContent)
        clicks = [r["time_ms"] for r in result.structuredContent["results"]]
        field = await c.first("Text field")
        result = await session.call_tool("browser_batch", {"actions": [click(field["ref"])] + [typing("abcdefghij")] * n})
        check(result.isError is False, result.structuredContent)
        types = [r["time_ms"] for r in result.structuredContent["results"][1:]]
        got = await c.js("[window.clicks, document.getElementById('t').value.length]")
        check(got == [n, 10 * n], got)
        return statistics.median(clicks), statistics.median(types)


def versions(stephost_bin):
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    pw = json.loads((PW_DIR / "node_modules" / "@playwright" / "mcp" / "package.json").read_text())["version"]
    chromium = subprocess.run(["/usr/bin/chromium", "--version"], capture_output=True, text=True).stdout.strip()
    return {"stephost": head + (" + uncommitted tree" if dirty else ""), "playwright_mcp": pw, "chromium": chromium}


def fmt(cell):
    return f"{cell['passes']}/{cell['runs']} | {cell['ms']:.0f} ms | {cell['calls']:g}"


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="flow names holding these words")
    parser.add_argument("--latency", action="store_true", help="also measure per-action latency vs raw WebDriver")
    parser.add_argument("--latency-n", type=int, default=50)
    parser.add_argument("--no-flows", action="store_true")
    parser.add_argument("--sides", nargs="*", default=["stephost", "stephost_batch", "playwright"],
                        help="which of stephost, stephost_batch, playwright to run (the table needs all three)")
    parser.add_argument("--stephost", default=str(ROOT / "target" / "release" / "stephost"))
    parser.add_argument("--json", help="also write the figures to this file")
    opts = parser.parse_args()

    if not PW_BIN.exists():
        sys.exit(f"install Playwright MCP first: PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix {PW_DIR} @playwright/mcp@{PW_VERSION}")
    if not fetched():
        sys.exit("fetch the web apps first: scripts/webapps.sh")
    flows = [n for n in FLOWS if not opts.only or any(w.lower() in n.lower() for w in opts.only)]
    workdir = BENCH_CACHE / "playwright-work"
    workdir.mkdir(parents=True, exist_ok=True)
    log = open(BENCH_CACHE / "web_flows_bench.log", "w")
    out = {"versions": versions(opts.stephost), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes")}
    sides = opts.sides
    if not opts.no_flows:
        runs = {s: [] for s in sides}
        pypi = any(name in PYPI_FLOWS for name in flows)
        if pypi and not pypi_fetched():
            sys.exit("fetch the PyPI web apps first: scripts/webapps.sh")
        with Apps(pypi=pypi) as apps:
            for run in range(opts.runs):
                print(f"run {run + 1}/{opts.runs}", file=sys.stderr)
                # Which side goes first rotates from run to run.
                for side in sides[run % len(sides):] + sides[:run % len(sides)]:
                    runs[side].append(await run_side(side, flows, apps, opts.stephost, workdir, log))
        table = {}
        for side in sides:
            for name in flows:
                cells = [r[name] for r in runs[side]]
                table.setdefault(name, {})[side] = {
                    "runs": len(cells), "passes": sum(c["pass"] for c in cells),
                    "ms": statistics.median(c["ms"] for c in cells),
                    "calls": statistics.median(c["calls"] for c in cells),
                    "failures": sorted({c["why"] for c in cells if not c["pass"]}),
                }
        out["flows"] = table
        if len(sides) < 3:
            print(json.dumps(table, indent=1))
            return
        print("\n| flow | stephost, look then act: pass | time | calls | stephost, one batch by description: pass | time | calls | Playwright MCP pass | time | calls |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        totals = {s: {"passes": 0, "runs": 0, "ms": 0.0, "calls": 0} for s in sides}
        for name in flows:
            print(f"| {name} | {' | '.join(fmt(table[name][side]) for side in sides)} |")
            for side in sides:
                for k in totals[side]:
                    totals[side][k] += table[name][side][k]
        print(f"| **total** | {' | '.join('**' + fmt(totals[side]).replace(' | ', '** | **') + '**' for side in sides)} |")
        tp = totals["playwright"]
        for side in sides[:2]:
            ts = totals[side]
            print(f"\n{side} / Playwright MCP: time {ts['ms'] / tp['ms']:.2f}x, calls {ts['calls'] / tp['calls']:.2f}x")
        out["totals"] = totals
        for name in flows:
            for side in sides:
                for why in table[name][side]["failures"]:
                    print(f"- {side} failed {name}: {why}")
    if opts.latency:
        with tempfile.TemporaryDirectory() as root:
            (Path(root) / "idle.html").write_text(IDLE)

            class Quiet(SimpleHTTPRequestHandler):
                def log_message(self, *args):
                    pass

            server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=root))
            threading.Thread(target=server.serve_forever, daemon=True).start()
            url = f"http://127.0.0.1:{server.server_address[1]}/idle.html"
            sh = await stephost_latency(opts.stephost, url, opts.latency_n)
            raw = await asyncio.to_thread(raw_latency, url, opts.latency_n)
            server.shutdown()
        out["latency"] = {"stephost_ms": sh, "raw_ms": raw}
        print(f"\n| action ({opts.latency_n} each, idle page) | stephost computer in browser_batch (time_ms) | raw W3C actions POST | ratio |")
        print("|---|---:|---:|---:|")
        for i, what in enumerate(("left_click by ref", "type 10 chars")):
            print(f"| {what} | {sh[i]:.1f} ms | {raw[i]:.1f} ms | {sh[i] / raw[i]:.2f}x |")
        print(f"| left_click by ref vs WebDriver Element Click | {sh[0]:.1f} ms | {raw[2]:.1f} ms | {sh[0] / raw[2]:.2f}x |")
    print(f"\n{out['versions']}; {out['date']}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
