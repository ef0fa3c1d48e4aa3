"""`pibench report`: the leaderboard payload with provenance, report.md, charts, usage per
role, confidence intervals and pass^k, and clear errors for bad input."""

from __future__ import annotations

import re

import json
from pathlib import Path

import pytest
from inspect_ai.log import EvalError, read_eval_log, write_eval_log
from inspect_ai.model import ModelUsage, get_model

from conftest import MINI, run_eval, mock_outputs
from pibench_inspect.cli import main
from pibench_inspect.reports.rows import log_rows
from pibench_inspect.reports.logs import load_logs
from pibench_inspect.reports.stats import bootstrap, pass_hat_k
from pibench_inspect.scoring.payload import DETAIL_KEYS
from conftest import registered

PNG = b"\x89PNG\r\n\x1a\n"


def shared_logs(config, factory) -> dict[str, Path]:
    """One keyless log per agent (mini fixture, scripted user, 2 epochs) for the whole session;
    cached on the pytest config so every report/analysis test module reuses them."""
    cached = getattr(config, "_pibench_report_logs", None)
    if cached:
        return cached
    root = factory.mktemp("report-logs")
    out = {}
    for agent in ("oracle", "pushover"):
        log = run_eval(registered(source=str(MINI), agent=agent, user="scripted"), epochs=2,
                       log_dir=str(root / agent))
        out[agent] = Path(log.location)
    config._pibench_report_logs = out
    return out


@pytest.fixture(scope="session")
def logs(pytestconfig, tmp_path_factory):
    return shared_logs(pytestconfig, tmp_path_factory)


