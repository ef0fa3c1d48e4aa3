"""Scenario files load into the model or fail with file + field path, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import MINI, SHARED, mini_scenario
from pibench_inspect.scenario.errors import ScenarioError
from pibench_inspect.scenario.loader import discover, load_scenario, parse_scenario


def write(tmp_path, data, name="x.json"):
    p = tmp_path / name
    p.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return p


def problems_of(path) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(path) in str(info.value)
    return info.value.problems


def test_valid_fixture_loads():
    s = load_scenario(MINI / "scenarios/mini/mini_001_refund_ok.json")
    assert s.scenario_id == "MINI_001_REFUND_OK"
    assert s.expected == "ALLOW"
    assert s.reference_solution and s.reference_solution.tool_calls[0].name == "lookup_order"


def test_missing_field_names_the_path(tmp_path):
    data = mini_scenario()
    del data["evaluation_criteria"]["policy_checks"][3]["tool_name"]
    probs = problems_of(write(tmp_path, data))
    assert "evaluation_criteria.policy_checks[3].tool_name: field required" in probs


def test_unknown_key_is_an_error(tmp_path):
    data = mini_scenario()
    data["meta"]["colour"] = "blue"
    assert "meta.colour: unknown field" in problems_of(write(tmp_path, data))


def test_unknown_check_type_is_an_error(tmp_path):
    data = mini_scenario()
    data["evaluation_criteria"]["policy_checks"][0]["type"] = "tool_was_maybe_called"
    probs = problems_of(write(tmp_path, data))
    assert any(p.startswith("evaluation_criteria.policy_checks[0]") and "unknown check type" in p for p in probs)


def test_every_problem_reported_at_once(tmp_path):
    data = mini_scenario()
    data["label"] = "MAYBE"
    data["user_simulation"].pop("initial_user_message")
    probs = problems_of(write(tmp_path, data))
    assert any(p.startswith("label:") for p in probs)
    assert "user_simulation.initial_user_message: field required" in probs


def test_invalid_json_names_line(tmp_path):
    probs = problems_of(write(tmp_path, '{"schema_version": "pibench_scenario_v1",\n  oops}'))
    assert probs[0].startswith("(file): invalid JSON at line 2")


def test_wrong_schema_version(tmp_path):
    data = mini_scenario()
    data["schema_version"] = "v0"
    assert probs_contains(problems_of(write(tmp_path, data)), "schema_version: expected")


def probs_contains(probs, text):
    return any(text in p for p in probs)


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d["evaluation_criteria"]["policy_checks"].append({"type": "decision_equals", "equals": "DENY"}),
         "needs exactly one decision_equals"),
        (lambda d: next(c for c in d["evaluation_criteria"]["policy_checks"] if c["type"] == "decision_equals")
         .update(equals="DENY"), "differs from label"),
        (lambda d: d["evaluation_criteria"]["policy_checks"].append({"type": "tool_not_called", "tool_name": "lookup_order"}),
         "both required and forbidden"),
        (lambda d: d["evaluation_criteria"]["policy_checks"].append({"type": "tool_before_tool", "first_tool": "escalate", "second_tool": "lookup_order"}),
         "which no tool_called"),
        (lambda d: d["evaluation_criteria"].update(reward_basis=[]), "reward_basis: must not be empty"),
        (lambda d: d["evaluation_criteria"]["state_field_checks"][0].update(field_path="orders..status"), "empty segment"),
        (lambda d: d["evaluation_criteria"]["policy_checks"][1].update(arguments={}), "arguments: must not be empty"),
    ],
)
def test_semantic_rules(tmp_path, mutate, expected):
    data = mini_scenario()
    mutate(data)
    assert probs_contains(problems_of(write(tmp_path, data)), expected)


def test_legacy_expected_outcomes_are_converted():
    data = mini_scenario()
    crit = data.pop("evaluation_criteria")
    data["expected_outcomes"] = (
        [dict(c, args_match=c.pop("arguments")) if c["type"] == "tool_called_with" else c for c in crit["policy_checks"]]
        + crit["state_field_checks"]
    )
    s = parse_scenario(data)
    assert s.criteria.reward_basis == ["POLICY", "STATE_FIELD"]
    assert len(s.criteria.state_field_checks) == 1


def test_discover_skips_archive_and_schema(tmp_path):
    (tmp_path / "archive").mkdir()
    (tmp_path / "archive" / "old.json").write_text("{}")
    (tmp_path / "pibench_scenario_v1.schema.json").write_text("{}")
    (tmp_path / "b.json").write_text("{}")
    (tmp_path / "a.json").write_text("{}")
    assert [p.name for p in discover(tmp_path)] == ["a.json", "b.json"]


def test_committed_json_schema_is_current():
    from pibench_inspect.cli.main import scenario_json_schema

    from conftest import ROOT

    committed = json.loads((ROOT / "scenarios" / "pibench_scenario_v1.schema.json").read_text())
    assert committed == json.loads(json.dumps(scenario_json_schema())), "run: pibench schema --out scenarios/pibench_scenario_v1.schema.json"


@pytest.mark.skipif(not (SHARED / "upstream-sample").is_dir(), reason="../shared/upstream-sample is absent (original pi-bench files are read in place, never copied)")
def test_original_scenario_files_load_unchanged():
    files = discover(SHARED / "upstream-sample" / "scenarios")
    assert len(files) == 10
    for f in files:
        load_scenario(f)


@pytest.mark.slow
def test_validate_cli_reports_all_and_exits_1(mini_source):
    bad = mini_source / "scenarios" / "mini" / "mini_002_final_sale.json"
    data = json.loads(bad.read_text())
    data["evaluation_criteria"]["policy_checks"][0]["tool_name"] = "no_such_tool"
    data["policy_context"]["policy_clauses"].append({"clause_id": "MINI-9.9"})
    bad.write_text(json.dumps(data))
    (mini_source / "scenarios" / "mini" / "broken.json").write_text("{not json")
    r = subprocess.run([sys.executable, "-m", "pibench_inspect.cli", "validate", "--source", str(mini_source)],
                       capture_output=True, text=True)
    assert r.returncode == 1
    out = r.stdout
    assert "broken.json: (file): invalid JSON" in out
    assert "evaluation_criteria.policy_checks[0].tool_name: tool 'no_such_tool' is not in the mini catalog" in out
    assert "clause id 'MINI-9.9' does not occur" in out
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.slow
def test_validate_cli_ok_on_fixture():
    r = subprocess.run([sys.executable, "-m", "pibench_inspect.cli", "validate", "--source", str(MINI)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 scenario(s)" in r.stdout
