"""Notebook scoring: pandas DataFrames from one or many pi-bench logs.

    from pibench_inspect import analysis
    runs = analysis.samples("logs/")          # one row per sample-epoch
    checks = analysis.checks("logs/")         # one row per check, with its evidence pointer
    analysis.summary("logs/")                 # columns, groups, overall, compliance with 95% CIs
    analysis.final_state(log, log.samples[0]) # the state the checks read

Every function takes log files, folders, EvalLog objects or a list of them, and goes through
the same rows as `pibench report`, so notebook numbers equal the report's. Columns have stable
nullable dtypes (`boolean`, `Int64`, `Float64`, `string`), so a column with a missing value
keeps its type; `epoch` numbers the runs of a scenario from 1 across every log of an agent.

Inspect's own frames expand the score too: `samples_df(logs, columns=SampleSummary +
PIBENCH_COLUMNS)` (from `inspect_ai.analysis`) adds the pi-bench score keys and metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Union

import pandas as pd
from inspect_ai.analysis import SampleColumn
from inspect_ai.log import EvalLog

from .reports.logs import LoadedLog, load_logs
from .reports.rows import check_rows, log_rows
from .reports.stats import RESAMPLES, SEED, bootstrap, pass_hat_k
from .reports.usage import ROLES
from .scoring.metrics import COLUMNS, GROUPS
from .scoring.record import SCORER, partial_credit
from .scoring.scorer import FLAG_KEYS, FLAGS

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


def final_state(log: EvalLog, sample: Any, *, source: str | Path | None = None) -> dict[str, Any] | None:
    """A logged sample's final state, the document its state checks read.

    The store keeps what changed since the initial state; the rest comes from the scenario's
    initial state, rebuilt from the scenario source the run used (the log's `source` task
    argument, or `source=` when the files have moved)."""
    from .conversation.solver import stored_final_state
    from .environment.merge import domain_document
    from .scenario.catalog import load_set

    if source is None:
        source = (log.eval.task_args or {}).get("source")
    key = str(source) if source is not None else None
    if key not in _SETS:
        _SETS[key] = load_set(source)
    scenario, domain = _SETS[key].resolve(str(sample.id))
    return stored_final_state(sample.store, domain_document(domain, scenario))


_SETS: dict[str | None, Any] = {}  # scenario sets by source, loaded once per process


def _rows(logs: Logs) -> list[dict[str, Any]]:
    return log_rows(load(logs))


SAMPLE_DTYPES = {
    "agent": "string", "scenario_id": "string", "epoch": "Int64", "label": "string", "decision": "string",
    "answer": "string", "decision_channel": "string", "status": "string", "all_passed": "boolean",
    "partial_credit": "Float64", "semantic_score": "Float64", "column": "string", "domain": "string",
    "meta_domain": "string", "termination": "string", "error": "string",
    **{f: "boolean" for f in FLAGS},
    **{f"{role}_tokens": "Int64" for role in ROLES}, **{f"{role}_cost": "Float64" for role in ROLES},
    "log": "string",
}
CHECK_DTYPES = {
    "agent": "string", "scenario_id": "string", "epoch": "Int64", "label": "string", "column": "string",
    "domain": "string", "outcome_id": "string", "type": "string", "tier": "Int64", "status": "string",
    "passed": "boolean", "detail": "string", "notes": "string", "message_index": "Int64",
    "tool_call_id": "string", "step_index": "Int64", "reason": "string",
}


def frame(recs: list[dict[str, Any]], dtypes: dict[str, str]) -> pd.DataFrame:
    """Records as a DataFrame with the given nullable dtypes (columns in that order first)."""
    df = pd.DataFrame.from_records(recs)
    for col, dtype in dtypes.items():
        if col not in df.columns:
            df[col] = pd.Series([None] * len(df), dtype=dtype)
        else:
            df[col] = df[col].astype(object).where(df[col].notna(), None).astype(dtype)
    return df[[*dtypes, *(c for c in df.columns if c not in dtypes)]]


def samples(logs: Logs) -> pd.DataFrame:
    """One row per sample-epoch: decision, pass, partial credit, flags (the original's names),
    column, domain, tokens and cost by role."""
    recs = []
    for r in _rows(logs):
        rec = {
            "agent": r["agent"], "scenario_id": r["scenario_id"], "epoch": r["trial"] + 1,
            "label": r["label"], "decision": r["canonical_decision"], "answer": r["answer"],
            "decision_channel": r["decision_channel"], "status": r["status"],
            "all_passed": r["all_passed"] if r["status"] == "completed" else None,
            "partial_credit": r["partial_credit"] if r["status"] == "completed" else None,
            "semantic_score": r["semantic_score"],
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
    return frame(recs, SAMPLE_DTYPES)


def checks(logs: Logs) -> pd.DataFrame:
    """One row per check of every scored run; `evidence` is the check's evidence dict and the
    pointer columns lift out where in the transcript it points (message / tool call / step)."""
    recs = []
    for c in check_rows(_rows(logs)):
        ev = c["evidence"]
        c = dict(c)
        c["epoch"] = c.pop("trial") + 1  # one run number, as in `samples`: pooled logs continue it
        recs.append({**c, "message_index": ev.get("message_index"), "tool_call_id": ev.get("tool_call_id"),
                     "step_index": ev.get("step_index"), "reason": ev.get("reason")})
    return frame(recs, CHECK_DTYPES)


def _kind(stat: str) -> str:
    if stat in GROUPS:
        return "group"
    if stat in ("overall_score", "compliance_rate"):
        return "headline"
    return "column"


def summary(logs: Logs, *, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per agent: overall, compliance, each group and column with its bootstrap 95% interval
    (resampling families, as `pibench report` does: a family's variants are not independent,
    a hand-written scenario is its own family), and how many scenarios and families it holds."""
    rows = _rows(logs)
    recs = []
    for agent in dict.fromkeys(r["agent"] for r in rows):
        ci = bootstrap([r for r in rows if r["agent"] == agent], resamples, seed)
        order = ["overall_score", "compliance_rate", *GROUPS, *COLUMNS, *(k for k in ci if k not in COLUMNS and k not in GROUPS)]
        for stat in dict.fromkeys(order):
            c = ci.get(stat)
            recs.append({"agent": agent, "statistic": stat, "kind": _kind(stat),
                         "value": c["value"] if c else None, "low": c["low"] if c else None,
                         "high": c["high"] if c else None, "n_scenarios": c["n_scenarios"] if c else 0,
                         "n_families": c["n_families"] if c else 0})
    return frame(recs, {"agent": "string", "statistic": "string", "kind": "string", "value": "Float64",
                        "low": "Float64", "high": "Float64", "n_scenarios": "Int64", "n_families": "Int64"})


def pass_k(logs: Logs) -> pd.DataFrame:
    """pass^k per agent for k = 1..epochs (unbiased estimator, averaged over scenarios)."""
    rows = _rows(logs)
    recs = []
    for agent in dict.fromkeys(r["agent"] for r in rows):
        for k, v in pass_hat_k([r for r in rows if r["agent"] == agent]).items():
            recs.append({"agent": agent, "k": k, "pass_hat_k": v["pass_hat_k"], "scenarios": v["scenarios"]})
    return frame(recs, {"agent": "string", "k": "Int64", "pass_hat_k": "Float64", "scenarios": "Int64"})


def usage(logs: Logs) -> pd.DataFrame:
    """Tokens and cost per sample and role (cost None where no price is known)."""
    recs = []
    for r in _rows(logs):
        for role in ROLES:
            u = r["usage"][role]
            recs.append({"agent": r["agent"], "scenario_id": r["scenario_id"], "epoch": r["trial"] + 1, "role": role,
                         "models": ", ".join(u["models"]), "calls": u["calls"], "input_tokens": u["input_tokens"],
                         "output_tokens": u["output_tokens"], "total_tokens": u["total_tokens"], "cost": u["cost"]})
    return frame(recs, {"agent": "string", "scenario_id": "string", "epoch": "Int64", "role": "string",
                        "models": "string", "calls": "Int64", "input_tokens": "Int64", "output_tokens": "Int64",
                        "total_tokens": "Int64", "cost": "Float64"})


def _exact_credit(sample: Any) -> float | None:
    score = (sample.scores or {}).get(SCORER)
    return None if score is None else partial_credit(score.value, score.metadata)


def _score(key: str) -> str:
    return f"scores.pibench_scorer.{key}"


# column definitions for Inspect's own samples_df: the score value keys and what the metadata
# says about the run (`samples_df(logs, columns=SampleSummary + PIBENCH_COLUMNS)`)
PIBENCH_COLUMNS = [
    SampleColumn("pibench_all_passed", path=_score("value.all_passed"), type=bool),
    # exact: the score metadata's credit (the value's partial_credit is rounded for the viewer)
    SampleColumn("pibench_partial_credit", path=_exact_credit, type=float),
    *[SampleColumn(f"pibench_{key}", path=_score(f"value.{key}"), type=bool) for key in FLAG_KEYS.values()],
    SampleColumn("pibench_decision", path=_score("answer"), type=str),
    SampleColumn("pibench_termination", path=_score("metadata.termination"), type=str),
    # not scored (no NL check judged) is a missing number: NaN, so that a keyless log's column is
    # still a float column (Inspect types a column with no value at all as a string)
    SampleColumn("pibench_semantic_score", path=_score("metadata.semantic_score"), type=float, default=float("nan")),
    SampleColumn("pibench_label", path="metadata.label", type=str),
    SampleColumn("pibench_column", path="metadata.column", type=str),
    SampleColumn("pibench_domain", path="metadata.domain", type=str),
]
