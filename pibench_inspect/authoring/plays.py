"""Built-in agents' plans played offline through the engine, memoized per scenario object.

The validity gates, the mutation gate, the floor table and the tests replay the same plans; a
scenario object is immutable once loaded, so a play is computed once per object.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessageAssistant

from .._sync import run_now
from ..checks.evaluate import Evaluation, evaluate
from ..checks.trace import build_trace
from ..conversation.agents import builtin_agent
from ..conversation.offline import OfflineRun, play_calls
from ..conversation.termination import Termination
from ..scenario.catalog import Entry
from ..scenario.model import PlannedCall


def play_agent(entry: Entry, agent: str) -> Evaluation:
    """Run a built-in agent's plan offline and evaluate it (NL tier not scored).

    Memoized per scenario object: validate, the floor table and the tests replay the same plans.
    """
    key = (id(entry.scenario), id(entry.domain), agent)
    hit = _PLAYED.get(key)
    if hit is not None and hit[0] is entry.scenario:
        return hit[1]
    s, d = entry.scenario, entry.domain
    run = played_run(entry, agent)
    ev = run_now(evaluate(s, build_trace(run.messages), run.final_state, Termination.USER_STOP,
                           decision_tool=d.config.decision_tool))
    _PLAYED[key] = (entry.scenario, ev)
    return ev


_PLAYED: dict[tuple[int, int, str], tuple[Any, Evaluation]] = {}
_RUNS: dict[tuple[int, int, str], tuple[Any, OfflineRun]] = {}


def played_run(entry: Entry, agent: str) -> OfflineRun:
    """A built-in agent's plan played through the engine (memoized like play_agent)."""
    key = (id(entry.scenario), id(entry.domain), agent)
    hit = _RUNS.get(key)
    if hit is not None and hit[0] is entry.scenario:
        return hit[1]
    scripted = builtin_agent(agent, entry.domain, entry.scenario)
    run = play_calls(entry.scenario, entry.domain, scripted.plan, final_text=scripted.first_text)
    _RUNS[key] = (entry.scenario, run)
    return run


def solution_calls(run: OfflineRun) -> tuple[list[PlannedCall], str]:
    """A play's calls as the engine ran them (references to earlier results resolved), and its
    last reply: what the mutation and benign gates vary."""
    calls = [PlannedCall(name=c.function, arguments=dict(c.arguments))
             for m in run.messages if isinstance(m, ChatMessageAssistant) for c in (m.tool_calls or [])]
    texts = [m.text for m in run.messages if isinstance(m, ChatMessageAssistant) and m.text.strip()]
    return calls, texts[-1] if texts else ""
