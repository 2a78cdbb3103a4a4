"""`Import Resource` in an RF batch: a resource file in a folder the host grants the
rf plugin, its variables, its imports (a library, a nested resource) and its keywords
with `[Arguments]` (defaults, `@{varargs}`, `&{kwargs}`, named arguments), several
assignment targets and `RETURN`. Every call runs through real Robot Framework, which
imports the same file with the same keyword, and through `stephost serve`, and status,
value and failure message are compared (tests/rf/atest_differential.py does both sides).
Then RF's control structures in resource keywords (IF, inline IF, FOR in all its
flavours, WHILE with its limits, TRY/EXCEPT/ELSE/FINALLY, VAR, BREAK, CONTINUE, and what
RF's parser reports as invalid), [Setup] and [Teardown], embedded arguments and the
Return From Keyword family, the same way against real RF. Then what the sandbox
refuses, and says why: a file outside the grant, a host that grants no folder.
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

FLOW = """\
*** Variables ***
@{NUMBERS}      1    2    3    4    5
&{PRICES}       apple=3    pear=5

*** Keywords ***
Classify
    [Arguments]    ${n}
    IF    ${n} < 0
        RETURN    negative
    ELSE IF    $n == '0'
        RETURN    zero
    ELSE IF    ${n} > 100
        Fail    too big: ${n}
    END
    ${size} =    IF    ${n} > 10    Set Variable    large    ELSE    Set Variable    small
    RETURN    ${size}

Sum Until
    [Arguments]    ${stop}
    ${total} =    Set Variable    ${0}
    FOR    ${n}    IN    @{NUMBERS}
        IF    ${n} == ${stop}    BREAK
        IF    ${n} % 2 == 0    CONTINUE
        ${total} =    Evaluate    ${total} + ${n}
    END
    RETURN    ${total}

Ranges
    ${out} =    Create List
    FOR    ${i}    IN RANGE    3
        Append To List    ${out}    ${i}
    END
    FOR    ${i}    IN RANGE    10    2    -3
        Append To List    ${out}    ${i}
    END
    FOR    ${x}    IN RANGE    0    1    0.25
        Append To List    ${out}    ${x}
    END
    FOR    ${i}    IN RANGE    1+1
        Append To List    ${out}    ${i}
    END
    RETURN    ${out}

Bad Range
    FOR    ${i}    IN RANGE    1    2    3    4
        Log    ${i}
    END

Enumerated
    ${out} =    Create List
    FOR    ${index}    ${item}    IN ENUMERATE    a    b    c    start=1
        Append To List    ${out}    ${index}:${item}
    END
    FOR    ${index}    ${key}    ${value}    IN ENUMERATE    &{PRICES}
        Append To List    ${out}    ${index}:${key}=${value}
    END
    FOR    ${index}    ${pair}    IN ENUMERATE    &{PRICES}
        Append To List    ${out}    ${index}:${pair}
    END
    FOR    ${all}    IN ENUMERATE    &{PRICES}    start=5
        Append To List    ${out}    ${all}
    END
    RETURN    ${out}

Grouped
    GROUP    Compute
        ${x} =    Set Variable    inside
    END
    RETURN    ${x}

Zipped
    [Arguments]    ${mode}=SHORTEST
    @{names} =    Create List    a    b    c
    @{values} =    Create List    1    2
    ${out} =    Create List
    FOR    ${name}    ${value}    IN ZIP    ${names}    ${values}    mode=${mode}    fill=-
        Append To List    ${out}    ${name}${value}
    END
    RETURN    ${out}

Prices
    ${out} =    Create List
    FOR    ${key}    ${value}    IN    &{PRICES}
        Append To List    ${out}    ${key}:${value}
    END
    FOR    ${pair}    IN    &{PRICES}
        Append To List    ${out}    ${pair}
    END
    RETURN    ${out}

