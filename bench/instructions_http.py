"""Runs `BIN serve --http` under callgrind, sends N stateless 2026-07-28 `tools/call`
POSTs, stops it with SIGTERM and prints the instructions it executed (for
bench/instructions.sh)."""

import os
import re
import signal
import subprocess
import sys

import httpx

binary, n, config = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", binary, "--config", config, "serve", "--http", "127.0.0.1:0"]
proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
url = None
while url is None:
    line = proc.stderr.readline()
    if not line:
        sys.exit("the server did not start")
    found = re.search(r"at (http://\S+/mcp)", line)
    url = found and found.group(1)
headers = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "batch",
}
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
with httpx.Client(timeout=60) as client:
    for i in range(n):
        step = {"plugin": "testkit", "verb": "echo", "input": {"value": {"i": i, "s": "x" * 200}}}
        body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "batch", "arguments": {"steps": [step]}, "_meta": meta}}
        response = client.post(url, headers=headers, json=body)
        response.raise_for_status()
proc.send_signal(signal.SIGTERM)
err = proc.stderr.read()
proc.wait()
print(re.search(r"Collected : (\d+)", err).group(1))
