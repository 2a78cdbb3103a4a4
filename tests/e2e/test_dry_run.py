"""`dry_run: true` on every batch tool, from the Python MCP SDK (which checks
each reply against the tool's output schema): the plan comes back with status
`planned`, each step's budget and what stays unresolved, and nothing runs:
the session's testkit counter is where it was, and a browser batch's page
never opens (no browser starts for a planned `navigate`).
"""

import json

import pytest

from conftest import stdio_session

# Every batch tool: run_macro and do_steps are the desktop's, served when named
# (a dry run needs no display: nothing acts).
TOOLS = ["--tools", "browser,rf,testkit,desktop"]

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]


async def count(s, session):
    r = await s.call_tool("testkit_count", {"session_id": session})
    assert not r.isError, r
    return r.structuredContent["value"]


async def test_every_batch_tool_plans_without_running():
    async with stdio_session(serve_args=TOOLS) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        for name in ["batch", "execute_batch", "browser_batch", "run_macro", "do_steps"]:
            assert "dry_run" in tools[name].inputSchema["properties"], name
        assert "dry_run" not in tools["testkit_count"].inputSchema["properties"]

        assert await count(s, "dry") == 1
        planned = await s.call_tool("batch", {"session_id": "dry", "dry_run": True, "steps": [
            {"plugin": "testkit", "verb": "count", "input": {}},
            {"plugin": "testkit", "verb": "echo", "input": {"value": "after ${STEP_1}"}, "retry": {"attempts": 2}},
        ]})
        data = planned.structuredContent
        assert not planned.isError and data["status"] == "planned", data
        assert data["steps"] == [] and data["steps_executed"] == 0
        steps = data["plan"]["steps"]
        assert [s_["status"] for s_ in steps] == ["planned", "planned"]
        assert steps[1]["input"] == {"value": "after ${STEP_1}"}
        assert steps[1]["unresolved"][0]["field"] == "input.value"
        assert steps[1]["retry"]["attempts"] == 2
        assert steps[0]["budget"]["timeout_ms"] > 0 and steps[0]["budget"]["fuel"] > 0
        text = planned.content[0].text
        assert text.startswith("planned: 2 step(s)") and "[2] testkit.echo" in text, text
        # Nothing ran.
        assert await count(s, "dry") == 2

        rf = await s.call_tool("execute_batch", {"session_id": "dry-rf", "dry_run": True, "steps": [
            {"keyword": "Set Variable", "arguments": ["hello"], "assign_to": "greeting"},
            {"keyword": "Should Be Equal", "arguments": ["${greeting}", "hello"]},
        ]})
        assert not rf.isError and rf.structuredContent["status"] == "planned", rf.structuredContent
        assert len(rf.structuredContent["plan"]["steps"]) == 2
        assert isinstance(rf.structuredContent["summary"], str)

        browser = await s.call_tool("browser_batch", {"dry_run": True, "actions": [
            {"name": "tabs_create", "input": {"url": "http://127.0.0.1:9/never-opened"}},
            {"name": "get_page_text", "input": {"tabId": "${STEP_1.tabId}"}},
        ]})
        data = browser.structuredContent
        assert not browser.isError and data["status"] == "planned", data
        # The output schema's required fields, empty: the SDK accepted the reply.
        assert data["results"] == [] and data["error_count"] == 0
        assert data["plan"]["steps"][1]["unresolved"], data

        macro = await s.call_tool("run_macro", {"dry_run": True, "steps": [
            {"tool": "browser_navigate", "params": {"url": "http://127.0.0.1:9/never-opened"}},
        ]})
        assert macro.structuredContent["status"] == "planned", macro.structuredContent

        desktop = await s.call_tool("do_steps", {"dry_run": True, "steps": [{"do": "move", "x": 6, "y": 7}]})
        assert desktop.structuredContent["status"] == "planned", desktop.structuredContent
        assert desktop.structuredContent["plan"]["steps"][0]["plugin"] == "desktop", desktop.structuredContent

        bad = await s.call_tool("batch", {"dry_run": "yes", "steps": [
            {"plugin": "testkit", "verb": "count", "input": {}},
        ]})
        assert bad.isError and bad.structuredContent["status"] == "invalid"
        assert any(e["field"] == "dry_run" for e in bad.structuredContent["errors"]), json.dumps(bad.structuredContent)
        # A dry run with a bad step is refused like a real batch, naming it.
        wrong = await s.call_tool("batch", {"dry_run": True, "steps": [
            {"plugin": "testkit", "verb": "sleep", "input": {"ms": "long"}},
        ]})
        assert wrong.structuredContent["status"] == "invalid", wrong.structuredContent
