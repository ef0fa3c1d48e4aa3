"""Issue 42, item 5: keyless means not scored.

Without a grader no NL check is judged, so the semantic score is reported as not scored wherever
a person reads it: the console (no value in the metrics table, a line saying why at the end),
the viewer (the score's metadata and explanation), the report. Parity scoring's payload keeps
the original's value (1.0 when nothing was judged: docs/parity.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from conftest import MINI

BIN = Path(sys.executable).parent


@pytest.mark.slow
def test_a_keyless_parity_run_reports_the_semantic_score_as_not_scored(tmp_path):
    logs, out = tmp_path / "logs", tmp_path / "report"
    r = subprocess.run([str(BIN / "inspect"), "eval", "pibench_inspect/pibench", "-T", f"source={MINI}",
                        "-T", "agent=oracle", "-T", "user=scripted", "-T", "scoring=parity", "--model", "none",
                        "--display", "plain", "--log-dir", str(logs)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    # the console: no value in the metrics table, and one line saying it was not scored, and why
    assert "semantic" not in r.stdout.split("total time")[-1]
    assert "pi-bench: semantic_score not scored: no grader model (bind --model-role grader=" in r.stderr
    # a pass with NL checks left unjudged does not read as fully passed (issue 40, item 6)
    assert "passed sample(s) left" in r.stderr and "their pass covers the evaluated checks only" in r.stderr
    for sample in read_eval_log(str(next(logs.glob("*.eval")))).samples:
        assert "not evaluated (never counted as passed): " in sample.scores["pibench_scorer"].explanation

    (path,) = logs.glob("*.eval")
    log = read_eval_log(str(path))
    assert "semantic_score" not in log.results.scores[0].metrics
    for sample in log.samples:
        score = sample.scores["pibench_scorer"]
        assert "semantic_score" not in (score.metadata or {})  # the viewer's score metadata
        assert "semantic score (NL tier): not scored" in score.explanation
        assert "semantic score (NL tier): 1.00" not in score.explanation

    r = subprocess.run([str(BIN / "pibench"), "report", str(logs), "--out", str(out)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| semantic (NL judge) | not scored |" in (out / "report.md").read_text()
    # the leaderboard payload is the original's: its 1.0 for "no NL verdict" (docs/parity.md)
    details = json.loads((out / "results.json").read_text())["results"][0]["scenario_details"]
    assert [d["semantic_score"] for d in details] == [1.0, 1.0, 1.0]


def test_an_older_parity_record_reads_as_not_scored():
    """Logs written before `parity_semantic_score` hold the original's 1.0 as `semantic_score`."""
    from pibench_inspect.scoring.record import parity_semantic_score, semantic_score

    old = {"scoring": "parity", "semantic_score": 1.0,
           "checks": {"c1": {"type": "tool_called", "passed": True}, "nl": {"type": "NL_JUDGE"}}}
    assert semantic_score(old) is None and parity_semantic_score(old) == 1.0
    judged = {**old, "checks": {"nl": {"type": "NL_JUDGE", "passed": True}}}
    assert semantic_score(judged) == 1.0
    strict = {"scoring": "strict", "semantic_score": 0.5}
    assert semantic_score(strict) == 0.5 == parity_semantic_score(strict)
    new = {"scoring": "parity", "semantic_score": None, "parity_semantic_score": 1.0}
    assert semantic_score(new) is None and parity_semantic_score(new) == 1.0
