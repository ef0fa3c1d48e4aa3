"""Where a result came from: scenario-set content, versions, models and their settings.

The content hash lets two results be compared only when they ran the same scenarios. The task
records it when the run starts (task metadata `scenario_set`); a log without it says so (the
source it names is not read when the report is made).
"""

from __future__ import annotations

from typing import Any

import inspect_ai

from .. import __version__
from .logs import LoadedLog
from .rows import seed_base


def _config(cfg: Any) -> dict[str, Any]:
    """A GenerateConfig's settings that were actually set."""
    return {k: v for k, v in (cfg.model_dump() if cfg is not None else {}).items() if v is not None}


def user_settings(rows: list[dict[str, Any]], args: dict[str, Any]) -> dict[str, Any]:
    """The LLM user's temperature and seed as the samples ran them (seeds derive per scenario
    and epoch unless the `user` role fixed one)."""
    configs = [r["user_config"] for r in rows if r.get("user_config")]
    if not configs:
        return {"temperature": None, "seed": None, "note": "no LLM user ran"}
    temps = sorted({c.get("temperature") for c in configs}, key=str)
    seeds = {c.get("seed") for c in configs}
    base = args.get("user_seed")
    out = {
        "temperature": temps[0] if len(temps) == 1 else temps,
        "seed": next(iter(seeds)) if len(seeds) == 1 else f"derived per scenario and epoch from {42 if base is None else base}",
    }
    budgets = sorted({c["max_tokens"] for c in configs if c.get("max_tokens") is not None})
    if budgets:  # logs written before the user had an output budget have none
        out["max_tokens"] = budgets[0] if len(budgets) == 1 else budgets
    return out


def judge_settings(role: dict[str, Any] | None, generate: dict[str, Any]) -> dict[str, Any]:
    """What the judge ran with (checks/judge.py judge_config): a bound grader role's own settings,
    else (unbound, it is the model under test) the eval's; temperature 0 and JUDGE_MAX_TOKENS
    unless the role sets them, and the run's --attempt-timeout."""
    from ..checks.judge import JUDGE_MAX_TOKENS

    own = dict(role["config"]) if role else {}
    out = {**(own if role else dict(generate)),
           "temperature": own.get("temperature", 0.0), "max_tokens": own.get("max_tokens", JUDGE_MAX_TOKENS)}
    timeout = own.get("attempt_timeout", generate.get("attempt_timeout"))
    if timeout is not None:
        out["attempt_timeout"] = timeout
    return out


def log_provenance(loaded: LoadedLog, rows: list[dict[str, Any]]) -> dict[str, Any]:
    ev = loaded.log.eval
    args = loaded.args
    mine = [r for r in rows if r["log"] == str(loaded.path)]
    roles = {k: {"model": v.model, "config": _config(v.config)} for k, v in (ev.model_roles or {}).items()}
    generate = {**_config(loaded.log.plan.config if loaded.log.plan else None), **_config(ev.model_generate_config)}
    return {
        "log": str(loaded.path),
        "eval_id": ev.eval_id,
        "created": ev.created,
        "status": loaded.log.status,
        "task": ev.task,
        "task_args": args,
        # never hashed here: the source a log names is not read at report time (and would say
        # what is on disk now, not what ran)
        "scenario_set": (ev.metadata or {}).get("scenario_set")
        or {"source": args.get("source") or "shipped", "sha256": None, "files": 0,
            "note": "the run recorded no scenario-set hash"},
        "inspect_ai_version": ev.packages.get("inspect_ai"),
        "epochs": ev.config.epochs or 1,
        "seed": {"generate": generate.get("seed"), "user_seed": args.get("user_seed"),
                 "leaderboard_seed_base": seed_base(args)},
        "models": {
            "agent": {"agent": args.get("agent", "model"), "model": ev.model, "generate_config": generate,
                      # what the agent really called (a LiteLLM agent runs under --model none)
                      "models_called": sorted({m for r in mine for m in (r.get("usage") or {}).get("agent", {}).get("models", [])})},
            "user": {
                "mode": args.get("user", "llm"),
                "models": sorted({str(r["user_model"]) for r in mine if r.get("user_model")}),
                "role": roles.get("user"),
                # what the LLM user generated with (recorded per sample), not the -T defaults
                "generate_config": user_settings(mine, args),
            },
            "judge": {
                "mode": args.get("judge", "auto"),
                "models": sorted({str(r["judge_model"]) for r in mine if r.get("judge_model")}),
                "role": roles.get("grader"),
                "generate_config": judge_settings(roles.get("grader"), generate),
                "nl_tier": sorted({str(r["nl_tier"]) for r in mine if r.get("nl_tier")}),
            },
        },
    }


def provenance(logs: list[LoadedLog], rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "pibench_inspect_version": __version__,
        "inspect_ai_version_reporting": inspect_ai.__version__,
        "logs": [log_provenance(x, rows) for x in logs],
    }
