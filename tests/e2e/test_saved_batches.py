"""Saved batches as tools, from the Python MCP SDK as an agent uses them: a
batch that worked is saved with `save_batch`, comes back in tools/list (the
client is told with notifications/tools/list_changed), runs with its
parameters checked against the schema it was saved with, dry-runs without
acting, survives `serve` restarting, and is gone after `delete_batch`. A
saved browser flow adds to-dos to TodoMVC (npm) and the page's own storage is
read back; tenants never see each other's saved batches.
"""

import asyncio
import json
import os
import tempfile

import mcp.types as types
import pytest
from mcp.shared.exceptions import McpError

from conftest import HttpServer, http_session, server_env, stdio_session
from web_apps import TODO, fetched, static_site

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

GREET = {
    "name": "greet",
    "description": "Echo a greeting for someone, and count the calls in the session.",
    "parameters": {
        "type": "object",
        "properties": {
            "who": {"type": "string", "minLength": 1},
            "times": {"type": "integer", "minimum": 1, "default": 2},
        },
        "required": ["who"],
        "additionalProperties": False,
    },
    "steps": [
        {"plugin": "testkit", "verb": "echo", "input": {"value": "hello ${params.who}"}, "assign_to": "greeting"},
        {"plugin": "testkit", "verb": "echo", "input": {"value": {"n": "${params.times}", "said": "${greeting}"}}},
        {"plugin": "testkit", "verb": "count", "input": {}},
    ],
}


class Notes:
    """The server's notifications/tools/list_changed, counted."""

    def __init__(self):
        self.changed = 0
        self.event = asyncio.Event()

    async def __call__(self, message):
        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ToolListChangedNotification):
            self.changed += 1
            self.event.set()

    async def wait(self, timeout=10):
        await asyncio.wait_for(self.event.wait(), timeout)
        self.event.clear()


def env_with(data):
    env = server_env()
    env["STEPHOST_DATA_DIR"] = str(data)
    return env


async def tools(s):
    return {t.name: t for t in (await s.list_tools()).tools}


async def test_a_saved_batch_is_a_tool_that_survives_a_restart(tmp_path):
    notes = Notes()
    async with stdio_session(env=env_with(tmp_path), message_handler=notes) as s:
        listed = await tools(s)
        assert {"save_batch", "list_batches", "delete_batch"} <= set(listed)
        assert "greet" not in listed
        saved = await s.call_tool("save_batch", GREET)
        assert not saved.isError, saved.content
        assert saved.structuredContent["parameters"] == ["times", "who"]
        await notes.wait()

        greet = (await tools(s))["greet"]
        assert greet.description.startswith(GREET["description"])
        assert greet.inputSchema["required"] == ["who"]
        assert {"who", "times", "session_id", "dry_run", "trace"} <= set(greet.inputSchema["properties"])

        r = await s.call_tool("greet", {"who": "Ada", "session_id": "g"})
        data = r.structuredContent
        assert not r.isError and data["status"] == "passed", data
        assert [st["value"] for st in data["steps"]] == ["hello Ada", {"n": 2, "said": "hello Ada"}, 1]
        r = await s.call_tool("greet", {"who": "Bob", "times": 5, "session_id": "g"})
        assert r.structuredContent["steps"][1]["value"] == {"n": 5, "said": "hello Bob"}
        assert r.structuredContent["steps"][2]["value"] == 2

        # A value is data: a `${...}` in it is typed as it is, never resolved.
        r = await s.call_tool("greet", {"who": "${STEP_2}", "session_id": "g"})
        assert r.structuredContent["steps"][0]["value"] == "hello ${STEP_2}"

        # Bad parameters are refused naming the field, and nothing runs.
        for args, field in [({"who": 7}, "who"), ({}, "who"), ({"who": "x", "times": 0}, "times"), ({"who": "x", "extra": 1}, "(arguments)")]:
            r = await s.call_tool("greet", {**args, "session_id": "g"})
            assert r.isError, (args, r)
            assert r.structuredContent["status"] == "invalid"
            assert field in [e["field"] for e in r.structuredContent["errors"]], (args, r.structuredContent)
        # A dry run plans with the parameters put in and runs nothing.
        r = await s.call_tool("greet", {"who": "Dry", "session_id": "g", "dry_run": True})
        assert r.structuredContent["status"] == "planned", r.structuredContent
        assert r.structuredContent["plan"]["steps"][0]["input"] == {"value": "hello Dry"}
        # Three runs counted; the refused calls and the dry run ran nothing.
        r = await s.call_tool("batch", {"session_id": "g", "steps": [{"plugin": "testkit", "verb": "count", "input": {}}]})
        assert r.structuredContent["steps"][0]["value"] == 4, r.structuredContent

    # Restarted on the same data directory: still there, still runs.
    async with stdio_session(env=env_with(tmp_path), message_handler=notes) as s:
        listed = await tools(s)
        assert "greet" in listed
        r = await s.call_tool("greet", {"who": "again"})
        assert r.structuredContent["steps"][0]["value"] == "hello again"
        shown = (await s.call_tool("list_batches", {})).structuredContent["batches"]
        assert [b["name"] for b in shown] == ["greet"] and shown[0]["offered"] is True
        assert shown[0]["steps"] == GREET["steps"]
        before = notes.changed
        gone = await s.call_tool("delete_batch", {"name": "greet"})
        assert not gone.isError, gone.content
        await notes.wait()
        assert notes.changed == before + 1
        assert "greet" not in await tools(s)
        with pytest.raises(McpError, match="unknown tool `greet`"):
            await s.call_tool("greet", {"who": "x"})
    async with stdio_session(env=env_with(tmp_path)) as s:
        assert "greet" not in await tools(s)
        assert (await s.call_tool("list_batches", {})).structuredContent["batches"] == []


