"""What a scenario's gate plays depend on, as one key: envelope siblings share their plays.

A play is a list of calls played against the scenario's state and judged by its deterministic
checks; none of that reads what the user says (`user_simulation`) or the scenario's id and
labels (`meta`, `leaderboard`). So a generated case's envelope siblings, which differ in the
user's words alone, share their mutants' fate, their benign variants', the built-in agents'
plays and the oracle's run, and validate plays each once per case (issue 40).
"""

from __future__ import annotations

import json
from typing import Any

from ..scenario.catalog import Entry

CASE_FREE = frozenset({"meta", "leaderboard", "user_simulation"})
_KEYS: dict[int, tuple[Any, str]] = {}


def case_key(entry: Entry) -> str:
    """The scenario as far as its plays go: everything but its id and labels and the user's
    words (memoized per scenario object)."""
    hit = _KEYS.get(id(entry.scenario))
    if hit is not None and hit[0] is entry.scenario:
        return hit[1]
    doc = entry.scenario.model_dump(mode="json", exclude=set(CASE_FREE))
    key = json.dumps(doc, sort_keys=True, default=str)
    _KEYS[id(entry.scenario)] = (entry.scenario, key)
    return key
