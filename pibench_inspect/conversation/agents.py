"""The agent side of the conversation: the model under test, or a built-in reference agent.

An agent produces the next assistant message from the conversation so far. Built-in agents
need no model and make one tool call per message, then answer in text:

* `oracle` plays the scenario's `reference_solution` (then records its decision),
* `nothing` only talks,
* `deny_all` / `escalate_all` record DENY / ESCALATE straight away,
* `pushover` does what the user pushes for (`noncompliant_trajectory`) and records ALLOW,
* `yield1`, `yield2`, `yield3` play like `oracle` until the scripted user has played its K-th
  pressure tactic, then give in as `pushover` does: agents whose weakness is known, to show
  that the set measures pressure (an agent that holds scores as the oracle; one that yields
  after K pushes loses exactly the scenarios that press K times or more).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    GenerateConfig,
    Model,
)
from inspect_ai.tool import ToolCall, ToolDef

from ..domain.loader import Domain
from ..scenario.model import PlannedCall, Scenario, Solution, UserSimulation
from .arguments import fill_arguments, resolve_references
from .pressure import played
from .termination import agent_stopped

YIELDING = {"yield1": 1, "yield2": 2, "yield3": 3}
BUILTIN_AGENTS = ("oracle", "nothing", "deny_all", "escalate_all", "pushover", *YIELDING)
DONE_TEXT = "I have completed the required steps and recorded the decision."
NOTHING_TEXT = "Thank you for reaching out. I have noted your request."
LATER_TEXT = "Understood. Is there anything else?"
# what the oracle says to pressure once it has decided: it holds, and asks nothing back
HOLD_TEXT = "I understand this is frustrating, but what I explained stands."
YIELD_TEXT = "All right, you've convinced me. I've made an exception and gone ahead with what you asked."


class Agent(Protocol):
    name: str

    async def next(self, messages: list[ChatMessage], tools: list[ToolDef]) -> ChatMessageAssistant: ...


@dataclass
class ModelAgent:
    """The model under test (`--model`), called with the sample's tools."""

    model: Model
    config: GenerateConfig = field(default_factory=GenerateConfig)
    name: str = "model"

    async def next(self, messages: list[ChatMessage], tools: list[ToolDef]) -> ChatMessageAssistant:
        output = await self.model.generate(messages, tools=tools, config=self.config)
        stopped = agent_stopped(self.model, output)
        if stopped is not None:
            # an overflow or a refusal is no reply: the provider's text never enters the conversation
            raise stopped
        return output.message


@dataclass
class ScriptedAgent:
    """Plays a fixed list of calls, one per message, then answers in text."""

    name: str
    plan: list[PlannedCall]
    first_text: str = DONE_TEXT
    later_text: str = LATER_TEXT
    # for a derived plan: the checks it cannot satisfy, and why
    notes: list[str] = field(default_factory=list)
    _step: int = 0
    _texts: int = 0
    _call_ids: list[str] = field(default_factory=list)

    async def next(self, messages: list[ChatMessage], tools: list[ToolDef]) -> ChatMessageAssistant:
        if self._step < len(self.plan):
            planned = self.plan[self._step]
            results = [_result_of(messages, cid) for cid in self._call_ids]
            call_id = f"call_{self._step}"
            self._step += 1
            self._call_ids.append(call_id)
            call = ToolCall(
                id=call_id,
                function=planned.name,
                arguments=resolve_references(planned.arguments, results),
            )
            return ChatMessageAssistant(content="", tool_calls=[call], model=self.name)
        text = self.first_text if self._texts == 0 else self.later_text
        self._texts += 1
        return ChatMessageAssistant(content=text, model=self.name)


@dataclass
class YieldingAgent(ScriptedAgent):
    """`oracle` until the user has played `after` pressure tactics, then `pushover`: the
    remaining steps are skipped and what the user asked for is granted as stated."""

    after: int = 1
    sim: UserSimulation | None = None
    gives_in: list[PlannedCall] = field(default_factory=list)
    gives_in_text: str = YIELD_TEXT
    yielded: bool = False

    async def next(self, messages: list[ChatMessage], tools: list[ToolDef]) -> ChatMessageAssistant:
        if not self.yielded and self.sim is not None and len(played(self.sim, messages)) >= self.after:
            self.yielded = True
            self.plan = self.plan[: self._step] + self.gives_in
            self.first_text, self.later_text, self._texts = self.gives_in_text, LATER_TEXT, 0
        return await super().next(messages, tools)


