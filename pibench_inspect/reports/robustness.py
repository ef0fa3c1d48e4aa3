"""The report's view of pressure: compliance by envelope and column with intervals, what
pressure costs, and the same from an ablation run (`-T ablation=no_pressure`) beside a normal one.

Intervals resample families, like the rest of the report (stats.py).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ..scoring.metrics import COLUMNS
from ..scoring.robustness import BASELINE, Run, cases, decision_flip_rate, modal, pressure_cost
from .stats import RESAMPLES, SEED, cluster, resample_weights

PRESSURE = "pressure"  # every envelope but the baseline, pooled


def _runs(rows: list[dict[str, Any]]) -> list[Run]:
    return [Run(cluster(r), str(r.get("combo")), str(r["envelope"]), bool(r["all_passed"]),
                str(r.get("canonical_decision") or "INVALID"))
            for r in rows if r["status"] == "completed" and r.get("envelope")]


def rate_ci(rows: list[dict[str, Any]], resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Any] | None:
    """Strict compliance of `rows` with a 95% interval resampling families."""
    done = [r for r in rows if r["status"] == "completed"]
    if not done:
        return None
    fams = sorted({cluster(r) for r in done})
    idx = {f: i for i, f in enumerate(fams)}
    n, p = np.zeros(len(fams)), np.zeros(len(fams))
    for r in done:
        n[idx[cluster(r)]] += 1
        p[idx[cluster(r)]] += bool(r["all_passed"])
    w = resample_weights(len(fams), resamples, seed)
    boot = (w @ p) / (w @ n)
    low, high = np.percentile(boot, [2.5, 97.5])
    return {"value": float(p.sum() / n.sum()), "low": float(low), "high": float(high), "runs": int(n.sum()),
            "families": len(fams)}


def cost_ci(rows: list[dict[str, Any]], resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Any] | None:
    """Pressure cost with a 95% interval resampling families (only cases run with and without
    pressure count)."""
    runs = _runs(rows)
    value = pressure_cost(runs)
    if value is None:
        return None
    acc: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(4))  # base pass, base n, press pass, press n
    for (family, _), envs in cases(runs).items():
        if BASELINE not in envs:
            continue
        for e, group in envs.items():
            k = 0 if e == BASELINE else 2
            acc[family][k] += sum(r.passed for r in group)
            acc[family][k + 1] += len(group)
    m = np.array([acc[f] for f in sorted(acc)])
    w = resample_weights(len(m), resamples, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (w @ m[:, 0]) / (w @ m[:, 1]) - (w @ m[:, 2]) / (w @ m[:, 3])
    boot = boot[~np.isnan(boot)]
    low, high = np.percentile(boot, [2.5, 97.5])
    return {"value": value, "low": float(low), "high": float(high), "cases": len(cases(runs)), "families": len(m)}


def envelope_view(rows: list[dict[str, Any]], resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Any]:
    """Everything the report shows about pressure, or {} when no run carries an envelope."""
    enveloped = [r for r in rows if r["status"] == "completed" and r.get("envelope")]
    if not enveloped:
        return {}
    envs = sorted({r["envelope"] for r in enveloped}, key=lambda e: (e != BASELINE, e))
    by_env = {e: rate_ci([r for r in enveloped if r["envelope"] == e], resamples, seed) for e in envs}
    by_column: dict[str, dict[str, Any]] = {}
    for col in [c for c in COLUMNS if any(r.get("leaderboard_primary") == c for r in enveloped)]:
        mine = [r for r in enveloped if r.get("leaderboard_primary") == col]
        by_column[col] = {
            BASELINE: rate_ci([r for r in mine if r["envelope"] == BASELINE], resamples, seed),
            PRESSURE: rate_ci([r for r in mine if r["envelope"] != BASELINE], resamples, seed),
        }
    runs = _runs(enveloped)
    flips = decision_flip_rate(runs)
    pressed = [r for r in enveloped if r["envelope"] != BASELINE]
    return {"by_envelope": by_env, "by_column": by_column, "pressure_cost": cost_ci(enveloped, resamples, seed),
            "decision_flip_rate": flips, "cases": len(cases(runs)),
            # how hard the scripted user pressed: tactics it played per pressure run
            "tactics": sum(len(r.get("tactics") or []) for r in pressed) / len(pressed) if pressed else None}


def ablation_pair(normal: list[dict[str, Any]], plain: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A normal run beside its `-T ablation=no_pressure` run, on the scenarios both completed:
    compliance of each, the pressure cost (plain minus normal) and the share of scenarios whose
    decision differs."""
    def per_scenario(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            if r["status"] == "completed":
                out[r["scenario_id"]].append(r)
        return out

    a, b = per_scenario(normal), per_scenario(plain)
    shared = sorted(set(a) & set(b))
    if not shared:
        return None

    def rate(rs: dict[str, list[dict[str, Any]]]) -> float:
        runs = [r for s in shared for r in rs[s]]
        return sum(bool(r["all_passed"]) for r in runs) / len(runs)

    flips = sum(modal([str(r["canonical_decision"]) for r in a[s]]) != modal([str(r["canonical_decision"]) for r in b[s]])
                for s in shared)
    return {"scenarios": len(shared), "compliance_with_pressure": rate(a), "compliance_without_pressure": rate(b),
            "pressure_cost": rate(b) - rate(a), "decision_flip_rate": flips / len(shared),
            "only_in_one": sorted(set(a) ^ set(b))}
