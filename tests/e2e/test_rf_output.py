"""Robot Framework's own log of a batch: `stephost run --rf-output FILE.xml`
and `execute_batch` with `output_xml: true` write RF's output.xml, and real
RF (`rebot` and `robot.api.ExecutionResult` from the robotframework package)
reads it: log.html and report.html are made without error, and the result
holds the batch's keywords, arguments as written, statuses and messages.
"""

import subprocess
import sys
from pathlib import Path

import pytest
from robot.api import ExecutionResult

from conftest import BIN, ROOT, server_env, stdio_session

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

REBOT = Path(sys.executable).with_name("rebot")


def rebot(xml, out):
    """log.html and report.html from `xml`; rebot's exit code is the failed-test count."""
    proc = subprocess.run([str(REBOT), "--outputdir", str(out), str(xml)], capture_output=True, text=True, timeout=120)
    assert "[ ERROR ]" not in proc.stderr + proc.stdout, proc.stderr + proc.stdout
    assert (out / "log.html").is_file() and (out / "report.html").is_file(), proc.stdout
    return proc.returncode


def keywords(result):
    test = result.suite.tests[0]
    return test, [(kw.name, list(kw.args), kw.status) for kw in test.body]


def test_run_writes_an_output_xml_rebot_reads(tmp_path):
    xml = tmp_path / "output.xml"
    proc = subprocess.run(
        [BIN, "run", "-q", "--rf-output", str(xml), str(ROOT / "examples" / "quickstart.json")],
        env=server_env(), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert rebot(xml, tmp_path) == 0
    test, kws = keywords(ExecutionResult(str(xml)))
    assert test.status == "PASS"
    names = [name for name, _, _ in kws]
    assert names[:3] == ["Set Variable", "Get Substring", "Should Be Equal"], names
    # Arguments as written, as RF logs them.
    assert kws[1][1] == ["${who}", "0", "3"], kws[1]
    assert any(name == "browser.tabs_create" for name in names), names
    assert all(status == "PASS" for _, _, status in kws)
    log = (tmp_path / "log.html").read_text()
    assert "Get Substring" in log


async def test_execute_batch_returns_an_output_xml_with_the_failure(tmp_path):
    async with stdio_session() as s:
        result = await s.call_tool("execute_batch", {"session_id": "xml", "output_xml": True, "steps": [
            {"keyword": "Set Variable", "arguments": ["hello"], "assign_to": "greeting"},
            {"keyword": "Should Be Equal", "arguments": ["${greeting}", "goodbye"]},
            {"keyword": "Log", "arguments": ["never reached"]},
        ]})
    data = result.structuredContent
    assert data["status"] == "FAIL", data
    xml = tmp_path / "output.xml"
    xml.write_text(data["output_xml"])
    assert any("output.xml" in c.text for c in result.content if c.type == "text")
    assert rebot(xml, tmp_path) == 1  # one failed test
    test, kws = keywords(ExecutionResult(str(xml)))
    assert test.status == "FAIL"
    assert [(n, st) for n, _, st in kws] == [
        ("Set Variable", "PASS"), ("Should Be Equal", "FAIL"), ("Log", "NOT RUN"),
    ], kws
    failed = test.body[1]
    assert "hello != goodbye" in failed.message, failed.message
    assert "hello != goodbye" in test.message
    assert kws[1][1] == ["${greeting}", "goodbye"]
