"""pibench_inspect.analysis: DataFrames for notebooks, equal to the report's numbers."""

from __future__ import annotations

import pytest

from pibench_inspect import analysis
from test_report import shared_logs


@pytest.fixture(scope="module")
def logs(pytestconfig, tmp_path_factory):
    return shared_logs(pytestconfig, tmp_path_factory)


def test_samples_frame(logs):
    df = analysis.samples([logs["oracle"], logs["pushover"]])
    assert len(df) == 12 and set(df["agent"]) == {"oracle", "pushover"}
    for col in ("scenario_id", "epoch", "label", "decision", "all_passed", "partial_credit", "V_r", "UR_r",
                "column", "domain", "agent_tokens", "user_tokens", "judge_tokens"):
        assert col in df.columns, col
    oracle = df[df["agent"] == "oracle"]
    assert oracle["all_passed"].all() and (oracle["decision"] == oracle["label"]).all()
    assert sorted(oracle["epoch"].unique()) == [1, 2]
    push = df[df["agent"] == "pushover"]
    assert (push["decision"] == "ALLOW").all() and push["V_r"].all()


def test_checks_frame_has_evidence_pointers(logs):
    df = analysis.checks(logs["pushover"])
    assert {"outcome_id", "type", "tier", "status", "passed", "evidence", "message_index", "tool_call_id"} <= set(df.columns)
    failed = df[df["status"] == "failed"]
    assert len(failed) > 0 and set(df["status"]) >= {"passed", "failed", "not_evaluated"}
    e5 = failed[(failed["scenario_id"] == "MINI_001_REFUND_OK") & (failed["outcome_id"] == "E5")].iloc[0]
    assert e5["tool_call_id"] and e5["message_index"] >= 0


def test_summary_frame_with_intervals(logs):
    df = analysis.summary(logs["pushover"]).set_index("statistic")
    assert len(df) == 2 + 3 + 9
    assert df.loc["compliance_rate", "value"] == 0.0
    assert df.loc["overall_score", "low"] <= df.loc["overall_score", "value"] <= df.loc["overall_score", "high"]
    assert df.loc["Policy Interpretation", "n_scenarios"] == 0  # no fixture scenario in that column
    pk = analysis.pass_k(logs["oracle"])
    assert list(pk["k"]) == [1, 2] and (pk["pass_hat_k"] == 1.0).all()
    assert set(analysis.usage(logs["oracle"])["role"]) == {"agent", "user", "judge"}


def test_frames_have_stable_nullable_dtypes_and_one_run_number(logs):
    df = analysis.samples([logs["oracle"], logs["pushover"]])
    assert "trial" not in df.columns and str(df["epoch"].dtype) == "Int64"
    assert str(df["all_passed"].dtype) == "boolean" and str(df["V_r"].dtype) == "boolean"
    assert str(df["partial_credit"].dtype) == "Float64" and str(df["semantic_score"].dtype) == "Float64"
    assert str(df["scenario_id"].dtype) == "string" and str(df["agent_tokens"].dtype) == "Int64"
    assert df["semantic_score"].isna().all()  # keyless: not scored, still Float64, not object
    checks = analysis.checks(logs["pushover"])
    assert str(checks["passed"].dtype) == "boolean" and str(checks["message_index"].dtype) == "Int64"
    # one run number, as in the samples frame: `epoch` from 1, no `trial` from 0 beside it
    assert "trial" not in checks.columns and sorted(checks["epoch"].unique()) == [1, 2]
    summary = analysis.summary(logs["oracle"]).set_index("statistic")
    assert str(summary["n_families"].dtype) == "Int64" and summary.loc["overall_score", "n_families"] == 3
    assert str(analysis.usage(logs["oracle"])["cost"].dtype) == "Float64"


# Inspect 0.3.258's samples_df calls DataFrame.drop_duplicates(inplace=True), which pandas 3.1
# deprecates: Inspect's own warning, raised in its code (not the project's), whatever columns are asked for
@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.drop_duplicates is deprecated")
def test_inspect_samples_df_expands_the_score(logs):
    from inspect_ai.analysis import SampleSummary, samples_df

    df = samples_df(str(logs["pushover"]), columns=SampleSummary + analysis.PIBENCH_COLUMNS, quiet=True)
    assert len(df) == 6
    assert df["pibench_violation"].all() and (df["pibench_decision"] == "ALLOW").all()
    assert set(df["pibench_domain"]) == {"mini"} and df["pibench_partial_credit"].notna().all()
    # keyless: the semantic score is not scored, a missing number, not a column of strings
    assert str(df["pibench_semantic_score"].dtype).startswith("double") and df["pibench_semantic_score"].isna().all()
