"""Tool-level parity: every recorded call of the shared sample gives the original's result string,
envelope error flag and final state when executed by our re-implementation on our DuckDB state.

Reads ../shared/upstream-sample in place (never copied); skipped with a reason when absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import NO_SAMPLE, SAMPLE, TRAJECTORIES
from pibench_inspect.environment.merge import domain_document
from pibench_inspect.environment.state import StateDB
from pibench_inspect.environment.tools import exposed_tools
from pibench_inspect.parity.execute import execute_original
from pibench_inspect.scenario.catalog import load_set

pytestmark = pytest.mark.skipif(not SAMPLE.is_dir(), reason=NO_SAMPLE)


@pytest.fixture(scope="module")
def sample_set():
    return load_set(SAMPLE)


def entry_for(sample_set, traj):
    want = (SAMPLE / "scenarios" / traj["scenario_file"]).resolve()
    return next(e for e in sample_set.entries.values() if Path(e.path).resolve() == want)


@pytest.mark.parametrize("path", TRAJECTORIES, ids=[p.stem for p in TRAJECTORIES])
def test_recorded_calls_reproduce_results_and_final_state(sample_set, path):
    traj = json.loads(path.read_text())
    entry = entry_for(sample_set, traj)
    offered = {t.name for t in exposed_tools(entry.domain, entry.scenario)}
    state = StateDB(domain_document(entry.domain, entry.scenario))
    for call in traj["tool_calls"]:
        content, error = execute_original(entry.domain, offered, state, call["name"], call["arguments"])
        assert (content, error) == (call["result"], call["error"]), f"call {call['index']} {call['name']}"
    final = state.export()
    final.pop("_policy_text", None)
    assert final == traj["final_db"]
