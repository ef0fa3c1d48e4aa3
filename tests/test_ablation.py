"""Ablations through the real command line: `-T ablation=no_pressure` and
`-T ablation=structured_policy` on the original pi-bench sample (read in place) and on a
family of the shipped set."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from conftest import ROOT, SAMPLE, NO_SAMPLE

INSPECT = str(Path(sys.executable).with_name("inspect"))
PIBENCH = str(Path(sys.executable).with_name("pibench"))


def run_eval(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, object]:
    logs = tmp_path / "logs"
    tmp_path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([INSPECT, "eval", "pibench_inspect/pibench", "-T", "agent=oracle", "-T", "user=scripted",
                        "--model", "none", "--display", "none", "--log-dir", str(logs), *args],
                       capture_output=True, text=True, cwd=tmp_path)
    found = list_eval_logs(str(logs))
    return r, (read_eval_log(found[0].name) if found else None)


def hints() -> dict[str, dict]:
    out = {}
    for p in (SAMPLE / "scenarios").rglob("*.json"):
        raw = json.loads(p.read_text())
        out[raw["meta"]["scenario_id"]] = raw.get("ablation_hints") or {}
    return out


@pytest.mark.skipif(not SAMPLE.is_dir(), reason=NO_SAMPLE)
@pytest.mark.slow
def test_no_pressure_on_the_original_sample_opens_plainly_and_presses_nothing(tmp_path):
    r, log = run_eval(tmp_path, "-T", f"source={SAMPLE}", "-T", "ablation=no_pressure")
    assert r.returncode == 0, r.stderr
    assert log.status == "success" and log.eval.task_args["ablation"] == "no_pressure"
    want = hints()
    skipped = {sid for sid, h in want.items() if not h.get("no_pressure_user_message")}
    assert {str(s.id) for s in log.samples} == set(want) - skipped
    for s in log.samples:
        users = [m.text for m in s.messages if m.role == "user"]
        assert users[0] == want[str(s.id)]["no_pressure_user_message"].strip()
        assert len(users) == 1  # no pressure script: the scripted user has nothing more to say
        assert s.metadata["ablation"] == "no_pressure"
    # a scenario without the hint is left out with the reason, never run unablated
    for sid in skipped:
        assert f"leaving out {sid}" in r.stderr.replace("\n", " ") or sid not in {str(s.id) for s in log.samples}


@pytest.mark.skipif(not SAMPLE.is_dir(), reason=NO_SAMPLE)
@pytest.mark.slow
def test_structured_policy_on_the_original_sample_gives_the_hint_with_the_policy(tmp_path):
    r, log = run_eval(tmp_path, "-T", f"source={SAMPLE}", "-T", "ablation=structured_policy")
    assert r.returncode == 0, r.stderr
    want = hints()
    assert log.samples
    for s in log.samples:
        system = s.messages[0].text
        assert want[str(s.id)]["structured_policy"].strip() in system
        assert system.index("</policy>") < system.index(want[str(s.id)]["structured_policy"].strip())
    # and the same run without the ablation does not carry it
    r2, plain = run_eval(tmp_path / "plain", "-T", f"source={SAMPLE}")
    s = plain.samples[0]
    assert want[str(s.id)]["structured_policy"].strip() not in s.messages[0].text


@pytest.mark.slow
def test_no_pressure_on_a_family_variant_takes_its_baseline_user(tmp_path):
    r, log = run_eval(tmp_path, "--sample-id", "RET_PRICE_ADJUSTMENT.within_period.urgency", "-T", "ablation=no_pressure")
    assert r.returncode == 0, r.stderr
    baseline = json.loads((ROOT / "scenarios/retail/ret_price_adjustment/within_period__baseline.json").read_text())
    sample = log.samples[0]
    users = [m.text for m in sample.messages if m.role == "user"]
    assert users[0] == baseline["user_simulation"]["initial_user_message"]
    assert sample.scores["pibench_scorer"].value["all_passed"] == 1.0  # the checks are the variant's own


@pytest.mark.slow
def test_an_unknown_ablation_is_refused_naming_the_values(tmp_path):
    r, log = run_eval(tmp_path, "--sample-id", "RET_001*", "-T", "ablation=no_policy")
    assert r.returncode != 0
    assert "-T ablation" in r.stderr and "'no_pressure' or 'structured_policy'" in r.stderr


@pytest.mark.slow
def test_report_sets_an_ablation_run_beside_the_normal_one(tmp_path):
    """The plain run holds one scenario more than its ablation (issue 42: 4 against 3): the two
    are still compared side by side, on the scenarios both ran, saying so."""
    ids = "RET_PRICE_ADJUSTMENT.within_period.*,RET_005*"
    run_eval(tmp_path / "a", "--sample-id", ids)
    run_eval(tmp_path / "b", "--sample-id", "RET_PRICE_ADJUSTMENT.within_period.*", "-T", "ablation=no_pressure")
    out = tmp_path / "report"
    r = subprocess.run([PIBENCH, "report", str(tmp_path / "a" / "logs"), str(tmp_path / "b" / "logs"),
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    payload = json.loads((out / "results_oracle_no_pressure.json").read_text())
    assert payload["pibench_inspect"]["ablation"] == "no_pressure"
    pair = payload["pibench_inspect"]["no_pressure_ablation"]
    assert pair["scenarios"] == 3 and pair["pressure_cost"] == 0.0 and pair["decision_flip_rate"] == 0.0
    assert pair["only_in_one"] == ["RET_005_HOLIDAY_EXTENSION_STILL_OPEN"]
    md = (out / "report.md").read_text()
    assert "With and without pressure (`-T ablation=no_pressure`)" in md
    compared = md.split("## Agents compared")[1].split("## Agent:")[0]
    assert ("On the 3 scenarios all of them ran: oracle, oracle [no_pressure]. Compared on their overlap: oracle "
            "ran 4; here it is restated on these 3 scenarios alone.") in compared
