"""`pibench report`: logs -> results.json (leaderboard payload + provenance), report.md, PNGs.

The logs are grouped into runs (group_runs): one task, agent, model and settings on one set of
scenarios. Several logs of a run are its trials (pooled) or its shards (joined); a folder that
mixes runs reports each, and runs on the same scenarios (or on the scenarios a smaller run ran) are
compared side by side (side_by_side.py). A `pibench play` session the person interrupted is named
and left out (logs.py). Beside report.md, report.html is the same report as one page. An agent is
named by its built-in agent, class or model; a run by its agent, and by what else tells it apart
from the same agent's other runs ("oracle (pibench_retail, 9 scenarios)").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..scoring.payload import leaderboard_payload
from . import charts
from .agent_result import AgentResult
from .html import write_html
from .logs import LoadedLog, ReportInputError, left_out, load_logs, reported
from .markdown import render
from .provenance import provenance
from .rows import log_rows
from .robustness import ablation_pair, envelope_view
from .runs import group_runs
from .side_by_side import overlap_notes, side_by_side
from .stats import RESAMPLES, SEED, bootstrap, pass_hat_k, power_table
from .usage import total_usage


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


def analyse(logs: list[LoadedLog], *, resamples: int = RESAMPLES, seed: int = SEED,
            agentbeats_id: str | None = None) -> list[AgentResult]:
    results = []
    for run in group_runs(logs):
        rows = log_rows(run.logs)
        for r in rows:
            r["agent"] = run.label
        a = AgentResult(run.label, run.logs, rows, run=run)
        # the leaderboard's participant id: --agentbeats-id (one run), else the run's name
        a.payload = leaderboard_payload(agentbeats_id or a.agent, a.rows, time_used=time_used(a.logs))
        a.ci = bootstrap(a.rows, resamples, seed)
        a.power = power_table(a.rows, a.ci)
        a.pressure = envelope_view(a.rows, resamples, seed)
        a.pass_k = pass_hat_k(a.rows)
        a.usage = total_usage(a.rows)
        # ours, next to the leaderboard's fields (which stay exactly as the original's)
        a.payload["pibench_inspect"] = {
            "run": {"task": run.task, "agent": run.agent, "model": run.model, "scenarios": len(run.ids),
                    "logs": len(run.logs)},
            # -T ablation of the runs (None: the scenarios as written); their task args say it too
            "ablation": a.logs[0].args.get("ablation"),
            "provenance": provenance(a.logs, a.rows),
            "confidence_intervals": {"method": f"percentile bootstrap over scenario families (a hand-written "
                                               f"scenario is its own), {resamples} resamples, seed {seed}",
                                     "level": 0.95, "statistics": a.ci},
            "power": a.power,
            "pressure": a.pressure or None,
            "pass_hat_k": {str(k): v for k, v in a.pass_k.items()},
            # per sample only where a model was called (a keyless run has none): absent means 0
            "usage": {"total": a.usage, "per_sample": [
                {"scenario_id": r["scenario_id"], "trial": r["trial"], "usage": used}
                for r in a.rows if (used := {role: u for role, u in r["usage"].items() if u["calls"] or u["failed_attempts"]})]},
        }
        results.append(a)
    pair_ablations(results)
    return results


def pair_ablations(results: list[AgentResult]) -> None:
    """A run beside the same agent's `-T ablation=no_pressure` run (the one sharing the most
    scenarios with it, on the same task and model): the pressure cost between them."""
    for a in results:
        if a.run.settings.get("ablation"):
            continue
        candidates = [b for b in results if b.run.agent == f"{a.run.agent} [no_pressure]" and b.run.model == a.run.model
                      and b.ablation is None and a.run.ids & b.run.ids]
        if not candidates:
            continue
        plain = max(candidates, key=lambda b: len(a.run.ids & b.run.ids))
        a.ablation = plain.ablation = ablation_pair(a.rows, plain.rows)
        for x in (a, plain):
            x.payload["pibench_inspect"]["no_pressure_ablation"] = a.ablation


def write_report(paths: list[str | Path], out: str | Path, *, resamples: int = RESAMPLES,
                 seed: int = SEED, allow_partial: bool = False,
                 agentbeats_id: str | None = None) -> dict[str, Any]:
    """Write the report files; returns {"agents": [run labels], "files": [...], "notes": [...]}."""
    checked = load_logs(list(paths), check=True, allow_partial=allow_partial)
    logs = reported(checked)
    if not logs:
        raise ReportInputError(f"nothing to report: {'; '.join(left_out(checked))}")
    results = analyse(logs, resamples=resamples, seed=seed, agentbeats_id=agentbeats_id)
    if agentbeats_id and len(results) > 1:
        raise ReportInputError(f"--agentbeats-id names one participant, but these logs hold {len(results)} runs "
                               f"({', '.join(a.agent for a in results)}); report one run at a time to set it")
    groups = side_by_side(results, resamples, seed)
    notes = overlap_notes(results, groups) + left_out(checked)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    several = len(results) > 1
    for a in results:
        tag = f"_{slug(a.agent)}" if several else ""
        res = out / f"results{tag}.json"
        # compact: the payload is for machines (about half the size of an indented one)
        res.write_text(json.dumps(a.payload, separators=(",", ":"), default=str) + "\n", encoding="utf-8")
        a.files["results"] = res.name
        files.append(res)
        if any(r["status"] == "completed" for r in a.rows):
            files.append(charts.columns_chart(a.ci, out / f"columns{tag}.png", a.agent))
            files.append(charts.confusion_chart(a.rows, out / f"confusion{tag}.png", a.agent))
            a.files["columns"], a.files["confusion"] = files[-2].name, files[-1].name
            if a.pressure:
                files.append(charts.envelope_chart(a.pressure, out / f"envelopes{tag}.png", a.agent))
                a.files["envelopes"] = files[-1].name
    for i, group in enumerate(groups):
        cis = {name: ci for name, ci in group.cis.items() if ci}
        if len(cis) > 1:
            group.chart = "compare.png" if len(groups) == 1 else f"compare_{i + 1}.png"
            files.append(charts.compare_chart(cis, out / group.chart))
        if len(group.ladder) > 1:
            group.ladder_chart = "ladder.png" if len(groups) == 1 else f"ladder_{i + 1}.png"
            files.append(charts.ladder_chart(group.ladder, out / group.ladder_chart))
    text = render(results, groups, notes)
    md = out / "report.md"
    md.write_text(text, encoding="utf-8")
    files.append(md)
    # the same report as one page to open in a browser and share, charts inlined
    files.append(write_html(text, out, files))
    return {"agents": [a.agent for a in results], "files": [str(f) for f in files], "notes": notes}