def _result_of(messages: list[ChatMessage], call_id: str) -> Any:
    for m in reversed(messages):
        if isinstance(m, ChatMessageTool) and m.tool_call_id == call_id:
            if m.error:
                return None
            try:
                return json.loads(m.text)
            except (json.JSONDecodeError, TypeError):
                return m.text
    return None


def decision_call(domain: Domain, scenario: Scenario, decision: str) -> list[PlannedCall]:
    """A call recording `decision`, or nothing when the decision tool is not offered."""
    tool = domain.tool_index.get(domain.config.decision_tool)
    offered = scenario.available_tools is None or domain.config.decision_tool in scenario.available_tools
    if tool is None or not offered:
        return []
    return [PlannedCall(name=tool.name, arguments=fill_arguments(tool, {"decision": decision}))]


def play(solution: Solution | None, domain: Domain, scenario: Scenario, decision: str | None) -> list[PlannedCall]:
    calls = list(solution.tool_calls) if solution else []
    recorded = any(c.name == domain.config.decision_tool for c in calls)
    if decision and not recorded:
        calls += decision_call(domain, scenario, decision)
    return calls


def decision_fallback_text(decision: str, text: str = DONE_TEXT) -> str:
    """When no decision tool is offered, the JSON channel carries the decision."""
    return f"{text}\n\n```json\n{json.dumps({'decision': decision})}\n```"


def builtin_agent(name: str, domain: Domain, scenario: Scenario) -> ScriptedAgent:
    if name in YIELDING:
        return yielding_agent(name, domain, scenario)
    notes: list[str] = []
    if name == "nothing":
        return ScriptedAgent(name, [], first_text=NOTHING_TEXT)
    if name == "oracle":
        sol = scenario.reference_solution
        notes: list[str] = []
        if sol is None:
            from .derive import derive_solution, explain_unsatisfiable

            sol = derive_solution(scenario, domain)
            notes = explain_unsatisfiable(scenario, domain, sol)
        decision = sol.decision or scenario.expected
        plan = play(sol, domain, scenario, decision)
    elif name == "pushover":
        decision = "ALLOW"
        plan = play(scenario.noncompliant_trajectory, domain, scenario, decision)
    elif name in ("deny_all", "escalate_all"):
        decision = "DENY" if name == "deny_all" else "ESCALATE"
        plan = decision_call(domain, scenario, decision)
    else:
        raise ValueError(f"unknown agent {name!r} (built-in: {', '.join(BUILTIN_AGENTS)})")
    recorded = any(c.name == domain.config.decision_tool for c in plan)
    said = scenario.reference_solution.final_message if name == "oracle" and scenario.reference_solution else None
    first = said or DONE_TEXT
    if not recorded:
        first = decision_fallback_text(decision, first)
    if name == "oracle":
        return ScriptedAgent(name, plan, first_text=first, later_text=HOLD_TEXT, notes=notes)
    return ScriptedAgent(name, plan, first_text=first)


def yielding_agent(name: str, domain: Domain, scenario: Scenario) -> YieldingAgent:
    oracle = builtin_agent("oracle", domain, scenario)
    pushover = builtin_agent("pushover", domain, scenario)
    # what the user asked for, as stated: the pushed writes and the decision, not the lookups the
    # oracle's plan has already made (a replay of every read could outrun the step limit)
    reads = {t.name for t in domain.tools if t.kind == "read"}
    gives_in = [c for c in pushover.plan if c.name not in reads]
    return YieldingAgent(name, oracle.plan, first_text=oracle.first_text, later_text=oracle.later_text,
                         notes=oracle.notes,
                         after=YIELDING[name], sim=scenario.user_simulation, gives_in=gives_in,
                         gives_in_text=pushover.first_text.replace(DONE_TEXT, YIELD_TEXT))
