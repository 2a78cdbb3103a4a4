"""OperatingSystem in the rf sandbox against the real thing: the host lends folders
(`[plugins.grants.rf] folders`), an RF batch changes files there, and Python checks the
end state on disk on its own. Paths outside the grant, read-only grants, a tenant's
narrower folder and a host without a folder grant are refused with messages that say
why. Last, a differential: the same keyword calls through real Robot Framework and
through the plugin, in the same folder, must agree on status, value, message and logs.
"""

import hashlib
import os
import sys
import time
from pathlib import Path

import pytest

from conftest import BIN, ROOT, HttpServer, config_file, host_with, http_session
from conftest import rf_batch, rf_step as kw, step_error as error_of

sys.path.insert(0, str(ROOT / "tests/rf"))
import differential  # noqa: E402  (needs the path above)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

GRANT_KEY = "[plugins.grants.rf]"


def dev_plugin():
    """Config lines that load a development build of rf.wasm from RF_PLUGIN_DIR (as the
    other rf tests do) in place of the built-in one, and the grant key naming it."""
    folder = os.environ.get("RF_PLUGIN_DIR")
    if not folder:
        return "", ""
    return f'[plugins]\ndisable = ["rf"]\ndirs = ["{folder}"]\n', 'file = "rf.wasm"\n'


def folder_grant(*folders):
    """A host config granting rf `folders` [(path, read_only)], keeping its loopback HTTP."""
    plugins, file_line = dev_plugin()
    items = ", ".join(f'{{ path = "{p}", read_only = {"true" if ro else "false"} }}' for p, ro in folders)
    return f'{plugins}[plugins.grants.rf]\n{file_line}http = ["loopback:*"]\nfolders = [{items}]\n'


@pytest.fixture
def tmp(tmp_path):
    # Canonical, as the host stores granted folders (and as messages name them).
    return Path(os.path.realpath(tmp_path))


IMPORT = kw("Import Library", "OperatingSystem")


async def batch(s, steps, on_failure="stop", session="os"):
    return await rf_batch(s, steps, session, on_failure=on_failure)


async def test_a_batch_changes_files_that_python_then_finds_on_disk(tmp):
    d = tmp / "work"
    d.mkdir()
    (d / "keep.txt").write_text("untouched")
    async with host_with(folder_grant((d, False))) as s:
        out = await batch(s, [
            IMPORT,
            kw("Create File", d / "a.txt", "first line\n"),
            kw("Append To File", d / "a.txt", "second line\n"),
            kw("Create Directory", d / "sub" / "deeper"),
            kw("Copy File", d / "a.txt", d / "sub/", assign="copied"),
            kw("Copy Files", d / "*.txt", d / "all"),
            kw("Move File", d / "all" / "keep.txt", d / "all" / "moved.txt"),
            kw("Create Binary File", d / "bin.dat", "\\x00\\x01\\xff"),
            kw("Remove File", d / "all" / "a.txt"),
            kw("Copy Directory", d / "sub", d / "sub2"),
            kw("Remove Directory", d / "sub2" / "deeper"),
            kw("List Directory", d, assign="items"),
            kw("Get File", d / "a.txt", assign="text"),
            kw("Grep File", d / "a.txt", "second*", assign="grepped"),
            kw("Count Files In Directory", d / "all", assign="count"),
            kw("Get File Size", d / "bin.dat", assign="size"),
            kw("Join Path", d, "sub", "..", "a.txt", assign="joined"),
        ])
        assert out["status"] == "PASS", out
        values = {st.get("assign_to") or i: st.get("return_value") for i, st in enumerate(out["steps"])}
        steps = out["steps"]
        assert steps[4]["return_value"] == str(d / "sub" / "a.txt")
        assert steps[11]["return_value"] == ["a.txt", "all", "bin.dat", "keep.txt", "sub", "sub2"]
        assert steps[12]["return_value"] == "first line\nsecond line\n"
        assert steps[13]["return_value"] == "second line"
        assert steps[14]["return_value"] == 1
        assert steps[15]["return_value"] == 3
        assert steps[16]["return_value"] == str(d / "a.txt"), values
    # The end state, read by Python alone.
    assert (d / "a.txt").read_text() == "first line\nsecond line\n"
    assert (d / "sub" / "a.txt").read_text() == "first line\nsecond line\n"
    assert (d / "sub" / "deeper").is_dir()
    assert sorted(p.name for p in (d / "all").iterdir()) == ["moved.txt"]
    assert (d / "all" / "moved.txt").read_text() == "untouched"
    assert (d / "keep.txt").read_text() == "untouched", "Copy Files copies"
    assert (d / "bin.dat").read_bytes() == b"\x00\x01\xff"
    assert (d / "sub2" / "a.txt").is_file() and not (d / "sub2" / "deeper").exists()
    assert not any(p.name.startswith(".") for p in d.rglob("*")), "no temporary copies left behind"