def report(tmp_path_factory, *paths) -> Path:
    out = tmp_path_factory.mktemp("report")
    assert main(["report", *map(str, paths), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def oracle(logs, tmp_path_factory) -> Path:
    return report(tmp_path_factory, logs["oracle"])


@pytest.fixture(scope="module")
def pushover(logs, tmp_path_factory) -> Path:
    return report(tmp_path_factory, logs["pushover"])


def test_results_json_has_every_field_the_leaderboard_reads(oracle, logs):
    payload = json.loads((oracle / "results.json").read_text())
    assert payload["participants"]["agent"] == "oracle"
    res = payload["results"][0]
    assert res["domain"] == "policy_compliance"
    assert res["score"] == 6.0 and res["max_score"] == 6.0 and res["pass_rate"] == 100.0
    # Inspect stamps start and end to the second: a sub-second run can measure 0.0
    assert isinstance(res["time_used"], float) and res["time_used"] >= 0
    assert res["task_rewards"] == {str(i): 1.0 for i in range(6)}
    assert set(res["task_rewards_by_scenario_id"]) == {
        f"{sid}#trial_{t}" for sid in ("MINI_001_REFUND_OK", "MINI_002_FINAL_SALE", "MINI_003_BIG_ORDER") for t in (0, 1)}
    m = res["metrics"]
    for key in ("total_scenarios", "completed", "errors", "compliance_rate", "overall_score", "event_flag_rates",
                "labels", "by_column", "by_group", "by_domain"):
        assert key in m, key
    assert (m["total_scenarios"], m["completed"], m["errors"]) == (6, 6, 0)
    assert set(m["labels"]) == {"ALLOW", "ALLOW-CONDITIONAL", "DENY", "ESCALATE"}
    assert m["by_domain"] == {"mini": {"total": 6, "passed": 6, "compliance_rate": 1.0}}
    assert m["repeatability"]["aggregate"]["policy_pass_all_rate"] == 1.0
    assert res["flag_summary"] == m["event_flag_rates"]
    assert res["label_breakdown"]["DENY"] == {"total": 2, "passed": 2}
    assert len(res["scenario_details"]) == 6
    for d in res["scenario_details"]:
        for key in DETAIL_KEYS:
            assert key in d, key
        assert d["status"] == "completed" and d["reward"] == 1.0 and d["canonical_decision"] in ("ALLOW", "DENY", "ESCALATE")
        assert isinstance(d["seed"], int) and d["tool_calls"] and "decision" in d["dimensions"]
        assert all(set(c) == {"outcome_id", "type", "passed", "detail", "dimension"} for c in d["outcome_checks"])
    # the payload's headline numbers equal Inspect's own task metrics on the same log
    inspect_metrics = {k: v.value for k, v in read_eval_log(str(logs["oracle"])).results.scores[0].metrics.items()}
    assert m["compliance_rate"] == inspect_metrics["pass"]
    assert m["overall_score"] == pytest.approx(inspect_metrics["overall"])


def test_results_json_carries_provenance_intervals_and_pass_k(oracle):
    ours = json.loads((oracle / "results.json").read_text())["pibench_inspect"]
    (prov,) = ours["provenance"]["logs"]
    assert len(prov["scenario_set"]["sha256"]) == 64 and prov["scenario_set"]["files"] > 3
    assert prov["inspect_ai_version"] == "0.3.258" and prov["epochs"] == 2
    assert prov["models"]["agent"]["agent"] == "oracle" and prov["models"]["user"]["models"] == ["scripted"]
    assert prov["models"]["user"]["generate_config"]["note"] == "no LLM user ran"  # scripted: nothing generated
    assert prov["models"]["judge"]["nl_tier"][0].startswith("not_scored")
    stats = ours["confidence_intervals"]["statistics"]
    for key in ("compliance_rate", "overall_score", "Policy Understanding", "Policy Activation"):
        assert stats[key]["low"] <= stats[key]["value"] <= stats[key]["high"]
    assert ours["pass_hat_k"] == {"1": {"pass_hat_k": 1.0, "scenarios": 3}, "2": {"pass_hat_k": 1.0, "scenarios": 3}}
    # a keyless run called no model: no per-sample usage rows (absent means 0), and a compact file
    assert ours["usage"]["total"]["agent"]["total_tokens"] == 0 and ours["usage"]["per_sample"] == []
    assert "\n" not in (oracle / "results.json").read_text().strip()


def test_report_md_and_charts(oracle):
    md = (oracle / "report.md").read_text()
    for text in ("## Agent: oracle", "| **overall score** | 1.000 |", "| **compliance rate** | 1.000 |",
                 "group: Policy Boundaries", "column: Escalation / Abstention", "flag: violation (V_r)",
                 "### By domain", "### By label", "### Repeatability", "No check failed.",
                 "No model calls were made (keyless run)", "![columns](columns.png)"):
        assert text in md, text
    for name in ("columns.png", "confusion.png"):
        data = (oracle / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000


def test_failed_checks_name_their_clause(pushover):
    md = (pushover / "report.md").read_text()
    section = md.split("### Checks most often missed")[1].split("###")[0]
    # the check names no clause; the scenario declares exactly one, so that is the one it tests
    assert "| MINI_002_FINAL_SALE / E2 | tool_not_called | 2/2 | MINI-1.2 |" in section
    payload = json.loads((pushover / "results.json").read_text())["results"][0]
    assert payload["metrics"]["compliance_rate"] == 0.0 and payload["score"] == 0.0
    assert payload["metrics"]["event_flag_rates"]["under_refusal_rate"] == 1.0


def test_several_agents_side_by_side_and_trials_pooled(logs, tmp_path_factory):
    out = report(tmp_path_factory, logs["oracle"], logs["pushover"], logs["oracle"])
    for name in ("results_oracle.json", "results_pushover.json", "compare.png", "report.md"):
        assert (out / name).exists(), name
    md = (out / "report.md").read_text()
    assert "## Agents compared" in md and "![agents compared](compare.png)" in md
    # the oracle log given twice: four trials per scenario, numbered on
    oracle = json.loads((out / "results_oracle.json").read_text())["results"][0]
    assert oracle["max_score"] == 12.0 and "MINI_001_REFUND_OK#trial_3" in oracle["task_rewards_by_scenario_id"]


def test_errored_and_empty_logs_still_report(logs, tmp_path):
    log = read_eval_log(str(logs["oracle"]))
    for s in log.samples:
        s.error = EvalError(message="RuntimeError: provider down", traceback="", traceback_ansi="")
        s.scores = None
    write_eval_log(log, str(tmp_path / "errored.eval"))
    out = tmp_path / "r1"
    assert main(["report", str(tmp_path / "errored.eval"), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "Every run ended on an error" in md and "provider down" in md
    res = json.loads((out / "results.json").read_text())["results"][0]
    assert res["metrics"]["errors"] == 6 and res["metrics"]["completed"] == 0
    assert all(d["status"] == "error" and d["reward"] == 0.0 for d in res["scenario_details"])

    log.samples = []  # its header still announces 6: a damaged log (issue 25), reported when asked
    write_eval_log(log, str(tmp_path / "empty.eval"))
    out = tmp_path / "r2"
    assert main(["report", str(tmp_path / "empty.eval"), "--out", str(out)]) == 2
    assert main(["report", str(tmp_path / "empty.eval"), "--out", str(out), "--allow-partial"]) == 0
    assert "holds no samples" in (out / "report.md").read_text()
    assert json.loads((out / "results.json").read_text())["results"][0]["max_score"] == 0.0


def test_bad_paths_are_clear_errors(tmp_path, capsys):
    missing = tmp_path / "nope.eval"
    assert main(["report", str(missing), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "Traceback" not in err
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    assert main(["report", str(junk), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{junk}: not an Inspect log" in err
    (tmp_path / "empty_dir").mkdir()
    assert main(["report", str(tmp_path / "empty_dir"), "--out", str(tmp_path / "o")]) == 2
    assert "holds no Inspect log" in capsys.readouterr().err
    assert main(["rescore", str(missing), "--out", str(tmp_path / "x.eval")]) == 2


def test_pass_hat_k_is_unbiased():
    rows = [{"scenario_id": "A", "status": "completed", "all_passed": p} for p in (True, True, True, False)]
    rows += [{"scenario_id": "B", "status": "completed", "all_passed": p} for p in (True, False, False, False)]
    got = pass_hat_k(rows)
    assert got[1]["pass_hat_k"] == pytest.approx((3 / 4 + 1 / 4) / 2)
    assert got[2]["pass_hat_k"] == pytest.approx((3 / 6 + 0) / 2)  # C(3,2)/C(4,2) and C(1,2)=0
    assert got[4]["pass_hat_k"] == 0.0


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    rows = [{"scenario_id": f"S{i}", "status": "completed", "all_passed": i % 3 == 0, "partial_credit": (i % 5) / 4,
             "leaderboard_primary": ("Policy Activation", "Procedural Compliance")[i % 2]} for i in range(20)]
    a, b = bootstrap(rows, 500, 7), bootstrap(rows, 500, 7)
    assert a == b
    for k in ("compliance_rate", "overall_score", "Policy Activation", "Policy Execution"):
        assert a[k]["low"] < a[k]["value"] < a[k]["high"], k
    assert a["Policy Activation"]["n_scenarios"] == 10 and "Policy Boundaries" not in a


def test_tokens_are_attributed_to_agent_user_and_judge(tmp_path):
    agent = get_model("mockllm/model", custom_outputs=mock_outputs(
        ("lookup_order", {"order_id": "O-2"}, "t1"),
        ("record_decision", {"decision": "DENY", "order_id": "O-2", "clause_ids": ["MINI-1.2"], "rationale": "final sale"}, "t2"),
        *["Sorry, final-sale orders cannot be refunded."] * 6, usage=ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)))
    user = get_model("mockllm/model", custom_outputs=mock_outputs(
        "Please, just refund it.", "###STOP###", "###STOP###", usage=ModelUsage(input_tokens=60, output_tokens=40, total_tokens=100)))
    judge = get_model("mockllm/model", custom_outputs=mock_outputs(
        '{"answer": "YES", "reason": "polite"}', usage=ModelUsage(input_tokens=900, output_tokens=100, total_tokens=1000)))
    log = run_eval(registered(source=str(MINI), scenarios="MINI_002_FINAL_SALE", user="llm", max_user_turns=3),
                   model=agent, model_roles={"user": user, "grader": judge}, log_dir=str(tmp_path))
    (row,) = log_rows(load_logs([log.location]))
    u = row["usage"]
    assert u["agent"]["calls"] >= 3 and u["agent"]["total_tokens"] == 15 * u["agent"]["calls"]
    assert u["user"]["calls"] >= 1 and u["user"]["total_tokens"] == 100 * u["user"]["calls"]
    assert u["judge"]["calls"] == 1 and u["judge"]["total_tokens"] == 1000
    out = tmp_path / "report"
    assert main(["report", str(log.location), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    # tokens, then the role's model time (seconds), then the cost
    assert re.search(r"\| judge \| mockllm/model \| 1 \| 900 \| 100 \| 1000 \| \d+\.\d \| tokens only \(no price known\) \|", md)


def test_a_folder_of_different_runs_reports_each_and_compares_those_on_the_same_scenarios(logs, tmp_path, capsys):
    """A log folder mixes runs: one agent on the whole set and on a subset are two runs, each
    reported; runs on the same scenarios are compared side by side, and the subset beside them on
    its own scenarios, saying so (issue 42, item 6)."""
    subset = run_eval(registered(source=str(MINI), agent="oracle", user="scripted"), sample_id="MINI_001_REFUND_OK",
                      log_dir=str(tmp_path / "subset"))
    out = tmp_path / "mixed"
    assert main(["report", str(logs["oracle"]), subset.location, str(logs["pushover"]), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "report for oracle (3 scenarios), oracle (1 scenario), pushover:" in captured.out
    assert "share 1 of their" not in captured.err  # compared, no longer only noted
    for name in ("results_oracle_3_scenarios.json", "results_oracle_1_scenario.json", "results_pushover.json",
                 "compare_1.png", "compare_2.png", "report.html"):
        assert (out / name).exists(), name
    md = (out / "report.md").read_text()
    runs = md.split("## Runs")[1].split("##")[0]
    assert "| oracle (3 scenarios) | pibench | oracle | none/none | 3 | 2 | 1 |" in runs
    assert "| oracle (1 scenario) | pibench | oracle | none/none | 1 | 1 | 1 |" in runs
    same, overlap = md.split("## Agents compared")[1:3]
    assert "On the same 3 scenarios: oracle (3 scenarios), pushover." in same
    assert "| overall score | 1.000" in same and "oracle (1 scenario)" not in same
    assert ("On the 1 scenario all of them ran: oracle (3 scenarios), oracle (1 scenario), pushover. Compared on "
            "their overlap: oracle (3 scenarios) ran 3 and pushover ran 3; here each is restated on this scenario "
            "alone.") in overlap
    # on MINI_001 alone: pushover's numbers are its runs of that scenario (0.269 over all three)
    assert "| overall score | 1.000 [1.00, 1.00] | 1.000 [1.00, 1.00] | 0.500 [0.50, 0.50] |" in overlap
    subset_payload = json.loads((out / "results_oracle_1_scenario.json").read_text())
    assert list(subset_payload["results"][0]["task_rewards_by_scenario_id"]) == ["MINI_001_REFUND_OK"]
    # one ALLOW scenario: no DENY or ESCALATE run. The report says not applicable; the
    # leaderboard payload keeps the original's 0.0 (docs/parity.md); Inspect's metrics, which the
    # console prints, leave the rates over some labels out: they would state the label (issue 40)
    metrics = subset.results.scores[0].metrics
    assert not any(k.endswith("_runs") or k in ("esc_accuracy", "over_refusal", "under_refusal")
                   for k in metrics) and "violation" in metrics
    assert subset_payload["results"][0]["metrics"]["event_flag_rates"]["escalation_accuracy_rate"] == 0.0
    section = md.split("## Agent: oracle (1 scenario)")[1]
    assert "| flag: escalation accuracy (EA_r, ESCALATE runs) | n/a (0 ESCALATE runs) |  | 0 |" in section
    assert "| flag: over-refusal (OR_r, ALLOW runs) | 0.000 |  | 1 |" in section
    # the same run given twice is trials of it, not a contradiction; --agentbeats-id names one run
    assert main(["report", subset.location, str(logs["oracle"]), "--out", str(tmp_path / "ab"),
                 "--agentbeats-id", "abc-123"]) == 2
    assert "--agentbeats-id names one participant, but these logs hold 2 runs" in capsys.readouterr().err
    # the participant id of the leaderboard payload
    assert main(["report", str(logs["pushover"]), "--out", str(tmp_path / "ab"), "--agentbeats-id", "abc-123"]) == 0
    assert json.loads((tmp_path / "ab" / "results.json").read_text())["participants"]["agent"] == "abc-123"


def test_the_same_shard_of_one_run_twice_is_the_one_contradiction_refused(tmp_path, capsys):
    """Two logs that are both part 1/2 of one sharded run cannot both be that part: refused,
    naming them; the parts of different runs are reported as different runs."""
    part = run_eval(registered(source=str(MINI), agent="oracle", user="scripted", shard="1/2"),
                    log_dir=str(tmp_path / "a"))
    again = read_eval_log(part.location)
    again.eval.eval_id = "another-run"
    write_eval_log(again, str(tmp_path / "b" / "again.eval"))
    capsys.readouterr()  # what the run itself said
    assert main(["report", part.location, str(tmp_path / "b" / "again.eval"), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "are both part 1/2 of the same run of oracle" in err and "again.eval" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    # the same log file twice is the same part once more: its trials pooled, as any log given twice
    assert main(["report", part.location, part.location, "--out", str(tmp_path / "r2")]) == 0


def test_provenance_says_what_the_judge_ran_with():
    from pibench_inspect.checks.judge import JUDGE_MAX_TOKENS
    from pibench_inspect.reports.provenance import judge_settings

    run = {"temperature": 0.9, "max_tokens": 3000, "attempt_timeout": 60, "seed": 7}
    # unbound: the model under test judges with the run's settings, but the judge's own bounds
    assert judge_settings(None, run) == {**run, "temperature": 0.0, "max_tokens": JUDGE_MAX_TOKENS}
    # a bound grader role: its own settings, the judge's defaults for what it leaves out, the run's --attempt-timeout
    role = {"model": "openai/gpt-4o-mini", "config": {"max_tokens": 40}}
    assert judge_settings(role, run) == {"max_tokens": 40, "temperature": 0.0, "attempt_timeout": 60}
    role = {"model": "openai/gpt-4o-mini", "config": {"temperature": 0.3, "attempt_timeout": 20}}
    assert judge_settings(role, run) == {"temperature": 0.3, "attempt_timeout": 20, "max_tokens": JUDGE_MAX_TOKENS}
