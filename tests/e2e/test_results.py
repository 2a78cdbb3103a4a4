"""What a model reads in a tool result (issue 12): the text content is plain
lines (a summary, then the steps), a page tree arrives as its own lines, and
the structured content carries the full JSON; the text never repeats it.

bench/result_size.py measures the same results in bytes, before and after.
"""

import json
import tempfile

import pytest

from conftest import WITH_TESTKIT, is_json, stdio_session

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

PAGE = "data:text/html," + "".join(
    f"<p>Row {i}</p><label>Field {i} <input name=f{i}></label><button>Save {i}</button>" for i in range(5)
)


def texts(result):
    return [c.text for c in result.content if c.type == "text"]


def rf_steps(n):
    steps = []
    for i in range(n // 2):
        steps += [
            {"keyword": "Set Variable", "args": [f"value {i}"]},
            {"keyword": "Should Be Equal", "args": [f"${{STEP_{2 * i + 1}}}", f"value {i}"]},
        ]
    return steps


async def test_a_long_execute_batch_reads_as_one_line_per_step():
    async with stdio_session(serve_args=WITH_TESTKIT) as session:
        result = await session.call_tool("execute_batch", {"session_id": "lines", "steps": rf_steps(200)})
    assert not result.isError, result
    structured = result.structuredContent
    assert structured["status"] == "PASS" and len(structured["steps"]) == 200
    [text] = texts(result)
    assert not is_json(text)
    lines = text.splitlines()
    assert lines[0].startswith("PASS"), lines[0]
    assert structured["batch_id"] in lines[0] and "lines" in lines[0]
    step_lines = [line for line in lines if line.startswith("step ")]
    assert len(step_lines) == 200, lines[:5]
    assert step_lines[0].startswith("step 0 Set Variable    value 0 → PASS in ") and step_lines[0].endswith(": value 0")
    assert step_lines[1].startswith("step 1 Should Be Equal    value 0    value 0 → PASS")
    # Nothing escaped, and the structured JSON is not said again in the text.
    assert '\\"' not in text and '"return_value"' not in text
    structured_bytes = len(json.dumps(structured, separators=(",", ":")))
    assert len(text) < structured_bytes * 0.75, (len(text), structured_bytes)


async def test_a_failed_step_says_what_failed_in_its_line():
    async with stdio_session(serve_args=WITH_TESTKIT) as session:
        result = await session.call_tool(
            "execute_batch",
            {
                "session_id": "fail",
                "on_failure": "stop",
                "steps": [
                    {"keyword": "Set Variable", "args": ["apple"]},
                    {"keyword": "Should Be Equal", "args": ["${STEP_1}", "pear"]},
                    {"keyword": "Log", "args": ["never"]},
                ],
            },
        )
    # A failed batch is a normal result, as rf-mcp answers it; steps count from 0.
    assert not result.isError
    assert result.structuredContent["failure"]["step_index"] == 1
    [text] = texts(result)
    lines = text.splitlines()
    assert lines[0].startswith("FAIL"), lines
    failed = [line for line in lines if line.startswith("step 1 ")]
    assert failed and "→ FAIL" in failed[0] and "apple != pear" in failed[0], lines
    assert any(line.startswith("step 2 Log") and "SKIPPED" in line for line in lines), lines


async def test_a_page_tree_arrives_as_its_lines():
    async with stdio_session(serve_args=["--tools", "browser"]) as session:
        created = await session.call_tool("tabs_create", {"session_id": "tree", "url": PAGE})
        assert not created.isError, created
        tab = created.structuredContent["value"]["tabId"]
        result = await session.call_tool("read_page", {"session_id": "tree", "tabId": tab})
    assert not result.isError, result
    tree = result.structuredContent["value"]["tree"]
    assert 'button "Save 3"' in tree
    [text] = texts(result)
    assert not is_json(text)
    lines = text.splitlines()
    assert lines[0].startswith("passed in ") and "session tree" in lines[0]
    # Every line of the tree is a line of the text, as it is (indented under `tree:`).
    assert "tree:" in lines
    body = lines[lines.index("tree:") + 1 :]
    for tree_line in tree.splitlines():
        assert "  " + tree_line in body, tree_line
    assert text.count('button "Save 3"') == 1


async def test_a_batch_step_text_that_repeats_its_value_is_said_once():
    steps = [{"plugin": "testkit", "verb": "echo", "input": {"value": {"word": "ostrich"}}}]
    async with stdio_session(serve_args=WITH_TESTKIT) as session:
        result = await session.call_tool("batch", {"steps": steps})
    assert not result.isError, result
    step = result.structuredContent["steps"][0]
    assert step["value"] == {"word": "ostrich"}
    assert "content" not in step, step
    [text] = texts(result)
    assert text.count("ostrich") == 1, text


async def test_images_follow_the_line_that_names_them():
    actions = [{"name": "computer", "input": {"tabId": 0, "action": "screenshot"}}]
    async with stdio_session(serve_args=["--tools", "browser"]) as session:
        created = await session.call_tool("tabs_create", {"session_id": "img", "url": PAGE})
        actions[0]["input"]["tabId"] = created.structuredContent["value"]["tabId"]
        result = await session.call_tool("browser_batch", {"session_id": "img", "actions": actions})
    assert not result.isError, result
    kinds = [c.type for c in result.content]
    assert kinds == ["text", "image"], kinds
    assert result.content[0].text.splitlines()[-1] == "[actions[0] computer image]"
    assert result.content[1].mimeType == "image/png" and len(result.content[1].data) > 1000
    # The image travels once: the structured copy does not carry its bytes.
    assert result.content[1].data not in json.dumps(result.structuredContent)


async def test_json_text_for_clients_that_parse_it():
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as config:
        config.write('[mcp]\nresult_text = "json"\n')
        config.flush()
        async with stdio_session("--config", config.name, serve_args=WITH_TESTKIT) as session:
            result = await session.call_tool("execute_batch", {"session_id": "j", "steps": rf_steps(4)})
    [text] = texts(result)
    assert json.loads(text) == result.structuredContent


async def test_a_one_verb_tool_names_problems_by_its_own_arguments():
    async with stdio_session(serve_args=WITH_TESTKIT) as session:
        result = await session.call_tool("testkit_sleep", {"ms": "soon"})
    assert result.isError
    errors = result.structuredContent["errors"]
    assert [e["field"] for e in errors] == ["ms"], errors
    assert "step" not in errors[0], errors
    [text] = texts(result)
    assert text.splitlines()[0].startswith("invalid:") and "nothing ran" in text
    assert text.splitlines()[1].startswith("- ms: "), text
    assert "steps[0]" not in text, text
