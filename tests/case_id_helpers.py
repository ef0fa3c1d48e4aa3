"""The shipped scenarios the case-id tests play, and what would name their case (issue 40, item 8):
tests/test_case_ids.py and the A2A path in tests/test_a2a_purple.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import shipped

CASE_ID = re.compile(r"^case-[0-9a-f]{12}$")
READS = ("lookup", "get", "search", "check", "verify", "list", "find")


def reads(scenario) -> list[dict]:
    """The reference solution's calls before its first write: what the state holds, unchanged."""
    out = []
    for c in (scenario.reference_solution.tool_calls if scenario.reference_solution else []):
        if not c.name.startswith(READS):
            break
        out.append({"name": c.name, "arguments": c.arguments})
    return out


def generated_and_hand_written(domain: str = "retail") -> tuple[str, str]:
    """A generated scenario (a baseline) and a hand-written one of the shipped set, each whose
    reference solution reads the state first: found, not named, so regenerating the set moves
    nothing."""
    entries = sorted((e for e in shipped().entries.values() if e.domain.name == domain and reads(e.scenario)),
                     key=lambda e: e.scenario.scenario_id)
    gen = next(e for e in entries if e.scenario.meta.family and e.scenario.meta.envelope == "baseline")
    hand = next(e for e in entries if not e.scenario.meta.family)
    return gen.scenario.scenario_id, hand.scenario.scenario_id


def id_fragments(sid: str) -> list[str]:
    """What would name the case: the id, its file's stem and folder, the family, family.combo,
    combo.envelope, and the combo itself unless it is ordinary vocabulary of the domain (a field
    or tool name: `mfa_enrolled` is a column of helpdesk's state, not a leak)."""
    entry = shipped().entries[sid]
    m = entry.scenario.meta
    out = [sid, Path(entry.path).stem]
    if m.family:
        out += [m.family, f"{m.family}.{m.combo}", f"{m.combo}.{m.envelope}", Path(entry.path).parent.name]
        vocabulary = (entry.domain.policy_text + json.dumps(entry.domain.seed_state, default=str)
                      + json.dumps([t.model_dump(mode="json") for t in entry.domain.tools], default=str)).lower()
        if m.combo and m.combo.lower() not in vocabulary:
            out.append(m.combo)
    return [f.lower() for f in out]


def assert_unnamed(seen: str, sid: str) -> None:
    text = seen.lower()
    leaked = [f for f in id_fragments(sid) if f in text]
    assert not leaked, f"the agent was told {leaked} of {sid}"
