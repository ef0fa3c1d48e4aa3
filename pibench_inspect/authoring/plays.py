"""Built-in agents' plans played offline through the engine, memoized per case.

The validity gates, the mutation gate, the floor table and the tests replay the same plans; a
scenario object is immutable once loaded, and envelope siblings differ only in the user's words
(shared_case.py), so a play is computed once per case.
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
from .shared_case import case_key


# the built-in agents whose plan reads nothing the user says (the yielding ones do)
CASE_ONLY = frozenset({"oracle", "nothing", "deny_all", "escalate_all", "pushover"})


def _key(entry: Entry, agent: str) -> tuple[int, str, str]:
    """Per case (shared_case.case_key) for an agent whose plan does not read the user's words:
    envelope siblings share the play; per scenario object otherwise."""
    if agent in CASE_ONLY:
        return (id(entry.domain), case_key(entry), agent)
    return (id(entry.domain), f"scenario:{id(entry.scenario)}", agent)


def _mine(hit: tuple[Any, Any, Any] | None, entry: Entry, agent: str) -> bool:
    return hit is not None and hit[0] is entry.domain and (agent in CASE_ONLY or hit[1] is entry.scenario)


def play_agent(entry: Entry, agent: str) -> Evaluation:
    """Run a built-in agent's plan offline and evaluate it (NL tier not scored).

    Memoized per case (envelope siblings play the same calls against the same state and checks):
    validate, the floor table and the tests replay the same plans.
    """
    key = _key(entry, agent)
    hit = _PLAYED.get(key)
    if _mine(hit, entry, agent):
        return hit[2]
    ev = evaluate_run(entry, played_run(entry, agent))
    _PLAYED[key] = (entry.domain, entry.scenario, ev)
    return ev


_PLAYED: dict[tuple[int, str, str], tuple[Any, Any, Evaluation]] = {}
_RUNS: dict[tuple[int, str, str], tuple[Any, Any, OfflineRun]] = {}


def played_run(entry: Entry, agent: str) -> OfflineRun:
    """A built-in agent's plan played through the engine (memoized like play_agent)."""
    key = _key(entry, agent)
    hit = _RUNS.get(key)
    if _mine(hit, entry, agent):
        return hit[2]
    scripted = builtin_agent(agent, entry.domain, entry.scenario)
    run = play_calls(entry.scenario, entry.domain, scripted.plan, final_text=scripted.first_text)
    _RUNS[key] = (entry.domain, entry.scenario, run)
    return run


def solution_calls(run: OfflineRun) -> tuple[list[PlannedCall], str]:
    """A play's calls as the engine ran them (references to earlier results resolved), and its
    last reply: what the mutation and benign gates vary."""
    calls = [PlannedCall(name=c.function, arguments=dict(c.arguments))
             for m in run.messages if isinstance(m, ChatMessageAssistant) for c in (m.tool_calls or [])]
    texts = [m.text for m in run.messages if isinstance(m, ChatMessageAssistant) and m.text.strip()]
    return calls, texts[-1] if texts else ""


def evaluate_run(entry: Entry, run: OfflineRun, final: str = "") -> Evaluation:
    """A play's deterministic checks (NL tier not scored), with `final` as its last reply."""
    messages = run.messages + ([ChatMessageAssistant(content=final)] if final else [])
    return run_now(evaluate(entry.scenario, build_trace(messages), run.final_state, Termination.USER_STOP,
                            decision_tool=entry.domain.config.decision_tool))


def evaluate_calls(entry: Entry, calls: list[PlannedCall], final: str,
                   plays: dict[str, OfflineRun] | None = None) -> Evaluation:
    """`calls` played and evaluated with `final` as the last reply. `plays`: the scenario's plays
    so far by their calls (a play depends on its calls alone: the gates' variants often repeat the
    same calls with another final text), so each list of calls is played once."""
    key = repr([(c.name, c.arguments) for c in calls])
    run = plays.get(key) if plays is not None else None
    if run is None:
        run = play_calls(entry.scenario, entry.domain, calls)
        if plays is not None:
            plays[key] = run
    return evaluate_run(entry, run, final)
