"""`Import Resource` in an RF batch: a resource file in a folder the host grants the
rf plugin, its variables, its imports (a library, a nested resource) and its keywords
with `[Arguments]` (defaults, `@{varargs}`, `&{kwargs}`, named arguments), several
assignment targets and `RETURN`. Every call runs through real Robot Framework, which
imports the same file with the same keyword, and through `stephost serve`, and status,
value and failure message are compared (tests/rf/atest_differential.py does both sides).
Then what the sandbox refuses, and says why: a keyword with a `FOR` loop, a file outside
the grant, a host that grants no folder.
"""

import json
import subprocess
import sys

import pytest

from conftest import BIN, ROOT, host_with, rf_batch, rf_step as kw, server_env, step_error

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

COMMON = """\
*** Settings ***
Library     Collections
Resource    nested.resource

*** Variables ***
${GREETING}     Hello
@{FRUITS}       apple    banana
&{LIMITS}       low=1    high=9
${JOINED}       a    b    separator=-
${HOME_DIR}     ${CURDIR}

*** Keywords ***
Greet
    [Arguments]    ${name}    ${punct}=!
    ${text} =    Catenate    SEPARATOR=    ${GREETING}, ${name}    ${punct}
    RETURN    ${text}

Count Fruits
    [Arguments]    @{extra}
    ${all} =    Combine Lists    ${FRUITS}    ${extra}
    ${n} =    Get Length    ${all}
    RETURN    ${n}

Describe
    [Arguments]    ${thing}    &{props}
    ${keys} =    Get Dictionary Keys    ${props}
    RETURN    ${thing}    ${keys}

Should Be Polite
    [Arguments]    ${text}
    Should Start With    ${text}    ${GREETING}

Split Pair
    [Arguments]    ${pair}    ${sep}=,
    ${first}    ${second} =    Split String    ${pair}    ${sep}    1
    RETURN    ${second}    ${first}

Loop Over Fruits
    FOR    ${f}    IN    @{FRUITS}
        Log    ${f}
    END
"""

NESTED = """\
*** Settings ***
Library    String

*** Keywords ***
Shout
    [Arguments]    ${text}
    ${upper} =    Convert To Upper Case    ${text}
    RETURN    ${upper}!
"""

CALLS = [
    ("Set Test Variable", ["${GREETING}", "Hi"]),
    ("Import Resource", ["${ATEST_DATA}/common.resource"]),
    ("Greet", ["World"]),
    ("Greet", ["World", "punct=?"]),
    ("Greet", ["World", "?"]),
    ("Greet", ["name=Ann"]),
    ("Count Fruits", ["cherry", "date"]),
    ("Describe", ["box", "color=red", "size=2"]),
    ("Should Be Polite", ["Hi there"]),
    ("Should Be Polite", ["Hello there"]),
    ("Shout", ["hi"]),
    ("nested.Shout", ["x"]),
    ("common.Greet", ["X"]),
    ("Split Pair", ["k,v"]),
    ("Greet", []),
    ("Greet", ["a", "b", "c"]),
    ("Set Variable", ["${JOINED}"]),
    ("Set Variable", ["${LIMITS}[high]"]),
    ("Set Variable", ["${HOME_DIR}"]),
    ("Variable Should Not Exist", ["${text}"]),
    ("Variable Should Not Exist", ["${name}"]),
    ("Get Length", ["${FRUITS}"]),
]


def test_resource_keywords_and_variables_agree_with_robot_framework(tmp_path):
    steps = [{"id": f"resource#{i}", "keyword": k, "args": a, "assign": [], "setup": False}
             for i, (k, a) in enumerate(CALLS)]
    corpus = {"source": {"robotframework": "7"}, "libraries": [],
              "data": {"common.resource": COMMON, "nested.resource": NESTED},
              "tests": [{"id": "resource", "steps": steps}]}
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(corpus))
    out_json = tmp_path / "both.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests/rf/atest_differential.py"), "--stephost", BIN,
         "--corpus", str(path), "--json", str(out_json), "--min", "100", "--list"],
        capture_output=True, text=True, env=server_env(), timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    both = json.loads(out_json.read_text())
    rf = [both["robot"][s["id"]] for s in steps]
    # Not only agreeing: doing what the file says.
    assert [r["status"] for r in rf].count("FAIL") == 3, rf   # impolite, too few, too many
    # The test's own ${GREETING} wins over the resource's, which RF sets for the suite.
    assert rf[2]["value"] == "Hi, World!" and rf[3]["value"] == "Hi, World?"
    assert rf[6]["value"] == 4 and rf[7]["value"] == ["box", ["color", "size"]]
    assert rf[10]["value"] == "HI!" and rf[13]["value"] == ["v", "k"] and rf[16]["value"] == "a-b"
    assert both["plugin"][steps[9]["id"]]["message"] == "'Hello there' does not start with 'Hi'"


async def test_what_the_sandbox_refuses_it_names(tmp_path):
    d = tmp_path / "res"
    d.mkdir()
    (d / "common.resource").write_text(COMMON)
    (d / "nested.resource").write_text(NESTED)
    (d / "tests.robot").write_text("*** Test Cases ***\nT\n    Log    x\n")
    grant = f'[plugins.grants.rf]\nhttp = ["loopback:*"]\nfolders = [{{ path = "{d}" }}]\n'
    async with host_with(grant) as s:
        ok = await rf_batch(s, [kw("Import Resource", d / "common.resource"), kw("Greet", "you")], "res")
        assert ok["status"] == "PASS" and ok["steps"][1]["return_value"] == "Hello, you!", ok

        async def fails(*call):
            out = await rf_batch(s, [kw(*call)], "res")
            assert out["status"] == "FAIL", out
            return step_error(out["steps"][0])

        loop = await fails("Loop Over Fruits")
        assert "Keyword 'common.Loop Over Fruits' uses FOR (line 39)" in loop, loop
        assert "outside the folders granted" in await fails("Import Resource", "/etc/hostname")
        assert f"Resource file '{d}/missing.resource' does not exist." in await fails(
            "Import Resource", d / "missing.resource")
        assert "Resource file with 'Test Cases' section is invalid" in await fails("Import Resource", d / "tests.robot")
        # Another session has not imported it.
        other = await rf_batch(s, [kw("Greet", "you")], "other")
        assert "No keyword with name 'Greet' found" in step_error(other["steps"][0]), other
    async with host_with('[plugins.grants.rf]\nhttp = ["loopback:*"]\n') as s:
        out = await rf_batch(s, [kw("Import Resource", d / "common.resource")], "none")
        assert "grants the rf plugin no folders" in step_error(out["steps"][0]), out
