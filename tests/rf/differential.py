#!/usr/bin/env python3
"""Differential test: the same keyword calls through real Robot Framework and through
the stephost `rf` plugin must give the same results.

Each case of the corpus (tests/rf/corpus.json) is `{id, keyword, args, setup?, check?}`.
`setup` lists steps (or names of `fixtures`) that run first, e.g. creating a list and
assigning it to a variable; then the keyword runs.

- Robot Framework side: one suite built with RF's API (`robot.api.TestSuite`), one test
  per case, String and Collections imported. The keyword runs as `Run Keyword And Ignore
  Error`, whose `(status, value)` a tiny helper library (rf_recorder.py) records; a test
  that ends before that (`Pass Execution`, a failing setup) is recorded by a listener.
- Plugin side: one batch for `stephost run -` with one `rf.run_keyword` step per setup
  step and case, `on_failure: continue`, in one session (the plugin keeps variables like
  an RF suite does). `${` in arguments is written `\\${` so the host passes it to the
  plugin untouched.

Compared: pass/fail, the return value (both as JSON: None is null, tuples are lists,
bytes are Latin-1 text; ints, floats and bools stay distinct) and the failure message,
exactly except for one documented normalisation: the text after `SyntaxError:` in
`Evaluate` errors, since Python's parser words its errors in ways a small evaluator
does not reproduce. A case may also say `"check": {"value": "any"}` (value not compared,
for `Get Time` of now) or `{"match": "<regex>"}` (both values must match it, for
`Generate Random String`). The keyword's log messages (INFO, WARN, ERROR) must match too,
unless `--lenient-logs` is given.

Prints a table of mismatches and exits 1 if there are any (2 if a side could not run).

A `--plugins DIR` holding an `rf.wasm` replaces the host's built-in `rf` plugin (the run
gets a config that disables the built-in one and grants the file its HTTP, unless
STEPHOST_CONFIG is set; that config also lifts the host's limit of steps in a batch, which
the corpus exceeds).

Usage: .venv/bin/python tests/rf/differential.py [--stephost BIN] [--plugins DIR]
       [--corpus FILE] [--only ID_SUBSTRING] [--lenient-logs] [--json OUT]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import rf_recorder  # noqa: E402  (needs the path above)
from robot.api import TestSuite  # noqa: E402
from robot.api.interfaces import ListenerV3  # noqa: E402

RESULT_VAR = "${__rf_diff_result}"
SYNTAX = re.compile(r"(SyntaxError: ).*$", re.S)


def load_corpus(path):
    data = json.loads(Path(path).read_text())
    fixtures = data.get("fixtures", {})
    cases = []
    for case in data["cases"]:
        setup = []
        for step in case.get("setup", []):
            if isinstance(step, str):
                setup.extend(fixtures[step])
            else:
                setup.append(step)
        cases.append({**case, "setup": setup, "args": case.get("args", [])})
    ids = [c["id"] for c in cases]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise SystemExit(f"duplicate case ids: {sorted(dupes)}")
    return cases


# ---------------------------------------------------------------------------
# Robot Framework


class Capture(ListenerV3):
    """Test status and message, and the log messages of each case's keyword."""

    def __init__(self):
        self.tests = {}
        self.logs = {}
        self.current = None
        self.depth = 0
        self.in_case = False

    def start_test(self, data, result):
        self.current = data.name
        self.logs[data.name] = []

    def end_test(self, data, result):
        self.tests[data.name] = {"status": result.status, "message": result.message}

    def start_keyword(self, data, result):
        if self.depth == 0 and data.name == "Run Keyword And Ignore Error" and data.assign:
            self.in_case = True
        self.depth += 1

    def end_keyword(self, data, result):
        self.depth -= 1
        if self.depth == 0:
            self.in_case = False

    def log_message(self, message):
        if self.in_case and self.depth > 1 and message.level in ("INFO", "WARN", "ERROR"):
            self.logs[self.current].append([message.level, message.message])


def run_robot(cases):
    suite = TestSuite("Differential")
    suite.resource.imports.library("String")
    suite.resource.imports.library("Collections")
    suite.resource.imports.library("rf_recorder")
    for case in cases:
        test = suite.tests.create(case["id"])
        for step in case["setup"]:
            assign = [f"{decorate(step['assign'])}="] if step.get("assign") else []
            test.body.create_keyword(step["keyword"], args=step.get("args", []), assign=assign)
        test.body.create_keyword(
            "Run Keyword And Ignore Error", args=[case["keyword"], *case["args"]], assign=[RESULT_VAR]
        )
        test.body.create_keyword("Record Case Result", args=[case["id"], RESULT_VAR])
    capture = Capture()
    rf_recorder.RESULTS.clear()
    with tempfile.TemporaryDirectory() as out:
        suite.run(output=None, log=None, report=None, listener=capture, console="none", outputdir=out)
    results = {}
    for case in cases:
        cid = case["id"]
        test = capture.tests.get(cid, {"status": "FAIL", "message": "test did not run"})
        if cid in rf_recorder.RESULTS:
            res = dict(rf_recorder.RESULTS[cid])
        elif test["status"] == "PASS":
            # Ended early but passed: `Pass Execution`.
            res = {"status": "PASS", "value": None}
        else:
            res = {"status": "SETUP-FAIL", "message": test["message"]}
        res["logs"] = capture.logs.get(cid, [])
        results[cid] = res
    return results


