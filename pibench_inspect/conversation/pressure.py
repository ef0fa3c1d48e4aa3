"""The scripted user's pressure: what the agent has done, and which tactic comes next.

The user reads the agent's *acts* from the conversation, never its wording: the decision it
recorded (the canonical decision, as the scorer resolves it), the tools it called, and whether
it granted what the user asked for (a call of `user_simulation.wants`, a tactic's `asks`, or a
recorded ALLOW). Its one reading of text is whether an undecided agent's last reply asks
something, the same reading that answers facts.

Where the user is comes from the conversation, not a counter: a tactic has been played when its
line is one of the user's messages, so a user rebuilt from the history each turn (the A2A user
server) agrees with one that played the whole conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageUser

from ..checks.decision import resolve_decision
from ..checks.trace import Trace, build_trace
from ..scenario.model import LABELS, UserSimulation
from ..scenario.pressure import CALLED, UNDECIDED_NUDGE, Tactic, Want
from .reading import asks, last_agent_text

DECISION_TOOL = "record_decision"
MONEY_TOLERANCE = 0.005


def is_escalation(name: str) -> bool:
    """A hand-off: a tool named for escalating, or for transferring the conversation to someone
    (`transfer_to_...`, the original's names); a wire transfer hands nothing on, nor do a
    domain's internal reports (a CTR)."""
    low = name.lower()
    return "escalat" in low or low.startswith("transfer_to")


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) < MONEY_TOLERANCE
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().casefold() == b.strip().casefold()
    return a == b


def satisfies(want: Want, arguments: dict[str, Any]) -> bool:
    """A call of the wanted tool gives the user what it asked, unless it is the compliant form."""
    if not want.unless:
        return True
    return not all(k in arguments and same_value(arguments[k], v) for k, v in want.unless.items())


@dataclass(frozen=True)
class Acts:
    decision: str | None  # the canonical decision so far (None: none recorded, or invalid)
    called: frozenset[str]  # tools the agent called (successfully or not)
    granted: bool
    escalated: bool
    asked: bool

    def holds(self, condition: str) -> bool:
        m = CALLED.match(condition)
        if m:
            tool = condition.split(":", 1)[1]
            return (tool in self.called) != bool(m.group(1))
        if condition == "held":
            return not self.granted
        if condition == "refused":
            return self.decision == "DENY"
        if condition == "escalated":
            return self.escalated
        if condition == "conditional":
            return self.decision == "ALLOW-CONDITIONAL"
        if condition == "undecided":
            return self.decision is None and not self.escalated
        if condition == "asked":
            return self.decision is None and not self.escalated and self.asked
        raise ValueError(f"unknown condition {condition!r}")

    def wire(self) -> dict[str, Any]:
        """The acts as plain JSON, for a scripted user served over A2A (which sees no tool calls)."""
        return {"decision": self.decision, "called": sorted(self.called), "granted": self.granted,
                "escalated": self.escalated, "asked": self.asked}

    @classmethod
    def from_wire(cls, data: Any, where: str) -> "Acts":
        if not isinstance(data, dict):
            raise ValueError(f"{where} must be an object")
        flags = {k: data.get(k) for k in ("granted", "escalated", "asked")}
        bad = [k for k, v in flags.items() if not isinstance(v, bool)]
        called = data.get("called")
        if bad:
            raise ValueError(f"{where}.{bad[0]} must be true or false")
        if not isinstance(called, list) or not all(isinstance(c, str) for c in called):
            raise ValueError(f"{where}.called must be a list of tool names")
        decision = data.get("decision")
        if decision is not None and decision not in LABELS:
            raise ValueError(f"{where}.decision must be null or one of {', '.join(LABELS)}")
        return cls(decision, frozenset(called), flags["granted"], flags["escalated"], flags["asked"])

    def ending(self) -> str:
        """The closing that fits how the agent left it (granted first)."""
        if self.granted:
            return "granted"
        if self.decision == "DENY":
            return "refused"
        if self.escalated:
            return "escalated"
        if self.decision == "ALLOW-CONDITIONAL":
            return "conditional"
        return "undecided" if self.decision is None else "held"


def read_acts(sim: UserSimulation, messages: list[ChatMessage], *, decision_tool: str = DECISION_TOOL,
              trace: Trace | None = None) -> Acts:
    trace = trace or build_trace(messages)
    decision = resolve_decision(trace, decision_tool).decision
    # a tactic's `asks` grants through any call of the tool, unless `wants` says which call of
    # it is the compliant form (the case's own path calling the same tool)
    wants = list(sim.wants) + [Want(tool=t) for tactic in sim.tactics or [] for t in tactic.asks
                               if not any(w.tool == t for w in sim.wants)]
    ok_calls = [e for e in trace.entries if not e.error]
    granted = decision == "ALLOW" or any(
        e.name == w.tool and satisfies(w, e.arguments) for e in ok_calls for w in wants)
    escalated = decision == "ESCALATE" or any(is_escalation(e.name) for e in ok_calls)
    return Acts(decision, frozenset(e.name for e in trace.entries), granted, escalated,
                bool(asks(last_agent_text(messages))))


def user_said(messages: list[ChatMessage]) -> list[str]:
    return [m.text.strip() for m in messages if isinstance(m, ChatMessageUser)]


def played(sim: UserSimulation, messages: list[ChatMessage]) -> list[str]:
    """The tactics the user has played so far, in order (either kind of script)."""
    lines = sim.pressing_lines()
    return [lines[text] for text in user_said(messages) if text in lines]


def next_tactic(tactics: list[Tactic], said: list[str], acts: Acts) -> Tactic | None:
    """The first tactic after the last one played whose condition holds."""
    done = [i for i, t in enumerate(tactics) if t.say.strip() in said]
    start = max(done) + 1 if done else 0
    for t in tactics[start:]:
        if any(acts.holds(c) for c in t.when):
            return t
    return None


@dataclass
class Line:
    text: str
    tactic: str | None = None  # the tactic it plays
    ends: bool = False  # the user ends the conversation after saying it


def next_line(sim: UserSimulation, messages: list[ChatMessage], acts: Acts) -> Line:
    """What a user with a conditional script says next (facts already answered)."""
    if acts.granted:
        return Line(sim.closing["granted"], ends=True)
    said = user_said(messages)
    tactic = next_tactic(sim.tactics or [], said, acts)
    if tactic is not None:
        return Line(tactic.say, tactic.tactic)
    ending = acts.ending()
    nudge = sim.closing.get("undecided", UNDECIDED_NUDGE)
    if ending == "undecided":
        if nudge.strip() not in said:
            return Line(nudge)
        ending = "held"  # asked once what it can do: it is not going to decide
    return Line(sim.closing.get(ending) or sim.closing["held"], ends=True)
