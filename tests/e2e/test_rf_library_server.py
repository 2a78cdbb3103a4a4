"""The host's library server script (`host/runtime/src/capabilities/rf_library/server.py`)
checked against real Robot Framework's own Remote library client, with no stephost in
between: a `.robot` suite imports `Remote` at the server's URL and runs keywords of
RF's Process library and of a PyPI library through it, and real RF's output.xml says
what passed, what failed and with which message. If the script drifts from RF's remote
protocol, RF itself says so here.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from robot.api import ExecutionResult

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "host" / "runtime" / "src" / "capabilities" / "rf_library" / "server.py"
PYTHON = sys.executable

pytestmark = pytest.mark.timeout(180)


def start(name, *args, token="t0ken", cwd=None, pythonpath=None):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "STEPHOST_RF_LIBRARY": json.dumps({"name": name, "args": list(args)}),
        "STEPHOST_RF_TOKEN": token,
    }
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    proc = subprocess.Popen(
        [PYTHON, "-c", SCRIPT.read_text()],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    line = proc.stdout.readline()
    return proc, json.loads(line)


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def run_suite(tmp_path, text):
    suite = tmp_path / "suite.robot"
    suite.write_text(text)
    out = tmp_path / "out"
    subprocess.run(
        [PYTHON, "-m", "robot", "--output", "output.xml", "--log", "NONE", "--report", "NONE", "--outputdir", out, suite],
        capture_output=True,
        text=True,
        timeout=120,
    )
    result = ExecutionResult(str(out / "output.xml"))
    return {test.name: (test.status, test.message) for test in result.suite.all_tests}


def test_real_rf_runs_process_through_the_server(tmp_path):
    proc, ready = start("Process", cwd=tmp_path)
    try:
        assert ready["ready"]["name"] == "Process", ready
        url = f"http://127.0.0.1:{ready['ready']['port']}/t0ken"
        tests = run_suite(tmp_path, f"""
*** Settings ***
Library    Remote    {url}    AS    P

*** Test Cases ***
Runs A Process
    ${{r}} =    P.Run Process    echo    hello    shell=False
    Should Be Equal    ${{r.stdout}}    hello
    Should Be Equal As Integers    ${{r.rc}}    0

Exit Codes Come Back
    ${{r}} =    P.Run Process    {PYTHON}    -c    import sys; sys.exit(4)
    Should Be Equal As Integers    ${{r.rc}}    4

Failure Message Is The Library's
    P.Process Should Be Running    no-such-handle

Wrong Argument Count Is RF's Error
    P.Get Process Result    a    b    c    d    e    f    g    h    i    j

Started Processes Are Managed
    ${{r}} =    P.Start Process    sleep    30    alias=s
    P.Process Should Be Running    s
    P.Terminate Process    s
    P.Process Should Be Stopped    s
""")
    finally:
        stop(proc)
    assert tests["Runs A Process"] == ("PASS", ""), tests
    assert tests["Exit Codes Come Back"][0] == "PASS", tests
    assert tests["Failure Message Is The Library's"] == ("FAIL", "Non-existing index or alias 'no-such-handle'."), tests
    status, message = tests["Wrong Argument Count Is RF's Error"]
    assert status == "FAIL" and message == "Keyword 'P.Get Process Result' expected 0 to 6 arguments, got 10.", tests
    assert tests["Started Processes Are Managed"] == ("PASS", ""), tests


def test_a_wrong_path_or_a_huge_body_is_refused(tmp_path):
    import urllib.error
    import urllib.request
    import xmlrpc.client

    proc, ready = start("Process", cwd=tmp_path)
    try:
        port = ready["ready"]["port"]
        assert xmlrpc.client.ServerProxy(f"http://127.0.0.1:{port}/t0ken").get_keyword_names()
        with pytest.raises(xmlrpc.client.ProtocolError) as e:
            xmlrpc.client.ServerProxy(f"http://127.0.0.1:{port}/other").get_keyword_names()
        assert e.value.errcode == 404
        # The remote interface's own stop is refused: only the host ends a server.
        assert xmlrpc.client.ServerProxy(f"http://127.0.0.1:{port}/t0ken").stop_remote_server() is False
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/t0ken",
            data=b"x",
            headers={"Content-Length": str(64 * 1024 * 1024), "Content-Type": "text/xml"},
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request, timeout=10)
        assert e.value.code == 413
        assert proc.poll() is None
    finally:
        stop(proc)


def test_import_failures_are_rf_messages(tmp_path):
    proc, ready = start("NoSuchLibraryHere")
    proc.wait(timeout=30)
    assert proc.returncode == 1
    assert ready["error"].startswith(
        "Importing library 'NoSuchLibraryHere' failed: ModuleNotFoundError: No module named 'NoSuchLibraryHere'"
    ), ready
    proc, ready = start("Process", "unexpected")
    proc.wait(timeout=30)
    assert ready["error"] == "Library 'Process' expected 0 arguments, got 1.", ready


def test_the_server_ends_what_the_library_started(tmp_path):
    proc, ready = start("Process", cwd=tmp_path)
    import xmlrpc.client

    url = f"http://127.0.0.1:{ready['ready']['port']}/t0ken"
    remote = xmlrpc.client.ServerProxy(url, allow_none=True)
    result = remote.run_keyword("Start Process", ["sleep", "300"], {})
    assert result["status"] == "PASS", result
    result = remote.run_keyword("Get Process Id", [], {})
    pid = int(result["return"])
    # Start Process puts the child in a session of its own, out of the server's group.
    assert os.getsid(pid) == pid
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            break
        if state == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"process {pid} that the library started outlived the server")
