"""Gates over scenario families: variants must differ, and no family may dominate the set.

A family's variants share a procedure, so they are not independent samples; what makes them
worth having is that each differs in what the agent sees (the user's words, the state). Two
variants an agent cannot tell apart measure the same thing twice.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict

from ..conversation.prompts import system_prompt
from ..environment.merge import initial_document
from ..scenario.catalog import Entry


def visible_fingerprint(entry: Entry) -> str:
    """A hash of everything the agent can see or be told, and the state it starts from."""
    s, d = entry.scenario, entry.domain
    sim = s.user_simulation
    seen = {
        "prompt": system_prompt(s, d),
        "user": [sim.persona, sim.known_facts, sim.goal, sim.initial_user_message, sim.pressure_script,
                 sim.user_lines(), [f.model_dump() for f in sim.facts]],
        "tools": s.available_tools,
        "state": initial_document(d.seed_state, s),
    }
    return hashlib.sha256(json.dumps(seen, sort_keys=True, default=str).encode()).hexdigest()


def indistinct_variants(entries: list[Entry]) -> list[str]:
    groups: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for e in entries:
        if e.scenario.meta.family:
            groups[(e.scenario.meta.family, visible_fingerprint(e))].append(e)
    return [
        f"{group[1].path}: family {family}: variant {group[1].scenario.scenario_id} is indistinguishable from "
        f"{group[0].scenario.scenario_id} (same agent-visible text and initial state); make the envelopes or "
        "the slot values differ"
        for (family, _), group in sorted(groups.items(), key=lambda kv: kv[0]) if len(group) > 1
    ]
