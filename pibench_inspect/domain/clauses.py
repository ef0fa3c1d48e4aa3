"""A domain's `clause_pattern`: compiled at load, matched against the policy with a time bound.

The pattern is domain data, and a regular expression can backtrack catastrophically (`(a+)+$`
takes years on a long policy). Python's `re` cannot be interrupted inside a match (no signal
reaches it), and telling safe patterns from catastrophic ones by their shape is unreliable, so
the match runs in a short-lived child interpreter that is killed after MATCH_SECONDS. The
result is exactly `re.findall`'s; the cost is one interpreter start per loaded domain (tens of
ms; Domain caches the ids), paid where clause ids are checked: `pibench validate`, and the static
checks a task runs once when it is built (never per sample).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

MATCH_SECONDS = 2.0
MAX_CLAUSE_PATTERN = 500

_CHILD = (
    "import json, re, sys\n"
    "pattern, text = json.load(sys.stdin)\n"
    "json.dump(re.findall(pattern, text), sys.stdout)\n"
)


class ClausePatternError(ValueError):
    """The pattern could not be matched against the policy in time."""


def check_pattern(pattern: str) -> str:
    """The pattern if it compiles; a ValueError that says why otherwise."""
    if len(pattern) > MAX_CLAUSE_PATTERN:
        raise ValueError(f"longer than {MAX_CLAUSE_PATTERN} characters")
    try:
        re.compile(pattern)
    except re.error as err:
        raise ValueError(f"invalid regular expression: {err}") from None
    return pattern


def find_clause_ids(pattern: str, text: str, *, seconds: float = MATCH_SECONDS) -> set[str]:
    """`set(re.findall(pattern, text))`, or ClausePatternError when it runs over `seconds`."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            input=json.dumps([pattern, text]),
            capture_output=True,
            text=True,
            timeout=seconds,
        )
    except subprocess.TimeoutExpired:
        raise ClausePatternError(
            f"matching it against the policy ran over {seconds:g} s (catastrophic backtracking, "
            "e.g. nested quantifiers like (a+)+); simplify the pattern"
        ) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ClausePatternError(f"matching it against the policy failed: {last}")
    # findall gives tuples for patterns with several groups; JSON carried them as lists
    return {tuple(m) if isinstance(m, list) else m for m in json.loads(done.stdout)}
