"""`pibench compare A B`: is agent A better than agent B, column by column, on the same scenarios?

Two separate intervals overlap long after a paired comparison can tell the agents apart: most of
a column's spread is which scenarios it holds, and that is the same for both agents. So the
runs are paired by scenario (each scenario's epochs averaged), and one bootstrap resamples
*families* (a family's variants are not independent) and recomputes both agents' statistics on
the same resample; the interval of their difference is the percentile interval of those paired
differences. A difference whose interval excludes zero is reported as distinguishable.

Scenarios in one run only are named and left out, never silently paired.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..scoring.metrics import COLUMNS, GROUPS
from .logs import ReportInputError, load_logs
from .rows import log_rows
from .stats import RESAMPLES, SEED, Clusters, resample_weights

HEADLINE = ("compliance_rate", "overall_score", *GROUPS)
# with fewer families the bootstrap cannot see the spread between them: no verdict is given
MIN_FAMILIES = 5


@dataclass
class Comparison:
    a: str
    b: str
    scenarios: int
    families: int
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)  # statistic, a, b, diff, low, high, n
    method: str = ""


def scenario_means(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One pseudo-run per scenario: its family, column, and its epochs' mean pass and credit."""
    acc: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["status"] == "completed":
            acc[r["scenario_id"]].append(r)
    return {
        sid: {"scenario_id": sid, "status": "completed", "family": rs[0].get("family") or sid,
              "leaderboard_primary": rs[0].get("leaderboard_primary"),
              "all_passed": sum(float(r["all_passed"]) for r in rs) / len(rs),
              "partial_credit": sum(float(r["partial_credit"]) for r in rs) / len(rs)}
        for sid, rs in acc.items()
    }


def paired(a_rows: list[dict[str, Any]], b_rows: list[dict[str, Any]], names: tuple[str, str] = ("A", "B"),
           resamples: int = RESAMPLES, seed: int = SEED) -> Comparison:
    a, b = scenario_means(a_rows), scenario_means(b_rows)
    shared = sorted(set(a) & set(b))
    out = Comparison(names[0], names[1], len(shared), 0, sorted(set(a) - set(b)), sorted(set(b) - set(a)),
                     method=f"paired by scenario; percentile bootstrap over families, {resamples} resamples, seed {seed}")
    if not shared:
        return out
    ca, cb = Clusters([a[s] for s in shared]), Clusters([b[s] for s in shared])
    # both sides hold the same scenarios, so the same families and columns in the same order
    for s in shared:
        if (a[s]["family"], a[s]["leaderboard_primary"]) != (b[s]["family"], b[s]["leaderboard_primary"]):
            raise ReportInputError(f"{s}: the two runs disagree on its family or column; did they run different "
                                   "versions of the scenario set?")
    out.families = len(ca.names)
    ones = np.ones((1, len(ca.names)))
    pa, pb = ca.stats(ones), cb.stats(ones)
    w = resample_weights(len(ca.names), resamples, seed)
    ba, bb = ca.stats(w), cb.stats(w)
    for key in [*HEADLINE, *[c for c in COLUMNS if c in ca.columns], *[c for c in ca.columns if c not in COLUMNS]]:
        if key not in pa:
            continue
        diff = ba[key] - bb[key]
        diff = diff[~np.isnan(diff)]
        low, high = np.percentile(diff, [2.5, 97.5]) if len(diff) else (np.nan, np.nan)
        n = len(ca.scenarios[key]) if key in ca.scenarios else len(shared)
        fam = len(ca.families[key]) if key in ca.families else len(ca.names)
        out.rows.append({"statistic": key, "a": float(pa[key][0]), "b": float(pb[key][0]),
                         "diff": float(pa[key][0] - pb[key][0]), "low": float(low), "high": float(high),
                         "scenarios": n, "families": fam,
                         "distinguishable": bool(len(diff)) and fam >= MIN_FAMILIES and bool(low > 0 or high < 0)})
    return out


def one_agent(path: str | Path) -> tuple[str, list[dict[str, Any]]]:
    logs = load_logs([path], check=True)
    agents = sorted({x.agent_id for x in logs})
    if len(agents) > 1:
        raise ReportInputError(f"{path}: holds runs of several agents ({', '.join(agents)}); give one run per side")
    return agents[0], log_rows(logs)


def compare_logs(a: str | Path, b: str | Path, resamples: int = RESAMPLES, seed: int = SEED) -> Comparison:
    name_a, rows_a = one_agent(a)
    name_b, rows_b = one_agent(b)
    if name_a == name_b:
        name_a, name_b = f"{name_a} (A)", f"{name_b} (B)"
    return paired(rows_a, rows_b, (name_a, name_b), resamples, seed)


def render(c: Comparison) -> str:
    lines = [f"A: {c.a}", f"B: {c.b}",
             f"paired on {c.scenarios} scenario(s) in {c.families} famil{'y' if c.families == 1 else 'ies'} ({c.method})"]
    for who, only in (("A", c.only_a), ("B", c.only_b)):
        if only:
            lines.append(f"left out, run by {who} only ({len(only)}): {', '.join(only[:12])}"
                         + (f" and {len(only) - 12} more" if len(only) > 12 else ""))
    if not c.rows:
        lines.append("no scenario in common: nothing to compare")
        return "\n".join(lines) + "\n"
    width = max(len(r["statistic"]) for r in c.rows)
    lines.append("")
    lines.append(f"{'statistic':<{width}}  {'A':>6}  {'B':>6}  {'A - B':>7}  {'95% CI':>17}  {'n':>4} {'fam':>4}  verdict")
    for r in c.rows:
        if r["families"] < MIN_FAMILIES:
            verdict = f"too few families to tell (< {MIN_FAMILIES})"
        else:
            verdict = ("A better" if r["low"] > 0 else "B better") if r["distinguishable"] else "not distinguishable"
        lines.append(f"{r['statistic']:<{width}}  {r['a']:6.3f}  {r['b']:6.3f}  {r['diff']:+7.3f}  "
                     f"[{r['low']:+.3f}, {r['high']:+.3f}]  {r['scenarios']:>4} {r['families']:>4}  {verdict}")
    return "\n".join(lines) + "\n"