First Over
    [Arguments]    ${limit}
    FOR    ${n}    IN    @{NUMBERS}
        IF    ${n} > ${limit}    RETURN    ${n}
    END
    RETURN    none

Count Up
    [Arguments]    ${to}    ${limit}=NONE
    ${n} =    Set Variable    ${0}
    WHILE    ${n} < ${to}    limit=${limit}
        ${n} =    Evaluate    ${n} + 1
    END
    RETURN    ${n}

Spin
    [Arguments]    ${on_limit}=FAIL
    ${n} =    Set Variable    ${0}
    WHILE    True    limit=3    on_limit=${on_limit}
        ${n} =    Evaluate    ${n} + 1
    END
    RETURN    ${n}

Spin Quietly
    WHILE    True    limit=2    on_limit_message=gave up after ${2} rounds
        No Operation
    END

Guarded
    [Arguments]    ${message}
    ${seen} =    Set Variable    nothing
    TRY
        Fail    ${message}
    EXCEPT    ValueError: *    type=glob    AS    ${err}
        ${seen} =    Set Variable    value: ${err}
    EXCEPT    boom    timeout
        ${seen} =    Set Variable    literal
    EXCEPT    ^\\\\d+$    type=REGEXP
        ${seen} =    Set Variable    digits
    ELSE
        ${seen} =    Set Variable    else
    FINALLY
        Log    finally ran
    END
    RETURN    ${seen}

Clean Run
    TRY
        ${x} =    Set Variable    fine
    EXCEPT
        ${x} =    Set Variable    caught
    ELSE
        ${x} =    Catenate    ${x}    and else
    FINALLY
        ${x} =    Catenate    ${x}    and finally
    END
    RETURN    ${x}

Bad Pattern
    TRY
        Fail    x
    EXCEPT    x    type=fuzzy
        No Operation
    END

Variables
    VAR    ${joined}    a    b    c    separator=-
    VAR    @{items}    x    y
    VAR    &{map}    k=v
    VAR    ${FLOW_MARK}    set here    scope=TEST
    VAR    ${local_only}    gone later
    RETURN    ${joined}    ${items}    ${map}

Old Style Return
    [Arguments]    ${limit}
    FOR    ${n}    IN    @{NUMBERS}
        Return From Keyword If    ${n} > ${limit}    ${n}    found
    END
    Run Keyword And Return    Catenate    none    over    ${limit}

Return Of Failure
    Run Keyword And Return    Should Be Equal    a    b
    Fail    not reached

User ${name} Has ${count:[0-9]+} Items
    RETURN    ${name}:${count}

Add ${item} To ${target}
    Append To List    ${target}    ${item}
    ${n} =    Get Length    ${target}
    RETURN    ${n}

With Teardown
    [Arguments]    ${fail}=no
    [Teardown]    Set Test Variable    ${TD_MARK}    cleaned after ${fail}
    IF    $fail == 'yes'    Fail    body broke
    RETURN    done

Broken Teardown
    [Arguments]    ${fail}=no
    [Teardown]    Fail    teardown broke
    IF    $fail == 'yes'    Fail    body broke
    RETURN    done

With Setup
    [Setup]    Set Test Variable    ${SETUP_MARK}    ran
    RETURN    ${SETUP_MARK}

Broken Setup
    [Setup]    Fail    setup broke
    [Teardown]    Set Test Variable    ${TD_MARK}    after a failed setup
    Set Test Variable    ${TD_MARK}    body ran
    RETURN    never

Bad Condition
    IF    ${undefined} > 1
        No Operation
    END

Broken Loop
    FOR    ${i}
        Log    ${i}
    END

Bad Dict Loop
    FOR    ${a}    ${b}    ${c}    IN    &{PRICES}
        Log    ${a}
    END
