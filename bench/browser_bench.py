#!/usr/bin/env python3
"""The same 10-action browser flow, four ways, on one machine and one Chromium build:

  batch      one `browser_batch` call to `stephost serve` (stdio MCP)
  single     ten single tool calls to `stephost serve` (same server, same session)
  floor      the same WebDriver commands the browser plugin sends, straight from this
             script to a chromedriver it started itself (one kept-alive connection)
  playwright ten calls to Playwright MCP (`npx @playwright/mcp`) pointed at the same
             Debian Chromium, headless, otherwise its default settings

All clients run in this process (the Python MCP SDK for the three MCP modes). Every
mode runs on a warm browser (started and used in the warm-up runs), and the runs are
interleaved, rotating the order, so load from elsewhere on the machine falls on all
modes alike. Each run checks that the form really was submitted.

Usage (from the repository root, after `cargo build --release`):
  .venv/bin/python bench/browser_bench.py [--runs 15] [--warmup 3] [--no-playwright]
"""

import argparse
import asyncio
import base64
import contextlib
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[1]
# The page library as the plugin sends it: accname.js, then page.js (page.rs).
PAGE_JS = "".join((ROOT / "plugins" / "browser" / "src" / f).read_text() for f in ("accname.js", "page.js"))
PLAYWRIGHT_MCP = "@playwright/mcp@0.0.86"

FORM = """<!doctype html><html><head><title>Signup</title></head><body>
<h1>Sign up</h1>
<form action="/done.html" method="get">
  <label for="name">Full name</label> <input id="name" name="name" placeholder="Your name">
  <label>Email <input type="email" name="email"></label>
  <select name="plan" aria-label="Plan"><option value="free">Free</option><option value="pro">Pro plan</option></select>
  <button type="submit">Create account</button>
</form></body></html>"""
DONE = """<!doctype html><html><head><title>Done</title></head><body><h1>Welcome</h1><p id="q"></p>
<script>document.getElementById('q').textContent = 'Query: ' +
  decodeURIComponent(location.search.slice(1)).replace(/\\+/g, ' ');</script></body></html>"""
EXPECTED = "Query: name=Ada Lovelace&email=&plan=pro"
# The plugin's settle probe (plugins/browser/src/browser.rs), sent after input.
SETTLE_PROBE = re.sub(
    r"\\\n\s*",
    "",
    re.search(r'const PROBE: &str = "(.*?)";', (ROOT / "plugins" / "browser" / "src" / "browser.rs").read_text(), re.S).group(1),
)

# The capabilities stephost's host builds by default (host/src/capabilities/webdriver).
CHROME_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--no-default-browser-check", "--window-size=1280,800",
]


def serve_site():
    root = Path(tempfile.mkdtemp(prefix="browser-bench-site-"))
    (root / "form.html").write_text(FORM)
    (root / "done.html").write_text(DONE)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    server.root = root
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


# --- stephost: one browser_batch call, or ten single calls -----------------------

def batch_actions(site):
    return [
        {"name": "navigate", "input": {"tabId": 1, "url": f"{site}/form.html"}},
        {"name": "find", "input": {"tabId": 1, "query": "full name field"}},
        {"name": "form_input", "input": {"tabId": 1, "ref": "${STEP_2.matches[0].ref}", "value": "Ada Lovelace"}},
        {"name": "find", "input": {"tabId": 1, "query": "plan dropdown"}},
        {"name": "form_input", "input": {"tabId": 1, "ref": "${STEP_4.matches[0].ref}", "value": "Pro plan"}},
        {"name": "find", "input": {"tabId": 1, "query": "Create account button"}},
        {"name": "computer", "input": {"tabId": 1, "action": "left_click", "ref": "${STEP_6.matches[0].ref}"}},
        {"name": "get_page_text", "input": {"tabId": 1}},
        {"name": "computer", "input": {"tabId": 1, "action": "screenshot"}},
        {"name": "navigate", "input": {"tabId": 1, "url": "back"}},
    ]


async def stephost_batch(client, site, session_id):
    result = await client.call_tool("browser_batch", {"actions": batch_actions(site), "session_id": session_id})
    data = result.structuredContent
    assert result.isError is False, data
    assert EXPECTED in data["results"][7]["output"]["text"], data["results"][7]
    assert any(c.type == "image" for c in result.content)


