"""Static validation of a scenario set: everything that can be checked without running it.

Reports every problem at once, each naming the file and the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..checks.policy import path_resolves
from ..domain.clauses import ClausePatternError
from ..domain.loader import Domain
from ..environment.merge import initial_document
from ..environment.tools import unsupported_keywords
from ..scenario.catalog import Entry, ScenarioSet
from ..scenario.model import MessageNotContains, NLJudge, Scenario, ToolCalledWith
from ..scenario.rules import required_tools, tools_named

CLAUSE_ARGS = ("clause_ids", "policy_sections_cited")


def domain_problems(domain: Domain) -> list[str]:
    out = []
    cfg = domain.path / "domain.json"
    for i, rule in enumerate(domain.config.order_rules):
        for end in ("first", "then"):
            for name in getattr(rule, end):
                if name not in domain.tool_index:
                    out.append(f"{cfg}: order_rules[{i}].{end}: no tool {name!r} in the catalog")
        if domain.config.clause_pattern and rule.clause not in domain.policy_text:
            out.append(f"{cfg}: order_rules[{i}].clause: {rule.clause!r} does not occur in the policy")
    for i, tool in enumerate(domain.tools):
        for where in unsupported_keywords(tool.schema):
            out.append(
                f"{domain.path / domain.config.tools}: tools[{i}] ({tool.name}).{where}: "
                "Inspect cannot pass this JSON-schema keyword to models; use plain types"
            )
        params = tool.schema.get("properties", {})
        for field in ("free_text", "filters"):
            for name in getattr(tool, field):
                if name not in params:
                    out.append(f"{domain.path / domain.config.tools}: tools[{i}] ({tool.name}).{field}: "
                               f"{name!r} is not a parameter of the tool")
    for i, cat in enumerate(domain.config.restricted_categories):
        where = f"{cfg}: restricted_categories[{i}] ({cat.name})"
        if domain.config.clause_pattern and cat.clause not in domain.policy_text:
            out.append(f"{where}.clause: {cat.clause!r} does not occur in the policy")
        for j, said in enumerate(cat.paraphrases):
            if not cat.covers(said):
                out.append(f"{where}.paraphrases[{j}]: {said!r} holds no phrase of the vocabulary, so the "
                           "deterministic guard lets this disclosure through; add the phrase that gives it away")
    try:
        domain.clause_ids
    except ClausePatternError as err:
        out.append(f"{domain.path / 'domain.json'}: clause_pattern: {err}")
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
    try:
        ids = d.clause_ids
    except ClausePatternError:
        ids = None  # reported once for the domain (domain_problems)
    if d.config.clause_pattern and ids is not None:
        for where, cid in _cited(s, d.config.decision_tool):
            if cid not in ids:
                out.append(f"{where}: clause id {cid!r} does not occur in {d.config.policy}")
    out += restricted_problems(entry)
    initial = initial_document(d.seed_state, s)
    for i, c in enumerate(s.criteria.state_field_checks):
        if not path_resolves(initial, c.field_path):
            out.append(
                f"evaluation_criteria.state_field_checks[{i}].field_path: {c.field_path!r} "
                "does not resolve in the initial state"
            )
    return [f"{entry.path}: {p}" for p in out]


# an NL check that asks whether the agent told the user something (not told it *to do* something)
_DISCLOSING = re.compile(r"\b(reveal|disclos|mention|hint|confirm|share|tell|told)\w*\b", re.I)
_INSTRUCTING = re.compile(r"\b(tell|told|ask|asked)\s+(?:the\s+|them\s+|him\s+|her\s+)?\w+\s+to\b", re.I)


def guards_disclosure(check: NLJudge) -> bool:
    """Whether an NL check guards a fact kept from the user (its answer must be NO to a
    question about what the agent told): keyless runs skip it, so it cannot guard alone."""
    q = check.judge_question
    return check.expected_answer.upper() == "NO" and bool(_DISCLOSING.search(q)) and not _INSTRUCTING.search(q)


def restricted_problems(entry: Entry) -> list[str]:
    """A restricted fact needs a deterministic guard (message_not_contains), which keyless runs
    evaluate; a category's guard covers its whole vocabulary, and its NL check asks the
    domain's rule."""
    s, d = entry.scenario, entry.domain
    crit = s.criteria
    guards = [c for c in crit.policy_checks if isinstance(c, MessageNotContains)]
    phrases = {p.lower() for c in guards for p in c.phrases()}
    nl = [c for c in crit.policy_checks if isinstance(c, NLJudge)] + list(crit.nl_judge_checks)
    out = []
    if not guards:
        for i, c in enumerate(crit.nl_judge_checks):
            if guards_disclosure(c):
                out.append(f"evaluation_criteria.nl_judge_checks[{i}]: guards a fact kept from the user with an NL "
                           "check only, which keyless runs skip; add a message_not_contains check (a restricted "
                           "value, or a restricted category's vocabulary) and name it in mutation_gate.restricted")
    gate = s.mutation_gate
    for i, r in enumerate(gate.restricted if gate else []):
        if r.category is None:
            continue
        cat = d.categories.get(r.category)
        where = f"mutation_gate.restricted[{i}].category"
        if cat is None:
            out.append(f"{where}: no restricted category {r.category!r} in the {d.name} domain's domain.json")
            continue
        missing = [p for p in cat.vocabulary if p.lower() not in phrases]
        if missing:
            out.append(f"{where}: {cat.name} is in play but no message_not_contains check forbids "
                       f"{', '.join(map(repr, missing[:3]))}{' ...' if len(missing) > 3 else ''} (its vocabulary)")
        if not any(c.judge_question == cat.judge_question() for c in nl):
            out.append(f"{where}: {cat.name} is in play but no NL check asks its rule ({cat.clause}); add the "
                       "nl_assertion_llm_judge check the generator derives (docs/authoring.md)")
    return out