"""

FLOW_CALLS = [
    ("Import Resource", ["${ATEST_DATA}/flow.resource"]),
    ("Classify", ["-5"]), ("Classify", ["0"]), ("Classify", ["7"]), ("Classify", ["50"]),
    ("Classify", ["500"]),
    ("Sum Until", ["4"]), ("Sum Until", ["99"]),
    ("Ranges", []),
    ("Enumerated", []), ("Grouped", []),
    ("Zipped", []), ("Zipped", ["LONGEST"]), ("Zipped", ["STRICT"]), ("Zipped", ["sideways"]),
    ("Prices", []),
    ("First Over", ["2"]), ("First Over", ["9"]),
    ("Count Up", ["4"]), ("Count Up", ["4", "10"]), ("Count Up", ["4", "2"]), ("Count Up", ["1", "0"]),
    ("Spin", []), ("Spin", ["PASS"]), ("Spin", ["maybe"]), ("Spin Quietly", []),
    ("Guarded", ["ValueError: bad"]), ("Guarded", ["boom"]), ("Guarded", ["timeout"]),
    ("Guarded", ["123"]), ("Guarded", ["other"]),
    ("Clean Run", []),
    ("Variables", []),
    ("Set Variable", ["${FLOW_MARK}"]),
    ("Variable Should Not Exist", ["${local_only}"]),
    ("Variable Should Not Exist", ["${n}"]),
    ("Old Style Return", ["3"]), ("Old Style Return", ["9"]), ("Return Of Failure", []),
    ("User Ann Has 3 Items", []), ("Given user Bob has 12 items", []), ("User Cy Has many Items", []),
    ("Add six To ${NUMBERS}", []), ("flow.Add seven To ${NUMBERS}", []), ("User Ann Has 3 Items", ["extra"]),
    ("With Teardown", []), ("Set Variable", ["${TD_MARK}"]), ("With Teardown", ["yes"]),
    ("Set Variable", ["${TD_MARK}"]), ("Broken Teardown", []), ("Broken Teardown", ["yes"]),
    ("With Setup", []), ("Broken Setup", []), ("Set Variable", ["${TD_MARK}"]),
    ("Bad Condition", []),
]

# Errors in the data itself (RF's syntax errors): TRY does not catch them, so each
# ends its test.
FLOW_SYNTAX = [[("Import Resource", ["${ATEST_DATA}/flow.resource"]), (k, [])]
               for k in ("Bad Range", "Broken Loop", "Bad Dict Loop", "Bad Pattern")]

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


def differential(tmp_path, name, calls, data, more=()):
    """Runs `calls` as one test through real RF and through stephost, and each list
    of calls in `more` as a test of its own (a syntax error ends its test); both
    sides' answers, which must all agree."""
    tests = []
    for t, test_calls in enumerate([calls, *more]):
        prefix = name if t == 0 else f"{name}-{t}"
        tests.append({"id": prefix, "steps": [
            {"id": f"{prefix}#{i}", "keyword": k, "args": a, "assign": [], "setup": False}
            for i, (k, a) in enumerate(test_calls)]})
    steps = tests[0]["steps"]
    corpus = {"source": {"robotframework": "7"}, "libraries": [], "data": data, "tests": tests}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(corpus))
    out_json = tmp_path / f"{name}-both.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests/rf/atest_differential.py"), "--stephost", BIN,
         "--corpus", str(path), "--json", str(out_json), "--min", "100", "--list"],
        capture_output=True, text=True, env=server_env(), timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    both = json.loads(out_json.read_text())
    return steps, both, [both["robot"][s["id"]] for s in steps]


