#!/usr/bin/env python3
"""Builds tests/rf/atest_corpus.json: keyword calls taken from Robot Framework's own
acceptance tests (`atest/testdata/standard_libraries/{builtin,string,collections}`).

Usage: .venv/bin/python tests/rf/atest_extract.py RF_CHECKOUT [--out FILE]
       .venv/bin/python tests/rf/atest_extract.py RF_CHECKOUT --folders xml --libraries XML \
           --out tests/rf/atest_xml_corpus.json

With `--libraries` (XML), calls of those libraries are taken too, the `*_with_lxml`
files are left out (the sandbox's interpreter has no lxml), the variables of a resource
file next to the tests (`xml_resource.robot`) set the tests up, and the folder's data
files (`test.xml`, `namespaces.xml`) go into the corpus: `${CURDIR}` and `%{TEMPDIR}` in
the calls become `${ATEST_DATA}`, a folder the differential writes them to and grants.

RF_CHECKOUT is a checkout (or an exported tree) of Robot Framework's repository; the
PyPI packages do not carry the acceptance tests, so the corpus is extracted once and
kept in the repository, and tests/rf/atest_differential.py runs every call of it
through the Robot Framework installed from PyPI and through the rf plugin.

What is taken, test by test and in order:
- every call of a BuiltIn, String or Collections keyword (with its `${x} =` targets),
  templated rows of such a keyword, and the `Test Setup`/`[Setup]` calls;
- an argument-less user keyword of the same file is replaced by its body (the suites'
  "Create Lists For The Tests" setups); a user keyword whose first argument names a
  library keyword (`Verify Result    Append To List    ${L0}    1    expected=...`) is
  replaced by that call, without its `expected=` argument;
- the file's `*** Variables ***` become setup steps (`Set Variable`, `Create List`,
  `Create Dictionary`, `Evaluate` for typed collections, `Convert To Integer`).
`VAR` in a test's body (local or test scope) becomes a setup step as well. A test
stops at the first statement that is none of these (FOR, IF, TRY, a user
keyword or another library's keyword): what follows may depend on it.

Then real Robot Framework runs the whole corpus twice (atest_differential.run_robot)
and a call is left out when its outcome there shows the extraction lost its context
("Variable '...' not found", "No keyword with name ...", a library that is not
imported) or when the two runs (the second in reverse test order) disagree: time,
randomness, object ids, or a variable another test set.
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from robot.api import get_model  # noqa: E402
from robot.parsing.model.blocks import (  # noqa: E402
    KeywordSection,
    SettingSection,
    TestCaseSection,
    VariableSection,
)
import atest_differential  # noqa: E402
from atest_differential import library_map, norm  # noqa: E402
from robot.parsing.model.statements import (  # noqa: E402
    Arguments,
    ResourceImport,
    Comment,
    Documentation,
    EmptyLine,
    KeywordCall,
    Setup,
    Tags,
    Teardown,
    Template,
    TemplateArguments,
    TestSetup,
    TestTemplate,
    Timeout,
    Var,
    Variable,
)

FOLDERS = ("builtin", "string", "collections")
# Written where the corpus's data files go (`${CURDIR}` and `%{TEMPDIR}` of the tests):
# the differential defines it as a variable on both sides.
DATA_VAR = "${ATEST_DATA}"
# Keywords whose outcome depends on the run rather than the call, or that stop the
# whole run: not compared.
SKIPPED = {"fatalerror", "sleep", "gettime", "setloglevel", "logvariables", "getvariables"}


class Extractor:
    def __init__(self, path, root, keywords):
        self.path = path
        self.rel = str(path.relative_to(root))
        self.keywords = keywords
        self.model = get_model(str(path))
        self.user = {}
        self.variables = []
        self.test_setup = None
        self.test_template = None
        for section in self.model.sections:
            if isinstance(section, KeywordSection):
                for kw in section.body:
                    if hasattr(kw, "name"):
                        self.user[norm(kw.name)] = kw
            elif isinstance(section, VariableSection):
                for item in section.body:
                    if isinstance(item, Variable) and not item.errors:
                        step = variable_step(item)
                        if step:
                            self.variables.append(step)
            elif isinstance(section, SettingSection):
                for item in section.body:
                    if isinstance(item, ResourceImport) and (path.parent / item.name).is_file():
                        # A resource next to the tests (XML's `xml_resource.robot`): its
                        # variables set the tests up like the file's own.
                        self.variables += resource_variables(path.parent / item.name)
                    if isinstance(item, TestSetup):
                        self.test_setup = (item.name, list(item.args))
                    elif isinstance(item, TestTemplate):
                        self.test_template = item.value

    def library(self, name):
        if not name:
            return None
        return self.keywords.get(norm(name))

    def tests(self):
        for section in self.model.sections:
            if not isinstance(section, TestCaseSection):
                continue
            for test in section.body:
                if not hasattr(test, "name"):
                    continue
                steps = [dict(s, setup=True) for s in self.variables]
                yield {"id": f"{self.rel}::{test.name}", "steps": self.test_steps(test, steps)}

    def test_steps(self, test, steps):
        template = self.test_template
        setup = self.test_setup
        body = []
        for item in test.body:
            if isinstance(item, Template):
                template = item.value
            elif isinstance(item, Setup):
                setup = (item.name, list(item.args))
            elif isinstance(item, Timeout):
                # A test that counts on its timeout is about timeouts, not the call.
                return []
            elif isinstance(item, (Documentation, Tags, Teardown, Comment, EmptyLine)):
                continue
            else:
                body.append(item)
        if setup and setup[0] and setup[0].upper() != "NONE":
            if not self.call(setup[0], setup[1], [], setup[0] and test.lineno, steps, True, 0):
                return []
        for item in body:
            if isinstance(item, TemplateArguments) and template and template.upper() != "NONE":
                ok = self.call(template, list(item.args), [], item.lineno, steps, False, 0)
            elif isinstance(item, KeywordCall):
                ok = self.call(item.keyword, list(item.args), list(item.assign), item.lineno, steps, False, 0)
            elif isinstance(item, Var) and (item.scope or "LOCAL").upper() in ("LOCAL", "TEST"):
                # `VAR` is syntax, not a keyword: it sets the test up like the Variables table.
                step = variable_step(item)
                ok = step is not None and not item.errors
                if ok:
                    steps.append(dict(step, line=item.lineno, setup=True))
            else:
                ok = False
            if not ok:
                break
        return steps

    def call(self, name, args, assign, line, steps, setup, depth):
        """Appends the steps of one call; False when the test cannot go on past it."""
        if not name or "${" in name or depth > 3:
            return False
        if self.library(name):
            if any(norm(a).split(".")[-1] in SKIPPED for a in [name, *args]):
                return not assign
            if norm(name).split(".")[-1] == "waituntilkeywordsucceeds" and not (
                len(args) > 2 and self.library(args[2])
            ):
                # Retrying a keyword of the acceptance test's own files (not in the
                # corpus) only fails after the retry time runs out: minutes for nothing.
                return not assign
            steps.append({"keyword": name, "args": [relocate(a) for a in args], "assign": assign, "line": line,
                          "setup": setup})
            return True
        kw = self.user.get(norm(name))
        if kw is None:
            return False
        has_args = any(isinstance(s, Arguments) and s.values for s in kw.body)
        if not has_args and not args and not assign:
            for s in kw.body:
                if isinstance(s, KeywordCall):
                    if not self.call(s.keyword, list(s.args), list(s.assign), line, steps, setup, depth + 1):
                        return False
                elif not isinstance(s, (Documentation, Comment, EmptyLine, Tags, Arguments, Teardown)):
                    return False
            return True
        # A checking wrapper: `Verify Result    <library keyword>    args...    expected=...`.
        if args and self.library(args[0]) and not assign:
            inner = [a for a in args[1:] if not a.startswith("expected=")]
            return self.call(args[0], inner, [], line, steps, setup, depth + 1)
        return False


def resource_variables(path):
    steps = []
    for section in get_model(str(path)).sections:
        if isinstance(section, VariableSection):
            for item in section.body:
                if isinstance(item, Variable) and not item.errors:
                    step = variable_step(item)
                    if step:
                        steps.append(step)
    return steps


def relocate(text):
    """`${CURDIR}` and `%{TEMPDIR}` of a data-file test, as the corpus's data folder."""
    return text.replace("${CURDIR}", DATA_VAR).replace("%{TEMPDIR}", DATA_VAR)


