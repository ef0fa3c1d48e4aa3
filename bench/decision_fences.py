"""Decision resolution on agent messages full of unterminated code fences (issue 17, item 9).

    python bench/decision_fences.py [--old-max 60000]

Prints seconds per message size for the fence scanner (checks/fences.py) and, up to --old-max
characters, for the original's regex (quadratic: each opening fence rescans the rest). Not run
by CI; no result is asserted.
"""

from __future__ import annotations

import argparse
import re
import time

from pibench_inspect.checks.fences import fenced_blocks

ORIGINAL = re.compile(r"```(?:json)?\s*\n(.*?)\n```", re.S)


def message(size: int) -> str:
    return 'ok\n```json\n{"decision": "DENY"}\n```\n' + "```json\na" * (size // 9)


def seconds(fn, text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old-max", type=int, default=60_000, help="largest size to time the old regex on")
    args = ap.parse_args()
    print(f"{'chars':>9}  {'scanner s':>10}  {'old regex s':>11}")
    for size in (10_000, 30_000, 60_000, 120_000, 240_000, 480_000, 960_000):
        text = message(size)
        new = seconds(lambda t: list(fenced_blocks(t)), text)
        old = seconds(lambda t: list(ORIGINAL.finditer(t)), text) if size <= args.old_max else None
        print(f"{size:>9}  {new:>10.4f}  {'-' if old is None else f'{old:.3f}':>11}")


if __name__ == "__main__":
    main()
