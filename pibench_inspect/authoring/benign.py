"""The benign gate, the mutation gate's twin: every still-correct variant of a play must pass.

A check that fails a right behaviour is as serious a benchmark bug as one that passes a wrong
one: an agent that looks one more record up, or cites one more clause, loses its score for
nothing. So each scenario's reference solution (played through the engine, as the mutation gate
plays it) is turned into plays that are still correct by the policy, *benign variants*, and each
is played and evaluated like a run (the NL tier aside). Every deterministic check must pass:

| kind | the variant | why it is still correct |
|---|---|---|
| `lookup` | an offered read tool the solution does not call, called before the decision with arguments the solution already holds | reading a record changes nothing and discloses nothing to the user |
| `swap` | two neighbouring reads (lookups, verifications) the policy does not order (no domain `order_rules`, no `action_graph` edge), swapped, when the later one needs nothing the earlier one returned | the policy leaves their order open |
| `cite` | one more clause the scenario's `policy_context` lists, cited in the decision (`cite:+<id>`); the cited clauses in reverse order (`cite:reordered`) | citing a further relevant clause, or the same ones in another order, records the same decision |
| `skip` | a call the scenario declares not demanded for its outcome (a `drop` mutant declared in `mutation_gate.equivalent`: a family's `optional` steps), left out | the declaration says so |
| `extra` | an action the scenario declares harmless (an `add` mutant declared in `mutation_gate.equivalent`: a family's `harmless`), taken before the decision as the mutation gate takes it | the declaration says so; a check it fails contradicts it |
| `reword` | the final reply in other words (contractions, courtesy lines) | the same reply |

A variant that fails is a problem naming the scenario, the variant and each failing check (its
outcome id and type): the check is stricter than the policy. A variant that is in fact wrong by
the policy is declared in `mutation_gate.not_benign` with the reason.

Cost: envelope siblings with the same variants share one result (shared_case.py). The
variants of a scenario are played together first (all but the skips in one play, the
skips in another), and one by one only when that play fails, so a sound scenario costs one or
two plays more than its mutants.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..checks.policy import CheckResult
from ..conversation.offline import OfflineRun, PlaysOverran
from ..conversation.prompts import system_prompt
from ..domain.catalog import Insert, Sql, ToolSpec, Update, Verify
from ..environment.tools import exposed_tools
from ..scenario.catalog import Entry
from ..scenario.model import PlannedCall
from .info_flow import Seen, catalog_text, traced_values, user_texts
from .mutation import CLAUSE_ARGS, added_calls, equivalence, is_action, order_pairs
from .paraphrase import reword
from .plays import evaluate_calls, played_run, solution_calls
from .shared_case import case_key

KINDS = ("lookup", "swap", "cite", "skip", "extra", "reword")
Calls = list[PlannedCall]


@dataclass
class Variant:
    id: str
    kind: str
    why: str  # what keeps it correct
    apply: Callable[["Play"], None]


@dataclass
class Play:
    """A play being built from the solution's calls: the calls (moved, changed), the final
    reply, the solution's calls to leave out (by their index in it) and the calls to insert
    before the decision."""

    calls: Calls
    final: str
    left_out: set[int] = field(default_factory=set)
    before_decision: Calls = field(default_factory=list)

    def __post_init__(self) -> None:
        self.originals = list(self.calls)

    def finished(self, decision_tool: str) -> tuple[Calls, str]:
        gone = {id(self.originals[i]) for i in self.left_out}
        calls = [c for c in self.calls if id(c) not in gone]
        at = next((i for i in range(len(calls) - 1, -1, -1) if calls[i].name == decision_tool), len(calls))
        calls[at:at] = self.before_decision
        return calls, self.final


@dataclass
class Failure:
    variant: Variant
    checks: list[CheckResult]


@dataclass
class BenignResult:
    """One scenario's benign variants, played."""

    passed: list[str] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    declared: dict[str, str] = field(default_factory=dict)  # variant id -> why it is not benign

    @property
    def scored(self) -> int:
        return len(self.passed) + len(self.failed)


@dataclass
class Base:
    """The oracle's play, as the variants start from it."""

    entry: Entry
    calls: Calls
    final: str
    results: list[Any]

    @classmethod
    def of(cls, entry: Entry) -> "Base":
        run = played_run(entry, "oracle")
        calls, final = solution_calls(run)
        return cls(entry, calls, final, run.results[: len(calls)])

    @property
    def decision_tool(self) -> str:
        return self.entry.domain.config.decision_tool

    def copy(self) -> Calls:
        return [PlannedCall(name=c.name, arguments=dict(c.arguments)) for c in self.calls]