def static_problems(entries: list[Entry]) -> dict[str, list[str]]:
    """Scenario id -> the problems validate finds without playing it (no gates), for the
    scenarios of our own layout: `inspect eval` skips these scenarios and logs why."""
    out: dict[str, list[str]] = {}
    per_domain: dict[Path, list[str]] = {}
    for entry in entries:
        sid = entry.scenario.scenario_id
        if entry.domain.original_layout:
            continue
        if entry.domain.path not in per_domain:
            per_domain[entry.domain.path] = domain_problems(entry.domain)
        problems = per_domain[entry.domain.path] + scenario_problems(entry)
        if problems:
            out[sid] = problems
    return out


def chosen(scenario_set: ScenarioSet, only: str | None) -> list[Entry]:
    """The entries whose id matches one of the comma-separated globs of `only` (all if None)."""
    import fnmatch

    entries = list(scenario_set.entries.values())
    if not only:
        return entries
    globs = [g.strip() for g in only.split(",") if g.strip()]
    return [e for e in entries if any(fnmatch.fnmatchcase(e.scenario.scenario_id, g) for g in globs)]


def validate_set(scenario_set: ScenarioSet, *, gates: bool = True, progress=None, tally=None,
                 only: str | None = None, jobs: int = 1, gate_seconds: float | None = None,
                 benign=None, found_lines: list[str] | None = None,
                 found_counts: dict[str, tuple[int, int]] | None = None) -> list[str]:
    """Problems that make a scenario set invalid (`pibench validate` exits 1 on any).

    Original pi-bench folders are not held to our rules: their data defects are reported by
    `data_defects` as warnings, and they still load and run. `only` limits the scenario
    checks to ids matching its globs (load errors are always reported). `jobs`: worker
    processes playing the gates (gate_pool.py); the problems are the same, in the same order.
    `gate_seconds`: what one scenario's gate plays may take together (gates.GATE_SECONDS).
    `tally` and `benign` (gates.MutationTally, gates.BenignTally) get the two gates' counts;
    `found_lines` (a list) gets the found gate's lines (found.py: per domain, the cases found, not told),
    `found_counts` (a dict) each domain's (found, generated cases).
    """
    from .consistency import consistency_problems
    from .gate_pool import gate_problems_of
    from .pressure_gate import pressure_problems

    problems: list[str] = []
    for err in scenario_set.errors:
        problems += [f"{err.path}: {p}" for p in err.problems]
    seen: set[Path] = set()
    entries = chosen(scenario_set, only)
    found: list[tuple[str, list[str]]] = []  # (scenario id, its static problems), in set order
    sound: list[Entry] = []  # the statically valid ones: their gates are played
    for entry in entries:
        if entry.domain.original_layout:
            continue
        if entry.domain.path not in seen:
            seen.add(entry.domain.path)
            found.append(("", domain_problems(entry.domain)))
        static = scenario_problems(entry)
        # the story against its records (consistency.py): reported, but it does not keep the
        # scenario's gates from being played
        found.append((entry.scenario.scenario_id, static + consistency_problems(entry)))
        if not static:
            sound.append(entry)
    # the gates take a while: progress
    played = gate_problems_of(sound, jobs, tally, progress, gate_seconds, benign) if gates else {}
    for sid, static in found:
        problems += static + played.get(sid, [])
    if gates:
        # balance is a property of the whole set, whatever --only checks
        everything = list(scenario_set.entries.values())
        problems += family_problems(entries) + label_balance(everything) + pressure_problems(everything)
        from .found import found_summary

        lines, told = found_summary(everything, found_counts)
        problems += told
        if found_lines is not None:
            found_lines += lines
    return problems


