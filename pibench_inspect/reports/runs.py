"""Which logs are one run: the grouping `pibench report` reports by.

A run is one task, agent (and model) and settings on one set of scenarios (the same ids and
scenario-set content). Several logs of a run are its trials (their epochs add up) or the shards
of one sharded run (their scenarios joined). A log folder usually mixes runs (a full run, a
one-domain run, a `--sample-id` subset): each is reported, named by its agent and whatever tells
it apart from the same agent's other runs.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .logs import LoadedLog, ReportInputError


def scenario_ids(x: LoadedLog) -> frozenset[str]:
    return frozenset(str(s.id) for s in x.log.samples or [])


def _sha(recorded: Any) -> str | None:
    sha = recorded.get("sha256") if isinstance(recorded, dict) else None
    return str(sha) if sha else None


def scenario_set_hash(x: LoadedLog) -> str | None:
    """The scenario-set content a run ran (recorded when it started) and, for a log `pibench
    rescore` re-scored from another set, the content it was scored with: `RAN/SCORED`."""
    meta = x.log.eval.metadata or {}
    ran = _sha(meta.get("scenario_set"))
    rescored = meta.get("pibench_rescored")
    scored = _sha(rescored.get("scenario_set")) if isinstance(rescored, dict) else None
    return ran if ran is None or scored in (None, ran) else f"{ran}/{scored}"


def task_name(x: LoadedLog) -> str:
    return str(x.log.eval.task).removeprefix("pibench_inspect/")


# task arguments that do not make two logs different runs: where the scenarios were read from
# (the scenario-set hash says whether it was the same content), which shard a log is, and the
# filters that chose the scenarios (the run's scenario ids say what they chose)
NOT_A_RUN_SETTING = ("source", "shard", "column", "label")


def settings(x: LoadedLog) -> dict[str, Any]:
    """The task arguments that make a run what it is (the agent, the user, the scoring, ...)."""
    return {k: v for k, v in sorted(x.args.items()) if k not in NOT_A_RUN_SETTING}


@dataclass
class Run:
    """Logs of one agent (and model) on one task with the same settings and the same scenarios
    (ids and scenario-set content): the logs are further trials of one run, or its shards."""

    agent: str  # the agent's name (LoadedLog.agent_id): built-in, class or model, [ablation]
    task: str
    model: str
    settings: dict[str, Any]
    set_hash: str | None
    ids: frozenset[str]
    logs: list[LoadedLog] = field(default_factory=list)
    label: str = ""  # unique among the report's runs

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.task, self.agent, self.model, json.dumps(self.settings, sort_keys=True, default=str),
                self.set_hash, self.ids)


def _parts(logs: list[LoadedLog]) -> list[tuple[list[LoadedLog], frozenset[str]]]:
    """The logs as parts of runs: a log on its own, or the shards of one sharded run together
    (`-T shard=K/N`, the same N and otherwise the same run) with their scenarios joined. The
    same part given twice from different runs is a contradiction: refused, naming both."""
    from ..scenario.shard import parse_shard

    out: list[tuple[list[LoadedLog], frozenset[str]]] = []
    sharded: dict[tuple[Any, ...], dict[int, LoadedLog]] = {}
    for x in logs:
        shard = parse_shard(x.args.get("shard"))
        if shard is None:
            out.append(([x], scenario_ids(x)))
            continue
        k, n = shard
        key = (task_name(x), x.agent_id, str(x.log.eval.model), json.dumps(settings(x), sort_keys=True, default=str),
               scenario_set_hash(x), n)
        parts = sharded.setdefault(key, {})
        if k in parts and parts[k].log.eval.eval_id != x.log.eval.eval_id:
            raise ReportInputError(
                f"{parts[k].path} and {x.path} are both part {k}/{n} of the same run of {x.agent_id}: "
                "report the parts of one sharded run at a time (each part once)")
        parts.setdefault(k, x)
    for parts in sharded.values():
        xs = [parts[k] for k in sorted(parts)]
        out.append((xs, frozenset().union(*(scenario_ids(x) for x in xs))))
    return out


def group_runs(logs: list[LoadedLog]) -> list[Run]:
    """Group a folder's logs into runs: same task, agent, model, settings and scenarios (ids and
    scenario-set content; people's play sessions are pooled whatever scenario each played). Several logs of one run are its trials (their epochs add up); a log
    folder that mixes a full run, a one-domain run and a `--sample-id` subset is three runs,
    each reported. Labels name each run, adding only what tells runs of one agent apart."""
    runs: dict[tuple[Any, ...], Run] = {}
    for xs, ids in _parts(logs):
        x = xs[0]
        run = Run(x.agent_id, task_name(x), str(x.log.eval.model), settings(x), scenario_set_hash(x), ids)
        # a person's `pibench play` sessions are one scenario each: together they are one run of
        # the scenarios played (the same scenario played again is a further trial)
        key = run.key[:-1] + ("played by people",) if x.played_by_person else run.key
        same = runs.setdefault(key, run)
        same.logs.extend(xs)
        same.ids = same.ids | ids
    out = list(runs.values())
    label_runs(out)
    return out


def label_runs(runs: list[Run]) -> None:
    by_agent: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        by_agent[r.agent].append(r)
    for agent, same in by_agent.items():
        if len(same) == 1:
            same[0].label = agent
            continue
        differ = {
            "task": len({r.task for r in same}) > 1,
            "model": len({r.model for r in same}) > 1,
            "size": len({len(r.ids) for r in same}) > 1,
            "set": len({r.set_hash for r in same}) > 1,
        }
        keys = sorted({k for r in same for k in r.settings})
        varying = [k for k in keys if len({json.dumps(r.settings.get(k), default=str) for r in same}) > 1]
        for r in same:
            parts = [r.task] if differ["task"] else []
            parts += [r.model] if differ["model"] else []
            parts += [f"{len(r.ids)} scenario{'s' if len(r.ids) != 1 else ''}"] if differ["size"] else []
            parts += [f"{k}={r.settings.get(k)}" for k in varying]
            parts += [f"set {(r.set_hash or 'unknown')[:8]}"] if differ["set"] else []
            r.label = f"{agent} ({', '.join(parts)})" if parts else agent
        seen: dict[str, int] = defaultdict(int)
        for r in same:  # the same scenario count and settings, different ids
            seen[r.label] += 1
        counter: dict[str, int] = defaultdict(int)
        for r in same:
            if seen[r.label] > 1:
                counter[r.label] += 1
                r.label = f"{r.label[:-1]}, #{counter[r.label]})" if r.label.endswith(")") else f"{r.label} (#{counter[r.label]})"
