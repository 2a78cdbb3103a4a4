"""The tool list a client puts in a model's context (issue 12): which tools each
`serve --tools` profile lists, aliases once, and how many characters they take.

The measure is the JSON of each tool in tools/list, summed; bench/tool_sizes.py
prints the same table beside Playwright MCP's. `--tools browser` is held to
Playwright MCP's list, as measured there.
"""

import json

import pytest

from conftest import server_env, stdio_session

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

# The target for the default list.
DEFAULT_MAX_CHARS = 40_000
# Playwright MCP 0.0.86's list as bench/tool_sizes.py measured it (25 tools; see
# BENCHMARKS.md): what a browser user would load instead, and the bound for
# `--tools browser`.
PLAYWRIGHT_MCP_CHARS = 22_210
BROWSER_MAX_CHARS = PLAYWRIGHT_MCP_CHARS

DESKTOP_BATCH = {"run_macro", "do_steps"}
BROWSER_BATCH = {"browser_batch"}
RF_BATCH = {"execute_batch", "execute_step", "resume_batch"}
# Verb tools of the desktop plugin (bare names) and their aliases, which are
# callable but listed once, under the original's name.
DESKTOP_VERBS = {"list_windows", "focus_window", "click", "type", "key", "screenshot", "wait_for"}
ALIASES = {"activate": "focus_window", "wait_until": "wait_for"}

PROFILES = {
    "default": [],
    "browser": ["--tools", "browser"],
    "rf": ["--tools", "rf"],
    "desktop": ["--tools", "desktop"],
    "all": ["--tools", "browser,desktop,rf,testkit"],
}

_measured = {}


def no_display_env():
    env = server_env()
    env.pop("DISPLAY", None)
    return env


def tool_chars(tool):
    return len(json.dumps(tool.model_dump(by_alias=True, exclude_none=True)))


async def tools_of(profile):
    """`tools/list` of a stdio server started with `PROFILES[profile]`, without DISPLAY."""
    if profile not in _measured:
        async with stdio_session(serve_args=PROFILES[profile], env=no_display_env()) as session:
            _measured[profile] = (await session.list_tools()).tools
    return _measured[profile]


def names(tools):
    return {t.name for t in tools}


def size(tools):
    return sum(tool_chars(t) for t in tools)


async def test_the_size_table():
    rows = [(p, await tools_of(p)) for p in PROFILES]
    print(f"\n{'profile':<10}{'tools':>7}{'chars':>10}")
    for profile, tools in rows:
        print(f"{profile:<10}{len(tools):>7}{size(tools):>10}")
    browser = size(await tools_of("browser"))
    print(
        f"--tools browser: {browser} chars vs Playwright MCP 0.0.86's {PLAYWRIGHT_MCP_CHARS}"
        f" ({browser / PLAYWRIGHT_MCP_CHARS:.2f}x)"
    )


async def test_default_serves_no_testkit_and_no_desktop_without_a_display():
    tools = await tools_of("default")
    listed = names(tools)
    assert "batch" in listed
    assert not any(n.startswith("testkit_") for n in listed), sorted(listed)
    assert not (listed & (DESKTOP_VERBS | DESKTOP_BATCH | set(ALIASES))), sorted(listed)
    assert BROWSER_BATCH | RF_BATCH <= listed, sorted(listed)
    assert size(tools) <= DEFAULT_MAX_CHARS, f"default list is {size(tools)} chars"


async def test_each_plugin_brings_its_verbs_and_its_batch_tools():
    browser = names(await tools_of("browser"))
    assert "batch" in browser and BROWSER_BATCH <= browser and "navigate" in browser
    assert not browser & (RF_BATCH | DESKTOP_BATCH | DESKTOP_VERBS), sorted(browser)
    rf = names(await tools_of("rf"))
    assert "batch" in rf and RF_BATCH <= rf and "rf_run_keyword" in rf
    assert not rf & (BROWSER_BATCH | DESKTOP_BATCH | {"navigate"}), sorted(rf)
    # Named, desktop is served even with no display (its calls then fail).
    desktop = names(await tools_of("desktop"))
    assert "batch" in desktop and DESKTOP_BATCH | DESKTOP_VERBS <= desktop, sorted(desktop)
    assert not desktop & (BROWSER_BATCH | RF_BATCH), sorted(desktop)
    every = names(await tools_of("all"))
    assert browser | rf | desktop <= every and "testkit_echo" in every


async def test_aliases_are_listed_once_and_still_callable():
    tools = await tools_of("all")
    listed = [t.name for t in tools]
    assert len(listed) == len(set(listed))
    for alias, original in ALIASES.items():
        assert original in listed and alias not in listed, (alias, original)
    async with stdio_session(serve_args=PROFILES["desktop"], env=no_display_env()) as session:
        # Called by its own name, the alias reaches the desktop plugin (which,
        # with no display, fails the step) rather than being an unknown tool.
        result = await session.call_tool("activate", {"title": "no such window"})
        assert result.isError
        assert "unknown tool" not in json.dumps(result.model_dump()), result


async def test_batch_still_runs_every_plugin_with_testkit_unlisted():
    async with stdio_session(env=no_display_env()) as session:
        listed = names((await session.list_tools()).tools)
        assert "testkit_echo" not in listed
        result = await session.call_tool("batch", {"steps": [{"plugin": "testkit", "verb": "echo", "input": {"value": 7}}]})
        assert not result.isError, result
        assert result.structuredContent["steps"][0]["value"] == 7


async def test_an_unknown_plugin_name_is_a_start_up_error():
    import subprocess

    from conftest import BIN

    p = subprocess.run(
        [BIN, "serve", "--tools", "browser,nosuch"], capture_output=True, text=True, timeout=60, env=no_display_env(), stdin=subprocess.DEVNULL
    )
    assert p.returncode != 0
    assert "`nosuch`" in p.stderr and "browser, desktop, rf, testkit" in p.stderr, p.stderr


async def test_browser_profile_is_no_bigger_than_playwright_mcp():
    assert size(await tools_of("browser")) <= BROWSER_MAX_CHARS
