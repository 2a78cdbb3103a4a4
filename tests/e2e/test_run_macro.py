"""run_macro as desktop-touch-mcp's clients send it, against a real X desktop and a
real browser: the seed's two examples as written (the first against mousepad, a
third-party GTK editor, with the window title substituted; the second against a
local page whose text contains "Example Domain"), desktop-touch's result shape
(0-based steps, ok/text/error/code, warnings) and envelope, and a Windows-only tool
refused with nothing run.

What arrived is checked without the host: mousepad saves the file it was opened
on, and the test reads that file.

Each module run starts Xvfb twice, bare and with openbox, each inside its own D-Bus
session (mousepad's accessibility tree lives on that session's accessibility bus).

Needs: xvfb, openbox, x11-utils, mousepad, dbus-x11, at-spi2-core, chromium +
chromium-driver (scripts/test.sh installs them).
"""

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import BIN, free_display, need, serve_folder, server_env, stop_processes, wait_for

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

EXTRA_PLUGINS = os.environ.get("STEPHOST_DESKTOP_PLUGINS")  # a folder with desktop.wasm, while developing
EDITOR = "Mousepad"

EXAMPLE = """<!doctype html><html><head><title>Example Domain</title></head><body>
<div><h1>Example Domain</h1><p>This domain is for use in documentation examples.</p>
<p><a href="/more.html">More information...</a></p></div>
<p id="late"></p>
<script>setTimeout(() => { document.getElementById('late').textContent = 'Arrived late'; }, 700);</script>
</body></html>"""

MORE = """<!doctype html><html><head><title>More</title></head><body><h1>More information</h1></body></html>"""
# A form whose page answers browser_fill as apps do: one field it keeps, one it
# formats (digits only), one a controlled component puts back on the next frame,
# and one it sets itself (read-only).
FORM = """<!doctype html><html><head><title>Fill</title></head><body>
<input id="name" aria-label="Name">
<input id="phone" aria-label="Phone">
<input id="code" aria-label="Code" value="A1">
<input id="total" aria-label="Total" value="42" readonly>
<script>
const phone = document.getElementById('phone');
phone.addEventListener('input', () => { phone.value = phone.value.replace(/[^0-9]/g, ''); });
const code = document.getElementById('code');
code.addEventListener('input', () => requestAnimationFrame(() => { code.value = 'A1'; }));
</script></body></html>"""

# A page whose named elements shadow what a script reads: images named after the
# document's properties, a form whose controls are named after the form's.
CLOBBERED = """<!doctype html><html><head><title>Clobbered</title></head><body>
<img name="body" alt=""><img name="querySelector" alt=""><img name="querySelectorAll" alt="">
<img name="getElementById" alt=""><img name="elementFromPoint" alt="">
<form id="order" title="Order form">
  <input id="who" name="tagName" aria-label="Who">
  <input name="querySelectorAll" aria-label="Where">
  <input name="getAttribute" aria-label="When">
  <input name="id" aria-label="Which">
  <input name="parentElement" aria-label="Why">
  <button type="button" id="send" onclick="this.setAttribute('data-sent', 'yes')">Send order</button>
</form>
</body></html>"""




