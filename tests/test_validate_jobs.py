"""`pibench validate --jobs N`: the gates played in forked worker processes (authoring/gate_pool.py)
report the same problems, in the same order, with the same mutation tally, as played in one."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import MINI
from pibench_inspect.authoring.gates import MutationTally
from pibench_inspect.scenario.catalog import load_set
from test_mutation_gate import LOOSE, gate_source, tight

PIBENCH = str(Path(sys.executable).with_name("pibench"))


def two_scenarios(root: Path) -> Path:
    """The mutation gate's domain with a loose scenario (mutants survive) and a tight one."""
    gate_source(root, LOOSE)
    good = tight()
    good["meta"]["scenario_id"] = "GATE_002_REFUND_TIGHT"
    (root / "scenarios" / "gate" / "gate_002.json").write_text(json.dumps(good))
    return root


def validate(source: Path, jobs: str) -> subprocess.CompletedProcess:
    # through the command, a process of its own: a fork from a test worker's threads could hang
    return subprocess.run([PIBENCH, "validate", "--source", str(source), "--jobs", jobs],
                          capture_output=True, text=True, timeout=300)


def test_workers_find_what_one_process_finds(tmp_path):
    source = two_scenarios(tmp_path)
    assert len(load_set(source).entries) == 2
    alone, pooled = validate(source, "1"), validate(source, "2")
    assert alone.returncode == pooled.returncode == 1
    assert "mutant verify:1:verify_caller-postcode survives" in alone.stdout  # something to agree on
    assert pooled.stdout == alone.stdout  # the problems, in order, and the mutation tally
    for sid in ("GATE_001_REFUND", "GATE_002_REFUND_TIGHT"):  # progress names each scenario played
        assert sid in pooled.stderr


def test_a_tally_adds_a_workers_counts():
    tally = MutationTally()  # killed, scored, equivalent, disclosures killed, disclosures scored
    tally.merge({"gate": [3, 4, 1, 1, 1]})
    tally.merge({"gate": [1, 1, 0, 0, 1], "other": [0, 2, 0, 0, 0]})
    assert tally.by_domain == {"gate": [4, 5, 1, 1, 2], "other": [0, 2, 0, 0, 0]}
    assert tally.score("gate") == 0.8
    assert "gate: disclosure mutants killed: 1 of 2" in tally.lines()


def test_the_command_prints_the_same_with_one_or_two_jobs(tmp_path):
    out = [validate(MINI, j) for j in ("1", "2")]
    assert [r.returncode for r in out] == [0, 0], out[0].stderr + out[1].stderr
    assert out[0].stdout == out[1].stdout and "mutation score" in out[0].stdout
    assert re.search(r"benign gate: mini: benign variants passed: (\d+) of \1\n", out[0].stdout)
    bad = subprocess.run([PIBENCH, "validate", "--jobs", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--jobs: 0 is below 1" in bad.stderr


def test_a_cases_scenarios_share_one_mutation_gate_and_one_worker(tmp_path, monkeypatch):
    """Scenarios that differ only in the user's words (a generated case's envelope siblings) have
    the same mutants with the same fate: validate plays them once, in one worker; a scenario
    whose checks differ is its own case."""
    from pibench_inspect.authoring import mutation
    from pibench_inspect.authoring.gate_pool import by_case

    gate_source(tmp_path, tight())
    base = json.loads((tmp_path / "scenarios" / "gate" / "gate_001.json").read_text())
    sibling = json.loads(json.dumps(base))
    sibling["meta"]["scenario_id"] = "GATE_002_SIBLING"
    sibling["user_simulation"]["initial_user_message"] = "Please hurry: " + base["user_simulation"]["initial_user_message"]
    other = json.loads(json.dumps(base))
    other["meta"]["scenario_id"] = "GATE_003_OTHER"
    other["evaluation_criteria"]["policy_checks"].pop()
    for name, doc in (("gate_002.json", sibling), ("gate_003.json", other)):
        (tmp_path / "scenarios" / "gate" / name).write_text(json.dumps(doc))
    sset = load_set(tmp_path)
    entries = [sset.entries[s] for s in sorted(sset.entries)]
    assert by_case(entries) == [[entries[0].scenario.scenario_id, "GATE_002_SIBLING"], ["GATE_003_OTHER"]]
    played = []
    real = mutation._run_gate
    monkeypatch.setattr(mutation, "_run_gate", lambda e: played.append(e.scenario.scenario_id) or real(e))
    results = [mutation.run_gate(e) for e in entries]
    assert played == [entries[0].scenario.scenario_id, "GATE_003_OTHER"]
    assert results[0] is results[1] and results[0].survived == [] and results[0].killed