def variable_step(item):
    name, values = item.name, [relocate(v) for v in item.value]
    match = re.fullmatch(r"([$@&])\{([^:}]+?)(?::\s*(.+))?\}", name)
    if not match:
        return None
    sigil, base, typ = match.groups()
    target = f"${{{base}}}"
    separator = item.separator
    if typ:
        typ = typ.strip().lower()
        if sigil != "$" or len(values) != 1:
            return None
        if typ in ("int", "integer"):
            return {"keyword": "Convert To Integer", "args": values, "assign": [target]}
        if typ in ("tuple", "list", "dict", "dictionary", "set"):
            expr = values[0]
            wrap = {"tuple": "tuple", "set": "set"}.get(typ)
            return {"keyword": "Evaluate", "args": [f"{wrap}({expr})" if wrap else expr], "assign": [target]}
        return None
    if sigil == "@":
        return {"keyword": "Create List", "args": values, "assign": [target]}
    if sigil == "&":
        return {"keyword": "Create Dictionary", "args": values, "assign": [target]}
    if len(values) == 1 and separator is None:
        return {"keyword": "Set Variable", "args": values, "assign": [target]}
    sep = " " if separator is None else separator
    return {"keyword": "Catenate", "args": [f"SEPARATOR={sep}", *values], "assign": [target]}


def commit_of(root):
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


