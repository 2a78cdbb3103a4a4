#!/usr/bin/env python3
"""Bytes of tool results as a client receives them (the JSON-RPC response line
over stdio), split into the text content a model reads and the structured
content: a 200-step execute_batch, a 200-step batch and a read_page of a page
with 60 controls.

Usage: bench/result_size.py [--rf-mcp PYTHON] BIN [BIN...]
  BIN: stephost binaries (e.g. before and after a change), each measured in the
  same run. --rf-mcp: also the same execute_batch through rf-mcp (`PYTHON -m
  robotmcp.entry`, e.g. .venv-rfmcp/bin/python from bench/rf_bench.py)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PAGE = "data:text/html," + "".join(
    f"<p>Row {i}</p><label>Field {i} <input name=f{i}></label><button>Save {i}</button>" for i in range(20)
)

RF_STEPS = []
for i in range(50):
    RF_STEPS += [
        {"keyword": "Set Variable", "args": [f"value {i}"]},
        {"keyword": "Create List", "args": ["a", "b", f"c{i}"]},
        {"keyword": "Catenate", "args": ["SEPARATOR=-", "x", f"{i}"]},
        {"keyword": "Should Be Equal", "args": [f"value {i}", f"value {i}"]},
    ]

CALLS = [
    ("execute_batch, 200 steps", "execute_batch", {"session_id": "bench", "steps": RF_STEPS}),
    (
        "batch, 200 echo steps",
        "batch",
        {"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": {"n": i, "word": f"w{i}"}}} for i in range(200)]},
    ),
    ("read_page, 60 controls", "read_page", {"session_id": "page", "tabId": 1}),
]


class Stdio:
    """A bare newline-delimited JSON-RPC client: the bytes counted are the
    response line exactly as the server wrote it."""

    def __init__(self, command, cwd=None):
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=cwd
        )
        self.ids = iter(range(1, 1_000_000))
        self.send("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        self.send("notifications/initialized", notify=True)

    def send(self, method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            msg["id"] = next(self.ids)
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        if notify:
            return None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server closed stdout during {method}")
            reply = json.loads(line)
            if reply.get("id") == msg["id"]:
                return line, reply

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def row(label, line, reply):
    result = reply["result"]
    text = sum(len(c.get("text", "")) for c in result["content"] if c["type"] == "text")
    structured = len(json.dumps(result.get("structuredContent"), separators=(",", ":")))
    return (label, len(line.encode()), text, structured, result.get("isError"))


def measure_rf_mcp(python):
    # Why a scratch directory: rf-mcp writes a long batch's steps to
    # `.robotmcp_artifacts/` under its working directory and answers with a
    # digest and the file's name instead.
    scratch = tempfile.mkdtemp(prefix="rf-mcp-")
    client = Stdio([os.path.abspath(python), "-m", "robotmcp.entry"], cwd=scratch)
    try:
        client.send("tools/call", {"name": "manage_session", "arguments": {
            "action": "init", "session_id": "bench", "libraries": ["BuiltIn", "String", "Collections"]}})
        line, reply = client.send("tools/call", {"name": "execute_batch", "arguments": {"session_id": "bench", "steps": RF_STEPS}})
        saved = sum(p.stat().st_size for p in Path(scratch).rglob("*") if p.is_file())
        return [row(f"execute_batch, 200 steps (+{saved:,} bytes of steps saved to a file)", line, reply)]
    finally:
        client.close()
        shutil.rmtree(scratch, ignore_errors=True)


def measure(binary):
    client = Stdio([binary, "serve", "--tools", "browser,rf,testkit"])
    send = client.send
    # The page tab: a session with one tab on the generated page.
    send("tools/call", {"name": "tabs_create", "arguments": {"session_id": "page", "url": PAGE}})
    _, tabs = send("tools/call", {"name": "tabs_context", "arguments": {"session_id": "page"}})
    tab = tabs["result"]["structuredContent"]["value"]["tabs"][-1]["tabId"]
    rows = []
    for label, tool, args in CALLS:
        if tool == "read_page":
            args = dict(args, tabId=tab)
        line, reply = send("tools/call", {"name": tool, "arguments": args})
        rows.append(row(label, line, reply))
    client.close()
    return rows


def main():
    args = sys.argv[1:]
    rf_mcp = None
    if args[:1] == ["--rf-mcp"]:
        rf_mcp, args = args[1], args[2:]
    runs = [(binary, measure(binary)) for binary in args or ["target/release/stephost"]]
    if rf_mcp:
        runs.append(("rf-mcp 0.36", measure_rf_mcp(rf_mcp)))
    print("| server | result | response bytes | text chars | structured bytes |")
    print("|---|---|---:|---:|---:|")
    for server, rows in runs:
        for label, total, text, structured, is_error in rows:
            flag = " (error)" if is_error else ""
            print(f"| {server} | {label}{flag} | {total:,} | {text:,} | {structured:,} |")


if __name__ == "__main__":
    main()
