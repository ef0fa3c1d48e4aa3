"""Review of the DuckDB state engine: a call is all or nothing even when its deadline passes
after its last statement or its raw SQL tries to end the transaction; an insert cannot shadow a
scalar or a namespace; a field name DuckDB cannot hold is refused by name on every update."""

from __future__ import annotations

import json

import pytest

from conftest import MINI
from pibench_inspect.environment.effects import ToolCallError, execute
from pibench_inspect.environment.merge import domain_document
from pibench_inspect.environment.state import StateDB, StateError
from pibench_inspect.scenario.catalog import load_set

LONE = "\ud800"
KINDS = [{"allow_sql": False}, {}, "seeded"]


def state_of(doc, kind):
    return StateDB(doc, allow_sql=False, seed=doc) if kind == "seeded" else StateDB(doc, **kind)


@pytest.mark.parametrize("kind", KINDS)
def test_a_deadline_passing_after_the_last_write_rolls_the_call_back(kind):
    """The watchdog (or a cancelled sample's `interrupt`) may fire after the call's last
    statement, before its COMMIT: the call fails as overran and must change nothing, leave no
    transaction open, and the next call must work."""
    from pibench_inspect.environment.limits import CallOverran

    doc = {"log": [{"a": 1}], "n": 0}
    s = state_of(doc, kind)
    try:
        before = s.export_text()
        with pytest.raises(CallOverran):
            with s.bounded(5):
                with s.transaction():
                    s.insert("log", {"b": 2})
                    s.set_scalar("n", 1)
                    s.interrupt()  # the deadline passes now, before the COMMIT
        with s.bounded(5):
            assert s.export_text() == before
            assert s.export_changes_text() == '{"keys": ["log", "n"], "changed": {}}'
            assert s.select("log") == [{"a": 1}]
            with s.transaction():
                s.insert("log", {"c": 3})
        assert s.export() == {"log": [{"a": 1}, {"c": 3}], "n": 0}
    finally:
        s.close()


def test_a_tool_call_overrunning_before_its_commit_changes_nothing(monkeypatch):
    scenario, domain = load_set(MINI).resolve("MINI_001_REFUND_OK")
    state = StateDB(domain_document(domain, scenario), allow_sql=False, seed=domain.seed_state,
                    limits=domain.config.limits)
    try:
        before = state.export_text()
        # the last thing a write call does before COMMIT: the deadline passes there
        monkeypatch.setattr(state, "check_size", state.interrupt)
        with pytest.raises(ToolCallError, match="nothing was changed"):
            execute(domain.tool_index["escalate"], state, {"order_id": "O-1", "reason": "why"})
        monkeypatch.undo()
        assert state.export_text() == before
        execute(domain.tool_index["escalate"], state, {"order_id": "O-1", "reason": "again"})
        assert [r["reason"] for r in state.select("escalations")] == ["again"]
    finally:
        state.close()


@pytest.mark.parametrize("statement", ["COMMIT", "ROLLBACK", "SELECT 1; COMMIT", "BEGIN TRANSACTION", "ABORT"])
def test_raw_sql_cannot_end_the_calls_transaction(statement):
    s = StateDB({"log": [{"a": 1}], "n": 0})
    try:
        with pytest.raises(RuntimeError, match="the call failed"):
            with s.transaction():
                s.insert("log", {"b": 2})
                with pytest.raises(StateError, match="transaction"):
                    s.sql(statement)
                s.insert("log", {"c": 3})
                raise RuntimeError("the call failed")
        assert s.export() == {"log": [{"a": 1}], "n": 0}
        assert s.select("log") == [{"a": 1}]
        assert s.sql("SELECT count(*) AS n FROM log") == [{"n": 1}]
    finally:
        s.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["now", "ns"])
def test_an_insert_cannot_shadow_a_scalar_or_a_namespace(kind, name):
    doc = {"now": "2026-01-01", "ns": {"a": [{"x": 1}], "b": []}, "log": []}
    s = state_of(doc, kind)
    try:
        with pytest.raises(StateError, match=repr(name)):
            s.insert(name, {"z": 1})
        assert s.export_text() == json.dumps(doc)  # no second key of that name
    finally:
        s.close()


@pytest.mark.parametrize("kind", KINDS)
def test_an_update_matching_nothing_refuses_a_field_name_duckdb_cannot_hold(kind):
    doc = {"log": [{"a": 1}], "orders": {"O-1": {"status": "open"}}}
    s = state_of(doc, kind)
    try:
        for path, where in (("log", {"a": 99}), ("orders", {"_key": "O-9"})):
            with pytest.raises(StateError, match="a field name is not valid UTF-8"):
                s.update(path, where, {LONE: 1})
            with pytest.raises(StateError, match="a field name is not valid UTF-8"):
                with s.transaction():
                    s.update(path, where, {"ok": 1, LONE: 1})
        assert s.export_text() == json.dumps(doc)
        assert s.update("log", {"a": 99}, {"fine": 1}) == []  # nothing matched: no refusal of values
    finally:
        s.close()


