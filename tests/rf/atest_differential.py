#!/usr/bin/env python3
"""Differential test over Robot Framework's own acceptance tests: every call of
tests/rf/atest_corpus.json (built by atest_extract.py) runs through real Robot Framework
and through the stephost `rf` plugin; status, return value and failure message must
agree.

The corpus keeps each acceptance test's calls in order, since later calls read what
earlier ones assigned or changed (`Append To List ${L0}` then `Should Be Equal`).

- Robot Framework side: one suite, one test per corpus test, String and Collections
  imported. Each call runs as
      TRY
          ${__v} =    Keyword    args...
          <the call's own targets> =    Set Variable    ${__v}
          Record Step Pass    id    ${__v}
      EXCEPT    AS    ${__e}
          Record Step Fail    id    ${__e}
      END
  so a failing call is recorded and the test goes on, and an assignment that fails
  (`@{x} =` of a non-list) fails its call, as in RF. A call that ends the test (`Pass
  Execution`, `Skip`) is recorded by a listener at the end of the test.
- Plugin side: the `stephost serve` MCP server over stdio, one `batch` call per corpus
  test in a session of its own (RF's test variables do not outlive a test), each call
  one `rf.run_keyword` step with `on_failure: continue`.

Compared as in differential.py (ints, floats and bools kept apart; the text after
`SyntaxError:` in `Evaluate` errors normalised). Setup steps (the suite's variables)
run on both sides but are not compared. Logs are not compared here.

Prints agreement per library and overall, the differences, and exits 1 when agreement
is below --min (default 0: report only) or a library is below --min-per-library.

Usage: .venv/bin/python tests/rf/atest_differential.py [--stephost BIN] [--plugins DIR]
       [--only TEXT] [--json OUT] [--min PCT] [--min-per-library PCT] [--list]
"""

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from robot.api import TestSuite  # noqa: E402
from robot.api.interfaces import ListenerV3  # noqa: E402
from robot.libdoc import LibraryDocumentation  # noqa: E402

import differential  # noqa: E402
import rf_recorder  # noqa: E402
from stdio_mcp import StdioClient  # noqa: E402

VALUE = "${__rf_atest_v}"
ERROR = "${__rf_atest_e}"


ADDRESS = re.compile(r" at 0x[0-9a-f]+>")


def unaddress(value):
    """`<Element 'a' at 0x7f..>` as `<Element 'a' at 0x…>`: object addresses differ
    between two interpreters."""
    if isinstance(value, str):
        return ADDRESS.sub(" at 0x…>", value)
    if isinstance(value, list):
        return [unaddress(v) for v in value]
    if isinstance(value, dict):
        return {k: unaddress(v) for k, v in value.items()}
    return value


def load(path):
    return json.loads(Path(path).read_text())


# ---------------------------------------------------------------------------
# Robot Framework


class Ends(ListenerV3):
    """How each test ended, for a call that ended it (Pass Execution, Skip)."""

    def __init__(self, names):
        self.ends = {}
        self.names = names

    def start_test(self, data, result):
        if os.environ.get("ATEST_TRACE"):
            print(f"{data.name} {self.names[data.name]['id']}", file=sys.stderr, flush=True)

    def end_test(self, data, result):
        self.ends[data.name] = (result.status, result.message)


# Libraries beyond BuiltIn, String and Collections that a corpus calls (XML), and the
# data files its tests read, written to DATA_DIR, which both sides know as
# ${ATEST_DATA} (the tests' own `${CURDIR}` and `%{TEMPDIR}`).
EXTRA_LIBRARIES = []
DATA = {}
DATA_DIR = None


def prepare(corpus):
    """Takes a corpus's libraries and data files before either side runs."""
    global DATA_DIR
    EXTRA_LIBRARIES[:] = corpus.get("libraries", [])
    DATA.clear()
    DATA.update(corpus.get("data", {}))
    if DATA and DATA_DIR is None:
        DATA_DIR = os.path.realpath(tempfile.mkdtemp(prefix="rf-atest-data-"))


