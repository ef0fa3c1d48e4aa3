"""`pibench compare A B`: is agent A better than agent B, column by column, on the same scenarios?

Two separate intervals overlap long after a paired comparison can tell the agents apart: most of
a column's spread is which scenarios it holds, and that is the same for both agents. So the
runs are paired by scenario (each scenario's epochs averaged), and one bootstrap resamples
*families* (a family's variants are not independent) and recomputes both agents' statistics on
the same resample; the interval of their difference is the percentile interval of those paired
differences. A difference whose interval excludes zero is reported as distinguishable.

Pairing is proven, not assumed: each side is one run (a folder is split into runs as `pibench
report` splits it, and one holding several is refused, naming them); the two runs must have run
the same scenario-set content (its hash, recorded when each run started, and for a re-scored log
the set it was re-scored with) and each paired scenario must have been scored alike (label,
column, family, scoring, its checks); anything else is refused, naming the difference. Runs over
different subsets of one set are paired on the scenarios both ran, and the output says so:
scenarios in one run only, and those that errored on one side, are named and left out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..scoring.metrics import COLUMNS, GROUPS
from .logs import ReportInputError, left_out, load_logs, reported
from .rows import log_rows
from .runs import Run, group_runs
from .stats import PRESSURE_STATS, RESAMPLES, SEED, Clusters, resample_weights

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
    # scenarios both ran that have no completed run on one side (Inspect sample errors): left out
    errored_a: list[str] = field(default_factory=list)
    errored_b: list[str] = field(default_factory=list)
    ran_a: int = 0  # how many scenarios each run ran
    ran_b: int = 0
    notes: list[str] = field(default_factory=list)  # what the logs left out (partial logs, interrupted play)


def scenario_means(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One pseudo-run per scenario: its family, column, and its epochs' mean pass and credit."""
    acc: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["status"] == "completed":
            acc[r["scenario_id"]].append(r)
    return {
        sid: {"scenario_id": sid, "status": "completed", "family": rs[0].get("family") or sid,
              "leaderboard_primary": rs[0].get("leaderboard_primary"),
              "envelope": rs[0].get("envelope"), "combo": rs[0].get("combo"),
              "all_passed": sum(float(r["all_passed"]) for r in rs) / len(rs),
              "partial_credit": sum(float(r["partial_credit"]) for r in rs) / len(rs)}
        for sid, rs in acc.items()
    }


def paired(a_rows: list[dict[str, Any]], b_rows: list[dict[str, Any]], names: tuple[str, str] = ("A", "B"),
           resamples: int = RESAMPLES, seed: int = SEED) -> Comparison:
    a, b = scenario_means(a_rows), scenario_means(b_rows)
    ran_a, ran_b = {r["scenario_id"] for r in a_rows}, {r["scenario_id"] for r in b_rows}
    shared = sorted(set(a) & set(b))
    out = Comparison(names[0], names[1], len(shared), 0, sorted(ran_a - ran_b), sorted(ran_b - ran_a),
                     method=f"paired by scenario; percentile bootstrap over families, {resamples} resamples, seed {seed}",
                     errored_a=sorted((ran_a & ran_b) - set(a)), errored_b=sorted((ran_a & ran_b) - set(b)),
                     ran_a=len(ran_a), ran_b=len(ran_b))
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
    for key in [*HEADLINE, *PRESSURE_STATS, *[c for c in COLUMNS if c in ca.columns],
                *[c for c in ca.columns if c not in COLUMNS]]:
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


@dataclass
class Side:
    path: str
    run: Run
    rows: list[dict[str, Any]]
    notes: list[str]


def one_run(path: str | Path, allow_partial: bool = False) -> Side:
    """The one run a side names (a log, or a folder of one run's logs), split as `pibench report`
    splits a folder; refused when it holds several, naming them."""
    checked = load_logs([path], check=True, allow_partial=allow_partial)
    logs = reported(checked)
    notes = left_out(checked, "this comparison")
    if not logs:
        raise ReportInputError(f"{path}: nothing to compare: {notes[0] if notes else 'no samples'}")
    runs = group_runs(logs)
    if len(runs) > 1:
        raise ReportInputError(f"{path}: holds {len(runs)} runs ({', '.join(r.label for r in runs)}); "
                               "give one run per side (a log, or a folder of one run's logs)")
    return Side(str(path), runs[0], log_rows(runs[0].logs), notes)


