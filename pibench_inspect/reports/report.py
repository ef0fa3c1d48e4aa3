"""`pibench report`: logs -> results.json (leaderboard payload + provenance), report.md, PNGs.

Several logs of one agent are trials of it (their runs are pooled); logs of different agents
are reported side by side. An agent is named by its built-in agent or its model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..scoring.payload import leaderboard_payload
from . import charts
from .logs import LoadedLog, load_logs
from .markdown import render
from .provenance import provenance
from .rows import log_rows
from .stats import RESAMPLES, SEED, bootstrap, pass_hat_k
from .usage import total_usage


@dataclass
class AgentResult:
    agent: str
    logs: list[LoadedLog]
    rows: list[dict[str, Any]]
    payload: dict[str, Any] = field(default_factory=dict)
    ci: dict[str, Any] = field(default_factory=dict)
    pass_k: dict[int, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "agent"


def time_used(logs: list[LoadedLog]) -> float:
    """Wall-clock seconds of the runs (the original's time_used)."""
    from datetime import datetime

    total = 0.0
    for x in logs:
        st = x.log.stats
        if st and st.started_at and st.completed_at:
            total += (datetime.fromisoformat(st.completed_at) - datetime.fromisoformat(st.started_at)).total_seconds()
    return total


def analyse(logs: list[LoadedLog], *, resamples: int = RESAMPLES, seed: int = SEED) -> list[AgentResult]:
    rows = log_rows(logs)
    agents: dict[str, AgentResult] = {}
    for x in logs:
        agents.setdefault(x.agent_id, AgentResult(x.agent_id, [], []))
        agents[x.agent_id].logs.append(x)
    for r in rows:
        agents[r["agent"]].rows.append(r)
    for a in agents.values():
        a.payload = leaderboard_payload(a.agent, a.rows, time_used=time_used(a.logs))
        a.ci = bootstrap(a.rows, resamples, seed)
        a.pass_k = pass_hat_k(a.rows)
        a.usage = total_usage(a.rows)
        # ours, next to the leaderboard's fields (which stay exactly as the original's)
        a.payload["pibench_inspect"] = {
            "provenance": provenance(a.logs, a.rows),
            "confidence_intervals": {"method": f"percentile bootstrap over scenarios, {resamples} resamples, seed {seed}",
                                     "level": 0.95, "statistics": a.ci},
            "pass_hat_k": {str(k): v for k, v in a.pass_k.items()},
            "usage": {"total": a.usage, "per_sample": [
                {"scenario_id": r["scenario_id"], "trial": r["trial"], "usage": r["usage"]} for r in a.rows]},
        }
    return list(agents.values())


def write_report(paths: list[str | Path], out: str | Path, *, resamples: int = RESAMPLES,
                 seed: int = SEED, allow_partial: bool = False) -> dict[str, Any]:
    """Write the report files; returns {"agents": [...], "files": [...]}."""
    logs = load_logs(list(paths), check=True, allow_partial=allow_partial)
    results = analyse(logs, resamples=resamples, seed=seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    several = len(results) > 1
    for a in results:
        tag = f"_{slug(a.agent)}" if several else ""
        res = out / f"results{tag}.json"
        res.write_text(json.dumps(a.payload, indent=2, default=str) + "\n", encoding="utf-8")
        a.files["results"] = res.name
        files.append(res)
        if any(r["status"] == "completed" for r in a.rows):
            files.append(charts.columns_chart(a.ci, out / f"columns{tag}.png", a.agent))
            files.append(charts.confusion_chart(a.rows, out / f"confusion{tag}.png", a.agent))
            a.files["columns"], a.files["confusion"] = files[-2].name, files[-1].name
    if several and sum(bool(a.ci) for a in results) > 1:
        files.append(charts.compare_chart({a.agent: a.ci for a in results if a.ci}, out / "compare.png"))
    md = out / "report.md"
    md.write_text(render(results, compare="compare.png" if (out / "compare.png") in files else None), encoding="utf-8")
    files.append(md)
    return {"agents": [a.agent for a in results], "files": [str(f) for f in files]}
