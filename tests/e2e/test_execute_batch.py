"""execute_batch / execute_step / resume_batch: the rf-mcp tool shapes over the `rf` plugin,
driven by the real Python MCP SDK over stdio."""

import time

import pytest

from conftest import stdio_session

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


async def call(session, tool, args):
    result = await session.call_tool(tool, args)
    return result, result.structuredContent


async def test_tools_are_listed_with_the_seed_schema():
    async with stdio_session() as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        eb = tools["execute_batch"].inputSchema
        assert set(eb["required"]) == {"session_id", "steps"}
        assert eb["properties"]["on_failure"]["default"] == "recover"
        assert eb["properties"]["max_recovery_attempts"]["maximum"] == 10
        assert eb["properties"]["timeout_ms"]["minimum"] == 1000
        assert "execute_step" in tools and "resume_batch" in tools


async def test_chained_batch_passes():
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "chain",
            "steps": [
                {"keyword": "Set Variable", "arguments": ["hello"], "label": "greet"},
                {"keyword": "Catenate", "arguments": ["${STEP_1}", "world"], "assign_to": "phrase"},
                {"keyword": "Get Length", "args": ["${phrase}"]},
                {"keyword": "Should Be Equal As Integers", "arguments": ["${STEP_3}", "11"]},
                # ${STEP_0} is the first step too.
                {"keyword": "Should Be Equal", "arguments": ["${STEP_0}", "hello"]},
            ],
        })
        assert not result.isError, out
        assert out["status"] == "PASS"
        assert out["steps_executed"] == out["steps_total"] == 5
        assert [st["status"] for st in out["steps"]] == ["PASS"] * 5
        assert out["steps"][0]["label"] == "greet"
        assert out["steps"][1]["args_resolved"] == ["hello", "world"]
        assert out["steps"][1]["return_value"] == "hello world"
        assert out["steps"][2]["return_value"] == 11
        assert out["failure"] is None
        # assign_to also reached RF: the session keeps the variable for the next call.
        result, out = await call(s, "execute_step", {"session_id": "chain", "keyword": "Should Be Equal", "arguments": ["${phrase}", "hello world"]})
        assert out["status"] == "PASS", out


async def test_validation_errors_name_the_step():
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "v",
            "steps": [
                {"keyword": "Log", "arguments": ["a"]},
                {"arguments": ["no keyword"]},
                {"keyword": "Log", "arguments": ["a"], "args": ["b"]},
            ],
            "timeout_ms": 50,
        })
        assert result.isError
        assert out["status"] == "FAIL" and out["steps_executed"] == 0
        text = " | ".join(e["message"] for e in out["errors"])
        assert "step 1: missing `keyword`" in text
        assert "step 2: both `arguments` and its legacy alias `args`" in text
        assert "timeout_ms must be an integer from 1000 to 600000" in text
        fields = {e["field"] for e in out["errors"]}
        assert {"steps[1].keyword", "steps[2].arguments", "timeout_ms"} <= fields


async def test_forward_reference_is_rejected_up_front():
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "fwd",
            "steps": [
                {"keyword": "Set Variable", "arguments": ["x"], "assign_to": "ran"},
                {"keyword": "Log", "arguments": ["${STEP_3}"]},
                {"keyword": "Set Variable", "arguments": ["y"]},
            ],
        })
        assert result.isError and out["steps_executed"] == 0, out
        assert any(e.get("step") == 1 for e in out["errors"]), out["errors"]
        # Nothing ran: the first step's assign never happened.
        _, again = await call(s, "execute_step", {"session_id": "fwd", "keyword": "Variable Should Not Exist", "arguments": ["\\${ran}"]})
        assert again["status"] == "PASS", again


async def test_step_timeout_really_stops_sleep():
    async with stdio_session() as s:
        start = time.monotonic()
        result, out = await call(s, "execute_batch", {
            "session_id": "t",
            "on_failure": "stop",
            "steps": [
                {"keyword": "Sleep", "arguments": ["10s"], "timeout": "300ms"},
                {"keyword": "Log", "arguments": ["never"]},
            ],
        })
        elapsed = time.monotonic() - start
        assert elapsed < 2, elapsed
        assert not result.isError, "a timed-out batch is a normal result"
        assert out["status"] == "TIMEOUT", out
        assert out["steps"][0]["status"] == "FAIL"
        assert out["steps"][1]["status"] == "SKIPPED" and out["steps"][1]["keyword"] == "Log"
        assert out["failure"]["step_index"] == 0


