"""examples/a2a_demo runs as the README says: servers as subprocesses, one assessment, results;
and `pibench report logs/` after every keyless demo of the README, in a fresh folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, shipped


INSPECT = str(Path(sys.executable).with_name("inspect"))
PIBENCH = str(Path(sys.executable).with_name("pibench"))
# the README's keyless demos, as written there (Install and run, Keyless demo)
README_DEMOS = [
    ["pibench_inspect/pibench", "-T", "agent=oracle", "-T", "user=scripted", "--model", "none"],
    ["pibench_inspect/pibench_retail", "-T", "agent=nothing", "-T", "user=scripted", "--model", "none"],
    ["pibench_inspect/pibench_retail", "-T", "agent=oracle", "-T", "user=scripted", "--model", "none",
     "--sample-id", "RET_00*", "--epochs", "3"],
]


# the README's command; --stateless and --serve-user take paths tests/test_a2a_*.py cover directly
@pytest.mark.slow
@pytest.mark.parametrize("flags, domain", [([], "retail")])
def test_the_a2a_demo_runs_end_to_end_and_the_readme_demos_report(tmp_path, flags, domain):
    # every shipped scenario of the domain (the set grows: count it rather than fix a number)
    n = sum(1 for e in shipped().entries.values() if e.domain.name == domain)
    out = tmp_path / "results.json"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    # a fresh folder: the README's keyless demos write ./logs, the A2A demo logs/a2a_demo (its default
    # from the repository root), all at once
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    demos = [subprocess.Popen([INSPECT, "eval", *args, "--display", "none"], cwd=fresh, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for args in README_DEMOS]
    proc = subprocess.run(
        [sys.executable, "-m", "examples.a2a_demo.run_demo", *flags, "--save-to", str(out),
         "--log-dir", str(fresh / "logs" / "a2a_demo")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,  # a loaded machine: minutes
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    said = proc.stdout
    # progress streamed while the assessment ran, as short lines (a pipe: start and each quarter),
    # never the server's JSON
    progress = [line for line in said.splitlines() if line.startswith("[working]")]
    assert 2 <= len(progress) <= 6 and "{" not in said.split("[completed]")[0], said[:3000]
    payload = json.loads(out.read_text())
    (result,) = payload["results"]
    assert payload["participants"] == {"agent": "rules-demo"}
    assert result["max_score"] == n and len(result["scenario_details"]) == n
    assert {d["domain_name"] for d in result["scenario_details"]} == {domain}
    assert not any(d.get("error") for d in result["scenario_details"])
    # the demo agent passes part of the set: both outcomes show, each failure with its failed
    # checks in words, and a family's variants that ended alike on one line
    passed = sum(d["all_passed"] for d in result["scenario_details"])
    assert 0 < passed < n
    assert f"{passed} of {n} scenarios passed" in said and "compliance_rate" in said
    lines = said.splitlines()
    assert any(line.startswith("PASS ") for line in lines) and any(line.startswith("FAIL ") for line in lines)
    fail = next(i for i, line in enumerate(lines) if line.startswith("FAIL "))
    assert lines[fail + 1].startswith("      - ") and ("did not" in lines[fail + 1] or "called" in lines[fail + 1])
    assert "envelopes)" in said
    assert len(lines) < 2 * n  # a summary, not a flood
    # the Inspect log of the assessment is kept
    assert list((fresh / "logs" / "a2a_demo" / "inspect").rglob("*.eval"))
    for p in demos:
        said, _ = p.communicate(timeout=600)
        assert p.returncode == 0, said[-3000:]

    # pibench report over the folder the demos left: every run reported, none refused
    r = subprocess.run([PIBENCH, "report", "logs", "--out", "report"], cwd=fresh, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    md = (fresh / "report" / "report.md").read_text()
    runs = md.split("## Runs")[1].split("\n## ")[0]
    total = len(shipped().entries)
    retail = sum(1 for e in shipped().entries.values() if e.domain.name == "retail")
    for row in (f"| oracle (pibench, {total} scenarios) | pibench | oracle | none/none | {total} | 1 | 1 |",
                f"| oracle (pibench_retail, 9 scenarios) | pibench_retail | oracle | none/none | 9 | 3 | 1 |",
                f"| nothing | pibench_retail | nothing | none/none | {retail} | 1 | 1 |",
                f"| a2a | pibench_retail | a2a | none/none | {n} | 1 | 1 |"):
        assert row in runs, (row, runs)
    assert "report for " in r.stdout and "Traceback" not in r.stderr
    # the runs on the same scenarios (the whole retail domain) side by side; the whole-set oracle
    # run is restated on that overlap, saying so
    # (the runs are listed in the order their logs began; the demos run at once)
    oracle = f"oracle (pibench, {total} scenarios)"
    head = f"On the {retail} scenarios all of them ran: "
    line = next((x for x in md.splitlines() if x.startswith(head)), "")
    ran, _, rest = line[len(head):].partition(". Compared on their overlap: ")
    assert sorted(ran.replace(oracle, "ORACLE").split(", ")) == ["ORACLE", "a2a", "nothing"], line
    assert rest == f"{oracle} ran {total}; here it is restated on these {retail} scenarios alone.", line


def test_the_demo_summary_says_each_failed_check_in_words():
    """run_demo's summary of a payload: PASS / FAIL with the decision, each failed check in plain
    words from the scenario's own definition (the decision check aside: the line shows it), a
    check the set does not define by its payload detail, and a family's variants that ended
    alike on one line."""
    from examples.a2a_demo.summary import summary_lines
    from pibench_inspect.scenario import model as m

    sset = shipped()
    # a hand-written scenario with a tool_called_with check, and a family case with several envelopes
    entry = next(e for e in sset.entries.values() if not e.scenario.meta.family
                 and any(isinstance(c, m.ToolCalledWith) and c.expected_arguments() for c in e.scenario.criteria.policy_checks))
    call = next(c for c in entry.scenario.criteria.policy_checks if isinstance(c, m.ToolCalledWith) and c.expected_arguments())
    by_case: dict[str, list[str]] = {}
    for sid, e in sset.entries.items():
        if e.scenario.meta.family and e.scenario.meta.envelope:
            by_case.setdefault(sid.removesuffix("." + e.scenario.meta.envelope), []).append(sid)
    case, variants = next((k, v) for k, v in sorted(by_case.items()) if len(v) >= 3)
    sid = entry.scenario.scenario_id
    wrong = "ALLOW" if entry.scenario.expected != "ALLOW" else "DENY"
    details = [
        {"scenario_id": sid, "label": entry.scenario.expected, "all_passed": False, "canonical_decision": wrong,
         "outcome_checks": [
             {"outcome_id": "X_DECISION", "type": "decision_equals", "passed": False, "detail": "decision"},
             {"outcome_id": call.outcome_id, "type": call.type, "passed": False, "detail": "raw detail"},
             {"outcome_id": "NOT_IN_THE_SET", "type": "tool_called", "passed": False, "detail": "its own detail"},
             {"outcome_id": "OK", "type": "tool_called", "passed": True, "detail": ""}]},
        *({"scenario_id": v, "label": sset.entries[v].scenario.expected, "all_passed": True,
           "canonical_decision": sset.entries[v].scenario.expected, "outcome_checks": []} for v in variants),
    ]
    lines = summary_lines(details, sset)
    assert lines[0].startswith(f"FAIL  {sid}") and lines[0].endswith(f"{wrong}, expected {entry.scenario.expected}")
    arg, value = next(iter(call.expected_arguments().items()))
    assert lines[1].startswith(f"      - did not call {call.tool_name} with ") and f"{arg}" in lines[1] and str(value if not isinstance(value, list) else value[0]) in lines[1]
    assert lines[2] == "      - NOT_IN_THE_SET: its own detail"
    assert lines[3].startswith(f"PASS  {case} ({len(variants)} envelopes)")
    assert len(lines) == 4 and not any("decision_equals" in line or "raw detail" in line for line in lines)