async def test_what_cannot_be_saved_is_refused_naming_the_field(tmp_path):
    async with stdio_session(env=env_with(tmp_path)) as s:
        async def refused(args):
            r = await s.call_tool("save_batch", args)
            assert r.isError, r
            return {e["field"]: e["message"] for e in r.structuredContent["errors"]}

        # Names other tools have.
        for taken in ["batch", "browser_batch", "navigate", "save_batch"]:
            errors = await refused({**GREET, "name": taken})
            assert "name" in errors and "already" in errors["name"], (taken, errors)
        # Steps that would not run, parameters that are not declared, a bad schema.
        errors = await refused({
            **GREET,
            "parameters": {"type": "object", "properties": {"who": {"type": "strin"}}},
            "steps": [
                {"plugin": "testkit", "verb": "echoo", "input": {"value": 1}},
                {"plugin": "testkit", "verb": "echo", "input": {"value": "${params.whom}"}},
                {"plugin": "nosuch", "verb": "x"},
            ],
        })
        assert "steps[0].verb" in errors and "did you mean `echo`" in errors["steps[0].verb"], errors
        assert "no parameter `whom`" in errors["steps[1].input.value"], errors
        assert "steps[2].plugin" in errors, errors
        assert any(f.startswith("parameters/properties/who") for f in errors), errors
        # Saving twice needs `replace`.
        assert not (await s.call_tool("save_batch", GREET)).isError
        errors = await refused(GREET)
        assert "replace: true" in errors["name"], errors
        again = await s.call_tool("save_batch", {**GREET, "description": "Greets.", "replace": True})
        assert not again.isError and again.structuredContent["replaced"] is True
        assert (await tools(s))["greet"].description.startswith("Greets.")
        # Nothing refused was kept.
        names = [b["name"] for b in (await s.call_tool("list_batches", {})).structuredContent["batches"]]
        assert names == ["greet"]


async def test_a_saved_browser_flow_adds_todos_in_todomvc(tmp_path):
    assert fetched(), "the web apps are missing: run scripts/test.sh, which fetches them"
    server, base = static_site()
    try:
        async with stdio_session(env=env_with(tmp_path)) as s:
            add = {
                "name": "add_todo",
                "description": "Add a to-do to the TodoMVC app at `url`.",
                "parameters": {
                    "type": "object",
                    "properties": {"url": {"type": "string"}, "title": {"type": "string"}},
                    "required": ["url", "title"],
                },
                "steps": [
                    {"plugin": "browser", "verb": "navigate", "input": {"tabId": 1, "url": "${params.url}"}},
                    {"plugin": "browser", "verb": "computer", "input": {"tabId": 1, "action": "type", "find": "What needs to be done? input", "text": "${params.title}"}},
                    {"plugin": "browser", "verb": "computer", "input": {"tabId": 1, "action": "key", "text": "Return"}},
                ],
            }
            saved = await s.call_tool("save_batch", add)
            assert not saved.isError, saved.content
            url = base + TODO
            for title in ["Buy milk", "Pay ${STEP_1} rent"]:
                r = await s.call_tool("add_todo", {"url": url, "title": title})
                assert not r.isError and r.structuredContent["status"] == "passed", r.structuredContent
            stored = await s.call_tool("javascript_tool", {"tabId": 1, "text": "JSON.parse(localStorage.getItem('todos-vanillajs')).todos.map(t => t.title)"})
            assert not stored.isError, stored.content
            titles = stored.structuredContent["value"]["result"]
            assert titles == ["Buy milk", "Pay ${STEP_1} rent"], stored.structuredContent
    finally:
        server.shutdown()
        server.server_close()


TENANTS = """
[[tenants]]
id = "alpha"
token_sha256 = ["{a}"]

[[tenants]]
id = "beta-two"
token_sha256 = ["{b}"]
"""


async def test_tenants_keep_their_own_and_every_client_of_one_is_told(tmp_path):
    import hashlib

    sha = lambda t: hashlib.sha256(t.encode()).hexdigest()  # noqa: E731
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
        f.write(TENANTS.format(a=sha("alpha-secret"), b=sha("beta-secret")))
        f.flush()
        with HttpServer(serve_args=["--tenants", f.name], env={"STEPHOST_DATA_DIR": str(tmp_path)}) as server:
            watcher = Notes()
            async with http_session(server.url, "alpha-secret") as a, http_session(server.url, "alpha-secret", message_handler=watcher) as a2, http_session(server.url, "beta-secret") as b:
                assert "greet" not in await tools(a2)
                saved = await a.call_tool("save_batch", GREET)
                assert not saved.isError, saved.content
                # The other connection of the same tenant is told, and sees it.
                await watcher.wait()
                assert "greet" in await tools(a2)
                # The other tenant neither sees nor runs it, and may save its own of that name.
                assert "greet" not in await tools(b)
                with pytest.raises(McpError, match="unknown tool `greet`"):
                    await b.call_tool("greet", {"who": "x"})
                mine = await b.call_tool("save_batch", {**GREET, "description": "Beta's own greeting."})
                assert not mine.isError, mine.content
                assert (await tools(a))["greet"].description.startswith(GREET["description"])
    # Each tenant has its own file.
    files = sorted(p.name for p in (tmp_path / "saved-batches").iterdir())
    assert files == ["alpha.json", "beta-two.json"], files
    kept = json.loads((tmp_path / "saved-batches" / "alpha.json").read_text())
    assert [b["name"] for b in kept["batches"]] == ["greet"]
    assert not any(name.startswith(".") or "tmp" in name for name in os.listdir(tmp_path / "saved-batches"))
