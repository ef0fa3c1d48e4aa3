"""The consistency lint (authoring/consistency.py, story_dates.py): each rule catches its defect
on a fixture made from a shipped scenario, passes the shipped scenario itself, and the whole
shipped set lints clean (part of `pibench validate`'s zero problems)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from conftest import ROOT, shipped as shipped_set
from pibench_inspect.authoring.consistency import consistency_problems
from pibench_inspect.authoring.validate import validate_set
from pibench_inspect.scenario.catalog import Entry, ScenarioSet
from pibench_inspect.scenario.model import Scenario

def shipped(sid: str) -> Entry:
    return shipped_set().entries[sid]


def edited(sid: str, edit) -> Entry:
    """The shipped scenario `sid` with `edit(doc)` applied to its JSON form."""
    e = shipped(sid)
    doc = json.loads(e.scenario.model_dump_json(by_alias=True, exclude_none=True))
    edit(doc)
    return replace(e, scenario=Scenario.model_validate(doc))


def rules(entry: Entry) -> list[str]:
    return [p.split("consistency (", 1)[1].split(")", 1)[0] for p in consistency_problems(entry)]


PW = "HD_PASSWORD_RESET.all_met.baseline"
VPN = "HD_VPN_REMOTE.mfa_enrolled.baseline"
RECORDS = "FIN_RECORDS_REQUEST.all_met.baseline"
INSIDER = "FIN_INSIDER_ORDER.all_met.baseline"  # a SELL order
PRICE = "RET_PRICE_ADJUSTMENT.within_period.baseline"


def _us(doc):
    return doc["user_simulation"]


def _state(doc):
    return doc["environment_setup"]["initial_state_patch"]


def _event(doc):
    return next(iter(_state(doc)["account_events"].values()))


CASES = [
    ("template", RECORDS, lambda d: _us(d).update(initial_user_message="Hello, this is {{req.name}}.")),
    ("punctuation", RECORDS, lambda d: _event(d).update(details="Authority granted to Grant & Ebner Inc.. on file.")),
    ("relation_in_name", RECORDS, lambda d: _event(d).update(details="Information authority granted to Julian Mulcahy (Son).")),
    ("article", RECORDS, lambda d: d["reference_solution"].update(final_message="I've sent a update by secure message.")),
    ("person_mix", RECORDS, lambda d: _us(d).update(known_facts="You want the statements because my kid needs them.")),
    ("order_side", INSIDER, lambda d: _us(d).update(initial_user_message="Hi, I put in an order to buy 500 Harbinger shares.")),
    ("relative_time", PW, lambda d: _us(d).update(
        initial_user_message="Hi. My password expired over the weekend and I can't remember the new one.")),
    ("relationship", RECORDS, lambda d: [p.update(title="Daughter") for p in
                                         next(iter(_state(d)["customers"].values()))["authorized_persons"]]),
]


@pytest.mark.parametrize("rule,sid,edit", CASES, ids=[c[0] for c in CASES])
def test_each_rule_catches_its_defect(rule, sid, edit):
    assert rules(shipped(sid)) == []  # the shipped scenario is clean
    found = consistency_problems(edited(sid, edit))
    assert rule in rules(edited(sid, edit)), found
    # the problem names the file and the field
    assert all(str(shipped(sid).path) in p and "consistency (" in p for p in found)


def test_relative_time_rules():
    # a four-week hire whose YubiKey is "unused for months"
    e = edited(VPN, lambda d: _us(d).update(
        known_facts="You were issued a YubiKey security key at some point; you have not used it for months."))
    assert "relative_time" in rules(e)
    # "a few days ago" for a delivery 9-19 days back
    e = edited(PRICE, lambda d: _us(d).update(known_facts="It arrived a few days ago."))
    assert "relative_time" in rules(e)
    # "on <weekday>": the password changed on a day that is not that weekday
    e = edited(PW, lambda d: _us(d).update(initial_user_message="I changed my password last Tuesday and it's gone."))
    assert "relative_time" in rules(e)
    # the same words declared as the user's belief are the story's point, not a defect
    e = edited(PRICE, lambda d: _us(d).update(known_facts="You think it arrived a few days ago."))
    assert rules(e) == []


def test_quotations_and_references_are_not_findings():
    # the user's own words in quotation marks inside a second-person text
    e = edited(RECORDS, lambda d: _us(d).update(known_facts='You need them; in your words: "my kid needs them."'))
    assert rules(e) == []
    # a recorded solution's reference to an earlier result is not an unrendered template
    e = edited(RECORDS, lambda d: d["reference_solution"]["tool_calls"][0]["arguments"].update(note="{{calls[0].request_id}}"))
    assert rules(e) == []
    # an abbreviation before a comma, an ellipsis, a lower-case relation that describes
    e = edited(RECORDS, lambda d: _event(d).update(details="Grant & Ebner Inc., then... Daniel Whitcombe (nephew)."))
    assert rules(e) == []


def test_validate_reports_the_lint():
    bad = edited(RECORDS, lambda d: _event(d).update(details="Information authority granted to Julian Mulcahy (Son)."))
    sset = ScenarioSet(source=None, entries={bad.scenario.scenario_id: bad})
    problems = validate_set(sset, gates=False)
    assert any("consistency (relation_in_name)" in p and "account_events" in p for p in problems), problems


def test_shipped_set_lints_clean():
    found = [p for e in shipped_set().entries.values() if not e.domain.original_layout for p in consistency_problems(e)]
    assert found == []


def test_blocked_note_says_the_constraint_is_broken():
    doc = json.loads((ROOT / "scenarios/helpdesk/hd_software_install/not_prohibited__baseline.json").read_text())
    notes = [c.get("notes", "") for c in doc["evaluation_criteria"]["policy_checks"] if "blocked" in c.get("notes", "")]
    assert notes and all("this case breaks not_prohibited" in n for n in notes), notes


def test_retail_families_offer_the_gift_receipt_lookup():
    # RETAIL-1.5 names lookup_gift_receipt for every request: a gift recipient is served on the code
    for path in sorted((ROOT / "families" / "retail").glob("*.json")):
        fam = json.loads(path.read_text())
        assert "lookup_gift_receipt" in (fam.get("available_tools") or ["lookup_gift_receipt"]), path.name


def test_records_request_caller_knows_the_owner_died():
    # issue 40: the son never mentioned that his mother had died three weeks before; the caller
    # now answers truthfully when asked, and his reason is not one written for a living owner
    cases = {"no_owner_notice": "passed away", "all_met": "alive and well"}
    for e in shipped_set().entries.values():
        s = e.scenario
        if s.family != "FIN_RECORDS_REQUEST" or s.meta.combo not in cases:
            continue
        answers = [f.answer for f in s.user_simulation.facts if "passed away" in f.asked_by]
        assert answers and cases[s.meta.combo] in answers[0], (s.scenario_id, answers)
        if s.meta.combo == "no_owner_notice":
            assert "mortgage lender" not in s.user_simulation.known_facts, s.scenario_id


def test_article_rule_is_precise():
    fine = "Send a USB cable and a UPS label, a unit, a one-off, a European plug; Schedule A of the form."
    e = edited(RECORDS, lambda d: d["reference_solution"].update(final_message=fine))
    assert rules(e) == []
    e = edited(RECORDS, lambda d: d["reference_solution"].update(final_message="A order is open for a 8-day window."))
    assert rules(e) == ["article", "article"]
