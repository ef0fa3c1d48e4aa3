"""Static validation of a scenario set: everything that can be checked without running it.

Reports every problem at once, each naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .checks.policy import path_resolves
from .domain.loader import Domain
from .environment.merge import initial_document
from .environment.tools import unsupported_keywords
from .scenario.catalog import Entry, ScenarioSet
from .scenario.model import Scenario, ToolCalledWith
from .scenario.rules import required_tools, tools_named

CLAUSE_ARGS = ("clause_ids", "policy_sections_cited")


def domain_problems(domain: Domain) -> list[str]:
    out = []
    for i, tool in enumerate(domain.tools):
        for where in unsupported_keywords(tool.schema):
            out.append(
                f"{domain.path / domain.config.tools}: tools[{i}] ({tool.name}).{where}: "
                "Inspect cannot pass this JSON-schema keyword to models; use plain types"
            )
    if domain.config.decision_tool not in domain.tool_index:
        out.append(
            f"{domain.path / domain.config.tools}: no tool {domain.config.decision_tool!r} "
            "(the domain's decision tool)"
        )
    return out


def _cited(s: Scenario, decision_tool: str) -> list[tuple[str, Any]]:
    cited: list[tuple[str, Any]] = [
        (f"policy_context.policy_clauses[{i}].clause_id", c.clause_id)
        for i, c in enumerate(s.policy_context.policy_clauses)
    ]
    for i, c in enumerate(s.criteria.policy_checks):
        if isinstance(c, ToolCalledWith) and c.tool_name == decision_tool:
            for arg in CLAUSE_ARGS:
                for j, v in enumerate(c.expected_arguments().get(arg) or []):
                    cited.append((f"evaluation_criteria.policy_checks[{i}].arguments.{arg}[{j}]", v))
    for block in ("reference_solution", "noncompliant_trajectory"):
        sol = getattr(s, block)
        for i, call in enumerate(sol.tool_calls if sol else []):
            if call.name == decision_tool:
                for arg in CLAUSE_ARGS:
                    for j, v in enumerate(call.arguments.get(arg) or []):
                        cited.append((f"{block}.tool_calls[{i}].arguments.{arg}[{j}]", v))
    return cited


def scenario_problems(entry: Entry) -> list[str]:
    s, d = entry.scenario, entry.domain
    out: list[str] = []
    names = set(d.tool_index)
    for where, name in tools_named(s):
        if name not in names:
            out.append(f"{where}: tool {name!r} is not in the {d.name} catalog")
    if s.available_tools is not None:
        offered = set(s.available_tools)
        for where, name in required_tools(s):
            if name in names and name not in offered:
                out.append(f"{where}: {name} is required by a check but not in available_tools")
        if not offered & names:
            out.append("available_tools: exposes no tool of the catalog")
    ids = d.clause_ids
    if d.config.clause_pattern:
        for where, cid in _cited(s, d.config.decision_tool):
            if cid not in ids:
                out.append(f"{where}: clause id {cid!r} does not occur in {d.config.policy}")
    initial = initial_document(d.seed_state, s)
    for i, c in enumerate(s.criteria.state_field_checks):
        if not path_resolves(initial, c.field_path):
            out.append(
                f"evaluation_criteria.state_field_checks[{i}].field_path: {c.field_path!r} "
                "does not resolve in the initial state"
            )
    return [f"{entry.path}: {p}" for p in out]


def authored(domain: Domain) -> bool:
    """Domains in our own layout (with domain.json) are held to the validity gates."""
    return (domain.path / "domain.json").exists()


def validate_set(scenario_set: ScenarioSet, *, gates: bool = True) -> list[str]:
    from .gates import gate_problems

    problems: list[str] = []
    for err in scenario_set.errors:
        problems += [f"{err.path}: {p}" for p in err.problems]
    seen: set[Path] = set()
    for entry in scenario_set.entries.values():
        if entry.domain.path not in seen:
            seen.add(entry.domain.path)
            problems += domain_problems(entry.domain)
        static = scenario_problems(entry)
        problems += static
        if gates and not static and authored(entry.domain):
            problems += gate_problems(entry)
    return problems