FLAKY = {
    # Fails the first time it runs (flipping ${flag} as it does), passes after.
    "keyword": "Run Keyword If",
    "arguments": ["${flag} == 0", "Run Keywords", "Set Suite Variable", "\\${flag}", "1", "AND", "Fail", "not ready yet"],
    "label": "flaky",
}


async def test_recover_retries_and_logs_attempts():
    # Honest: this is tier-1 recovery (wait with backoff, run again) of a keyword
    # that changes session state as it fails; no tier-2 library strategy is involved.
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "r",
            "steps": [
                {"keyword": "Set Suite Variable", "arguments": ["\\${flag}", "0"]},
                FLAKY,
                {"keyword": "Should Be Equal", "arguments": ["${flag}", "1"]},
            ],
        })
        assert not result.isError, out
        assert out["status"] == "RECOVERED", out
        step = out["steps"][1]
        assert step["status"] == "RECOVERED" and step["attempts"] == 2
        assert len(step["recovery_log"]) == 1
        round1 = step["recovery_log"][0]
        assert "not ready yet" in round1["error"]
        assert round1["tier"] == 1 and round1["strategy"] == "wait_and_retry"
        assert round1["after_attempt"] == 1 and round1["wait_ms"] > 0

        # on_failure stop: the same flakiness is a failure.
        _, out = await call(s, "execute_batch", {
            "session_id": "r2",
            "on_failure": "stop",
            "steps": [{"keyword": "Set Suite Variable", "arguments": ["\\${flag}", "0"]}, FLAKY],
        })
        assert out["status"] == "FAIL" and out["steps"][1]["attempts"] == 1
        assert out["failure"]["error"] == "failed: not ready yet"


# Fails every time, but changes the session as it does, so a re-run could go another way.
STUBBORN = {"keyword": "Run Keywords", "arguments": ["Set Test Variable", "\\${tried}", "yes", "AND", "Fail", "always"]}


async def test_recover_gives_up_with_a_full_recovery_log():
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "g",
            "max_recovery_attempts": 3,
            "steps": [STUBBORN, {"keyword": "No Operation"}],
        })
        assert not result.isError and out["status"] == "FAIL"
        assert out["failure"]["step_index"] == 0
        assert len(out["failure"]["recovery_log"]) == 3
        assert out["steps"][1]["status"] == "SKIPPED"


async def test_a_failure_that_repeats_exactly_is_not_retried():
    # `Should Be Equal    1    2` reads nothing but its arguments: waiting and
    # running it again cannot change it, so neither recover nor retry re-runs it.
    async with stdio_session() as s:
        for mode in ("recover", "retry"):
            started = time.monotonic()
            result, out = await call(s, "execute_batch", {
                "session_id": f"det-{mode}", "on_failure": mode, "max_recovery_attempts": 5,
                "steps": [{"keyword": "Should Be Equal", "arguments": ["1", "2"]}],
            })
            assert out["status"] == "FAIL", out
            step = out["steps"][0]
            assert step["attempts"] == 1 and step["error"] == "assertion: 1 != 2", step
            assert out["failure"]["code"] == "assertion" and out["failure"]["recovery_log"] == []
            # No backoff waits either (each would be tens of ms or more).
            assert time.monotonic() - started < 5


async def test_resume_after_fix_steps():
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "res",
            "on_failure": "stop",
            "steps": [
                {"keyword": "Set Variable", "arguments": ["a"], "assign_to": "first"},
                {"keyword": "Should Be Equal", "arguments": ["${missing}", "ok"], "label": "needs fix"},
                {"keyword": "Catenate", "arguments": ["${first}", "${missing}"]},
            ],
        })
        assert out["status"] == "FAIL" and out["failure"]["step_index"] == 1, out
        batch_id = out["batch_id"]

        result, out = await call(s, "resume_batch", {"batch_id": "nope"})
        assert result.isError and "no resumable batch" in out["errors"][0]["message"]

        result, out = await call(s, "resume_batch", {
            "batch_id": batch_id,
            "fix_steps": [{"keyword": "Set Suite Variable", "arguments": ["\\${missing}", "ok"]}],
        })
        assert not result.isError, out
        assert out["status"] == "PASS"
        # The whole batch: the earlier step as reported, the fix step, the resumed ones.
        assert [st["keyword"] for st in out["steps"]] == ["Set Variable", "Set Suite Variable", "Should Be Equal", "Catenate"]
        assert [st["index"] for st in out["steps"]] == [0, 1, 2, 3]
        assert out["steps"][0]["return_value"] == "a" and out["steps"][1]["label"] == "fix_step_0"
        assert out["steps"][3]["return_value"] == "a ok"
        assert out["session_id"] == "res" and out["batch_id"] == batch_id
        assert out["summary"] == "4/4 passed" and out["digest"]["passed"] == 4, out

        # Finished: a second resume is refused.
        result, out = await call(s, "resume_batch", {"batch_id": batch_id})
        assert result.isError and "no resumable batch" in out["errors"][0]["message"]