def is_read(spec: ToolSpec, decision_tool: str) -> bool:
    """A call that changes nothing: no action, no write step."""
    if is_action(spec, decision_tool) or spec.name == decision_tool:
        return False
    return not any(isinstance(step, (Insert, Update)) or (
        isinstance(step, Sql) and not re.match(r"\s*(SELECT|WITH)\b", step.sql, re.I)) for step in spec.effect)


def is_lookup(spec: ToolSpec, decision_tool: str) -> bool:
    """A read that tries nothing: no verification (an extra verification attempt is a failed
    attempt to the policies that count them)."""
    return is_read(spec, decision_tool) and not spec.name.startswith("verify_") \
        and not any(isinstance(step, Verify) for step in spec.effect)


_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


def _fits(value: Any, prop: dict[str, Any]) -> bool:
    """Whether a value has the parameter's JSON type (a number is no id, a bool no number)."""
    kind = prop.get("type", "string")
    kinds = kind if isinstance(kind, list) else [kind]
    ok = tuple(t for k in kinds for t in _TYPES.get(k, (object,)))
    return isinstance(value, ok) and not (isinstance(value, bool) and bool not in ok)


def _known(base: Base) -> dict[str, Any]:
    """Argument name -> a value the solution holds under that name: its own arguments first,
    then the fields of what its calls returned (the first of each)."""
    known: dict[str, Any] = {}
    for c in base.calls:
        for k, v in c.arguments.items():
            if isinstance(v, (str, int, float)):
                known.setdefault(k, v)

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, (str, int, float)) and not isinstance(x, bool):
                    known.setdefault(str(k), x)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for r in base.results:
        walk(r)
    return known


def lookup_variants(base: Base) -> list[Variant]:
    s, d = base.entry.scenario, base.entry.domain
    called = {c.name for c in base.calls}
    known = _known(base)
    out = []
    for spec in exposed_tools(d, s):
        if spec.name in called or not is_lookup(spec, base.decision_tool):
            continue
        props = spec.schema.get("properties", {})
        required = spec.schema.get("required", [])
        usable = {p: known[p] for p in props if p in known and _fits(known[p], props[p])}
        if any(p not in usable for p in required):
            continue  # the solution holds nothing to ask it with
        args = usable  # search filters too: a careful agent narrows a search to its case
        call = PlannedCall(name=spec.name, arguments=args)
        out.append(Variant(f"lookup:{spec.name}", "lookup", f"{spec.name} only reads",
                           lambda play, call=call: play.before_decision.append(call)))
    return out


def _seen_before(base: Base) -> list[list[Seen]]:
    """For each call index k, what the agent has seen before it, once per user mode."""
    s, d = base.entry.scenario, base.entry.domain
    common = Seen()
    common.add_text(system_prompt(s, d))
    for text in catalog_text(exposed_tools(d, s)):
        common.add_text(text)
    out: list[list[Seen]] = []
    modes = []
    for mode in ("scripted", "llm"):
        seen = common.copy()
        for text in user_texts(s.user_simulation, mode):
            seen.add_text(text)
        modes.append(seen)
    for k in range(len(base.calls)):
        out.append([m.copy() for m in modes])
        result = base.results[k] if k < len(base.results) else None
        if result is not None:
            for m in modes:
                m.add_result(result)
    return out


def swap_variants(base: Base) -> list[Variant]:
    entry = base.entry
    ordered = {(a, b) for a, b, _ in order_pairs(entry)}
    derived = {r.call for r in entry.scenario.reference_solution.derived} if entry.scenario.reference_solution else set()
    tools = entry.domain.tool_index
    seen: list[list[Seen]] | None = None
    out = []
    for i in range(len(base.calls) - 1):
        a, b = base.calls[i], base.calls[i + 1]
        if base.decision_tool in (a.name, b.name) or a.name == b.name:
            continue
        if not all(t in tools and is_read(tools[t], base.decision_tool) for t in (a.name, b.name)):
            # a lookup before an action is there to justify it (act, then check, is no correct
            # play), and one action may be what lets the next through (a hold released)
            continue
        if (a.name, b.name) in ordered or (b.name, a.name) in ordered or i + 1 in derived:
            continue
        seen = seen or _seen_before(base)
        # the later call must not need what the earlier one returned
        if not all(m.has(v) for _, v in traced_values(tools.get(b.name), b.arguments) for m in seen[i]):
            continue
        out.append(Variant(f"swap:{i}:{a.name}<>{b.name}", "swap",
                           f"no order rule or action_graph edge orders {a.name} and {b.name}", _swapper(i)))
    return out