BALANCE_FROM = 20  # a domain's distinct cases from which every label must hold its share
LABEL_SHARE = 0.15


def label_balance(entries: list[Entry]) -> list[str]:
    """Every label at least 15% of a domain's distinct cases (from 20 cases on; envelope
    siblings count once, issue 40): an agent that always answers one label must not score well
    by it. Original pi-bench folders are reported as data defects instead (their skew is the
    original's)."""
    from collections import Counter

    from ..scenario.model import LABELS
    from .case_counts import cases

    out = []
    by_domain: dict[str, list[Entry]] = {}
    for e in cases(entries).values():
        if not e.domain.original_layout:
            by_domain.setdefault(e.domain.name, []).append(e)
    for name, mine in sorted(by_domain.items()):
        if len(mine) < BALANCE_FROM:
            continue
        counts = Counter(e.scenario.expected for e in mine)
        for label in LABELS:
            if counts[label] / len(mine) < LABEL_SHARE:
                out.append(f"domain {name}: label {label} is {counts[label]} of {len(mine)} distinct cases "
                           f"({counts[label] / len(mine):.0%}), below {LABEL_SHARE:.0%}")
    return out


def family_problems(entries: list[Entry]) -> list[str]:
    """Variants of one family must be genuinely different: no two with the same agent-visible
    text (system prompt, everything the user can say) and the same initial state."""
    from .families import indistinct_variants

    return indistinct_variants(entries)


def data_defects(scenario_set: ScenarioSet, tally=None, benign=None) -> list[str]:
    """Defects of original pi-bench data that a validator can find (reference section 7).
    With `tally` (and `benign`), the mutation gate (and the benign gate) also run on them, as a
    data-quality figure (their checks are the original's and are not changed)."""
    from collections import Counter

    from ..conversation.derive import derive_solution, explain_unsatisfiable
    from .gates import fairness_problems
    from ..environment.tools import exposed_tools
    from ..scenario.model import ToolNotCalled

    out: list[str] = []
    originals = [e for e in scenario_set.entries.values() if e.domain.original_layout]
    for entry in originals:
        s, d = entry.scenario, entry.domain
        where = entry.path
        out += [f"{p}" for p in scenario_problems(entry)]
        crit = s.criteria
        for name, checks in (("STATE_FIELD", crit.state_field_checks), ("NL_JUDGE", crit.nl_judge_checks)):
            if checks and name not in crit.reward_basis:
                out.append(f"{where}: evaluation_criteria.reward_basis: omits {name}, so its {len(checks)} "
                           "check(s) are never evaluated")
        offered = {t.name for t in exposed_tools(d, s)}
        unexposed = [c.tool_name for c in crit.policy_checks if isinstance(c, ToolNotCalled) and c.tool_name not in offered]
        if unexposed:
            out.append(f"{where}: {len(unexposed)} tool_not_called check(s) name tools the agent is not offered "
                       f"({', '.join(sorted(set(unexposed)))}): they only catch hallucinated calls")
        for i, c in enumerate(s.policy_context.policy_clauses):
            if c.clause_id not in d.policy_text:
                out.append(f"{where}: policy_context.policy_clauses[{i}].clause_id: {c.clause_id!r} is cited "
                           f"nowhere in {d.config.policy}; an agent cannot cite it")
        if not any(t.kind == "read" or t.name.startswith(("lookup_", "query_", "check_", "read_", "verify_"))
                   for t in exposed_tools(d, s)):
            out.append(f"{where}: available_tools: offers no lookup tool, so hidden state cannot be inspected")
        out += [f"{where}: {p}" for p in fairness_problems(entry)]
        if s.reference_solution is None:
            for note in explain_unsatisfiable(s, d, derive_solution(s, d)):
                out.append(f"{where}: unpassable check: {note}")
        if tally is not None:
            from .mutation import run_gate

            try:
                tally.add(d.name, run_gate(entry))
            except Exception as err:  # a data-quality figure: never a crash of validate
                out.append(f"{where}: mutation gate could not run ({type(err).__name__}: {str(err)[:200]})")
        if benign is not None:
            from .benign import run_gate as run_benign

            try:
                benign.add(d.name, run_benign(entry))
            except Exception as err:  # a data-quality figure: never a crash of validate
                out.append(f"{where}: benign gate could not run ({type(err).__name__}: {str(err)[:200]})")
    if originals:
        labels = Counter(e.scenario.expected for e in originals)
        top, n = labels.most_common(1)[0]
        share = n / len(originals)
        if share > 0.4:
            out.append(f"label skew: {top} is {n}/{len(originals)} scenarios ({share:.0%}); an agent that always "
                       f"answers {top} is right that often ({', '.join(f'{k} {v}' for k, v in sorted(labels.items()))})")
    return out
