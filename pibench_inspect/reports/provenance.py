"""Where a result came from: scenario-set content, versions, models and their settings.

The content hash lets two results be compared only when they ran the same scenarios. The task
records it when the run starts (task metadata `scenario_set`); for older logs it is taken when
the report is made, from the source the log names.
"""

from __future__ import annotations

from typing import Any

import inspect_ai

from .. import __version__
from ..scenario.content_hash import content_hash
from .logs import LoadedLog


def _config(cfg: Any) -> dict[str, Any]:
    """A GenerateConfig's settings that were actually set."""
    return {k: v for k, v in (cfg.model_dump() if cfg is not None else {}).items() if v is not None}


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
        "scenario_set": (ev.metadata or {}).get("scenario_set")
        or content_hash(args.get("source"), note="hashed when the report was made"),
        "inspect_ai_version": ev.packages.get("inspect_ai"),
        "epochs": ev.config.epochs or 1,
        "seed": {"generate": generate.get("seed"), "user_seed": args.get("user_seed", 42),
                 "leaderboard_seed_base": args.get("user_seed", 42)},
        "models": {
            "agent": {"agent": args.get("agent", "model"), "model": ev.model, "generate_config": generate,
                      # what the agent really called (a LiteLLM agent runs under --model none)
                      "models_called": sorted({m for r in mine for m in (r.get("usage") or {}).get("agent", {}).get("models", [])})},
            "user": {
                "mode": args.get("user", "llm"),
                "models": sorted({str(r["user_model"]) for r in mine if r.get("user_model")}),
                "role": roles.get("user"),
                # role models do not inherit the task's generate config: the user's is explicit
                "generate_config": {"temperature": args.get("user_temperature", 0.0), "seed": args.get("user_seed", 42)},
            },
            "judge": {
                "mode": args.get("judge", "auto"),
                "models": sorted({str(r["judge_model"]) for r in mine if r.get("judge_model")}),
                "role": roles.get("grader"),
                "generate_config": {"temperature": 0.0},
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
