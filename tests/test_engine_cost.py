"""Issue 13 item 1: how state reaches the store and where a sample's tables live."""

from __future__ import annotations

import json

from conftest import MINI, registered, run_eval
from pibench_inspect.conversation.solver import FINAL_STATE, stored_final_state
from pibench_inspect.domain.loader import load_domain
from pibench_inspect.paths import domains_dir


def test_final_state_is_stored_as_one_json_string(tmp_path):
    """Inspect diffs the whole store at every span boundary: the final state goes there as one
    string (cheap to compare), and reads back as the document."""
    log = run_eval(registered(source=str(MINI), agent="oracle", user="scripted", scenarios="MINI_001_REFUND_OK"),
                   log_dir=str(tmp_path))
    sample = log.samples[0]
    stored = sample.store[FINAL_STATE]
    assert isinstance(stored, str)
    final = stored_final_state(sample.store)
    assert final == json.loads(stored) and final["refunds"] and final["orders"]
    # a log written before holds the document itself: still readable
    assert stored_final_state({FINAL_STATE: final}) == final
    assert sample.scores["pibench_scorer"].value["all_passed"] == 1.0


def test_only_domains_that_run_raw_sql_get_an_instance_of_their_own(mini_source):
    assert not load_domain(MINI / "domains" / "mini").runs_raw_sql
    # the shipped domains say everything with declarative steps (select, verify, ...)
    assert not any(load_domain(domains_dir() / name).runs_raw_sql for name in ("finra", "retail", "helpdesk"))
    tools_path = mini_source / "domains" / "mini" / "tools.json"
    catalog = json.loads(tools_path.read_text())
    catalog["tools"][0]["effect"].insert(0, {"sql": "SELECT 1 AS one", "as": "one"})
    tools_path.write_text(json.dumps(catalog))
    assert load_domain(mini_source / "domains" / "mini").runs_raw_sql


def test_state_diff_skips_untouched_subtrees_but_still_tells_true_from_1():
    from pibench_inspect.scoring.explain import state_diff

    before = {"orders": {"O-1": {"status": "open", "qty": 1, "paid": 1.0}}, "flags": [1, 2], "n": 1}
    assert state_diff(before, json.loads(json.dumps(before))) == []
    # Python says 1 == True == 1.0; the diff must not
    after = {"orders": {"O-1": {"status": "open", "qty": True, "paid": 1}}, "flags": [1, 2], "n": 1}
    assert {(c["path"], c["before"], c["after"]) for c in state_diff(before, after)} == {
        ("orders.O-1.qty", 1, True), ("orders.O-1.paid", 1.0, 1)}
    assert state_diff(before, {**before, "flags": [1], "m": 2}) == [
        {"path": "flags[1]", "change": "removed", "before": 2}, {"path": "m", "change": "added", "after": 2}]


def test_check_results_turn_into_dicts_with_every_field():
    """`as_dict` is written out field by field (dataclasses.asdict deep-copies): a field added
    to CheckResult must reach the score too."""
    from dataclasses import asdict, fields

    from pibench_inspect.checks.policy import CheckResult

    r = CheckResult("E1", "tool_called_with", False, "why", tier=2, evidence={"args": [1, {"k": "v"}]}, notes="n")
    assert r.as_dict() == asdict(r)
    assert list(r.as_dict()) == [f.name for f in fields(CheckResult)]


def test_per_object_work_is_done_once_and_stays_bounded():
    from pibench_inspect.environment.once import PerObject

    made = []
    cache = PerObject(lambda o: made.append(o) or len(made), max_entries=3)
    a, b = {"x": 1}, {"x": 1}  # equal, not the same: each gets its own result
    assert cache(a) == 1 and cache(a) == 1 and cache(b) == 2 and len(made) == 2
    for i in range(10):
        cache([i])
    assert len(cache._entries) <= 3
