"""Evaluator parity: replaying every recorded trajectory of the shared sample gives the original's
checks, decision, flags, scores and final state.

Reads ../shared/upstream-sample in place (never copied); skipped with a reason when absent.
"""

from __future__ import annotations

import json

import pytest

from conftest import NO_SAMPLE, SAMPLE, TRAJECTORIES
from pibench_inspect.parity.replay import replay_one
from pibench_inspect.scenario.catalog import load_set

pytestmark = pytest.mark.skipif(not SAMPLE.is_dir(), reason=NO_SAMPLE)


@pytest.fixture(scope="module")
def sample_set():
    return load_set(SAMPLE)


def strip_details(dims):
    return {k: {**v, "checks": [{kk: vv for kk, vv in c.items() if kk != "detail"} for c in v["checks"]],
                "failed_checks": [{kk: vv for kk, vv in c.items() if kk != "detail"} for c in v["failed_checks"]]}
            for k, v in dims.items()}


@pytest.mark.parametrize("execute", [False, True], ids=["recorded-results", "our-tools"])
@pytest.mark.parametrize("path", TRAJECTORIES, ids=[p.stem for p in TRAJECTORIES])
def test_evaluation_matches_the_original(sample_set, path, execute):
    traj = json.loads(path.read_text())
    replayed = replay_one(path, sample_set, execute=execute)
    got = replayed.evaluation
    want = traj["expected"]
    assert replayed.final_state == traj["final_db"]
    for key in ("all_passed", "reward", "canonical_decision", "decision_channel", "decision_error",
                "checks", "skipped_checks", "event_flags"):
        assert got[key] == want[key], key
    assert got["semantic_score"] == pytest.approx(want["semantic_score"], abs=1e-12)
    assert got["partial_credit"] == pytest.approx(want["partial_credit"], abs=1e-12)
    assert strip_details(got["dimensions"]) == strip_details(want["dimensions"])
