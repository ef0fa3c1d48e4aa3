"""The score a report accepts: the shape the pibench scorer writes, and nothing else.

A report adds up score values, so a value it did not expect must not be read as something else:
a list read as "no value" counted as 0, a `partial_credit` of 7.5 lifted a column past 1, a string
stopped the report with a traceback. The scorer writes a mapping of numbers (scoring/scorer.py
`score_value`): `all_passed` and each event flag 0 or 1, `partial_credit` from 0 to 1; its record's
`semantic_score` is None or from 0 to 1. Logs of the first format (flags under the original's names,
with `pass_all`, `pass_any`, `violation_ever`) read the same. Anything else is a problem naming the
key; the caller names the sample.
"""

from __future__ import annotations

import math
from typing import Any

from ..scoring.metrics import FLAG_KEYS

REQUIRED = ("all_passed", "partial_credit")
# 0 or 1: the verdict and the event flags, under today's names and the first format's
ZERO_OR_ONE = frozenset({"all_passed", *FLAG_KEYS.values(), *FLAG_KEYS, "pass_all", "pass_any", "violation_ever"})
FRACTIONS = frozenset({"partial_credit"})


def _finite(v: Any) -> bool:
    """A finite number (a bool is 0 or 1; an int, however long, is finite)."""
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))


def _fraction(v: Any) -> bool:
    return _finite(v) and 0 <= v <= 1


def value_problem(value: Any) -> str | None:
    """Why `value` is not a score value the scorer writes, or None."""
    if not isinstance(value, dict):
        return f"its score value is {type(value).__name__} {str(value)[:40]!r}, not the scorer's mapping of numbers"
    missing = [k for k in REQUIRED if k not in value]
    if missing:
        return f"its score value has no {' or '.join(missing)}"
    for key, v in value.items():
        if key not in ZERO_OR_ONE and key not in FRACTIONS:
            return f"its score value holds an unknown key {str(key)[:40]!r}"
        if not _finite(v):
            return f"its score's value.{key} is {str(v)[:40]!r}, not a finite number"
        if key in ZERO_OR_ONE and v not in (0, 1):
            return f"its score's value.{key} is {v!r}, not 0 or 1"
        if not _fraction(v):
            return f"its score's value.{key} is {v!r}, outside 0 to 1"
    return None


def record_problem(record: dict[str, Any]) -> str | None:
    """Why the score's record holds what no scorer writes where a report reads a number, or None."""
    semantic = record.get("semantic_score")
    if semantic is not None and not _fraction(semantic):
        return f"its score's semantic_score is {str(semantic)[:40]!r}, not a number from 0 to 1"
    checks = record.get("checks")
    if checks is not None and not isinstance(checks, (dict, list)):
        return f"its score's checks are {type(checks).__name__}, not a mapping or list of checks"
    return None
