"""The rf plugin against Robot Framework's own acceptance tests: every keyword call of
tests/rf/atest_corpus.json (extracted by tests/rf/atest_extract.py from RF's
`atest/testdata/standard_libraries/{builtin,string,collections}`) runs through real
Robot Framework and through `stephost serve`, and status, return value and failure
message are compared.

tests/rf/atest_xml_corpus.json does the same for `atest/testdata/standard_libraries/xml`
(ElementTree mode, the `*_with_lxml` files left out), with the data files those tests
read carried in the corpus and granted to the plugin.

The floors are the agreement measured when they were last raised: a change that makes
the plugin agree less with RF fails here; one that makes it agree more should raise
them (BENCHMARKS.md lists the figures and every remaining difference by cause)."""

import json
import re
import subprocess
import sys

import pytest

from conftest import BIN, ROOT, server_env
from test_rf_differential import plugin_dir_args

pytestmark = pytest.mark.timeout(1500)

CORPUS = ROOT / "tests/rf/atest_corpus.json"
OVERALL_FLOOR = 99.0
LIBRARY_FLOORS = {"BuiltIn": 99.0, "String": 99.4, "Collections": 99.5}


def test_corpus_is_rf_acceptance_material():
    corpus = json.loads(CORPUS.read_text())
    src = corpus["source"]
    assert src["repository"] == "robotframework/robotframework" and len(src["commit"]) == 40
    calls = [s for t in corpus["tests"] for s in t["steps"] if not s["setup"]]
    assert len(calls) >= 2000
    assert set(corpus["counts"]) == set(LIBRARY_FLOORS)
    assert sum(corpus["counts"].values()) == len(calls)
    assert all(n >= 150 for n in corpus["counts"].values()), corpus["counts"]
    # Every id names the acceptance-test file and test it came from.
    assert all(re.fullmatch(r"(builtin|string|collections)/.+\.robot::.+#\d+", s["id"]) for s in calls)


XML_CORPUS = ROOT / "tests/rf/atest_xml_corpus.json"
XML_FLOORS = {"XML": 100.0, "BuiltIn": 100.0}


def test_xml_corpus_is_rf_acceptance_material():
    corpus = json.loads(XML_CORPUS.read_text())
    src = corpus["source"]
    assert src["repository"] == "robotframework/robotframework" and len(src["commit"]) == 40
    assert src["paths"] == ["atest/testdata/standard_libraries/xml"] and corpus["libraries"] == ["XML"]
    assert {"test.xml", "namespaces.xml"} <= set(corpus["data"])
    calls = [s for t in corpus["tests"] for s in t["steps"] if not s["setup"]]
    assert corpus["counts"]["XML"] >= 150 and sum(corpus["counts"].values()) == len(calls)
    assert all(re.fullmatch(r"xml/.+\.robot::.+#\d+", s["id"]) and "_with_lxml" not in s["id"] for s in calls)


def run_differential(tmp_path, corpus, floors, overall):
    out_json = tmp_path / "both.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests/rf/atest_differential.py"), "--stephost", BIN, *plugin_dir_args(),
         "--corpus", str(corpus), "--json", str(out_json), "--min", str(overall), "--list"],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=1400,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-20000:]
    figures = dict(re.findall(r"^  (\w+)\s+\d+ / \d+\s+([\d.]+)%$", out, re.M))
    for lib, floor in floors.items():
        assert float(figures[lib]) >= floor, f"{lib} agreement {figures[lib]}% < {floor}%\n{out[-20000:]}"
    both = json.loads(out_json.read_text())
    # Both sides ran every call: nothing was lost on the way.
    ids = [s["id"] for t in json.loads(corpus.read_text())["tests"] for s in t["steps"]]
    assert not [i for i in ids if i not in both["robot"]][:5]
    assert not [i for i in ids if i not in both["plugin"]][:5]


def test_plugin_agrees_with_robot_framework_on_its_acceptance_tests(tmp_path):
    run_differential(tmp_path, CORPUS, LIBRARY_FLOORS, OVERALL_FLOOR)


def test_xml_library_agrees_with_robot_framework_on_its_acceptance_tests(tmp_path):
    run_differential(tmp_path, XML_CORPUS, XML_FLOORS, 100.0)
