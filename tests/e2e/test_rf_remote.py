"""The rf plugin and a real remote library: tests/rf/remote_calc.py served by
`robotremoteserver`, called through Robot Framework's `Remote` library and through the
plugin's XML-RPC client over the host's wasi:http grant (loopback by default)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import BIN, ROOT, server_env

sys.path.insert(0, str(ROOT / "tests/rf"))
import differential  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def remote_url():
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/rf/remote_calc.py"), "0"],
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


def plugin_dirs():
    folder = os.environ.get("RF_PLUGIN_DIR")
    return [folder] if folder else []


def cases(url):
    importing = {"keyword": "Import Library", "args": ["Remote", url, "AS", "Calc"]}

    def c(id, keyword, *args, setup=()):
        return {"id": id, "keyword": keyword, "args": list(args), "setup": list(setup), "check": {}}

    items = [
        c("add", "Calc.Add Numbers", "2", "3", setup=[importing]),
        c("add-bare-underscore", "add_numbers", "40", "2"),
        c("add-normalized", "calc.add numbers", "1", "1"),
        c("add-too-few", "Calc.Add Numbers", "1"),
        c("add-too-many", "Add Numbers", "1", "2", "3"),
        c("divide", "Divide", "7", "2"),
        c("divide-by-zero", "Divide", "1", "0"),
        c("concatenate", "Concatenate", "a", "b", "c"),
        c("concatenate-list", "Concatenate", "@{L}", setup=[{"keyword": "Create List", "args": ["x", "y"], "assign": "L"}]),
        c("greet", "Greet", "World"),
        c("greet-default-named", "Greet", "World", "greeting=Hi"),
        c("greet-all-named", "Greet", "name=Ada", "greeting=Hey"),
        c("greet-unexpected-named", "Greet", "World", "nope=1"),
        c("options-kwargs", "Options", "b=2", "a=1"),
        c("echo-list", "Echo", "${L}", setup=[{"keyword": "Create List", "args": ["a", "${1}", "${True}"], "assign": "L"}]),
        c("echo-dict", "Echo", "${D}", setup=[{"keyword": "Create Dictionary", "args": ["k=v", "n=${2}"], "assign": "D"}]),
        c("echo-none", "Echo", "${None}"),
        c("echo-float", "Echo", "${1.5}"),
        c("echo-binary", "Echo", "a\\x01b"),
        c("types", "Types"),
        c("log-things", "Log Things"),
        c("fail-plainly", "Fail Plainly"),
        c("fail-custom", "Fail Plainly", "custom message"),
        c("fail-value-error", "Fail With Value Error"),
        c("fail-continuable", "Fail Continuable"),
        c("ignore-error", "Run Keyword And Ignore Error", "Calc.Divide", "1", "0"),
        c("expect-error", "Run Keyword And Expect Error", "*division*", "Divide", "1", "0"),
        c("wait-until", "Wait Until Keyword Succeeds", "2x", "10ms", "Calc.Add Numbers", "1", "1"),
        c("typo", "Calc.Ad Numbers", "1", "2"),
        c("library-typo", "Clac.Add Numbers", "1", "2"),
    ]
    return items


def run_plugin_raw(steps):
    cmd = [BIN]
    for d in plugin_dirs():
        cmd += ["--plugins", d]
    cmd += ["run", "--quiet", "--compact", "-"]
    batch = {"steps": steps, "on_failure": "continue", "timeout_ms": 60000}
    proc = subprocess.run(cmd, input=json.dumps(batch), capture_output=True, text=True, env=server_env(), timeout=120)
    return json.loads(proc.stdout)


def test_remote_keywords_agree_with_robot_framework(remote_url):
    corpus = cases(remote_url)
    rf = differential.run_robot(corpus)
    plugin = differential.run_plugin(corpus, BIN, plugin_dirs())
    problems = []
    for case in corpus:
        diffs, log_diffs = differential.compare(case, rf[case["id"]], plugin[case["id"]])
        problems += [f"{case['id']}: {d}" for d in diffs + log_diffs]
    assert not problems, "\n".join(problems)
    # The remote keyword really ran, through the plugin.
    assert plugin["add"] == {"status": "PASS", "value": 5, "logs": []}


def test_flags_tracebacks_and_keyword_listing(remote_url):
    step = differential.step
    report = run_plugin_raw(
        [
            step("Import Library", ["Remote", remote_url, "AS", "Calc"]),
            step("Fail Continuable", []),
            step("Fail Fatally", []),
            step("Fail With Value Error", []),
            {"plugin": "rf", "verb": "keywords", "input": {"library": "Calc", "filter": "add*"}},
            step("Calc.Add Numbers", ["20", "22"], assign="sum"),
            step("Should Be Equal As Integers", ["${sum}", "42"]),
            {"plugin": "rf", "verb": "variables", "input": {}},
        ]
    )
    steps = report["steps"]
    assert steps[0]["status"] == "passed", steps[0]
    continuable = steps[1]["error"]
    assert continuable["message"] == "ContinuableError: soft failure"
    assert continuable["details"]["continuable"] is True and continuable["details"]["fatal"] is False
    fatal = steps[2]["error"]
    assert fatal["message"] == "FatalError: hard failure"
    assert fatal["details"]["fatal"] is True
    traceback = steps[3]["error"]["details"]["traceback"]
    assert "raise ValueError" in traceback
    listed = steps[4]["value"]
    assert [k["full_name"] for k in listed] == ["Calc.Add Numbers"]
    assert listed[0]["args"] == "a, b" and listed[0]["doc"] == "Adds two integers given as text."
    assert steps[6]["status"] == "passed", steps[6]
    assert steps[7]["value"]["sum"] == 42


def test_addresses_outside_the_grant_are_denied():
    report = run_plugin_raw([differential.step("Import Library", ["Remote", "http://192.0.2.1:8270"])])
    error = report["steps"][0]["error"]
    assert error["code"] == "denied", error
    assert error["input_fired"] is False
    assert "allow-list" in error["message"]