async def test_resume_keeps_step_numbers_and_values():
    # ${STEP_N} in the resumed steps still means the step the batch was written
    # with: an earlier step's value, or a resumed step's moved past the fix steps.
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "num", "on_failure": "stop",
            "steps": [
                {"keyword": "Create List", "arguments": ["x", "${{1 + 1}}"]},
                {"keyword": "Set Variable", "arguments": ["${expected}"]},
                {"keyword": "Catenate", "arguments": ["SEPARATOR=-", "${STEP_1[0]}", "${STEP_2}"]},
                {"keyword": "Should Be Equal", "arguments": ["${STEP_3}", "x-y"]},
            ],
        })
        assert out["status"] == "FAIL" and out["failure"]["step_index"] == 1, out
        batch_id = out["batch_id"]
        result, out = await call(s, "resume_batch", {
            "batch_id": batch_id,
            "fix_steps": [
                {"keyword": "Set Test Variable", "arguments": ["\\${expected}", "y"]},
                {"keyword": "Log", "arguments": ["first step gave ${STEP_1}"]},
            ],
        })
        assert out["status"] == "PASS", out
        steps = out["steps"]
        assert [st["index"] for st in steps] == list(range(6))
        assert [st["keyword"] for st in steps] == ["Create List", "Set Test Variable", "Log", "Set Variable", "Catenate", "Should Be Equal"]
        assert steps[0]["return_value"] == ["x", 2]
        assert steps[2]["args_resolved"] == ['first step gave ["x",2]'], steps[2]
        assert steps[4]["args_resolved"] == ["SEPARATOR=-", "x", "y"], steps[4]
        assert steps[4]["return_value"] == "x-y" and steps[5]["status"] == "PASS"

        # Failing again: resumable under the same id, the whole batch reported again.
        result, out = await call(s, "execute_batch", {
            "session_id": "num2", "on_failure": "stop",
            "steps": [
                {"keyword": "Set Variable", "arguments": ["one"]},
                {"keyword": "Should Be Equal", "arguments": ["${STEP_1}", "${want}"]},
            ],
        })
        batch_id = out["batch_id"]
        result, out = await call(s, "resume_batch", {"batch_id": batch_id})
        assert out["status"] == "FAIL" and out["batch_id"] == batch_id and len(out["steps"]) == 2, out
        assert out["failure"]["step_index"] == 1
        result, out = await call(s, "resume_batch", {
            "batch_id": batch_id, "fix_steps": [{"keyword": "Set Test Variable", "arguments": ["\\${want}", "one"]}],
        })
        assert out["status"] == "PASS", out
        assert [st["keyword"] for st in out["steps"]] == ["Set Variable", "Set Test Variable", "Should Be Equal"]
        assert out["steps"][2]["args_resolved"][0] == "one", out["steps"][2]


async def test_two_concurrent_resumes_of_one_batch_run_it_once():
    # Two agents (or a retried request) resume the same failed batch at once:
    # the remaining steps, which act (here: append to a list), must run once.
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "twice",
            "on_failure": "stop",
            "steps": [
                {"keyword": "Create List", "assign_to": "clicks"},
                {"keyword": "Variable Should Exist", "arguments": ["\\${ready}"]},
                {"keyword": "Sleep", "arguments": ["1s"]},
                {"keyword": "Append To List", "arguments": ["${clicks}", "click"]},
            ],
        })
        assert out["status"] == "FAIL" and out["failure"]["step_index"] == 1, out
        resume = {
            "batch_id": out["batch_id"],
            "fix_steps": [{"keyword": "Set Suite Variable", "arguments": ["\\${ready}", "yes"]}],
        }
        import asyncio

        first, second = await asyncio.gather(s.call_tool("resume_batch", resume), s.call_tool("resume_batch", resume))
        outcomes = sorted([first, second], key=lambda r: bool(r.isError))
        assert not outcomes[0].isError and outcomes[0].structuredContent["status"] == "PASS", outcomes[0]
        refused = outcomes[1].structuredContent
        assert outcomes[1].isError and refused["status"] == "FAIL", refused
        assert "being resumed by another call" in refused["errors"][0]["message"], refused
        result, out = await call(s, "execute_step", {"session_id": "twice", "keyword": "Get Length", "arguments": ["${clicks}"]})
        assert out["steps"][0]["return_value"] == 1, out

        # Once it has run, the batch is used up.
        result, out = await call(s, "resume_batch", {"batch_id": resume["batch_id"]})
        assert result.isError and "no resumable batch" in out["errors"][0]["message"]