async def stephost_single(client, site, session_id):
    async def call(tool, args):
        result = await client.call_tool(tool, {**args, "session_id": session_id})
        assert result.isError is False, result.structuredContent
        return result

    def value(result):
        return result.structuredContent["value"]

    await call("navigate", {"tabId": 1, "url": f"{site}/form.html"})
    name = value(await call("find", {"tabId": 1, "query": "full name field"}))
    await call("form_input", {"tabId": 1, "ref": name["matches"][0]["ref"], "value": "Ada Lovelace"})
    plan = value(await call("find", {"tabId": 1, "query": "plan dropdown"}))
    await call("form_input", {"tabId": 1, "ref": plan["matches"][0]["ref"], "value": "Pro plan"})
    submit = value(await call("find", {"tabId": 1, "query": "Create account button"}))
    await call("computer", {"tabId": 1, "action": "left_click", "ref": submit["matches"][0]["ref"]})
    text = value(await call("get_page_text", {"tabId": 1}))
    assert EXPECTED in text["text"], text
    shot = await call("computer", {"tabId": 1, "action": "screenshot"})
    assert any(c.type == "image" for c in shot.content)
    await call("navigate", {"tabId": 1, "url": "back"})


# --- the floor: the plugin's WebDriver commands, sent straight to chromedriver -----

class Floor:
    """chromedriver started here, one session, one kept-alive HTTP connection. Sends
    exactly the commands the browser plugin sends for the flow (15 of them)."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.profile = tempfile.mkdtemp(prefix="browser-bench-floor-")
        self.proc = subprocess.Popen(
            ["/usr/bin/chromedriver", f"--port={self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
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
        caps = {
            "browserName": "chrome", "unhandledPromptBehavior": "ignore", "pageLoadStrategy": "normal",
            "timeouts": {"pageLoad": 20000, "script": 10000, "implicit": 0},
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": [*CHROME_ARGS, f"--user-data-dir={self.profile}"]},
        }
        session = self.raw("POST", "/session", {"capabilities": {"alwaysMatch": caps}})
        self.base = f"/session/{session['sessionId']}"
        self.next_ref = 1

    def raw(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json; charset=utf-8"} if data is not None else {}
        if method != "GET":
            headers["Content-Length"] = str(len(data or b""))
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        value = json.loads(response.read() or b"null")["value"]
        if response.status >= 400:
            raise RuntimeError(f"{method} {path}: {value}")
        return value

    def cmd(self, method, path, body=None):
        if method == "POST" and body is None:
            body = {}
        return self.raw(method, self.base + path, body)

    def page(self, op, args):
        result = self.cmd("POST", "/execute/sync", {"script": PAGE_JS, "args": [op, {**args, "start": self.next_ref}]})
        self.next_ref = max(self.next_ref, result.get("next", 0))
        assert result["status"] == "ok", result
        return result

    def go(self, path, body=None):
        self.cmd("POST", path, body)
        return self.page("info", {})

    def settle(self):
        """The plugin's wait after input: until no navigation is pending."""
        for _ in range(500):
            if self.cmd("POST", "/execute/sync", {"script": SETTLE_PROBE, "args": []}) is not False:
                return
            time.sleep(0.01)

    def flow(self, site):
        self.go("/url", {"url": f"{site}/form.html"})
        name = self.page("find", {"query": "full name field", "limit": 20})["matches"][0]["ref"]
        self.page("form_input", {"ref": name, "value": "Ada Lovelace"})
        plan = self.page("find", {"query": "plan dropdown", "limit": 20})["matches"][0]["ref"]
        self.page("form_input", {"ref": plan, "value": "Pro plan"})
        submit = self.page("find", {"query": "Create account button", "limit": 20})["matches"][0]["ref"]
        point = self.page("point", {"ref": submit})
        pointer = [
            {"type": "pointerMove", "duration": 0, "x": point["x"], "y": point["y"], "origin": "viewport"},
            {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0},
        ]
        self.cmd("POST", "/actions", {"actions": [
            {"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": pointer}
        ]})
        self.settle()
        text = self.page("text", {})
        assert EXPECTED in text["text"], text
        png = base64.b64decode(self.cmd("GET", "/screenshot"))
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        self.go("/back")

    def close(self):
        with contextlib.suppress(Exception):
            self.raw("DELETE", self.base)
        with contextlib.suppress(Exception):
            os.killpg(self.proc.pid, 9)
        self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


# --- Playwright MCP ------------------------------------------------------------------

REF = re.compile(r'(\w+) "([^"]*)"[^\n]*?\[ref=([^\]]+)\]')


def find_ref(snapshot, role, name):
    for r, n, ref in REF.findall(snapshot):
        if r == role and name in n:
            return ref
    raise AssertionError(f"no {role} {name!r} in snapshot:\n{snapshot[:2000]}")


def text_of(result):
    return "\n".join(c.text for c in result.content if c.type == "text")


