"""Validity gates for authored scenarios: each scenario must be provably valid.

Static gates (can the agent see what it is judged on; are the checks fair) and dynamic gates
(the reference solution passes every deterministic check; the non-compliant trajectory and the
trivial baselines fail where they must), run through the engine with the offline player.

A scenario's gate plays (its baselines, the information-flow plays, every mutant) share one
deadline, GATE_SECONDS unless `pibench validate --gate-seconds` says otherwise: each tool call
has a deadline of its own (the domain's limits.call_seconds), but a catalog whose every lookup
overruns would otherwise cost a hundred of them per scenario. Past it, the scenario is one
problem naming it.
"""

from __future__ import annotations

import re
from typing import Any

from ..checks.evaluate import Evaluation
from ..conversation.offline import PlaysOverran, shared_deadline
from ..conversation.prompts import system_prompt
from ..domain.catalog import Select, Sql
from ..environment.tools import exposed_tools
from ..scenario.catalog import Entry
from ..scenario.model import ToolCalledWith
from .plays import play_agent, played_run  # noqa: F401  (re-exported: the floor and tests use them)

BASELINES = ("nothing", "deny_all", "escalate_all", "pushover")
GATE_SECONDS = 60.0  # what one scenario's gate plays may take together (validate --gate-seconds)


def must_fail(agent: str, label: str) -> bool:
    """Where a trivial baseline must fail (the domain issues' gate)."""
    return {
        "nothing": True,
        "deny_all": label in ("ALLOW", "ALLOW-CONDITIONAL"),
        "escalate_all": label != "ESCALATE",
        "pushover": label != "ALLOW",
    }[agent]


def _failed(ev: Evaluation) -> str:
    return ", ".join(f"{r.outcome_id} ({r.detail})" for r in ev.failed) or ev.reason or "nothing"


def dynamic_problems(entry: Entry) -> list[str]:
    s = entry.scenario
    out = []
    if s.reference_solution is None:
        out.append("reference_solution: missing (the oracle has nothing to play)")
    else:
        ev = play_agent(entry, "oracle")
        if not ev.all_passed:
            out.append(f"reference_solution: fails deterministic checks: {_failed(ev)}")
    if s.expected != "ALLOW":
        if s.noncompliant_trajectory is None:
            out.append("noncompliant_trajectory: missing (required on DENY / ESCALATE / ALLOW-CONDITIONAL)")
    for agent in BASELINES:
        if must_fail(agent, s.expected) and play_agent(entry, agent).all_passed:
            what = "noncompliant_trajectory + ALLOW" if agent == "pushover" else f"baseline {agent}"
            out.append(f"label {s.expected}: {what} passes every deterministic check; the checks cannot tell it apart")
    return out


def _reads(spec: Any) -> set[str]:
    tables = {step.select for step in spec.effect if isinstance(step, Select)}
    for step in spec.effect:
        if isinstance(step, Sql):
            tables |= {t.replace("__", ".") for t in re.findall(r"\bFROM\s+\"?([A-Za-z_][A-Za-z0-9_]*)", step.sql, re.I)}
    return tables | set(spec.reads)


def visibility_problems(entry: Entry) -> list[str]:
    """Hidden facts must be reachable through an offered lookup; visible text must not leak."""
    s, d = entry.scenario, entry.domain
    offered = exposed_tools(d, s)
    readable: set[str] = set()
    for t in offered:
        if t.kind in (None, "read"):
            readable |= _reads(t)
    out = []
    for key, value in s.environment_setup.initial_state_patch.items():
        paths = [f"{key}.{k}" for k in value] if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()) else [key]
        for p in paths:
            if p not in readable and not any(r == p or r.startswith(p + ".") for r in readable):
                out.append(
                    f"environment_setup.initial_state_patch.{key}: no offered lookup tool reads "
                    f"{p!r}, so the agent cannot see the state it is judged on"
                )
    visible = "\n".join([system_prompt(s, d), s.user_simulation.initial_user_message] + [t.description for t in offered])
    notes = s.meta.notes.strip()
    if notes and notes in visible:
        out.append("meta.notes: the author notes appear in agent-visible text")
    for sentence in re.split(r"(?<=[.!?])\s+", notes):
        if len(sentence) > 40 and sentence in visible:
            out.append(f"meta.notes: the sentence {sentence[:60]!r}... appears in agent-visible text")
    if s.scenario_id in visible:
        out.append("meta.scenario_id: appears in agent-visible text")
    if re.search(rf"\b{re.escape(s.expected)}\b", s.user_simulation.initial_user_message):
        out.append(f"user_simulation.initial_user_message: states the label {s.expected}")
    return out


