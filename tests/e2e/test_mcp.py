"""The MCP front, driven by the real Python MCP SDK over stdio and streamable HTTP."""

import asyncio
import base64
import time

import pytest
from mcp import types

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import WITH_TESTKIT, HttpServer, http_session, stdio_session

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

CHAINED = {
    "steps": [
        {"plugin": "testkit", "verb": "echo", "input": {"value": {"items": [{"name": "alpha"}]}}},
        {"plugin": "testkit", "verb": "echo", "input": {"value": "${STEP_1.items[0].name}"}, "assign_to": "first"},
        {"plugin": "testkit", "verb": "echo", "input": {"value": "got ${first}"}, "label": "splice"},
    ]
}


async def check_basics(session):
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert "batch" in tools and "testkit_echo" in tools
    batch = tools["batch"]
    assert "${STEP_N}" in batch.description or "STEP_N" in batch.description
    assert batch.inputSchema["required"] == ["steps"]
    assert batch.outputSchema["type"] == "object"
    assert tools["testkit_echo"].inputSchema["properties"]["session_id"]["type"] == "string"

    result = await session.call_tool("batch", CHAINED)
    assert result.isError is False
    report = result.structuredContent
    assert report["status"] == "passed"
    assert [s["value"] for s in report["steps"]][1:] == ["alpha", "got alpha"]
    assert result.content[0].type == "text" and "passed" in result.content[0].text

    single = await session.call_tool("testkit_echo", {"value": [1, 2]})
    assert single.isError is False
    assert single.structuredContent["value"] == [1, 2]
    assert single.structuredContent["status"] == "passed"


async def check_progress(session):
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    steps = [{"plugin": "testkit", "verb": "echo", "input": {"value": i}, "label": f"echo {i}"} for i in range(4)]
    result = await session.call_tool("batch", {"steps": steps}, progress_callback=on_progress)
    assert result.structuredContent["status"] == "passed"
    # Notifications are handled concurrently with the result; give stragglers a moment.
    for _ in range(50):
        if len(seen) == 4:
            break
        await asyncio.sleep(0.02)
    assert [p for p, _, _ in seen] == [1, 2, 3, 4]
    assert all(t == 4 for _, t, _ in seen)
    assert seen[0][2] == "step 1: echo 0 passed"


async def check_cancel(session):
    """Cancel a `spin` batch; the next call in the same session answers at once."""
    session_id = "cancel-me"
    request_id = session._request_id  # the id the next request will carry
    task = asyncio.create_task(
        session.call_tool("batch", {"session_id": session_id, "steps": [{"plugin": "testkit", "verb": "spin", "input": {}}]})
    )
    await asyncio.sleep(0.5)
    assert not task.done(), "spin must still be running"
    started = time.monotonic()
    await session.send_notification(
        types.ClientNotification(
            types.CancelledNotification(params=types.CancelledNotificationParams(requestId=request_id, reason="test"))
        )
    )
    # The session's lock is held by the spinning batch until the cancel lands, so
    # this call can only answer once the cancellation took effect.
    after = await session.call_tool("testkit_echo", {"value": "alive", "session_id": session_id})
    elapsed = time.monotonic() - started
    assert after.structuredContent["value"] == "alive"
    assert elapsed < 1.0, f"cancellation took {elapsed:.2f}s"
    task.cancel()
    with pytest.raises((asyncio.CancelledError, Exception)):
        await task


async def test_stdio_basics_progress_and_cancel():
    async with stdio_session(serve_args=WITH_TESTKIT) as session:
        await check_basics(session)
        await check_progress(session)
        await check_cancel(session)
        again = await session.call_tool("batch", CHAINED)
        assert again.structuredContent["status"] == "passed"


