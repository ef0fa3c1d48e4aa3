"""A family's cases: one constraint combination with its slot values and its expected path.

The expected path is the procedure without the steps an unsatisfied constraint blocks or skips,
with the deciding constraint's added steps where the first blocked step was (the first
unsatisfied constraint in the family's precedence order decides). Its calls, the decision call
last, are the case's reference solution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..domain.loader import Domain
from . import edges
from .expr import ExprError, render
from .model import Effect, Family, Outcome, Slot, Step
from .slots import fill, strings_in

ACTION_KINDS = ("write", "escalation")


class FamilyError(ValueError):
    """A family that cannot be generated; the message names the field."""


@dataclass
class Case:
    combo: str
    unsatisfied: list[str]
    env: dict[str, Any]
    outcome: Outcome
    path: list[str]  # step ids
    blocked: list[str]  # step ids
    calls: list[dict[str, Any]]  # rendered {name, arguments} of the path, decision last
    deciding: str | None = None
    skipped: list[str] = field(default_factory=list)  # step ids neither required nor forbidden
    effect: Effect | None = None  # what the deciding constraint changes (None: all met)
    checks: list[dict[str, Any]] = field(default_factory=list)
    state_checks: list[dict[str, Any]] = field(default_factory=list)
    nl_checks: list[dict[str, Any]] = field(default_factory=list)
    # the mutation gate's restricted facts ({text | category, why}; checks.py)
    restricted: list[dict[str, Any]] = field(default_factory=list)
    # the combination a boundary case is an instance of (for `when` lists); else combo itself
    stands_for: str = ""

    def applies(self, when: list[str] | None) -> bool:
        """Whether a family entry with this `when` (None: every case) applies to the case."""
        return edges.applies(when, self.combo, self.stands_for or self.combo)


def rendered(value: Any, env: dict[str, Any], where: str) -> Any:
    try:
        return render(value, env)
    except ExprError as err:
        raise FamilyError(f"{where}: {err}") from None


def slug(text: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", text.upper()).strip("_")


def expected_path(family: Family, unsatisfied: list[str]) -> tuple[list[str], list[str], list[str], Effect | None, str | None]:
    """(path, blocked steps, skipped steps, effect, deciding constraint) of a combination."""
    by_name = {c.name: c for c in family.constraints}
    deciding = next((c for c in family.constraints if c.name in unsatisfied), None)
    if deciding is None:
        return list(family.procedure), [], [], None, None
    combo = next((c for c in family.combos if sorted(c.unsatisfied) == sorted(unsatisfied)), None)
    effect: Effect = combo.outcome if combo and combo.outcome else deciding.when_unsatisfied
    blocked = [s for s in family.procedure
               if s in effect.blocks or any(s in by_name[n].when_unsatisfied.blocks for n in unsatisfied)]
    skipped = [s for s in family.procedure if s in effect.skips and s not in blocked]
    path = [s for s in family.procedure if s not in blocked and s not in skipped]
    at = len(path)
    if blocked:
        at = sum(1 for s in family.procedure[: family.procedure.index(blocked[0])] if s not in blocked and s not in skipped)
    path[at:at] = [s for s in effect.adds if s not in path]
    return path, blocked, skipped, effect, deciding.name


def family_effect(family: Family, name: str) -> Effect:
    return next(c.when_unsatisfied for c in family.constraints if c.name == name)


def own_outcome(family: Family, case: "Case") -> bool:
    """Whether a combo entry gives the case a decision of its own: another label, other clauses
    or another path (steps blocked, skipped or added) than the deciding constraint's; a combo
    that only rewords keeps its decision, and the deciding constraint's checks with it."""
    if case.effect is None or case.deciding is None:
        return False
    mine = family_effect(family, case.deciding)
    def decision(e):
        return e.label, e.clauses, sorted(e.blocks), sorted(e.skips), sorted(e.adds)
    return decision(case.effect) != decision(mine)


def harmless(family: Family, case: "Case") -> dict[str, str]:
    """The actions calling which is no fault in the case (tool -> why): the family's, and the
    deciding effect's own."""
    return {**family.harmless, **(case.effect.harmless if case.effect else {})}


def restricted_applies(when: list[str] | None, case: "Case") -> bool:
    """A restricted fact is in play in the cases named (a boundary case by the combination it
    stands for), and in every case that breaks a constraint named (the state that holds the
    fact is the broken constraint's)."""
    return case.applies(when) or any(n in when for n in case.unsatisfied)