async def test_execute_step():
    async with stdio_session() as s:
        result, out = await call(s, "execute_step", {"session_id": "one", "keyword": "Evaluate", "arguments": ["1 + 2"], "assign_to": "three"})
        assert not result.isError and out["status"] == "PASS", out
        assert out["steps"][0]["return_value"] == 3 and out["steps_total"] == 1
        result, out = await call(s, "execute_step", {"session_id": "one", "keyword": "Should Be Equal As Integers", "arguments": ["${three}", "4"]})
        assert result.isError and out["status"] == "FAIL"
        assert out["failure"]["error"] == "assertion: 3 != 4"
        result, out = await call(s, "execute_step", {"session_id": "one", "keyword": "Sleep", "arguments": ["5s"], "timeout": "200ms"})
        assert out["status"] == "TIMEOUT"


async def test_rf_mcp_response_contract():
    # What rf-mcp 0.36's own tests and clients read: 0-based step index and
    # failure.step_index, its summary sentences, a digest, a failed batch as a
    # normal result, and max_recovery_attempts up to its documented 10.
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "contract",
            "steps": [{"keyword": "Set Variable", "arguments": ["a"]}, {"keyword": "Log", "arguments": ["${STEP_1}"]}],
        })
        assert not result.isError and out["status"] == "PASS", out
        assert [st["index"] for st in out["steps"]] == [0, 1]
        assert "2/2 passed" in out["summary"], out["summary"]
        assert out["digest"] == {"passed": 2, "failed": 0, "total": 2}, out["digest"]

        result, out = await call(s, "execute_batch", {
            "session_id": "contract",
            "on_failure": "retry",
            "max_recovery_attempts": 10,
            "steps": [
                {"keyword": "Log", "arguments": ["first"]},
                STUBBORN,
                {"keyword": "Log", "arguments": ["never"]},
            ],
        })
        assert not result.isError, "a failed batch is a normal result, not an MCP error"
        assert out["status"] == "FAIL" and out["failure"]["step_index"] == 1, out
        assert out["steps"][1]["attempts"] == 11, out["steps"][1]
        assert "step 1 failed" in out["summary"] and out["batch_id"], out["summary"]
        assert out["digest"]["failed_at_step"] == 1 and out["digest"]["failed"] == 1, out["digest"]
        assert out["digest"]["error"] == "Run Keywords: failed: always", out["digest"]

        # A call that cannot run at all stays an MCP error.
        result, out = await call(s, "execute_batch", {"session_id": "contract", "steps": [], "max_recovery_attempts": 11})
        assert result.isError and out["steps_executed"] == 0, out


async def test_execute_step_reports_what_it_ran():
    async with stdio_session() as s:
        result, out = await call(s, "execute_step", {"session_id": "ran", "keyword": "Catenate", "arguments": ["a", "b"]})
        assert not result.isError and out["success"] is True, out
        assert out["keyword"] == "Catenate" and out["arguments"] == ["a", "b"] and out["output"] == "a b", out
        assert out["steps"][0]["keyword"] == "Catenate" and out["steps"][0]["args_resolved"] == ["a", "b"], out
        result, out = await call(s, "execute_step", {"session_id": "ran", "keyword": "Should Be Equal", "arguments": ["x", "y"]})
        assert result.isError and out["success"] is False and out["keyword"] == "Should Be Equal", out
        # A single step is not resumable, and the reply does not say it is.
        assert "batch_id" not in out and "resume_batch" not in out["summary"], out
        assert "resume_batch" not in " ".join(c.text for c in result.content if c.type == "text")


async def test_a_standard_library_the_sandbox_lacks_fails_its_import():
    # Never a silent PASS: real Robot Framework would load Telnet; the sandbox does
    # not run it and the host runs no library server here, so the import fails
    # and says how to reach it.
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "imports",
            "steps": [{"keyword": "Import Library", "arguments": ["Telnet"]}],
            "on_failure": "stop",
        })
        assert out["status"] == "FAIL", out
        assert "standard libraries" in out["failure"]["error"] and "Remote" in out["failure"]["error"], out
        # OperatingSystem runs in the sandbox, but only in granted folders: none here.
        result, out = await call(s, "execute_batch", {
            "session_id": "imports",
            "steps": [{"keyword": "Import Library", "arguments": ["OperatingSystem"]}],
            "on_failure": "stop",
        })
        assert out["status"] == "FAIL" and "[plugins.grants.rf]" in out["failure"]["error"], out


