"""A scenario set: every scenario under a source with the domain it runs in.

Loading never stops at the first bad file: problems are collected (file, field, message) so
`pibench validate` can report them all, and a run can go on with the good scenarios.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..domain.loader import Domain, load_domain, resolve_domain_dir
from ..paths import domains_dir, scenarios_dir, user_path
from .errors import ScenarioError
from .loader import discover, load_scenario
from .model import Scenario


@dataclass
class Entry:
    scenario: Scenario
    domain: Domain
    path: Path


@dataclass
class ScenarioSet:
    source: Path | None
    entries: dict[str, Entry] = field(default_factory=dict)
    errors: list[ScenarioError] = field(default_factory=list)

    def resolve(self, scenario_id: str) -> tuple[Scenario, Domain]:
        e = self.entries[scenario_id]
        return e.scenario, e.domain

    def by_domain(self, name: str) -> list[Entry]:
        return [e for e in self.entries.values() if e.domain.name == name]


def load_set(source: str | Path | None = None) -> ScenarioSet:
    src = user_path(source) if source else None
    if src is not None and not (src / "scenarios").is_dir():
        raise FileNotFoundError(f"source {src}: no scenarios/ folder (expected a pi-bench checkout)")
    droot = domains_dir(src)
    out = ScenarioSet(source=src)
    domain_cache: dict[Path, Domain | ScenarioError] = {}
    for path in discover(scenarios_dir(src)):
        try:
            scenario = load_scenario(path)
        except ScenarioError as err:
            out.errors.append(err)
            continue
        try:
            ddir = resolve_domain_dir(scenario.meta.domain, droot)
        except FileNotFoundError as err:
            out.errors.append(ScenarioError(path, [f"meta.domain: {err}"]))
            continue
        if ddir not in domain_cache:
            try:
                domain_cache[ddir] = load_domain(ddir)
            except ScenarioError as err:
                domain_cache[ddir] = err
                out.errors.append(err)
        domain = domain_cache[ddir]
        if isinstance(domain, ScenarioError):
            out.errors.append(ScenarioError(path, [f"meta.domain: domain {ddir.name} failed to load"]))
            continue
        sid = scenario.scenario_id
        if sid in out.entries:
            out.errors.append(
                ScenarioError(path, [f"meta.scenario_id: {sid} is also used by {out.entries[sid].path}"])
            )
            continue
        out.entries[sid] = Entry(scenario, domain, path)
    return out
