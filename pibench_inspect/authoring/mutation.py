"""The mutation gate: every plausible wrong play of a scenario must fail a deterministic check.

A check that passes a wrong behaviour is as serious a benchmark bug as one that fails a right
one, and a hand-found list of loose checks is only a sample. So each scenario's reference
solution (played through the engine, its references to earlier results resolved) is turned
into wrong plays, *mutants*, and each is played through the engine and evaluated like a run
(the NL tier aside). A mutant is *killed* when at least one deterministic check fails. The
kinds, and the check that catches each:

| kind | the wrong play | caught by |
|---|---|---|
| `drop` | one call of the solution left out | a check requiring the call |
| `arg` | one argument changed to another value of its type the state offers (another id, amount, date, enum value; a list item dropped or swapped) | a pin on the argument |
| `verify` | a verification call (a tool with a `verify` step) given one item fewer | a check on what it established (`tool_returned`) |
| `add` | an offered write or escalation tool the solution does not call, called | `tool_not_called` |
| `order` | a pair of calls the policy orders (the domain's `order_rules`, the scenario's `action_graph`) swapped | `tool_before_tool` |
| `label` | each other decision recorded | `decision_equals` |
| `disclose` | the final reply discloses a value of `mutation_gate.restricted`, or says one of the paraphrases of a restricted category named there (domain.json `restricted_categories`) | `message_not_contains` |

Not changed: the tool's free-text parameters (the agent's own words) and its `filters`
(search parameters many values satisfy). A mutant that is still correct by the policy is
declared in `mutation_gate.equivalent` with the reason; every other survivor is a problem
naming the scenario, the mutant and the check that would catch it.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..conversation.arguments import fill_arguments
from ..conversation.offline import OfflineRun
from ..domain.catalog import ToolSpec, Verify
from ..domain.clauses import ClausePatternError
from ..environment.merge import initial_document
from ..environment.tools import exposed_tools
from ..scenario.catalog import Entry
from ..scenario.model import LABELS, PlannedCall
from .plays import evaluate_calls, played_run, solution_calls
from .shared_case import CASE_FREE, case_key  # noqa: F401  (gate_pool and tests use them from here)

KINDS = ("drop", "arg", "verify", "add", "order", "label", "disclose")
READ_PREFIXES = ("lookup_", "get_", "query_", "check_", "list_", "search_", "read_", "verify_", "find_")
CLAUSE_ARGS = ("clause_ids", "policy_sections_cited")
DISCLOSURE = "For your information: {text}."


@dataclass
class Mutant:
    id: str
    kind: str
    calls: list[PlannedCall]
    final_text: str
    hint: str  # the check that would catch it


@dataclass
class GateResult:
    """One scenario's mutants, played."""

    killed: list[str] = field(default_factory=list)
    equivalent: dict[str, str] = field(default_factory=dict)  # mutant id -> reason
    survived: list[Mutant] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the reference itself breaks a rule

    @property
    def scored(self) -> int:
        return len(self.killed) + len(self.survived)


def is_action(spec: ToolSpec, decision_tool: str) -> bool:
    """A tool that changes state on the agent's say-so (writes and escalations)."""
    if spec.name == decision_tool:
        return False
    if spec.kind is not None:
        return spec.kind in ("write", "escalation")
    return not spec.name.startswith(READ_PREFIXES)


def _shape(value: str) -> str:
    return re.sub(r"\d", "#", value)


@dataclass
class Pool:
    """What the state offers as other values: strings (by shape and by field), numbers."""

    strings: set[str]
    by_field: dict[str, set[str]]
    numbers: list[float]

    @classmethod
    def of(cls, document: Any, extra: set[str]) -> "Pool":
        strings, by_field, numbers = set(extra), {}, set()

        def walk(v: Any, key: str | None) -> None:
            if isinstance(v, dict):
                for k, x in v.items():
                    strings.add(str(k))
                    walk(x, str(k))
            elif isinstance(v, list):
                for x in v:
                    walk(x, key)
            elif isinstance(v, bool) or v is None:
                return
            elif isinstance(v, (int, float)):
                numbers.add(float(v))
            elif isinstance(v, str):
                strings.add(v)
                if key:
                    by_field.setdefault(key, set()).add(v)

        walk(document, None)
        return cls(strings, by_field, sorted(numbers))

    def other_string(self, value: str, name: str, avoid: set[str] = frozenset()) -> str | None:
        if re.search(r"\d", value):
            shape = _shape(value)
            same = sorted(s for s in self.strings if s != value and s not in avoid and _shape(s) == shape)
        else:
            same = sorted(s for s in self.by_field.get(name, ()) if s != value and s not in avoid)
        return same[0] if same else None

    def other_number(self, value: float) -> float:
        options = [n for n in self.numbers if n != value]
        if not options:
            return value + 1
        return min(options, key=lambda n: (abs(n - value), n))