def outcome_applies(family: Family, when: list[str] | None, case: "Case") -> bool:
    """A check or a not-benign declaration belongs to the cases named, and to every case that
    takes its decision from a constraint named (a crossed case it decides, unless a combo gives
    that case another label or other clauses); a boundary case also by the combination it
    stands for."""
    if case.applies(when):
        return True
    return case.deciding in when and not own_outcome(family, case)


def optional_reason(family: Family, case: Case, sid: str) -> str | None:
    """Why the case's outcome does not demand step `sid` (the step's own `optional`, else the
    case's effect's), or None when it does."""
    return family.steps[sid].optional or (case.effect.optional.get(sid) if case.effect else None)


def pinned(step: Step, args: dict[str, Any], domain: Domain) -> dict[str, Any]:
    spec = domain.tool_index[step.tool]
    skip = set(spec.free_text) | set(spec.filters) | set(step.unpinned)
    return {k: v for k, v in args.items() if k not in skip}


def modes_of(step: Step, args: dict[str, Any]) -> dict[str, str]:
    modes = {k: "unordered" for k, v in args.items() if isinstance(v, list)}
    modes.update({k: v for k, v in step.modes.items() if k in args})
    return modes


def case_env(family: Family, domain: Domain, combo: str, unsatisfied: list[str], base: dict[str, Any],
             pins: dict[str, Any] | None = None) -> dict[str, Any]:
    """The slot values of a combination: every constraint's satisfied ranges, then the
    unsatisfied ones, the highest in precedence last (a broken constraint's state is never
    overwritten by another's satisfied range), then a boundary case's pinned value. Draws are
    keyed by `combo`, so the same name with another unsatisfied set changes only what the
    constraints set (the found gate compares a case with its flips that way)."""
    overrides: dict[str, Any] = {}
    for c in family.constraints:
        if c.name not in unsatisfied:
            overrides.update(c.satisfied)
    for c in reversed(family.constraints):
        if c.name in unsatisfied:
            overrides.update(c.unsatisfied)
    overrides.update({n: Slot(value=v) for n, v in (pins or {}).items()})
    clock = overrides.pop("now", None)
    if clock is not None:  # a case with its own clock (before and after a revision, say)
        try:
            now = fill(family.family, family.seed, combo, {"now": clock}, {}, {}, set())["now"]
        except ValueError as err:
            raise FamilyError(f"{combo}: now: {err}") from None
        base = {"now": now, "today": str(now)[:10]}
    try:
        return fill(family.family, family.seed, combo, family.slots, overrides, base, strings_in(domain.seed_state))
    except ValueError as err:
        raise FamilyError(f"{combo}: {err}") from None


def build_case(family: Family, domain: Domain, combo: str, unsatisfied: list[str], base: dict[str, Any]) -> Case:
    env = case_env(family, domain, combo, unsatisfied, base, edges.pin(family.constraints, family.slots, combo))
    path, blocked, skipped, effect, deciding = expected_path(family, unsatisfied)
    outcome: Outcome = effect or family.outcome
    calls = []
    for sid in path:
        step = family.steps[sid]
        calls.append({"name": step.tool, "arguments": rendered(step.args, env, f"steps.{sid}.args")})
    decision_args = {
        "decision": outcome.label,
        **rendered(family.decision.args, env, "decision.args"),
        "clause_ids": rendered(outcome.clauses, env, f"{combo}: clauses"),
        "rationale": rendered(outcome.rationale, env, f"{combo}: rationale"),
    }
    calls.append({"name": domain.config.decision_tool, "arguments": decision_args})
    off_path = [s for s in (effect.optional if effect else {}) if s not in path]
    if effect is not None and len(unsatisfied) > 1:
        # a crossed case: a step another broken constraint blocks is off this path, and so not
        # optional here (the case of the constraint whose effect declares it checks that)
        off_path = [s for s in off_path if s not in blocked or s in effect.blocks]
    if off_path:
        raise FamilyError(f"{combo}: optional: {', '.join(off_path)} is not on this case's path "
                          "(blocked, skipped or not in the procedure); only a step it takes can be optional")
    return Case(combo, unsatisfied, env, outcome, path, blocked, calls, deciding, skipped, effect,
                stands_for=edges.stands_for(family.constraints, combo, unsatisfied))