async def playwright_flow(client, site):
    async def call(tool, args):
        result = await client.call_tool(tool, args)
        assert not result.isError, text_of(result)[:2000]
        return result

    await call("browser_navigate", {"url": f"{site}/form.html"})
    snap = text_of(await call("browser_snapshot", {}))
    await call("browser_type", {"element": "Full name field", "target": find_ref(snap, "textbox", "Full name"), "text": "Ada Lovelace"})
    snap = text_of(await call("browser_snapshot", {}))
    await call("browser_select_option", {"element": "Plan", "target": find_ref(snap, "combobox", "Plan"), "values": ["Pro plan"]})
    snap = text_of(await call("browser_snapshot", {}))
    await call("browser_click", {"element": "Create account button", "target": find_ref(snap, "button", "Create account")})
    text = text_of(await call("browser_snapshot", {}))
    assert "Ada Lovelace" in text and "plan=pro" in text, text[:2000]
    shot = await call("browser_take_screenshot", {"type": "png", "scale": "css"})
    assert any(c.type == "image" for c in shot.content)
    await call("browser_navigate_back", {})


# --- the run -----------------------------------------------------------------------------

def summarize(name, times, calls):
    ms = sorted(t * 1000 for t in times)
    return {
        "mode": name,
        "calls": calls,
        "median_ms": statistics.median(ms),
        "min_ms": ms[0],
        "max_ms": ms[-1],
        "per_action_ms": statistics.median(ms) / 10,
    }


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--no-playwright", action="store_true")
    parser.add_argument("--stephost", default=str(ROOT / "target" / "release" / "stephost"))
    parser.add_argument("--json", help="also write the figures to this file")
    opts = parser.parse_args()

    server, site = serve_site()
    playwright_dir = tempfile.mkdtemp(prefix="browser-bench-playwright-")
    env = dict(os.environ, STEPHOST_LOG="warn")
    stephost = StdioServerParameters(command=opts.stephost, args=["serve"], env=env)
    playwright = StdioServerParameters(
        command="npx",
        # --no-sandbox: these machines run as root, where Chromium refuses its sandbox
        # (stephost passes the same flag).
        args=["-y", PLAYWRIGHT_MCP, "--headless", "--no-sandbox", "--executable-path", "/usr/bin/chromium"],
        env=dict(os.environ),
        # It writes a snapshot file and a console log per call into its working
        # directory (its default): keep them out of the repository.
        cwd=playwright_dir,
    )
    times = {"batch": [], "single": [], "floor": [], "playwright": []}
    async with contextlib.AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(stephost))
        host = await stack.enter_async_context(ClientSession(read, write))
        await host.initialize()
        pw = None
        if not opts.no_playwright:
            read, write = await stack.enter_async_context(stdio_client(playwright))
            pw = await stack.enter_async_context(ClientSession(read, write))
            await pw.initialize()
        floor = Floor()
        stack.callback(floor.close)

        modes = {
            "batch": lambda: stephost_batch(host, site, "bench"),
            "single": lambda: stephost_single(host, site, "bench"),
            "floor": lambda: asyncio.to_thread(floor.flow, site),
        }
        if pw is not None:
            modes["playwright"] = lambda: playwright_flow(pw, site)
        order = list(modes)
        for run in range(opts.warmup + opts.runs):
            rotated = order[run % len(order):] + order[:run % len(order)]
            for mode in rotated:
                started = time.perf_counter()
                await modes[mode]()
                elapsed = time.perf_counter() - started
                if run >= opts.warmup:
                    times[mode].append(elapsed)
            print(f"run {run + 1}/{opts.warmup + opts.runs}" + (" (warm-up)" if run < opts.warmup else ""), file=sys.stderr)

    server.shutdown()
    shutil.rmtree(server.root, ignore_errors=True)
    shutil.rmtree(playwright_dir, ignore_errors=True)
    calls = {"batch": "1 MCP call", "single": "10 MCP calls", "floor": "15 WebDriver requests", "playwright": "10 MCP calls"}
    rows = [summarize(m, t, calls[m]) for m, t in times.items() if t]
    floor_ms = next(r["median_ms"] for r in rows if r["mode"] == "floor")
    print(f"\n{'mode':<11} {'calls':<22} {'median ms':>10} {'min-max ms':>16} {'vs floor':>9}")
    for r in rows:
        print(f"{r['mode']:<11} {r['calls']:<22} {r['median_ms']:>10.1f} {r['min_ms']:>7.1f}-{r['max_ms']:<8.1f} {r['median_ms'] / floor_ms:>8.2f}x")
    pw_row = next((r for r in rows if r["mode"] == "playwright"), None)
    if pw_row:
        batch = next(r for r in rows if r["mode"] == "batch")
        print(f"\nPlaywright MCP ten calls / stephost browser_batch: {pw_row['median_ms'] / batch['median_ms']:.2f}x")
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
