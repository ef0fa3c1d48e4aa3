"""What generating a family may cost: its limits, and the checks that hold it to them.

A family file is data from whoever wrote it, and a small file can ask for a lot: 0.5 MB of
constraints and envelopes made 41,820 scenarios (1.8 GB of memory), an expression of a few
characters can ask for gigabytes (`'%01400000000d' % 0`), and slots that list an earlier slot
many times over (`[a, a, a]`, then `[b, b, b]`, ...) describe a value far larger than the memory
holding it. So every limit is checked before the work it bounds, or as the value is built:

* counts, in the family schema (`pibench schema --family`, its `maxItems` / `maxProperties` and
  `x-limits`), checked when the file loads: at most MAX_VARIANTS scenarios (cases x envelopes
  per case; the cases are all-met, the singles, every pair not kept apart and the combos, so
  at most 1 + 16 + 120 + 64 of them), MAX_ENVELOPES, MAX_APART, MAX_CONSTRAINTS, MAX_COMBOS, MAX_STEPS, MAX_SLOTS, MAX_CHOICES
  values in a `choice` / `sample` slot, MAX_ID_PATTERN characters in an `id` pattern;
* every value an expression or template computes is at most MAX_VALUE_BYTES as JSON, measured
  by a walk that stops as soon as it passes the limit (`json_size`), and all the values one
  generation computes together at most MAX_COMPUTED_BYTES;
* the files of one family together at most MAX_OUTPUT_BYTES, each within the scenario loader's
  own limit (scenario/reading.py MAX_FILE_BYTES), measured as each is made, before any is
  written;
* one family's generation ends within GENERATE_SECONDS (checked at every expression and every
  scenario).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Iterator

MAX_VARIANTS = 400  # scenarios of one family (cases x envelopes per case)
MAX_ENVELOPES = 32
MAX_CONSTRAINTS = 16
MAX_COMBOS = 64  # combinations listed in `combos` (the singles, all-met and pairs are not listed)
MAX_APART = 120  # pairs kept apart (every pair of MAX_CONSTRAINTS constraints)
MAX_STEPS = 64
MAX_SLOTS = 256
MAX_CHOICES = 1000  # values of a `choice` or `sample` slot
MAX_ID_PATTERN = 64  # characters of an `id` slot's pattern
MAX_VALUE_BYTES = 1_000_000  # one computed value, as JSON
MAX_OUTPUT_BYTES = 32 * 1024 * 1024  # every file of one family together
MAX_COMPUTED_BYTES = 4 * MAX_OUTPUT_BYTES  # every value one generation computes, together
GENERATE_SECONDS = 120.0

# the limits as the family schema names them (its top-level `x-limits`)
LIMITS = {
    "variants": MAX_VARIANTS, "envelopes": MAX_ENVELOPES, "constraints": MAX_CONSTRAINTS,
    "combos": MAX_COMBOS, "apart": MAX_APART, "steps": MAX_STEPS, "slots": MAX_SLOTS, "choices": MAX_CHOICES,
    "id_pattern_chars": MAX_ID_PATTERN, "value_bytes": MAX_VALUE_BYTES, "output_bytes": MAX_OUTPUT_BYTES,
    "computed_bytes": MAX_COMPUTED_BYTES, "generate_seconds": GENERATE_SECONDS,
}


class OverBudget(Exception):
    """Generation passed GENERATE_SECONDS or MAX_COMPUTED_BYTES. Not a ValueError: nothing on
    the way up mistakes it for one slot's or one field's error."""


def json_size(value: Any, limit: int) -> int:
    """A lower bound of the length of `value` dumped as indented JSON: every string, number,
    key, separator, line break and indentation counted, escapes not. Walked without recursion
    and stopped as soon as it passes `limit`, so a value that holds another many times over costs
    at most about `limit` steps, whatever size it describes."""
    total = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            total += len(v) + 2
        elif isinstance(v, dict):
            total += 2
            for k, x in v.items():
                total += len(str(k)) + 5 + 2 * depth  # "key": , line break and indentation
                if total > limit:
                    return total
                stack.append((x, depth + 1))
        elif isinstance(v, (list, tuple)):
            total += 2 + len(v) * (2 + 2 * depth)
            if total > limit:
                return total
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, bool) or v is None:
            total += 4
        elif isinstance(v, int):
            total += 1 + v.bit_length() * 3 // 10  # its digits, without making them
        else:
            total += len(repr(v))
        if total > limit:
            return total
    return total


@dataclass
class Budget:
    seconds: float
    deadline: float
    left: int  # bytes of computed values still allowed


_BUDGET: ContextVar[Budget | None] = ContextVar("pibench_family_budget", default=None)


@contextmanager
def budget(seconds: float | None = None, computed: int | None = None) -> Iterator[None]:
    """One generation's deadline (default GENERATE_SECONDS) and computed-bytes allowance
    (default MAX_COMPUTED_BYTES; see `charge`)."""
    seconds = GENERATE_SECONDS if seconds is None else seconds
    computed = MAX_COMPUTED_BYTES if computed is None else computed
    token = _BUDGET.set(Budget(seconds, time.monotonic() + seconds, computed))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def check_time() -> None:
    b = _BUDGET.get()
    if b is not None and time.monotonic() > b.deadline:
        raise OverBudget(f"generation ran past its deadline of {b.seconds:g} s (GENERATE_SECONDS)")


def charge(value: Any) -> int:
    """The size of a computed value (json_size), refused past MAX_VALUE_BYTES (ValueError) or
    past what the generation may still compute (OverBudget)."""
    check_time()
    b = _BUDGET.get()
    limit = MAX_VALUE_BYTES if b is None else min(MAX_VALUE_BYTES, b.left)
    size = json_size(value, limit)
    if size > MAX_VALUE_BYTES:
        raise ValueError(f"value larger than {MAX_VALUE_BYTES:,} characters as JSON (MAX_VALUE_BYTES)")
    if b is not None:
        if size > b.left:
            raise OverBudget("the family computes more values than it may in all (MAX_COMPUTED_BYTES, "
                             f"{MAX_COMPUTED_BYTES:,} bytes as JSON)")
        b.left -= size
    return size