def write_data():
    """The data files as the corpus has them: each side starts from the same files."""
    if DATA_DIR is None:
        return
    for entry in Path(DATA_DIR).iterdir():
        if entry.is_file():
            entry.unlink()
    for name, text in DATA.items():
        (Path(DATA_DIR) / name).write_text(text)


def run_robot(tests):
    write_data()
    suite = TestSuite("Atest")
    for lib in ("String", "Collections", "rf_recorder", *EXTRA_LIBRARIES):
        suite.resource.imports.library(lib)
    if DATA_DIR:
        suite.resource.variables.create("${ATEST_DATA}", [DATA_DIR])
    names = {}
    for n, test in enumerate(tests):
        name = f"t{n}"
        names[name] = test
        # A guard, not a semantic: a call that hangs ends its test, not the run.
        rt = suite.tests.create(name, timeout="60s")
        for s in test["steps"]:
            rt.body.create_keyword("Begin Step", args=[s["id"]])
            attempt = rt.body.create_try()
            branch = attempt.body.create_branch(type="TRY")
            branch.body.create_keyword(s["keyword"], args=s["args"], assign=[f"{VALUE}="])
            if s["assign"]:
                branch.body.create_keyword("Set Variable", args=[VALUE], assign=s["assign"])
            branch.body.create_keyword("Record Step Pass", args=[s["id"], VALUE])
            caught = attempt.body.create_branch(type="EXCEPT", assign=ERROR)
            caught.body.create_keyword("Record Step Fail", args=[s["id"], ERROR])
    ends = Ends(names)
    rf_recorder.RESULTS.clear()
    rf_recorder.STARTED.clear()
    with tempfile.TemporaryDirectory() as out:
        suite.run(output=None, log=None, report=None, listener=ends, console="none", outputdir=out)
    results = dict(rf_recorder.RESULTS)
    for name, test in names.items():
        status, message = ends.ends.get(name, ("FAIL", "test did not run"))
        for s in test["steps"]:
            if s["id"] in results:
                continue
            if s["id"] in rf_recorder.STARTED:
                # The call ended the test without an error TRY could catch.
                results[s["id"]] = (
                    {"status": "PASS", "value": None}
                    if status == "PASS"
                    else {"status": status, "message": message}
                )
            break
    return results


# ---------------------------------------------------------------------------
# The plugin through `stephost serve` (stdio)


def run_plugin(tests, stephost, plugin_dirs):
    write_data()
    results = {}
    # What RF's suite gives every test here: the extra libraries and ${ATEST_DATA}.
    prefix = [{"keyword": "Import Library", "args": [lib]} for lib in EXTRA_LIBRARIES]
    if DATA_DIR:
        prefix.append({"keyword": "Set Variable", "args": [DATA_DIR], "assign": "ATEST_DATA"})
    folders = [DATA_DIR] if DATA_DIR else []
    with tempfile.TemporaryDirectory() as tmp:
        cmd = differential.stephost_command(stephost, plugin_dirs, tmp, folders=folders)
        server = StdioClient(cmd + ["serve"], name="atest-differential")
        try:
            for n, test in enumerate(tests):
                steps = [{"plugin": "rf", "verb": "run_keyword", "input": differential.escape(p)} for p in prefix]
                for s in test["steps"]:
                    inp = {"keyword": s["keyword"], "args": s["args"]}
                    if s["assign"]:
                        targets = [a.rstrip("= ").strip() for a in s["assign"]]
                        inp["assign"] = targets[0] if len(targets) == 1 else targets
                    steps.append({"plugin": "rf", "verb": "run_keyword", "input": differential.escape(inp)})
                args = {"steps": steps, "on_failure": "continue", "session_id": f"atest-{n}"}
                _, report = server.call_tool("batch", args)
                if report.get("status") == "invalid":
                    for s in test["steps"]:
                        results[s["id"]] = {"status": "INVALID", "message": json.dumps(report.get("errors"))[:300]}
                    continue
                by_index = {st["index"]: st for st in report.get("steps", [])}
                base = (min(by_index) if by_index else 0) + len(prefix)
                for i, s in enumerate(test["steps"]):
                    st = by_index.get(base + i, {})
                    if st.get("status") == "passed":
                        results[s["id"]] = {"status": "PASS", "value": st.get("value")}
                    else:
                        err = st.get("error") or {}
                        results[s["id"]] = {
                            # The rf plugin's `skip` code is RF's SKIP status.
                            "status": "SKIP" if err.get("code") == "skip" else "FAIL",
                            "message": err.get("message", f"step {st.get('status', 'missing')}"),
                        }
        finally:
            server.close()
    return results


