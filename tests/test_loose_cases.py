"""The loose checks a blind careful solver found (issue 23), each as the mutant the gate makes:
killed by the check the fix added, surviving without it (the looseness, reproduced)."""

from __future__ import annotations

import fnmatch

import pytest

from conftest import shipped
from pibench_inspect.authoring.mutation import killed, mutants
from pibench_inspect.scenario.catalog import Entry
from pibench_inspect.scenario.loader import parse_scenario

# (scenario id prefix, mutant id pattern, outcome ids of the checks that fixed it)
CASES = [
    # identity verified only as "was verify_identity called": one item, or wrong items, passed
    ("HD_008", "verify:*:verify_identity-*", ["E9_VERIFIED_TWO_ITEMS"]),
    ("HD_014", "verify:*:verify_identity-*", ["E9_VERIFIED_TWO_ITEMS"]),
    ("HD_015", "verify:*:verify_identity-*", ["E8_VERIFIED_TWO_ITEMS"]),
    ("HD_019", "verify:*:verify_identity-*", ["E8_VERIFIED_TWO_ITEMS"]),
    # the refund's destination was not pinned
    ("RET_005", 'arg:*:process_refund.refund_method="store_credit"', ["R005_12_REFUND_TO_ORIGINAL_PAYMENT"]),
    ("RET_016", 'arg:*:process_refund.refund_method="store_credit"', ["R016_12_REFUND_TO_ORIGINAL_PAYMENT"]),
    # the training condition not yet in force could be attached
    ("HD_008", 'arg:*:create_access_request.condition="training_completion"', ["E12_NO_TRAINING_CONDITION"]),
    # escalating a request the policy says is not escalated
    ("HD_003", "add:escalate_to_tier2", ["E8_NO_TIER2"]),
    ("HD_003", "add:escalate_to_it_security", ["E9_NO_IT_SECURITY"]),
    # disclosures guarded by the NL judge alone (invisible to keyless and judge-off runs)
    ("FIN_002", "disclose:*A-1009*", ["E8_NO_WAIVER_ACCOUNT"]),
    ("FIN_002", "disclose:*40,000*", ["E9_NO_COFOUNDER_SALE"]),
    ("FIN_002", "disclose:*March 17*", ["E10_NO_EARLY_FILL"]),
    ("HD_003", "disclose:*2026-03-09*", ["E14_NO_LEAVE_DATE", "E15_NO_LEAVE_DATE_SPOKEN"]),
    # an OPS hold placed without reading the pending request
    ("FIN_022", "drop:*:lookup_pending_request", ["E4_LOOKED_UP_REQUEST", "E6_REQUEST_BEFORE_HOLD"]),
]


def entry_of(prefix: str) -> Entry:
    return next(e for sid, e in shipped().entries.items() if sid.startswith(prefix + "_"))


def without(entry: Entry, outcome_ids: list[str]) -> Entry:
    raw = entry.scenario.model_dump(mode="json", by_alias=True, exclude_none=True)
    crit = raw["evaluation_criteria"]
    before = len(crit["policy_checks"])
    crit["policy_checks"] = [c for c in crit["policy_checks"] if c["outcome_id"] not in outcome_ids]
    assert len(crit["policy_checks"]) == before - len(outcome_ids), "the fixing checks are in the scenario"
    return Entry(parse_scenario(raw), entry.domain, entry.path)


@pytest.mark.parametrize("prefix, pattern, fix", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_fix_kills_the_wrong_play_and_without_it_it_survives(prefix, pattern, fix):
    entry = entry_of(prefix)
    found = [m for m in mutants(entry)[0] if fnmatch.fnmatchcase(m.id, pattern)]
    assert found, f"no mutant {pattern} of {prefix}"
    assert all(killed(entry, m) for m in found)
    loose = without(entry, fix)
    survivors = [m.id for m in mutants(loose)[0] if fnmatch.fnmatchcase(m.id, pattern) and not killed(loose, m)]
    assert survivors, f"without {fix} every {pattern} mutant is still killed: the case does not reproduce"
