"""Scenario families: the format, the expression language, deterministic generation, what is
derived, and the gates that hold families to account."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, shipped
from pibench_inspect.families.derive import FamilyError, generate
from pibench_inspect.families.expr import ExprError, evaluate, render
from pibench_inspect.families.generate import build, differences, family_domain, load_family, write
from pibench_inspect.families.model import Family
from pibench_inspect.scenario.errors import ScenarioError

FAMILIES = sorted((ROOT / "families").glob("*/*.json"))
EXEMPLAR = ROOT / "families" / "retail" / "price_adjustment.json"
PIBENCH = str(Path(sys.executable).with_name("pibench"))


def exemplar() -> dict:
    return json.loads(EXEMPLAR.read_text())


# ---------------------------------------------------------------- expressions


def test_expressions_compute_what_a_family_needs():
    env = {"product": {"price": 129.0}, "drop": 15, "today": "2025-05-20", "first": "Ana"}
    assert evaluate("cents(product.price * (100 - drop) / 100)", env) == 109.65
    assert evaluate("date_add(today, -9)", env) == "2025-05-11"
    assert evaluate("days_between('2025-05-11', today)", env) == 9
    assert evaluate("spoken_date(today)", env) == "May 20, 2025"
    assert evaluate("money(1234.5)", env) == "1,234.50"
    assert evaluate("'late' if drop > 10 else 'fine'", env) == "late"
    assert evaluate("first + ' ' + 'Ruiz'", env) == "Ana Ruiz"
    assert evaluate("'CUS-4123'[-4:]", env) == "4123"
    # a whole-string template keeps the type; a mixed one becomes text (whole floats without .0)
    assert render("{{product.price}}", env) == 129.0
    assert render("paid ${{product.price}} on {{today}}", env) == "paid $129 on 2025-05-20"
    assert render({"{{first}}": ["{{drop}}"]}, env) == {"Ana": [15]}


@pytest.mark.parametrize("source", [
    "__import__('os')", "(lambda: 1)()", "[x for x in range(3)]", "product.__class__", "open('/etc/passwd')",
    "9 ** 9 ** 9", "'a' * 10**6", "[1] * 10**6", "unknown_name", "product.missing", "10**13 + 1",
    "1" * 1500,
])
def test_expressions_refuse_everything_else(source):
    with pytest.raises(ExprError):
        evaluate(source, {"product": {"price": 1.0}})


# ---------------------------------------------------------------- the format


def test_a_family_naming_a_step_it_does_not_define_is_refused_naming_the_field():
    raw = exemplar()
    raw["procedure"].append("nowhere")
    raw["constraints"][0]["unsatisfied"]["no_such_slot"] = {"int": [1, 2]}
    with pytest.raises(ValueError) as err:
        Family.model_validate(raw)
    assert "procedure: no step 'nowhere'" in str(err.value)
    assert "constraints[0].unsatisfied: 'no_such_slot' is not a slot" in str(err.value)


def test_a_slot_needs_exactly_one_kind():
    raw = exemplar()
    raw["slots"]["quantity"] = {"int": [1, 2], "choice": [1]}
    with pytest.raises(ValueError, match="exactly one of"):
        Family.model_validate(raw)


@pytest.mark.slow
def test_generate_reports_a_broken_family_in_one_line(tmp_path):
    root = tmp_path / "src"
    shutil.copytree(ROOT / "domains", root / "domains")
    (root / "scenarios").mkdir()
    raw = exemplar()
    raw["steps"]["order"]["tool"] = "lookup_everything"
    fam = root / "families" / "retail" / "broken.json"
    fam.parent.mkdir(parents=True)
    fam.write_text(json.dumps(raw))
    r = subprocess.run([PIBENCH, "generate", str(fam)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "no tool lookup_everything in the retail catalog" in r.stderr
    assert "Traceback" not in r.stderr and not (root / "scenarios" / "retail").exists()


# ---------------------------------------------------------------- generation


@pytest.mark.parametrize("path", FAMILIES, ids=[p.stem for p in FAMILIES])
def test_every_shipped_family_reproduces_its_committed_files_byte_for_byte(path):
    out = build(path)
    assert differences(out) == [], f"run: pibench generate {path.relative_to(ROOT)}"


def test_generation_is_deterministic_and_writes_ordinary_scenarios(tmp_path):
    a, b = build(EXEMPLAR, tmp_path / "a"), build(EXEMPLAR, tmp_path / "b")
    assert a.files == b.files
    written = write(a)
    family = load_family(EXEMPLAR, ROOT)
    assert len(written) == len(family.combinations()) * family.envelopes_per_case
    doc = json.loads(written[0].read_text())
    meta = doc["meta"]
    assert meta["scenario_id"] == f"{meta['family']}.{meta['combo']}.{meta['envelope']}"
    assert meta["family"] == "RET_PRICE_ADJUSTMENT"
    # a stale file of the family is removed; a file of another family in the folder is kept
    stale = tmp_path / "a" / "gone__urgency.json"
    stale.write_text(json.dumps({"meta": {"family": "RET_PRICE_ADJUSTMENT"}}))
    other = tmp_path / "a" / "other.json"
    other.write_text(json.dumps({"meta": {"family": "SOMETHING_ELSE"}}))
    assert differences(a) == [f"{stale}: no longer generated by RET_PRICE_ADJUSTMENT"]
    write(a)
    assert not stale.exists() and other.exists()


def test_envelopes_of_a_case_share_its_values_and_cases_differ():
    raw = exemplar()
    raw["envelopes_per_case"] = len(raw["envelopes"])  # every envelope on every case
    family = Family.model_validate(raw)
    docs = dict(generate(family, family_domain(family, ROOT)))
    state = lambda name: docs[name]["environment_setup"]["initial_state_patch"]  # noqa: E731
    assert state("all_met__baseline.json") == state("all_met__urgency.json")
    assert state("all_met__baseline.json") != state("within_period__baseline.json")
    openings = {docs[f"all_met__{e}.json"]["user_simulation"]["initial_user_message"] for e in family.envelopes}
    assert len(openings) == len(family.envelopes)


def test_checks_follow_the_path_of_each_case():
    family = load_family(EXEMPLAR, ROOT)
    docs = dict(generate(family, family_domain(family, ROOT)))

    def checks(name):
        return docs[name]["evaluation_criteria"]["policy_checks"]

    ok = checks("all_met__baseline.json")
    credit = next(c for c in ok if c["type"] == "tool_called_with" and c["tool_name"] == "issue_store_credit")
    assert credit["arguments"]["reason"] == "price_adjustment" and isinstance(credit["arguments"]["amount"], float)
    assert {"type": "tool_before_tool", "first_tool": "lookup_customer", "second_tool": "issue_store_credit"}.items() \
        <= next(c for c in ok if c.get("first_tool") == "lookup_customer").items()  # a domain order rule
    assert any(c["type"] == "tool_not_called" and c["tool_name"] == "escalate_to_manager" for c in ok)
    hold = checks("account_hold__baseline.json")
    assert any(c["type"] == "tool_not_called" and c["tool_name"] == "issue_store_credit" for c in hold)
    assert any(c["type"] == "tool_called_with" and c["tool_name"] == "escalate_to_manager" for c in hold)
    assert any(c["type"] == "message_not_contains" and c["pattern"] == "risk score" for c in hold)
    assert not any(c["type"] == "message_not_contains" for c in ok)  # restricted only where it applies
    # skipped steps are neither required nor forbidden
    assert not any(c.get("tool_name") == "lookup_product" for c in hold)
    deny = docs["within_period__baseline.json"]
    assert deny["label"] == "DENY"
    assert deny["evaluation_criteria"]["state_field_checks"][0]["equals"] == "denied"
    record = next(c for c in checks("within_period__baseline.json") if c["outcome_id"].endswith("_RECORD"))
    assert record["arguments"]["clause_ids"] == ["RETAIL-6.2"] and record["argument_modes"] == {"clause_ids": "contains_all"}


def test_a_clause_with_alternatives_is_matched_by_any_of_them():
    """`alternatives`: clauses that ground the case's decision as well as the one the reference
    cites. Alone, the decision check takes any of them (contains_any); beside a clause without
    alternatives, each group is a check of its own and the plain clauses stay contains_all."""
    raw = exemplar()
    effect = next(c for c in raw["constraints"] if c["name"] == "within_period")["when_unsatisfied"]
    effect["alternatives"] = {"RETAIL-6.2": ["RETAIL-6.3"]}

    def records(doc):
        return [c for c in doc["evaluation_criteria"]["policy_checks"] if c.get("tool_name") == "record_decision"]

    family = Family.model_validate(raw)
    alone = records(dict(generate(family, family_domain(family, ROOT)))["within_period__baseline.json"])
    assert [(c["arguments"]["clause_ids"], c["argument_modes"]) for c in alone] == [
        (["RETAIL-6.2", "RETAIL-6.3"], {"clause_ids": "contains_any"})]
    effect["clauses"] = ["RETAIL-6.2", "RETAIL-1.2"]
    family = Family.model_validate(raw)
    doc = dict(generate(family, family_domain(family, ROOT)))["within_period__baseline.json"]
    assert [(c["outcome_id"].split("_", 1)[1], c["arguments"]["clause_ids"], c["argument_modes"]) for c in records(doc)] == [
        ("RECORD", ["RETAIL-1.2"], {"clause_ids": "contains_all"}),
        ("RECORD_RETAIL_6_2", ["RETAIL-6.2", "RETAIL-6.3"], {"clause_ids": "contains_any"})]
    assert doc["reference_solution"]["tool_calls"][-1]["arguments"]["clause_ids"] == ["RETAIL-6.2", "RETAIL-1.2"]
    effect["alternatives"] = {"RETAIL-8.1": ["RETAIL-6.3"]}
    with pytest.raises(ValueError, match="alternatives: 'RETAIL-8.1' is not one of the clauses the decision cites"):
        Family.model_validate(raw)


def test_a_path_that_breaks_an_order_rule_is_refused():
    family = load_family(EXEMPLAR, ROOT)
    family.procedure = ["order", "product", "credit", "customer", "history"]
    with pytest.raises(FamilyError, match="calls issue_store_credit before lookup_customer"):
        generate(family, family_domain(family, ROOT))


# ---------------------------------------------------------------- gates


@pytest.mark.slow
def test_indistinguishable_variants_fail_validate(tmp_path):
    root = tmp_path / "src"
    shutil.copytree(ROOT / "domains", root / "domains")
    (root / "scenarios").mkdir()
    raw = exemplar()
    raw["envelopes"]["urgency"] = raw["envelopes"]["baseline"]  # two envelopes saying the same
    fam = root / "families" / "retail" / "twins.json"
    fam.parent.mkdir(parents=True)
    fam.write_text(json.dumps(raw))
    assert subprocess.run([PIBENCH, "generate", str(fam)], capture_output=True).returncode == 0
    r = subprocess.run([PIBENCH, "validate", "--source", str(root), "--only", "RET_PRICE_ADJUSTMENT.all_met.*"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert ("variant RET_PRICE_ADJUSTMENT.all_met.urgency is indistinguishable from "
            "RET_PRICE_ADJUSTMENT.all_met.baseline") in r.stdout


@pytest.mark.slow
def test_list_json_names_each_scenarios_family():
    r = subprocess.run([PIBENCH, "list", "--json"], capture_output=True, text=True)
    rows = {x["scenario_id"]: x for x in json.loads(r.stdout)}
    assert rows["RET_PRICE_ADJUSTMENT.all_met.baseline"]["family"] == "RET_PRICE_ADJUSTMENT"
    assert rows["RET_PRICE_ADJUSTMENT.all_met.baseline"]["envelope"] == "baseline"
    hand = next(x for x in rows.values() if x["scenario_id"].startswith("RET_001"))
    assert hand["family"] == hand["scenario_id"] and hand["envelope"] is None


def test_family_schema_is_current():
    from pibench_inspect.cli.main import family_json_schema

    committed = json.loads((ROOT / "families" / "pibench_family_v1.schema.json").read_text())
    assert committed == json.loads(json.dumps(family_json_schema())), \
        "run: pibench schema --family --out families/pibench_family_v1.schema.json"


def test_every_generated_scenario_is_in_the_shipped_set():
    ids = {e.scenario.scenario_id for e in shipped().entries.values() if e.scenario.meta.family}
    expected = set()
    for path in FAMILIES:
        for name, text in build(path).files.items():
            expected.add(json.loads(text)["meta"]["scenario_id"])
    assert ids == expected
