"""Which runs of a report are set side by side, and on which scenarios.

Runs are compared on scenarios they all ran, of one scenario-set content (its hash): for each run,
every run of the same set that ran at least its scenarios is compared with it on those. So runs
on the same scenarios are one table; a run over a subset (a `--sample-id` run, a one-domain run, the
scenarios people played, an ablation that left out the scenarios it has no hint for) is compared
with the larger runs on its scenarios, each of them restated on those scenarios alone, and the
report says so. Runs that only share some scenarios, neither holding the other's, are named with
how to compare them paired (`pibench compare`), and runs of different scenario-set content never
side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .agent_result import AgentResult
from .robustness import envelope_view
from .stats import RESAMPLES, SEED, bootstrap


@dataclass
class SideBySide:
    scenarios: frozenset[str]  # what every run is compared on
    runs: list[AgentResult]
    cis: dict[str, dict[str, Any]] = field(default_factory=dict)  # run label -> intervals on `scenarios`
    chart: str | None = None  # the chart file, once written
    # run label -> its pressure view (reports/robustness.py) on `scenarios`, when they hold envelopes
    ladder: dict[str, dict[str, Any]] = field(default_factory=dict)
    ladder_chart: str | None = None

    def restated(self) -> list[AgentResult]:
        """The runs that ran more than these scenarios (their numbers here are on these only)."""
        return [a for a in self.runs if a.run and a.run.ids != self.scenarios]


def side_by_side(results: list[AgentResult], resamples: int = RESAMPLES, seed: int = SEED) -> list[SideBySide]:
    groups: dict[tuple[Any, ...], SideBySide] = {}
    for a in results:
        if a.run is None:
            continue
        key = (a.run.set_hash, a.run.ids)
        if key in groups:
            continue
        members = [b for b in results if b.run and b.run.set_hash == a.run.set_hash and b.run.ids >= a.run.ids]
        if len(members) > 1:
            groups[key] = SideBySide(a.run.ids, members)
    out = sorted(groups.values(), key=lambda g: -len(g.scenarios))
    for g in out:
        for b in g.runs:
            same = b.run is not None and b.run.ids == g.scenarios
            g.cis[b.agent] = b.ci if same else bootstrap([r for r in b.rows if r["scenario_id"] in g.scenarios],
                                                         resamples, seed)
            view = b.pressure if same else envelope_view([r for r in b.rows if r["scenario_id"] in g.scenarios],
                                                         resamples, seed)
            if view:
                g.ladder[b.agent] = view
    return out


def overlap_notes(results: list[AgentResult], groups: list[SideBySide]) -> list[str]:
    """Runs that share scenarios but are not side by side: said, with why and what to do."""
    together = {frozenset((a.agent, b.agent)) for g in groups for a in g.runs for b in g.runs}
    notes = []
    for i, a in enumerate(results):
        for b in results[i + 1:]:
            if a.run is None or b.run is None:
                continue
            shared = a.run.ids & b.run.ids
            if not shared or frozenset((a.agent, b.agent)) in together:
                continue
            if a.run.set_hash != b.run.set_hash:
                notes.append(f"{a.agent} and {b.agent} share {len(shared)} scenario ids but ran different scenario-set "
                             f"content ({(a.run.set_hash or 'unknown')[:12]} and {(b.run.set_hash or 'unknown')[:12]}): "
                             "they are not compared")
            elif a.ablation is None:
                notes.append(f"{a.agent} and {b.agent} share {len(shared)} of their {len(a.run.ids)} and "
                             f"{len(b.run.ids)} scenarios: `pibench compare` compares them paired on those")
    return notes