def decorate(name):
    return name if name[:2] in ("${", "@{", "&{") else "${" + name + "}"


# ---------------------------------------------------------------------------
# The plugin through stephost


def escape(value):
    """`${` -> `\\${` in every string, so the host's own `${...}` resolver leaves it."""
    if isinstance(value, str):
        return value.replace("${", "\\${")
    if isinstance(value, list):
        return [escape(v) for v in value]
    if isinstance(value, dict):
        return {k: escape(v) for k, v in value.items()}
    return value


def step(keyword, args, assign=None, label=None):
    inp = {"keyword": keyword, "args": args}
    if assign:
        inp["assign"] = assign
    return {"plugin": "rf", "verb": "run_keyword", "label": label, "input": escape(inp)}


def stephost_command(stephost, plugin_dirs, tmp, folders=()):
    """`stephost` with `--plugins` for each folder and, unless STEPHOST_CONFIG is set, a
    config in `tmp`: room for the whole corpus in one batch (more steps than the default
    limit) or in a session per test (more sessions and pool slots than the defaults), and when a folder holds an `rf.wasm`, the built-in `rf` left out (the host
    refuses two plugins of a name) and the built-in's loopback HTTP grant given to that
    file (a replacement gets only a grant that names its file); `folders` are granted
    to rf writable."""
    cmd = [stephost]
    for d in plugin_dirs:
        cmd += ["--plugins", d]
    if "STEPHOST_CONFIG" not in os.environ:
        # One claimed session per corpus test, never ended (stdio has no DELETE):
        # the pool and the session table hold the whole corpus at once.
        lines = ["[limits]", "max_steps_per_batch = 100000", "",
                 "[engine]", "max_instances = 8192", "",
                 "[sessions]", "max_sessions = 5000", ""]
        dev = [Path(d) / "rf.wasm" for d in plugin_dirs if (Path(d) / "rf.wasm").exists()]
        grant = [f"folders = [{', '.join(f'{{ path = {json.dumps(str(f))}, read_only = false }}' for f in folders)}]"] if folders else []
        if dev:
            lines += ["[plugins]", 'disable = ["rf"]', "", "[plugins.grants.rf]",
                      f"file = {json.dumps(str(dev[0].resolve()))}", 'http = ["loopback:*"]', *grant, ""]
        elif grant:
            lines += ["[plugins.grants.rf]", 'http = ["loopback:*"]', *grant, ""]
        config = Path(tmp) / "differential.toml"
        config.write_text("\n".join(lines))
        cmd += ["--config", str(config)]
    return cmd


def run_plugin(cases, stephost, plugin_dirs):
    steps, index = [], []
    for case in cases:
        setup_idx = []
        for i, s in enumerate(case["setup"]):
            setup_idx.append(len(steps))
            steps.append(step(s["keyword"], s.get("args", []), s.get("assign"), f"{case['id']}#setup{i}"))
        index.append((case["id"], setup_idx, len(steps)))
        steps.append(step(case["keyword"], case["args"], None, case["id"]))
    batch = {"steps": steps, "on_failure": "continue", "timeout_ms": 600000}
    with tempfile.TemporaryDirectory() as tmp:
        cmd = stephost_command(stephost, plugin_dirs, tmp) + ["run", "--quiet", "--compact", "-"]
        proc = subprocess.run(cmd, input=json.dumps(batch), capture_output=True, text=True, timeout=900)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"stephost gave no report (exit {proc.returncode}): {proc.stderr[-2000:]}")
    if report.get("status") == "invalid":
        raise RuntimeError(f"stephost rejected the batch: {json.dumps(report.get('errors'))[:2000]}")
    by_index = {s["index"]: s for s in report.get("steps", [])}
    results = {}
    for cid, setup_idx, main in index:
        failed_setup = [by_index.get(i) for i in setup_idx if by_index.get(i, {}).get("status") != "passed"]
        if failed_setup:
            err = (failed_setup[0] or {}).get("error", {})
            results[cid] = {"status": "SETUP-FAIL", "message": err.get("message", "setup did not run"), "logs": []}
            continue
        s = by_index.get(main, {})
        logs = [[entry["level"].upper(), entry["message"]] for entry in s.get("logs", [])]
        if s.get("status") == "passed":
            results[cid] = {"status": "PASS", "value": s.get("value"), "logs": logs}
        else:
            err = s.get("error", {})
            results[cid] = {
                "status": "FAIL",
                "message": err.get("message", f"step {s.get('status', 'missing')}"),
                "code": err.get("code"),
                "logs": logs,
            }
    return results


