"""Derive a reference solution from a scenario's deterministic checks (for scenarios without one).

The plan follows the checks: every required call with the arguments the checks demand, ordered
by the ordering checks, never a forbidden tool, and the label recorded last (this is the plan
the shared sample's `gold` agent uses). Because live runs validate arguments, any other
required parameter is filled from the scenario's state where a field of that name exists.
`explain_unsatisfiable` plays the plan through the engine and names the checks it still fails.
"""

from __future__ import annotations

import re
from typing import Any

from .._sync import run_sync
from ..checks.evaluate import evaluate
from ..checks.trace import build_trace
from ..domain.loader import Domain
from ..environment.merge import domain_document
from ..scenario import model as m
from .arguments import fill_arguments
from .termination import Termination

HELD_PATH = re.compile(r"^activity\.pending_requests\[request_id=([^\]]+)\]\.status$")


def _want(plan: dict[str, list[dict[str, Any]]], order: list[str], tool: str) -> list[dict[str, Any]]:
    if tool not in plan:
        plan[tool] = []
        order.append(tool)
    return plan[tool]


def _merge(calls: list[dict[str, Any]], args: dict[str, Any]) -> None:
    for call in calls:
        if all(call.get(k, v) == v for k, v in args.items()):
            call.update(args)
            return
    calls.append(dict(args))


def _topological(order: list[str], edges: list[tuple[str, str]], last: str) -> list[str]:
    """Ready tools in first-wanted order, the decision tool after every other ready tool."""
    remaining = list(order)
    out: list[str] = []
    while remaining:
        ready = [t for t in remaining if not any(b == t and a in remaining and a != t for a, b in edges)]
        if not ready:  # a cycle: keep wanted order for the rest
            ready = remaining[:]
        pick = next((t for t in ready if t != last), ready[0])
        out.append(pick)
        remaining.remove(pick)
    return out


def _first_value(doc: Any, key: str) -> Any:
    """The first scalar stored under `key` anywhere in the state (document order)."""
    if isinstance(doc, dict):
        if isinstance(doc.get(key), (str, int, float)) and not isinstance(doc.get(key), bool):
            return doc[key]
        children = doc.values()
    elif isinstance(doc, list):
        children = doc
    else:
        return None
    for child in children:
        found = _first_value(child, key)
        if found is not None:
            return found
    return None


def _fill_required(domain: Domain, tool: str, args: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    spec = domain.tool_index.get(tool)
    return fill_arguments(spec, args, lambda name: _first_value(doc, name)) if spec else args


def derive_solution(scenario: m.Scenario, domain: Domain) -> m.Solution:
    label = scenario.expected
    decision_tool = domain.config.decision_tool
    checks = scenario.criteria.policy_checks
    forbidden = {c.tool_name for c in checks if isinstance(c, m.ToolNotCalled)}
    plan: dict[str, list[dict[str, Any]]] = {}
    order: list[str] = []
    edges: list[tuple[str, str]] = []
    for c in checks:
        if isinstance(c, m.ToolCalled) and c.tool_name not in forbidden:
            calls = _want(plan, order, c.tool_name)
            if not calls:
                calls.append({})
        elif isinstance(c, m.ToolCalledWith) and c.tool_name not in forbidden:
            _merge(_want(plan, order, c.tool_name), c.expected_arguments())
        elif isinstance(c, m.ToolCalledMinTimes) and c.tool_name not in forbidden:
            calls = _want(plan, order, c.tool_name)
            while len(calls) < c.min_times:
                calls.append({})
        elif isinstance(c, m.ToolBeforeTool):
            edges.append((c.before, c.after))
            for t in (c.before, c.after):
                if t not in forbidden:
                    calls = _want(plan, order, t)
                    if not calls:
                        calls.append({})
    if "STATE_FIELD" in scenario.criteria.reward_basis:
        for sc in scenario.criteria.state_field_checks:
            hit = HELD_PATH.match(sc.field_path)
            if hit and sc.equals == "held" and "hold_transaction" not in forbidden:
                _merge(_want(plan, order, "hold_transaction"), {"request_id": hit.group(1)})
    for call in plan.get("hold_transaction", []):
        call.setdefault("reason", "compliance_review")
    decisions = _want(plan, order, decision_tool)
    if not decisions:
        decisions.append({})
    decision_props = domain.tool_index[decision_tool].schema.get("properties", {}) if decision_tool in domain.tool_index else {}
    for call in decisions:
        call.setdefault("decision", label)
        if "rationale" in decision_props:
            call.setdefault("rationale", "gold plan")
    doc = domain_document(domain, scenario)
    calls = [
        m.PlannedCall(name=tool, arguments=_fill_required(domain, tool, args, doc))
        for tool in _topological(order, edges, decision_tool)
        for args in plan[tool]
    ]
    return m.Solution(tool_calls=calls, decision=label)


def explain_unsatisfiable(scenario: m.Scenario, domain: Domain, solution: m.Solution) -> list[str]:
    """Which deterministic checks the solution cannot pass through the engine, and why."""
    from .offline import play_calls

    run = play_calls(scenario, domain, solution.tool_calls, final_text="Done.")
    ev = run_sync(evaluate(scenario, build_trace(run.messages), run.final_state, Termination.USER_STOP,
                              decision_tool=domain.config.decision_tool, parity=domain.original_layout))
    notes = []
    for r in ev.failed:
        why = r.evidence.get("reason") or r.detail
        if r.type == "state_field" and "path not found" in r.detail:
            why = "its field_path never resolves in this scenario's state, so no agent can pass it"
        elif r.type in ("tool_called", "tool_called_with", "tool_before_tool") and r.evidence.get("reason"):
            why = f"{r.evidence['reason']} (a required tool may be forbidden or not offered)"
        notes.append(f"{r.outcome_id} ({r.type}): {why}")
    return notes
