"""Semantic rules a well-formed scenario must satisfy beyond its schema.

These are the original validator's rules (label, one decision_equals matching it, required vs
forbidden consistency, orderings that name required tools, at least one deterministic check),
plus the path syntax of state_field checks. Each problem is `field.path: message`.
"""

from __future__ import annotations

import re

from .model import (
    EVALUATORS,
    DecisionEquals,
    NLJudge,
    Scenario,
    ToolBeforeTool,
    ToolBeforeToolAny,
    ToolCalled,
    ToolCalledAny,
    ToolCalledMinTimes,
    ToolCalledWith,
    ToolNotCalled,
    ToolNotCalledWith,
    ToolReturned,
)

FILTER_SEGMENT = re.compile(r"^(\w+)\[(\w+)=([^\]]+)\]$")
REQUIRING = (ToolCalled, ToolCalledWith, ToolReturned, ToolCalledMinTimes)


def path_problems(path: str) -> list[str]:
    problems = []
    for seg in path.split("."):
        if not seg:
            problems.append(f"empty segment in field_path {path!r}")
        elif ("[" in seg or "]" in seg) and not FILTER_SEGMENT.match(seg):
            problems.append(f"malformed filter segment {seg!r} in field_path {path!r}")
    return problems


def scenario_problems(s: Scenario) -> list[str]:
    out: list[str] = []
    label = s.expected
    if not label:
        out.append("label: field required")
    if s.leaderboard is None and not (s.taxonomy and s.taxonomy.primary):
        out.append("leaderboard: field required")
    crit = s.evaluation_criteria
    if crit is None:
        out.append("evaluation_criteria: field required")
        return out
    if not crit.reward_basis:
        out.append("evaluation_criteria.reward_basis: must not be empty")
        return out
    for i, name in enumerate(crit.reward_basis):
        if name not in EVALUATORS:
            out.append(
                f"evaluation_criteria.reward_basis[{i}]: unknown evaluator {name!r} "
                f"(known: {', '.join(EVALUATORS)})"
            )
    pc = crit.policy_checks
    base = "evaluation_criteria.policy_checks"
    if "POLICY" in crit.reward_basis:
        if not pc:
            out.append(f"{base}: must not be empty when POLICY is in reward_basis")
        decisions = [(i, c) for i, c in enumerate(pc) if isinstance(c, DecisionEquals)]
        if len(decisions) != 1:
            out.append(f"{base}: needs exactly one decision_equals check, found {len(decisions)}")
        for i, c in decisions:
            if label and c.equals != label:
                out.append(f"{base}[{i}].equals: {c.equals} differs from label {label}")
        for i, c in enumerate(pc):
            if isinstance(c, ToolCalledWith) and not c.expected_arguments():
                out.append(f"{base}[{i}].arguments: must not be empty")
        required = {c.tool_name for c in pc if isinstance(c, REQUIRING)}
        # a tool_called_any makes one of its tools required: an ordering may start at any of them
        any_required = {n for c in pc if isinstance(c, ToolCalledAny) for n in c.tool_names}
        forbidden = {c.tool_name for c in pc if isinstance(c, ToolNotCalled)}
        for i, c in enumerate(pc):
            if isinstance(c, REQUIRING) and c.tool_name in forbidden:
                out.append(f"{base}[{i}]: {c.tool_name} is both required and forbidden")
            if isinstance(c, ToolCalledAny) and set(c.tool_names) <= forbidden:
                out.append(f"{base}[{i}].tool_names: every candidate is forbidden")
            if isinstance(c, ToolBeforeTool):
                for end in (c.before, c.after):
                    if end not in required:
                        out.append(
                            f"{base}[{i}]: ordering names {end}, which no tool_called, "
                            "tool_called_with or tool_called_min_times check requires"
                        )
            if isinstance(c, ToolBeforeToolAny):
                if not set(c.first_tools) & (required | any_required):
                    out.append(f"{base}[{i}].first_tools: none of them is required")
                if c.second_tool not in required:
                    out.append(f"{base}[{i}].second_tool: {c.second_tool} is not required")
    if "STATE_FIELD" in crit.reward_basis and not crit.state_field_checks:
        out.append(
            "evaluation_criteria.state_field_checks: must not be empty when STATE_FIELD "
            "is in reward_basis"
        )
    if "NL_JUDGE" in crit.reward_basis and not crit.nl_judge_checks:
        out.append(
            "evaluation_criteria.nl_judge_checks: must not be empty when NL_JUDGE is in "
            "reward_basis"
        )
    seen_paths: dict[str, object] = {}
    for i, sc in enumerate(crit.state_field_checks):
        where = f"evaluation_criteria.state_field_checks[{i}].field_path"
        out += [f"{where}: {p}" for p in path_problems(sc.field_path)]
        if sc.field_path in seen_paths and seen_paths[sc.field_path] != sc.equals:
            out.append(f"{where}: two checks on {sc.field_path} expect different values")
        seen_paths.setdefault(sc.field_path, sc.equals)
    tier1 = [c for c in pc if not isinstance(c, NLJudge)] + list(crit.state_field_checks)
    if not tier1:
        out.append("evaluation_criteria: needs at least one deterministic check")
    return out


def tools_named(s: Scenario) -> list[tuple[str, str]]:
    """Every (field path, tool name) a scenario refers to, for catalog cross-checks."""
    out: list[tuple[str, str]] = []
    for i, c in enumerate(s.criteria.policy_checks):
        base = f"evaluation_criteria.policy_checks[{i}]"
        if isinstance(c, (ToolCalled, ToolNotCalled, ToolCalledWith, ToolNotCalledWith, ToolReturned, ToolCalledMinTimes)):
            out.append((f"{base}.tool_name", c.tool_name))
        elif isinstance(c, ToolBeforeTool):
            out += [(f"{base}.first_tool", c.before), (f"{base}.second_tool", c.after)]
        elif isinstance(c, ToolCalledAny):
            out += [(f"{base}.tool_names", n) for n in c.tool_names]
        elif isinstance(c, ToolBeforeToolAny):
            out += [(f"{base}.first_tools", n) for n in c.first_tools]
            out.append((f"{base}.second_tool", c.second_tool))
    for i, name in enumerate(s.available_tools or []):
        out.append((f"available_tools[{i}]", name))
    if s.action_graph:
        for i, node in enumerate(s.action_graph.nodes):
            if isinstance(node, list) and node and isinstance(node[0], str):
                out.append((f"action_graph.nodes[{i}]", node[0]))
    for block in ("reference_solution", "noncompliant_trajectory"):
        sol = getattr(s, block)
        for i, call in enumerate(sol.tool_calls if sol else []):
            out.append((f"{block}.tool_calls[{i}].name", call.name))
    return out


def required_tools(s: Scenario) -> list[tuple[str, str]]:
    """Tools a check requires the agent to call (so they must be exposed)."""
    out: list[tuple[str, str]] = []
    for i, c in enumerate(s.criteria.policy_checks):
        base = f"evaluation_criteria.policy_checks[{i}]"
        if isinstance(c, REQUIRING):
            out.append((f"{base}.tool_name", c.tool_name))
        elif isinstance(c, ToolBeforeTool):
            out += [(f"{base}.first_tool", c.before), (f"{base}.second_tool", c.after)]
    return out

