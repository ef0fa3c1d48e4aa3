"""The state engine answers every recorded call as the engine it replaced did.

tests/fixtures/engine_recording.json.gz holds every tool result and export of the previous
engine (the table-plan one) on the shipped scenarios' reference plays, the mini fixture's, the
hardening tests' hostile calls and the shared sample of the original (see
tests/engine_recording.py for what and how). Each group is played again here on the engine of
this checkout and compared entry by entry: the same result text, the same tool error text, the
same export and the same stored changes.

The one intended difference: a call whose arguments hold a lone surrogate (which DuckDB cannot
store) is now a tool error naming the argument, where the old engine's answer depended on which
path served it (a soft "not found", or DuckDB's encoding error); the state is unchanged by it.
"""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import NO_SAMPLE, SAMPLE
from engine_recording import GROUPS, HASHED, RECORDING, record


@pytest.fixture(scope="module")
def recorded() -> dict:
    with gzip.open(RECORDING, "rt", encoding="utf-8") as f:
        return json.load(f)["groups"]


def _allowed(old: list, new: list) -> bool:
    """A lone-surrogate call that is now a tool error naming one of its surrogate arguments."""
    names = old[1]
    outcome = new[2]
    return bool(names) and outcome.startswith("error ") and any(
        n == "*" or repr(n) in outcome or f"'{n}'" in outcome or f"`{n}`" in outcome for n in names
    )


@pytest.mark.parametrize("group", GROUPS)
def test_engine_reproduces_the_recorded_results_and_exports(recorded, group):
    if group == "upstream" and not SAMPLE.is_dir():
        pytest.skip(NO_SAMPLE)
    now = record(group)
    want = recorded[group]
    assert sorted(now) == sorted(want), "the recorded plays differ from the plays made now"
    mismatches = []
    for play_id, rows in want.items():
        got = now[play_id]
        assert len(got) == len(rows), f"{play_id}: {len(got)} entries now, {len(rows)} recorded"
        for old, new in zip(rows, got):
            assert old[:2] == new[:2], (play_id, old[:2], new[:2])
            if old[1] and group not in HASHED:
                # a lone surrogate in the arguments: refused by name (or by the schema, as before)
                same_refusal = old == new and new[2].startswith("error invalid arguments")
                if not (same_refusal or _allowed(old, new)):
                    mismatches.append((play_id, old[0], "lone surrogate not refused by name", new[2][:300]))
                if old[3:] != new[3:]:
                    mismatches.append((play_id, old[0], "a refused call changed the state", new[3][:300]))
                continue
            if old == new:
                continue
            mismatches.append((play_id, old[0], [t[:300] for t in old[2:]], [t[:300] for t in new[2:]]))
    assert not mismatches, f"{len(mismatches)} entries differ; first: {mismatches[:3]}"


def test_recording_covers_every_group_and_hostile_input(recorded):
    """The recording is not empty or trivial: every group has plays, the hostile group has lone
    surrogates, tool errors and soft errors, and the shipped plays write state."""
    assert set(recorded) == set(GROUPS)
    assert len(recorded["shipped"]) > 400 and len(recorded["mini"]) == 3
    hostile = [row for rows in recorded["hostile"].values() for row in rows]
    assert any(row[1] for row in hostile)
    assert any(row[2].startswith("error ") for row in hostile)
    assert any('"error": true' in row[2] for row in hostile)
    changed = [rows[-1][3] for rows in recorded["shipped"].values()]
    assert sum('"changed": {}' not in c for c in changed) > 400