def set_source(side: Side) -> str:
    recorded = (side.run.logs[0].log.eval.metadata or {}).get("scenario_set") or {}
    return str(recorded.get("source") or "unknown source") if isinstance(recorded, dict) else "unknown source"


def prove_same_set(a: Side, b: Side) -> None:
    """Refuse two runs whose scenario-set content is not shown to be the same."""
    for side in (a, b):
        if not side.run.set_hash:
            raise ReportInputError(f"{side.path}: its log records no scenario-set hash, so its scenarios cannot be "
                                   "shown to be the other run's; compare runs made by this version")
    if a.run.set_hash != b.run.set_hash:
        raise ReportInputError(
            f"the runs ran different scenario sets: A {a.run.set_hash[:16]} ({set_source(a)}), B {b.run.set_hash[:16]} "
            f"({set_source(b)}); a paired comparison needs both runs on the same scenario-set content")


def scored_content(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """scenario id -> what its score was computed from, as the completed runs recorded it."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["status"] == "completed" and r["scenario_id"] not in out:
            out[r["scenario_id"]] = {
                "label": r.get("label"), "column": r.get("leaderboard_primary"), "family": r.get("family"),
                "scoring": r.get("scoring"),
                "checks": sorted((str(c.get("outcome_id")), str(c.get("type"))) for c in r.get("checks") or []
                                 if isinstance(c, dict))}
    return out


def prove_same_scoring(a: Side, b: Side) -> None:
    """Refuse when a scenario both completed was scored from different content."""
    ca, cb = scored_content(a.rows), scored_content(b.rows)
    for sid in sorted(set(ca) & set(cb)):
        differ = [k for k in ca[sid] if ca[sid][k] != cb[sid][k]]
        if differ:
            what = "; ".join(f"{k}: A {ca[sid][k]!s:.60} vs B {cb[sid][k]!s:.60}" for k in differ)
            raise ReportInputError(f"{sid}: the runs scored it differently ({what}); they cannot be paired")


def compare_logs(a: str | Path, b: str | Path, resamples: int = RESAMPLES, seed: int = SEED,
                 allow_partial: bool = False) -> Comparison:
    side_a, side_b = one_run(a, allow_partial), one_run(b, allow_partial)
    prove_same_set(side_a, side_b)
    prove_same_scoring(side_a, side_b)
    name_a, name_b = side_a.run.agent, side_b.run.agent
    if name_a == name_b:
        name_a, name_b = f"{name_a} (A)", f"{name_b} (B)"
    out = paired(side_a.rows, side_b.rows, (name_a, name_b), resamples, seed)
    out.notes = [f"A: {n}" for n in side_a.notes] + [f"B: {n}" for n in side_b.notes]
    return out


def _listed(ids: list[str]) -> str:
    return ", ".join(ids[:12]) + (f" and {len(ids) - 12} more" if len(ids) > 12 else "")


def render(c: Comparison) -> str:
    lines = [f"A: {c.a}", f"B: {c.b}",
             f"paired on {c.scenarios} scenario(s) in {c.families} famil{'y' if c.families == 1 else 'ies'} ({c.method})"]
    if c.only_a or c.only_b:
        lines.append(f"compared on their overlap: A ran {c.ran_a} scenarios, B ran {c.ran_b}; "
                     f"{c.scenarios} of those both ran are paired")
    for who, only in (("A", c.only_a), ("B", c.only_b)):
        if only:
            lines.append(f"left out, run by {who} only ({len(only)}): {_listed(only)}")
    for who, errored in (("A", c.errored_a), ("B", c.errored_b)):
        if errored:
            lines.append(f"left out, errored in {who} (an Inspect sample error: no score) ({len(errored)}): {_listed(errored)}")
    lines += [f"note: {n}" for n in c.notes]
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