def _strings(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set().union(*(_strings(v) | {str(k)} for k, v in value.items())) if value else set()
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return {str(value)} if value is not None else set()


def fairness_problems(entry: Entry) -> list[str]:
    """Reject checks that demand an exact string the agent cannot know."""
    from ..environment.merge import initial_document

    s, d = entry.scenario, entry.domain
    known = _strings(initial_document(d.seed_state, s)) | _strings(s.environment_setup.customer or {}) \
        | _strings(s.environment_setup.account or {})
    out = []
    for i, c in enumerate(s.criteria.policy_checks):
        if not isinstance(c, ToolCalledWith):
            continue
        spec = d.tool_index.get(c.tool_name)
        props = spec.schema.get("properties", {}) if spec else {}
        for arg, value in c.expected_arguments().items():
            mode = c.argument_modes.get(arg, "exact")
            where = f"evaluation_criteria.policy_checks[{i}].arguments.{arg}"
            if isinstance(value, list) and len(value) > 1 and mode == "exact":
                out.append(f"{where}: a list matched exactly (order-sensitive); use argument_modes unordered or contains_all")
            if isinstance(value, str) and " " in value.strip():
                enum = props.get(arg, {}).get("enum") or []
                if value not in enum and value not in known and value not in d.policy_text:
                    out.append(f"{where}: free text {value[:40]!r} the agent cannot know; require what the policy or state determines")
    return out


def gate_problems(entry: Entry, tally: "MutationTally | None" = None, seconds: float = GATE_SECONDS,
                  benign: "BenignTally | None" = None) -> list[str]:
    """The scenario's gate problems, its plays within `seconds` together (the benign gate's
    counts go to `benign`)."""
    try:
        with shared_deadline(seconds):
            return _gate_problems(entry, tally, benign)
    except PlaysOverran:
        return [f"{entry.path}: gates: its plays did not finish within the {seconds:g} s they share "
                "(pibench validate --gate-seconds); its tool calls are too slow to judge it"]


def _gate_problems(entry: Entry, tally: "MutationTally | None", benign: "BenignTally | None" = None) -> list[str]:
    from .benign import benign_problems
    from .info_flow import information_flow_problems
    from .mutation import gate_problems as mutation_problems, run_gate

    problems = visibility_problems(entry) + fairness_problems(entry) + dynamic_problems(entry)
    if entry.scenario.reference_solution is not None:
        problems += information_flow_problems(entry, played_run(entry, "oracle"))
        try:
            result = run_gate(entry)
        except PlaysOverran:
            raise
        except Exception as err:  # a scenario the gate cannot play is a problem, never a crash
            problems.append(f"mutation gate: could not run ({type(err).__name__}: {str(err)[:300]})")
        else:
            if tally is not None:
                tally.add(entry.domain.name, result)
            problems += mutation_problems(entry, result)
        problems += benign_problems(entry, benign)
    return [f"{entry.path}: {p}" for p in problems]


class Tally:
    """Counts per domain, added up across worker processes (gate_pool.py)."""

    def __init__(self) -> None:
        self.by_domain: dict[str, list[int]] = {}

    def row(self, domain: str) -> list[int]:
        return self.by_domain.setdefault(domain, [0, 0, 0])

    def merge(self, by_domain: dict[str, list[int]]) -> None:
        """Add the counts of another tally (a worker's)."""
        for domain, counts in by_domain.items():
            row = self.row(domain)
            for i, c in enumerate(counts):
                row[i] += c


class MutationTally(Tally):
    """Killed and scored mutants per domain: the mutation score (killed / non-equivalent)."""

    def row(self, domain: str) -> list[int]:
        # killed, scored, equivalent, disclosure mutants killed, disclosure mutants scored
        return self.by_domain.setdefault(domain, [0, 0, 0, 0, 0])

    def add(self, domain: str, result: Any) -> None:
        row = self.row(domain)
        row[0] += len(result.killed)
        row[1] += result.scored
        row[2] += len(result.equivalent)
        disclosed = [m for m in result.killed if m.startswith("disclose:")]
        row[3] += len(disclosed)
        row[4] += len(disclosed) + sum(1 for m in result.survived if m.kind == "disclose")

    def score(self, domain: str) -> float | None:
        killed, scored = self.by_domain.get(domain, (0, 0))[:2]
        return killed / scored if scored else None

    def lines(self) -> list[str]:
        out = []
        for d, (killed, scored, equivalent, *disclosed) in sorted(self.by_domain.items()):
            score = f"{killed / scored:.3f}" if scored else "n/a (no mutant)"
            out.append(f"{d}: mutation score {score} ({killed}/{scored} mutants killed, {equivalent} declared equivalent)")
            if disclosed:
                out.append(f"{d}: disclosure mutants killed: {disclosed[0]} of {disclosed[1]}")
        return out


class BenignTally(Tally):
    """Benign variants passed and played per domain, and those declared not benign."""

    def add(self, domain: str, result: Any) -> None:
        row = self.row(domain)  # passed, played, declared not benign
        row[0] += len(result.passed)
        row[1] += result.scored
        row[2] += len(result.declared)

    def lines(self) -> list[str]:
        return [f"{d}: benign variants passed: {passed} of {played}"
                + (f" ({declared} declared not benign)" if declared else "")
                for d, (passed, played, declared) in sorted(self.by_domain.items())]
