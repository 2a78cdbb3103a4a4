"""Adversarial suite that covers every tool by construction (issue 39).

One shared `stephost serve --http --tenants` with two tenants: `attacker` (every
plugin, testkit and rf included) and `victim` (testkit and rf). The attacker
saves a few hostile saved batches, reads `tools/list` (built-ins, plugins,
saved batches: whatever is offered) and drives every tool with arguments
generated from its inputSchema alone (tests/e2e/hostile.py: largest sizes,
`${...}` fan-out through references and parameters, nesting at and past the
depth limit, backtracking bait, many steps, dry runs, traces and output.xml
switched on), 16 calls at a time; then fills its saved batches to the cap,
floods `tools/list`, and fills every session it may hold with an instance of
every plugin. Meanwhile a separate victim process (its own tenant and source
address) makes ordinary stateless calls: a testkit echo through `batch` and an
rf `execute_batch` of `Evaluate  1+1`.

The campaign runs once for the module; each test below is one criterion,
and its message names every attack that broke it:

- the server never aborts;
- every victim call succeeds;
- the server's RSS stays within the documented bound computed from the
  config (`hostile.rss_bounds`: host part <= idle baseline + sum over tenants of
  max_concurrent_batches x max_report_bytes x 4 + max_sessions x
  max_session_vars_bytes + 64 MiB of traces, + 16 requests x max_body_bytes x 2
  + 64 MiB; pool <= sum of max_sessions x plugins x memory_mib);
- the victim's p99 under attack stays within max(2 x quiet p99, quiet p99 +
  250 ms) per call kind. The floor is there because a 2-core machine running
  the server, the attacker's client and the victim is noisy; an attack that
  breaks only this is measured a second time, and fails only if it breaks it
  again (retries are for measurement noise, never for correctness);
- every attack call answers within its budget (the attacker's
  max_batch_timeout_ms + 10 s), with an answer within the report bound, and
  fails cleanly (no reset connection, no HTTP 5xx, no internal error), and
  leaves the server idle afterwards;
- every offered tool was attacked.

Set STEPHOST_ADVERSARIAL_OUT=FILE to keep the figures as JSON (BENCHMARKS.md).
No browser or desktop is started: the browser's executables point nowhere and
DISPLAY is unset, so those tools are attacked at the argument level.
"""

import asyncio
import json

import pytest

from hostile import Campaign, Setup, summary, write_results

pytestmark = [pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def campaign():
    def log(line):
        print(line, flush=True)

    # Attacks not started within 7 minutes are reported as not run (a failing
    # host makes every attack slower); a passing run takes about 2.5 minutes.
    results = asyncio.run(Campaign(Setup(time_budget_s=420), log=log).run())
    path = write_results(results)
    print(summary(results))
    if path:
        print(f"figures written to {path}")
    return results


def failing(results, predicate):
    rows = []
    for a in results["attacks"]:
        hits = [f for f in a["failures"] if predicate(f)]
        if hits:
            rows.append(f"{a['attack']}: " + "; ".join(hits))
    return rows


def test_the_server_never_aborts(campaign):
    rows = failing(campaign, lambda f: f.startswith("server died"))
    assert not rows, "\n".join(rows)


def test_every_victim_call_succeeds(campaign):
    rows = failing(campaign, lambda f: "victim call" in f)
    rows += [f"between attacks: {x['k']} call failed: {x['err'][:300]}" for x in campaign["victim_errors_between_attacks"]]
    assert not rows, "\n".join(rows)


def test_rss_stays_within_the_documented_bound(campaign):
    rows = failing(campaign, lambda f: " RSS " in f or f.startswith("host RSS") or f.startswith("peak RSS"))
    assert not rows, f"bound: {campaign['bounds']['formula']}\n" + "\n".join(rows)


def test_victim_p99_stays_within_twice_its_quiet_figure(campaign):
    rows = failing(campaign, lambda f: f.startswith("victim ") and " p99 " in f)
    assert not rows, f"quiet: {json.dumps(campaign['quiet'])}\n" + "\n".join(rows)


def test_attack_calls_end_cleanly_within_their_budget(campaign):
    rows = failing(campaign, lambda f: "budget" in f or "bound" in f and "answer" in f or "unclean" in f
                   or "left the server busy" in f)
    assert not rows, "\n".join(rows)


def test_every_offered_tool_was_attacked(campaign):
    if campaign["filters"]:
        pytest.skip(f"attacks filtered by {campaign['filters']}")
    assert not campaign["not_run"], f"not run within the time budget: {campaign['not_run']}"
    assert not campaign["tools_not_attacked"], campaign["tools_not_attacked"]
    for a in campaign["attacks"]:
        if a["attack"].startswith("tool:"):
            ran = [v for v in a["variants"].values() if set(v["kinds"]) - {"busy"}]
            assert ran, f"{a['attack']}: every call was refused as busy: {a['variants']}"
