"""Disk in granted folders (issue 39, finding 5): a hostile tenant must not fill the
volume its folder shares with another tenant's.

One volume, a folder per tenant on it (as docs/deploy.md suggests), `stephost serve
--http` with a tenants file. The hostile tenant runs Robot Framework from its own folder:
a `WHILE` loop of `Append To File` in 64 KiB chunks, then a `FOR` loop creating small
files. Each is stopped at its quota (`limits.disk_bytes`, `limits.disk_files`, lowered
for that tenant) with a message naming the quota and its value, and the folder on disk
holds no more than the quota. The victim tenant, in its own folder on the same volume,
keeps creating files while the attack runs and after it.

When the test runs as root where mounting is allowed (as scripts/test.sh does), the
volume is a real 16 MiB tmpfs with 512 inodes: without the quotas the attack fills it
(25 MiB of appends, 600 files) and the victim's `Create File` fails. Elsewhere the
volume is a plain temporary folder and the test checks the quotas alone.

Last, the gap the quota cannot close: a process the host runs (RF's Process library)
writes past the quota; the host measures the folders again after that step, so the
tenant's next write in the sandbox is refused naming the quota.
"""

import asyncio
import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import HttpServer, config_file, host_with, http_session
from conftest import rf_batch, rf_step as kw, step_error as error_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

KIB = 1024
MIB = 1024 * KIB

HOSTILE_BYTES = 1 * MIB
HOSTILE_FILES = 64
HOST_BYTES = 4 * MIB
HOST_FILES = 200
CHUNK = 64 * KIB

IMPORT = kw("Import Library", "OperatingSystem")

# The hostile tenant's own keywords, kept in its own folder.
ATTACK = """\
*** Settings ***
Library    OperatingSystem

*** Keywords ***
Fill Up
    [Arguments]    ${path}    ${chunk}
    WHILE    True    limit=400
        Append To File    ${path}    ${chunk}
    END

Many Small Files
    [Arguments]    ${dir}    ${count}
    FOR    ${i}    IN RANGE    ${count}
        Create File    ${dir}/f${i}.txt    x
    END
"""


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


@contextlib.contextmanager
def small_volume():
    """A 16 MiB, 512-inode tmpfs when this process may mount one, else a plain
    temporary folder; yields (path, whether it is a real small volume)."""
    with tempfile.TemporaryDirectory(prefix="stephost-disk-") as tmp:
        path = Path(os.path.realpath(tmp)) / "volume"
        path.mkdir()
        mounted = False
        if os.geteuid() == 0:
            proc = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=16m,nr_inodes=512", "tmpfs", str(path)],
                capture_output=True,
                timeout=30,
            )
            mounted = proc.returncode == 0
        try:
            yield path, mounted
        finally:
            if mounted:
                subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


def host_config(volume):
    return f"""
[limits]
disk_bytes = {HOST_BYTES}
disk_files = {HOST_FILES}

[plugins.grants.rf]
http = ["loopback:*"]
folders = [{{ path = "{volume}", read_only = false }}]
"""


def tenants(volume):
    return f"""
[[tenants]]
id = "hostile"
token_sha256 = ["{sha('hostile-secret')}"]
[tenants.limits]
disk_bytes = {HOSTILE_BYTES}
disk_files = {HOSTILE_FILES}
[tenants.grants.rf]
http = ["loopback:*"]
folders = [{{ path = "{volume / 'hostile'}", read_only = false }}]

[[tenants]]
id = "victim"
token_sha256 = ["{sha('victim-secret')}"]
[tenants.grants.rf]
http = ["loopback:*"]
folders = [{{ path = "{volume / 'victim'}", read_only = false }}]
"""


def usage(folder):
    """(bytes of regular files, entries) below `folder`, as the quota counts them."""
    files = 0
    size = 0
    for root, dirs, names in os.walk(folder):
        files += len(dirs) + len(names)
        size += sum(os.lstat(os.path.join(root, n)).st_size for n in names)
    return size, files


async def victim_creates(v, folder, round_, size=64 * KIB):
    """The victim's ordinary work: a file of `size` bytes and a few small ones."""
    steps = [
        IMPORT,
        kw("Create File", folder / f"report-{round_}.txt", "v" * size),
        *(kw("Create File", folder / f"small-{round_}-{i}.txt", "ok") for i in range(3)),
        kw("Get File", folder / f"small-{round_}-0.txt"),
    ]
    out = await rf_batch(v, steps, f"victim-{round_}")
    assert out["status"] == "PASS", f"the victim's Create File failed: {out}"
    assert out["steps"][-1]["return_value"] == "ok"


