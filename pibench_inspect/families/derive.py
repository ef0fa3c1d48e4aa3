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

Then one scenario per envelope of the case (the baseline and envelopes_per_case - 1 pressure
envelopes, taken in turn over the family's cases: case_envelopes), sharing the case. cases.py finds each case's path,
checks.py derives its checks, and this module assembles the scenario files.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..domain.catalog import Verify
from ..domain.loader import Domain
from ..environment.merge import initial_document
from ..scenario.loader import parse_scenario
from .cases import Case, FamilyError, build_case, harmless, optional_reason, outcome_applies, rendered
from .checks import derive_checks, derive_state_checks, first_call, ordering
from .model import ENVELOPE_STRESSORS, Envelope, Family
from .pressure import user_pressure

__all__ = ["FamilyError", "generate"]


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
                            "from": rendered(d.from_, case.env, f"steps.{sid}.derived.{arg}.from"),
                            "how": rendered(d.how, case.env, f"steps.{sid}.derived.{arg}.how")})
    out: dict[str, Any] = {"tool_calls": case.calls}
    if derived:
        out["derived"] = derived
    out["decision"] = case.outcome.label
    out["final_message"] = rendered(case.outcome.final_message, case.env, f"{case.combo}: final_message")
    return out


def noncompliant(family: Family, case: Case) -> dict[str, Any]:
    pushed = case.effect.pushed if case.effect and case.effect.pushed is not None else family.pushed
    calls = [{"name": family.steps[s].tool, "arguments": rendered(family.steps[s].args, case.env, f"steps.{s}.args")}
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
    for tool, reason in harmless(family, case).items():  # calling it too is no fault here: the add mutant is right
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
            right = rendered(values, case.env, f"steps.{sid}.accept.{arg}")
            # the reference's own value is no mutant (declaring it would match none); the reason
            # names the values as the scenario has them, not the family's templates
            for v in right:
                if v != call["arguments"].get(arg):
                    out.append({"mutant": f"arg:*:{step.tool}.{arg}={json.dumps(v, default=str)}",
                                "reason": f"any of {json.dumps(right, default=str)} is right for {arg} here"})
        reason = optional_reason(family, case, sid)
        if reason:
            out += [{"mutant": p, "reason": f"{step.tool} is optional here: {reason}"}
                    for p in optional_mutants(step.tool, call["arguments"], spec, case, domain)]
        if step.alternatives:
            out.append({"mutant": f"arg:*:{step.tool}.*",
                        "reason": f"{' or '.join([step.tool, *step.alternatives])} serve the same purpose; any of them counts"})
    return list({json.dumps(e, sort_keys=True): e for e in out}.values())


def optional_mutants(tool: str, args: dict[str, Any], spec: Any, case: Case, domain: Domain) -> list[str]:
    """The mutation gate's ids (as patterns) of an optional call's mutants: leaving it out
    (always made), changing it (when it passes an argument the gate changes or has a choice
    it leaves out), giving its verification one item fewer, and moving it across a domain
    order rule (when the rule's other end is on the path). Only these: a declaration that
    matches no mutant is reported."""
    out = [f"drop:*:{tool}"]
    props = spec.schema.get("properties", {})
    fixed = set(spec.free_text) | set(spec.filters) | {"rationale"}
    if any(a not in fixed for a in args) or any(
            a not in fixed and (p.get("enum") or p.get("type") == "boolean") for a, p in props.items()):
        out.append(f"arg:*:{tool}.*")
    verified = {v[1:] for step in spec.effect if isinstance(step, Verify)
                for v in step.verify.values() if isinstance(v, str) and v.startswith("$")}
    if verified & set(args):
        out.append(f"verify:*:{tool}-*")
    on_path = {c["name"] for c in case.calls}
    for rule in domain.config.order_rules:
        if tool in rule.first and on_path & set(rule.then) - {tool}:
            out.append(f"order:{tool}>*")
        if tool in rule.then and on_path & set(rule.first) - {tool}:
            out.append(f"order:*>{tool}")
    return list(dict.fromkeys(out))


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
             + rendered(o.notes, env, f"{case.combo}: notes"))
    pushed = noncompliant(family, case)
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
            "initial_state_patch": rendered(family.state, env, "state"),
            **{k: rendered(getattr(family, k), env, k) for k in ("customer", "account", "employee", "agent")
               if getattr(family, k) is not None},
        },
        "user_simulation": {
            "persona": rendered(envelope.persona or family.user.persona, env, "user.persona"),
            "known_facts": rendered(family.user.known_facts, env, "user.known_facts"),
            "goal": rendered(family.user.goal, env, "user.goal"),
            "initial_user_message": rendered(envelope.opening, env, f"envelopes.{name}.opening"),
            **user_pressure(family, domain, case, name, envelope, pushed["tool_calls"]),
            "facts": rendered(sim_facts, env, "user.facts"),
        },
        "evaluation_criteria": {
            "reward_basis": ["POLICY"] + (["STATE_FIELD"] if case.state_checks else [])
            + (["NL_JUDGE"] if case.nl_checks else []),
            "policy_checks": case.checks,
            "state_field_checks": case.state_checks,
            "nl_judge_checks": case.nl_checks,
        },
        "ablation_hints": {
            "structured_policy": rendered(o.structured_policy, env, f"{case.combo}: structured_policy"),
            "no_pressure_user_message": rendered(baseline.opening, env, "envelopes.baseline.opening"),
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
        "noncompliant_trajectory": pushed,
    }
    gate = {
        # the restricted facts and the family's own message_not_contains checks' phrases (checks.py)
        "restricted": case.restricted,
        "equivalent": equivalents(family, case, domain),
        "not_benign": [{"variant": d.variant, "reason": rendered(d.reason, env, f"not_benign[{i}].reason")}
                       for i, d in enumerate(family.not_benign) if outcome_applies(family, d.when, case)],
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
    for i, c in enumerate(family.constraints):
        if c.threshold is not None and c.threshold.clause not in domain.policy_text:
            raise FamilyError(f"constraints[{i}] ({c.name}).threshold.clause: {c.threshold.clause!r} "
                              f"does not occur in the {domain.name} policy")
    now = rendered(family.now, {}, "now")
    base = {"now": now, "today": str(now)[:10]}
    out = []
    for i, (combo, unsatisfied) in enumerate(family.combinations()):
        case = build_case(family, domain, combo, unsatisfied, base)
        derive_checks(family, domain, case, offered)
        first = scenario(family, domain, case, "baseline", family.envelopes["baseline"], offered)
        initial = initial_document(domain.seed_state, parse_scenario(first, check_rules=False))
        derive_state_checks(family, case, initial, domain)
        for name in case_envelopes(family, i):
            doc = scenario(family, domain, case, name, family.envelopes[name], offered)
            out.append((f"{combo}__{name}.json", doc))
    return out


def case_envelopes(family: Family, index: int) -> list[str]:
    """The envelopes of the family's case number `index`: the baseline, and n-1 of the pressure
    envelopes (n = envelopes_per_case) taken in turn, case after case, so that over the family's
    cases each is used equally often, give or take one; in the family's order."""
    pressing = [n for n in family.envelopes if n != "baseline"]
    k = family.envelope_count() - 1
    chosen = {pressing[(index * k + j) % len(pressing)] for j in range(k)} if pressing else set()
    return ["baseline"] + [n for n in pressing if n in chosen]
