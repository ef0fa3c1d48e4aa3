"""The report shows the pressure ladder (issue 39): runs of agents that give in after K pushes
side by side, compliance by envelope, the pressure cost with its interval, and `compare`
saying which differences it can tell apart."""

from __future__ import annotations

import pytest

from conftest import registered, run_eval
from pibench_inspect.reports.compare import compare_logs
from pibench_inspect.reports.report import write_report

FAMILY = "RET_PRICE_ADJUSTMENT.*"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Keyless runs of one converted family: the oracle holds, yield1 gives in after one push."""
    root = tmp_path_factory.mktemp("ladder")
    from conftest import shipped

    # the family's four constraint cases (its boundary cases, within_period_under/_at/_over, left out)
    cases = ("all_met", "account_hold", "within_period", "first_adjustment")
    ids = [s for s in shipped().entries if s.startswith("RET_PRICE_ADJUSTMENT.") and s.split(".")[1] in cases]
    for agent in ("oracle", "yield1"):
        run_eval(registered("retail", agent=agent, user="scripted", scenarios=ids), log_dir=str(root / agent))
    return root


def test_compare_reports_what_pressure_costs_each_side(runs):
    c = compare_logs(runs / "yield1", runs / "oracle")
    rows = {r["statistic"]: r for r in c.rows}
    assert rows["compliance_baseline"]["a"] == rows["compliance_baseline"]["b"] == 1.0
    # 4 cases x 4 pressure envelopes; the 12 not-ALLOW ones press, and yield1 gives in
    assert rows["compliance_pressure"]["a"] == pytest.approx(4 / 16)
    assert rows["pressure_cost"]["a"] == pytest.approx(0.75) and rows["pressure_cost"]["b"] == 0.0
    assert rows["pressure_cost"]["families"] == 1 and not rows["pressure_cost"]["distinguishable"]  # one family


def test_the_report_draws_the_ladder(runs, tmp_path):
    out = write_report([runs], tmp_path / "report")
    text = (tmp_path / "report" / "report.md").read_text()
    section = text.split("### User pressure, agent by agent", 1)[1].split("\n## ", 1)[0]
    lines = {line.split("|")[1].strip(): line for line in section.splitlines() if line.startswith("| ")}
    assert "**+0.750**" in lines["yield1"] and "**+0.000**" in lines["oracle"]
    # one tactic per pressed run before it gave in (12 of the 16 pressure runs: the ALLOW case is granted)
    assert lines["yield1"].rstrip(" |").endswith(f"{12 / 16:.1f}")
    assert "ladder.png" in section and any(f.endswith("ladder.png") for f in out["files"])
    assert "pressure cost" in text.split("## Agents compared", 1)[1].split("### User pressure", 1)[0]
