"""Accessibility (AT-SPI) verbs and the checks made before a batch acts, against
real GTK3 applications from Debian under Xvfb, bare and under openbox.

Each module run starts its own D-Bus session bus (the accessibility bus,
org.a11y.Bus from at-spi2-core, is activated from it), an Xvfb and, for the
openbox run, the window manager. The applications are zenity dialogs (GTK3):
what they report on stdout and in their exit status when they close is the
independent check that our press and set_text reached them; nothing is read
back through stephost to decide a test.

The flows are written from the tool descriptions as an agent would: list the
window's elements with ui_elements, then press or set_text by path (with the
name seen, as expect_name) or by name.

Needs: xvfb, xauth, openbox, zenity, at-spi2-core, dbus-x11 (scripts/test.sh
installs them).
"""

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import BIN, free_display, need, server_env, stop_processes, wait_for

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

EXTRA_PLUGINS = os.environ.get("STEPHOST_DESKTOP_PLUGINS")




class Session:
    """Xvfb + a private D-Bus session bus (+ openbox), and the GTK apps started in it."""

    def __init__(self, wm):
        self.wm = wm
        self.procs = []
        self.dir = Path(tempfile.mkdtemp(prefix="stephost-a11y-"))
        self.display = None
        self.bus = None
        # The accessibility bus puts its socket under XDG_RUNTIME_DIR (else a
        # shared path in the home folder): one of its own per session keeps
        # sessions running side by side apart.
        self.runtime = self.dir / "run"
        self.runtime.mkdir(mode=0o700)

    def env(self, extra=None):
        env = dict(os.environ)
        env.update({"DISPLAY": self.display, "DBUS_SESSION_BUS_ADDRESS": self.bus, "NO_AT_BRIDGE": "0",
                    "XDG_RUNTIME_DIR": str(self.runtime)})
        for key in ("WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "AT_SPI_BUS_ADDRESS"):
            env.pop(key, None)
        env.update(extra or {})
        return env

    def __enter__(self):
        need("Xvfb", "openbox", "zenity", "dbus-daemon")
        self.display = free_display(141, 190)
        self.procs.append(subprocess.Popen(
            ["Xvfb", self.display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for(lambda: Path(f"/tmp/.X11-unix/X{self.display[1:]}").exists(), timeout=20.0, what="Xvfb")
        bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                               env={**os.environ, "DISPLAY": self.display, "XDG_RUNTIME_DIR": str(self.runtime)},
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.procs.append(bus)
        self.bus = bus.stdout.readline().strip()
        assert self.bus.startswith("unix:"), self.bus
        if self.wm == "openbox":
            self.procs.append(subprocess.Popen(["openbox"], env=self.env(),
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        stop_processes(self.procs)
        shutil.rmtree(self.dir, ignore_errors=True)

    def zenity(self, *args):
        proc = subprocess.Popen(["zenity", *args], env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        self.procs.append(proc)
        return proc


@pytest.fixture(scope="module", params=["bare", "openbox"])
def desktop(request):
    with Session(request.param) as s:
        yield s


@contextlib.asynccontextmanager
async def mcp(env):
    extra = ["--plugins", EXTRA_PLUGINS] if EXTRA_PLUGINS else []
    params = StdioServerParameters(command=BIN, args=[*extra, "serve"], env=server_env(env))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def texts(result):
    return "\n".join(c.text for c in result.content if c.type == "text")


async def call(session, tool, args):
    result = await session.call_tool(tool, args)
    return result.structuredContent or {}, texts(result)


async def elements(session, title, **filters):
    async def listed():
        r, text = await call(session, "ui_elements", {"target": title, **filters})
        return r if r.get("status") == "passed" else None

    # The dialog's tree appears on the bus a moment after its window maps.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        r = await listed()
        if r and any(e["role"] == "push button" for e in r["value"]["elements"]):
            return r["value"]["elements"]
        time.sleep(0.2)
    raise AssertionError(f"no accessibility tree for {title!r}")


async def test_set_text_and_press_fill_and_close_a_gtk_dialog(desktop):
    dialog = desktop.zenity("--entry", "--title", "A11y Entry One", "--text", "Your name:")
    async with mcp(desktop.env()) as session:
        listed = await elements(session, "A11y Entry One", interactive=True)
        field = next(e for e in listed if e.get("editable"))
        ok = next(e for e in listed if e["role"] == "push button" and e["name"] == "OK")
        assert "click" in [a.lower() for a in ok["actions"]], ok
        r, text = await call(session, "set_text", {"path": field["path"], "text": "Ada Lovelace"})
        assert r["status"] == "passed", text
        r, text = await call(session, "press", {"path": ok["path"], "expect_name": "OK"})
        assert r["status"] == "passed", text
    out, _ = dialog.communicate(timeout=15)
    assert dialog.returncode == 0 and out.strip() == "Ada Lovelace"


async def test_by_name_a_label_finds_its_field_in_one_batch(desktop):
    dialog = desktop.zenity("--entry", "--title", "A11y Entry Two", "--text", "City:")
    async with mcp(desktop.env()) as session:
        await elements(session, "A11y Entry Two")
        r, text = await call(session, "do_steps", {"look": False, "steps": [
            {"do": "set_text", "target": "A11y Entry Two", "name": "City:", "text": "Zürich 東京"},
            {"do": "press", "target": "A11y Entry Two", "name": "OK", "role": "push button"},
        ]})
        assert r["status"] == "passed", text
    out, _ = dialog.communicate(timeout=15)
    assert dialog.returncode == 0 and out.strip() == "Zürich 東京"


async def test_a_wrong_expect_name_is_refused_and_nothing_is_pressed(desktop):
    dialog = desktop.zenity("--question", "--title", "A11y Question", "--text", "Delete everything?")
    async with mcp(desktop.env()) as session:
        listed = await elements(session, "A11y Question")
        yes = next(e for e in listed if e["role"] == "push button" and e["name"].lower() == "yes")
        r, text = await call(session, "press", {"path": yes["path"], "expect_name": "No"})
        assert r["status"] == "failed", text
        assert r["error"]["code"] == "world-moved" and "nothing was done" in r["error"]["message"], r
        time.sleep(0.5)
        assert dialog.poll() is None, "the dialog was answered although the press was refused"
        r, text = await call(session, "press", {"target": "A11y Question", "name": "No"})
        assert r["status"] == "passed", text
    dialog.wait(timeout=15)
    assert dialog.returncode == 1, "No answers with exit status 1"


async def test_a_bad_key_in_step_two_refuses_the_batch_before_step_one_acts(desktop):
    dialog = desktop.zenity("--entry", "--title", "A11y Entry Three", "--text", "Code:")
    async with mcp(desktop.env()) as session:
        await elements(session, "A11y Entry Three")
        r, text = await call(session, "do_steps", {"look": False, "steps": [
            {"do": "set_text", "target": "A11y Entry Three", "name": "Code:", "text": "typed-before"},
            {"do": "key", "target": "A11y Entry Three", "combo": "ctrl+NoSuchKey"},
        ]})
        assert r["status"] == "invalid", text
        assert "steps[1]" in text and "NoSuchKey" in text, text
        r, text = await call(session, "batch", {"steps": [
            {"plugin": "desktop", "verb": "set_text",
             "input": {"target": "A11y Entry Three", "name": "Code:", "text": "typed-before"}},
            {"plugin": "desktop", "verb": "key", "input": {"combo": "ctrl+alt+BackSpace"}},
        ]})
        assert r["status"] == "invalid", text
        assert any(e["field"] == "steps[1].input.combo" for e in r["errors"]), r
        # Nothing ran: the field is still empty when OK closes the dialog.
        r, text = await call(session, "press", {"target": "A11y Entry Three", "name": "OK"})
        assert r["status"] == "passed", text
    out, _ = dialog.communicate(timeout=15)
    assert dialog.returncode == 0 and out.strip() == ""


async def test_wait_for_an_element_then_read_the_window_as_text(desktop):
    async with mcp(desktop.env()) as session:
        later = subprocess.Popen(["sh", "-c", "sleep 1; exec zenity --info --title 'A11y Later' --text 'Backup finished'"],
                                 env=desktop.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        desktop.procs.append(later)
        r, text = await call(session, "batch", {"steps": [
            {"plugin": "desktop", "verb": "wait_for",
             "input": {"condition": "window_appears", "target": "A11y Later", "timeout_ms": 20000}},
            {"plugin": "desktop", "verb": "wait_for",
             "input": {"condition": "element_matches", "target": "A11y Later",
                       "element": {"text": "backup finished"}, "timeout_ms": 20000}},
            {"plugin": "desktop", "verb": "screenshot", "input": {"target": "A11y Later", "detail": "text"}},
        ]})
        assert r["status"] == "passed", text
        shot = r["steps"][2]
        assert not any(c["type"] == "image" for c in shot.get("content", [])), "detail text has no image"
        assert "OK" in text and "Backup finished" in text, text
        r, text = await call(session, "press", {"target": "A11y Later", "name": "OK"})
        assert r["status"] == "passed", text
    later.wait(timeout=15)
    assert later.returncode == 0


async def test_without_an_accessibility_bus_the_verbs_are_refused_naming_what_to_start(desktop):
    env = desktop.env()
    env.pop("DBUS_SESSION_BUS_ADDRESS")
    async with mcp(env) as session:
        r, text = await call(session, "do_steps", {"look": False, "steps": [
            {"do": "key", "combo": "Escape"},
            {"do": "press", "path": "0x400001/0/1", "expect_name": "OK"},
        ]})
        assert r["status"] == "invalid", text
        assert "steps[1]" in text and "at-spi2-core" in text and "dbus-run-session" in text, text