def _swapper(i: int) -> Callable[[Play], None]:
    def apply(play: Play) -> None:
        play.calls[i], play.calls[i + 1] = play.calls[i + 1], play.calls[i]
    return apply


def _decision_call(play: Play, decision_tool: str) -> PlannedCall | None:
    return next((c for c in reversed(play.calls) if c.name == decision_tool), None)


def cite_variants(base: Base) -> list[Variant]:
    call = next((c for c in reversed(base.calls) if c.name == base.decision_tool), None)
    if call is None:
        return []
    arg = next((a for a in CLAUSE_ARGS if isinstance(call.arguments.get(a), list)), None)
    if arg is None:
        return []
    cited = list(call.arguments[arg])
    listed = [c.clause_id for c in base.entry.scenario.policy_context.policy_clauses]
    tool = base.decision_tool

    def add(clause: str) -> Callable[[Play], None]:
        def apply(play: Play) -> None:
            c = _decision_call(play, tool)
            if c is not None:
                c.arguments[arg] = [*c.arguments[arg], clause]
        return apply

    def reverse(play: Play) -> None:
        c = _decision_call(play, tool)
        if c is not None:
            c.arguments[arg] = list(reversed(c.arguments[arg]))

    out = [Variant(f"cite:+{c}", "cite", f"{c} is a clause the scenario lists", add(c))
           for c in dict.fromkeys(listed) if c not in cited]
    if len(set(cited)) > 1:
        out.append(Variant("cite:reordered", "cite", "the same clauses in another order", reverse))
    return out


def skip_variants(base: Base) -> list[Variant]:
    out = []
    for i, c in enumerate(base.calls):
        if c.name == base.decision_tool:
            continue
        reason = equivalence(base.entry, f"drop:{i}:{c.name}")
        if reason is not None:
            out.append(Variant(f"skip:{i}:{c.name}", "skip", f"declared not demanded: {reason}",
                               lambda play, i=i: play.left_out.add(i)))
    return out


def extra_variants(base: Base) -> list[Variant]:
    """Each action the mutation gate adds (mutation.added_calls) that the scenario declares
    harmless, taken before the decision: a declaration the checks contradict (a state check the
    action must break) is a defect either way."""
    out = []
    for call in added_calls(base.entry, base.calls, base.decision_tool):
        reason = equivalence(base.entry, f"add:{call.name}")
        if reason is not None:
            out.append(Variant(f"extra:{call.name}", "extra", f"declared harmless: {reason}",
                               lambda play, call=call: play.before_decision.append(call)))
    return out


def reword_variants(base: Base) -> list[Variant]:
    other = reword(base.final) if base.final else None
    if not other or other == base.final:
        return []
    return [Variant("reword", "reword", "the same reply in other words",
                    lambda play: setattr(play, "final", other))]


def variants(entry: Entry) -> tuple[Base, list[Variant]]:
    base = Base.of(entry)
    return base, [*lookup_variants(base), *swap_variants(base), *cite_variants(base),
                  *skip_variants(base), *extra_variants(base), *reword_variants(base)]


def build(base: Base, chosen: list[Variant]) -> tuple[Calls, str]:
    """The play with every chosen variant applied (swaps before anything moves the calls)."""
    play = Play(base.copy(), base.final)
    order = {k: n for n, k in enumerate(KINDS)}
    for v in sorted(chosen, key=lambda v: order[v.kind]):
        v.apply(play)
    return play.finished(base.decision_tool)


def failed_checks(entry: Entry, calls: Calls, final: str, plays: dict[str, OfflineRun]) -> list[CheckResult]:
    """The deterministic checks a play fails (each list of calls played once)."""
    ev = evaluate_calls(entry, calls, final, plays)
    if ev.all_passed:
        return []
    return ev.failed or [CheckResult("(evaluation)", "none", False, ev.reason or "not all checks passed")]


def not_benign(entry: Entry, variant_id: str) -> str | None:
    gate = entry.scenario.mutation_gate
    for d in gate.not_benign if gate else []:
        if fnmatch.fnmatchcase(variant_id, d.variant):
            return d.reason
    return None