# ---------------------------------------------------------------------------


LIBRARIES = ("BuiltIn", "String", "Collections")


def norm(name):
    """A keyword name as RF matches it: spaces, underscores and case do not count."""
    return re.sub(r"[\s_]", "", name).lower()


def library_map():
    """Normalized keyword name (plain and `Library.Keyword`) -> its library."""
    names = {}
    for lib in (*LIBRARIES, *EXTRA_LIBRARIES):
        for kw in LibraryDocumentation(lib).keywords:
            names[norm(kw.name)] = lib
            names[norm(f"{lib}.{kw.name}")] = lib
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(HERE / "atest_corpus.json"))
    ap.add_argument("--stephost", default=os.environ.get("STEPHOST_BIN", str(ROOT / "target/release/stephost")))
    ap.add_argument("--plugins", action="append", default=[])
    ap.add_argument("--only", help="run the tests whose id contains this text")
    ap.add_argument("--json", help="write both sides' results to this file")
    ap.add_argument("--min", type=float, default=0.0, help="fail below this overall agreement (percent)")
    ap.add_argument("--min-per-library", type=float, default=0.0)
    ap.add_argument("--list", action="store_true", help="print every difference (default: the first 60)")
    opts = ap.parse_args()

    corpus = load(opts.corpus)
    tests = corpus["tests"]
    prepare(corpus)
    if opts.only:
        tests = [t for t in tests if opts.only in t["id"]]
    try:
        rf = run_robot(tests)
        pl = run_plugin(tests, opts.stephost, opts.plugins)
    except Exception as e:
        print(f"atest differential: {e}", file=sys.stderr)
        return 2
    rf, pl = unaddress(rf), unaddress(pl)
    libs = library_map()
    per, rows = {}, []
    for test in tests:
        for s in test["steps"]:
            if s["setup"]:
                continue
            lib = libs.get(norm(s["keyword"]), "?")
            total, agree = per.get(lib, (0, 0))
            a = rf.get(s["id"], {"status": "MISSING", "message": "not run"})
            b = pl.get(s["id"], {"status": "MISSING", "message": "not run"})
            problems, _ = differential.compare({}, {**a, "logs": []}, {**b, "logs": []})
            per[lib] = (total + 1, agree + (not problems))
            for p in problems:
                rows.append((s["id"], s["keyword"], s["args"], p))
    if opts.json:
        Path(opts.json).write_text(json.dumps({"robot": rf, "plugin": pl}, indent=1, ensure_ascii=False))
    total = sum(t for t, _ in per.values())
    agree = sum(a for _, a in per.values())
    src = corpus.get("source", {})
    print(f"corpus: {total} calls from RF {src.get('robotframework')} acceptance tests "
          f"({src.get('commit', '?')[:10]}), run against RF {__import__('robot').__version__}")
    for lib in sorted(per):
        t, a = per[lib]
        print(f"  {lib:<12} {a:>5} / {t:<5} {100 * a / t:6.2f}%")
    print(f"  {'overall':<12} {agree:>5} / {total:<5} {100 * agree / max(total, 1):6.2f}%")
    shown = rows if opts.list else rows[:60]
    if rows:
        print(f"\n{len(rows)} difference(s):")
        for sid, kw, args, p in shown:
            print(f"  {sid}\n      {kw}  {'  '.join(map(str, args))}\n      {p}")
        if len(shown) < len(rows):
            print(f"  ... {len(rows) - len(shown)} more (--list)")
    failed = 100 * agree / max(total, 1) < opts.min or any(
        100 * a / t < opts.min_per_library for t, a in per.values()
    )
    print("\nFAILED" if failed else "\nagreement within the bounds")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
