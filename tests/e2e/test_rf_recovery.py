"""Tiered recovery in `execute_batch` (`on_failure: "recover"`) against a real remote
library (tests/rf/remote_flaky.py served by robotremoteserver): tier 1 waits and runs the
keyword again; tier 2 runs the keywords the library offers (a keyword tagged
`recovery:element-not-found`, the well-known `Go Back`), and every round is logged."""

import contextlib
import subprocess
import sys

import pytest

from conftest import ROOT, stdio_session

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@contextlib.contextmanager
def flaky_server(tags_via, *extra):
    """tests/rf/remote_flaky.py serving keyword tags the given way (`none`: as a stock
    robotremoteserver, which hides them)."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/rf/remote_flaky.py"), "0", f"--tags={tags_via}", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("PORT "), f"remote server did not start: {line!r}"
        yield f"http://127.0.0.1:{line.split()[1]}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def flaky():
    with flaky_server("info") as url:
        yield url


@pytest.fixture
def flaky_untagged():
    with flaky_server("none") as url:
        yield url


def importing(url):
    return {"keyword": "Import Library", "arguments": ["Remote", url, "AS", "Flaky"]}


async def run(s, args):
    result = await s.call_tool("execute_batch", args)
    return result, result.structuredContent


async def test_tier_two_runs_the_library_recovery_keyword(flaky):
    async with stdio_session() as s:
        result, out = await run(s, {
            "session_id": "t2",
            "steps": [
                importing(flaky),
                {"keyword": "Flaky.Read Widget", "label": "read", "assign_to": "w"},
                {"keyword": "Should Be Equal", "arguments": ["${w}", "ready"]},
                {"keyword": "Flaky.Get Log"},
            ],
        })
        assert not result.isError, out
        assert out["status"] == "RECOVERED", out
        step = out["steps"][1]
        assert step["status"] == "RECOVERED" and step["attempts"] == 3, step
        log = step["recovery_log"]
        assert [r["tier"] for r in log] == [1, 2], log
        assert log[0]["strategy"] == "wait_and_retry" and not log[0].get("actions")
        assert log[0]["classification"] == "element-not-found"
        assert "Element 'widget' not found" in log[0]["error"]
        assert log[1]["strategy"] == "Reset Widget"
        [action] = log[1]["actions"]
        assert action["verb"] == "run_keyword" and action["status"] == "passed"
        assert action["input"]["keyword"] == "Flaky.Reset Widget"
        # The library saw exactly one recovery keyword: Go Back was never needed.
        assert out["steps"][3]["return_value"] == ["Reset Widget"]


async def test_well_known_keyword_when_the_library_tags_nothing(flaky_untagged):
    # A stock robotremoteserver hides tags: the only strategy left is the
    # well-known `Go Back`, which does not heal this widget, so the step fails
    # after trying it, and the log says so.
    async with stdio_session() as s:
        result, out = await run(s, {
            "session_id": "t2n",
            "max_recovery_attempts": 3,
            "steps": [importing(flaky_untagged), {"keyword": "Read Widget"}, {"keyword": "Flaky.Get Log"}],
        })
        assert not result.isError and out["status"] == "FAIL", out
        log = out["failure"]["recovery_log"]
        assert [r["strategy"] for r in log] == ["wait_and_retry", "navigate_back", "wait_and_retry"], log
        assert log[1]["actions"][0]["input"]["keyword"] == "Flaky.Go Back"
        assert out["steps"][2]["status"] == "SKIPPED"
        # The library really ran Go Back once.
        result, out = await run(s, {"session_id": "t2n", "steps": [{"keyword": "Flaky.Get Log"}]})
        assert out["steps"][0]["return_value"] == ["Go Back"], out


async def test_tier_one_only_heals_a_transient_failure(flaky):
    async with stdio_session() as s:
        result, out = await run(s, {
            "session_id": "t1",
            "steps": [
                importing(flaky),
                {"keyword": "Flaky.Arm Counter", "arguments": ["1"]},
                {"keyword": "Flaky.Flaky Counter"},
            ],
        })
        assert not result.isError, out
        step = out["steps"][2]
        assert step["status"] == "RECOVERED" and step["return_value"] == 2, step
        [round1] = step["recovery_log"]
        assert round1["tier"] == 1 and round1["classification"] == "timeout"


async def test_retry_mode_runs_no_strategies(flaky):
    async with stdio_session() as s:
        result, out = await run(s, {
            "session_id": "rt",
            "on_failure": "retry",
            "steps": [importing(flaky), {"keyword": "Flaky.Read Widget"}, {"keyword": "Flaky.Get Log"}],
        })
        assert not result.isError and out["status"] == "FAIL", out
        assert all(r["strategy"] == "retry" for r in out["failure"]["recovery_log"])
        _, out = await run(s, {"session_id": "rt", "steps": [{"keyword": "Flaky.Get Log"}]})
        assert out["steps"][0]["return_value"] == [], "retry must not run recovery keywords"


@pytest.fixture
def flaky_with_clear():
    with flaky_server("info", "--clear-items") as url:
        yield url


async def test_a_plain_recovery_keyword_never_runs_for_an_unrecognized_error(flaky_with_clear):
    flaky = flaky_with_clear
    # `Clear Items` is tagged plain `recovery`: it declares the page and element
    # classes, not an error nothing recognizes, so a KeyError runs only tier 1.
    async with stdio_session() as s:
        result, out = await run(s, {
            "session_id": "unknown-class",
            "max_recovery_attempts": 2,
            "steps": [importing(flaky), {"keyword": "Flaky.Lookup Item", "arguments": ["missing"]}],
        })
        assert out["status"] == "FAIL", out
        failed = out["failure"]
        assert "KeyError" in failed["error"], failed
        strategies = [r["strategy"] for r in failed["recovery_log"]]
        assert strategies and set(strategies) == {"wait_and_retry"}, failed["recovery_log"]
        result, out = await run(s, {"session_id": "unknown-class", "steps": [{"keyword": "Flaky.Get Log"}]})
        assert out["steps"][0]["return_value"] == [], out["steps"][0]