async def test_paths_outside_the_grant_fail_naming_the_path_and_the_key(tmp):
    d = tmp / "granted"
    d.mkdir()
    outside = tmp / "outside.txt"
    outside.write_text("secret")
    (d / "link.txt").symlink_to(outside)
    (d / "dirlink").symlink_to(tmp)
    async with host_with(folder_grant((d, False))) as s:
        for step in [
            kw("Get File", outside),
            kw("Create File", d / ".." / "escape.txt", "x"),
            kw("File Should Exist", "/etc/passwd"),
            kw("List Directory", "/"),
        ]:
            out = await batch(s, [IMPORT, step], session="out")
            failed = out["steps"][1]
            assert failed["status"] == "FAIL", out
            message = error_of(failed)
            assert "is outside the folders granted to the rf plugin" in message, message
            assert GRANT_KEY in message and "Errno" not in message, message
            target = os.path.normpath(step["arguments"][0])
            assert f"'{target}'" in message, message
        # A symbolic link out of the folder is refused by the host's WASI (cap-std):
        # lexically inside, but it resolves outside, and nothing leaks.
        for step in [
            kw("Get File", d / "link.txt"),
            kw("Create File", d / "dirlink" / "planted.txt", "x"),
            kw("List Directory", d / "dirlink"),
        ]:
            out = await batch(s, [IMPORT, step], session="link")
            failed = out["steps"][1]
            assert failed["status"] == "FAIL", (step, out)
            message = error_of(failed)
            assert "secret" not in message, message
            assert "outside the folders granted" in message or "does not exist" in message, message
    assert not (tmp / "escape.txt").exists() and not (tmp / "planted.txt").exists()
    assert outside.read_text() == "secret"


async def test_a_read_only_grant_refuses_writes(tmp):
    rw, ro = tmp / "rw", tmp / "ro"
    rw.mkdir()
    ro.mkdir()
    (ro / "data.txt").write_text("read me")
    async with host_with(folder_grant((rw, False), (ro, True))) as s:
        out = await batch(s, [IMPORT, kw("Get File", ro / "data.txt"), kw("Copy File", ro / "data.txt", rw)])
        assert out["status"] == "PASS", out
        assert out["steps"][1]["return_value"] == "read me"
        for step in [
            kw("Create File", ro / "new.txt", "x"),
            kw("Remove File", ro / "data.txt"),
            kw("Append To File", ro / "data.txt", "x"),
            kw("Create Directory", ro / "d"),
            kw("Move File", rw / "data.txt", ro / "back.txt"),
            kw("Touch", ro / "data.txt"),
        ]:
            out = await batch(s, [IMPORT, step], session="ro")
            message = error_of(out["steps"][1])
            assert out["steps"][1]["status"] == "FAIL" and "read-only" in message, (step, out)
            assert str(ro) in message, message
    assert sorted(p.name for p in ro.iterdir()) == ["data.txt"]
    assert (ro / "data.txt").read_text() == "read me"
    assert (rw / "data.txt").read_text() == "read me"


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


