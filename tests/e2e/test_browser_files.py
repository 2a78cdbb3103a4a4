"""Downloads, uploads and what `navigate` reports, end to end: the Python MCP client
drives `stephost serve` (stdio) and a real browser on pages this test serves on
loopback; the server records what it receives, and the test checks the files on
disk itself.
"""

import socket
import threading
import time
from pathlib import Path

import pytest

from conftest import send_body, stdio_session, wait_for
from test_browser import call, firefox_available

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

DATA = bytes(range(256)) * 40  # 10 KiB, not text
REPORT = b"name,total\nada,3\n"
UPLOAD = b"upload-content-\x00\x01\x02-end"

FILES = b"""<!doctype html><html><head><title>Files</title></head><body>
<a href="/data.bin" download="data.bin">Download data</a>
<a href="/report">Export report</a>
<form method="post" enctype="multipart/form-data" action="/upload">
  <label>Attachment <input type="file" name="attachment" id="attachment"></label>
  <button type="submit">Send file</button>
</form>
<button onclick="this.textContent = 'Pressed'">Press me</button>
</body></html>"""


class Site:
    """A threaded HTTP server on 127.0.0.1; `uploads` holds every POST body it got."""

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        site = self
        self.uploads = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            send = send_body

            def do_GET(self):
                if self.path == "/files.html":
                    self.send(200, FILES, [("Content-Type", "text/html")])
                elif self.path == "/data.bin":
                    self.send(200, DATA, [("Content-Type", "application/octet-stream")])
                elif self.path == "/report":
                    self.send(
                        200,
                        REPORT,
                        [("Content-Type", "text/csv"), ("Content-Disposition", 'attachment; filename="report.csv"')],
                    )
                elif self.path == "/moved":
                    self.send(302, b"", [("Location", "/missing")])
                else:
                    self.send(404, b"<!doctype html><title>Not found</title>nothing here", [("Content-Type", "text/html")])

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                site.uploads.append(self.rfile.read(length))
                self.send(200, b"<!doctype html><title>Received</title>thanks", [("Content-Type", "text/html")])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site():
    site = Site()
    yield site
    site.close()


def closed_port():
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config_file(tmp_path, upload_dirs):
    path = tmp_path / "stephost.toml"
    dirs = ", ".join(f'"{d}"' for d in upload_dirs)
    path.write_text(f"[browser]\nupload_dirs = [{dirs}]\n")
    return path


async def ref_of(session, query, role=None):
    found = await call(session, "find", {"tabId": 1, "query": query})
    matches = [m for m in found["matches"] if role is None or m["role"] == role]
    assert matches, found
    return matches[0]["ref"]


async def timed(session, tool, args):
    start = time.monotonic()
    value = await call(session, tool, args)
    return value, time.monotonic() - start


async def downloads_flow(session, site):
    """Both kinds of download link: the click returns promptly with the file listed,
    and the file on disk holds the served bytes. Returns the folder."""
    await call(session, "navigate", {"tabId": 1, "url": f"{site.url}/files.html"})

    link = await ref_of(session, "Download data link", "link")
    clicked, took = await timed(session, "computer", {"tabId": 1, "action": "left_click", "ref": link})
    print(f"a[download] click: {took:.3f} s")
    assert took < 1.5, f"a[download] click took {took:.2f} s"
    [entry] = clicked["downloads"]
    assert entry["file"] == "data.bin" and entry["bytes"] == len(DATA), entry
    path = Path(entry["path"])
    assert path.read_bytes() == DATA

    link = await ref_of(session, "Export report link", "link")
    clicked, took = await timed(session, "computer", {"tabId": 1, "action": "left_click", "ref": link})
    print(f"attachment click: {took:.3f} s")
    assert took < 1.5, f"attachment click took {took:.2f} s"
    [entry] = clicked["downloads"]
    assert entry["file"] == "report.csv" and entry["bytes"] == len(REPORT), entry
    assert Path(entry["path"]).read_bytes() == REPORT

    # The page stayed, and the next click does not wait for a navigation.
    button = await ref_of(session, "Press me button", "button")
    pressed, took = await timed(session, "computer", {"tabId": 1, "action": "left_click", "ref": button})
    # A click that waited for the page would take READY_WAIT_MS (2 s) at least;
    # the bound leaves room for a loaded machine below that.
    assert "downloads" not in pressed and took < 1.8, (pressed, took)
    text = await call(session, "get_page_text", {"tabId": 1})
    assert text["title"] == "Files" and "Pressed" in text["text"], text

    listed = await call(session, "downloads", {})
    assert sorted(d["file"] for d in listed["downloads"]) == ["data.bin", "report.csv"], listed
    tabs = await call(session, "tabs_context", {})
    assert len(tabs["downloads"]) == 2, tabs

    folder = path.parent
    assert folder.name.startswith("stephost-downloads-"), folder
    assert Path.home() / "Downloads" not in [folder, *folder.parents]
    return folder


