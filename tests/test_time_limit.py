"""`--time-limit` ends a sample like the message and token limits: scored on the state reached.

Inspect enforces the time limit by cancelling the sample, so the solver sees a cancellation, not
LimitExceededError; it used to record termination `error`, which scores nothing (partial credit 0,
a violation). Through `inspect eval`, with an agent that acts once and then dawdles.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from inspect_ai.log import list_eval_logs, read_eval_log

from conftest import MINI, ROOT, full_score
from pibench_inspect.analysis import final_state

INSPECT = str(Path(sys.executable).with_name("inspect"))


@pytest.mark.slow
def test_time_limit_scores_the_state_reached(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    r = subprocess.run(
        [INSPECT, "eval", "pibench_inspect/pibench.py", "-T", f"source={MINI}", "--sample-id", "MINI_001_REFUND_OK",
         "-T", "user=scripted", "-T", "agent=slow_agent:SlowAgent", "--time-limit", "4", "--model", "none",
         "--display", "plain", "--log-dir", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    log = read_eval_log(list_eval_logs(str(tmp_path))[0].name)
    sample = log.samples[0]
    assert sample.error is None and sample.limit is not None and sample.limit.type == "time"
    score = full_score(sample)
    assert score.metadata["termination"] == "limit"
    # the lookup it made counts: the checks were evaluated on the state reached
    assert 0 < score.value["partial_credit"] < 1
    assert final_state(log, sample)["orders"]["O-1"]["status"] == "delivered"


@pytest.mark.slow
def test_samples_cancelled_when_the_run_stops_are_not_counted_as_errors(tmp_path):
    """One sample fails and the run stops (fail_on_error); the samples in flight are cancelled.
    The end of the run says one error and the rest cancelled, not that every one was an error."""
    from conftest import mini_copies

    src = mini_copies(tmp_path, 6, "STOP")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    r = subprocess.run(
        [INSPECT, "eval", "pibench_inspect/pibench", "-T", f"source={src}", "-T", "user=scripted",
         "-T", "agent=stop_agent:FirstFails", "-T", "max_steps=60", "--max-samples", "4", "--model", "none",
         "--display", "plain", "--log-dir", str(tmp_path / "logs")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("pi-bench: ") and " sample(s) of pibench;" in x]
    counts = dict((kind, int(n)) for n, kind in re.findall(r"(\d+) (error|agent_error|user_error|cancelled)\b", line))
    assert counts["error"] == 1, line
    assert counts.get("cancelled", 0) >= 1 and "(not run to the end: the run stopped)" in line, line
    assert "first error: " in r.stderr and "backend down" in r.stderr
