"""Validity gates: each kind of invalid scenario is caught with a message naming the field."""

from __future__ import annotations

import json

from pibench_inspect.scenario.catalog import load_set
from pibench_inspect.authoring.validate import validate_set


def edit(source, name, fn):
    p = source / "scenarios" / "mini" / f"{name}.json"
    d = json.loads(p.read_text())
    fn(d)
    p.write_text(json.dumps(d))


def problems(source):
    return validate_set(load_set(source))


def test_fixture_passes_every_gate(mini_source):
    assert problems(mini_source) == []


def test_oracle_must_pass(mini_source):
    edit(mini_source, "mini_001_refund_ok", lambda d: d["reference_solution"]["tool_calls"].pop(1))
    assert any("reference_solution: fails deterministic checks: E2" in p for p in problems(mini_source))


def test_noncompliant_trajectory_must_fail(mini_source):
    # a DENY scenario whose checks cannot tell a refund-and-ALLOW from the right answer
    def weaken(d):
        d["evaluation_criteria"]["policy_checks"] = [
            {"type": "tool_called", "tool_name": "record_decision"},
            {"type": "decision_equals", "equals": "DENY"},
        ]
        d["evaluation_criteria"].update(reward_basis=["POLICY"], state_field_checks=[])
        d["noncompliant_trajectory"]["tool_calls"].append(
            {"name": "record_decision", "arguments": {"decision": "DENY", "order_id": "O-2", "clause_ids": [], "rationale": "x"}})
    edit(mini_source, "mini_002_final_sale", weaken)
    assert any("noncompliant_trajectory + ALLOW passes" in p for p in problems(mini_source))


def test_free_text_and_ordered_lists_are_rejected(mini_source):
    def unfair(d):
        d["evaluation_criteria"]["policy_checks"][1]["arguments"]["reason"] = "customer was very upset about it"
        d["evaluation_criteria"]["policy_checks"][4]["arguments"]["clause_ids"] = ["MINI-1.1", "MINI-3.1"]
        d["evaluation_criteria"]["policy_checks"][4].pop("argument_modes")
    edit(mini_source, "mini_001_refund_ok", unfair)
    out = problems(mini_source)
    assert any("arguments.reason: free text" in p for p in out)
    assert any("arguments.clause_ids: a list matched exactly" in p for p in out)


def test_hidden_state_must_be_readable(mini_source):
    edit(mini_source, "mini_002_final_sale", lambda d: d.update(available_tools=["refund_order", "escalate", "record_decision"]))
    out = problems(mini_source)
    assert any("initial_state_patch" in p or "lookup_order is required" in p for p in out)


def test_notes_must_not_leak(mini_source):
    edit(mini_source, "mini_003_big_order",
         lambda d: d["user_simulation"].update(initial_user_message=d["meta"]["notes"] + " Please refund O-3."))
    assert any("meta.notes" in p for p in problems(mini_source))
