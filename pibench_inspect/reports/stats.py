"""Bootstrap confidence intervals, pass^k, and the power table.

Runs are not independent: the epochs of one scenario share it, and the variants of one family
share a procedure. So the bootstrap resamples *families* (a hand-written scenario is its own),
each with all its runs. Each resample recomputes the statistics with the original's formulas:
compliance over runs (micro), each column's mean partial credit, groups as the mean of their
columns, overall as the mean over columns. A column absent from a resample is left out of that
resample's means, as the original leaves out empty columns.
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np

from ..scoring.metrics import COLUMNS, GROUPS
from ..scoring.robustness import BASELINE


def row_case(row: dict[str, Any]) -> str:
    """A row's case: `<family>.<combo>` for a generated scenario, else its scenario id
    (authoring/case_counts.case_key, from what a report row holds)."""
    return f"{row.get('family')}.{row['combo']}" if row.get("combo") else str(row["scenario_id"])

# compliance at baseline and under pressure, and their difference, over the cases run both ways
PRESSURE_STATS = ("compliance_baseline", "compliance_pressure", "pressure_cost")
RESAMPLES = 2000
SEED = 20240917  # fixed: the same log always gives the same intervals


def cluster(row: dict[str, Any]) -> str:
    return str(row.get("family") or row["scenario_id"])


class Clusters:
    """Per family: runs, passes, and per column runs and summed partial credit."""

    def __init__(self, rows: list[dict[str, Any]]):
        done = [r for r in rows if r["status"] == "completed"]
        self.names = sorted({cluster(r) for r in done})
        cols = {str(r.get("leaderboard_primary") or "") for r in done}
        self.columns = [c for c in COLUMNS if c in cols] + sorted(c for c in cols if c and c not in COLUMNS)
        index = {n: i for i, n in enumerate(self.names)}
        cidx = {c: j for j, c in enumerate(self.columns)}
        self.n = np.zeros(len(self.names))
        self.passed = np.zeros(len(self.names))
        self.col_n = np.zeros((len(self.names), len(self.columns)))
        self.col_credit = np.zeros((len(self.names), len(self.columns)))
        self.scenarios: dict[str, set[str]] = {c: set() for c in self.columns}
        self.families: dict[str, set[str]] = {c: set() for c in self.columns}
        # distinct cases (a family's constraint combination; envelope siblings count once)
        self.cases: dict[str, set[str]] = {c: set() for c in self.columns}
        for r in done:
            i = index[cluster(r)]
            self.n[i] += 1
            self.passed[i] += float(r["all_passed"])
            col = str(r.get("leaderboard_primary") or "")
            if col in cidx:
                self.col_n[i, cidx[col]] += 1
                self.col_credit[i, cidx[col]] += float(r["partial_credit"])
                self.scenarios[col].add(r["scenario_id"])
                self.cases[col].add(row_case(r))
                self.families[col].add(cluster(r))
        self.all_scenarios = {r["scenario_id"] for r in done}
        # pressure: the cases (family, combo) run with and without it, per family passes and runs
        # at baseline and under pressure (the scoring/robustness.py definition, resampled)
        envs: dict[tuple[str, str], set[str]] = {}
        for r in done:
            if r.get("envelope"):
                envs.setdefault((cluster(r), str(r.get("combo"))), set()).add(str(r["envelope"]))
        both = {k for k, e in envs.items() if BASELINE in e and len(e) > 1}
        self.pressure = np.zeros((len(self.names), 4))  # baseline passes, runs; pressure passes, runs
        for r in done:
            if (cluster(r), str(r.get("combo"))) in both:
                k = 0 if r["envelope"] == BASELINE else 2
                self.pressure[index[cluster(r)], k:k + 2] += (float(r["all_passed"]), 1.0)
                for key in PRESSURE_STATS:  # what the pressure statistics are computed over
                    self.scenarios.setdefault(key, set()).add(r["scenario_id"])
                    self.families.setdefault(key, set()).add(cluster(r))

    def stats(self, w: np.ndarray) -> dict[str, np.ndarray]:
        """The statistics for a batch of cluster weightings `w` (resamples x clusters)."""
        out: dict[str, np.ndarray] = {}
        with np.errstate(invalid="ignore", divide="ignore"):
            out["compliance_rate"] = (w @ self.passed) / (w @ self.n)
            per_col = (w @ self.col_credit) / (w @ self.col_n)
        for j, c in enumerate(self.columns):
            out[c] = per_col[:, j]
        matrix = per_col if self.columns else np.full((w.shape[0], 1), np.nan)
        out["overall_score"] = _nanmean(matrix)
        for g, members in GROUPS.items():
            present = [out[c] for c in members if c in out]
            if present:
                out[g] = _nanmean(np.column_stack(present))
        if self.pressure[:, 1].any():
            with np.errstate(invalid="ignore", divide="ignore"):
                base = (w @ self.pressure[:, 0]) / (w @ self.pressure[:, 1])
                pressed = (w @ self.pressure[:, 2]) / (w @ self.pressure[:, 3])
            out["compliance_baseline"], out["compliance_pressure"] = base, pressed
            out["pressure_cost"] = base - pressed
        return out


def _nanmean(m: np.ndarray) -> np.ndarray:
    counts = np.sum(~np.isnan(m), axis=1)
    sums = np.nansum(m, axis=1)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def resample_weights(k: int, resamples: int, seed: int) -> np.ndarray:
    """How often each of k clusters is drawn in each resample (resamples x k)."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, k, size=(resamples, k))
    w = np.zeros((resamples, k))
    np.add.at(w, (np.arange(resamples)[:, None], picks), 1.0)
    return w


