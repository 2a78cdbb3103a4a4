"""The desktop plugin and the run_macro / do_steps tools, against a real X server.

Each test module run starts Xvfb twice: once bare (no window manager: windows are
found by walking the tree, activation is a raise plus SetInputFocus) and once
with openbox (EWMH client list and _NET_ACTIVE_WINDOW). Real X clients receive
the input: a small Tk window (tests/e2e/desktop_apps/tk_app.py) that logs its key
presses and counts button clicks, and an xterm running a recorder that writes
every byte it receives to a file. `stephost serve` talks to the Python MCP SDK
over stdio, with DISPLAY pointing at that Xvfb.

The input and look tests of issue 14 add third-party programs from Debian: xcalc
(Xt), whose result is read back through the PRIMARY selection it owns once its
display is clicked (desktop_apps/read_primary.py), so a lost click shows as a
wrong number; xclock, and a Tk entry whose caret blinks (tk_blink.py), as change
look must leave out; xlogo as a window covering another; and a Tk window with a
long menu (tk_menu.py).

Needs: xvfb, xauth, openbox, xterm, python3-tk, x11-utils, x11-apps (scripts/test.sh installs them).
"""

import base64
import contextlib
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import BIN, free_display, need, server_env, stop_processes, wait_for

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

APPS = Path(__file__).resolve().parent / "desktop_apps"
# Tk must come from the system Python (python3-tk), not a venv's.
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin") or "/usr/bin/python3"
TK_TITLE = "Stephost Tk Test"
EXTRA_PLUGINS = os.environ.get("STEPHOST_DESKTOP_PLUGINS")  # a folder with desktop.wasm, while developing




