"""The rf plugin against real Robot Framework: tests/rf/differential.py over the whole
corpus (tests/rf/corpus.json) must find no differences."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BIN, ROOT, server_env

pytestmark = pytest.mark.timeout(900)


def plugin_dir_args():
    # RF_PLUGIN_DIR points at a folder with a development build of rf.wasm; without it the
    # host's built-in rf plugin is used.
    folder = os.environ.get("RF_PLUGIN_DIR")
    return ["--plugins", folder] if folder else []


def test_plugin_agrees_with_robot_framework():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests/rf/differential.py"), "--stephost", BIN, *plugin_dir_args()],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=900,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "all cases agree" in out
    count = int(out.split(" cases,")[0].split()[-1])
    assert count >= 150, out


def test_corpus_covers_every_keyword_of_the_issue():
    import json

    corpus = json.loads((Path(ROOT) / "tests/rf/corpus.json").read_text())
    used = {c["keyword"].lower() for c in corpus["cases"]}
    used |= {s["keyword"].lower() for steps in corpus["fixtures"].values() for s in steps}
    used |= {s["keyword"].lower() for c in corpus["cases"] for s in c.get("setup", []) if isinstance(s, dict)}
    required = """Log; Log Many; Set Variable; Set Test Variable; Set Suite Variable; Set Global Variable;
        Get Variable Value; Variable Should Exist; Variable Should Not Exist; Catenate; Convert To Integer;
        Convert To Number; Convert To String; Convert To Boolean; Should Be Equal; Should Not Be Equal;
        Should Be Equal As Integers; Should Be Equal As Numbers; Should Be Equal As Strings;
        Should Not Be Equal As Integers; Should Not Be Equal As Numbers; Should Not Be Equal As Strings;
        Should Contain; Should Not Contain; Should Start With; Should End With; Should Match;
        Should Match Regexp; Should Be Empty; Should Not Be Empty; Length Should Be; Get Length; Get Count;
        Should Be True; Evaluate; Create List; Create Dictionary; Sleep; Fail; Pass Execution; Get Time;
        Run Keyword; Run Keyword If; Run Keyword And Return Status; Run Keyword And Ignore Error;
        Run Keyword And Expect Error; Wait Until Keyword Succeeds; Repeat Keyword; Import Library;
        Replace String; Replace String Using Regexp; Split String; Split To Lines; Fetch From Left;
        Fetch From Right; Get Substring; Strip String; Convert To Upper Case; Convert To Lower Case;
        Get Regexp Matches; Get Lines Containing String; Should Be String; Format String;
        Generate Random String; Append To List; Insert Into List; Get From List; Set List Value;
        Remove From List; Get Index From List; Sort List; Combine Lists; List Should Contain Value;
        List Should Not Contain Value; Lists Should Be Equal; Get From Dictionary; Set To Dictionary;
        Get Dictionary Keys; Get Dictionary Values; Get Dictionary Items; Dictionary Should Contain Key;
        Dictionary Should Not Contain Key; Dictionaries Should Be Equal"""
    missing = [k.strip() for k in required.split(";") if k.strip().lower() not in used]
    assert not missing, missing
