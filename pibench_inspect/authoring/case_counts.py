"""Distinct cases of a scenario set: what a column's score is an observation of.

A *case* is a family's constraint combination (all met, one broken constraint, a crossed pair, a
listed combo); its envelope siblings differ only in the user's words, so for an agent that is
not swayed by pressure they are one observation. A hand-written scenario is its own case.
`pibench list` prints these counts and `pibench validate` the multi-constraint share; the
report's power table counts cases the same way (reports/stats.py).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from ..scenario.catalog import Entry
from ..scenario.model import LABELS, Scenario
from ..scoring.metrics import COLUMNS


def generated(s: Scenario) -> bool:
    return bool(s.meta.family and s.meta.combo)


def broken(s: Scenario) -> list[str]:
    """The constraints a generated scenario breaks, in the family's precedence order ([] for an
    all-met case and for a hand-written scenario)."""
    if not generated(s) or s.action_graph is None:
        return []
    return [name for name, ok in s.action_graph.constraint_satisfied.items() if ok is False]


def case_key(s: Scenario) -> str:
    """A stable key of the scenario's case: `<family>.<combo>` for a generated one, the scenario
    id for a hand-written one."""
    return f"{s.meta.family}.{s.meta.combo}" if generated(s) else s.scenario_id


def cases(entries: list[Entry]) -> dict[str, Entry]:
    """Case key -> one scenario of it (the first met), in set order."""
    out: dict[str, Entry] = {}
    for e in entries:
        out.setdefault(case_key(e.scenario), e)
    return out


def multi_share(entries: list[Entry]) -> tuple[int, int]:
    """(generated cases breaking two or more constraints, generated cases)."""
    mine = [e for e in cases(entries).values() if generated(e.scenario)]
    return sum(1 for e in mine if len(broken(e.scenario)) >= 2), len(mine)


def share(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else f"{k}/{n} (n/a)"


def summary_lines(entries: list[Entry]) -> list[str]:
    """Distinct cases per column (and the families they come from), per label per domain, the
    largest family's share of the cases, and the multi-constraint share of generated cases."""
    one = list(cases(entries).values())
    n = len(one)
    if not n:
        return ["cases: none"]
    out = [f"{n} distinct cases ({sum(1 for e in one if generated(e.scenario))} generated, "
           f"{sum(1 for e in one if not generated(e.scenario))} hand-written; envelope siblings count once)"]
    by_col: dict[str, list[Entry]] = defaultdict(list)
    for e in one:
        by_col[e.scenario.primary].append(e)
    out.append("cases per column:")
    for col in [c for c in COLUMNS if c in by_col] + sorted(c for c in by_col if c not in COLUMNS):
        mine = by_col[col]
        out.append(f"  {col}: {len(mine)} cases from {len({e.scenario.family for e in mine})} families")
    by_domain: dict[str, list[Entry]] = defaultdict(list)
    for e in one:
        by_domain[e.domain.name].append(e)
    out.append("cases per label:")
    for d, mine in sorted(by_domain.items()):
        labels = Counter(e.scenario.expected for e in mine)
        parts = [f"{lab} {share(labels[lab], len(mine))}" for lab in LABELS]
        out.append(f"  {d}: " + ", ".join(parts))
    sizes = Counter(e.scenario.family for e in one)
    top, k = sizes.most_common(1)[0]
    out.append(f"largest family: {top}, {share(k, n)} of the cases")
    for d, mine in sorted(by_domain.items()):
        out.append(f"multi-constraint cases ({d}): {share(*multi_share(mine))} of generated cases break 2+ constraints")
    out.append(f"multi-constraint cases (all): {share(*multi_share(one))} of generated cases break 2+ constraints")
    return out


def multi_constraint_figure(entries: list[Entry]) -> str:
    return f"multi-constraint cases {share(*multi_share(entries))} of generated cases"


# what `pibench validate`'s per-domain line gives from the domain's entries alone; the gates'
# figures (found, benign variants, disclosure mutants) follow it (cli/main.py domain_lines)
DOMAIN_FIGURES = [multi_constraint_figure]
