"""One run's results in a report (an agent on a set of scenarios): its logs, one row per sample-epoch,
the payload and statistics. `agent` is the run's label."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .logs import LoadedLog

if TYPE_CHECKING:
    from .runs import Run


@dataclass
class AgentResult:
    agent: str
    logs: list[LoadedLog]
    rows: list[dict[str, Any]]
    payload: dict[str, Any] = field(default_factory=dict)
    ci: dict[str, Any] = field(default_factory=dict)
    pass_k: dict[int, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    power: list[dict[str, Any]] = field(default_factory=list)  # per column: n, families, half-width
    pressure: dict[str, Any] = field(default_factory=dict)  # envelope view (reports/robustness.py)
    ablation: dict[str, Any] | None = None  # beside its `-T ablation=no_pressure` run
    files: dict[str, str] = field(default_factory=dict)
    run: "Run | None" = None  # what the logs are a run of (report.group_runs)
