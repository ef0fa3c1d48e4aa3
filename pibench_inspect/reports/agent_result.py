"""One agent's results in a report: its logs, one row per run, the payload and statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .logs import LoadedLog


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