async def test_stdio_connection_keeps_one_session():
    async with stdio_session(serve_args=WITH_TESTKIT) as session:
        first = await session.call_tool("testkit_count", {})
        second = await session.call_tool("testkit_count", {})
        assert second.structuredContent["value"] == first.structuredContent["value"] + 1
        assert first.structuredContent["session_id"] == second.structuredContent["session_id"]


async def test_http_basics_progress_and_cancel(http_server):
    async with http_session(http_server.url) as session:
        await check_basics(session)
        await check_progress(session)
        await check_cancel(session)
        again = await session.call_tool("batch", CHAINED)
        assert again.structuredContent["status"] == "passed"


async def test_http_sessions_are_shared_by_id_and_isolated_otherwise(http_server):
    async with http_session(http_server.url) as a, http_session(http_server.url) as b:
        r = await a.call_tool("testkit_count", {"session_id": "shared"})
        assert r.structuredContent["value"] == 1
        r = await b.call_tool("testkit_count", {"session_id": "shared"})
        assert r.structuredContent["value"] == 2, "same session_id from another client shares state"
        r = await b.call_tool("testkit_count", {"session_id": "other"})
        assert r.structuredContent["value"] == 1, "a different session_id does not"

        fresh = await a.call_tool("testkit_count", {})
        handle = fresh.structuredContent["session_id"]
        assert fresh.structuredContent["value"] == 1 and handle
        passed_on = await b.call_tool("testkit_count", {"session_id": handle})
        assert passed_on.structuredContent["value"] == 2, "the returned session id continues the state"


async def test_errors_are_tool_results_and_bad_requests_are_protocol_errors():
    async with stdio_session() as session:
        invalid = await session.call_tool(
            "batch",
            {"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": "${STEP_2}"}}, {"plugin": "testkit", "verb": "nope"}]},
        )
        assert invalid.isError is True
        report = invalid.structuredContent
        assert report["status"] == "invalid"
        fields = {e["field"] for e in report["errors"]}
        assert {"steps[0].input.value", "steps[1].verb"} <= fields
        assert "cannot have run yet" in invalid.content[0].text

        failed = await session.call_tool("batch", {"steps": [{"plugin": "testkit", "verb": "fail", "input": {"code": "not-found"}}]})
        assert failed.isError is True
        assert failed.structuredContent["steps"][0]["error"]["code"] == "not-found"

        with pytest.raises(Exception) as err:
            await session.call_tool("no_such_tool", {})
        assert "unknown tool" in str(err.value)


async def test_images_come_back_as_image_content_after_a_label():
    async with stdio_session() as session:
        result = await session.call_tool(
            "batch",
            {"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": 1}}, {"plugin": "testkit", "verb": "image", "input": {"width": 3, "height": 2}}]},
        )
        kinds = [c.type for c in result.content]
        # The report's lines end with the image's label, then the image, then
        # the lines the plugin wrote after it.
        assert kinds == ["text", "image", "text"], kinds
        assert result.content[0].text.splitlines()[-1] == "[step 2: image]"
        png = base64.b64decode(result.content[1].data)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert result.content[1].mimeType == "image/png"
        structured_image = next(c for c in result.structuredContent["steps"][1]["content"] if c["type"] == "image")
        assert structured_image["data"] == "(sent as image content)"


async def test_http_transport_session_ids_carry_the_instance():
    # A proxy routes on the id's instance prefix (docs/deploy.md), so the
    # Mcp-Session-Id that stephost mints must carry it, like session handles do.
    import re as _re

    with HttpServer(config='[server]\ninstance = "stephost-3"\n', serve_args=WITH_TESTKIT) as server:
        async with streamable_http_client(server.url) as (read, write, get_session_id):
            async with ClientSession(read, write) as session:
                await session.initialize()
                sid = get_session_id()
                assert _re.fullmatch(r"stephost-3\.[0-9a-f]{8}\.[0-9a-f]{20}", sid or ""), sid
                result = await session.call_tool("testkit_echo", {"value": "routed"})
                assert not result.isError, result
