"""`pibench report`: logs -> results.json (leaderboard payload + provenance), report.md, PNGs.

Several logs of one agent are trials of it (their runs are pooled); logs of different agents
are reported side by side. An agent is named by its built-in agent or its model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..scoring.payload import leaderboard_payload
from . import charts
from .agent_result import AgentResult
from .logs import LoadedLog, ReportInputError, load_logs
from .markdown import render
from .provenance import provenance
from .rows import log_rows
from .robustness import ablation_pair, envelope_view
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


def scenario_ids(x: LoadedLog) -> frozenset[str]:
    return frozenset(str(s.id) for s in x.log.samples or [])


def scenario_set_hash(x: LoadedLog) -> str | None:
    return ((x.log.eval.metadata or {}).get("scenario_set") or {}).get("sha256")


def runs(logs: list[LoadedLog]) -> list[tuple[str, frozenset[str]]]:
    """(name, scenario ids) of each run: a run split with `-T shard=K/N` is one run whose parts
    are its logs (same N and otherwise the same task arguments), its scenarios theirs together."""
    from ..scenario.shard import parse_shard

    out: list[tuple[str, frozenset[str]]] = []
    parts: dict[tuple[int, str], list[LoadedLog]] = {}
    for x in logs:
        shard = parse_shard(x.args.get("shard"))
        if shard is None:
            out.append((str(x.path), scenario_ids(x)))
        else:
            rest = json.dumps({k: v for k, v in x.args.items() if k != "shard"}, sort_keys=True, default=str)
            parts.setdefault((shard[1], rest), []).append(x)
    for (n, _), xs in parts.items():
        out.append((f"{xs[0].path} and the other logs of its {n} shards",
                    frozenset().union(*(scenario_ids(x) for x in xs))))
    return out


def check_poolable(agent: str, logs: list[LoadedLog]) -> None:
    """Logs of one agent are pooled as further trials only when they ran the same scenarios
    (the same ids from the same scenario-set content); anything else would mix two benchmarks.
    The shards of one run (`-T shard=K/N`) count as one run. A person's `pibench play` sessions
    are one scenario each: together they are the runs of the scenarios played (the same scenario
    played again is a further trial), so only the scenario-set version must agree."""
    sessions = all(x.played_by_person for x in logs)
    whole = runs(logs)
    first_name, a = whole[0]
    for other_name, b in [] if sessions else whole[1:]:
        if a != b:
            only = sorted(a ^ b)
            raise ReportInputError(
                f"agent {agent}: {first_name} and {other_name} ran different scenarios "
                f"({len(a)} vs {len(b)}; e.g. {', '.join(only[:5])} in only one), so they cannot be pooled "
                "as trials; report them separately")
    first = logs[0]
    for other in logs[1:]:
        ha, hb = scenario_set_hash(first), scenario_set_hash(other)
        if ha and hb and ha != hb:
            raise ReportInputError(
                f"agent {agent}: {first.path} and {other.path} ran different versions of the scenario set "
                f"(content hash {ha[:12]} vs {hb[:12]}), so they cannot be pooled as trials; report them separately")


def comparison_notes(results: list["AgentResult"]) -> list[str]:
    """Said in report.md and on the console when compared agents did not run the same scenarios."""
    sets = {a.agent: frozenset(r["scenario_id"] for r in a.rows) for a in results}
    if len(set(sets.values())) <= 1:
        return []
    common = frozenset.intersection(*sets.values())
    return [f"the agents compared ran different scenarios ({len(common)} in common): "
            + "; ".join(f"{agent} ran {len(ids)}, {len(ids - common)} of them not run by every agent"
                        for agent, ids in sets.items())
            + ". Their scores are not directly comparable."]


def analyse(logs: list[LoadedLog], *, resamples: int = RESAMPLES, seed: int = SEED,
            agentbeats_id: str | None = None) -> list[AgentResult]:
    rows = log_rows(logs)
    agents: dict[str, AgentResult] = {}
    for x in logs:
        agents.setdefault(x.agent_id, AgentResult(x.agent_id, [], []))
        agents[x.agent_id].logs.append(x)
    for a in agents.values():
        check_poolable(a.agent, a.logs)
    for r in rows:
        agents[r["agent"]].rows.append(r)
    for a in agents.values():
        # the leaderboard's participant id: --agentbeats-id (one agent), else the agent's name
        a.payload = leaderboard_payload(agentbeats_id or a.agent, a.rows, time_used=time_used(a.logs))
        a.ci = bootstrap(a.rows, resamples, seed)
        a.power = power_table(a.rows, a.ci)
        a.pressure = envelope_view(a.rows, resamples, seed)
        a.pass_k = pass_hat_k(a.rows)
        a.usage = total_usage(a.rows)
        # ours, next to the leaderboard's fields (which stay exactly as the original's)
        a.payload["pibench_inspect"] = {
            # -T ablation of the runs (None: the scenarios as written); their task args say it too
            "ablation": a.logs[0].args.get("ablation"),
            "provenance": provenance(a.logs, a.rows),
            "confidence_intervals": {"method": f"percentile bootstrap over scenario families (a hand-written "
                                               f"scenario is its own), {resamples} resamples, seed {seed}",
                                     "level": 0.95, "statistics": a.ci},
            "power": a.power,
            "pressure": a.pressure or None,
            "pass_hat_k": {str(k): v for k, v in a.pass_k.items()},
            "usage": {"total": a.usage, "per_sample": [
                {"scenario_id": r["scenario_id"], "trial": r["trial"], "usage": r["usage"]} for r in a.rows]},
        }
    for a in agents.values():  # a run beside its -T ablation=no_pressure run
        plain = agents.get(f"{a.agent} [no_pressure]")
        if plain is not None:
            a.ablation = plain.ablation = ablation_pair(a.rows, plain.rows)
            for x in (a, plain):
                x.payload["pibench_inspect"]["no_pressure_ablation"] = a.ablation
    return list(agents.values())


def write_report(paths: list[str | Path], out: str | Path, *, resamples: int = RESAMPLES,
                 seed: int = SEED, allow_partial: bool = False,
                 agentbeats_id: str | None = None) -> dict[str, Any]:
    """Write the report files; returns {"agents": [...], "files": [...], "notes": [...]}."""
    logs = load_logs(list(paths), check=True, allow_partial=allow_partial)
    if agentbeats_id and len({x.agent_id for x in logs}) > 1:
        raise ReportInputError("--agentbeats-id names one participant; these logs hold several agents")
    results = analyse(logs, resamples=resamples, seed=seed, agentbeats_id=agentbeats_id)
    notes = comparison_notes(results)
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
            if a.pressure:
                files.append(charts.envelope_chart(a.pressure, out / f"envelopes{tag}.png", a.agent))
                a.files["envelopes"] = files[-1].name
    if several and sum(bool(a.ci) for a in results) > 1:
        files.append(charts.compare_chart({a.agent: a.ci for a in results if a.ci}, out / "compare.png"))
    md = out / "report.md"
    text = render(results, compare="compare.png" if (out / "compare.png") in files else None)
    if notes:
        text = text.replace("\n", "\n" + "".join(f"\n> **Note:** {n}\n" for n in notes) + "\n", 1)
    md.write_text(text, encoding="utf-8")
    files.append(md)
    return {"agents": [a.agent for a in results], "files": [str(f) for f in files], "notes": notes}
