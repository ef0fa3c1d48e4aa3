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
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[working]" in proc.stdout  # progress streamed while the assessment ran
    assert "compliance_rate" in proc.stdout
    payload = json.loads(out.read_text())
    (result,) = payload["results"]
    assert payload["participants"] == {"agent": "cautious-demo"}
    assert result["max_score"] == n and len(result["scenario_details"]) == n
    assert {d["domain_name"] for d in result["scenario_details"]} == {domain}
    # the demo agent escalates every request, so it records ESCALATE everywhere
    assert {d["canonical_decision"] for d in result["scenario_details"]} == {"ESCALATE"}
    assert not any(d.get("error") for d in result["scenario_details"])
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
    # the runs on the same scenarios (the whole retail domain) side by side
    assert "On the same " + str(retail) + " scenarios: nothing, a2a." in md