async def test_skip_ends_the_batch_skipped_with_its_reason():
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "skip",
            "steps": [
                {"keyword": "Set Variable", "arguments": ["ran"], "assign_to": "first"},
                # A skip is not a failure: no recovery round and no retry even under the default on_failure.
                {"keyword": "Skip If", "arguments": ["'${first}' == 'ran'", "feature flag off"]},
                {"keyword": "Set Variable", "arguments": ["never"], "assign_to": "first"},
            ],
        })
        assert not result.isError, out
        assert out["status"] == "SKIPPED", out
        assert out["skip_reason"] == "feature flag off"
        assert out["summary"] == "2/3 executed, step 1 skipped: feature flag off"
        assert [st["status"] for st in out["steps"]] == ["PASS", "SKIP", "SKIPPED"]
        skipped = out["steps"][1]
        # rf-mcp's step record: no `error` key on a step that has none.
        assert skipped["message"] == "feature flag off" and "error" not in skipped, skipped
        assert out["failure"] is None
        assert out["digest"] == {"passed": 1, "failed": 0, "total": 3, "skipped_at_step": 1}
        text = result.content[0].text
        assert text.startswith("SKIPPED: 2/3 executed, step 1 skipped: feature flag off"), text
        # A skipped batch is finished, not resumable.
        result, out2 = await call(s, "resume_batch", {"batch_id": out["batch_id"]})
        assert result.isError, out2
        # The third step never ran: the session still has the first value.
        result, out = await call(s, "execute_step", {"session_id": "skip", "keyword": "Should Be Equal", "arguments": ["${first}", "ran"]})
        assert out["status"] == "PASS", out
        # execute_step of a skip is a normal result, not an MCP error.
        result, out = await call(s, "execute_step", {"session_id": "skip", "keyword": "Skip"})
        assert not result.isError, out
        assert (out["status"], out["success"], out["skip_reason"]) == ("SKIPPED", False, "Skipped with Skip keyword.")


async def test_set_tags_and_test_message_show_in_the_reply():
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "tags",
            "steps": [
                {"keyword": "Set Tags", "arguments": ["smoke", "owner-qa", "wip"]},
                {"keyword": "Remove Tags", "arguments": ["w*"]},
                {"keyword": "Set Test Documentation", "arguments": ["Checks the cart."]},
                {"keyword": "Run Keyword If", "arguments": ["True", "Set Test Message", "cart ok"]},
                {"keyword": "Set Suite Metadata", "arguments": ["Build", "1.4.2"]},
                {"keyword": "Should Contain", "arguments": ["${TEST TAGS}", "smoke"]},
            ],
        })
        assert out["status"] == "PASS", out
        # Only the six steps asked for: reading the test adds nothing to the counts.
        assert out["steps_total"] == out["steps_executed"] == len(out["steps"]) == 6
        assert out["test"] == {
            "tags": ["owner-qa", "smoke"],
            "message": "cart ok",
            "documentation": "Checks the cart.",
            "metadata": {},
            "suite": {"documentation": "", "metadata": {"Build": "1.4.2"}},
        }
        # Also after a failure: the message set before it is kept.
        result, out = await call(s, "execute_batch", {
            "session_id": "tags", "on_failure": "stop",
            "steps": [
                {"keyword": "Set Test Message", "arguments": ["before the failure"]},
                {"keyword": "Should Be Equal", "arguments": ["1", "2"]},
            ],
        })
        assert out["status"] == "FAIL" and out["steps_total"] == 2, out
        assert "notes" not in out, out
        assert out["test"]["message"] == "before the failure"
        # A batch that runs none of those keywords carries no `test`.
        result, out = await call(s, "execute_batch", {"session_id": "tags", "steps": [{"keyword": "Log", "arguments": ["x"]}]})
        assert out["status"] == "PASS" and "test" not in out, out


async def test_return_keywords_outside_a_keyword_fail_as_in_rf():
    async with stdio_session() as s:
        result, out = await call(s, "execute_batch", {
            "session_id": "ret", "on_failure": "stop",
            "steps": [{"keyword": "Run Keyword And Return", "arguments": ["Log", "x"]}],
        })
        assert out["status"] == "FAIL", out
        assert out["steps"][0]["error"] == "assertion: Invalid 'RETURN' usage."