def _alternatives(value: Any, name: str, prop: dict[str, Any], pool: Pool) -> list[Any]:
    """Other values of the argument's type that the schema or the state offers."""
    if prop.get("enum"):
        return [e for e in prop["enum"] if e != value]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, (int, float)):
        other = pool.other_number(float(value))
        return [int(other) if isinstance(value, int) and float(other).is_integer() else other]
    if isinstance(value, str):
        other = pool.other_string(value, name)
        return [other] if other is not None else []
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        out: list[Any] = []
        for j, item in enumerate(value):
            if len(value) > 1:
                out.append(value[:j] + value[j + 1:])
            swap = pool.other_string(item, name, avoid=set(value))
            if swap is not None:
                out.append(value[:j] + [swap] + value[j + 1:])
        return out
    return []


def _verified_params(spec: ToolSpec) -> list[str]:
    out = []
    for step in spec.effect:
        if isinstance(step, Verify):
            for v in step.verify.values():
                if isinstance(v, str) and v.startswith("$") and v[1:] in spec.schema.get("properties", {}):
                    out.append(v[1:])
    return out


def order_pairs(entry: Entry) -> list[tuple[str, str, str]]:
    """(first, then, why) pairs the policy orders."""
    d, s = entry.domain, entry.scenario
    pairs = [(a, b, f"order rule {rule.clause}") for rule in d.config.order_rules for a in rule.first for b in rule.then if a != b]
    graph = s.action_graph
    if graph is not None:
        names = [n[0] if isinstance(n, list) and n and isinstance(n[0], str) else None for n in graph.nodes]
        for edge in graph.connections:
            if isinstance(edge, list) and len(edge) == 2 and all(isinstance(i, int) and 0 <= i < len(names) for i in edge):
                a, b = names[edge[0]], names[edge[1]]
                if a and b and a != b:
                    pairs.append((a, b, "action_graph"))
    return list(dict.fromkeys(pairs))


@dataclass
class Reference:
    """The oracle's play of a scenario, as the mutants start from it: its calls with every
    `{{calls[i].x}}` resolved, its final text, and what the state offers as other values."""

    entry: Entry
    calls: list[PlannedCall]
    final: str
    pool: Pool

    @classmethod
    def of(cls, entry: Entry) -> "Reference":
        calls, final = solution_calls(played_run(entry, "oracle"))
        d = entry.domain
        try:
            clause_ids = d.clause_ids if d.config.clause_pattern else set()
        except ClausePatternError:  # reported once for the domain by validate
            clause_ids = set()
        pool = Pool.of(initial_document(d.seed_state, entry.scenario), clause_ids)
        return cls(entry, calls, final, pool)

    @property
    def decision_tool(self) -> str:
        return self.entry.domain.config.decision_tool

    def copy(self, calls: list[PlannedCall] | None = None) -> list[PlannedCall]:
        return [PlannedCall(name=c.name, arguments=dict(c.arguments)) for c in (self.calls if calls is None else calls)]

    def mutant(self, mid: str, kind: str, calls: list[PlannedCall], hint: str, final: str | None = None) -> Mutant:
        return Mutant(mid, kind, calls, self.final if final is None else final, hint)


def drop_mutants(ref: Reference) -> Iterator[Mutant]:
    for i, call in enumerate(ref.calls):
        if call.name in ref.entry.domain.tool_index and call.name != ref.decision_tool:
            yield ref.mutant(f"drop:{i}:{call.name}", "drop", ref.copy(ref.calls[:i] + ref.calls[i + 1:]),
                             f"a check requiring {call.name} (tool_called_with pinning what it is called for)")