class Desktop:
    """An Xvfb (optionally with openbox) plus the two test clients."""

    def __init__(self, wm):
        self.wm = wm
        self.procs = []
        self.dir = Path(tempfile.mkdtemp(prefix="stephost-desktop-"))
        self.display = None

    def env(self):
        env = dict(os.environ)
        env["DISPLAY"] = self.display
        env.pop("WAYLAND_DISPLAY", None)
        env.pop("XDG_SESSION_TYPE", None)
        return env

    def spawn(self, *cmd):
        proc = subprocess.Popen(cmd, env=self.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def xprop_root(self, prop):
        out = subprocess.run(["xprop", "-root", prop], env=self.env(), capture_output=True, text=True)
        return out.stdout

    def __enter__(self):
        need("Xvfb", "xterm", "xprop", "openbox")
        try:
            return self.start()
        except BaseException:
            # `with` calls __exit__ only after __enter__ returned: without this a failed
            # start would leave its X server running and holding a display number.
            self.__exit__(None, None, None)
            raise

    def start_x(self):
        """Xvfb (and openbox) on a free display. Why the checks and the retry: in full CI
        runs openbox has failed to open a display whose Xvfb had just answered `xprop`
        (the display number was not ours alone, or the server went away); each attempt
        checks that its own Xvfb and openbox are alive and takes the next number if not."""
        self.display = free_display(getattr(self, "next_display", 91), 140)
        xvfb = self.spawn("Xvfb", self.display, "-screen", "0", "1280x800x24", "-nolisten", "tcp")
        n = self.display[1:]
        wait_for(lambda: Path(f"/tmp/.X11-unix/X{n}").exists() or xvfb.poll() is not None, what="Xvfb")
        if xvfb.poll() is not None:
            raise AssertionError(f"Xvfb on {self.display} exited with {xvfb.returncode}")
        wait_for(lambda: subprocess.run(["xprop", "-root"], env=self.env(), capture_output=True).returncode == 0, what="X server")
        if self.wm == "openbox":
            log = self.dir / "openbox.log"
            with open(log, "w") as out:
                wm = subprocess.Popen(["openbox"], env=self.env(), stdout=out, stderr=out)
            self.procs.append(wm)
            try:
                wait_for(lambda: "window id" in self.xprop_root("_NET_SUPPORTING_WM_CHECK") or wm.poll() is not None,
                         what="openbox")
                if wm.poll() is not None:
                    raise AssertionError("openbox did not stay up")
            except AssertionError as e:
                status = "running" if wm.poll() is None else f"exited with {wm.returncode}"
                xstatus = "running" if xvfb.poll() is None else f"exited with {xvfb.returncode}"
                raise AssertionError(f"{e} on {self.display} (openbox {status}, Xvfb {xstatus}): "
                                     f"{log.read_text()[-2000:]}{self.why_openbox_failed()}") from None

    def why_openbox_failed(self):
        """What a second openbox, traced, did to reach the display: the calls that
        failed and the environment, for a failure seen only in full CI runs."""
        if shutil.which("strace") is None:
            return ""
        trace = self.dir / "openbox.strace"
        try:
            subprocess.run(["strace", "-f", "-o", str(trace), "-e", "trace=%network,%file", "openbox"],
                           env=self.env(), capture_output=True, timeout=5)
        except subprocess.TimeoutExpired:
            pass
        lines = trace.read_text(errors="replace").splitlines() if trace.exists() else []
        failed = [l for l in lines if "= -1" in l and "ENOENT" not in l][-25:]
        seen = {k: v for k, v in self.env().items() if k.startswith(("DISPLAY", "XAUTH", "XDG", "DBUS", "SESSION", "ICE"))}
        return f"\n-- traced openbox: failed calls {failed}\n-- env {seen}"

    def stop_procs(self):
        stop_processes(self.procs)
        self.procs = []

    def start(self):
        failures = []
        for _ in range(3):
            try:
                self.start_x()
                break
            except AssertionError as e:
                failures.append(str(e))
                self.stop_procs()
                # The next attempt takes the next number: a number whose X server was
                # just stopped has failed openbox again in full CI runs.
                self.next_display = int(self.display[1:]) + 1
                time.sleep(0.5)
        else:
            raise AssertionError("the X server did not come up in 3 attempts: " + " | ".join(failures))
        if failures:
            print(f"X came up on {self.display} after {len(failures)} failed attempt(s): {failures}")
        self.spawn(SYSTEM_PYTHON, str(APPS / "tk_app.py"), str(self.dir), TK_TITLE)
        self.recorded = self.dir / "recorded.bin"
        self.spawn("xterm", "-geometry", "60x10+700+420", "-T", "Recorder", "-e", SYSTEM_PYTHON, str(APPS / "recorder.py"), str(self.recorded))
        wait_for(lambda: (self.dir / "layout.json").exists(), what="the Tk window")
        wait_for(lambda: self.recorded.exists(), what="the xterm recorder")
        time.sleep(0.5)  # let both windows finish mapping under the WM
        return self

    def __exit__(self, *exc):
        self.stop_procs()
        shutil.rmtree(self.dir, ignore_errors=True)

    def tk_state(self):
        return json.loads((self.dir / "state.json").read_text())

    def tk_keys(self):
        path = self.dir / "keys.log"
        return path.read_text().splitlines() if path.exists() else []

    def tk_layout(self):
        return json.loads((self.dir / "layout.json").read_text())


@pytest.fixture(scope="module", params=["bare", "openbox"])
def desktop(request):
    with Desktop(request.param) as d:
        yield d


class Client:
    """An MCP client session whose calls all use one explicit stephost session."""

    def __init__(self, session):
        self.session = session
        self.id = f"desktop-{os.getpid()}-{time.monotonic_ns()}"

    async def call_tool(self, name, args):
        return await self.session.call_tool(name, {**args, "session_id": self.id})


@contextlib.asynccontextmanager
async def mcp_session(desktop, *args):
    extra = ["--plugins", EXTRA_PLUGINS] if EXTRA_PLUGINS else []
    env = server_env({"DISPLAY": desktop.display})
    env.pop("WAYLAND_DISPLAY", None)
    params = StdioServerParameters(command=BIN, args=[*extra, *args, "serve"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield Client(session)


def images(result):
    return [base64.b64decode(c.data) for c in result.content if c.type == "image"]


def texts(result):
    return "\n".join(c.text for c in result.content if c.type == "text")


def decode_png(data):
    """Width, height and raw scanlines of an 8-bit RGB/RGBA PNG (checks every chunk)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind}"
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color = header[:4]
    channels = {2: 3, 6: 4}[color]
    raw = zlib.decompress(idat)
    assert depth == 8 and len(raw) == height * (1 + width * channels)
    return width, height


async def windows(session):
    result = await session.call_tool("list_windows", {})
    assert result.structuredContent["status"] == "passed", texts(result)
    return result.structuredContent["value"]["windows"]


async def test_windows_are_listed_and_focus_moves(desktop):
    async with mcp_session(desktop) as session:
        listed = {w["title"]: w for w in await windows(session)}
        assert TK_TITLE in listed and "Recorder" in listed, listed
        assert listed["Recorder"]["class"] == "XTerm"
        for title in ("Recorder", TK_TITLE):
            r = await session.call_tool("focus_window", {"title": title})
            assert r.structuredContent["status"] == "passed", texts(r)
            assert r.structuredContent["value"]["focused"] is True
            focused = [w["title"] for w in await windows(session) if w["focused"]]
            assert focused == [title]
        r = await session.call_tool("focus_window", {"title": "No Such Window"})
        assert r.structuredContent["error"]["code"] == "not-found"
        assert r.structuredContent["error"]["input_fired"] is False


async def test_typed_text_and_combos_arrive_in_the_programs(desktop):
    before_keys = len(desktop.tk_keys())
    async with mcp_session(desktop) as session:
        r = await session.call_tool(
            "do_steps",
            {
                "steps": [
                    {"do": "activate", "target": TK_TITLE},
                    {"do": "key", "target": TK_TITLE, "combo": "ctrl+a BackSpace"},
                    {"do": "type", "target": TK_TITLE, "text": "Hello é€!"},
                    {"do": "key", "target": TK_TITLE, "combo": "ctrl+shift+t"},
                ],
                "look": False,
            },
        )
        assert r.structuredContent["status"] == "passed", texts(r)
        wait_for(lambda: desktop.tk_state()["text"].endswith("Hello é€!"), what="text in the Tk entry")
        assert desktop.tk_state()["text"] == "Hello é€!"
        # Tk reports Control+Shift as state 5 on the T key press.
        started = time.monotonic()
        try:
            wait_for(lambda: "T 5" in desktop.tk_keys()[before_keys:], timeout=10, what="ctrl+shift+t in Tk")
        except AssertionError:
            raise AssertionError(" | ".join(desktop.tk_keys()[-12:])) from None
        late = time.monotonic() - started
        assert late < 0.2, f"ctrl+shift+t reached Tk {late:.2f} s after the call returned"
        keys = desktop.tk_keys()[before_keys:]
        assert "EuroSign 0" in keys or "U20AC 0" in keys, keys

        r = await session.call_tool(
            "run_macro",
            {
                "steps": [
                    {"tool": "focus_window", "params": {"title": "Recorder"}},
                    {"tool": "sleep", "params": {"ms": 50}},
                    {"tool": "type", "params": {"text": "abc"}},
                    {"tool": "key", "params": {"combo": "ctrl+c Return"}},
                ]
            },
        )
        assert r.structuredContent["status"] == "passed", texts(r)
        assert [s["ok"] for s in r.structuredContent["results"]] == [True] * 4
        wait_for(lambda: desktop.recorded.read_bytes().endswith(b"abc\x03\r"), what="bytes in the xterm")


async def test_click_a_button_and_look_auto_only_when_something_changed(desktop):
    layout = desktop.tk_layout()
    wx, wy = layout["window"][:2]
    bx, by = layout["button"]
    clicks = desktop.tk_state()["clicks"]
    async with mcp_session(desktop) as session:
        r = await session.call_tool(
            "do_steps",
            {"steps": [{"do": "click", "target": TK_TITLE, "x": bx - wx, "y": by - wy, "window_relative": True}]},
        )
        report = r.structuredContent
        assert report["status"] == "passed", texts(r)
        wait_for(lambda: desktop.tk_state()["clicks"] == clicks + 1, what="the click count")
        assert report["look"]["changed"] is True, report["look"]
        pictures = images(r)
        assert len(pictures) == 1, texts(r)
        tk = [w for w in await windows(session) if w["title"] == TK_TITLE][0]
        assert decode_png(pictures[0]) == (tk["width"], tk["height"]), ("the picture is the Tk window", report["look"])

        # Park the pointer on the bare desktop so hover highlights are gone,
        # then do something that changes nothing (a click on the desktop would
        # move the focus, and a window manager redraws the title bar): no
        # picture, and the result says so.
        await session.call_tool("move", {"x": 5, "y": 790})
        time.sleep(0.3)
        r = await session.call_tool("do_steps", {"steps": [{"do": "move", "x": 6, "y": 791}], "settle_max_s": 1})
        assert r.structuredContent["status"] == "passed", texts(r)
        assert r.structuredContent["look"]["changed"] is False, r.structuredContent["look"]
        assert images(r) == []
        assert "nothing changed" in texts(r)
        assert desktop.tk_state()["clicks"] == clicks + 1


async def test_screenshot_of_a_window_decodes_as_a_png_of_its_size(desktop):
    async with mcp_session(desktop) as session:
        r = await session.call_tool("screenshot", {"title": "Recorder"})
        assert r.structuredContent["status"] == "passed", texts(r)
        value = r.structuredContent["value"]
        (png,) = images(r)
        assert decode_png(png) == (value["width"], value["height"])
        xterm = [w for w in await windows(session) if w["title"] == "Recorder"][0]
        assert (value["x"], value["y"], value["width"], value["height"]) == (xterm["x"], xterm["y"], xterm["width"], xterm["height"])


async def test_a_malformed_step_is_refused_before_anything_is_typed(desktop):
    text_before = desktop.tk_state()["text"]
    keys_before = len(desktop.tk_keys())
    async with mcp_session(desktop) as session:
        r = await session.call_tool(
            "do_steps",
            {"steps": [{"do": "type", "target": TK_TITLE, "text": "MUST NOT APPEAR"}, {"do": "click", "x": "left", "y": 3}]},
        )
        report = r.structuredContent
        assert report["status"] == "invalid"
        assert report["steps_executed"] == 0
        assert any(e["field"] == "steps[1].x" for e in report["errors"]), report["errors"]
        r = await session.call_tool(
            "run_macro",
            {"steps": [{"tool": "type", "params": {"text": "MUST NOT APPEAR"}}, {"tool": "sleep", "params": {"ms": 20000}}]},
        )
        assert r.structuredContent["status"] == "invalid"
        assert any(e["field"] == "steps[1].params.ms" for e in r.structuredContent["errors"])
    time.sleep(0.3)
    assert desktop.tk_state()["text"] == text_before
    assert len(desktop.tk_keys()) == keys_before


async def test_wait_for_times_out_with_code_timeout_and_the_failing_step_is_shown(desktop):
    async with mcp_session(desktop) as session:
        started = time.monotonic()
        r = await session.call_tool(
            "do_steps",
            {
                "steps": [
                    {"do": "wait", "condition": "window_appears", "target": "No Such Window", "timeout_ms": 400},
                    {"do": "type", "text": "never typed"},
                ],
                "look": "screen",
                "settle_max_s": 0,
            },
        )
        report = r.structuredContent
        assert report["status"] in ("failed", "timed_out"), texts(r)
        assert report["steps"][0]["error"]["code"] == "timeout"
        assert report["never_started"] == 1
        assert time.monotonic() - started < 10
        # The picture is taken at the failing step.
        assert len(images(r)) == 1 and "look" in texts(r)


async def test_blocked_combos_are_denied_and_nothing_is_sent(desktop):
    keys_before = len(desktop.tk_keys())
    async with mcp_session(desktop) as session:
        r = await session.call_tool("key", {"target": TK_TITLE, "combo": "shift+a ctrl+alt+BackSpace"})
        # Refused when the call is checked, before anything acts, naming the field.
        assert r.structuredContent["status"] == "invalid", texts(r)
        (problem,) = r.structuredContent["errors"]
        assert "combo" in problem["field"] and "blocked" in problem["message"], problem
    time.sleep(0.3)
    assert len(desktop.tk_keys()) == keys_before, "not even the first combo was sent"


def test_a_desktop_plugin_without_the_grant_does_not_load(tmp_path):
    config = tmp_path / "stephost.toml"
    config.write_text("[plugins.grants.desktop]\ndesktop = false\n")
    extra = ["--plugins", EXTRA_PLUGINS] if EXTRA_PLUGINS else []
    out = subprocess.run([BIN, "--config", str(config), *extra, "plugins"], capture_output=True, text=True, env=server_env(), timeout=60)
    assert out.returncode != 0
    assert "desktop" in out.stderr and "grant" in out.stderr, out.stderr


# --- issue 14: input that holds up on real apps, and look auto ---------------

XCALC = "Calculator"
# xcalc's TI layout (/etc/X11/app-defaults/XCalc): buttons 1..55, five a row.
XCALC_BUTTONS = {"AC": 5, "7": 37, "4": 42, "1": 47, "2": 48, "3": 49, "+": 50, "=": 55}


def viewable(desktop, title):
    out = subprocess.run(["xwininfo", "-name", title], env=desktop.env(), capture_output=True, text=True)
    return out.returncode == 0 and "IsViewable" in out.stdout


@contextlib.contextmanager
def app(desktop, title, *cmd):
    """Runs a program until the block ends, once its window `title` is mapped."""
    need(cmd[0])
    proc = subprocess.Popen(cmd, env=desktop.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: viewable(desktop, title), what=f"the {title} window")
        time.sleep(0.5)  # placed and drawn under the window manager
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
        wait_for(lambda: not viewable(desktop, title), what=f"the {title} window to close")


class XcalcLayout:
    """Where xcalc's buttons and display are, read from its window tree."""

    def __init__(self, desktop):
        out = subprocess.run(["xwininfo", "-tree", "-name", XCALC], env=desktop.env(), capture_output=True, text=True).stdout
        wins = [
            (int(w), int(h), int(ax), int(ay))
            for w, h, ax, ay in re.findall(r"(\d+)x(\d+)[+-]\d+[+-]\d+\s+([+-]?-?\d+)\+?(-?\d+)\s*$", out, re.M)
        ]
        sizes = {}
        for w, h, _, _ in wins:
            if 20 <= w <= 80 and 15 <= h <= 60:
                sizes[(w, h)] = sizes.get((w, h), 0) + 1
        size = max(sizes, key=sizes.get)
        buttons = sorted(((ay, ax) for w, h, ax, ay in wins if (w, h) == size))
        assert len(buttons) == 55, f"xcalc has {len(buttons)} buttons of {size}: {out}"
        self.buttons = [(ax + size[0] // 2, ay + size[1] // 2) for ay, ax in buttons]
        (lcd,) = [(ax + w // 2, ay + h // 2) for w, h, ax, ay in wins if w >= 150 and h <= 30]
        self.lcd = lcd

    def button(self, label):
        return self.buttons[XCALC_BUTTONS[label] - 1]


def read_primary(desktop):
    out = subprocess.run(
        [SYSTEM_PYTHON, str(APPS / "read_primary.py")], env=desktop.env(), capture_output=True, text=True, timeout=20
    )
    return out.stdout.strip()


def clicks(points):
    return [{"do": "click", "x": x, "y": y} for x, y in points]


async def test_xcalc_gets_every_click_of_a_repeated_sequence(desktop):
    # Clicks without a target, as fast as a macro sends them: the sequence a
    # window manager's button grab used to lose one click of in about three.
    with app(desktop, XCALC, "xcalc", "-geometry", "+40+40"):
        calc = XcalcLayout(desktop)
        sequence = [calc.button(k) for k in ("AC", "1", "2", "+", "3", "4", "=")] + [calc.lcd]
        results = []
        async with mcp_session(desktop) as session:
            for _ in range(20):
                r = await session.call_tool("do_steps", {"steps": clicks(sequence), "look": False})
                assert r.structuredContent["status"] == "passed", texts(r)
                results.append(read_primary(desktop))
        assert results == ["46"] * 20, f"{desktop.wm}: {results}"


async def test_look_auto_pictures_the_window_a_click_without_target_hit(desktop):
    with app(desktop, XCALC, "xcalc", "-geometry", "+40+40"):
        calc = XcalcLayout(desktop)
        async with mcp_session(desktop) as session:
            await session.call_tool("do_steps", {"steps": clicks([calc.button("AC")]), "look": False})
            # Focus the Tk window, then click xcalc without naming it: the
            # picture is of xcalc, where the click landed.
            r = await session.call_tool(
                "do_steps", {"steps": [{"do": "focus_window", "target": TK_TITLE}, *clicks([calc.button("7")])]}
            )
            report = r.structuredContent
            assert report["status"] == "passed", texts(r)
            look = report["look"]
            assert look["changed"] is True, look
            assert look["window"]["title"] == XCALC, look
            (png,) = images(r)
            (window,) = [w for w in await windows(session) if w["title"] == XCALC]
            assert decode_png(png) == (window["width"], window["height"]), look


async def test_look_auto_leaves_out_a_blinking_caret_and_a_clock_elsewhere(desktop):
    blink = "Stephost Blink"
    with (
        app(desktop, "xclock", "xclock", "-update", "1", "-geometry", "120x120+1100+20"),
        app(desktop, blink, SYSTEM_PYTHON, str(APPS / "tk_blink.py"), blink, "260x60+760+40"),
    ):
        async with mcp_session(desktop) as session:
            r = await session.call_tool("focus_window", {"title": blink})
            assert r.structuredContent["status"] == "passed", texts(r)
            time.sleep(0.5)
            # A key that types nothing: only the caret blinks in that window,
            # and the clock ticks elsewhere.
            r = await session.call_tool(
                "do_steps", {"steps": [{"do": "key", "target": blink, "combo": "shift"}, {"do": "sleep", "ms": 1100}]}
            )
            report = r.structuredContent
            assert report["status"] == "passed", texts(r)
            look = report["look"]
            assert look["changed"] is False, look
            assert images(r) == []
            assert "nothing changed" in texts(r)
            # The clock ticked at least once in the 1.1 s: that is change elsewhere.
            assert look.get("ignored_cells_elsewhere", 0) > 0, look


async def test_look_auto_shows_a_menu_that_hangs_below_the_window(desktop):
    title = "Stephost Menu"
    with app(desktop, title, SYSTEM_PYTHON, str(APPS / "tk_menu.py"), title, "240x60+780+160"):
        async with mcp_session(desktop) as session:
            (window,) = [w for w in await windows(session) if w["title"] == title]
            # The menu bar is the top strip of the client area; "File" is its first entry.
            r = await session.call_tool("do_steps", {"steps": clicks([(window["x"] + 15, window["y"] + 10)])})
            report = r.structuredContent
            assert report["status"] == "passed", texts(r)
            look = report["look"]
            try:
                assert look["changed"] is True and look["window"]["title"] == title, look
                (png,) = images(r)
                width, height = decode_png(png)
                # Twelve items hang far below a 60-pixel window.
                assert height > window["height"] + 100, (width, height, window, look)
                assert look["y"] <= window["y"] and look["y"] + look["height"] >= window["y"] + window["height"] + 100
            finally:
                await session.call_tool("key", {"combo": "Escape"})


async def test_region_changes_after_a_click_sees_the_change_the_click_made(desktop):
    with app(desktop, XCALC, "xcalc", "-geometry", "+40+40"):
        calc = XcalcLayout(desktop)
        async with mcp_session(desktop) as session:
            await session.call_tool("do_steps", {"steps": clicks([calc.button("AC")]), "look": False})
            time.sleep(0.3)
            r = await session.call_tool(
                "do_steps",
                {
                    "steps": [
                        *clicks([calc.button("7")]),
                        {"do": "wait", "condition": "region_changes", "target": XCALC, "timeout_ms": 3000},
                    ],
                    "look": False,
                },
            )
            report = r.structuredContent
            assert report["status"] == "passed", texts(r)
            wait = report["steps"][1]["result"]
            assert wait["changed_fraction"] > 0, wait
            # A second wait has nothing new to see.
            r = await session.call_tool("wait_for", {"condition": "region_changes", "target": XCALC, "timeout_ms": 500})
            assert r.structuredContent["error"]["code"] == "timeout", texts(r)


async def test_a_title_bar_drag_with_a_target_moves_the_window(desktop):
    with app(desktop, XCALC, "xcalc", "-geometry", "+40+40"):
        async with mcp_session(desktop) as session:
            (before,) = [w for w in await windows(session) if w["title"] == XCALC]
            # 8 px above the client area: the title bar under a window manager.
            drag = {"target": XCALC, "window_relative": True, "from_x": 60, "from_y": -8, "to_x": 180, "to_y": 52}
            r = await session.call_tool("drag", drag)
            if desktop.wm == "bare":
                # No manager, no frame: the point is off the window and nothing is sent.
                assert r.structuredContent["error"]["code"] == "not-found", texts(r)
                assert r.structuredContent["error"]["input_fired"] is False
                return
            assert r.structuredContent["status"] == "passed", texts(r)
            after = before
            for _ in range(40):
                (after,) = [w for w in await windows(session) if w["title"] == XCALC]
                if (after["x"], after["y"]) != (before["x"], before["y"]):
                    break
                time.sleep(0.05)
            moved = (after["x"] - before["x"], after["y"] - before["y"])
            assert abs(moved[0] - 120) <= 4 and abs(moved[1] - 60) <= 4, (before, after)
            # A point off the frame as well is still refused before anything is sent.
            r = await session.call_tool("drag", {**drag, "from_x": 400, "from_y": 10})
            assert r.structuredContent["error"]["code"] == "not-found", texts(r)


async def test_cjk_after_long_ascii_arrives_intact(desktop):
    # 29 distinct characters missing from the keyboard map, more than Xvfb has
    # spare keycodes (19): keycodes are lent again while the Tk entry is still
    # working through the 500 characters before them.
    ascii_text = ("The quick brown fox jumps over the lazy dog " * 12)[:500]
    async with mcp_session(desktop) as session:
        for start in (0x4E00, 0x5E00):
            cjk = "".join(chr(start + 37 * i) for i in range(29))
            r = await session.call_tool("key", {"target": TK_TITLE, "combo": "ctrl+slash BackSpace"})
            assert r.structuredContent["status"] == "passed", texts(r)
            wait_for(lambda: desktop.tk_state()["text"] == "", what="an empty entry")
            r = await session.call_tool("type", {"target": TK_TITLE, "text": ascii_text + cjk})
            assert r.structuredContent["status"] == "passed", texts(r)
            expected = ascii_text + cjk
            try:
                wait_for(lambda: desktop.tk_state()["text"] == expected, timeout=30, what="the text in the Tk entry")
            except AssertionError:
                got = desktop.tk_state()["text"]
                raise AssertionError(f"typed {len(expected)}, the entry has {len(got)}: {got[480:]!r}") from None


async def test_a_screenshot_of_a_covered_window_warns(desktop):
    async with mcp_session(desktop) as session:
        r = await session.call_tool("screenshot", {"title": TK_TITLE})
        assert "warning" not in r.structuredContent["value"], texts(r)
        with app(desktop, "xlogo", "xlogo", "-geometry", "160x160+360+240"):
            r = await session.call_tool("focus_window", {"title": "xlogo"})
            assert r.structuredContent["status"] == "passed", texts(r)
            r = await session.call_tool("screenshot", {"title": TK_TITLE})
            value = r.structuredContent["value"]
            assert r.structuredContent["status"] == "passed", texts(r)
            assert "covered" in value["warning"] and "xlogo" in texts(r), texts(r)
            assert [w["title"] for w in value["covered_by"]] == ["xlogo"]
            assert 0.05 < value["covered_fraction"] < 0.6, value