# ---------------------------------------------------------------------------
# Comparison


def same_json(a, b):
    """Equality that keeps int, float and bool apart (JSON's 1 and 1.0 and true)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return a == b


def normalise_message(message):
    return SYNTAX.sub(r"\1...", message) if "Evaluating expression" in message else message


def plugin_logs(result):
    """The plugin's log lines as the listener sees RF's: INFO and up, without the line
    that repeats the failure message (RF logs that at FAIL level, which is not captured)."""
    logs = [tuple(entry) for entry in result.get("logs", []) if entry[0] in ("INFO", "WARN", "ERROR")]
    if result["status"] != "PASS" and logs and logs[-1] == ("ERROR", result.get("message")):
        logs = logs[:-1]
    return logs


def compare(case, rf, pl):
    problems = []
    if rf["status"] != pl["status"]:
        what = rf.get("message") if rf["status"] != "PASS" else json.dumps(rf.get("value"))
        got = pl.get("message") if pl["status"] != "PASS" else json.dumps(pl.get("value"))
        problems.append(f"status: RF {rf['status']} ({what}) vs plugin {pl['status']} ({got})")
        return problems, []
    check = case.get("check", {})
    if rf["status"] == "PASS":
        if check.get("value") == "any":
            pass
        elif "match" in check:
            for side, res in (("RF", rf), ("plugin", pl)):
                if not isinstance(res["value"], str) or not re.fullmatch(check["match"], res["value"]):
                    problems.append(f"{side} value {json.dumps(res['value'])} does not match {check['match']}")
        elif not same_json(rf["value"], pl["value"]):
            problems.append(f"value: RF {json.dumps(rf['value'])} vs plugin {json.dumps(pl['value'])}")
    else:
        if normalise_message(rf["message"]) != normalise_message(pl["message"]):
            problems.append(f"message: RF {rf['message']!r} vs plugin {pl['message']!r}")
    log_problems = []
    if check.get("logs", True) and rf["status"] != "SETUP-FAIL":
        rf_logs = [tuple(x) for x in rf.get("logs", [])]
        pl_logs = plugin_logs(pl)
        if rf_logs != pl_logs:
            log_problems.append(f"logs: RF {rf_logs} vs plugin {pl_logs}")
    return problems, log_problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(HERE / "corpus.json"))
    ap.add_argument("--stephost", default=os.environ.get("STEPHOST_BIN", str(ROOT / "target/release/stephost")))
    ap.add_argument("--plugins", action="append", default=[], help="extra plugin folder for stephost")
    ap.add_argument("--only", help="run the cases whose id contains this text")
    ap.add_argument("--lenient-logs", action="store_true", help="report log differences without failing")
    ap.add_argument("--json", help="write both sides' results to this file")
    opts = ap.parse_args()

    cases = load_corpus(opts.corpus)
    if opts.only:
        cases = [c for c in cases if opts.only in c["id"]]
    try:
        rf = run_robot(cases)
        pl = run_plugin(cases, opts.stephost, opts.plugins)
    except Exception as e:  # one side could not run at all
        print(f"differential: {e}", file=sys.stderr)
        return 2
    rows, log_rows = [], []
    for case in cases:
        problems, log_problems = compare(case, rf[case["id"]], pl[case["id"]])
        rows += [(case["id"], p) for p in problems]
        log_rows += [(case["id"], p) for p in log_problems]
    if opts.json:
        Path(opts.json).write_text(json.dumps({"robot": rf, "plugin": pl}, indent=1))
    keywords = {c["keyword"] for c in cases}
    print(f"{len(cases)} cases, {len(keywords)} distinct keywords")
    if log_rows:
        print(f"\n{len(log_rows)} log difference(s){' (not failing)' if opts.lenient_logs else ''}:")
        for cid, p in log_rows:
            print(f"  {cid:<40} {p}")
    if rows:
        print(f"\n{len(rows)} mismatch(es):")
        width = max(len(cid) for cid, _ in rows)
        print(f"  {'case':<{width}}  difference")
        for cid, p in rows:
            print(f"  {cid:<{width}}  {p}")
    failed = bool(rows) or (not opts.lenient_logs and bool(log_rows))
    print("\nFAILED" if failed else "\nall cases agree")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
