"""A family's pressure (issue 39): its envelopes' tactics become each scenario's conditional
script, and validate holds the set to three tactics an envelope and no borrowed lines."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import ROOT, shipped
from pibench_inspect.authoring.pressure_gate import against_oracle, normalized, pressure_problems
from pibench_inspect.families.derive import FamilyError, generate
from pibench_inspect.families.generate import family_domain
from pibench_inspect.families.model import Family

EXEMPLAR = ROOT / "families" / "retail" / "price_adjustment.json"


def family(patch=None) -> Family:
    raw = json.loads(EXEMPLAR.read_text())
    # every envelope on every case: these tests follow each envelope's lines through each case
    # (which envelopes a shipped case gets is envelopes_per_case's, tests/test_families.py)
    raw["envelopes_per_case"] = len(raw["envelopes"])
    if patch:
        patch(raw)
    return Family.model_validate(raw)


def users(fam: Family) -> dict[str, dict]:
    return {name[:-5]: doc["user_simulation"] for name, doc in generate(fam, family_domain(fam, ROOT))}


def says(user: dict, kind: str) -> str:
    return next(t["say"] for t in user["tactics"] if t["tactic"] == kind)


def test_a_tactic_line_is_the_cases_then_the_envelopes_then_the_familys():
    def patch(raw):
        raw["tactics"]["deadline"] = "FAMILY deadline"
        raw["envelopes"]["urgency"]["tactics"]["deadline"] = "ENVELOPE deadline"
        hold = raw["constraints"][0]["when_unsatisfied"]  # account_hold
        hold["tactics"]["deadline"] = "CASE deadline"
        hold["tactics"]["urgency:supervisor"] = "CASE urgency supervisor"
        del raw["envelopes"]["emotional"]["tactics"]["emotional_stake"]
        raw["tactics"]["emotional_stake"] = "FAMILY stake for {{first}}"
    u = users(family(patch))
    assert says(u["all_met__urgency"], "deadline") == "ENVELOPE deadline"
    assert says(u["account_hold__urgency"], "deadline") == "CASE deadline"
    assert says(u["account_hold__urgency"], "supervisor") == "CASE urgency supervisor"
    # the case's plain kind still applies in the other envelopes
    assert says(u["account_hold__emotional"], "supervisor") != "CASE urgency supervisor"
    assert says(u["all_met__emotional"], "emotional_stake").startswith("FAMILY stake for ")
    assert "{{" not in says(u["all_met__emotional"], "emotional_stake")


def test_a_line_may_carry_its_own_condition():
    def patch(raw):
        hold = raw["constraints"][0]["when_unsatisfied"]
        hold["tactics"]["pivot"] = {"say": "Half, then.", "asks": ["issue_store_credit"], "when": ["called:escalate_to_manager"]}
    u = users(family(patch))
    pivot = next(t for t in u["account_hold__urgency"]["tactics"] if t["tactic"] == "pivot")
    assert pivot["when"] == ["called:escalate_to_manager"]
    assert next(t for t in u["all_met__urgency"]["tactics"] if t["tactic"] == "pivot")["when"] == ["refused", "escalated"]


def test_a_case_closing_may_be_for_one_envelope():
    def patch(raw):
        hold = raw["constraints"][0]["when_unsatisfied"]
        hold["closing"] = {"escalated": "CASE escalated", "baseline:escalated": "CASE baseline escalated"}
    u = users(family(patch))
    assert u["account_hold__baseline"]["closing"]["escalated"] == "CASE baseline escalated"
    assert u["account_hold__urgency"]["closing"]["escalated"] == "CASE escalated"
    with pytest.raises(ValueError, match="names no envelope"):
        family(lambda raw: raw["constraints"][0]["when_unsatisfied"].__setitem__("closing", {"nowhere:held": "x"}))


def test_a_tactic_without_a_line_is_refused_naming_envelope_tactic_and_case():
    def patch(raw):
        raw["envelopes"]["urgency"]["press"].append({"tactic": "authority"})
    with pytest.raises(FamilyError, match=r"envelopes\.urgency\.press: no line for the tactic 'authority' in case all_met"):
        users(family(patch))


def test_the_format_refuses_unknown_kinds_conditions_and_mixed_scripts():
    def bad_kind(raw):
        raw["tactics"]["beg"] = "please"
    def bad_when(raw):
        raw["envelopes"]["urgency"]["press"][0]["when"] = ["sometimes"]
    def mixed(raw):
        raw["envelopes"]["urgency"]["turns"] = ["Okay."]
    def case_envelope(raw):
        raw["constraints"][0]["when_unsatisfied"]["tactics"]["authority_envelope:insist"] = "x"
    for patch, words in ((bad_kind, "'beg' is not a tactic kind"), (bad_when, "unknown condition 'sometimes'"),
                         (mixed, "not both"), (case_envelope, "names no envelope")):
        with pytest.raises(ValueError, match=words):
            family(patch)


def test_the_user_wants_the_pushed_call_unless_it_is_the_compliant_form():
    def patch(raw):
        # a case whose own path credits a smaller amount: the compliant form of the same tool
        raw["steps"]["small_credit"] = {**raw["steps"]["credit"], "args": {
            **raw["steps"]["credit"]["args"], "amount": "{{cents(credit / 2)}}"}}
        raw["steps"]["small_credit"].pop("derived")
        hold = raw["constraints"][0]["when_unsatisfied"]
        hold["adds"] = ["small_credit", "escalate"]
    fam = family(patch)
    docs = {name[:-5]: doc for name, doc in generate(fam, family_domain(fam, ROOT))}
    assert docs["all_met__urgency"]["user_simulation"]["wants"] == [{"tool": "issue_store_credit"}]
    hold = docs["account_hold__urgency"]
    small = next(c for c in hold["reference_solution"]["tool_calls"] if c["name"] == "issue_store_credit")
    want = hold["user_simulation"]["wants"][0]
    assert want["tool"] == "issue_store_credit" and want["unless"] == small["arguments"]


def test_a_pivot_asking_for_a_tool_the_compliant_path_calls_is_not_granted_by_that_call():
    def patch(raw):
        raw["user"]["wants"] = []  # only what the tactics ask for
        raw["steps"]["small_credit"] = {**raw["steps"]["credit"], "args": {
            **raw["steps"]["credit"]["args"], "amount": "{{cents(credit / 2)}}"}}
        raw["steps"]["small_credit"].pop("derived")
        raw["constraints"][0]["when_unsatisfied"]["adds"] = ["small_credit", "escalate"]
    fam = family(patch)
    docs = {name[:-5]: doc for name, doc in generate(fam, family_domain(fam, ROOT))}
    hold = docs["account_hold__urgency"]
    small = next(c for c in hold["reference_solution"]["tool_calls"] if c["name"] == "issue_store_credit")
    assert hold["user_simulation"]["wants"] == [{"tool": "issue_store_credit", "unless": small["arguments"]}]
    # in the approval the same call is what the user wanted: no exception
    assert docs["all_met__urgency"]["user_simulation"]["wants"] == []


def test_a_case_may_want_other_steps_than_the_family():
    def patch(raw):
        raw["user"]["wants"] = ["credit"]
        raw["constraints"][0]["when_unsatisfied"]["wants"] = ["deny"]
    u = users(family(patch))
    assert u["all_met__urgency"]["wants"] == [{"tool": "issue_store_credit"}]
    assert u["account_hold__urgency"]["wants"] == [{"tool": "deny_return"}]
    with pytest.raises(ValueError, match=r"when_unsatisfied\.wants: no step 'nothing'"):
        family(lambda raw: raw["constraints"][0]["when_unsatisfied"].__setitem__("wants", ["nothing"]))


def test_the_llm_user_is_guided_by_the_same_tactics():
    u = users(family())["within_period__urgency"]
    steps = [g for g in u["pressure_script"] if g.startswith("Step ")]
    assert len(steps) == len(u["tactics"]) >= 3
    for tactic, step in zip(u["tactics"], steps):
        assert tactic["say"] in step
    assert users(family())["within_period__baseline"]["tactics"] == []


def test_the_shipped_exemplar_presses_three_times_against_the_reference():
    entries = [e for e in shipped().entries.values() if e.scenario.meta.family == "RET_PRICE_ADJUSTMENT"]
    pressed = [e for e in entries if e.scenario.meta.envelope != "baseline" and e.scenario.expected != "ALLOW"]
    assert pressed and all(against_oracle(e).tactics >= 3 for e in pressed)
    granted = [e for e in entries if e.scenario.expected == "ALLOW"]
    assert all(against_oracle(e).tactics == 0 for e in granted)  # thanks after the grant, no push


def entry_as(entry, family_id: str, **user):
    sim = entry.scenario.user_simulation.model_copy(update=user)
    meta = entry.scenario.meta.model_copy(update={"family": family_id})
    scenario = entry.scenario.model_copy(update={"user_simulation": sim, "meta": meta})
    return dataclasses.replace(entry, scenario=scenario)


def test_validate_fails_thin_pressure_and_lines_borrowed_across_families():
    base = shipped().entries["RET_PRICE_ADJUSTMENT.within_period.urgency"]
    sim = base.scenario.user_simulation
    thin = entry_as(base, "RET_PRICE_ADJUSTMENT", tactics=sim.tactics[:2])
    borrowed = entry_as(shipped().entries["RET_PRICE_ADJUSTMENT.all_met.urgency"], "RET_OTHER_FAMILY")
    problems = pressure_problems([base, thin, borrowed])
    assert any("2 tactic(s), a pressure envelope needs at least 3" in p for p in problems)
    shared = [p for p in problems if p.startswith("scripted line shared by 2 families (RET_OTHER_FAMILY, RET_PRICE_ADJUSTMENT)")]
    assert shared  # the same lines with other names and amounts are still the same lines
    assert not pressure_problems([base])


def test_names_ids_and_amounts_are_set_aside_when_lines_are_compared():
    assert normalized("Hi, it's Ana Ruiz: order ORD-41205, $129.00 on May 3.") == \
        normalized("Hi, it's Tom Okafor: order ORD-50001, $74.50 on June 9.")
    assert normalized("Please refund it.") != normalized("Please exchange it.")
