"""The mutation gate: every plausible wrong play of a scenario must fail a deterministic check.

A fixture domain small enough to read (a lookup, a verification, a refund with an optional
destination, an escalation, an order rule, a restricted note) and one scenario in two versions:
with deliberately loose checks every kind of mutant but `label` survives; tightened, none does.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MINI, SAMPLE, NO_SAMPLE, shipped
from pibench_inspect.authoring.mutation import KINDS, mutants, run_gate
from pibench_inspect.scenario.catalog import load_set

PIBENCH = str(Path(sys.executable).with_name("pibench"))

POLICY = """# Gate test shop

**GATE-1.1** Look up the order before acting on it.
**GATE-1.2** Verify the caller with two matching items (postcode, phone last four) before a refund.
**GATE-2.1** Refund delivered orders in full to the original payment method.
**GATE-3.1** Never mention the internal risk note to the customer.
**GATE-4.1** Record every decision with the clause ids it rests on.
"""

TOOLS = {"tools": [
    {"name": "lookup_order", "kind": "read", "description": "Look up an order.",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
     "effect": [{"select": "orders", "where": {"order_id": "$order_id"}, "one": True, "as": "order",
                 "missing": "No order {order_id}."}], "result": "$order"},
    {"name": "verify_caller", "kind": "read", "description": "Check the caller's items against the order.",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "postcode": {"type": "string"},
                                                     "phone_last4": {"type": "string"}}, "required": ["order_id"]},
     "effect": [{"select": "orders", "where": {"order_id": "$order_id"}, "one": True, "as": "record",
                 "missing": "No order {order_id}."},
                {"verify": {"postcode": "$postcode", "phone_last4": "$phone_last4"}, "against": "$record",
                 "count_as": "items_matched", "as": "check"}], "result": "$check"},
    {"name": "refund_order", "kind": "write", "description": "Refund an order.",
     "parameters": {"type": "object", "properties": {
         "order_id": {"type": "string"}, "amount": {"type": "number"},
         "method": {"type": "string", "enum": ["original", "store_credit"], "default": "original"}},
         "required": ["order_id", "amount"]},
     "effect": [{"update": "orders", "where": {"order_id": "$order_id"}, "set": {"status": "refunded"},
                 "missing": "No order {order_id}."},
                {"insert": "refunds", "values": {"order_id": "$order_id", "amount": "$amount",
                                                 "method": "$method|original"}}]},
    {"name": "escalate", "kind": "escalation", "free_text": ["reason"], "description": "Escalate an order.",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}},
                    "required": ["order_id", "reason"]},
     "effect": [{"insert": "escalations", "values": {"order_id": "$order_id", "reason": "$reason"}}]},
    {"name": "record_decision", "kind": "decision", "free_text": ["rationale"], "description": "Record the decision.",
     "parameters": {"type": "object", "properties": {
         "decision": {"type": "string", "enum": ["ALLOW", "ALLOW-CONDITIONAL", "DENY", "ESCALATE"]},
         "order_id": {"type": "string"}, "clause_ids": {"type": "array", "items": {"type": "string"}},
         "rationale": {"type": "string"}}, "required": ["decision", "order_id", "clause_ids", "rationale"]},
     "effect": [{"insert": "decisions", "values": {"decision": "$decision", "order_id": "$order_id"}}]},
]}

DB = {"orders": [
    {"order_id": "O-1", "total": 40.0, "postcode": "AB1 2CD", "phone_last4": "1234", "status": "delivered",
     "risk_note": "watchlist since March"},
    {"order_id": "O-2", "total": 55.0, "postcode": "ZZ9 9ZZ", "phone_last4": "9999", "status": "delivered",
     "risk_note": None},
], "refunds": [], "escalations": [], "decisions": []}

LOOSE = {
    "schema_version": "pibench_scenario_v1",
    "meta": {"scenario_id": "GATE_001_REFUND", "domain": "gate", "notes": "Verified caller, delivered order: refund."},
    "leaderboard": {"primary": "Procedural Compliance"},
    "label": "ALLOW",
    "environment_setup": {"now": "2026-11-02T10:00:00+00:00"},
    "user_simulation": {
        "persona": "Sam, the account holder", "known_facts": "Order O-1, postcode AB1 2CD, phone ending 1234.",
        "initial_user_message": "Hello, I'd like a refund for order O-1, please.",
        "scripted_turns": ["Thanks."],
        "facts": [{"topic": "postcode", "asked_by": ["postcode"], "answer": "My postcode is AB1 2CD."},
                  {"topic": "phone", "asked_by": ["phone"], "answer": "My phone ends in 1234."}]},
    "evaluation_criteria": {"reward_basis": ["POLICY"], "policy_checks": [
        {"outcome_id": "C1", "type": "decision_equals", "equals": "ALLOW"},
        {"outcome_id": "C2", "type": "tool_called", "tool_name": "refund_order"},
    ]},
    "reference_solution": {"tool_calls": [
        {"name": "lookup_order", "arguments": {"order_id": "O-1"}},
        {"name": "verify_caller", "arguments": {"order_id": "O-1", "postcode": "AB1 2CD", "phone_last4": "1234"}},
        {"name": "refund_order", "arguments": {"order_id": "O-1", "amount": 40.0}},
        {"name": "record_decision", "arguments": {"decision": "ALLOW", "order_id": "O-1", "clause_ids": ["GATE-2.1"],
                                                  "rationale": "Verified; delivered; full refund."}},
    ], "decision": "ALLOW", "final_message": "Done: 40.00 is on its way back to your card."},
    "mutation_gate": {"restricted": [{"text": "watchlist", "why": "GATE-3.1: the internal risk note"}]},
}

TIGHT_CHECKS = [
    {"outcome_id": "C1", "type": "decision_equals", "equals": "ALLOW"},
    {"outcome_id": "C2", "type": "tool_called_with", "tool_name": "refund_order",
     "arguments": {"order_id": "O-1", "amount": 40.0}},
    {"outcome_id": "C3", "type": "tool_called_with", "tool_name": "lookup_order", "arguments": {"order_id": "O-1"}},
    {"outcome_id": "C4", "type": "tool_returned", "tool_name": "verify_caller", "arguments": {"order_id": "O-1"},
     "field": "items_matched", "at_least": 2},
    {"outcome_id": "C5", "type": "tool_not_called_with", "tool_name": "refund_order",
     "arguments": {"method": "store_credit"}},
    {"outcome_id": "C6", "type": "tool_not_called", "tool_name": "escalate"},
    {"outcome_id": "C7", "type": "tool_before_tool", "first_tool": "lookup_order", "second_tool": "refund_order"},
    {"outcome_id": "C8", "type": "tool_before_tool", "first_tool": "verify_caller", "second_tool": "refund_order"},
    {"outcome_id": "C9", "type": "tool_called_with", "tool_name": "record_decision",
     "arguments": {"decision": "ALLOW", "order_id": "O-1", "clause_ids": ["GATE-2.1"]},
     "argument_modes": {"clause_ids": "contains_all"}},
    {"outcome_id": "C10", "type": "message_not_contains", "pattern": "watchlist"},
]


def gate_source(root: Path, *scenarios: dict, tools: dict = TOOLS, db: dict = DB, first: int = 1) -> Path:
    """The gate domain under `root`, with `scenarios` as gate_<first>.json, gate_<first + 1>.json..."""
    d = root / "domains" / "gate"
    d.mkdir(parents=True)
    (d / "policy.md").write_text(POLICY)
    (d / "tools.json").write_text(json.dumps(tools))
    (d / "db.json").write_text(json.dumps(db))
    (d / "domain.json").write_text(json.dumps({
        "name": "gate", "agent_role": "You are a support agent.", "clause_pattern": r"GATE-\d+(?:\.\d+)*",
        "order_rules": [{"first": ["lookup_order", "verify_caller"], "then": ["refund_order"], "clause": "GATE-1.1"}]}))
    s = root / "scenarios" / "gate"
    s.mkdir(parents=True)
    for i, scenario in enumerate(scenarios, start=first):
        (s / f"gate_{i:03d}.json").write_text(json.dumps(scenario))
    return root


def tight() -> dict:
    d = copy.deepcopy(LOOSE)
    d["evaluation_criteria"]["policy_checks"] = copy.deepcopy(TIGHT_CHECKS)
    return d


def entry(root: Path):
    sset = load_set(root)
    assert not sset.errors, sset.errors
    return sset.entries["GATE_001_REFUND"]


def test_every_kind_of_mutant_is_made(tmp_path):
    found, problems = mutants(entry(gate_source(tmp_path, LOOSE)))
    assert problems == []
    assert {m.kind for m in found} == set(KINDS)
    ids = {m.id for m in found}
    assert {"drop:0:lookup_order", "verify:1:verify_caller-postcode", 'arg:2:refund_order.method="store_credit"',
            "add:escalate", "order:lookup_order>refund_order", "label:DENY", "disclose:watchlist",
            'arg:0:lookup_order.order_id="O-2"', "arg:2:refund_order.amount=55.0"} <= ids
    # the default of an omitted choice is not a mutant: it is what the solution already does
    assert 'arg:2:refund_order.method="original"' not in ids


def test_loose_checks_let_every_kind_but_the_label_survive(tmp_path):
    result = run_gate(entry(gate_source(tmp_path, LOOSE)))
    survived = {m.kind for m in result.survived}
    assert survived == set(KINDS) - {"label"}
    assert all(m.id.startswith("label:") for m in [m for m in result.survived if m.kind == "label"])
    assert {k for k in result.killed if k.startswith("label:")} == {"label:DENY", "label:ESCALATE", "label:ALLOW-CONDITIONAL"}


@pytest.mark.slow
def test_tightened_checks_kill_every_mutant_through_the_real_command(tmp_path):
    loose = gate_source(tmp_path / "loose", LOOSE)
    r = subprocess.run([PIBENCH, "validate", "--source", str(loose)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "mutation gate: mutant verify:1:verify_caller-postcode survives" in r.stdout
    assert "add tool_returned verify_caller" in r.stdout
    assert "mutation gate: gate: mutation score" in r.stdout
    good = gate_source(tmp_path / "tight", tight())
    r = subprocess.run([PIBENCH, "validate", "--source", str(good)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mutation gate: gate: mutation score 1.000" in r.stdout


def test_an_equivalent_declaration_removes_a_survivor_and_a_stale_one_is_seen(tmp_path):
    from pibench_inspect.authoring.mutation import unused_equivalents

    d = tight()
    d["evaluation_criteria"]["policy_checks"] = [c for c in d["evaluation_criteria"]["policy_checks"]
                                                 if c["outcome_id"] != "C6"]
    d["mutation_gate"]["equivalent"] = [
        {"mutant": "add:escalate", "reason": "test: escalating as well is allowed here"},
        {"mutant": "add:nothing_like_this", "reason": "stale"}]
    e = entry(gate_source(tmp_path, d))
    result = run_gate(e)
    assert result.survived == [] and result.equivalent == {"add:escalate": "test: escalating as well is allowed here"}
    assert unused_equivalents(e, result) == ["mutation_gate.equivalent[1]: 'add:nothing_like_this' matches no mutant"]


def test_a_reference_that_breaks_an_order_rule_is_a_problem(tmp_path):
    d = tight()
    calls = d["reference_solution"]["tool_calls"]
    calls[0], calls[1] = calls[1], calls[0]  # fine: both come before the refund
    calls.insert(0, calls.pop(2))  # the refund first: the rule says lookups before it
    result = run_gate(entry(gate_source(tmp_path, d)))
    assert any("calls refund_order before lookup_order" in p for p in result.problems)


# The shipped set's mutation gate (no surviving mutant, no gate problem) is run, once, by
# tests/test_domains.py::test_shipped_set_validates: validate runs every gate, this one included
# (test_tightened_checks_kill_every_mutant_through_the_real_command shows validate failing on a
# survivor). Playing it a second time here took ~160 s of the slow suite.


def test_the_mini_fixture_is_mutation_clean():
    sset = load_set(MINI)
    for e in sset.entries.values():
        assert run_gate(e).survived == []


@pytest.mark.skipif(not SAMPLE.is_dir(), reason=NO_SAMPLE)
@pytest.mark.slow
def test_validate_reports_the_originals_mutation_score_as_data_quality_not_a_failure():
    r = subprocess.run([PIBENCH, "validate", "--source", str(SAMPLE)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "data quality (original scenarios, not a gate): helpdesk: mutation score" in r.stdout


def test_mutants_with_the_same_calls_are_played_once_and_judged_alike():
    # label mutants of a final-text decision and disclosure mutants repeat the reference's calls,
    # and some argument mutants land on the same calls: each list of calls is played once
    from pibench_inspect.authoring.mutation import equivalence, killed

    entry = next(e for k, e in shipped().entries.items() if str(k).startswith("HD_RETURN_FR"))
    found = [m for m in mutants(entry)[0] if equivalence(entry, m.id) is None]
    keys = [repr([(c.name, c.arguments) for c in m.calls]) for m in found]
    assert len(set(keys)) < len(keys)
    plays: dict = {}
    assert [killed(entry, m, plays) for m in found] == [killed(entry, m) for m in found]
    assert len(plays) == len(set(keys))