def test_resource_keywords_and_variables_agree_with_robot_framework(tmp_path):
    steps, both, rf = differential(tmp_path, "resource", CALLS,
                                   {"common.resource": COMMON, "nested.resource": NESTED})
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

        looped = await rf_batch(s, [kw("Loop Over Fruits")], "res")
        assert looped["status"] == "PASS", looped
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
        # Resource text in place of a path needs no folder: its `${name}` is the
        # keyword's own, not resolved at the import.
        inline = ("*** Keywords ***\nGreet Twice\n    [Arguments]    ${name}\n"
                  "    FOR    ${i}    IN RANGE    2\n        ${name} =    Catenate    ${name}    ${name}\n"
                  "    END\n    RETURN    ${name}\n")
        out = await rf_batch(s, [kw("Import Resource", inline), kw("Greet Twice", "a"),
                                 kw("inline.Greet Twice", "b")], "inline")
        assert out["status"] == "PASS", out
        assert [st.get("return_value") for st in out["steps"]] == [None, "a a a a", "b b b b"], out
        out = await rf_batch(s, [kw("Import Resource", "*** Test Cases ***\nT\n    Log    x\n")], "inline")
        assert "Resource file with 'Test Cases' section is invalid" in step_error(out["steps"][0]), out


def test_control_structures_in_resource_keywords_agree_with_robot_framework(tmp_path):
    steps, both, rf = differential(tmp_path, "flow", FLOW_CALLS, {"flow.resource": FLOW}, FLOW_SYNTAX)
    for t in range(1, len(FLOW_SYNTAX) + 1):
        assert both["robot"][f"flow-{t}#1"]["status"] == "FAIL", both["robot"]
    by_call = {f"{k} {' '.join(a)}".strip(): r for (k, a), r in zip(FLOW_CALLS, rf)}
    # Not only agreeing: each structure did what it says.
    assert [by_call[f"Classify {n}"]["value"] for n in ("-5", "0", "7", "50")] == [
        "negative", "zero", "small", "large"]
    assert by_call["Sum Until 4"]["value"] == 4 and by_call["Sum Until 99"]["value"] == 9
    assert by_call["Ranges"]["value"] == [0, 1, 2, 10, 7, 4, 0.0, 0.25, 0.5, 0.75, 0, 1]
    assert by_call["Enumerated"]["value"] == [
        "1:a", "2:b", "3:c", "0:apple=3", "1:pear=5", "0:('apple', '3')", "1:('pear', '5')",
        [5, "apple", "3"], [6, "pear", "5"]]
    assert by_call["Grouped"]["value"] == "inside"
    assert by_call["Zipped LONGEST"]["value"] == ["a1", "b2", "c-"]
    assert by_call["First Over 2"]["value"] == "3" and by_call["First Over 9"]["value"] == "none"
    assert by_call["Count Up 4 2"]["status"] == "FAIL" and by_call["Spin PASS"]["value"] == 3
    assert [by_call[f"Guarded {m}"]["value"] for m in ("ValueError: bad", "boom", "123")] == [
        "value: ValueError: bad", "literal", "digits"]
    assert by_call["Guarded other"]["status"] == "FAIL"
    assert by_call["Clean Run"]["value"] == "fine and else and finally"
    assert by_call["Set Variable ${FLOW_MARK}"]["value"] == "set here"
    fails = [c for c, r in by_call.items() if r["status"] == "FAIL"]
    assert by_call["Old Style Return 3"]["value"] == ["4", "found"]
    assert by_call["Old Style Return 9"]["value"] == "none over 9"
    assert by_call["Return Of Failure"]["message"] == "a != b"
    assert by_call["Given user Bob has 12 items"]["value"] == "Bob:12"
    assert by_call["flow.Add seven To ${NUMBERS}"]["value"] == 7
    assert by_call["With Teardown yes"]["message"] == "body broke"
    assert by_call["Broken Teardown yes"]["message"] == (
        "body broke\n\nAlso keyword teardown failed:\nteardown broke")
    assert by_call["With Setup"]["value"] == "ran"
    assert [r["value"] for (k, a), r in zip(FLOW_CALLS, rf) if a == ["${TD_MARK}"]] == [
        "cleaned after no", "cleaned after yes", "after a failed setup"]
    fails = [f"{k} {' '.join(a)}".strip() for (k, a), r in zip(FLOW_CALLS, rf) if r["status"] == "FAIL"]
    assert len(fails) == 17, fails
