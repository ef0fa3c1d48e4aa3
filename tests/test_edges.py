"""Issue 40 items 3 and 4: boundary cases drawn at a threshold the policy names, and the found
gate (the user's words do not carry the values that decide a case)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from pibench_inspect.authoring.found import carried, found_summary, told
from pibench_inspect.families.derive import generate
from pibench_inspect.families.generate import build, family_domain, write
from pibench_inspect.families.model import Family
from pibench_inspect.scenario.catalog import load_set

EXEMPLAR = ROOT / "families" / "retail" / "price_adjustment.json"
PIBENCH = str(Path(sys.executable).with_name("pibench"))
WINDOW = {"slot": "days_since_delivery", "at": 7, "step": 1, "at_satisfies": True, "clause": "RETAIL-6.1"}


def exemplar(**threshold) -> dict:
    raw = json.loads(EXEMPLAR.read_text())
    for c in raw["constraints"]:
        c.pop("threshold", None)
        if c["name"] == "within_period":
            c["satisfied"]["days_since_delivery"] = {"int": [1, 6]}
            c["unsatisfied"]["days_since_delivery"] = {"int": [8, 12]}
            c["threshold"] = {**WINDOW, **threshold}
    return raw


def cases_of(raw: dict) -> dict[str, dict]:
    family = Family.model_validate(raw)
    return {name.split("__")[0]: doc for name, doc in generate(family, family_domain(family, ROOT))
            if name.endswith("__baseline.json")}


def days(doc: dict) -> int:
    m = re.search(r"\(day (\d+)\)|Today is day (\d+)", doc["meta"]["notes"])
    return int(m.group(1) or m.group(2))


def test_a_threshold_adds_the_cases_just_under_at_and_just_over_it():
    cases = cases_of(exemplar())
    # day 6 and day 7 are inside the 7-day period (the delivery day is day 0), day 8 is not
    assert [(days(cases[f"within_period_{s}"]), cases[f"within_period_{s}"]["label"]) for s in ("under", "at", "over")] \
        == [(6, "ALLOW"), (7, "ALLOW"), (8, "DENY")]
    at = cases["within_period_at"]
    state = at["environment_setup"]["initial_state_patch"]
    delivered = next(iter(state["orders"].values()))["delivery_date"]
    assert delivered == "2025-05-13"  # the derived date follows the pinned day count (today 2025-05-20)
    assert at["action_graph"]["constraint_satisfied"]["within_period"] is True
    assert cases["within_period_over"]["action_graph"]["constraint_satisfied"]["within_period"] is False


def test_the_side_of_at_follows_at_satisfies_and_the_satisfied_range():
    raw = exemplar()
    for c in raw["constraints"]:
        c.pop("threshold", None)
        if c["name"] == "account_hold":  # a score of 75 or more is a hold: satisfied lies below
            c["threshold"] = {"slot": "risk_score", "at": 75, "step": 1, "at_satisfies": False, "clause": "RETAIL-8.2"}
    cases = cases_of(raw)
    assert [cases[f"account_hold_{s}"]["label"] for s in ("under", "at", "over")] == ["ALLOW", "ESCALATE", "ESCALATE"]
    risk = [next(iter(cases[f"account_hold_{s}"]["environment_setup"]["initial_state_patch"]["customers"].values()))["risk_score"]
            for s in ("under", "at", "over")]
    assert risk == [74, 75, 76]


@pytest.mark.parametrize("threshold, message", [
    ({"at": 20}, "constraints[1] (within_period).threshold: the satisfied range [1, 6] and the unsatisfied range "
                 "[8, 12] of 'days_since_delivery' do not lie on opposite sides of at=20"),
    ({"at_satisfies": False, "at": 6}, "do not lie on opposite sides of at=6"),
    ({"step": 0.5}, "6.5 is not a whole number, and 'days_since_delivery' is an int slot"),
    ({"step": 7}, "0 lies outside the values 'days_since_delivery' may take (1 to 12"),
    ({"slot": "new_price"}, "constraints[1] (within_period).threshold.slot: 'new_price' has no numeric satisfied range"),
    ({"slot": "nowhere"}, "threshold.slot: 'nowhere' is not a slot of the family"),
])
def test_a_threshold_whose_ranges_do_not_straddle_it_is_refused_naming_the_field(threshold, message):
    with pytest.raises(ValueError) as err:
        Family.model_validate(exemplar(**threshold))
    assert message in str(err.value)


def test_a_threshold_clause_must_be_the_policys():
    family = Family.model_validate(exemplar(clause="RETAIL-99.9"))
    with pytest.raises(ValueError, match=r"within_period\).threshold.clause: 'RETAIL-99.9' does not occur"):
        generate(family, family_domain(family, ROOT))


# ---------------------------------------------------------------- the found gate


def test_values_are_carried_as_they_are_said():
    assert carried(9500, "I'm paying in $9,500.00 today") and carried(9500.0, "9500 in cash")
    assert not carried(950, "I'm paying in $9,500.00 today")
    assert carried("2025-05-12", "it came on May 12, I think") and carried("2025-05-12", "on the 12th of May")
    assert carried("2025-05-12", "delivered 2025-05-12") and not carried("2025-05-12", "on May 1")
    assert carried("return_abuse_watch", "is there a return abuse watch on me?")
    assert carried("GR-60871", "the code is GR-60871.") and not carried("GR-6087", "the code is GR-60871.")


def telling(raw: dict, combo: str) -> list[str]:
    family = Family.model_validate(raw)
    return told(family, family_domain(family, ROOT), combo, dict(family.combinations())[combo])


def test_an_opening_that_carries_a_deciding_value_is_told_and_one_that_does_not_is_found():
    raw = exemplar()
    quiet = raw["envelopes"]["baseline"]["opening"]
    assert not [n for n in telling(raw, "within_period") if "baseline opening" in n]
    raw["envelopes"]["baseline"]["opening"] = quiet + " It was delivered on {{spoken_date(delivery_date)}}."
    notes = telling(raw, "within_period")
    assert any(re.fullmatch(r"'2025-05-\d\d' in baseline opening", n) for n in notes), notes
    # a day count tells it as well (the boundary case's pinned 8), and so does a risk score
    raw["envelopes"]["baseline"]["opening"] = quiet + " It came {{days_since_delivery}} days ago."
    assert "8 in baseline opening" in telling(raw, "within_period_over")
    raw["envelopes"]["baseline"]["opening"] = quiet + " My risk score is {{risk_score}}, whatever that means."
    assert any(re.fullmatch(r"\d+ in baseline opening", n) for n in telling(raw, "account_hold"))
    # a value said alike on both sides of every deciding constraint tells nothing
    raw["envelopes"]["baseline"]["opening"] = quiet + " My order was placed online."
    assert not [n for n in telling(raw, "account_hold") if "baseline opening" in n]


def source_with(tmp_path: Path, raw: dict) -> Path:
    """A source holding the retail domain and one family (its baseline only), generated."""
    shutil.copytree(ROOT / "domains" / "retail", tmp_path / "domains" / "retail")
    raw["envelopes"] = {"baseline": raw["envelopes"]["baseline"]}
    for outcome in [raw["outcome"]] + [c["when_unsatisfied"] for c in raw["constraints"]]:
        for key in ("tactics", "closing"):  # lines of the envelopes left out
            outcome[key] = {k: v for k, v in outcome.get(key, {}).items() if ":" not in k}
    (tmp_path / "families" / "retail").mkdir(parents=True)
    (tmp_path / "scenarios").mkdir()
    path = tmp_path / "families" / "retail" / "pa.json"
    path.write_text(json.dumps(raw))
    write(build(path))
    return tmp_path


def test_the_found_share_is_counted_per_domain_and_a_low_one_is_a_problem(tmp_path):
    raw = exemplar()
    raw["envelopes"]["baseline"]["opening"] += " It arrived on {{spoken_date(delivery_date)}}; my risk score is {{risk_score}}."
    lines, problems = found_summary(list(load_set(source_with(tmp_path / "told", raw)).entries.values()))
    m = re.fullmatch(r"retail: found: (\d+) of 10 generated cases \((\d+)%\)", lines[0])
    assert m and int(m.group(1)) < 5, lines
    assert problems and problems[0].startswith("domain retail: found: ") and "below 70%" in problems[0]
    assert any(line.startswith("told: RET_PRICE_ADJUSTMENT.within_period_over: ") for line in lines)
    lines, problems = found_summary(list(load_set(source_with(tmp_path / "quiet", exemplar())).entries.values()))
    assert lines[0] == "retail: found: 10 of 10 generated cases (100%)" and problems == []


@pytest.mark.slow
def test_validate_prints_the_found_share_per_domain(tmp_path):
    root = source_with(tmp_path, exemplar())
    r = subprocess.run([PIBENCH, "validate", "--source", str(root), "--jobs", "1"], capture_output=True, text=True,
                       timeout=300)
    assert "found gate: retail: found: 10 of 10 generated cases (100%)" in r.stdout, r.stdout + r.stderr
    # issue 40's done-when: one summary line per domain with the four figures
    summary = re.search(r"^retail: multi-constraint cases \d+/10 \(\d+%\) of generated cases; found 10/10 \(100%\) "
                        r"of generated cases; benign variants passed (\d+)/(\d+); disclosure mutants killed (\d+)/(\d+)$",
                        r.stdout, re.M)
    assert summary, r.stdout
    passed, played, killed, seen = map(int, summary.groups())
    assert passed == played > 0 and killed == seen > 0


def test_the_shipped_set_draws_an_amount_at_the_threshold_the_policy_names():
    """Issue 40's defect "no amount sits at a threshold": FINRA-5.8 files a CTR only above
    $10,000, so the aggregate $9,999.99 and $10,000.00 pay out with no CTR and $10,000.01 files one."""
    folder = ROOT / "scenarios" / "finra" / "fin_senior_cash_withdrawal"
    want = {"under": ("9,999.99", "ALLOW"), "at": ("10,000.00", "ALLOW"), "over": ("10,000.01", "ALLOW-CONDITIONAL")}
    for side, (total, label) in want.items():
        doc = json.loads((folder / f"cash_over_10k_{side}__baseline.json").read_text())
        assert doc["label"] == label
        # the day's aggregate, as the reference rationale and notes state it
        assert re.findall(r"\$(9,999\.99|10,000\.0\d)\b", json.dumps(doc)) and f"${total}" in json.dumps(doc), side
        calls = [c["name"] for c in doc["reference_solution"]["tool_calls"]]
        assert ("file_ctr" in calls) == (label == "ALLOW-CONDITIONAL"), (side, calls)


def test_a_step_accepting_several_values_declares_the_others_as_the_scenario_has_them():
    """A step's `accept` declared an equivalent mutant for every accepted value, the reference's
    own too (no mutant sets an argument to the value it has: "matches no mutant"), with a reason
    quoting the family's templates ("{{order_id}}"), which the consistency lint refuses."""
    raw = exemplar()
    raw["steps"]["credit"]["accept"] = {"reason": ["price_adjustment", "goodwill"],
                                        "order_id": ["{{order_id}}"]}
    doc = cases_of(raw)["all_met"]
    accepted = [e for e in doc["mutation_gate"]["equivalent"] if e["mutant"].startswith("arg:*:issue_store_credit.")]
    assert [e["mutant"] for e in accepted] == ['arg:*:issue_store_credit.reason="goodwill"']
    assert accepted[0]["reason"] == 'any of ["price_adjustment", "goodwill"] is right for reason here'
    assert "{{" not in json.dumps(doc["mutation_gate"])


def test_the_declared_accept_equivalent_matches_a_mutant(tmp_path):
    from pibench_inspect.authoring.mutation import run_gate, unused_equivalents

    raw = exemplar()
    raw["steps"]["credit"]["accept"] = {"reason": ["price_adjustment", "goodwill"]}
    entries = load_set(source_with(tmp_path, raw)).entries
    e = next(x for sid, x in entries.items() if sid.startswith("RET_PRICE_ADJUSTMENT.all_met."))
    result = run_gate(e)
    assert unused_equivalents(e, result) == []
    assert [k for k in result.equivalent if k.endswith('issue_store_credit.reason="goodwill"')]
