"""One real client of the Python MCP SDK 2.x (`mcp.client.client.Client`) against stephost.

Runs in its own venv (.venv-clients, tests/clients/requirements.txt), driven by
tests/e2e/test_clients.py:

    python_client.py --transport stdio --mode auto -- stephost serve --tools browser,rf,testkit
    python_client.py --transport http --mode legacy --url http://127.0.0.1:PORT/mcp [--token T [--auth oauth]]

`--mode` is the SDK's own `Client(mode=...)`: `auto` (probe `server/discover`,
fall back to `initialize`), `2026-07-28` (pinned, stateless) or `legacy` (the
2025 `initialize` handshake). It lists the tools, makes the calls of plan.json
and prints ONE JSON line: the negotiated version, what went over the wire
(each request's method and `_meta` version claim, the server's `initialize`
answer, the `MCP-Protocol-Version` headers over HTTP), the tool names and, per
call, `isError`, `structuredContent` and the text blocks (as text, never parsed).
Over HTTP the token goes in an `Authorization` header (`--auth header`), or is
the stored access token of the SDK's `OAuthClientProvider` (`--auth oauth`),
which on a 401 runs the SDK's OAuth discovery; its redirect handler only
records that it was asked to send a user to an authorization page.
A failure to connect or call is reported in `error` (exit status 0 all the
same, so the caller sees what happened); only a broken invocation exits 2.
"""

import argparse
import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata, OAuthToken

PLAN = json.loads((Path(__file__).parent / "plan.json").read_text())
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


class Wire:
    """What the client put on the wire and what the server answered to the handshake."""

    def __init__(self):
        self.requests = []  # [{"method", "version"}], `version` = the `_meta` claim or None
        self.methods = {}  # request id -> method
        self.initialize_result_version = None
        self.http_versions = []  # MCP-Protocol-Version of each POST (None when absent)
        self.http = []  # [{"method", "path", "status", "www_authenticate"}] of every HTTP exchange
        self.authorization_redirects = []  # URLs an OAuth flow wanted to send a user to

    def sent(self, message):
        raw = message.model_dump(mode="json", by_alias=True, exclude_none=True)
        if "method" in raw and "id" in raw:
            meta = (raw.get("params") or {}).get("_meta") or {}
            self.requests.append({"method": raw["method"], "version": meta.get(VERSION_KEY)})
            self.methods[raw["id"]] = raw["method"]

    def received(self, message):
        raw = message.model_dump(mode="json", by_alias=True, exclude_none=True)
        if self.methods.get(raw.get("id")) == "initialize" and "result" in raw:
            self.initialize_result_version = raw["result"].get("protocolVersion")

    async def on_http_request(self, request):
        if request.method == "POST":
            self.http_versions.append(request.headers.get("mcp-protocol-version"))

    async def on_http_response(self, response):
        self.http.append(
            {
                "method": response.request.method,
                "path": response.request.url.path,
                "status": response.status_code,
                "www_authenticate": response.headers.get("www-authenticate"),
            }
        )

    async def on_authorization_redirect(self, url):
        self.authorization_redirects.append(url)
        raise RuntimeError(f"the OAuth flow wanted a user at {url}")

    def report(self):
        return {
            "requests": self.requests,
            "initialize_result_version": self.initialize_result_version,
            "http_versions": self.http_versions,
            "http": self.http,
            "authorization_redirects": self.authorization_redirects,
        }


class _TapRead:
    def __init__(self, inner, wire):
        self._inner, self._wire = inner, wire

    def _seen(self, item):
        if hasattr(item, "message"):
            self._wire.received(item.message)
        return item

    async def receive(self):
        return self._seen(await self._inner.receive())

    def __aiter__(self):
        return self

    async def __anext__(self):
        return self._seen(await self._inner.__anext__())

    async def __aenter__(self):
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name):  # aclose, last_context, ...
        return getattr(self._inner, name)


