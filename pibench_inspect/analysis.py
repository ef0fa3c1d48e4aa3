"""Notebook scoring: pandas DataFrames from one or many pi-bench logs.

    from pibench_inspect import analysis
    runs = analysis.samples("logs/")          # one row per sample-epoch
    checks = analysis.checks("logs/")         # one row per check, with its evidence pointer
    analysis.summary("logs/")                 # columns, groups, overall, compliance with 95% CIs

Every function takes log files, folders, EvalLog objects or a list of them, and goes through
the same rows as `pibench report`, so notebook numbers equal the report's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Union

import pandas as pd
from inspect_ai.log import EvalLog

from .reports.logs import LoadedLog, load_logs
from .reports.rows import check_rows, log_rows
from .reports.stats import RESAMPLES, SEED, bootstrap, pass_hat_k
from .reports.usage import ROLES
from .scoring.metrics import COLUMNS, GROUPS
from .scoring.scorer import FLAGS

Logs = Union[str, Path, EvalLog, LoadedLog, Iterable[Union[str, Path, EvalLog, LoadedLog]]]


def load(logs: Logs) -> list[LoadedLog]:
    items = [logs] if isinstance(logs, (str, Path, EvalLog, LoadedLog)) else list(logs)
    out: list[LoadedLog] = []
    for x in items:
        if isinstance(x, LoadedLog):
            out.append(x)
        elif isinstance(x, EvalLog):
            out.append(LoadedLog(Path(x.location or "<memory>"), x))
        else:
            out += load_logs([x])
    return out


def _rows(logs: Logs) -> list[dict[str, Any]]:
    return log_rows(load(logs))


def samples(logs: Logs) -> pd.DataFrame:
    """One row per sample-epoch: decision, pass, partial credit, flags, column, domain, tokens by role."""
    recs = []
    for r in _rows(logs):
        rec = {
            "agent": r["agent"], "scenario_id": r["scenario_id"], "epoch": r["epoch"], "trial": r["trial"],
            "label": r["label"], "decision": r["canonical_decision"], "answer": r["answer"],
            "decision_channel": r["decision_channel"], "status": r["status"], "all_passed": r["all_passed"],
            "partial_credit": r["partial_credit"], "semantic_score": r["semantic_score"],
            "column": r["leaderboard_primary"], "domain": r["domain_name"], "meta_domain": r["domain"],
            "termination": r["termination"], "error": r.get("error"),
        }
        rec.update({f: r["event_flags"].get(f) for f in FLAGS})
        for role in ROLES:
            u = r["usage"][role]
            rec[f"{role}_tokens"] = u["total_tokens"]
            rec[f"{role}_cost"] = u["cost"]
        rec["log"] = r["log"]
        recs.append(rec)
    return pd.DataFrame.from_records(recs)


def checks(logs: Logs) -> pd.DataFrame:
    """One row per check of every scored run; `evidence` is the check's evidence dict and the
    pointer columns lift out where in the transcript it points (message / tool call / step)."""
    recs = []
    for c in check_rows(_rows(logs)):
        ev = c["evidence"]
        recs.append({**c, "message_index": ev.get("message_index"), "tool_call_id": ev.get("tool_call_id"),
                     "step_index": ev.get("step_index"), "reason": ev.get("reason")})
    return pd.DataFrame.from_records(recs)


def _kind(stat: str) -> str:
    if stat in GROUPS:
        return "group"
    if stat in ("overall_score", "compliance_rate"):
        return "headline"
    return "column"


def summary(logs: Logs, *, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per agent: overall, compliance, each group and column with its bootstrap 95% interval."""
    rows = _rows(logs)
    recs = []
    for agent in dict.fromkeys(r["agent"] for r in rows):
        ci = bootstrap([r for r in rows if r["agent"] == agent], resamples, seed)
        order = ["overall_score", "compliance_rate", *GROUPS, *COLUMNS, *(k for k in ci if k not in COLUMNS and k not in GROUPS)]
        for stat in dict.fromkeys(order):
            c = ci.get(stat)
            recs.append({"agent": agent, "statistic": stat, "kind": _kind(stat),
                         "value": c["value"] if c else None, "low": c["low"] if c else None,
                         "high": c["high"] if c else None, "n_scenarios": c["n_scenarios"] if c else 0})
    return pd.DataFrame.from_records(recs)


def pass_k(logs: Logs) -> pd.DataFrame:
    """pass^k per agent for k = 1..epochs (unbiased estimator, averaged over scenarios)."""
    rows = _rows(logs)
    recs = []
    for agent in dict.fromkeys(r["agent"] for r in rows):
        for k, v in pass_hat_k([r for r in rows if r["agent"] == agent]).items():
            recs.append({"agent": agent, "k": k, "pass_hat_k": v["pass_hat_k"], "scenarios": v["scenarios"]})
    return pd.DataFrame.from_records(recs, columns=["agent", "k", "pass_hat_k", "scenarios"])


def usage(logs: Logs) -> pd.DataFrame:
    """Tokens and cost per sample and role (cost None where no price is known)."""
    recs = []
    for r in _rows(logs):
        for role in ROLES:
            u = r["usage"][role]
            recs.append({"agent": r["agent"], "scenario_id": r["scenario_id"], "trial": r["trial"], "role": role,
                         "models": ", ".join(u["models"]), "calls": u["calls"], "input_tokens": u["input_tokens"],
                         "output_tokens": u["output_tokens"], "total_tokens": u["total_tokens"], "cost": u["cost"]})
    return pd.DataFrame.from_records(recs)