def _judge(entry: Entry, base: Base, group: list[Variant], plays: dict[str, OfflineRun],
           result: BenignResult) -> None:
    """Play the group together; only if that fails, each kind, then each variant, alone."""
    if not group:
        return
    calls, final = build(base, group)
    failing = failed_checks(entry, calls, final, plays)
    if not failing:
        result.passed += [v.id for v in group]
    elif len(group) == 1:
        result.failed.append(Failure(group[0], failing))
    else:
        kinds = list(dict.fromkeys(v.kind for v in group))
        parts = [[v for v in group if v.kind == k] for k in kinds] if len(kinds) > 1 else [[v] for v in group]
        for part in parts:
            _judge(entry, base, part, plays, result)


def run_gate(entry: Entry) -> BenignResult:
    """The scenario's benign variants, played (memoized per scenario object, as the mutation
    gate's result is)."""
    key = (id(entry.scenario), id(entry.domain))
    hit = _RESULTS.get(key)
    if hit is not None and hit[0] is entry.scenario:
        return hit[1]
    base, found = variants(entry)
    # the variants' plays read nothing the user says, but which variants exist can (a swap needs
    # the later call's values seen before it): envelope siblings with the same variants share
    case = (id(entry.domain), case_key(entry), tuple(v.id for v in found))
    same = _CASES.get(case)
    if same is not None and same[0] is entry.domain:
        _RESULTS[key] = (entry.scenario, same[1])
        return same[1]
    result = _judged(entry, base, found)
    _CASES[case] = (entry.domain, result)
    _RESULTS[key] = (entry.scenario, result)
    return result


def _judged(entry: Entry, base: Base, found: list[Variant]) -> BenignResult:
    result = BenignResult()
    live = []
    for v in found:
        reason = not_benign(entry, v.id)
        if reason is not None:
            result.declared[v.id] = reason
        else:
            live.append(v)
    plays: dict[str, OfflineRun] = {}
    # swaps that share a call cannot be played together: the second of two such waits (the
    # waiting ones share none among themselves, each being next to one taken)
    together, later, taken = [], [], set()
    for v in (v for v in live if v.kind == "swap"):
        i = int(v.id.split(":")[1])
        if {i, i + 1} & taken:
            later.append(v)
        else:
            together.append(v)
            taken |= {i, i + 1}
    first = [v for v in live if v.kind not in ("swap", "skip")] + together
    for group in (first, later, [v for v in live if v.kind == "skip"]):
        _judge(entry, base, group, plays, result)
    order = {v.id: n for n, v in enumerate(found)}
    result.passed.sort(key=order.__getitem__)
    result.failed.sort(key=lambda f: order[f.variant.id])
    return result


_RESULTS: dict[tuple[int, int], tuple[Any, BenignResult]] = {}
_CASES: dict[tuple[int, str, tuple[str, ...]], tuple[Any, BenignResult]] = {}


def describe(f: Failure) -> str:
    checks = "; ".join(f"{r.outcome_id} ({r.type}: {r.evidence.get('reason') or r.detail})" for r in f.checks)
    return (f"benign gate: variant {f.variant.id} fails {checks}. The variant is still correct "
            f"({f.variant.why}), so the check is stricter than the policy: loosen it, or declare the "
            "variant in mutation_gate.not_benign (a family's not_benign) with the reason it is wrong")


def unused_declarations(entry: Entry, result: BenignResult) -> list[str]:
    gate = entry.scenario.mutation_gate
    ids = list(result.declared) + result.passed + [f.variant.id for f in result.failed]
    return [f"mutation_gate.not_benign[{i}]: {d.variant!r} matches no benign variant"
            for i, d in enumerate(gate.not_benign if gate else [])
            if not any(fnmatch.fnmatchcase(v, d.variant) for v in ids)]


def benign_problems(entry: Entry, tally: Any = None) -> list[str]:
    """The scenario's benign-gate problems (its counts added to `tally`, a BenignTally)."""
    try:
        result = run_gate(entry)
    except PlaysOverran:
        raise
    except Exception as err:  # a scenario the gate cannot play is a problem, never a crash
        return [f"benign gate: could not run ({type(err).__name__}: {str(err)[:300]})"]
    if tally is not None:
        tally.add(entry.domain.name, result)
    return [describe(f) for f in result.failed] + unused_declarations(entry, result)
