"""`pibench compare`: paired differences with family-clustered bootstrap intervals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import numpy as np

from pibench_inspect.reports.compare import paired

INSPECT = str(Path(sys.executable).with_name("inspect"))
PIBENCH = str(Path(sys.executable).with_name("pibench"))
COLUMN = "Privacy & Information Flow"


def rows(outcomes: dict[str, tuple[str, bool]]) -> list[dict]:
    return [{"scenario_id": sid, "status": "completed", "family": fam, "leaderboard_primary": COLUMN,
             "all_passed": passed, "partial_credit": float(passed)} for sid, (fam, passed) in outcomes.items()]


def synthetic(diff: float, families: int = 120, per_family: int = 4, seed: int = 3):
    """Paired outcomes: each family has its own difficulty (shared by both agents, so the pairing
    matters); A passes a scenario `diff` more often than B."""
    rng = np.random.default_rng(seed)
    a, b = {}, {}
    for f in range(families):
        difficulty = rng.uniform(0.2, 0.8)
        for k in range(per_family):
            sid = f"F{f}.c{k}"
            u = rng.uniform()
            a[sid] = (f"F{f}", u < min(1.0, difficulty + diff))
            b[sid] = (f"F{f}", u < difficulty)
    return rows(a), rows(b)


def test_a_known_difference_is_recovered_within_its_interval():
    a, b = synthetic(0.15)
    c = paired(a, b, ("A", "B"))
    row = next(r for r in c.rows if r["statistic"] == "compliance_rate")
    truth = np.mean([x["all_passed"] for x in a]) - np.mean([x["all_passed"] for x in b])
    assert row["diff"] == truth
    assert row["low"] <= 0.15 <= row["high"]  # the difference built in lies inside the interval
    assert row["distinguishable"] and row["low"] > 0
    col = next(r for r in c.rows if r["statistic"] == COLUMN)
    assert col["scenarios"] == 480 and col["families"] == 120


def test_no_difference_is_not_called_a_difference():
    a, b = synthetic(0.0)
    row = next(r for r in paired(a, b).rows if r["statistic"] == "compliance_rate")
    assert row["diff"] == 0.0 and row["low"] <= 0 <= row["high"] and not row["distinguishable"]


def test_pairing_needs_fewer_scenarios_than_two_separate_intervals():
    from pibench_inspect.reports.stats import bootstrap

    a, b = synthetic(0.1, families=60)
    row = next(r for r in paired(a, b).rows if r["statistic"] == "compliance_rate")
    ia, ib = bootstrap(a)["compliance_rate"], bootstrap(b)["compliance_rate"]
    assert row["high"] - row["low"] < (ia["high"] - ia["low"])  # the paired interval is the narrower


def test_scenarios_in_one_run_only_are_named_and_left_out():
    a, b = synthetic(0.1, families=10)
    b = [r for r in b if r["scenario_id"] != "F0.c0"] + rows({"EXTRA": ("EXTRA", True)})
    c = paired(a, b)
    assert c.only_a == ["F0.c0"] and c.only_b == ["EXTRA"] and c.scenarios == 39


@pytest.mark.slow
def test_compare_two_keyless_runs_through_the_command_line(tmp_path):
    for agent in ("oracle", "pushover"):
        r = subprocess.run([INSPECT, "eval", "pibench_inspect/pibench_retail", "-T", f"agent={agent}", "-T",
                            "user=scripted", "--model", "none", "--display", "none", "--log-dir",
                            str(tmp_path / agent), "--sample-id", "RET_0*"], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    r = subprocess.run([PIBENCH, "compare", str(tmp_path / "oracle"), str(tmp_path / "pushover"),
                        "--json", str(tmp_path / "c.json")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "A: oracle" in r.stdout and "B: pushover" in r.stdout
    assert "compliance_rate" in r.stdout and "Escalation / Abstention" in r.stdout and "A better" in r.stdout
    data = json.loads((tmp_path / "c.json").read_text())
    assert next(x for x in data["rows"] if x["statistic"] == "compliance_rate")["diff"] == 1.0
    bad = subprocess.run([PIBENCH, "compare", str(tmp_path / "oracle"), str(tmp_path / "nowhere")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no such file or folder" in bad.stderr and "Traceback" not in bad.stderr