CONTEXT_LOST = re.compile(
    r"Variable '.*' not found|No keyword with name|Non-existing variable|"
    r"Importing library .* failed|Resource file .* does not exist|is not a valid variable name"
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkout")
    ap.add_argument("--out", default=str(HERE / "atest_corpus.json"))
    ap.add_argument("--commit", help="the RF commit the checkout is at (read with git when not given)")
    ap.add_argument("--folders", default=",".join(FOLDERS),
                    help="folders of atest/testdata/standard_libraries (default: %(default)s)")
    ap.add_argument("--libraries", default="",
                    help="libraries beyond BuiltIn, String and Collections whose calls are taken (XML)")
    opts = ap.parse_args()
    root = Path(opts.checkout).resolve()
    folders = opts.folders.split(",")
    extra = [lib for lib in opts.libraries.split(",") if lib]
    atest_differential.EXTRA_LIBRARIES[:] = extra
    keywords = library_map()
    tests = []
    data = {}
    for folder in folders:
        base = root / "atest/testdata/standard_libraries" / folder
        if extra:
            # Data files the tests read (`${CURDIR}/test.xml`): carried in the corpus.
            for path in sorted(base.iterdir()):
                if path.is_file() and path.suffix not in (".robot", ".py", ".pyc"):
                    data[path.name] = path.read_text()
        for path in sorted(base.rglob("*.robot")):
            if path.stem.endswith("_with_lxml"):
                continue  # lxml mode: the sandbox's interpreter has no lxml
            try:
                ex = Extractor(path, root / "atest/testdata/standard_libraries", keywords)
            except Exception as e:  # a data file RF itself refuses: not corpus material
                print(f"skipping {path}: {e}", file=sys.stderr)
                continue
            for test in ex.tests():
                if any(not s["setup"] for s in test["steps"]):
                    tests.append(test)
    number_steps(tests)
    atest_differential.prepare({"data": data, "libraries": extra})

    first = atest_differential.run_robot(tests)
    # The second run takes the tests in reverse order: a call that passed only because
    # an earlier test set a suite or global variable (all tests share one suite here,
    # while the plugin gives each its own session) comes out differently and is left out.
    second = atest_differential.run_robot(tests[::-1])
    kept, dropped = [], {"context": 0, "unstable": 0, "not_reached": 0}
    for test in tests:
        steps = []
        for s in test["steps"]:
            if s["setup"]:
                steps.append(s)
                continue
            a, b = first.get(s["id"]), second.get(s["id"])
            if a is None:
                # An earlier call ended the test (Pass Execution, a failed setup).
                dropped["not_reached"] += 1
                continue
            if a.get("status") != "PASS" and CONTEXT_LOST.search(a.get("message", "")):
                dropped["context"] += 1
                continue
            if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
                dropped["unstable"] += 1
                continue
            steps.append(s)
        if any(not s["setup"] for s in steps):
            kept.append({**test, "steps": steps})
    # Leaving a call out can change what later calls of its test see: one more run of
    # what is kept must give every kept call the outcome it had before.
    before = {id(s): first.get(s["id"]) for t in kept for s in t["steps"]}
    number_steps(kept)
    again = atest_differential.run_robot(kept)
    final = []
    for test in kept:
        steps = []
        for s in test["steps"]:
            if s["setup"] or json.dumps(again.get(s["id"]), sort_keys=True) == json.dumps(before[id(s)], sort_keys=True):
                steps.append(s)
            else:
                dropped["unstable"] += 1
        if any(not s["setup"] for s in steps):
            final.append({**test, "steps": steps})
    kept = final
    number_steps(kept)
    import robot

    counts = {}
    for t in kept:
        for s in t["steps"]:
            if not s["setup"]:
                counts[library_of(s["keyword"], keywords)] = counts.get(library_of(s["keyword"], keywords), 0) + 1
    corpus = {
        "about": "Keyword calls from Robot Framework's acceptance tests; see tests/rf/atest_extract.py.",
        "source": {
            "repository": "robotframework/robotframework",
            "commit": opts.commit or commit_of(root),
            "paths": [f"atest/testdata/standard_libraries/{f}" for f in folders],
            "robotframework": robot.__version__,
        },
        **({"libraries": extra, "data": data} if extra else {}),
        "counts": counts,
        "dropped": dropped,
        "tests": kept,
    }
    write_corpus(corpus, Path(opts.out))
    print(f"{sum(counts.values())} calls in {len(kept)} tests {counts}; dropped {dropped}")


def write_corpus(corpus, path):
    """One test per line: small, and a new extraction diffs test by test."""
    head = {k: v for k, v in corpus.items() if k != "tests"}
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    lines = ",\n".join(json.dumps(t, ensure_ascii=False) for t in corpus["tests"])
    path.write_text(f'{text},\n "tests": [\n{lines}\n]}}\n')


def library_of(keyword, keywords):
    return keywords.get(norm(keyword), "?")


def number_steps(tests):
    for test in tests:
        for i, s in enumerate(test["steps"]):
            s["id"] = f"{test['id']}#{i}"


if __name__ == "__main__":
    main()