class _TapWrite:
    def __init__(self, inner, wire):
        self._inner, self._wire = inner, wire

    async def send(self, item, /):
        self._wire.sent(item.message)
        await self._inner.send(item)

    async def __aenter__(self):
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class TapTransport:
    """A `Transport` around another one that shows every message to `wire`."""

    def __init__(self, inner, wire):
        self._inner, self._wire = inner, wire

    async def __aenter__(self):
        read, write = await self._inner.__aenter__()
        return _TapRead(read, self._wire), _TapWrite(write, self._wire)

    async def __aexit__(self, *exc):
        return await self._inner.__aexit__(*exc)


class MemoryTokens:
    """`TokenStorage` holding one access token and nothing else."""

    def __init__(self, token):
        self.tokens = OAuthToken(access_token=token, token_type="Bearer")
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def oauth_provider(url, token, wire):
    async def no_callback():
        raise RuntimeError("no authorization callback in a test")

    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/callback"], client_name="stephost-e2e"),
        storage=MemoryTokens(token),
        redirect_handler=wire.on_authorization_redirect,
        callback_handler=no_callback,
    )


def describe_error(exc):
    """Type and message of `exc` and of everything inside it (exception groups,
    causes), with any HTTP status found on the way."""
    seen, parts, statuses = set(), [], []
    stack = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        parts.append(f"{type(e).__name__}: {e}")
        response = getattr(e, "response", None)
        if getattr(response, "status_code", None) is not None:
            statuses.append(response.status_code)
            parts.append(f"WWW-Authenticate: {response.headers.get('www-authenticate')}")
        stack.extend(getattr(e, "exceptions", ()) or ())
        stack.extend([e.__cause__, e.__context__])
    return {"type": type(exc).__name__, "message": " | ".join(parts), "http_status": statuses}


def result_record(result):
    return {
        "is_error": result.is_error,
        "structured": result.structured_content,
        "text": [block.text for block in result.content if getattr(block, "type", None) == "text"],
    }


async def run(args, out):
    wire = Wire()
    if args.transport == "stdio":
        if not args.command:
            raise SystemExit("stdio needs the server command after --")
        # The whole environment (the SDK's default passes only a few variables),
        # so the server sees e.g. STEPHOST_CACHE_DIR, as with the TypeScript client.
        params = StdioServerParameters(command=args.command[0], args=args.command[1:], env=dict(os.environ))
        inner = stdio_client(params)
        http = None
    else:
        oauth = args.auth == "oauth" and args.token
        headers = {"Authorization": f"Bearer {args.token}"} if args.token and not oauth else None
        http = httpx2.AsyncClient(
            headers=headers,
            auth=oauth_provider(args.url, args.token, wire) if oauth else None,
            timeout=httpx2.Timeout(30, read=300),
            event_hooks={"request": [wire.on_http_request], "response": [wire.on_http_response]},
        )
        inner = streamable_http_client(args.url, http_client=http)
    try:
        async with Client(TapTransport(inner, wire), mode=args.mode, read_timeout_seconds=60) as client:
            out["protocol_version"] = client.protocol_version
            discover = client.session.discover_result
            out["discover_versions"] = list(discover.supported_versions) if discover is not None else None
            info = client.server_info
            out["server_name"] = info.name if info is not None else None
            out["tools"] = [tool.name for tool in (await client.list_tools()).tools]
            for call in PLAN["calls"]:
                out["calls"][call["name"]] = result_record(await client.call_tool(call["tool"], call["arguments"]))
    finally:
        out["wire"] = wire.report()
        if http is not None:
            await http.aclose()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("--mode", choices=["auto", "2026-07-28", "legacy"], required=True)
    parser.add_argument("--url", help="the server's /mcp URL (http)")
    parser.add_argument("--token", help="bearer token (http)")
    parser.add_argument("--auth", choices=["header", "oauth"], default="header", help="how the token is sent")
    parser.add_argument("command", nargs="*", help="the server command (stdio), after --")
    args = parser.parse_args()
    if args.transport == "http" and not args.url:
        parser.error("http needs --url")
    out = {
        "sdk": "python",
        "sdk_version": version("mcp"),
        "transport": args.transport,
        "mode": args.mode,
        "protocol_version": None,
        "discover_versions": None,
        "server_name": None,
        "tools": None,
        "calls": {},
        "wire": None,
        "error": None,
    }
    try:
        anyio.run(run, args, out)
    except Exception as e:  # reported, not raised: the test asserts on it
        out["error"] = describe_error(e)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
