"""A scenario set: every scenario under a source with the domain it runs in.

Loading never stops at the first bad file: problems are collected (file, field, message) so
`pibench validate` can report them all, and a run can go on with the good scenarios.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..domain.loader import AliasTable, Domain, alias_table, load_domain, resolve_domain_dir
from ..environment.shape import collection_clashes, patched_view, unstorable_text
from ..paths import data_root, domains_dir, scenarios_dir, user_path
from .errors import ScenarioError
from .loader import discover, load_scenario, parse_scenario
from .reading import MAX_FILE_BYTES, parse_json, read_bytes
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
    # loaded with `only`: the ids it left out (id -> the file's `meta.domain`, as written), read
    # but not parsed, so that a pattern matching nothing can still name the closest ids
    unloaded: dict[str, str] = field(default_factory=dict)

    def resolve(self, scenario_id: str) -> tuple[Scenario, Domain]:
        e = self.entries[scenario_id]
        return e.scenario, e.domain

    def by_domain(self, name: str) -> list[Entry]:
        return [e for e in self.entries.values() if e.domain.name == name]


def state_clashes(domain: Domain, scenario: Scenario) -> list[str]:
    """Collections the scenario's initial state (seed + patch) maps twice, and text in it the
    state cannot store (environment/shape.py)."""
    env = scenario.environment_setup
    overrides = {k: v for k, v in (("employee", env.employee), ("now", env.now)) if v is not None}
    view = patched_view(domain.seed_state, env.initial_state_patch, overrides)
    return [
        f"environment_setup.initial_state_patch: {p.removeprefix('(top level): ')} (seed + patch)"
        for p in collection_clashes(view)
    ] + unstorable_text(env.initial_state_patch, "environment_setup.initial_state_patch") + [
        p for name, v in overrides.items() for p in unstorable_text(v, f"environment_setup.{name}")]


def file_problems(text: str, path: Path, domain: Domain) -> list[str]:
    """What `load_set` would refuse in a scenario file of `domain` holding `text`, found before
    the file is written (`pibench generate`): the reader's size and JSON rules, the format and
    its rules, the state."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as err:
        return [f"(file): holds text that is not UTF-8 (a lone surrogate at character {err.start})"]
    if size > MAX_FILE_BYTES:
        return [f"(file): scenario file is larger than the {MAX_FILE_BYTES} byte limit (MAX_FILE_BYTES)"]
    try:
        return state_clashes(domain, parse_scenario(parse_json(text, path), path))
    except ScenarioError as err:
        return err.problems


# `"scenario_id": "..."` and `"domain": "..."` as JSON writes them (any spacing, escapes kept)
_ID = re.compile(rb'"scenario_id"\s*:\s*("(?:[^"\\]|\\.)*")')
_DOMAIN = re.compile(rb'"domain"\s*:\s*("(?:[^"\\]|\\.)*")')


def peek(path: Path, root: Path, only: Callable[[str], bool]) -> tuple[str, str] | None:
    """(scenario id, meta.domain as written) of a scenario file that `only` does not want, read as
    untrusted data (confined, bounded) but neither parsed nor validated: None when it may be
    wanted (then it is loaded in full, which also says what is wrong with it).

    Every `"scenario_id": "..."` in the text is a candidate, so a file whose id `only` wants is
    never left out (a decoy elsewhere in it only costs loading it); a file with no candidate is
    parsed as JSON to find its id."""
    try:
        data = read_bytes(path, root, "scenario file")
    except ScenarioError:
        return None
    try:
        found = [json.loads(m.group(1)) for m in _ID.finditer(data)]
        if not found:
            raw = json.loads(data)
            meta = raw.get("meta") if isinstance(raw, dict) else None
            found = [meta.get("scenario_id")] if isinstance(meta, dict) else []
    except (ValueError, RecursionError):
        return None
    if not found or not all(isinstance(x, str) for x in found) or any(only(x) for x in found):
        return None
    domain = _DOMAIN.search(data)
    try:
        named = json.loads(domain.group(1)) if domain else ""
    except ValueError:
        named = ""
    return found[0], named if isinstance(named, str) else ""


def load_set(source: str | Path | None = None, only: Callable[[str], bool] | None = None) -> ScenarioSet:
    """Every scenario under `source` (default: the package data) with its domain. Files are read
    as untrusted data confined to the source folder (see reading.py).

    `only`: load only the scenarios whose id it accepts (a run's `--sample-id`); the others are
    read for their id alone (`unloaded`), which costs a few per cent of parsing and checking them."""
    src = user_path(source) if source else None
    if src is not None and not (src / "scenarios").is_dir():
        raise FileNotFoundError(f"source {src}: no scenarios/ folder (expected a pi-bench checkout)")
    root = src if src is not None else data_root()
    droot = domains_dir(src)
    out = ScenarioSet(source=src)
    aliases = alias_table(droot) if droot.is_dir() else AliasTable({})
    domain_cache: dict[Path, Domain | ScenarioError] = {}
    dirs: dict[str, Path] = {}
    for folder, err in aliases.errors.items():  # reported once, whether or not a scenario uses it
        domain_cache[droot / folder] = err
        out.errors.append(err)
    for path in discover(scenarios_dir(src)):
        if only is not None and (seen := peek(path, root, only)) is not None:
            out.unloaded.setdefault(*seen)
            continue
        try:
            scenario = load_scenario(path, root=root)
        except ScenarioError as err:
            out.errors.append(err)
            continue
        try:
            # one resolution per domain name, not per scenario (hundreds share a few domains)
            if scenario.meta.domain not in dirs:
                dirs[scenario.meta.domain] = resolve_domain_dir(scenario.meta.domain, droot, aliases.names)
            ddir = dirs[scenario.meta.domain]
        except FileNotFoundError as err:
            out.errors.append(ScenarioError(path, [f"meta.domain: {err}"]))
            continue
        if ddir not in domain_cache:
            try:
                domain_cache[ddir] = load_domain(ddir, root)
            except ScenarioError as err:
                domain_cache[ddir] = err
                out.errors.append(err)
        domain = domain_cache[ddir]
        if isinstance(domain, ScenarioError):
            out.errors.append(ScenarioError(path, [f"meta.domain: domain {ddir.name} failed to load"]))
            continue
        clashes = state_clashes(domain, scenario)
        if clashes:
            out.errors.append(ScenarioError(path, clashes))
            continue
        sid = scenario.scenario_id
        if sid in out.entries:
            out.errors.append(
                ScenarioError(path, [f"meta.scenario_id: {sid} is also used by {out.entries[sid].path}"])
            )
            continue
        out.entries[sid] = Entry(scenario, domain, path)
    return out
