"""Tool-list sizes (issue 12): how many tools each `stephost serve --tools` profile
lists and how many characters their definitions take, next to Playwright MCP's.

    .venv/bin/python bench/tool_sizes.py [--no-playwright]

The measure is what a client puts in a model's context: the JSON of each tool in
`tools/list` (`tool.model_dump(by_alias=True, exclude_none=True)`), summed.
Every profile runs over stdio with `DISPLAY` removed, except that the
`desktop` profiles name desktop explicitly. Playwright MCP (`npx
@playwright/mcp@0.0.86 --executable-path /usr/bin/chromium --headless
--isolated`) is measured the same way; it is skipped when npx is missing or
fails.
"""

import argparse
import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[1]
BIN = os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost"))
PLAYWRIGHT_MCP = "@playwright/mcp@0.0.86"

# (label, serve arguments); the e2e test tests/e2e/test_tool_surface.py uses the same.
PROFILES = [
    ("default", []),
    ("--tools browser", ["--tools", "browser"]),
    ("--tools rf", ["--tools", "rf"]),
    ("--tools desktop", ["--tools", "desktop"]),
    ("--tools browser,desktop,rf,testkit", ["--tools", "browser,desktop,rf,testkit"]),
]


def tool_chars(tool):
    """Characters of one tool's definition as it goes over the wire."""
    return len(json.dumps(tool.model_dump(by_alias=True, exclude_none=True)))


def no_display_env(extra=None):
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env.setdefault("STEPHOST_LOG", "error")
    env.update(extra or {})
    return env


async def list_tools(command, args, env, timeout=120):
    """`tools/list` of the stdio MCP server `command args`."""
    params = StdioServerParameters(command=command, args=args, env=env)
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await asyncio.wait_for(session.initialize(), timeout)
                return (await asyncio.wait_for(session.list_tools(), timeout)).tools


async def stephost_profile(serve_args):
    return await list_tools(BIN, ["serve", *serve_args], no_display_env())


async def playwright_tools():
    """Playwright MCP's tools, or None (with the reason on stderr) when it cannot run."""
    npx = shutil.which("npx")
    if npx is None:
        print("playwright: npx not found; skipped", file=sys.stderr)
        return None
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    args = ["-y", PLAYWRIGHT_MCP, "--executable-path", chromium, "--headless", "--isolated"]
    try:
        return await list_tools(npx, args, no_display_env(), timeout=300)
    except Exception as e:  # any failure to fetch or start it only skips the comparison
        print(f"playwright: {PLAYWRIGHT_MCP} did not answer ({e!r}); skipped", file=sys.stderr)
        return None


def summary(tools):
    return len(tools), sum(tool_chars(t) for t in tools)


async def main(with_playwright):
    rows = []
    for label, serve_args in PROFILES:
        tools = await stephost_profile(serve_args)
        rows.append((f"stephost {label}", *summary(tools)))
    playwright = await playwright_tools() if with_playwright else None
    if playwright is not None:
        rows.append((f"Playwright MCP {PLAYWRIGHT_MCP.split('@')[-1]}", *summary(playwright)))
    width = max(len(r[0]) for r in rows)
    print(f"{'server':<{width}}  {'tools':>5}  {'chars':>8}  {'chars/tool':>10}")
    for name, count, chars in rows:
        print(f"{name:<{width}}  {count:>5}  {chars:>8}  {chars // max(count, 1):>10}")
    if playwright is not None:
        browser = next(r for r in rows if r[0] == "stephost --tools browser")
        pw_chars = rows[-1][2]
        print(f"\nstephost --tools browser / Playwright MCP: {browser[2] / pw_chars:.2f}x the characters")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-playwright", action="store_true", help="skip the Playwright MCP comparison")
    args = parser.parse_args()
    asyncio.run(main(not args.no_playwright))