def arg_mutants(ref: Reference) -> Iterator[Mutant]:
    """Each argument changed (and each omitted choice set), and each verification item left out."""
    for i, call in enumerate(ref.calls):
        spec = ref.entry.domain.tool_index.get(call.name)
        if spec is None:
            continue
        props = spec.schema.get("properties", {})
        skip = set(spec.free_text) | set(spec.filters) | {"rationale"}
        if call.name == ref.decision_tool:
            skip.add("decision")  # the label mutants change it
        for k, v in call.arguments.items():
            if k in skip:
                continue
            for alt in _alternatives(v, k, props.get(k, {}), ref.pool):
                new = ref.copy()
                new[i].arguments[k] = alt
                yield ref.mutant(f"arg:{i}:{call.name}.{k}={json.dumps(alt, default=str)}", "arg", new,
                                 f"tool_called_with {call.name} pinning {k} = {json.dumps(v, default=str)}")
        for k, prop in props.items():
            # an optional choice the solution leaves at its default: each other value is a
            # plausible wrong play too (a condition attached, a refund routed elsewhere)
            if k in call.arguments or k in skip:
                continue
            for alt in prop.get("enum") or ([True, False] if prop.get("type") == "boolean" else []):
                if "default" in prop and alt == prop["default"]:
                    continue
                new = ref.copy()
                new[i].arguments[k] = alt
                yield ref.mutant(f"arg:{i}:{call.name}.{k}={json.dumps(alt)}", "arg", new,
                                 f"tool_not_called_with {call.name} {k} = {json.dumps(alt)} (or a pin on {k})")
        for param in _verified_params(spec):
            if param in call.arguments:
                new = ref.copy()
                del new[i].arguments[param]
                yield ref.mutant(f"verify:{i}:{call.name}-{param}", "verify", new,
                                 f"tool_returned {call.name} (how many items matched), or a pin on {param}")


def added_calls(entry: Entry, calls: list[PlannedCall], decision_tool: str) -> Iterator[PlannedCall]:
    """Each offered action the solution (`calls`) does not take, as one more call: the arguments
    it shares with the solution's calls (free text aside), the rest filled in. The mutation
    gate's `add` mutants, and the benign gate's `extra` variants of those declared harmless."""
    called = {c.name for c in calls}
    known: dict[str, Any] = {}
    for c in calls:
        for k, v in c.arguments.items():
            known.setdefault(k, v)
    for spec in exposed_tools(entry.domain, entry.scenario):
        if spec.name in called or not is_action(spec, decision_tool):
            continue
        params = spec.schema.get("properties", {})
        given = {k: v for k, v in known.items() if k in params and k not in spec.free_text}
        yield PlannedCall(name=spec.name, arguments=fill_arguments(spec, given, guess=lambda p: "as requested"))


def add_mutants(ref: Reference) -> Iterator[Mutant]:
    """Each offered action the solution does not take, taken before the decision."""
    at = next((i for i in range(len(ref.calls) - 1, -1, -1) if ref.calls[i].name == ref.decision_tool), len(ref.calls))
    for call in added_calls(ref.entry, ref.calls, ref.decision_tool):
        new = ref.copy()
        new.insert(at, call)
        yield ref.mutant(f"add:{call.name}", "add", new, f"tool_not_called {call.name}")


def order_mutants(ref: Reference, problems: list[str]) -> Iterator[Mutant]:
    """Each pair the policy orders, swapped (a reference breaking one is a problem of its own)."""
    first: dict[str, int] = {}
    for i, c in enumerate(ref.calls):
        first.setdefault(c.name, i)
    for a, b, why in order_pairs(ref.entry):
        if a not in first or b not in first:
            continue
        if first[a] > first[b]:
            problems.append(f"reference_solution: calls {b} before {a}, which the policy orders the other way ({why})")
            continue
        new = ref.copy()
        new.insert(first[a], new.pop(first[b]))
        yield ref.mutant(f"order:{a}>{b}", "order", new, f"tool_before_tool {a} -> {b} ({why})")


def label_mutants(ref: Reference) -> Iterator[Mutant]:
    decision_calls = [i for i, c in enumerate(ref.calls) if c.name == ref.decision_tool]
    for label in LABELS:
        if label == ref.entry.scenario.expected:
            continue
        new, text = ref.copy(), ref.final
        if decision_calls:
            new[decision_calls[-1]].arguments["decision"] = label
        else:  # the decision travels in a fenced JSON block of the final text
            text = re.sub(r'"decision":\s*"[A-Z-]+"', f'"decision": "{label}"', ref.final)
        yield ref.mutant(f"label:{label}", "label", new, "decision_equals", final=text)