async def test_a_tenants_narrower_folder_is_enforced(tmp):
    shared = tmp / "shared"
    (shared / "acme").mkdir(parents=True)
    (shared / "other").mkdir()
    (shared / "other" / "theirs.txt").write_text("not acme's")
    tenants = f"""
[[tenants]]
id = "acme"
token_sha256 = ["{sha('acme-secret')}"]
[tenants.grants.rf]
http = ["loopback:*"]
folders = [{{ path = "{shared / 'acme'}", read_only = false }}]

[[tenants]]
id = "viewer"
token_sha256 = ["{sha('viewer-secret')}"]
[tenants.grants.rf]
http = ["loopback:*"]
folders = [{{ path = "{shared}", read_only = true }}]
"""
    with config_file(tenants) as tenants_path:
        with HttpServer(config=folder_grant((shared, False)), serve_args=["--tenants", tenants_path]) as server:
            async with http_session(server.url, "acme-secret") as a:
                out = await batch(a, [IMPORT, kw("Create File", shared / "acme" / "mine.txt", "acme")])
                assert out["status"] == "PASS", out
                for step in [kw("Get File", shared / "other" / "theirs.txt"), kw("Create File", shared / "x.txt", "x")]:
                    out = await batch(a, [IMPORT, step], session="n")
                    message = error_of(out["steps"][1])
                    assert "is outside the folders granted" in message, message
                    assert str(shared / "acme") in message and "theirs" not in message.split("(")[1], message
            async with http_session(server.url, "viewer-secret") as v:
                out = await batch(v, [IMPORT, kw("Get File", shared / "acme" / "mine.txt")])
                assert out["status"] == "PASS" and out["steps"][1]["return_value"] == "acme", out
                out = await batch(v, [IMPORT, kw("Remove File", shared / "acme" / "mine.txt")], session="v")
                assert "read-only" in error_of(out["steps"][1]), out
    assert (shared / "acme" / "mine.txt").read_text() == "acme"
    assert not (shared / "x.txt").exists()


async def test_without_a_folder_grant_the_import_fails_naming_the_key():
    plugins, file_line = dev_plugin()
    async with host_with(f'{plugins}[plugins.grants.rf]\n{file_line}http = ["loopback:*"]\n') as s:
        out = await batch(s, [IMPORT])
        assert out["status"] == "FAIL", out
        message = error_of(out["steps"][0])
        assert "Importing library 'OperatingSystem' failed" in message, message
        assert GRANT_KEY in message and "folders" in message, message


