"""Desktop input and look costs (issue 14): look auto per call, and click pacing.

Usage (from the repository root, after `cargo build --release`):
    .venv/bin/python bench/desktop_look_bench.py [--runs 15] [--bin PATH ...]

Starts its own Xvfb (1280x800x24, no window manager) with the Tk test window,
the xterm recorder and a Tk entry whose caret blinks (250/250 ms), and runs
`stephost run` batches against it, one batch per binary (several `--bin` compare
builds, e.g. before and after a change). Every figure is the median of the
steps' own `time_ms` in the batch report (min, p90), so process start-up and
MCP are left out:

1. look auto (do_steps' final look: settle, compare, picture) after a step that
   changes nothing (`key shift` into the Tk window);
2. look auto after a click that changes the Tk window (its button: a counter);
3. look auto after `key shift` into the window whose caret blinks;
4. one `click` without a target, on the Tk window's empty corner, with the
   default pacing and with `[desktop]` pacing set to 0 (config file), and one
   with the Tk window as target.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from test_desktop import APPS, SYSTEM_PYTHON, TK_TITLE, Desktop  # noqa: E402

BLINK = "Bench Blink"


def stats(values):
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
    return f"{statistics.median(values):8.1f}  ({values[0]:.1f}, {p90:.1f})"


def run(binary, desktop, steps, config=None):
    batch = {"steps": steps, "timeout_ms": 600_000, "on_failure": "continue"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(batch, f)
    args = [binary, *(["--config", config] if config else []), "run", f.name]
    env = dict(desktop.env(), STEPHOST_LOG="error")
    env.setdefault("STEPHOST_CACHE_DIR", str(Path(tempfile.gettempdir()) / "stephost-e2e-cache"))
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900)
    os.unlink(f.name)
    if out.returncode == 3:
        return None  # the host refused the config (a build without the pacing keys)
    report = json.loads(out.stdout)
    return report["steps"]


def step(verb, **input):
    return {"plugin": "desktop", "verb": verb, "input": input}


def times(results, verb, every=1, offset=0):
    picked = [s for s in results if s["verb"] == verb][offset::every]
    bad = [s for s in picked if s["status"] != "passed"]
    assert not bad, bad[:2]
    return [s["time_ms"] for s in picked]


def main(runs, binaries):
    with Desktop("bare") as desktop:
        blink = desktop.spawn(SYSTEM_PYTHON, str(APPS / "tk_blink.py"), BLINK, "260x60+760+40")
        time.sleep(1.5)
        layout = desktop.tk_layout()
        wx, wy, ww, wh = layout["window"]
        bx, by = layout["button"]
        corner = (wx + ww - 15, wy + wh - 15)
        zero = Path(tempfile.mkdtemp()) / "zero.toml"
        zero.write_text("[desktop]\npointer_settle_ms = 0\nbutton_hold_ms = 0\nclick_interval_ms = 0\n")
        for binary in binaries:
            print(f"\n{binary}")
            print(f"{'what (ms per step, median (min, p90))':60} {'':>8}")
            run(binary, desktop, [step("activate", target=TK_TITLE)])
            quiet = [step("activate", target=TK_TITLE)]
            for _ in range(runs):
                quiet += [step("look_begin"), step("key", target=TK_TITLE, combo="shift"), step("look", mode="auto")]
            r = run(binary, desktop, quiet)
            print(f"{'look auto, nothing changed':60} {stats(times(r, 'look'))}")
            changing = []
            for _ in range(runs):
                changing += [step("look_begin"), step("click", target=TK_TITLE, x=bx, y=by), step("look", mode="auto")]
            r = run(binary, desktop, changing)
            looks = [s["value"] for s in r if s["verb"] == "look"]
            watched = [v["changed_area"] for v in looks if "blink_watch_ms" in v]
            print(f"{'look auto, the Tk window changed (picture attached)':60} {stats(times(r, 'look'))}  caret check on {len(watched)}/{len(looks)} {watched[:3]}")
            blinking = [step("activate", target=BLINK)]
            for _ in range(runs):
                blinking += [step("look_begin"), step("key", target=BLINK, combo="shift"), step("look", mode="auto")]
            r = run(binary, desktop, blinking)
            looks = [s for s in r if s["verb"] == "look"]
            changed = sum(1 for s in looks if s["value"].get("changed"))
            print(f"{'look auto, only a caret blinking in the acted-on window':60} {stats(times(r, 'look'))}  said changed: {changed}/{len(looks)}")
            clicks = [step("activate", target=TK_TITLE)] + [step("click", x=corner[0], y=corner[1]) for _ in range(runs * 2)]
            r = run(binary, desktop, clicks)
            print(f"{'click without target, default pacing':60} {stats(times(r, 'click'))}")
            r = run(binary, desktop, clicks, config=str(zero))
            zero_figure = stats(times(r, "click")) if r else "     n/a  (no [desktop] pacing keys)"
            print(f"{'click without target, pacing 0 (config)':60} {zero_figure}")
            targeted = [step("click", target=TK_TITLE, x=corner[0], y=corner[1]) for _ in range(runs * 2)]
            r = run(binary, desktop, targeted)
            print(f"{'click with target (resolve, expectation check), default pacing':60} {stats(times(r, 'click'))}")
        blink.terminate()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--bin", action="append", dest="binaries")
    args = parser.parse_args()
    binaries = args.binaries or [os.environ.get("STEPHOST_BIN", str(ROOT / "target" / "release" / "stephost"))]
    main(args.runs, binaries)
