"""Running an original pi-bench checkout unchanged: keyless oracle, defect report, parity scoring.

Reads ../shared/upstream-sample in place (never copied); skipped with a reason when absent.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import NO_SAMPLE, SAMPLE, run_eval, sample_scores, full_score
from pibench_inspect.scenario.catalog import load_set
from conftest import registered
from pibench_inspect.authoring.validate import data_defects, validate_set

pytestmark = pytest.mark.skipif(not SAMPLE.is_dir(), reason=NO_SAMPLE)


def test_every_format_variant_loads():
    sset = load_set(SAMPLE)
    assert sset.errors == [] and len(sset.entries) == 10
    assert {e.domain.name for e in sset.entries.values()} == {"finra", "retail", "helpdesk"}
    assert validate_set(sset) == []  # original data is not held to our gates


@pytest.mark.parametrize("domain", ["finra", "retail", "helpdesk"])
def test_oracle_derives_a_plan_and_passes_keylessly(domain):
    log = run_eval(registered(domain, source=str(SAMPLE), agent="oracle", user="scripted"))
    scores = sample_scores(log)
    assert scores and all(sc.value["all_passed"] == 1.0 for sc in scores.values()), {k: v.explanation for k, v in scores.items()}
    for sample in log.samples:
        assert sample.messages[1].text == "Hi! How can I help you today?"  # parity opens with the greeting
        assert full_score(sample).metadata["scoring"] == "parity"


def test_baselines_fail_on_the_original_set():
    for agent in ("nothing", "pushover"):
        scores = sample_scores(run_eval(registered(source=str(SAMPLE), agent=agent, user="scripted")))
        assert not any(sc.value["all_passed"] for sc in scores.values())


@pytest.mark.slow
def test_defects_are_reported_without_failing_the_load():
    defects = data_defects(load_set(SAMPLE))
    text = "\n".join(defects)
    assert "omits STATE_FIELD" in text
    assert "is cited nowhere in policy.md" in text
    assert "they only catch hallucinated calls" in text
    assert "offers no lookup tool" in text
    assert text.count("label skew: ESCALATE is 5/10") == 1
    r = subprocess.run([sys.executable, "-m", "pibench_inspect.cli", "validate", "--source", str(SAMPLE)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "data defect(s)" in r.stdout and "10 scenario(s)" in r.stdout


@pytest.mark.slow
def test_replay_cli_prints_one_line_per_trajectory_and_a_summary(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text("{nope")
    args = [sys.executable, "-m", "pibench_inspect.cli", "replay", str(SAMPLE / "trajectories" / "retail"), str(bad),
            "--source", str(SAMPLE)]
    r = subprocess.run(args, capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    # a readable line per trajectory (18 and the broken file), then the summary
    assert len(lines) == 20 and r.returncode == 1
    assert "broken.json: not replayed: invalid JSON" in lines[-2]
    assert lines[-1] == ("replayed 18 of 19 trajectory file(s): 6 passed every check, 12 failed some; "
                         "1 could not be replayed")
    gold = next(x for x in lines if "__gold" in x)
    assert ": all checks passed, decision " in gold and len(gold) < 300
    assert sum(len(x) for x in lines) < 10_000  # not the whole evaluations (--json has them)
    # --json: the evaluation and final state of each, one JSON line each; the summary on stderr
    r = subprocess.run([*args, "--json"], capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 19 and r.returncode == 1
    assert '"error": "invalid JSON' in lines[-1] and "broken.json" in lines[-1]
    assert json.loads(lines[0])["evaluation"]["checks"] and "final_state" in json.loads(lines[0])
    assert r.stderr.strip().splitlines()[-1].startswith("replayed 18 of 19 trajectory file(s)")
