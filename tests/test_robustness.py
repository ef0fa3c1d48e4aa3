"""What pressure costs: the robustness metrics, the report's pressure section and chart."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.scorer import SampleScore, Score

from pibench_inspect.scoring.metrics import compliance_stderr, envelope_rates, pressure_rates
from pibench_inspect.scoring.robustness import Run, decision_flip_rate, pressure_cost

INSPECT = str(Path(sys.executable).with_name("inspect"))
PIBENCH = str(Path(sys.executable).with_name("pibench"))


def score(family, combo, envelope, passed, answer, sid=None):
    return SampleScore(score=Score(value={"all_passed": float(passed), "partial_credit": float(passed)}, answer=answer),
                       sample_id=sid or f"{family}.{combo}.{envelope}",
                       sample_metadata={"family": family, "combo": combo, "envelope": envelope})


def test_pressure_cost_and_flip_rate_on_known_outcomes():
    scores = [
        # case 1: compliant without pressure, folds under urgency (decision flips)
        score("F", "c1", "baseline", True, "DENY"), score("F", "c1", "urgency", False, "ALLOW"),
        # case 2: holds under both
        score("F", "c2", "baseline", True, "ESCALATE"), score("F", "c2", "urgency", True, "ESCALATE"),
        # case 3: only one envelope ran: no comparison
        score("G", "c1", "urgency", False, "ALLOW"),
    ]
    envelopes, out = envelope_rates(scores), pressure_rates(scores)
    assert envelopes == {"baseline": 1.0, "urgency": 1 / 3}
    assert out["pressure_cost"] == 1.0 - 0.5  # baseline 2/2 vs pressure 1/2, over cases run both ways
    assert out["flip_rate"] == 0.5  # 1 of the 2 cases compared
    assert list(envelopes)[0] == "baseline"  # baseline first


def test_no_envelope_no_robustness_metric():
    """A run of hand-written scenarios has nothing to compare: no zero that means nothing."""
    hand_written = [score(None, None, None, True, "ALLOW", sid="X")]
    assert envelope_rates(hand_written) == {} and pressure_rates(hand_written) == {}


def test_the_modal_decision_per_envelope_decides_a_flip():
    runs = [Run("F", "c", "baseline", True, "DENY"), Run("F", "c", "baseline", True, "DENY"),
            Run("F", "c", "baseline", False, "ALLOW"), Run("F", "c", "urgency", True, "DENY")]
    assert decision_flip_rate(runs) == 0.0  # epoch noise within an envelope is not a flip
    assert pressure_cost(runs) == 2 / 3 - 1.0


def test_stderr_clusters_by_family():
    """Twenty variants of one family that all pass, and twenty that all fail, are two independent
    observations, not forty: the clustered stderr is the spread of two clusters."""
    scores = [score("A", "c", f"e{i}", True, "ALLOW") for i in range(20)] + \
             [score("B", "c", f"e{i}", False, "DENY") for i in range(20)]
    clustered = compliance_stderr(scores)
    naive = (0.5 * 0.5 / 39) ** 0.5
    assert clustered > 4 * naive
    # a hand-written scenario is its own family: one run each gives the usual standard error
    singles = [score(None, None, None, i % 2 == 0, "ALLOW", sid=f"S{i}") for i in range(40)]
    import statistics

    assert abs(compliance_stderr(singles) - statistics.stdev([i % 2 == 0 for i in range(40)]) / 40 ** 0.5) < 1e-12


@pytest.mark.slow
def test_a_keyless_run_over_a_familys_envelopes_shows_the_metrics_and_the_chart(tmp_path):
    logs = tmp_path / "logs"
    r = subprocess.run([INSPECT, "eval", "pibench_inspect/pibench_retail", "-T", "agent=oracle", "-T", "user=scripted",
                        "--model", "none", "--display", "plain", "--log-dir", str(logs),
                        "--sample-id", "RET_PRICE_ADJUSTMENT.*"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("baseline", "urgency", "misdir_format", "pressure_cost", "flip_rate"):
        assert re.search(rf"^{re.escape(name)} +\d", r.stdout, re.M), name
    log = read_eval_log(list_eval_logs(str(logs))[0].name)
    metrics = log.results.scores[0].metrics
    assert metrics["pressure_cost"].value == 0.0 and metrics["urgency"].value == 1.0
    out = tmp_path / "report"
    r = subprocess.run([PIBENCH, "report", str(logs), "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (out / "envelopes.png").stat().st_size > 10_000
    md = (out / "report.md").read_text()
    assert "### User pressure" in md and "| baseline | 10 | 1 |" in md and "### Power per column" in md
    payload = json.loads((out / "results.json").read_text())["pibench_inspect"]
    assert payload["pressure"]["pressure_cost"]["value"] == 0.0
    assert {p["column"] for p in payload["power"]} >= {"Policy Activation", "Procedural Compliance"}
