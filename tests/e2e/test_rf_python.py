"""Inline Python in an RF batch (`Evaluate`, `${{ }}`, `Should Be True`) is Python: it is
evaluated by CPython compiled to a WebAssembly component, with Robot Framework's own
expression rules (automatic module imports, `$name` as the variable's object). Written
as an agent would write the calls from the tool description; the expected values are
what Python itself computes, checked here with this interpreter where they can be.

Also the sandbox: the interpreter sees no files, no network and no host environment,
one session's changes to modules do not reach another's, and an expression that runs
away or eats memory fails its own step while the host and the session carry on.
"""

import math
import os
import socket
import time
import unicodedata

import pytest

from conftest import rf_batch, rf_step as kw, server_env, stdio_session, step_error

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]


def values(out):
    return [st.get("return_value") for st in out["steps"]]


async def test_modules_lambdas_and_python_builtins_evaluate_as_in_python():
    async with stdio_session() as s:
        out = await rf_batch(s, [
            kw("Evaluate", "math.ceil(1.001)"),
            kw("Evaluate", "(lambda x: x * 2)(21)"),
            kw("Evaluate", "json.dumps({'a': [1, 2]}, sort_keys=True)"),
            kw("Evaluate", "unicodedata.name('é')", "modules=unicodedata"),
            kw("Evaluate", "sorted(set('mississippi'))"),
            kw("Evaluate", "2 ** 70"),
            kw("Evaluate", "f'{3.14159:.2f}'"),
            kw("Evaluate", "datetime.date(2024, 2, 29).isoformat()"),
            kw("Create List", "3", "1", "2", assign="nums"),
            kw("Evaluate", "sorted($nums, key=lambda n: -int(n))"),
            kw("Should Be True", "math.pi > 3 and len($nums) == 3"),
            kw("Set Variable", "${{ ', '.join(reversed($nums)) }}"),
            kw("Evaluate", "type($nums).__name__"),
        ], "py-features")
        assert out["status"] == "PASS", out
        got = values(out)
        assert got[0] == math.ceil(1.001) == 2
        assert got[1] == 42
        assert got[2] == '{"a": [1, 2]}'
        assert got[3] == unicodedata.name("é")
        assert got[4] == sorted(set("mississippi"))
        assert str(got[5]) == str(2 ** 70), "integers past 64 bits keep every digit"
        assert got[6] == "3.14"
        assert got[7] == "2024-02-29"
        assert got[9] == ["3", "2", "1"]
        assert got[11] == "2, 1, 3"
        assert got[12] == "list"


async def test_in_place_changes_to_variables_are_seen_by_later_steps():
    async with stdio_session() as s:
        out = await rf_batch(s, [
            kw("Create List", "a", "b", assign="items"),
            kw("Evaluate", "$items.append('c')"),
            kw("Create Dictionary", "k=1", assign="d"),
            kw("Evaluate", "$d.update({'extra': [1, 2]})"),
            kw("Length Should Be", "${items}", "3"),
            kw("Get From Dictionary", "${d}", "extra"),
            kw("Evaluate", "math.floor(2.7)", "modules=math", assign="floored"),
            kw("Should Be Equal As Integers", "${floored}", "2"),
        ], "py-inplace")
        assert out["status"] == "PASS", out
        assert out["steps"][5]["return_value"] == [1, 2]


async def test_objects_made_by_an_expression_stay_python_objects_in_later_steps():
    """A class defined in one step, its object used by later keywords and
    expressions: its methods, its identity, its in-place changes, and keywords
    that take a mapping or a list, as in Python (values computed here below)."""
    counter = (
        "type('Counter', (), {'n': 0, 'bump': lambda s: setattr(s, 'n', s.n + 1) or s.n,"
        " '__repr__': lambda s: f'Counter({s.n})'})()"
    )
    frozen = (
        "type('Frozen', (collections.abc.Mapping,), {'__getitem__': lambda s, k: {'x': 1, 'y': 2}[k],"
        " '__iter__': lambda s: iter(['x', 'y']), '__len__': lambda s: 2})()"
    )
    async with stdio_session() as s:
        out = await rf_batch(s, [
            kw("Evaluate", counter, assign="c"),                       # 0
            kw("Evaluate", "$c.bump() + $c.bump()"),                   # 1: 1 + 2
            kw("Set Variable", "${c}", assign="alias"),                # 2
            kw("Should Be True", "$alias is $c and $c.n == 2"),        # 3
            kw("Evaluate", "repr($c)"),                                # 4
            kw("Set Variable", "${{" + frozen + "}}", assign="m"),     # 5
            kw("Convert To Dictionary", "${m}", assign="d"),           # 6
            kw("Should Be Equal", "${d}", "{'x': 1, 'y': 2}", "type=dict"),
            kw("Set To Dictionary", "${m}", "z", "${3}", assign="bigger"),  # 8
            kw("Should Be Equal", "${m}", "{'x': 1, 'y': 2}", "type=Mapping"),
            kw("Dictionary Should Contain Key", "${m}", "y"),          # 10
            kw("Get Length", "${m}"),                                  # 11
            kw("Evaluate", "decimal.Decimal('0.5')", assign="half"),   # 12
            kw("Should Be True", "$half == 0.5 and $half * 2 == 1"),
            kw("Evaluate", "frozenset({3, 1, 2})", assign="fs"),       # 14
            kw("Should Contain", "${fs}", "${2}"),
            kw("Evaluate", "sorted($fs)"),                             # 16
            kw("Should Be Equal", "${42}", "42", "type=${{int}}"),
        ], "py-objects")
        assert out["status"] == "PASS", out
        got = values(out)
        assert got[1] == 3
        assert got[4] == "Counter(2)"
        assert got[6] == {"x": 1, "y": 2}
        assert got[8] == {"x": 1, "y": 2, "z": 3}, "a new dict; the mapping itself is unchanged"
        assert got[11] == 2
        assert got[16] == [1, 2, 3]
        assert got[0] == "Counter(0)", "an object is reported as its str()"

        # A later batch of the session finds the same object; another session has none.
        later = await rf_batch(s, [kw("Evaluate", "$c.bump()")], "py-objects")
        assert later["status"] == "PASS", later
        assert later["steps"][0]["return_value"] == 3
        other = await rf_batch(s, [kw("Evaluate", "$c.n")], "py-objects-2")
        assert other["status"] == "FAIL", other
        assert "Variable '$c' not found" in step_error(other["steps"][0]), other


