"""A plugin author's path in each language, as the README of `plugin new`
tells it: scaffold, native test, one build command with the toolchains the
project pins (cargo, componentize-js from npm, componentize-py from PyPI),
`plugin check`, `plugin test` on the project's own cases, a batch with
`stephost run`, and the verbs as MCP tools through the Python MCP SDK.

Then the author's first mistake: an exception thrown in the verb code. It
must come back as a failed step with its message, in every language, and
leave the instance (and its count) alive in JavaScript and Python, where
the template catches it; a Rust panic traps, with its message, and the
instance starts over.
"""

import json
import os
import shutil
import subprocess

import pytest

from conftest import BIN, server_env, stdio_session

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

LANGS = {
    "rust": {
        "tools": ["cargo"],
        "native": [["cargo", "test", "--quiet"]],
        "build": [["cargo", "build", "--quiet", "--release", "--target", "wasm32-wasip2"]],
        "wasm": "target/wasm32-wasip2/release/{module}.wasm",
        "source": "src/lib.rs",
        "anchor": '    Ok(Output::new(json!({"greeting": format!("Hello, {name}!")})))',
        "throw": '    if name == "boom" {\n        panic!("boom from {name}");\n    }\n',
    },
    "js": {
        "tools": ["npm", "node"],
        "native": [["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], ["npm", "test", "--silent"]],
        "build": [["npm", "run", "build", "--silent"]],
        "wasm": "{name}.wasm",
        "source": "src/verbs.js",
        "anchor": "      return { greeting: `Hello, ${name}!` };",
        "throw": "      if (name === 'boom') throw new Error(`boom from ${name}`);\n",
    },
    "python": {
        "tools": ["python3"],
        "native": [["python3", "-m", "unittest", "--quiet"]],
        "build": [["sh", "build.sh"]],
        "wasm": "{name}.wasm",
        "source": "verbs.py",
        "anchor": '    return {"greeting": f"Hello, {name}!"}',
        "throw": '    if name == "boom":\n        raise ValueError(f"boom from {name}")\n',
    },
}


def sh(cmd, cwd, timeout=600):
    """Runs `cmd` in `cwd`; its output in the failure message if it fails."""
    env = dict(os.environ)
    env["STEPHOST_CACHE_DIR"] = server_env()["STEPHOST_CACHE_DIR"]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    return proc


def stephost(*args, cwd):
    return subprocess.run([BIN, *args], cwd=cwd, env=server_env(), capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("lang", list(LANGS))
async def test_a_scaffolded_plugin_builds_checks_runs_and_serves(lang, tmp_path):
    spec = LANGS[lang]
    missing = [t for t in spec["tools"] if shutil.which(t) is None]
    if missing:
        pytest.fail(f"missing {missing}: scripts/test.sh installs the plugin toolchains")
    name = f"kit-{lang}"
    module = name.replace("-", "_")
    project = tmp_path / name
    made = stephost("plugin", "new", name, "--lang", lang, "--dir", str(project), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    # The README's promise: its commands are the ones `new` prints.
    readme = (project / "README.md").read_text()
    for cmd in spec["build"]:
        assert " ".join(c for c in cmd if not c.startswith("--quiet") and c != "--silent") in readme, readme

    # The author edits the verb before building: a thrown error on "boom".
    source = project / spec["source"]
    text = source.read_text()
    assert spec["anchor"] in text, f"the {lang} template changed: {spec['anchor']!r} is gone"
    source.write_text(text.replace(spec["anchor"], spec["throw"] + spec["anchor"]))

    for cmd in spec["native"] + spec["build"]:
        sh(cmd, project)
    wasm = project / spec["wasm"].format(name=name, module=module)
    assert wasm.is_file(), f"the build wrote no {wasm}"

    checked = stephost("plugin", "check", "--json", str(wasm), cwd=project)
    report = json.loads(checked.stdout)
    assert checked.returncode == 0 and report["ok"], json.dumps(report, indent=1)
    assert report["contract"] == "0.5.0"
    # Built with the flags that keep imports minimal: nothing needs a grant.
    assert [i["name"] for i in report["imports"] if i["grant"]] == [], report["imports"]
    assert {t["verb"]: t["tool"] for t in report["tools"]} == {"greet": f"{name}_greet", "count": f"{name}_count"}
    errors = [p for p in report["problems"] if p["severity"] == "error"]
    assert errors == [], errors

    tested = stephost("plugin", "test", "--json", str(wasm), "cases.json", cwd=project)
    result = json.loads(tested.stdout)
    assert tested.returncode == 0 and result["failed"] == 0, json.dumps(result, indent=1)
    assert result["passed"] >= 4

    batch = project / "batch.json"
    batch.write_text(json.dumps({"steps": [
        {"plugin": name, "verb": "greet", "input": {"name": "Ada"}},
        {"plugin": name, "verb": "count", "input": {}},
        {"plugin": "testkit", "verb": "echo", "input": {"value": "${STEP_1.greeting} #${STEP_2.count}"}},
        {"plugin": name, "verb": "greet", "input": {"name": "boom"}},
        {"plugin": name, "verb": "count", "input": {}},
    ], "on_failure": "continue"}))
    ran = stephost("run", "--plugins", str(wasm), str(batch), cwd=project)
    run = json.loads(ran.stdout)
    steps = run["steps"]
    assert len(steps) == 5, f"{json.dumps(run, indent=1)}\n{ran.stderr}"
    assert steps[0]["value"] == {"greeting": "Hello, Ada!"}, steps[0]
    assert steps[2]["value"] == "Hello, Ada! #1", steps[2]
    boom = steps[3]
    assert boom["status"] == "failed" and "boom from boom" in boom["error"]["message"], boom
    if lang == "rust":
        # A panic traps: the instance, and so the count, starts over.
        assert boom["error"]["code"] == "trap", boom
        assert steps[4]["value"] == {"count": 1}, steps[4]
    else:
        # The template turns the exception into a failure: the instance lives.
        assert boom["error"]["code"] == "failed", boom
        assert steps[4]["value"] == {"count": 2}, steps[4]

    # As MCP tools, from the Python MCP SDK over stdio.
    async with stdio_session("--plugins", str(wasm)) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert f"{name}_greet" in tools, sorted(tools)
        assert tools[f"{name}_greet"].inputSchema["required"] == ["name"]
        greeted = await s.call_tool(f"{name}_greet", {"name": "Grace"})
        assert not greeted.isError, greeted
        assert greeted.structuredContent["value"] == {"greeting": "Hello, Grace!"}, greeted
        refused = await s.call_tool(f"{name}_greet", {"name": "   "})
        assert refused.isError, refused
        assert "`name` is blank" in json.dumps(refused.structuredContent), refused
