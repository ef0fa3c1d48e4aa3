"""Crossed constraints and envelopes per case (issue 40, items 1 and 2): every pair of a family's
constraints is a case of its own unless kept `apart`, decided by precedence; each case is
played in the baseline and envelopes_per_case - 1 pressure envelopes taken in turn; the set's
counts are of distinct cases."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT
from pibench_inspect.families import bounds
from pibench_inspect.families.derive import generate
from pibench_inspect.families.generate import family_domain
from pibench_inspect.families.model import Family

EXEMPLAR = ROOT / "families" / "retail" / "price_adjustment.json"
PIBENCH = str(Path(sys.executable).with_name("pibench"))
PAIRS = ["account_hold_and_within_period", "account_hold_and_first_adjustment", "within_period_and_first_adjustment"]


def fixture() -> dict:
    """The worked example without its own combos, apart and thresholds: every pair is crossed
    (the boundary cases of thresholds are tests/test_edges.py's)."""
    raw = json.loads(EXEMPLAR.read_text())
    raw.pop("combos", None)
    raw.pop("apart", None)
    for c in raw["constraints"]:
        c.pop("threshold", None)
    return raw


def effect(raw: dict, name: str) -> dict:
    return next(c for c in raw["constraints"] if c["name"] == name)["when_unsatisfied"]


def docs(raw: dict) -> dict[str, dict]:
    fam = Family.model_validate(raw)
    return {name[:-5]: doc for name, doc in generate(fam, family_domain(fam, ROOT))}


def refused(raw: dict) -> str:
    with pytest.raises(ValueError) as err:
        Family.model_validate(raw)
    return str(err.value)


def test_every_pair_is_crossed_and_decided_by_precedence():
    raw = fixture()
    effect(raw, "within_period")["blocks"].append("history")  # a step only the second one blocks
    fam = Family.model_validate(raw)
    assert [n for n, _ in fam.combinations()] == [
        "all_met", "account_hold", "within_period", "first_adjustment", *PAIRS]
    out = docs(raw)
    pair = out["account_hold_and_within_period__baseline"]
    # the first broken constraint in precedence order decides: its label, column and clause
    assert pair["label"] == "ESCALATE" and pair["leaderboard"]["primary"] == effect(raw, "account_hold")["primary"]
    assert pair["reference_solution"]["tool_calls"][-1]["arguments"]["clause_ids"] == ["RETAIL-8.2"]
    assert pair["action_graph"]["constraint_satisfied"] == {
        "account_hold": False, "within_period": False, "first_adjustment": True}
    # blocked steps are the union: the history lookup the hold alone only skips is forbidden here
    checks = pair["evaluation_criteria"]["policy_checks"]
    assert any(c["type"] == "tool_not_called" and c["tool_name"] == "lookup_return_history" for c in checks)
    alone = out["account_hold__baseline"]["evaluation_criteria"]["policy_checks"]
    assert not any(c.get("tool_name") == "lookup_return_history" for c in alone)
    late = out["within_period_and_first_adjustment__baseline"]
    assert late["label"] == "DENY" and late["reference_solution"]["tool_calls"][-1]["arguments"]["clause_ids"] == ["RETAIL-6.2"]


def test_apart_keeps_a_pair_out_and_is_checked():
    raw = fixture()
    raw["apart"] = [{"constraints": ["within_period", "account_hold"], "why": "a reason by the clauses"}]
    names = [n for n, _ in Family.model_validate(raw).combinations()]
    assert "account_hold_and_within_period" not in names and "account_hold_and_first_adjustment" in names
    raw["apart"] = [{"constraints": ["account_hold", "nope"], "why": "x"},
                    {"constraints": ["within_period", "within_period"], "why": "x"}]
    msg = refused(raw)
    assert "apart[0].constraints: no constraint 'nope'" in msg
    assert "apart[1].constraints: names 'within_period' twice" in msg
    raw["apart"] = [{"constraints": ["account_hold", "within_period"], "why": "x"}]
    raw["combos"] = [{"name": "held_late", "unsatisfied": ["within_period", "account_hold"]}]
    assert ("apart[0]: the pair account_hold and within_period is also the combo 'held_late'; "
            "a pair is crossed (combos) or kept apart, not both") in refused(raw)


def test_two_constraints_setting_one_slot_cannot_be_crossed_unless_apart():
    raw = fixture()
    raw["constraints"][2]["unsatisfied"]["days_since_delivery"] = {"int": [1, 2]}  # first_adjustment
    assert ("constraints 'within_period' and 'first_adjustment' both set the slot(s) days_since_delivery "
            "when unsatisfied") in refused(raw)
    raw["apart"] = [{"constraints": ["first_adjustment", "within_period"], "why": "one delivery date"}]
    assert "within_period_and_first_adjustment" not in [n for n, _ in Family.model_validate(raw).combinations()]


def test_a_combo_replaces_the_automatic_pair_with_its_own_outcome():
    raw = fixture()
    outcome = copy.deepcopy(effect(raw, "within_period"))
    outcome["notes"] = "COMBO notes for both broken facts."
    raw["combos"] = [{"name": "held_and_late", "unsatisfied": ["within_period", "account_hold"], "outcome": outcome}]
    fam = Family.model_validate(raw)
    names = [n for n, _ in fam.combinations()]
    assert names.index("held_and_late") == 4 and "account_hold_and_within_period" not in names
    doc = docs(raw)["held_and_late__baseline"]
    assert doc["label"] == "DENY" and doc["meta"]["notes"].endswith("COMBO notes for both broken facts.")
    # a combo whose name is an automatic pair's, for another set, is refused
    raw["combos"] = [{"name": "account_hold_and_first_adjustment",
                      "unsatisfied": ["account_hold", "within_period", "first_adjustment"]}]
    assert "the case name 'account_hold_and_first_adjustment' is also an automatic pair's" in refused(raw)


def test_envelopes_per_case_are_the_baseline_and_the_others_in_turn(monkeypatch):
    raw = fixture()
    first, second = docs(raw), docs(raw)
    assert sorted(first) == sorted(second)  # deterministic
    by_case: dict[str, list[str]] = {}
    for name in first:
        combo, env = name.split("__")
        by_case.setdefault(combo, []).append(env)
    pressing = [e for e in raw["envelopes"] if e != "baseline"]
    assert len(by_case) == 7 and all(len(e) == 3 and "baseline" in e for e in by_case.values())
    use = Counter(e for envs in by_case.values() for e in envs if e != "baseline")
    assert set(use) == set(pressing) and max(use.values()) - min(use.values()) <= 1
    raw["envelopes_per_case"] = 2
    assert Counter(n.split("__")[0] for n in docs(raw)) == {c: 2 for c in by_case}
    raw["envelopes_per_case"] = 9
    assert "envelopes_per_case: 9, but the family has 5 envelope(s)" in refused(raw)
    raw["envelopes_per_case"] = 3
    monkeypatch.setattr(bounds, "MAX_VARIANTS", 20)
    assert "cases x envelopes_per_case: 21 scenarios, more than 20 (MAX_VARIANTS)" in refused(raw)


def test_envelope_siblings_share_the_gates_plays():
    from conftest import shipped
    from pibench_inspect.authoring import benign, plays

    entries = [e for e in shipped().entries.values() if e.scenario.meta.family == "RET_PRICE_ADJUSTMENT"
               and e.scenario.meta.combo == "within_period"]
    assert len(entries) == 3
    a, b = entries[0], entries[1]
    assert plays.played_run(a, "oracle") is plays.played_run(b, "oracle")
    assert plays.play_agent(a, "deny_all") is plays.play_agent(b, "deny_all")
    assert benign.run_gate(a) is benign.run_gate(b)


def test_power_table_counts_distinct_cases():
    from pibench_inspect.reports.markdown import power
    from pibench_inspect.reports.stats import power_table

    def row(sid, family, combo, envelope):
        return {"status": "completed", "scenario_id": sid, "family": family, "combo": combo, "envelope": envelope,
                "leaderboard_primary": "Policy Activation", "all_passed": True, "partial_credit": 1.0}

    rows = [row("F.a.baseline", "F", "a", "baseline"), row("F.a.urgency", "F", "a", "urgency"),
            row("F.b.baseline", "F", "b", "baseline"), row("HAND_1", None, None, None)]
    table = power_table(rows, {})
    assert [(p["cases"], p["scenarios"], p["families"]) for p in table] == [(3, 4, 2)]
    text = power(type("A", (), {"power": table})())
    assert text.startswith("| column | cases | scenarios |") and "distinct cases, not scenarios" in text


@pytest.mark.slow
def test_list_gives_broken_constraints_and_counts_cases(tmp_path):
    root = tmp_path / "src"
    shutil.copytree(ROOT / "domains", root / "domains")
    (root / "scenarios").mkdir()
    fam = root / "families" / "retail" / "pairs.json"
    fam.parent.mkdir(parents=True)
    fam.write_text(json.dumps(fixture()))
    assert subprocess.run([PIBENCH, "generate", str(fam)], capture_output=True).returncode == 0
    r = subprocess.run([PIBENCH, "list", "--json", "--source", str(root)], capture_output=True, text=True)
    rows = {x["scenario_id"]: x for x in json.loads(r.stdout)}
    assert len(rows) == 21
    assert rows["RET_PRICE_ADJUSTMENT.all_met.baseline"]["broken"] == []
    assert rows["RET_PRICE_ADJUSTMENT.within_period.baseline"]["broken"] == ["within_period"]
    pair = [x for x in rows.values() if x["combo"] == "account_hold_and_first_adjustment"]
    assert [x["broken"] for x in pair] == [["account_hold", "first_adjustment"]] * 3
    assert {x["case"] for x in pair} == {"RET_PRICE_ADJUSTMENT.account_hold_and_first_adjustment"}
    assert len({x["case"] for x in rows.values()}) == 7
    text = subprocess.run([PIBENCH, "list", "--source", str(root)], capture_output=True, text=True).stdout
    assert "7 distinct cases (7 generated, 0 hand-written; envelope siblings count once)" in text
    columns = Counter(x["column"] for x in rows.values() if x["envelope"] == "baseline")
    for col, n in columns.items():
        assert f"  {col}: {n} cases from 1 families" in text
    labels = Counter(x["label"] for x in rows.values() if x["envelope"] == "baseline")
    assert f"ESCALATE {labels['ESCALATE']}/7" in text and f"DENY {labels['DENY']}/7" in text
    assert "largest family: RET_PRICE_ADJUSTMENT, 7/7 (100%) of the cases" in text
    assert "multi-constraint cases (retail): 3/7 (43%) of generated cases break 2+ constraints" in text
    from pibench_inspect.cli.main import domain_lines
    from pibench_inspect.scenario.catalog import load_set

    loaded = load_set(root)
    assert domain_lines(loaded) == ["retail: multi-constraint cases 3/7 (43%) of generated cases"]
    from pibench_inspect.authoring.content_rules import set_problems

    # the set's shape is counted in distinct cases: 21 scenarios are 7 cases of one family
    problems = set_problems(list(loaded.entries.values()))
    assert problems[0] == "the set holds 7 distinct cases, needs at least 360"
    assert "family RET_PRICE_ADJUSTMENT: 7 of 7 cases (100.0%), more than 5% of the set" in problems


def test_label_balance_counts_distinct_cases():
    """Envelope siblings count once: more envelopes of one case do not move a domain's label
    shares (issue 40: every label at least 15% of each domain's cases)."""
    from conftest import shipped
    from pibench_inspect.authoring.validate import label_balance

    entries = list(shipped().entries.values())
    assert label_balance(entries) == []
    deny = next(e for e in entries if e.domain.name == "retail" and e.scenario.meta.family and e.scenario.expected == "DENY")
    assert label_balance(entries + [deny] * 60) == []