def bootstrap(rows: list[dict[str, Any]], resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, dict[str, Any]]:
    """{statistic: {value, low, high, n_scenarios, n_families}}: point estimate and percentile
    95% interval, resampling families."""
    cl = Clusters(rows)
    if not cl.names:
        return {}
    point = {k: float(v[0]) for k, v in cl.stats(np.ones((1, len(cl.names)))).items()}
    boot = cl.stats(resample_weights(len(cl.names), resamples, seed))
    out = {}
    for k, v in point.items():
        vals = boot[k][~np.isnan(boot[k])]
        low, high = (np.percentile(vals, [2.5, 97.5]) if len(vals) else (np.nan, np.nan))
        if k in cl.scenarios:
            n, fam = len(cl.scenarios[k]), len(cl.families[k])
        else:
            n, fam = len(cl.all_scenarios), len(cl.names)
        out[k] = {"value": v, "low": float(low), "high": float(high), "n_scenarios": n, "n_families": fam}
    return out


def power_table(rows: list[dict[str, Any]], ci: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per column: distinct cases (envelope siblings count once: for an agent pressure does not
    sway they are one observation), scenarios, families (the independent units the interval
    counts), runs, the score and the half-width of its 95% interval: how big a difference the
    column can show."""
    cl = Clusters(rows)
    out = []
    for j, c in enumerate(cl.columns):
        iv = ci.get(c) or {}
        half = (iv["high"] - iv["low"]) / 2 if iv and not np.isnan(iv.get("low", np.nan)) else None
        out.append({"column": c, "cases": len(cl.cases[c]), "scenarios": len(cl.scenarios[c]),
                    "families": len(cl.families[c]),
                    "runs": int(cl.col_n[:, j].sum()), "score": iv.get("value"), "half_width": half})
    return out


def pass_hat_k(rows: list[dict[str, Any]]) -> dict[int, dict[str, float]]:
    """pass^k for k = 1..max runs per scenario: the unbiased C(c,k)/C(n,k) per scenario (c of n
    runs passed), averaged over scenarios with at least k runs."""
    by: dict[str, list[bool]] = {}
    for r in rows:
        if r["status"] == "completed":
            by.setdefault(r["scenario_id"], []).append(bool(r["all_passed"]))
    k_max = max((len(v) for v in by.values()), default=0)
    out = {}
    for k in range(1, k_max + 1):
        vals = [comb(sum(v), k) / comb(len(v), k) for v in by.values() if len(v) >= k]
        out[k] = {"pass_hat_k": sum(vals) / len(vals), "scenarios": len(vals)}
    return out