async def navigate_flow(session, site):
    moved = await call(session, "navigate", {"tabId": 1, "url": f"{site.url}/moved"})
    assert moved["status"] == 404, moved
    assert moved["url"] == f"{site.url}/missing", moved
    ok = await call(session, "navigate", {"tabId": 1, "url": f"{site.url}/files.html"})
    assert ok["status"] == 200 and ok["title"] == "Files", ok

    port = closed_port()
    refused = await call(session, "navigate", {"tabId": 1, "url": f"http://127.0.0.1:{port}/"}, ok=False)
    error = refused.structuredContent["error"]
    assert error["code"] == "unavailable", error
    assert f"could not connect to http://127.0.0.1:{port}/: connection refused" in error["message"], error
    assert "unknown error" not in error["message"], error


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
async def test_downloads_are_reported_and_go_with_the_session(site, browser):
    if browser == "firefox" and not firefox_available():
        pytest.fail("firefox-esr and geckodriver are needed: run scripts/test.sh")
    async with stdio_session("--browser", browser) as client:
        folder = await downloads_flow(client, site)
        assert folder.is_dir()
    wait_for(lambda: not folder.exists(), timeout=20, what=f"{folder} to be removed")


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
async def test_navigate_reports_status_final_url_and_plain_network_errors(site, browser):
    if browser == "firefox" and not firefox_available():
        pytest.fail("firefox-esr and geckodriver are needed: run scripts/test.sh")
    async with stdio_session("--browser", browser) as client:
        await navigate_flow(client, site)


async def test_uploads_come_only_from_granted_folders(site, tmp_path):
    granted = tmp_path / "granted"
    granted.mkdir()
    (granted / "notes.bin").write_bytes(UPLOAD)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"do not send")
    (granted / "escape.txt").symlink_to(outside / "secret.txt")
    config = config_file(tmp_path, [granted])

    async with stdio_session("--config", str(config)) as client:
        await call(client, "navigate", {"tabId": 1, "url": f"{site.url}/files.html"})
        field = await ref_of(client, "Attachment")

        # Outside the grant, directly or through a symlink: refused by the host,
        # the input stays empty and the server gets nothing.
        for path in [outside / "secret.txt", granted / "escape.txt", Path("/etc/hostname")]:
            refused = await call(
                client, "file_upload", {"tabId": 1, "ref": field, "paths": [str(path)]}, ok=False
            )
            error = refused.structuredContent["error"]
            assert error["code"] == "denied", error
            assert "upload_dirs" in error["message"], error
        count = await call(
            client, "javascript_tool", {"tabId": 1, "text": "document.getElementById('attachment').files.length"}
        )
        assert count["result"] == 0, count

        uploaded = await call(
            client, "file_upload", {"tabId": 1, "ref": field, "paths": [str(granted / "notes.bin")]}
        )
        assert uploaded["files"] == [{"name": "notes.bin", "bytes": len(UPLOAD)}], uploaded
        assert site.uploads == []
        send = await ref_of(client, "Send file button", "button")
        await call(client, "computer", {"tabId": 1, "action": "left_click", "ref": send})
        text = await call(client, "get_page_text", {"tabId": 1})
        assert text["title"] == "Received", text
        [body] = site.uploads
        assert UPLOAD in body and b'filename="notes.bin"' in body
        assert b"do not send" not in body


async def test_without_upload_dirs_no_file_goes(site, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"x")
    async with stdio_session() as client:
        await call(client, "navigate", {"tabId": 1, "url": f"{site.url}/files.html"})
        field = await ref_of(client, "Attachment")
        refused = await call(
            client, "file_upload", {"tabId": 1, "ref": field, "paths": [str(tmp_path / "a.txt")]}, ok=False
        )
        error = refused.structuredContent["error"]
        assert error["code"] == "denied" and "[browser] upload_dirs" in error["message"], error
    assert site.uploads == []
