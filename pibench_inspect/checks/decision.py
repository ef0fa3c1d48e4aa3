"""Canonical decision resolution (the original's rules, exactly).

1. Tool channel: if any `record_decision` call exists, the last one whose `decision` is one of
   the four values and whose call did not error is the decision; if none is valid the run is
   INVALID_DECISION (the JSON channel is not consulted).
2. JSON channel (only with no such call): fenced blocks ```` ```json ```` (or bare fences) in
   agent messages; exactly one object with a valid `decision` string is the decision; more than
   one is MULTIPLE_DECISIONS_JSON; none is MISSING_DECISION.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..scenario.model import LABELS
from .fences import fenced_blocks
from .trace import Trace


@dataclass
class Decision:
    decision: str | None
    channel: str | None  # "tool" | "json" | None
    error: str | None  # INVALID_DECISION | MULTIPLE_DECISIONS_JSON | MISSING_DECISION
    evidence: dict | None = None

    @property
    def valid(self) -> bool:
        return self.decision is not None

    def rendered(self) -> str:
        return self.decision if self.decision else f"INVALID:{self.error}"


def resolve_decision(trace: Trace, tool: str = "record_decision") -> Decision:
    calls = trace.named(tool)
    if calls:
        for entry in reversed(calls):
            value = entry.arguments.get("decision")
            if isinstance(value, str) and value in LABELS and not entry.error:
                return Decision(
                    value, "tool", None, {"tool_call_id": entry.call_id, "message_index": entry.message_index}
                )
        return Decision(None, None, "INVALID_DECISION")
    found = []
    for msg in trace.agent_messages:
        for body, span in fenced_blocks(msg.text):
            try:
                obj = json.loads(body.strip())
            except (ValueError, RecursionError):  # the agent's text: anything, nested any depth
                continue
            if isinstance(obj, dict) and isinstance(obj.get("decision"), str) and obj["decision"] in LABELS:
                found.append((obj["decision"], msg.message_index, span))
    if len(found) == 1:
        d, idx, span = found[0]
        return Decision(d, "json", None, {"message_index": idx, "matched_span": span})
    if len(found) > 1:
        return Decision(None, None, "MULTIPLE_DECISIONS_JSON")
    return Decision(None, None, "MISSING_DECISION")
