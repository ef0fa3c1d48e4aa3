"""The family format (`pibench_family_v1`): one operational procedure, many scenarios.

A family describes a procedure of a domain's policy once (the tool steps an agent takes, the
order the policy puts them in), the constraints that can block it (state that, when not
satisfied, changes what the agent must do and the expected label), the parameter slots that
fill in names, ids, amounts and dates, and the pressure envelopes the simulated user can
apply. `pibench generate` crosses the constraint combinations with the envelopes and writes
one ordinary scenario file per pair; the checks, the label and the reference solution of each
are derived from the procedure and the combination (families/derive.py), never written by
hand per scenario. See docs/authoring.md, "Scenario families".
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..scenario.model import ArgumentMode, Equivalent, Fact, Label, PolicyCheck, ResultTest
from ..scenario.pressure import TACTICS, TacticKind, check_when, closing_keys
from . import bounds as b
from . import edges

FORMAT = "pibench_family_v1"
# the original generator's behavioural envelopes, by our names; a family may add its own
ENVELOPES = ("baseline", "urgency", "authority", "emotional", "misdirection_speed", "misdirection_format")
ENVELOPE_STRESSORS = {
    "urgency": "User Pressure: Urgency",
    "authority": "User Pressure: Authority",
    "emotional": "User Pressure: Emotional",
    "misdirection_speed": "User Pressure: Misdirection",
    "misdirection_format": "User Pressure: Misdirection",
}
ALL_MET = "all_met"  # the combination in which every constraint is satisfied
NAME = r"^[a-z][a-z0-9_]{0,40}$"
CASE_NAME = r"^[a-z][a-z0-9_]{0,63}$"  # a case (a scenario's meta.combo)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Slot(Strict):
    """One parameter, filled deterministically from the family's seed and the combination.

    Exactly one of: `choice` (one of the values; objects allowed, read as `slot.field`),
    `sample` + `k` (k distinct values, in list order), `int` ([low, high], inclusive),
    `number` ([low, high] in steps of `step`), `id` (a pattern whose `#` become digits, never
    a value the domain's seed state already holds), `expr` (computed from earlier slots, `now`
    and `today`; see families/expr.py) or `value` (a constant).
    """

    choice: list[Any] | None = Field(default=None, min_length=1, max_length=b.MAX_CHOICES)
    sample: list[Any] | None = Field(default=None, min_length=1, max_length=b.MAX_CHOICES)
    k: int | None = Field(default=None, ge=1)
    int_: tuple[int, int] | None = Field(default=None, alias="int")
    number: tuple[float, float] | None = None
    step: float = Field(default=0.01, gt=0)
    id: str | None = Field(default=None, pattern=r"#", max_length=b.MAX_ID_PATTERN)
    expr: str | None = Field(default=None, min_length=1)
    value: Any = None

    @model_validator(mode="after")
    def _one_kind(self) -> "Slot":
        kinds = [k for k in ("choice", "sample", "int_", "number", "id", "expr") if getattr(self, k) is not None]
        if "value" in self.model_fields_set:
            kinds.append("value")
        if len(kinds) != 1:
            raise ValueError("a slot needs exactly one of choice, sample, int, number, id, expr, value; "
                             f"got {', '.join(k.rstrip('_') for k in kinds) or 'none'}")
        if self.sample is not None and (self.k is None or self.k > len(self.sample)):
            raise ValueError("sample needs k, at most the number of values")
        for rng in (self.int_, self.number):
            if rng is not None and rng[0] > rng[1]:
                raise ValueError(f"range {list(rng)}: low is above high")
        if self.number is not None and not (self.number[1] - self.number[0]) / self.step <= 1e12:
            raise ValueError(f"number {list(self.number)} in steps of {self.step:g}: more than 10^12 values")
        return self


class Derived(Strict):
    """A step argument computed from visible values (the information-flow gate checks each
    `from` value instead; see `reference_solution.derived`)."""

    from_: list[Any] = Field(alias="from", min_length=1)
    how: str = Field(min_length=1)


class Step(Strict):
    """One tool call of the procedure. Arguments are templates over the slots."""

    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    # why the policy wants this call (becomes the check's notes)
    note: str | None = None
    # The derived check pins every argument (tool_called_with) but the tool's free-text and
    # filter parameters and these, each with the reason any value is right (the mutation gate's
    # changes of them are declared equivalent with that reason); nothing left: tool_called
    unpinned: dict[str, str] = Field(default_factory=dict)
    modes: dict[str, ArgumentMode] = Field(default_factory=dict)
    # a step a careful agent may take or leave (the reason): on the reference path, never
    # required, never forbidden; the gate's mutants of it are declared equivalent with the reason
    optional: str | None = None
    # arguments for which several values are right (argument -> the values): the pin accepts
    # any of them (argument mode one_of); the reference passes the one in `args`
    accept: dict[str, list[Any]] = Field(default_factory=dict)
    # other tools that serve the same purpose (two records that both show what is needed):
    # the derived check accepts any of them (tool_called_any) and pins none
    alternatives: list[str] = Field(default_factory=list)
    # what the call must have returned (result field -> test): a tool_returned check, e.g. a
    # verification that matched at least two items, whichever items the caller gave
    returns: dict[str, ResultTest] = Field(default_factory=dict)
    # state paths and the value they hold once the call ran; when the step is blocked, the same
    # paths are checked to keep their initial value
    state: dict[str, Any] = Field(default_factory=dict)
    derived: dict[str, Derived] = Field(default_factory=dict)


class TacticLine(Strict):
    """A tactic's line with the tools whose call gives the user what it asks (a pivot's), and
    the acts that let it be played when this line needs its own (else the envelope's `press`)."""

    say: str = Field(min_length=1)  # a template
    asks: list[str] = Field(default_factory=list)
    when: list[str] | None = Field(default=None, min_length=1)

    @field_validator("when")
    @classmethod
    def _known(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else check_when(v)


Line = str | TacticLine


def tactic_keys(value: dict[str, Line], envelopes: bool) -> dict[str, Line]:
    """Keys are tactic kinds; a case's may be `envelope:kind`, its line in that envelope only."""
    for key in value:
        kind = key.split(":", 1)[1] if envelopes and ":" in key else key
        if kind not in TACTICS:
            raise ValueError(f"tactics: {key!r} is not a tactic kind ({', '.join(TACTICS)})"
                             + ("; or envelope:kind" if envelopes else ""))
    return value


class Press(Strict):
    """One step of an envelope's pressure: the tactic, and the acts that let it be played."""

    tactic: TacticKind
    when: list[str] = Field(default_factory=lambda: ["held"], min_length=1)

    @field_validator("when")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        return check_when(v)


class Outcome(Strict):
    """What a combination expects: the label, the column it tests, the clauses the decision
    must cite, and the texts of its reference solution (all templates)."""

    label: Label
    primary: str
    clauses: list[str] = Field(min_length=1)
    # a clause of `clauses` -> other clauses that ground the same decision in this case as well
    # (FINRA-3.9 and 6.1 both decline a wire from someone without full authority): the decision
    # must cite that clause or one of them (argument mode contains_any); the reference cites it
    alternatives: dict[str, list[str]] = Field(default_factory=dict)
    rationale: str = Field(min_length=1)
    final_message: str = Field(min_length=1)
    notes: str = Field(min_length=1)
    structured_policy: str = Field(min_length=1)
    subskills: list[str] = Field(default_factory=list)
    stressors: list[str] = Field(default_factory=list)
    # the case's own tactic lines (the clause that decides it quoted back, a pivot that the same
    # rule forbids) and closing lines; they come before the envelope's and the family's
    tactics: dict[str, Line] = Field(default_factory=dict)
    closing: dict[str, str] = Field(default_factory=dict)
    # the steps whose call gives the user what it asked for in this case, if not the family's
    # (user.wants): a case in which part of the request is rightly granted presses for the rest
    wants: list[str] | None = None

    @field_validator("tactics")
    @classmethod
    def _tactics(cls, v: dict[str, Line]) -> dict[str, Line]:
        return tactic_keys(v, envelopes=True)

    @model_validator(mode="after")
    def _alternatives(self) -> "Outcome":
        for clause, others in self.alternatives.items():
            if clause not in self.clauses:
                raise ValueError(f"alternatives: {clause!r} is not one of the clauses the decision cites")
            if not others or clause in others:
                raise ValueError(f"alternatives.{clause}: name at least one other clause")
        return self

    @field_validator("closing")
    @classmethod
    def _closing(cls, v: dict[str, str]) -> dict[str, str]:
        return closing_keys(v, envelopes=True)


class Effect(Outcome):
    """What an unsatisfied constraint changes: steps it blocks (they must not happen), steps it
    skips (no longer needed, neither required nor forbidden), steps it adds (placed where the
    first blocked step was, else before the decision), and the outcome."""

    blocks: list[str] = Field(default_factory=list)
    skips: list[str] = Field(default_factory=list)
    adds: list[str] = Field(default_factory=list)
    # offered write or escalation tools a run may call without fault in this case (tool ->
    # reason), on top of the family's `harmless`
    harmless: dict[str, str] = Field(default_factory=dict)
    # steps of this case's path its outcome does not demand (step -> the reason): the reference
    # takes them, no check requires or orders them, and the benign gate leaves them out (a
    # step's own `optional` says the same for every case)
    optional: dict[str, str] = Field(default_factory=dict)
    # what the user pushes for in this case (the noncompliant trajectory), if not the family's
    pushed: list[str] | None = None


class Threshold(Strict):
    """A number the policy names that decides the constraint (RETAIL-6.1's 7 days): the family
    gets the cases `<constraint>_under`, `_at` and `_over` with `slot` pinned to at - step, at
    and at + step (families/edges.py). `at_satisfies`: whether the value `at` itself satisfies
    the constraint (day 7 of a 7-day period does)."""

    slot: str = Field(min_length=1)
    at: float
    step: float = Field(gt=0)
    at_satisfies: bool
    clause: str = Field(min_length=1)


class Constraint(Strict):
    """State that, when not satisfied, blocks steps and changes the label. Listed in the
    policy's precedence order: when several are unsatisfied, the first one decides."""

    name: str = Field(pattern=NAME)
    description: str = Field(min_length=1)
    satisfied: dict[str, Slot] = Field(default_factory=dict)
    unsatisfied: dict[str, Slot] = Field(default_factory=dict)
    when_unsatisfied: Effect
    threshold: Threshold | None = None


class Combo(Strict):
    """A combination with more than one constraint unsatisfied (the singles, the all-met
    combination and every pair not kept `apart` are generated without being listed). A combo
    with the same unsatisfied set as a pair replaces the automatic one (its name, its outcome);
    a triple is generated only when listed. `outcome` replaces the deciding constraint's texts
    where the combination needs its own words."""

    name: str = Field(pattern=CASE_NAME)  # as long as an automatic pair's name may be
    unsatisfied: list[str] = Field(min_length=2)
    outcome: Effect | None = None


class Apart(Strict):
    """A pair of constraints that is not crossed: the two cannot both be broken in one case (the
    same state decides both) or their case would add nothing; `why` says which, by the clauses."""

    constraints: list[str] = Field(min_length=2, max_length=2)
    why: str = Field(min_length=1)


def pair_name(a: str, b: str) -> str:
    """The automatic case of two broken constraints, in precedence order."""
    return f"{a}_and_{b}"


MAX_CASE_NAME = 64  # a scenario's meta.combo


class Envelope(Strict):
    """How the simulated user presses: the opening message, then `press`, the tactics it plays
    in order, each when its condition over the agent's acts holds (scenario/pressure.py); the
    LLM user's guidance is made from the same tactics. A tactic's line is the case's, else the
    envelope's (`tactics`), else the family's. The baseline presses nothing (`press: []`).
    Older families give fixed `turns` and `guidance` instead."""

    opening: str = Field(min_length=1)
    press: list[Press] | None = None
    tactics: dict[str, Line] = Field(default_factory=dict)
    closing: dict[str, str] = Field(default_factory=dict)
    turns: list[str] = Field(default_factory=list)
    guidance: list[str] = Field(default_factory=list)
    persona: str | None = None  # replaces the family's persona (an angrier caller, say)
    facts: list[Fact] = Field(default_factory=list)  # added to the family's facts
    stressors: list[str] = Field(default_factory=list)

    @field_validator("tactics")
    @classmethod
    def _tactics(cls, v: dict[str, Line]) -> dict[str, Line]:
        return tactic_keys(v, envelopes=False)

    @field_validator("closing")
    @classmethod
    def _closing(cls, v: dict[str, str]) -> dict[str, str]:
        return closing_keys(v)

    @model_validator(mode="after")
    def _one_script(self) -> "Envelope":
        if self.press is not None and (self.turns or self.guidance):
            raise ValueError("press, and turns or guidance: the guidance is made from the tactics; "
                             "give press (with tactics) or the older turns and guidance, not both")
        kinds = [p.tactic for p in self.press or []]
        twice = sorted({k for k in kinds if kinds.count(k) > 1})
        if twice:
            raise ValueError(f"press: the tactic {twice[0]!r} is played twice (one line each)")
        return self


class User(Strict):
    persona: str = Field(min_length=1)
    known_facts: str = ""
    goal: str = ""
    facts: list[Fact] = Field(default_factory=list)
    # what the user says when it got what it asked (`granted`), when its tactics are spent
    # (`held`, or `refused` / `escalated` / `conditional` by what the agent did), and once to an
    # agent that has not decided (`undecided`); a case's or envelope's closing comes first
    closing: dict[str, str] = Field(default_factory=dict)
    # the steps whose call gives the user what it asked for (default: the write calls of what
    # it pushes for); a call in the compliant form the case's own path makes does not count
    wants: list[str] | None = None

    @field_validator("closing")
    @classmethod
    def _closing(cls, v: dict[str, str]) -> dict[str, str]:
        return closing_keys(v)


class Restricted(Strict):
    """A fact the agent must not disclose: a value (`text`, a template) or a restricted category
    of the domain (`category`, domain.json `restricted_categories`), or both. `when`: the
    combinations it is in play in (default: all); a constraint's name also matches every
    combination that breaks it (its pairs and triples)."""

    text: str | None = Field(default=None, min_length=1)  # a template
    category: str | None = Field(default=None, pattern=NAME)
    why: str | None = Field(default=None, min_length=1)  # a category's default: its clause
    when: list[str] | None = None

    @model_validator(mode="after")
    def _what(self) -> "Restricted":
        if self.text is None and self.category is None:
            raise ValueError("restricted: give text, category or both")
        if self.text is not None and self.why is None:
            raise ValueError("restricted: a text needs its why (the clause that keeps it back)")
        return self


class NotBenign(Strict):
    """A benign variant that is wrong by the policy here (the benign gate leaves it out)."""

    variant: str = Field(min_length=1)  # an id or fnmatch pattern of ids
    reason: str = Field(min_length=1)  # a template
    when: list[str] | None = None  # combinations it applies to (default: all)


class ExtraCheck(Strict):
    """A hand-written check added to the derived ones (templates allowed), e.g. an NL check."""

    check: PolicyCheck
    when: list[str] | None = None


class Decision(Strict):
    """The decision call's subject arguments (e.g. {"order_id": "{{order_id}}"})."""

    args: dict[str, Any] = Field(min_length=1)


class Family(Strict):
    # the limits of bounds.py, named in the schema (counts also as maxItems / maxProperties)
    model_config = ConfigDict(extra="forbid", populate_by_name=True, json_schema_extra={"x-limits": b.LIMITS})

    format: Literal["pibench_family_v1"]
    family: str = Field(pattern=r"^[A-Z][A-Z0-9_]{2,60}$")
    domain: str = Field(min_length=1)
    title: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    created_at: str = Field(min_length=1)
    policy_pack: str | None = None
    policy_version: str | None = None
    timezone: str | None = None
    seed: int = 0
    now: str = Field(min_length=1)
    clauses: list[str] = Field(min_length=1)
    subskills: list[str] = Field(default_factory=list)
    stressors: list[str] = Field(default_factory=list)
    slots: dict[str, Slot] = Field(default_factory=dict, max_length=b.MAX_SLOTS)
    state: dict[str, Any] = Field(default_factory=dict)
    customer: dict[str, Any] | None = None
    account: dict[str, Any] | None = None
    employee: dict[str, Any] | None = None
    agent: dict[str, Any] | None = None  # the analyst's own staff profile (session context)
    available_tools: list[str] | None = None
    steps: dict[str, Step] = Field(max_length=b.MAX_STEPS)
    procedure: list[str] = Field(min_length=1)
    order: list[tuple[str, str]] = Field(default_factory=list)
    decision: Decision
    outcome: Outcome
    constraints: list[Constraint] = Field(min_length=1, max_length=b.MAX_CONSTRAINTS)
    combos: list[Combo] = Field(default_factory=list, max_length=b.MAX_COMBOS)
    # pairs of constraints not crossed into a case of their own (every other pair is)
    apart: list[Apart] = Field(default_factory=list, max_length=b.MAX_APART)
    # envelopes each case is played in: the baseline and n-1 pressure envelopes, taken in turn
    # over the family's cases so that each is used about equally (at most the family's count)
    envelopes_per_case: int = Field(default=3, ge=1, le=b.MAX_ENVELOPES)
    pushed: list[str] | None = None
    # offered write or escalation tools a run may call without fault here (tool -> reason);
    # every other one not in the expected path gets a tool_not_called check
    harmless: dict[str, str] = Field(default_factory=dict)
    user: User
    # the family's tactic library: each kind's line, written for this procedure (a case or an
    # envelope may give its own)
    tactics: dict[str, Line] = Field(default_factory=dict)
    envelopes: dict[str, Envelope] = Field(max_length=b.MAX_ENVELOPES)
    restricted: list[Restricted] = Field(default_factory=list)
    checks: list[ExtraCheck] = Field(default_factory=list)
    equivalent: list[Equivalent] = Field(default_factory=list)
    not_benign: list[NotBenign] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> "Family":
        problems = []
        steps = set(self.steps)
        for where, ids in [("procedure", self.procedure), ("pushed", self.pushed or []),
                           ("user.wants", self.user.wants or [])] + [
            (f"constraints[{i}].when_unsatisfied.{k}", list(getattr(c.when_unsatisfied, k)))
            for i, c in enumerate(self.constraints) for k in ("blocks", "skips", "adds", "optional")
        ] + [(f"constraints[{i}].when_unsatisfied.pushed", c.when_unsatisfied.pushed or [])
             for i, c in enumerate(self.constraints)] + [(f"order[{i}]", list(pair)) for i, pair in enumerate(self.order)]:
            for s in ids:
                if s not in steps:
                    problems.append(f"{where}: no step {s!r} in steps")
        names = [c.name for c in self.constraints] + [c.name for c in self.combos] + edges.boundary_names(self.constraints)
        for n in sorted({n for n in names if names.count(n) > 1} | ({ALL_MET} & set(names))):
            problems.append(f"constraints/combos: the name {n!r} is used twice or reserved")
        seen_satisfied: dict[str, tuple[str, Any]] = {}
        for i, c in enumerate(self.constraints):
            for n, spec in c.satisfied.items():
                other = seen_satisfied.setdefault(n, (c.name, spec))
                if other[0] != c.name and other[1] != spec:
                    problems.append(f"constraints[{i}].satisfied: {n!r} is also set, differently, by "
                                    f"{other[0]!r} when satisfied: the all-met case would depend on the order")
            for side in ("satisfied", "unsatisfied"):
                for n in getattr(c, side):
                    if n == "now":  # the case's clock (a value or a choice of timestamps)
                        continue
                    if n not in self.slots:
                        problems.append(f"constraints[{i}].{side}: {n!r} is not a slot of the family "
                                        "(a constraint replaces a slot's range; declare the slot in slots)")
        for i, c in enumerate(self.constraints):
            if c.threshold is not None:
                problems += edges.threshold_problems(i, c, self.slots)
        single = {c.name for c in self.constraints}
        for i, combo in enumerate(self.combos):
            for n in combo.unsatisfied:
                if n not in single:
                    problems.append(f"combos[{i}].unsatisfied: no constraint {n!r}")
        if "baseline" not in self.envelopes:
            problems.append("envelopes: needs a 'baseline' envelope (the no-pressure opening)")
        for name in self.envelopes:
            if not re.fullmatch(NAME, name):
                problems.append(f"envelopes: {name!r} is not a lower-case name")
        try:
            tactic_keys(self.tactics, envelopes=False)
        except ValueError as err:
            problems.append(str(err))
        outcomes = [("outcome", self.outcome)] + [(f"constraints[{i}].when_unsatisfied", c.when_unsatisfied)
                                                  for i, c in enumerate(self.constraints)]
        for where, o in outcomes:
            for s in o.wants or []:
                if s not in steps:
                    problems.append(f"{where}.wants: no step {s!r} in steps")
        for where, o in outcomes:
            for key in [*o.tactics, *o.closing]:
                if ":" in key and key.split(":", 1)[0] not in self.envelopes:
                    problems.append(f"{where}: {key!r} names no envelope")
        every = {ALL_MET, *names, *(pair_name(x, y) for x, y in self.pairs())}
        for i, r in enumerate(self.restricted):
            for n in r.when or []:
                if n not in every:
                    problems.append(f"restricted[{i}].when: no combination {n!r}")
        for field, entries in (("checks", self.checks), ("not_benign", self.not_benign)):
            for i, c in enumerate(entries):
                for n in c.when or []:
                    if n not in every:
                        problems.append(f"{field}[{i}].when: no combination {n!r}")
        problems += self._pair_problems()
        if "envelopes_per_case" in self.model_fields_set and self.envelopes_per_case > len(self.envelopes):
            problems.append(f"envelopes_per_case: {self.envelopes_per_case}, but the family has "
                            f"{len(self.envelopes)} envelope(s)")
        if not problems:
            cases = self.combinations()
            seen: set[str] = set()
            for name, _ in cases:
                if name in seen:
                    problems.append(f"combos: the case name {name!r} is also an automatic pair's "
                                    "(<a>_and_<b>) or another case's")
                seen.add(name)
                if len(name) > MAX_CASE_NAME:
                    problems.append(f"constraints: the pair case {name!r} is longer than {MAX_CASE_NAME} "
                                    "characters; name it with a combos entry")
            variants = len(cases) * self.envelope_count()
            if variants > b.MAX_VARIANTS:
                problems.append(f"cases x envelopes_per_case: {variants} scenarios, more than {b.MAX_VARIANTS} "
                                "(MAX_VARIANTS)")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def pairs(self) -> list[tuple[str, str]]:
        """Every pair of constraints (precedence order within and between pairs), apart or not."""
        names = [c.name for c in self.constraints]
        return [(a, z) for i, a in enumerate(names) for z in names[i + 1:]]

    def kept_apart(self) -> set[frozenset[str]]:
        return {frozenset(a.constraints) for a in self.apart}

    def _pair_problems(self) -> list[str]:
        """apart entries that name no constraint or a pair a combo lists; pairs whose broken
        states set the same slot (one would overwrite the other) that are not kept apart."""
        out = []
        single = {c.name: c for c in self.constraints}
        listed = {frozenset(c.unsatisfied): c.name for c in self.combos}
        seen: set[frozenset[str]] = set()
        for i, a in enumerate(self.apart):
            unknown = [n for n in a.constraints if n not in single]
            if unknown:
                out.append(f"apart[{i}].constraints: no constraint {', '.join(map(repr, unknown))}")
                continue
            key = frozenset(a.constraints)
            if len(key) < 2:
                out.append(f"apart[{i}].constraints: names {a.constraints[0]!r} twice; a pair is two constraints")
            elif key in seen:
                out.append(f"apart[{i}]: the pair {' and '.join(a.constraints)} is listed twice")
            elif key in listed:
                out.append(f"apart[{i}]: the pair {' and '.join(a.constraints)} is also the combo "
                           f"{listed[key]!r}; a pair is crossed (combos) or kept apart, not both")
            seen.add(key)
        apart = self.kept_apart()
        crossed = [(x, y) for x, y in self.pairs() if frozenset((x, y)) not in apart]
        crossed += [(x, y) for c in self.combos for k, x in enumerate(c.unsatisfied) for y in c.unsatisfied[k + 1:]
                    if x in single and y in single and frozenset((x, y)) not in apart | {frozenset(c.unsatisfied)}]
        for x, y in dict.fromkeys(crossed):
            both = [s for s in single[x].unsatisfied if s in single[y].unsatisfied]
            if both:
                out.append(f"constraints {x!r} and {y!r} both set the slot(s) {', '.join(both)} when unsatisfied, "
                           "so they cannot both be broken in one case; list the pair in apart with the reason")
        return out

    def envelope_count(self) -> int:
        return min(self.envelopes_per_case, len(self.envelopes))

    def combinations(self) -> list[tuple[str, list[str]]]:
        """(name, unsatisfied constraints) of every case: all-met, the singles, every pair not
        kept apart (a combo with the same set replaces it, in its place), then the other combos."""
        by_set = {frozenset(c.unsatisfied): c for c in self.combos}
        apart = self.kept_apart()
        out = [(ALL_MET, [])] + [(c.name, [c.name]) for c in self.constraints]
        used: set[str] = set()
        for x, y in self.pairs():
            key = frozenset((x, y))
            if key in by_set:
                out.append((by_set[key].name, list(by_set[key].unsatisfied)))
                used.add(by_set[key].name)
            elif key not in apart:
                out.append((pair_name(x, y), [x, y]))
        out += [(c.name, list(c.unsatisfied)) for c in self.combos if c.name not in used]
        # the boundary cases of thresholds last
        return out + edges.boundaries(self.constraints, self.slots)
