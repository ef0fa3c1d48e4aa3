"""Train/test splits of a scenario set: every variant of a family on one side, per domain.

A family's side is a SHA-256 of its domain and name (families/: a hand-written scenario is its
own family), so the split is the same on every machine and in every version, independent of
the order scenarios are loaded in, and adding or removing a family never moves another.
"""

from __future__ import annotations

import hashlib

from .. import _bootstrap  # noqa: F401
from ..scenario.catalog import Entry, ScenarioSet, load_set

SPLITS = ("train", "test")
TEST_SHARE = 0.25  # the share of each domain's families held out for test
SPLIT_SALT = "pibench-split-v1"

_LOADED: dict[str | None, ScenarioSet] = {}
_SKIPPED: dict[str | None, dict[str, list[str]]] = {}


def scenario_set(source: str | None = None) -> ScenarioSet:
    """The scenario set under `source` (default: the shipped one), loaded once per process."""
    key = str(source) if source else None
    if key not in _LOADED:
        _LOADED[key] = load_set(source)
    return _LOADED[key]


def skipped(source: str | None = None) -> dict[str, list[str]]:
    """Scenario id -> why `inspect eval` skips it (the static checks of `pibench validate`, as
    task.drop_invalid applies them): the environment serves none of these."""
    key = str(source) if source else None
    if key not in _SKIPPED:
        from ..authoring.validate import static_problems

        _SKIPPED[key] = static_problems(list(scenario_set(source).entries.values()))
    return _SKIPPED[key]


def served(source: str | None = None) -> list[Entry]:
    """The scenarios the environment serves: exactly those `inspect eval` runs."""
    invalid = skipped(source)
    return [e for e in scenario_set(source).entries.values() if e.scenario.scenario_id not in invalid]


def family_position(domain: str, family: str) -> float:
    """Where a family falls in [0, 1): a hash of its domain and name, the same everywhere."""
    digest = hashlib.sha256(f"{SPLIT_SALT}\0{domain}\0{family}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(domain: str, family: str, test_share: float = TEST_SHARE) -> str:
    """`test` for the families whose position falls below `test_share`, else `train`."""
    return "test" if family_position(domain, family) < test_share else "train"


def splits(entries: list[Entry], test_share: float = TEST_SHARE) -> dict[str, str]:
    """scenario id -> "train" or "test", every variant of a family on the side of its family.

    Each family is placed by its own hash (split_of), so the split is independent of the order
    and the rest of the set; only a domain whose families all hash to one side has its family
    nearest the boundary moved across, so that both sides hold each domain with two families or more.
    """
    families: dict[str, set[str]] = {}
    for e in entries:
        families.setdefault(e.domain.name, set()).add(e.scenario.family)
    side: dict[tuple[str, str], str] = {}
    for domain, names in families.items():
        placed = {f: split_of(domain, f, test_share) for f in names}
        if len(names) >= 2 and len(set(placed.values())) == 1:
            only = next(iter(placed.values()))
            # the family nearest the boundary crosses it
            nearest = min(names, key=lambda f: abs(family_position(domain, f) - test_share))
            placed[nearest] = "train" if only == "test" else "test"
        side.update({(domain, f): s for f, s in placed.items()})
    return {e.scenario.scenario_id: side[(e.domain.name, e.scenario.family)] for e in entries}


def list_scenarios(split: str | None = None, *, source: str | None = None, domain: str | None = None,
                   test_share: float = TEST_SHARE) -> list[str]:
    """Scenario ids (sorted), all of them or one split's, optionally of one domain: the ones
    `inspect eval` runs (a scenario it skips as invalid is not listed; `skipped()` says why)."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"split={split!r}: expected one of {', '.join(SPLITS)} (or None for every scenario)")
    everything = served(source)
    entries = [e for e in everything if domain is None or e.domain.name == domain]
    if domain is not None and not entries:
        present = sorted({e.domain.name for e in everything})
        raise ValueError(f"domain={domain!r}: no such domain; domains: {', '.join(present)}")
    side = splits(entries, test_share)
    return sorted(sid for sid in side if split is None or side[sid] == split)
