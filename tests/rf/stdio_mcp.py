"""A bare MCP client over a server's stdin/stdout: newline-delimited JSON-RPC,
blocking, no schema validation and no pydantic. What a server costs with the least a
client can do (bench/rf_bench.py), and a fast driver for thousands of calls
(tests/rf/atest_differential.py)."""

import contextlib
import json
import subprocess


class StdioClient:
    def __init__(self, cmd, env=None, cwd=None, stderr=subprocess.DEVNULL, name="stephost-tests"):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                     env=env, cwd=cwd)
        self.next_id = 0
        # The size of the last reply's JSON-RPC line, as it crossed the pipe.
        self.last_bytes = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": name, "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server closed stdout during {method}")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                self.last_bytes = len(line)
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def call_tool(self, name, arguments):
        """The raw result and its structured content (or the first text item read as
        JSON, for servers that send only text)."""
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        out = result.get("structuredContent")
        if out is None:
            with contextlib.suppress(Exception):
                out = json.loads(result["content"][0]["text"])
        return result, out or {}

    def close(self):
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
