"""Issue 13 item 1: how state reaches the store and where a sample's tables live."""

from __future__ import annotations

import json

from conftest import MINI, registered, run_eval
import pytest

from pibench_inspect.conversation.solver import FINAL_STATE, STATE_CHANGES, stored_final_state
from pibench_inspect.domain.loader import load_domain
from pibench_inspect.paths import domains_dir


def test_the_store_keeps_what_changed_and_the_final_state_reads_back_whole(tmp_path):
    """Inspect carries the store into events and the log: the solver stores one short JSON
    string, the top-level keys and the values of those that changed, and the final state is
    that merged over the initial state (what the state checks read)."""
    from pibench_inspect.analysis import final_state
    from pibench_inspect.environment.merge import domain_document
    from pibench_inspect.scenario.catalog import load_set

    log = run_eval(registered(source=str(MINI), agent="oracle", user="scripted", scenarios="MINI_001_REFUND_OK"),
                   log_dir=str(tmp_path))
    sample = log.samples[0]
    assert FINAL_STATE not in sample.store
    stored = json.loads(sample.store[STATE_CHANGES])
    scenario, domain = load_set(MINI).resolve("MINI_001_REFUND_OK")
    initial = domain_document(domain, scenario)
    # the refund and the order it changed, as diffs; not the collections nobody wrote
    assert {"refunds", "orders"} <= set(stored["diff"])
    assert set(initial) - set(stored["diff"]), "untouched collections are not stored"
    assert stored["diff"]["orders"] == {"d": {"O-1": {"d": {"status": {"=": "refunded", "was": "delivered"}}}}}
    assert stored["keys"][: len(initial)] == list(initial)
    final = final_state(log, sample)
    assert final == stored_final_state(sample.store, initial)
    assert final["refunds"] and final["orders"]["O-1"]["status"] != initial["orders"]["O-1"]["status"]
    assert {k: final[k] for k in initial if k not in stored["diff"]} == {
        k: v for k, v in initial.items() if k not in stored["diff"]}
    assert sample.scores["pibench_scorer"].value["all_passed"] == 1.0
    # without the initial state the changes cannot be read, and the error says what to pass
    with pytest.raises(ValueError, match="initial state"):
        stored_final_state(sample.store)
    # logs written before hold the whole document, as text or as the document itself
    assert stored_final_state({FINAL_STATE: json.dumps(final)}) == final
    assert stored_final_state({FINAL_STATE: final}) == final


def test_changes_cover_every_kind_of_write_and_roll_back_with_a_failed_call():
    from pibench_inspect.environment.merge import apply_changes
    from pibench_inspect.environment.state import StateDB

    doc = {"orders": {"O-1": {"status": "open"}}, "log": [], "ns": {"a": [{"x": 1}], "b": []}, "n": 1, "k": "v"}
    s = StateDB(doc, allow_sql=False)
    assert json.loads(s.export_changes_text()) == {"keys": list(doc), "changed": {}}
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.insert("log", {"e": 1})
            raise RuntimeError("the call failed: nothing it did stays, in the data or the changes")
    assert json.loads(s.export_changes_text())["changed"] == {}
    s.update("orders", {"_key": "O-1"}, {"status": "closed"})
    s.insert("ns.b", {"y": 2})
    s.set_scalar("n", 2)
    s.put("fresh", [1])
    changes = json.loads(s.export_changes_text())
    assert set(changes["changed"]) == {"orders", "ns", "n", "fresh"} and changes["keys"][-1] == "fresh"
    assert apply_changes(doc, changes) == s.export()
    assert json.dumps(apply_changes(doc, changes)) == s.export_text()  # key order included


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
