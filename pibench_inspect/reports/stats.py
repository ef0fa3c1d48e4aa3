"""Bootstrap confidence intervals and pass^k.

Runs of one scenario are not independent (same scenario, several epochs), so the bootstrap
resamples scenarios, each with all its runs. Each resample recomputes the statistics with the
original's formulas: compliance over runs (micro), each column's mean partial credit, groups
as the mean of their columns, overall as the mean over columns. A column absent from a
resample is left out of that resample's means, as the original leaves out empty columns.
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np

from ..scoring.metrics import COLUMNS, GROUPS

RESAMPLES = 2000
SEED = 20240917  # fixed: the same log always gives the same intervals


def _per_scenario(rows: list[dict[str, Any]]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, list[str]]:
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["status"] == "completed":
            by.setdefault(r["scenario_id"], []).append(r)
    sids = sorted(by)
    n = np.array([len(by[s]) for s in sids], dtype=float)
    passed = np.array([sum(bool(r["all_passed"]) for r in by[s]) for s in sids], dtype=float)
    credit = np.array([sum(float(r["partial_credit"]) for r in by[s]) for s in sids], dtype=float)
    cols = [str(by[s][0].get("leaderboard_primary") or "") for s in sids]
    return sids, n, passed, credit, cols


def _stats(w: np.ndarray, n, passed, credit, cols: list[str]) -> dict[str, np.ndarray]:
    """Statistics for a batch of scenario weightings `w` (resamples x scenarios)."""
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        out["compliance_rate"] = (w @ passed) / (w @ n)
        names = [c for c in COLUMNS if c in cols] + sorted({c for c in cols if c and c not in COLUMNS})
        for c in names:
            mask = np.array([x == c for x in cols], dtype=float)
            out[c] = (w @ (credit * mask)) / (w @ (n * mask))
        col_matrix = np.column_stack([out[c] for c in names]) if names else np.full((w.shape[0], 1), np.nan)
        out["overall_score"] = _nanmean(col_matrix)
        for g, members in GROUPS.items():
            present = [out[c] for c in members if c in out]
            if present:
                out[g] = _nanmean(np.column_stack(present))
    return out


def _nanmean(m: np.ndarray) -> np.ndarray:
    counts = np.sum(~np.isnan(m), axis=1)
    sums = np.nansum(m, axis=1)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def bootstrap(rows: list[dict[str, Any]], resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, dict[str, Any]]:
    """{statistic: {value, low, high, n_scenarios}}: point estimate and percentile 95% interval."""
    sids, n, passed, credit, cols = _per_scenario(rows)
    if not sids:
        return {}
    point = {k: float(v[0]) for k, v in _stats(np.ones((1, len(sids))), n, passed, credit, cols).items()}
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(sids), size=(resamples, len(sids)))
    w = np.zeros((resamples, len(sids)))
    np.add.at(w, (np.arange(resamples)[:, None], picks), 1.0)
    boot = _stats(w, n, passed, credit, cols)
    out = {}
    for k, v in point.items():
        vals = boot[k][~np.isnan(boot[k])]
        low, high = (np.percentile(vals, [2.5, 97.5]) if len(vals) else (np.nan, np.nan))
        count = len(sids) if k in ("compliance_rate", "overall_score") or k in GROUPS else cols.count(k)
        out[k] = {"value": v, "low": float(low), "high": float(high), "n_scenarios": count}
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