class Desk:
    """Xvfb (with openbox or bare) in a private D-Bus session, with mousepad open
    on a file of its own."""

    def __init__(self, wm):
        self.wm = wm
        self.procs = []
        self.dir = Path(tempfile.mkdtemp(prefix="stephost-macro-"))
        self.file = self.dir / "macro.txt"
        self.runtime = self.dir / "run"
        self.runtime.mkdir(mode=0o700)
        self.display = None
        self.bus = None
        self.bus_pid = None

    def env(self):
        env = dict(os.environ)
        env["DISPLAY"] = self.display
        if self.bus:
            env["DBUS_SESSION_BUS_ADDRESS"] = self.bus
        # The accessibility bus puts its socket under XDG_RUNTIME_DIR (else the
        # cache folder): a folder of this desktop's own keeps it from replacing
        # another desktop's on this machine.
        env["XDG_RUNTIME_DIR"] = str(self.runtime)
        env["HOME"] = str(self.dir)
        env["XDG_CONFIG_HOME"] = str(self.dir / "config")
        env["XDG_DATA_HOME"] = str(self.dir / "data")
        env["XDG_CACHE_HOME"] = str(self.dir / "cache")
        env["GSETTINGS_BACKEND"] = "memory"
        for key in ("WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "NO_AT_BRIDGE", "AT_SPI_BUS_ADDRESS"):
            env.pop(key, None)
        return env

    def spawn(self, *cmd):
        proc = subprocess.Popen(cmd, env=self.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def window_names(self):
        out = subprocess.run(["xwininfo", "-root", "-tree"], env=self.env(), capture_output=True, text=True)
        return re.findall(r'^\s+0x[0-9a-f]+ "([^"]*)"', out.stdout, re.M)

    def editor_title(self):
        return next((n for n in self.window_names() if n.endswith(EDITOR) and "macro" in n), None)

    def __enter__(self):
        need("Xvfb", "xwininfo", "openbox", "mousepad", "dbus-daemon")
        self.display = free_display(141, 190)
        # Started with this desktop's environment, which the services it
        # starts (the accessibility bus) inherit.
        out = subprocess.run(
            ["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
            env=self.env(), capture_output=True, text=True, timeout=20, check=True,
        )
        address, pid = out.stdout.split()[:2]
        self.bus, self.bus_pid = address, int(pid)
        self.spawn("Xvfb", self.display, "-screen", "0", "1280x800x24", "-nolisten", "tcp")
        n = self.display[1:]
        wait_for(lambda: Path(f"/tmp/.X11-unix/X{n}").exists(), timeout=20.0, what="Xvfb")
        wait_for(lambda: subprocess.run(["xwininfo", "-root"], env=self.env(), capture_output=True).returncode == 0, timeout=20.0, what="X")
        if self.wm == "openbox":
            self.spawn("openbox")
            time.sleep(0.5)
        self.file.write_text("")
        self.start_editor()
        time.sleep(1.0)  # mapped, drawn and placed
        return self

    def start_editor(self):
        """Mousepad on this desktop, started again once if it dies before its
        window shows. A start that fails says why: its own output, whether it
        still runs, and the windows the display has."""
        log = self.dir / "mousepad.log"
        for _ in range(2):
            with open(log, "ab") as out:
                editor = subprocess.Popen(["mousepad", str(self.file)], env=self.env(),
                                          stdout=out, stderr=subprocess.STDOUT)
            self.procs.append(editor)
            # A loaded 2-core machine starts GTK, its accessibility bridge and
            # the accessibility bus together; 60 s leaves room for that.
            deadline = time.monotonic() + 60.0
            while time.monotonic() < deadline and editor.poll() is None:
                if self.editor_title():
                    return
                time.sleep(0.05)
            if self.editor_title():
                return
            if editor.poll() is None:
                break
        raise AssertionError(
            f"the mousepad window did not show on {self.display} ({self.wm}); "
            f"mousepad {'runs' if editor.poll() is None else f'exited with {editor.returncode}'}; "
            f"windows: {self.window_names()}; its output: {log.read_text(errors='replace')[-2000:]!r}")

    def __exit__(self, *exc):
        stop_processes(self.procs)
        if self.bus_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.bus_pid, 15)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module", params=["openbox", "bare"])
def desk(request):
    with Desk(request.param) as d:
        yield d


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text(EXAMPLE)
    (root / "more.html").write_text(MORE)
    (root / "form.html").write_text(FORM)
    (root / "clobbered.html").write_text(CLOBBERED)

    with serve_folder(root) as base:
        yield base


@contextlib.asynccontextmanager
async def mcp(desk):
    extra = ["--plugins", EXTRA_PLUGINS] if EXTRA_PLUGINS else []
    env = server_env(desk.env())
    params = StdioServerParameters(command=BIN, args=[*extra, "serve"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def verbs(plugin):
    out = subprocess.run([BIN, "plugins", "--json"], capture_output=True, text=True, env=server_env(), timeout=120)
    for p in json.loads(out.stdout):
        if p["name"] == plugin:
            return {v["name"]: v for v in p["verbs"]}
    return {}


def has_screenshot_detail():
    shot = verbs("desktop").get("screenshot")
    return shot is not None and "detail" in shot["input_schema"].get("properties", {})


def has_ui_elements():
    return "ui_elements" in verbs("desktop")


async def macro(session, steps, **extra):
    """Calls run_macro; the structured result and the first text block, parsed."""
    result = await session.call_tool("run_macro", {"steps": steps, **extra})
    texts = [c.text for c in result.content if c.type == "text"]
    first = json.loads(texts[0])
    return result, result.structuredContent, first


def seed_one(title):
    return [
        {"tool": "focus_window", "params": {"windowTitle": title}},
        {"tool": "sleep", "params": {"ms": 300}},
        {"tool": "keyboard", "params": {"action": "type", "text": "Hello"}},
        {"tool": "screenshot", "params": {"detail": "text", "windowTitle": title}},
    ]


async def clear_and_save(session, title):
    _, out, _ = await macro(
        session,
        [
            {"tool": "focus_window", "params": {"title": title}},
            {"tool": "keyboard", "params": {"action": "press", "keys": "ctrl+a", "windowTitle": title}},
            {"tool": "keyboard", "params": {"action": "press", "keys": "Delete", "windowTitle": title}},
            {"tool": "keyboard", "params": {"action": "press", "keys": "ctrl+s", "windowTitle": title}},
        ],
    )
    assert out["status"] == "passed", out


async def save(session, title):
    _, out, _ = await macro(session, [{"tool": "keyboard", "params": {"action": "press", "keys": "ctrl+s", "windowTitle": title}}])
    assert out["status"] == "passed", out


def saved(desk, text):
    return wait_for(lambda: desk.file.read_text() == text, timeout=10, what=f"the file to hold {text!r}")


async def test_the_first_seed_example_types_into_mousepad(desk):
    if not has_screenshot_detail():
        pytest.skip("screenshot detail text is not in this build's desktop plugin (stephost plugins --json)")
    title = EDITOR  # the seed's 'Notepad', substituted
    async with mcp(desk) as session:
        await clear_and_save(session, EDITOR)
        result, out, first = await macro(session, seed_one(title))
        assert result.isError is False, out
        assert first == out, "the first text block is the result as JSON"
        assert out["status"] == "passed", out
        assert out["steps_total"] == 4 and out["steps_completed"] == 4
        assert [r["step"] for r in out["results"]] == [0, 1, 2, 3]
        assert [r["tool"] for r in out["results"]] == ["focus_window", "sleep", "keyboard", "screenshot"]
        assert all(r["ok"] is True and isinstance(r["text"], list) for r in out["results"]), out
        assert out["results"][1]["text"] == ["slept 300ms"]
        assert "warnings" not in out
        # detail text is the window described, not a picture.
        assert not [c for c in result.content if c.type == "image"]
        description = "\n".join(out["results"][3]["text"])
        assert "Hello" in description, description
        await save(session, EDITOR)
    saved(desk, "Hello")


async def test_the_typing_of_the_first_seed_example_arrives_without_the_text_screenshot(desk):
    # Runs on every build: the seed's steps up to the typing, then a picture.
    async with mcp(desk) as session:
        await clear_and_save(session, EDITOR)
        steps = seed_one(EDITOR)[:3] + [{"tool": "screenshot", "params": {"windowTitle": EDITOR, "detail": "image"}}]
        result, out, _ = await macro(session, steps)
        assert out["status"] == "passed", out
        assert [r["step"] for r in out["results"]] == [0, 1, 2, 3]
        images = [c for c in result.content if c.type == "image"]
        assert len(images) == 1
        labels = [c.text for c in result.content if c.type == "text"][1:]
        assert labels == ["[step 3: screenshot]"], labels
        await save(session, EDITOR)
    saved(desk, "Hello")


async def test_the_second_seed_example_navigates_and_waits_for_the_text(desk, site):
    async with mcp(desk) as session:
        steps = [
            {"tool": "browser_navigate", "params": {"url": f"{site}/index.html"}},  # the seed's https://example.com
            {"tool": "wait_until", "params": {"condition": "element_matches", "target": {"by": "text", "pattern": "Example Domain"}}},
        ]
        result, out, _ = await macro(session, steps)
        assert result.isError is False, out
        assert out["status"] == "passed", out
        assert out["steps_total"] == 2 and out["steps_completed"] == 2
        assert [(r["step"], r["tool"], r["ok"]) for r in out["results"]] == [
            (0, "browser_navigate", True),
            (1, "wait_until", True),
        ]
        waited = json.loads(out["results"][1]["text"][0])
        assert waited["match"]["text"] == "Example Domain", waited
        # A mixed macro: text that shows up later, then a page element clicked
        # by its text, then the new page's heading awaited; then desktop steps.
        steps = [
            {"tool": "wait_until", "params": {"condition": "element_matches", "target": {"by": "text", "pattern": "arrived late"}, "timeoutMs": 5000}},
            {"tool": "browser_click", "params": {"by": "text", "pattern": "More information"}},
            {"tool": "wait_until", "params": {"condition": "url_matches", "target": {"pattern": "/more.html"}}},
            {"tool": "browser_search", "params": {"by": "text", "pattern": "More information"}},
            {"tool": "get_windows", "params": {}},
        ]
        _, out, _ = await macro(session, steps)
        assert out["status"] == "passed", out
        found = json.loads(out["results"][3]["text"][0])
        assert found["total"] >= 1 and found["results"][0]["text"] == "More information", found
        # A wait that cannot succeed: desktop-touch's code, and the rest does not run.
        steps = [
            {"tool": "wait_until", "params": {"condition": "element_matches", "target": {"by": "text", "pattern": "Never there"}, "timeoutMs": 400}},
            {"tool": "get_windows", "params": {}},
        ]
        result, out, _ = await macro(session, steps)
        assert result.isError is True
        assert out["steps_completed"] == 1
        assert out["results"][0]["ok"] is False
        assert out["results"][0]["code"] == "WaitTimeout", out
        assert out["warnings"] == [{"step": 0, "tool": "wait_until", "code": "WaitTimeout", "error": out["results"][0]["error"]}]


async def test_browser_fill_reads_the_field_back(desk, site):
    """A value the page keeps (or only reformats) passes and says what the field
    holds; one the page puts back, or a field the page sets itself, fails with
    the field named, and the macro stops there."""
    async with mcp(desk) as session:
        steps = [
            {"tool": "browser_navigate", "params": {"url": f"{site}/form.html"}},
            {"tool": "browser_fill", "params": {"selector": "#name", "value": "Ada"}},
            {"tool": "browser_fill", "params": {"selector": "#phone", "value": "555-0100"}},
        ]
        result, out, _ = await macro(session, steps)
        assert result.isError is False and out["status"] == "passed", out
        assert json.loads(out["results"][1]["text"][0])["value"] == "Ada"
        assert json.loads(out["results"][2]["text"][0])["value"] == "5550100"
        result, out, _ = await macro(session, [
            {"tool": "browser_fill", "params": {"selector": "#code", "value": "B2"}},
            {"tool": "browser_fill", "params": {"selector": "#name", "value": "never"}},
        ])
        assert result.isError is True and out["steps_completed"] == 1, out
        failed = out["results"][0]
        assert failed["code"] == "BrowserValueNotKept" and "#code" in failed["error"] and '"A1"' in failed["error"], failed
        result, out, _ = await macro(session, [{"tool": "browser_fill", "params": {"selector": "#total", "value": "7"}}])
        failed = out["results"][0]
        assert failed["code"] == "BrowserNoActionableTarget" and "read-only" in failed["error"], failed
        # Nothing was written where the macro stopped or was refused.
        _, out, _ = await macro(session, [{"tool": "browser_form", "params": {"selector": "body"}}])
        fields = {f["id"]: f["value"] for f in json.loads(out["results"][0]["text"][0])["fields"]}
        assert fields == {"name": "Ada", "phone": "5550100", "code": "A1", "total": "42"}, fields


async def test_the_browser_tools_work_on_a_clobbered_page(desk, site):
    """Named elements that shadow the document's and the form's properties neither
    break the page-side tools nor point them at the wrong element."""
    async with mcp(desk) as session:
        steps = [
            {"tool": "browser_navigate", "params": {"url": f"{site}/clobbered.html"}},
            {"tool": "browser_search", "params": {"by": "text", "pattern": "Send order"}},
            {"tool": "browser_fill", "params": {"by": "ariaLabel", "pattern": "Who", "value": "Ada"}},
            {"tool": "browser_form", "params": {"selector": "#order"}},
            {"tool": "browser_overview", "params": {}},
            {"tool": "browser_click", "params": {"by": "text", "pattern": "Send order"}},
            {"tool": "browser_eval", "params": {"action": "js", "expression":
                "[HTMLInputElement.prototype.__lookupGetter__('value').call(Document.prototype.getElementById.call(document, 'who')),"
                " Element.prototype.getAttribute.call(Document.prototype.getElementById.call(document, 'send'), 'data-sent')]"}},
        ]
        result, out, _ = await macro(session, steps)
        assert result.isError is False and out["status"] == "passed", out
        found = json.loads(out["results"][1]["text"][0])
        assert found["results"][0]["selector"] == "#send", found
        filled = json.loads(out["results"][2]["text"][0])
        assert filled["selector"] == "#who" and filled["value"] == "Ada", filled
        form = json.loads(out["results"][3]["text"][0])
        assert form["count"] == 6 and form["fields"][0]["id"] == "who" and form["fields"][0]["tag"] == "input", form
        assert json.loads(out["results"][6]["text"][0]) == ["Ada", "yes"], out["results"][6]


async def test_results_count_from_0_and_a_failed_step_stops_the_macro(desk):
    async with mcp(desk) as session:
        await clear_and_save(session, EDITOR)
        steps = [
            {"tool": "sleep", "params": {"ms": 10}},
            {"tool": "focus_window", "params": {"title": "No Such Window"}},
            {"tool": "keyboard", "params": {"action": "type", "text": "MUST NOT APPEAR", "windowTitle": EDITOR}},
        ]
        result, out, first = await macro(session, steps)
        assert result.isError is True
        assert first == out
        assert out["steps_total"] == 3 and out["steps_completed"] == 2
        failed = out["results"][1]
        assert failed["step"] == 1 and failed["ok"] is False
        assert failed["code"] == "WindowNotFound" and failed["error"], failed
        assert json.loads(failed["text"][0])["ok"] is False
        assert out["warnings"][0]["step"] == 1
        # With stop_on_error false the rest runs, and the failure is still in warnings.
        steps[2]["params"]["text"] = "after"
        _, out, _ = await macro(session, steps, stop_on_error=False)
        assert out["steps_completed"] == 3
        assert [r["ok"] for r in out["results"]] == [True, False, True]
        assert [w["step"] for w in out["warnings"]] == [1]
        await save(session, EDITOR)
    saved(desk, "after")


async def test_a_windows_only_tool_is_refused_by_name_and_nothing_runs(desk):
    async with mcp(desk) as session:
        await clear_and_save(session, EDITOR)
        steps = [
            {"tool": "keyboard", "params": {"action": "type", "text": "MUST NOT APPEAR", "windowTitle": EDITOR}},
            {"tool": "sleep", "params": {"ms": 10}},
            {"tool": "clipboard", "params": {"action": "read"}},
            {"tool": "keyboard", "params": {"action": "tap", "text": "x"}},
        ]
        result, out, _ = await macro(session, steps)
        assert result.isError is True
        assert out["status"] == "invalid"
        assert out["results"] == [] and out["steps_completed"] == 0
        fields = [e["field"] for e in out["errors"]]
        assert fields == ["steps[2].tool", "steps[3].params.action"], out["errors"]
        assert "Windows clipboard" in out["errors"][0]["message"]
        assert [w["step"] for w in out["warnings"]] == [2, 3]
        await save(session, EDITOR)
        time.sleep(0.5)
    assert desk.file.read_text() == "", "nothing was typed"


async def test_the_envelope_has_desktop_touchs_value_shapes(desk):
    async with mcp(desk) as session:
        before = time.time() * 1000
        _, out, first = await macro(session, [{"tool": "sleep", "params": {"ms": 5}}], include=["envelope"])
        after = time.time() * 1000
        assert first == out
        assert sorted(out) == ["_version", "as_of", "confidence", "data"]
        assert out["_version"] == "1.0"
        assert list(out["as_of"]) == ["wallclock_ms"]
        assert before - 1000 <= out["as_of"]["wallclock_ms"] <= after + 1000
        assert out["confidence"] in ("fresh", "degraded", "stale")
        assert out["data"]["results"][0] == {**out["data"]["results"][0], "step": 0, "tool": "sleep", "ok": True, "text": ["slept 5ms"]}
        _, raw, _ = await macro(session, [{"tool": "sleep", "params": {"ms": 1}}], include=["envelope", "raw"])
        assert "_version" not in raw and raw["steps_completed"] == 1


async def test_mousepad_through_its_accessibility_tree(desk):
    if not has_ui_elements():
        pytest.skip("ui_elements is not in this build's desktop plugin (stephost plugins --json)")
    async with mcp(desk) as session:
        await clear_and_save(session, EDITOR)
        _, out, _ = await macro(
            session,
            [
                {"tool": "get_ui_elements", "params": {"windowTitle": EDITOR, "maxDepth": 8, "maxElements": 200}},
                {"tool": "wait_until", "params": {"condition": "element_appears", "target": {"windowTitle": EDITOR, "elementName": "File"}, "timeoutMs": 3000}},
            ],
        )
        assert out["status"] == "passed", out
        tree = json.loads(out["results"][0]["text"][0])
        roles = {e["role"] for e in tree["elements"]}
        assert "menu bar" in roles or "menu" in roles, roles
