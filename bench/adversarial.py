#!/usr/bin/env python3
"""The adversarial campaign of tests/e2e/test_adversarial.py (issue 39), run
outside pytest, optionally bigger, printing the per-attack table and writing
the figures as JSON for BENCHMARKS.md.

    STEPHOST_BIN=target/release/stephost .venv/bin/python bench/adversarial.py \\
        [--out adversarial.json] [--concurrency 24] [--min-seconds 3]

Exits 1 when any attack broke a criterion (the same criteria as the tests).
"""

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from hostile import Campaign, Setup, summary, write_results  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the figures as JSON here (default: $STEPHOST_ADVERSARIAL_OUT)")
    ap.add_argument("--concurrency", type=int, default=Setup.concurrency, help="attack calls in flight at once")
    ap.add_argument("--min-seconds", type=float, default=Setup.min_attack_s, help="least duration of one attack")
    ap.add_argument("--p99-floor-ms", type=float, default=Setup.p99_floor_s * 1000,
                    help="the victim's p99 may always grow by this much")
    args = ap.parse_args()
    setup = Setup(concurrency=args.concurrency, min_attack_s=args.min_seconds, p99_floor_s=args.p99_floor_ms / 1000)
    results = asyncio.run(Campaign(setup).run())
    path = write_results(results, args.out)
    print(summary(results))
    if path:
        print(f"figures written to {path}")
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