def test_a_value_edited_after_its_put_reaches_neither_the_state_nor_another_sample():
    """A put collection's table is made at first use (from a shared table keyed by the value's
    text): the caller's later edits must not reach it, nor another state loading that text."""
    a = StateDB({"log": [], "n": 1}, allow_sql=False)
    b = StateDB({"log": [], "n": 1}, allow_sql=False)
    try:
        mine = [{"who": "review-put-original"}]
        with a.transaction():
            a.put("log", mine)
        mine[0]["who"] = "edited after the put"
        mine.append({"who": "appended after the put"})
        assert a.select("log") == a.get("log") == [{"who": "review-put-original"}]
        assert a.export()["log"] == [{"who": "review-put-original"}]
        with b.transaction():
            b.put("log", [{"who": "review-put-original"}])
        assert b.select("log") == [{"who": "review-put-original"}]
    finally:
        a.close(), b.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_scalar_holding_a_lone_surrogate_is_refused_when_set_as_when_loaded(kind):
    s = state_of({"log": [], "note": "ok"}, kind)
    try:
        with pytest.raises(StateError, match="'note' holds text that is not valid UTF-8"):
            with s.transaction():
                s.set_scalar("note", "x" + LONE)
        with pytest.raises(StateError, match="not valid UTF-8"):
            s.set_scalar("fresh", {"k": [LONE]})
        assert s.export() == {"log": [], "note": "ok"}
        if kind == {}:  # raw SQL puts the scalars in a table: it still runs
            assert s.sql("SELECT 1 AS a") == [{"a": 1}]
    finally:
        s.close()


def test_a_shared_table_holds_the_content_its_key_names_whatever_a_caller_edits():
    """A scenario table is shared by its JSON text as loaded: a document edited by its caller
    after the load (before the first read) must not put other content under that text."""
    doc = {"log": [{"who": "review-shared-original"}]}
    c = StateDB(doc, allow_sql=False)
    d = StateDB({"log": [{"who": "review-shared-original"}]}, allow_sql=False)
    try:
        doc["log"][0]["who"] = "edited by the caller"
        c.select("log")  # the shared table is built now
        assert d.select("log") == [{"who": "review-shared-original"}]
    finally:
        c.close(), d.close()


def test_the_state_is_readable_after_a_call_that_overran(monkeypatch):
    """After a call ran past its deadline (or a cancelled sample's call was stopped), the solver
    still saves the sample's final state and checks read it: only the overran call is refused."""
    scenario, domain = load_set(MINI).resolve("MINI_001_REFUND_OK")
    state = StateDB(domain_document(domain, scenario), allow_sql=False, seed=domain.seed_state,
                    limits=domain.config.limits)
    try:
        execute(domain.tool_index["escalate"], state, {"order_id": "O-1", "reason": "first"})
        monkeypatch.setattr(state, "check_size", state.interrupt)
        with pytest.raises(ToolCallError, match="ran over"):
            execute(domain.tool_index["escalate"], state, {"order_id": "O-1", "reason": "second"})
        monkeypatch.undo()
        changed = json.loads(state.export_changes_text())["changed"]
        assert [r["reason"] for r in changed["escalations"]] == ["first"]
        assert [r["reason"] for r in state.select("escalations")] == ["first"]
    finally:
        state.close()


def test_the_size_bound_holds_after_a_call_that_measured_its_changes_and_failed():
    from pibench_inspect.environment.limits import CallOverran, EffectLimits, StateTooLarge

    s = StateDB({"log": [], "n": 0}, allow_sql=False, limits=EffectLimits(state_mb=0.01))  # 10 KB
    try:
        with s.bounded(5), s.transaction():
            s.insert("log", {"x": "a" * 8000})
            s.check_size()
        with pytest.raises(CallOverran):
            with s.bounded(5), s.transaction():
                s.put("log", [])
                s.check_size()  # measured: the state as this call would leave it (small)
                s.interrupt()  # ... which then fails
        with pytest.raises(StateTooLarge):
            with s.bounded(5), s.transaction():
                s.insert("log", {"x": "b" * 3000})  # 11 KB in all
                s.check_size()
        assert s.export() == {"log": [{"x": "a" * 8000}], "n": 0}
    finally:
        s.close()
