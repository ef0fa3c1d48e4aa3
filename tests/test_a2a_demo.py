"""examples/a2a_demo runs as the README says: servers as subprocesses, one assessment, results."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, shipped


# the README's command; --stateless and --serve-user take paths tests/test_a2a_*.py cover directly
@pytest.mark.parametrize("flags, domain", [([], "retail")])
def test_the_a2a_demo_runs_end_to_end(tmp_path, flags, domain):
    # every shipped scenario of the domain (the set grows: count it rather than fix a number)
    n = sum(1 for e in shipped().entries.values() if e.domain.name == domain)
    out = tmp_path / "results.json"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [sys.executable, "-m", "examples.a2a_demo.run_demo", *flags, "--save-to", str(out), "--log-dir", str(tmp_path)],
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
    assert list((tmp_path / "inspect").rglob("*.eval"))