async def test_python_errors_carry_python_messages_and_name_the_step():
    async with stdio_session() as s:
        out = await rf_batch(s, [
            kw("Log", "first"),
            kw("Evaluate", "int('x')"),
        ], "py-errors", on_failure="stop")
        assert out["status"] == "FAIL", out
        assert out["failure"]["step_index"] == 1
        message = step_error(out["steps"][1])
        assert "ValueError" in message and "invalid literal for int()" in message, message
        assert "int('x')" in message, message


async def test_one_sessions_changes_to_the_interpreter_do_not_reach_another():
    async with stdio_session() as s:
        a = await rf_batch(s, [
            kw("Evaluate", "setattr(math, 'leaked', 42)"),
            kw("Evaluate", "math.leaked"),
        ], "py-tenant-a")
        assert a["status"] == "PASS", a
        assert a["steps"][1]["return_value"] == 42
        b = await rf_batch(s, [kw("Evaluate", "hasattr(math, 'leaked')")], "py-tenant-b")
        assert b["status"] == "PASS", b
        assert b["steps"][0]["return_value"] is False


async def test_the_interpreter_sees_no_files_no_network_and_no_host_environment():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    listener.settimeout(0.1)
    env = server_env({"STEPHOST_TEST_SECRET": "s3cret"})
    try:
        async with stdio_session(env=env) as s:
            out = await rf_batch(s, [
                kw("Run Keyword And Ignore Error", "Evaluate", "open('/etc/passwd').read()"),
                kw("Run Keyword And Ignore Error", "Evaluate", "os.listdir('/')"),
                kw("Run Keyword And Ignore Error", "Evaluate",
                   f"__import__('socket').create_connection(('127.0.0.1', {port}), timeout=1)"),
                kw("Evaluate", "os.environ.get('STEPHOST_TEST_SECRET')"),
                kw("Evaluate", "os.environ.get('PATH')"),
            ], "py-sandbox")
        assert out["status"] == "PASS", out
        got = values(out)
        assert got[0][0] == "FAIL" and "/etc/passwd" in got[0][1], got[0]
        assert os.path.exists("/etc/passwd"), "the file is there; the sandbox hides it"
        assert got[1][0] == "FAIL" or got[1][1] == [], got[1]
        assert got[2][0] == "FAIL", got[2]
        with pytest.raises(socket.timeout):
            listener.accept()
        assert got[3] is None and got[4] is None, got[3:]
    finally:
        listener.close()


async def test_a_runaway_expression_times_out_its_step_and_the_session_goes_on():
    async with stdio_session() as s:
        start = time.monotonic()
        out = await rf_batch(s, [
            kw("Set Variable", "before", assign="kept"),
            {**kw("Evaluate", "next(x for x in itertools.count() if x < 0)"), "timeout": "500ms"},
        ], "py-runaway", on_failure="stop")
        assert time.monotonic() - start < 20
        assert out["status"] == "TIMEOUT", out
        assert out["steps"][0]["status"] == "PASS" and out["steps"][0]["return_value"] == "before"
        assert out["failure"]["step_index"] == 1
        assert "time ran out" in step_error(out["steps"][1]), out["steps"][1]
        # The interpreter stops a little before the step does, so the rf instance
        # answers in time and keeps the session's variables; Python starts again.
        assert not any("dropped" in n for n in out.get("notes", [])), out
        again = await rf_batch(s, [
            kw("Evaluate", "math.factorial(5)"),
            kw("Should Be Equal", "${kept}", "before"),
        ], "py-runaway")
        assert again["status"] == "PASS", again
        assert again["steps"][0]["return_value"] == 120


async def test_an_expression_that_eats_memory_fails_only_its_step():
    async with stdio_session() as s:
        out = await rf_batch(s, [
            kw("Run Keyword And Ignore Error", "Evaluate", "len(bytearray(1024 ** 3))"),
            kw("Evaluate", "['x' * 1024 for _ in range(10 ** 8)]"),
            kw("Log", "never"),
        ], "py-memory")
        got = values(out)
        # One huge allocation is refused as an ordinary failure RF can catch.
        assert got[0][0] == "FAIL" and "out of memory" in got[0][1] and "256 MiB" in got[0][1], got[0]
        # Growing past the instance's memory limit stops the step with the limit named.
        assert out["status"] == "FAIL" and out["failure"]["step_index"] == 1, out
        assert "limits.memory_mib" in step_error(out["steps"][1]), out["steps"][1]
        assert out["steps"][2]["status"] == "SKIPPED"
        again = await rf_batch(s, [kw("Evaluate", "sum(range(10))")], "py-memory")
        assert again["status"] == "PASS" and again["steps"][0]["return_value"] == 45, again
