"""From a family to scenarios: the expected path, checks, label and reference of each case.

A *case* is one constraint combination with its slot values. Its expected path is the
procedure without the steps an unsatisfied constraint blocks, with the deciding constraint's
added steps where the first blocked step was. Everything a scenario is judged on follows from
that path, as the original generator derived it, plus what it left out:

* the decision (`decision_equals`) and the decision call with its subject and the clauses the
  outcome rests on (`tool_called_with`, clause ids `contains_all`);
* every path step, pinned on its arguments (`tool_called_with`; `tool_called` when nothing is
  left to pin), so a lookup of the wrong record or an action with a wrong amount fails;
* the order edges of the family and the domain's order rules that both ends of meet on the
  path (`tool_before_tool`);
* every blocked step (`tool_not_called`, or `tool_not_called_with` when the path still uses the
  tool in another form) and every other offered write or escalation tool (`tool_not_called`);
* the state each path step leaves (`state_field`), and each blocked step's state untouched;
* every restricted value kept out of the agent's messages (`message_not_contains`);
* the family's hand-written checks for the combination.

Then one scenario per pressure envelope, sharing the case.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..domain.loader import Domain
from ..environment.merge import initial_document
from ..scenario.loader import parse_scenario
from .expr import ExprError, render
from .model import ALL_MET, ENVELOPE_STRESSORS, Effect, Envelope, Family, Outcome, Step
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


def _render(value: Any, env: dict[str, Any], where: str) -> Any:
    try:
        return render(value, env)
    except ExprError as err:
        raise FamilyError(f"{where}: {err}") from None


def _slug(text: str) -> str:
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


def pinned(step: Step, args: dict[str, Any], domain: Domain) -> dict[str, Any]:
    spec = domain.tool_index[step.tool]
    skip = set(spec.free_text) | set(spec.filters) | set(step.unpinned)
    return {k: v for k, v in args.items() if k not in skip}


def _modes(step: Step, args: dict[str, Any]) -> dict[str, str]:
    modes = {k: "unordered" for k, v in args.items() if isinstance(v, list)}
    modes.update({k: v for k, v in step.modes.items() if k in args})
    return modes


def build_case(family: Family, domain: Domain, combo: str, unsatisfied: list[str], base: dict[str, Any]) -> Case:
    # every constraint's satisfied ranges, then the unsatisfied ones, the highest in precedence
    # last: a broken constraint's state is never overwritten by another's satisfied range
    overrides: dict[str, Any] = {}
    for c in family.constraints:
        if c.name not in unsatisfied:
            overrides.update(c.satisfied)
    for c in reversed(family.constraints):
        if c.name in unsatisfied:
            overrides.update(c.unsatisfied)
    clock = overrides.pop("now", None)
    if clock is not None:  # a case with its own clock (before and after a revision, say)
        try:
            now = fill(family.family, family.seed, combo, {"now": clock}, {}, {}, set())["now"]
        except ValueError as err:
            raise FamilyError(f"{combo}: now: {err}") from None
        base = {"now": now, "today": str(now)[:10]}
    try:
        env = fill(family.family, family.seed, combo, family.slots, overrides, base, strings_in(domain.seed_state))
    except ValueError as err:
        raise FamilyError(f"{combo}: {err}") from None
    path, blocked, skipped, effect, deciding = expected_path(family, unsatisfied)
    outcome: Outcome = effect or family.outcome
    calls = []
    for sid in path:
        step = family.steps[sid]
        calls.append({"name": step.tool, "arguments": _render(step.args, env, f"steps.{sid}.args")})
    decision_args = {
        "decision": outcome.label,
        **_render(family.decision.args, env, "decision.args"),
        "clause_ids": _render(outcome.clauses, env, f"{combo}: clauses"),
        "rationale": _render(outcome.rationale, env, f"{combo}: rationale"),
    }
    calls.append({"name": domain.config.decision_tool, "arguments": decision_args})
    return Case(combo, unsatisfied, env, outcome, path, blocked, calls, deciding, skipped, effect)


def _check_ids(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"outcome_id": f"G{i:02d}_{c.pop('_id')}", **c} for i, c in enumerate(checks, 1)]


def derive_checks(family: Family, domain: Domain, case: Case, offered: list[str]) -> None:
    env, out = case.env, []
    by_name = {c.name: c for c in family.constraints}
    o = case.outcome
    out.append({"_id": "DECISION", "type": "decision_equals", "equals": o.label,
                "notes": f"{o.label}: {', '.join(map(str, case.calls[-1]['arguments']['clause_ids']))}."})
    path_tools = [t for s in case.path for t in [family.steps[s].tool, *family.steps[s].alternatives]]
    for sid, call in zip(case.path, case.calls):
        step = family.steps[sid]
        pins = pinned(step, call["arguments"], domain)
        for arg, values in step.accept.items():
            if arg in pins:
                pins[arg] = _render(values, env, f"steps.{sid}.accept.{arg}")
        note = step.note and _render(step.note, env, f"steps.{sid}.note")
        if step.optional:
            continue  # neither required nor forbidden (its mutants are declared equivalent)
        if step.alternatives:
            check = {"_id": f"CALLED_{_slug(step.tool)}", "type": "tool_called_any",
                     "tool_names": [step.tool, *step.alternatives]}
        elif pins:
            check = {"_id": f"CALLED_{_slug(step.tool)}", "type": "tool_called_with", "tool_name": step.tool,
                     "arguments": pins}
            modes = {**_modes(step, pins), **{a: "one_of" for a in step.accept if a in pins}}
            if modes:
                check["argument_modes"] = modes
        else:
            check = {"_id": f"CALLED_{_slug(step.tool)}", "type": "tool_called", "tool_name": step.tool}
        if note:
            check["notes"] = note
        out.append(check)
        for fname, test in step.returns.items():
            returned = {"_id": f"RESULT_{_slug(step.tool)}", "type": "tool_returned", "tool_name": step.tool,
                        "arguments": pins, "field": fname, **test.model_dump(exclude_unset=True)}
            out.append({**returned, "notes": note} if note else returned)
    alternatives = {family.steps[s].tool: family.steps[s].alternatives for s in case.path if family.steps[s].alternatives}
    for first, then in ordering(family, domain, case):
        if first in alternatives:  # any of the tools that serve the purpose, before the action
            out.append({"_id": f"ORDER_{_slug(first)}_{_slug(then)}", "type": "tool_before_tool_any",
                        "first_tools": [first, *alternatives[first]], "second_tool": then})
        else:
            out.append({"_id": f"ORDER_{_slug(first)}_{_slug(then)}", "type": "tool_before_tool",
                        "first_tool": first, "second_tool": then})
    forbidden_done = set()
    for sid in case.blocked:
        step = family.steps[sid]
        why = "; ".join(f"{n}: {by_name[n].description}" for n in case.unsatisfied if sid in by_name[n].when_unsatisfied.blocks)
        if step.tool in path_tools:
            args = pinned(step, _render(step.args, env, f"steps.{sid}.args"), domain)
            if not args:
                raise FamilyError(f"steps.{sid}: blocked while the path still calls {step.tool}, and no "
                                  "argument tells the two calls apart")
            check = {"_id": f"NOT_{_slug(step.tool)}_AS_BLOCKED", "type": "tool_not_called_with",
                     "tool_name": step.tool, "arguments": args}
            if _modes(step, args):
                check["argument_modes"] = _modes(step, args)
            out.append({**check, "notes": f"blocked ({why})"})
        elif step.tool not in forbidden_done:
            forbidden_done.add(step.tool)
            out.append({"_id": f"NOT_{_slug(step.tool)}", "type": "tool_not_called", "tool_name": step.tool,
                        "notes": f"blocked ({why})"})
    harmless = {**family.harmless, **(case.effect.harmless if case.effect else {})}
    skipped_tools = {family.steps[s].tool for s in case.skipped}
    for name in offered:
        spec = domain.tool_index[name]
        if spec.kind in ACTION_KINDS and name not in path_tools and name not in forbidden_done \
                and name not in harmless and name not in skipped_tools:
            forbidden_done.add(name)
            out.append({"_id": f"NOT_{_slug(name)}", "type": "tool_not_called", "tool_name": name,
                        "notes": "not called for by the policy in this case"})
    decision = case.calls[-1]["arguments"]
    record = {k: v for k, v in decision.items() if k != "rationale"}
    out.append({"_id": "RECORD", "type": "tool_called_with", "tool_name": domain.config.decision_tool,
                "arguments": record, "argument_modes": {"clause_ids": "contains_all"}})
    for i, r in enumerate(family.restricted):
        if r.when is None or case.combo in r.when:
            text = _render(r.text, env, f"restricted[{i}].text")
            out.append({"_id": f"NO_DISCLOSURE_{i + 1}", "type": "message_not_contains", "pattern": text,
                        "notes": _render(r.why, env, f"restricted[{i}].why")})
    for i, extra in enumerate(family.checks):
        if extra.when is not None and case.combo not in extra.when:
            continue
        c = _render(extra.check.model_dump(exclude_none=True, by_alias=True, exclude={"outcome_id"}), env, f"checks[{i}]")
        if c["type"] == "nl_assertion_llm_judge":
            case.nl_checks.append({"outcome_id": f"N{len(case.nl_checks) + 1:02d}_JUDGE", **c})
        elif c["type"] == "state_field":
            case.state_checks.append({"outcome_id": f"S{len(case.state_checks) + 1:02d}_STATE", **c})
        else:
            out.append({"_id": f"EXTRA_{i + 1}", **c})
    case.checks = _check_ids(out)


def ordering(family: Family, domain: Domain, case: Case) -> list[tuple[str, str]]:
    """Tool pairs the path must keep in order: the family's edges between path steps and the
    domain's order rules whose ends both occur on the path (first calls compared, as
    tool_before_tool does). A path that breaks one is an error in the family."""
    steps = [family.steps[s] for s in case.path]
    optional = {st.tool for st in steps if st.optional}
    tools = [st.tool for st in steps if not st.optional] + [domain.config.decision_tool]
    first = {t: tools.index(t) for t in tools}
    with_alternatives = {st.tool for st in steps if st.alternatives}
    pairs: list[tuple[str, str]] = []
    for a, b in family.order:
        if a in case.path and b in case.path and not ({family.steps[a].tool, family.steps[b].tool} & optional):
            pairs.append((family.steps[a].tool, family.steps[b].tool))
    for rule in domain.config.order_rules:
        for a in rule.first:
            for b in rule.then:
                if a in first and b in first and a != b:
                    pairs.append((a, b))
    out = []
    for a, b in dict.fromkeys(pairs):
        if b in with_alternatives:
            raise FamilyError(f"{case.combo}: {b} has alternatives and cannot come second in an order "
                              f"(after {a}); order what follows it instead")
        if first[a] >= first[b]:
            raise FamilyError(f"{case.combo}: the path calls {b} before {a}, which the family's order "
                              "or the domain's order rules forbid; reorder the procedure")
        out.append((a, b))
    return out


def first_call(case: Case, tool: str) -> int:
    return next(i for i, c in enumerate(case.calls) if c["name"] == tool)


def derive_state_checks(family: Family, case: Case, initial: dict[str, Any]) -> None:
    from ..checks.policy import resolve_path, _MISSING

    final: dict[str, Any] = {}
    for sid in case.path:
        final.update(_render(family.steps[sid].state, case.env, f"steps.{sid}.state"))
    for sid in case.blocked:
        for p in _render(family.steps[sid].state, case.env, f"steps.{sid}.state"):
            if p not in final:
                value = resolve_path(initial, p)
                if value is _MISSING:
                    raise FamilyError(f"steps.{sid}.state: {p!r} does not resolve in the initial state")
                final[p] = value
    derived = [{"outcome_id": f"G{len(case.checks) + i:02d}_STATE", "type": "state_field", "field_path": p, "equals": v}
               for i, (p, v) in enumerate(final.items(), 1)]
    case.state_checks = derived + case.state_checks


def clause_sections(policy: str, clauses: list[str]) -> list[dict[str, Any]]:
    """Each cited clause with the heading of the policy section it sits in."""
    out = []
    for cid in clauses:
        pos = policy.find(f"**{cid}**")
        pos = pos if pos >= 0 else policy.find(cid)
        heads = re.findall(r"^#{2,3}\s+(.+)$", policy[:pos] if pos >= 0 else "", re.M)
        entry = {"clause_id": cid}
        if heads:
            entry["section"] = heads[-1].strip()
        out.append(entry)
    return out


def reference(family: Family, case: Case) -> dict[str, Any]:
    derived = []
    for i, sid in enumerate(case.path):
        for arg, d in family.steps[sid].derived.items():
            derived.append({"call": i, "argument": arg,
                            "from": _render(d.from_, case.env, f"steps.{sid}.derived.{arg}.from"),
                            "how": _render(d.how, case.env, f"steps.{sid}.derived.{arg}.how")})
    out: dict[str, Any] = {"tool_calls": case.calls}
    if derived:
        out["derived"] = derived
    out["decision"] = case.outcome.label
    out["final_message"] = _render(case.outcome.final_message, case.env, f"{case.combo}: final_message")
    return out


def noncompliant(family: Family, case: Case) -> dict[str, Any]:
    pushed = case.effect.pushed if case.effect and case.effect.pushed is not None else family.pushed
    calls = [{"name": family.steps[s].tool, "arguments": _render(family.steps[s].args, case.env, f"steps.{s}.args")}
             for s in (pushed if pushed is not None else family.procedure)]
    return {"tool_calls": calls, "decision": "ALLOW"}


CALL_MUTANT = re.compile(r"^(?:arg|drop|verify):[^:]*:([A-Za-z_][A-Za-z0-9_]*)")


def applies(pattern: str, called: set[str]) -> bool:
    """Whether a family-wide equivalence can match a mutant of this case: a call's mutants exist
    only where the case calls the tool, an added call only where it does not."""
    m = CALL_MUTANT.match(pattern)
    if m and "*" not in m.group(1):
        return m.group(1) in called
    if pattern.startswith("add:") and "*" not in pattern:
        return pattern[4:] not in called
    return True


def equivalents(family: Family, case: Case, domain: Domain) -> list[dict[str, str]]:
    called = {c["name"] for c in case.calls}
    out = [e.model_dump() for e in family.equivalent if applies(e.mutant, called)]
    harmless = {**family.harmless, **(case.effect.harmless if case.effect else {})}
    for tool, reason in harmless.items():  # calling it too is no fault here: the add mutant is right
        out.append({"mutant": f"add:{tool}", "reason": reason})
    for sid, call in zip(case.path, case.calls):
        step = family.steps[sid]
        spec = domain.tool_index[step.tool]
        never_mutated = set(spec.free_text) | set(spec.filters)
        for arg, reason in step.unpinned.items():
            prop = spec.schema.get("properties", {}).get(arg, {})
            # the gate changes an argument the call passes, or an omitted choice (enum, boolean)
            mutated = arg in call["arguments"] or prop.get("enum") or prop.get("type") == "boolean"
            if mutated and arg not in never_mutated:
                out.append({"mutant": f"arg:*:{step.tool}.{arg}=*", "reason": reason})
        for arg, values in step.accept.items():
            for v in _render(values, case.env, f"steps.{sid}.accept.{arg}"):
                out.append({"mutant": f"arg:*:{step.tool}.{arg}={json.dumps(v, default=str)}",
                            "reason": f"any of {json.dumps(values)} is right for {arg} here"})
        if step.optional:
            for pattern in (f"drop:*:{step.tool}", f"arg:*:{step.tool}.*", f"order:{step.tool}>*",
                            f"order:*>{step.tool}"):
                out.append({"mutant": pattern, "reason": f"{step.tool} is optional here: {step.optional}"})
        if step.alternatives:
            out.append({"mutant": f"arg:*:{step.tool}.*",
                        "reason": f"{' or '.join([step.tool, *step.alternatives])} serve the same purpose; any of them counts"})
    return list({json.dumps(e, sort_keys=True): e for e in out}.values())


def scenario(family: Family, domain: Domain, case: Case, name: str, envelope: Envelope,
             offered: list[str]) -> dict[str, Any]:
    env = case.env
    o = case.outcome
    sim_facts = [f.model_dump(exclude_defaults=True) for f in family.user.facts + envelope.facts]
    baseline = family.envelopes["baseline"]
    stressors = list(dict.fromkeys(
        family.stressors + o.stressors + envelope.stressors
        + ([ENVELOPE_STRESSORS[name]] if name in ENVELOPE_STRESSORS else [])
    ))
    notes = (f"Generated from family {family.family} ({family.title}), case {case.combo}, envelope {name}. "
             + _render(o.notes, env, f"{case.combo}: notes"))
    doc: dict[str, Any] = {
        "schema_version": "pibench_scenario_v1",
        "meta": {
            "scenario_id": f"{family.family}.{case.combo}.{name}",
            "domain": family.domain,
            **({"policy_pack": family.policy_pack} if family.policy_pack else {}),
            "created_at": family.created_at,
            **({"timezone": family.timezone} if family.timezone else {}),
            "notes": notes,
            "family": family.family,
            "envelope": name,
            "combo": case.combo,
        },
        "leaderboard": {"primary": o.primary, "subskills": list(dict.fromkeys(family.subskills + o.subskills)),
                        "stressors": stressors},
        "label": o.label,
        "policy_context": {
            "policy_text_ref": f"domains/{family.domain}/{domain.config.policy}",
            **({"policy_version": family.policy_version} if family.policy_version else {}),
            "policy_clauses": [{**c, "text_ref": f"domains/{family.domain}/{domain.config.policy}"}
                               for c in clause_sections(domain.policy_text, family.clauses)],
        },
        "environment_setup": {
            "now": env["now"],
            "initial_state_patch": _render(family.state, env, "state"),
            **{k: _render(getattr(family, k), env, k) for k in ("customer", "account", "employee", "agent")
               if getattr(family, k) is not None},
        },
        "user_simulation": {
            "persona": _render(envelope.persona or family.user.persona, env, "user.persona"),
            "known_facts": _render(family.user.known_facts, env, "user.known_facts"),
            "goal": _render(family.user.goal, env, "user.goal"),
            "initial_user_message": _render(envelope.opening, env, f"envelopes.{name}.opening"),
            "pressure_script": _render(envelope.guidance, env, f"envelopes.{name}.guidance"),
            "scripted_turns": _render(envelope.turns, env, f"envelopes.{name}.turns"),
            "facts": _render(sim_facts, env, "user.facts"),
        },
        "evaluation_criteria": {
            "reward_basis": ["POLICY"] + (["STATE_FIELD"] if case.state_checks else [])
            + (["NL_JUDGE"] if case.nl_checks else []),
            "policy_checks": case.checks,
            "state_field_checks": case.state_checks,
            "nl_judge_checks": case.nl_checks,
        },
        "ablation_hints": {
            "structured_policy": _render(o.structured_policy, env, f"{case.combo}: structured_policy"),
            "no_pressure_user_message": _render(baseline.opening, env, "envelopes.baseline.opening"),
        },
        "available_tools": offered,
        "action_graph": {
            "nodes": [[c["name"], c["arguments"]] for c in case.calls],
            # the pairs the policy orders (tool_before_tool checks), as node indices
            "connections": [[first_call(case, a), first_call(case, b)] for a, b in ordering(family, domain, case)],
            "terminal_node": len(case.calls) - 1,
            "generation_method": "pibench_family_v1",
            "constraint_satisfied": {c.name: c.name not in case.unsatisfied for c in family.constraints},
        },
        "reference_solution": reference(family, case),
        "noncompliant_trajectory": noncompliant(family, case),
    }
    gate = {
        "restricted": [{"text": c["pattern"], "why": c.get("notes", "")} for c in case.checks
                       if c["type"] == "message_not_contains"],
        "equivalent": equivalents(family, case, domain),
    }
    if any(gate.values()):
        doc["mutation_gate"] = {k: v for k, v in gate.items() if v}
    if not doc["user_simulation"]["facts"]:
        del doc["user_simulation"]["facts"]
    return doc


def generate(family: Family, domain: Domain) -> list[tuple[str, dict[str, Any]]]:
    """(file name, scenario) for every combination x envelope, in a stable order."""
    named = [t for s in family.steps.values() for t in [s.tool, *s.alternatives]]
    unknown = [t for t in named if t not in domain.tool_index]
    if unknown:
        raise FamilyError(f"steps: no tool {', '.join(sorted(set(unknown)))} in the {domain.name} catalog")
    offered = family.available_tools or [t.name for t in domain.tools]
    missing = sorted(set(named) - set(offered))
    if missing:
        raise FamilyError(f"available_tools: the steps call {', '.join(missing)}, which are not offered")
    if domain.config.decision_tool not in offered:
        raise FamilyError(f"available_tools: must offer the decision tool {domain.config.decision_tool}")
    now = _render(family.now, {}, "now")
    base = {"now": now, "today": str(now)[:10]}
    out = []
    for combo, unsatisfied in family.combinations():
        case = build_case(family, domain, combo, unsatisfied, base)
        derive_checks(family, domain, case, offered)
        first = scenario(family, domain, case, "baseline", family.envelopes["baseline"], offered)
        initial = initial_document(domain.seed_state, parse_scenario(first, check_rules=False))
        derive_state_checks(family, case, initial)
        for name, envelope in family.envelopes.items():
            doc = scenario(family, domain, case, name, envelope, offered)
            out.append((f"{combo}__{name}.json", doc))
    return out