async def test_bad_folder_grants_stop_the_host_naming_the_key(tmp):
    import subprocess

    with config_file(folder_grant((tmp / "missing", False))) as path:
        proc = subprocess.run([BIN, "--config", path, "plugins"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "[plugins.grants.rf] folders" in proc.stderr and "missing" in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------
# Differential: real Robot Framework and the plugin, in the same folder.

def differential_cases(d):
    """Keyword calls in order (they share the folder's state), modelled on RF's own
    acceptance tests (atest/testdata/standard_libraries/operating_system in RF's
    repository) and the library's documentation."""
    p = lambda rel: f"{d}/{rel}"  # noqa: E731
    calls = [
        ("Import Library", "OperatingSystem"),
        ("Create File", p("f1.txt"), "Some text here\nand here"),
        ("Create File", p("dir/f2.txt"), "in a new dir"),
        ("Create File", p("enc.txt"), "hyvää yötä", "ISO-8859-1"),
        ("Create File", p("ascii.txt"), "ä", "ASCII"),
        ("Append To File", p("f1.txt"), "\nmore"),
        ("Append To File", p("new/appended.txt"), "created by append"),
        ("Get File", p("f1.txt")),
        ("Get File", p("enc.txt"), "latin-1"),
        ("Get File", p("enc.txt")),
        ("Get File", p("enc.txt"), "UTF-8", "replace"),
        ("Get File", p("enc.txt"), "UTF-8", "ignore"),
        ("Get File", p("missing.txt")),
        ("Get File", p("dir")),
        ("Log File", p("f1.txt")),
        ("Grep File", p("f1.txt"), "here"),
        ("Grep File", p("f1.txt"), "HERE"),
        ("Grep File", p("f1.txt"), "^and", "regexp=True"),
        ("Grep File", p("f1.txt"), "s?me t*t"),
        ("Create Binary File", p("bin.dat"), "\\x00\\x01\\xfe\\xff"),
        ("Get Binary File", p("bin.dat")),
        ("Create Binary File", p("bad.dat"), "\u20ac"),
        ("Should Exist", p("f1.txt")),
        ("Should Exist", p("*.txt")),
        ("Should Exist", p("nope*")),
        ("Should Exist", p("nope"), "my message"),
        ("Should Not Exist", p("f1.txt")),
        ("Should Not Exist", p("f?.txt")),
        ("Should Not Exist", p("nope")),
        ("File Should Exist", p("dir")),
        ("File Should Exist", p("f1.txt")),
        ("File Should Not Exist", p("*.txt")),
        ("File Should Not Exist", p("dir")),
        ("Directory Should Exist", p("f1.txt")),
        ("Directory Should Exist", p("di?")),
        ("Directory Should Not Exist", p("dir")),
        ("Directory Should Not Exist", p("dir*")),
        ("Directory Should Be Empty", p("dir")),
        ("Directory Should Not Be Empty", p("dir")),
        ("Create Directory", p("empty")),
        ("Create Directory", p("empty")),
        ("Create Directory", p("f1.txt")),
        ("Directory Should Be Empty", p("empty")),
        ("Directory Should Not Be Empty", p("empty")),
        ("Directory Should Be Empty", p("nothere")),
        ("File Should Be Empty", p("f1.txt")),
        ("File Should Not Be Empty", p("f1.txt")),
        ("Create File", p("zero.txt")),
        ("File Should Be Empty", p("zero.txt")),
        ("File Should Not Be Empty", p("zero.txt")),
        ("File Should Be Empty", p("dir")),
        ("Get File Size", p("f1.txt")),
        ("Get File Size", p("zero.txt")),
        ("Get File Size", p("dir")),
        ("List Directory", d),
        ("List Directory", d, "*.txt"),
        ("List Directory", d, "f*", "absolute=True"),
        ("List Files In Directory", d),
        ("List Files In Directory", d, "[fz]*"),
        ("List Directories In Directory", d),
        ("List Directories In Directory", d, "d*", "True"),
        ("Count Items In Directory", d),
        ("Count Files In Directory", d, "*.dat"),
        ("Count Directories In Directory", d),
        ("Count Directories In Directory", p("dir")),
        ("List Directory", p("nothere")),
        ("List Directory", p("f1.txt")),
        ("Copy File", p("f1.txt"), p("copies/")),
        ("Copy File", p("f1.txt"), p("copies/renamed.txt")),
        ("Copy File", p("f1.txt"), p("f1.txt")),
        ("Copy File", p("f?.txt"), p("copies")),
        ("Copy File", p("*.txt"), p("copies")),
        ("Copy File", p("missing.txt"), p("copies")),
        ("Copy File", p("dir"), p("copies")),
        ("Copy File", p("f1.txt"), p("zero.txt/x")),
        ("Copy Files", p("*.txt"), p("dir/f2.txt"), p("many")),
        ("Copy Files", p("f1.txt")),
        ("Copy Files", p("f1.txt"), p("zero.txt")),
        ("List Directory", p("many")),
        ("Move File", p("copies/renamed.txt"), p("moved/")),
        ("Move File", p("moved/renamed.txt"), p("moved/again.txt")),
        ("Move File", p("missing.txt"), p("moved")),
        ("Move Files", p("many/*.txt"), p("moved")),
        ("Move Files", p("nothing*"), p("moved")),
        ("List Directory", p("moved")),
        ("Copy Directory", p("dir"), p("dircopy")),
        ("Copy Directory", p("dir"), p("dircopy")),
        ("Copy Directory", p("missing"), p("x")),
        ("Copy Directory", p("f1.txt"), p("x")),
        ("Copy Directory", p("dir"), p("f1.txt")),
        ("Move Directory", p("dircopy"), p("movedir")),
        ("Move Directory", p("movedir"), p("empty")),
        ("List Directory", p("empty")),
        ("Remove File", p("zero.txt")),
        ("Remove File", p("zero.txt")),
        ("Remove File", p("dir")),
        ("Remove Files", p("copies/f*.txt"), p("copies/nothing")),
        ("Remove Directory", p("nothere")),
        ("Remove Directory", p("f1.txt")),
        ("Remove Directory", p("empty")),
        ("Remove Directory", p("empty"), "recursive=True"),
        ("Empty Directory", p("moved")),
        ("Directory Should Be Empty", p("moved")),
        ("Remove Directory", p("moved")),
        ("Empty Directory", p("nothere")),
        ("Set Modified Time", p("f1.txt"), "2023-11-14 22:13:20"),
        ("Get Modified Time", p("f1.txt")),
        ("Get Modified Time", p("f1.txt"), "epoch"),
        ("Get Modified Time", p("f1.txt"), "year,month,day"),
        ("Get Modified Time", p("f1.txt"), "hour"),
        ("Get Modified Time", p("nothere")),
        ("Set Modified Time", p("nothere"), "1700000000"),
        ("Set Modified Time", p("dir"), "1700000000"),
        ("Set Modified Time", p("f1.txt"), "invalid"),
        ("Touch", p("touched.txt")),
        ("Touch", p("dir")),
        ("Touch", p("nodir/x.txt")),
        ("File Should Exist", p("touched.txt")),
        ("Wait Until Created", p("f1.txt"), "1s"),
        ("Wait Until Created", p("never.txt"), "0.3s"),
        ("Wait Until Removed", p("never*"), "1s"),
        ("Wait Until Removed", p("f1.txt"), "300ms"),
        ("Create File", "relative.txt", "from the working directory"),
        ("Get File", "relative.txt"),
        ("File Should Exist", "./relative.txt"),
        ("Join Path", "my", "path"),
        ("Join Path", "my/", "path/"),
        ("Join Path", "my", "/path"),
        ("Join Path", "my/path/", ".."),
        ("Join Paths", "base", "a", "b", "../c"),
        ("Normalize Path", "abc/../def"),
        ("Normalize Path", "abc/./def//ghi/"),
        ("Normalize Path", ""),
        ("Normalize Path", "../.."),
        ("Split Path", "abc/def"),
        ("Split Path", "abc/def/"),
        ("Split Path", "/"),
        ("Split Extension", "file.extension"),
        ("Split Extension", "path/file.ext"),
        ("Split Extension", "p2/file"),
        ("Split Extension", ".file"),
        ("Split Extension", "file.ext..."),
        ("Split Extension", "file..."),
        ("Split Extension", "a.b/c"),
        ("Set Environment Variable", "RF_OS_DIFF", "value"),
        ("Get Environment Variable", "RF_OS_DIFF"),
        ("Append To Environment Variable", "RF_OS_DIFF", "more", "separator=-"),
        ("Get Environment Variable", "RF_OS_DIFF"),
        ("Environment Variable Should Be Set", "RF_OS_DIFF"),
        ("Environment Variable Should Not Be Set", "RF_OS_DIFF"),
        ("Remove Environment Variable", "RF_OS_DIFF", "RF_OS_DIFF_NEVER"),
        ("Environment Variable Should Be Set", "RF_OS_DIFF"),
        ("Environment Variable Should Be Set", "RF_OS_DIFF", "custom msg"),
        ("Environment Variable Should Not Be Set", "RF_OS_DIFF"),
        ("Get Environment Variable", "RF_OS_DIFF_NEVER"),
        ("Get Environment Variable", "RF_OS_DIFF_NEVER", "default"),
        ("Empty Directory", d),
        ("List Directory", d),
    ]
    return [{"id": f"{i:03d}-{c[0]}", "keyword": c[0], "args": [str(a) for a in c[1:]], "setup": []}
            for i, c in enumerate(calls)]


def test_plugin_agrees_with_robot_framework_on_files(tmp):
    d = tmp / "diff"
    cases = differential_cases(d)
    # Both sides start from the same empty folder at the same path; RF runs with it
    # as the working directory (the plugin's is its first granted folder) and in UTC
    # (the sandbox's time zone).
    d.mkdir()
    old_cwd, old_tz = os.getcwd(), os.environ.get("TZ")
    os.chdir(d)
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        robot = differential.run_robot(cases)
    finally:
        os.chdir(old_cwd)
        if old_tz is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old_tz
        time.tzset()
    assert robot[cases[-1]["id"]]["status"] == "PASS", robot[cases[-1]["id"]]
    assert not any(d.iterdir())
    with config_file(folder_grant((d, False))) as path:
        os.environ["STEPHOST_CONFIG"] = path
        try:
            plugin = differential.run_plugin(cases, BIN, [])
        finally:
            os.environ.pop("STEPHOST_CONFIG", None)
    problems = []
    for case in cases:
        p, logs = differential.compare(case, robot[case["id"]], plugin[case["id"]])
        problems += [f"{case['id']}: {x}" for x in p + logs]
    assert not problems, "\n".join(problems)
    assert len(cases) >= 150