def disclose_mutants(ref: Reference, problems: list[str]) -> Iterator[Mutant]:
    """A restricted value disclosed; for a restricted category, each of the domain's
    paraphrases of it said (the fact in other words than the scenario's values)."""
    gate = ref.entry.scenario.mutation_gate
    categories = ref.entry.domain.categories
    for i, r in enumerate(gate.restricted if gate else []):
        if r.text is not None:
            text = (ref.final + "\n\n" if ref.final else "") + DISCLOSURE.format(text=r.text)
            yield ref.mutant(f"disclose:{r.text}", "disclose", ref.copy(),
                             f"message_not_contains {r.text!r} ({r.why})", final=text)
            continue
        category = categories.get(r.category or "")
        if category is None:
            problems.append(f"mutation_gate.restricted[{i}].category: no restricted category {r.category!r} "
                            f"in the {ref.entry.domain.name} domain's domain.json")
            continue
        for j, said in enumerate(category.paraphrases):
            text = (ref.final + "\n\n" if ref.final else "") + said
            yield ref.mutant(f"disclose:{category.name}:{j + 1}", "disclose", ref.copy(),
                             f"message_not_contains over the {category.name} vocabulary ({category.clause}), "
                             f"which {said!r} must match", final=text)


def mutants(entry: Entry) -> tuple[list[Mutant], list[str]]:
    """Every mutant of the scenario, and problems of the reference itself (an order it breaks)."""
    ref = Reference.of(entry)
    problems: list[str] = []
    found = [*drop_mutants(ref), *arg_mutants(ref), *add_mutants(ref), *order_mutants(ref, problems),
             *label_mutants(ref), *disclose_mutants(ref, problems)]
    return found, problems


def killed(entry: Entry, mutant: Mutant, plays: dict[str, OfflineRun] | None = None) -> bool:
    """Whether a deterministic check fails on the mutant's play (`plays`: evaluate_calls)."""
    return not evaluate_calls(entry, mutant.calls, mutant.final_text, plays).all_passed


def equivalence(entry: Entry, mutant_id: str) -> str | None:
    gate = entry.scenario.mutation_gate
    for e in gate.equivalent if gate else []:
        if fnmatch.fnmatchcase(mutant_id, e.mutant):
            return e.reason
    return None


_GATES: dict[tuple[int, int], tuple[Any, GateResult]] = {}


def run_gate(entry: Entry) -> GateResult:
    """The scenario's mutants, played (memoized per scenario object, as the gates' plays are:
    validate and the tests ask for the same scenarios; and per case: see case_key)."""
    key = (id(entry.scenario), id(entry.domain))
    hit = _GATES.get(key)
    if hit is not None and hit[0] is entry.scenario:
        return hit[1]
    case = (id(entry.domain), case_key(entry))
    same = _CASES.get(case)
    if same is not None and same[0] is entry.domain:
        result = same[1]
    else:
        result = _run_gate(entry)
        _CASES[case] = (entry.domain, result)
    _GATES[key] = (entry.scenario, result)
    return result


_CASES: dict[tuple[int, str], tuple[Any, GateResult]] = {}


def _run_gate(entry: Entry) -> GateResult:
    if entry.scenario.reference_solution is None and not entry.domain.original_layout:
        # (an original pi-bench scenario is mutated from the plan derived from its checks)
        return GateResult(problems=["mutation gate: no reference_solution to mutate"])
    result = GateResult()
    found, result.problems = mutants(entry)
    plays: dict[str, OfflineRun] = {}
    for m in found:
        reason = equivalence(entry, m.id)
        if reason is not None:
            result.equivalent[m.id] = reason
        elif killed(entry, m, plays):
            result.killed.append(m.id)
        else:
            result.survived.append(m)
    return result


def gate_problems(entry: Entry, result: GateResult | None = None) -> list[str]:
    result = result or run_gate(entry)
    return result.problems + unused_equivalents(entry, result) + [
        f"mutation gate: mutant {m.id} survives (every deterministic check passes); add {m.hint}, "
        "or declare it in mutation_gate.equivalent with the reason it is still correct"
        for m in result.survived
    ]


def unused_equivalents(entry: Entry, result: GateResult) -> list[str]:
    """Declared equivalents that match no mutant (a stale declaration hides nothing, but says
    something that is no longer true)."""
    gate = entry.scenario.mutation_gate
    ids = list(result.equivalent) + result.killed + [m.id for m in result.survived]
    return [f"mutation_gate.equivalent[{i}]: {e.mutant!r} matches no mutant"
            for i, e in enumerate(gate.equivalent if gate else [])
            if not any(fnmatch.fnmatchcase(m, e.mutant) for m in ids)]
