"""Aggregate parity: the metrics payload and the leaderboard payload over each scripted agent's
set equal the original's (column descriptions and check detail strings aside: ours are our own
wording). Reads ../shared/upstream-sample in place; skipped with a reason when absent.
"""

from __future__ import annotations

import copy
import json

import pytest

from conftest import NO_SAMPLE, SAMPLE
from pibench_inspect.parity.replay import replay_one
from pibench_inspect.scenario.catalog import load_set
from pibench_inspect.conversation.seeds import derive_seed
from pibench_inspect.scoring.payload import leaderboard_payload, metrics_payload

pytestmark = pytest.mark.skipif(not SAMPLE.is_dir(), reason=NO_SAMPLE)
VARIANTS = sorted(p.stem for p in SAMPLE.glob("expected_metrics/*.json")) if SAMPLE.is_dir() else []


def scrub(obj):
    """Drop the fields whose wording is ours, not the original's."""
    if isinstance(obj, dict):
        return {k: scrub(v) for k, v in obj.items() if k not in ("description", "detail")}
    if isinstance(obj, list):
        return [scrub(v) for v in obj]
    return obj


def close(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), (sorted(a), sorted(b))
        for k in a:
            close(a[k], b[k])
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y)
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, abs=1e-12)
    else:
        assert a == b


@pytest.fixture(scope="module")
def rows_by_variant():
    sset = load_set(SAMPLE)
    out = {}
    for variant in VARIANTS:
        rows = {}
        for path in SAMPLE.glob(f"trajectories/*/*__{variant}.json"):
            r = replay_one(path, sset, execute=False).row  # tools are covered by test_parity_tools
            rows[r["scenario_id"]] = r
        out[variant] = rows
    return out


def ordered(rows, expected, trials=1):
    out = []
    for sid in expected["row_order"]:
        for t in range(trials):
            r = copy.deepcopy(rows[sid])
            r.update(trial=t, seed=derive_seed(42, sid, t), benchmark_version="0.1.0")
            out.append(r)
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_metrics_payload_matches(rows_by_variant, variant):
    expected = json.loads((SAMPLE / "expected_metrics" / f"{variant}.json").read_text())
    close(scrub(metrics_payload(ordered(rows_by_variant[variant], expected))), scrub(expected["metrics"]))
    two = sorted(ordered(rows_by_variant[variant], expected, trials=2), key=lambda r: (r["scenario_id"], r["trial"]))
    close(scrub(metrics_payload(two)), scrub(expected["metrics_two_trials"]))


@pytest.mark.parametrize("variant", VARIANTS)
def test_leaderboard_payload_matches(rows_by_variant, variant):
    expected = json.loads((SAMPLE / "expected_metrics" / f"{variant}.json").read_text())
    got = leaderboard_payload(variant, ordered(rows_by_variant[variant], expected))
    close(scrub(got), scrub(expected["agentbeats"]))
