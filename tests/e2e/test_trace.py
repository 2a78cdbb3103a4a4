"""A trace people can look at: a batch run with `trace: true` over MCP (the
Python SDK) names its trace, `resources/list` lists it and `resources/read`
returns one self-contained HTML page; real headless Chromium then renders
that page: the timeline, the failed step's error and the step's image are
in its DOM, and the image's pixels are on its screenshot.
"""

import re
import shutil
import subprocess

import pytest
from mcp.shared.exceptions import McpError

from conftest import WITH_TESTKIT, stdio_session
from test_browser_screenshots import Png, near

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HEADLESS = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]


async def traced(s):
    result = await s.call_tool("batch", {"trace": True, "on_failure": "continue", "steps": [
        {"plugin": "testkit", "verb": "image", "input": {"width": 240, "height": 120, "color": [255, 0, 0]}, "label": "a red picture"},
        {"plugin": "testkit", "verb": "sleep", "input": {"ms": 150}},
        {"plugin": "testkit", "verb": "fail", "input": {"code": "not-found", "message": "the <missing> thing"}},
        {"plugin": "testkit", "verb": "echo", "input": {"value": "after the failure"}},
    ]})
    uri = result.structuredContent["trace"]
    assert re.fullmatch(r"stephost://traces/b-[0-9a-f]+", uri), uri
    assert any(uri in c.text for c in result.content if c.type == "text")
    return result, uri


async def test_a_traced_batch_is_a_page_chromium_shows(tmp_path):
    async with stdio_session(serve_args=WITH_TESTKIT) as s:
        result, uri = await traced(s)
        listed = await s.list_resources()
        assert uri in [str(r.uri) for r in listed.resources], listed
        read = await s.read_resource(uri)
        page = read.contents[0]
        assert page.mimeType == "text/html"
        html = page.text
        with pytest.raises(McpError):
            await s.read_resource("stephost://traces/b-0000")
        rf = await s.call_tool("execute_batch", {"session_id": "t", "trace": True, "steps": [
            {"keyword": "Should Be Equal", "arguments": ["a", "a"]},
        ]})
        assert rf.structuredContent["trace"].startswith("stephost://traces/")
    # Self-contained: nothing for the page to fetch.
    assert not re.search(r"<script|<link|src=\"http|url\(http", html), "the trace loads nothing"
    path = tmp_path / "trace.html"
    path.write_text(html)

    dom = subprocess.run([*HEADLESS, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=60).stdout
    timeline = dom[dom.index('id="timeline"'):dom.index("</section>", dom.index('id="timeline"'))]
    assert timeline.count('class="bar') == 4, timeline
    widths = [float(w) for w in re.findall(r"width:([0-9.]+)%", timeline)]
    # Drawn to scale: the 150 ms sleep is most of the batch.
    assert widths[1] > 50 and widths[1] == max(widths), widths
    assert "the &lt;missing&gt; thing" in dom and "not-found" in dom
    assert re.search(r'<img alt="step 1: image" src="data:image/png;base64,', dom), "the image is inline"
    assert 'id="step-3"' in dom and "status-failed" in dom

    shot = tmp_path / "trace.png"
    subprocess.run([*HEADLESS, f"--screenshot={shot}", "--window-size=1200,1400", path.as_uri()],
                   capture_output=True, timeout=60, check=True)
    png = Png(shot.read_bytes())
    red = [(x, y) for y in range(0, png.height, 6) for x in range(0, min(png.width, 700), 6)
           if near(png.pixel(x, y), (255, 0, 0), slack=20)]
    # The 240x120 red image, at its size, where step 1 shows it.
    assert len(red) > 300, f"{len(red)} red samples"
    xs, ys = [x for x, _ in red], [y for _, y in red]
    assert 200 <= max(xs) - min(xs) <= 250 and 100 <= max(ys) - min(ys) <= 130, (min(xs), max(xs), min(ys), max(ys))