async def test_a_hostile_tenant_is_stopped_at_its_disk_quota_and_the_victim_writes_on():
    with small_volume() as (volume, mounted):
        hostile, victim = volume / "hostile", volume / "victim"
        hostile.mkdir()
        victim.mkdir()
        (hostile / "attack.resource").write_text(ATTACK)
        with config_file(tenants(volume)) as tenants_path:
            with HttpServer(config=host_config(volume), serve_args=["--tenants", tenants_path]) as server:
                async with http_session(server.url, "hostile-secret") as h, http_session(server.url, "victim-secret") as v:
                    await victim_creates(v, victim, "before")

                    # WHILE + Append To File, 64 KiB a round, with the victim at work meanwhile.
                    started = time.monotonic()
                    attack = asyncio.ensure_future(
                        rf_batch(
                            h,
                            [
                                IMPORT,
                                kw("Import Resource", hostile / "attack.resource"),
                                kw("Fill Up", hostile / "big.txt", "x" * CHUNK),
                            ],
                            "fill",
                        )
                    )
                    await victim_creates(v, victim, "during")
                    out = await attack
                    elapsed = time.monotonic() - started
                    step = out["steps"][2]
                    message = error_of(step)
                    assert step["status"] == "FAIL", out
                    assert "Disk quota exceeded" in message, message
                    assert "1 MiB in granted folders (limits.disk_bytes) reached" in message, message
                    assert "Input/output error" not in message and "No space left" not in message, message
                    big = (hostile / "big.txt").stat().st_size
                    # Stopped at the quota, with the attack's own file counted: the guest
                    # writes in pieces, so the last append stops part way, never past it.
                    held = big + len(ATTACK)
                    assert HOSTILE_BYTES - CHUNK < held <= HOSTILE_BYTES, big
                    print(f"\nfill: stopped at {big} bytes ({big // CHUNK} appends) after {elapsed:.2f} s: {message}")

                    # Many small files.
                    started = time.monotonic()
                    out = await rf_batch(
                        h,
                        [
                            IMPORT,
                            kw("Import Resource", hostile / "attack.resource"),
                            kw("Create Directory", hostile / "many"),
                            kw("Many Small Files", hostile / "many", 600),
                        ],
                        "many",
                    )
                    elapsed = time.monotonic() - started
                    step = out["steps"][3]
                    message = error_of(step)
                    assert step["status"] == "FAIL", out
                    assert "Disk quota exceeded" in message, message
                    assert f"{HOSTILE_FILES} files in granted folders (limits.disk_files) reached" in message, message
                    size, entries = usage(hostile)
                    assert entries == HOSTILE_FILES, entries
                    assert size <= HOSTILE_BYTES, size
                    print(f"many: stopped at {entries} entries after {elapsed:.2f} s: {message}")

                    # The quota holds across sessions of the tenant and frees what is removed.
                    out = await rf_batch(h, [IMPORT, kw("Create File", hostile / "one-more.txt", "x")], "again")
                    assert "limits.disk_files" in error_of(out["steps"][1]), out
                    out = await rf_batch(
                        h,
                        [
                            IMPORT,
                            kw("Remove Directory", hostile / "many", "recursive=True"),
                            kw("Remove File", hostile / "big.txt"),
                            kw("Create File", hostile / "after.txt", "y" * (512 * KIB)),
                        ],
                        "freed",
                    )
                    assert out["status"] == "PASS", out

                    # The victim is unaffected: its own quota, its own folder, the same volume.
                    await victim_creates(v, victim, "after", size=2 * MIB)
        assert (victim / "report-after.txt").stat().st_size == 2 * MIB
        print(f"volume: {'16 MiB tmpfs, 512 inodes' if mounted else 'plain folder'}; hostile holds {usage(hostile)}")


async def test_what_a_host_run_process_writes_is_charged_after_its_step(tmp_path):
    """Process (a library the host runs, outside the sandbox) writes past the quota: the
    write itself cannot be stopped, but the folders are measured again after the step,
    so the tenant's next write in the sandbox is refused, and removing the file frees it."""
    folder = Path(os.path.realpath(tmp_path)) / "data"
    folder.mkdir()
    config = f"""
[limits]
disk_bytes = {MIB}
disk_files = 100

[plugins.grants.rf]
http = ["loopback:*"]
folders = [{{ path = "{folder}", read_only = false }}]

[plugins.grants.rf.rf_libraries]
python = "{sys.executable}"
libraries = ["Process"]
"""
    async with host_with(config) as s:
        out = await rf_batch(
            s,
            [
                kw("Import Library", "Process"),
                kw("Run Process", "/bin/sh", "-c", f"head -c {2 * MIB} /dev/zero > {folder / 'outside.bin'}"),
                IMPORT,
                kw("Create File", folder / "inside.txt", "x"),
            ],
            "process",
        )
        steps = out["steps"]
        assert [st["status"] for st in steps[:3]] == ["PASS", "PASS", "PASS"], out
        message = error_of(steps[3])
        assert steps[3]["status"] == "FAIL", out
        assert "Disk quota exceeded" in message, message
        assert "1 MiB in granted folders (limits.disk_bytes) reached (2 MiB used)" in message, message
        assert not (folder / "inside.txt").exists()
        out = await rf_batch(
            s,
            [IMPORT, kw("Remove File", folder / "outside.bin"), kw("Create File", folder / "inside.txt", "x")],
            "process",
        )
        assert out["status"] == "PASS", out
    assert (folder / "inside.txt").read_text() == "x"
