"""JSON <-> DuckDB state mapping: exact round trip, writes, transactions."""

from __future__ import annotations

import json

import duckdb
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from pibench_inspect.environment.merge import deep_merge
from pibench_inspect.environment.state import StateDB, StateError

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
)
values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=8)
keys = st.text(min_size=1, max_size=6)
records = st.dictionaries(keys, values, max_size=4)
collections = st.one_of(
    st.lists(records, max_size=4),
    st.dictionaries(keys, records, max_size=4),
    st.dictionaries(keys, st.lists(records, max_size=3), min_size=1, max_size=3),
    records,
    st.lists(scalars, max_size=4),
    scalars,
)
documents = st.dictionaries(keys, collections, max_size=5)


@settings(max_examples=150, deadline=None)
@given(documents)
def test_export_returns_exactly_what_was_loaded(doc):
    state = StateDB(doc)
    try:
        assert json.dumps(state.export()) == json.dumps(doc)  # key order included
        assert state.export_text() == json.dumps(doc)
        for path in list(state.collections):
            state.update(path, {}, {})  # written: exported from its table from now on
        assert state.export_text() == json.dumps(doc)
    finally:
        state.close()


def test_absent_keys_stay_absent_and_nulls_stay_null():
    doc = {"rows": [{"a": 1}, {"a": None, "b": "x"}, {}]}
    assert StateDB(doc).export() == doc


def test_update_insert_and_widening():
    s = StateDB({"orders": {"O-1": {"status": "open", "total": 5}}, "log": []})
    s.update("orders", {"_key": "O-1"}, {"status": "closed", "note": "n", "total": "five"})
    s.insert("log", {"event": "x", "n": 1})
    s.insert("log", {"event": "y", "extra": [1, 2]})
    assert s.export() == {
        "orders": {"O-1": {"status": "closed", "total": "five", "note": "n"}},
        "log": [{"event": "x", "n": 1}, {"event": "y", "extra": [1, 2]}],
    }


def test_transaction_rolls_back_data_and_layout():
    s = StateDB({"log": []})
    before = s.export()
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.insert("log", {"brand_new_column": 1})
            s.insert("other", {"x": 1})
            raise RuntimeError("boom")
    assert s.export() == before
    s.insert("log", {"ok": True})
    assert s.export() == {"log": [{"ok": True}]}


def test_filters_exact_and_case_insensitive():
    s = StateDB({"c": [{"id": "AB-1", "n": 1, "f": True}, {"id": "ab-2", "n": 2, "f": False}]})
    assert [r["id"] for r in s.select("c", {"id": "ab-1"})] == []
    assert [r["id"] for r in s.select("c", {"id": " ab-1 "}, match="ci")] == ["AB-1"]
    assert [r["id"] for r in s.select("c", {"n": "1"})] == []  # exact: a string never equals a number
    assert [r["id"] for r in s.select("c", {"f": False})] == ["ab-2"]
    assert s.select("c", {"missing_field": "x"}) == []


def test_injection_text_is_just_a_value():
    s = StateDB({"c": [{"id": "A"}]})
    evil = "A'; DROP TABLE c; --"
    assert s.select("c", {"id": evil}) == []
    s.insert("c", {"id": evil, '"; DROP TABLE c; --': 1})
    assert s.export()["c"][1] == {"id": evil, '"; DROP TABLE c; --': 1}


def test_unknown_collection_is_a_clear_error():
    with pytest.raises(StateError, match="no collection 'nope'"):
        StateDB({"a": []}).select("nope")


def test_deep_merge_rules():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": [1], "c": 1}
    patch = {"a": {"y": [3], "z": None}, "b": [], "d": {"k": 1}}
    assert deep_merge(base, patch) == {"a": {"x": 1, "y": [3], "z": None}, "b": [], "c": 1, "d": {"k": 1}}
    assert base["a"]["y"] == [1, 2]  # inputs untouched


def test_get_and_put_replace_values_in_place():
    s = StateDB({"a": 1, "activity": {"reqs": [{"id": "R1", "status": "pending"}], "orders": []}, "z": {"k": {"v": 1}}})
    reqs = s.get("activity.reqs")
    reqs[0]["status"] = "held"
    reqs.append({"id": "R2"})
    s.put("activity.reqs", reqs)
    s.put("z", {"only": "record"})
    s.put("new", [1, 2])
    s.put("a", 2)
    assert s.export() == {"a": 2, "activity": {"reqs": [{"id": "R1", "status": "held"}, {"id": "R2"}], "orders": []},
                          "z": {"only": "record"}, "new": [1, 2]}
    assert list(s.export()) == ["a", "activity", "z", "new"]
    assert s.get("missing", "dflt") == "dflt"
    before = s.export()
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.put("activity.reqs", [])
            s.put("z", 5)
            raise RuntimeError
    assert s.export() == before


@settings(max_examples=40, deadline=None)
@given(documents, documents)
def test_seed_catalogs_and_private_catalogs_round_trip(seed, patch):
    """A document merged from a seed (copy-on-write, untouched collections read from the seed
    catalog) exports exactly, in a private catalog and in a database of its own, and the seed is
    never changed by the merge or the build."""
    before = json.dumps(seed)
    doc = deep_merge(seed, patch)
    for kwargs in ({"allow_sql": False, "seed": seed}, {"seed": seed}, {"allow_sql": False}):
        state = StateDB(doc, **kwargs)
        try:
            # the stored text, written piece by piece (seed collections from a per-process
            # cache), is exactly the document's own JSON
            assert state.export_text() == json.dumps(doc)
            assert json.dumps(state.export()) == json.dumps(doc)
        finally:
            state.close()
    assert json.dumps(seed) == before


def test_private_catalogs_are_separate_and_dropped():
    from pibench_inspect.environment.duck import shared_instance as _shared_instance

    seed = {"orders": {"O-1": {"status": "open"}}, "log": []}
    a, b = StateDB(seed, allow_sql=False, seed=seed), StateDB(seed, allow_sql=False, seed=seed)
    a.update("orders", {"_key": "O-1"}, {"status": "closed"})
    a.insert("log", {"who": "a"})
    assert b.export() == seed and a.export()["orders"]["O-1"]["status"] == "closed"
    # caller-supplied SQL never runs in the shared instance: it could name another catalog
    with pytest.raises(StateError, match="raw SQL"):
        b.sql(f"SELECT * FROM {a._catalog}.main.orders")
    b.insert("log", {"who": "b"})
    assert a.export()["orders"]["O-1"]["status"] == "closed" and b.export()["log"] == [{"who": "b"}]
    names = {a._catalog, b._catalog}
    assert None not in names and len(names) == 2
    a.close(), b.close()
    attached = {r[0] for r in _shared_instance().execute("SELECT database_name FROM duckdb_databases()").fetchall()}
    assert not names & attached
    # a state with raw SQL has a database of its own, where other catalogs do not exist
    c, d = StateDB(seed, allow_sql=False), StateDB(seed)
    c.insert("log", {"who": "c"})
    assert c._catalog
    with pytest.raises(Exception, match="(?i)catalog|not found|does not exist"):
        d.sql(f"SELECT * FROM {c._catalog}.main.orders")
    c.close(), d.close()


def test_read_only_calls_restore_scalars_and_refuse_writes():
    s = StateDB({"log": [{"a": 1}], "_id_counter": 0})
    with pytest.raises(StateError, match="read-only"):
        with s.transaction(reads_only=True):
            assert s.select("log") == [{"a": 1}]
            s.set_scalar("_id_counter", 5)
            s.set_scalar("brand_new", 1)
            s.insert("log", {"a": 2})
    assert s.export() == {"log": [{"a": 1}], "_id_counter": 0}



# The cases below pinned the SQL semantics the table-plan engine (gone) had to mirror; they are
# the engine's own behaviour now, on every kind of state.
KINDS = [{"allow_sql": False}, {}, "seeded"]


def state_of(doc, kind):
    return StateDB(doc, allow_sql=False, seed=doc) if kind == "seeded" else StateDB(doc, **kind)


@pytest.mark.parametrize("kind", KINDS)
def test_filter_and_order_edges(kind):
    s = state_of({"c": [{"id": "\ta", "n": None}, {"id": "a", "n": 2}, {"id": "İX", "n": 1}, {"name": "b"},
                        {"id": "z", "n": -0.0}, {"id": "y", "n": 1.5}], "d": [{"n": -0.0}, {"n": 1.0}]}, kind)
    try:
        assert [r["id"] for r in s.select("c", {"id": "A "}, match="ci")] == ["a"]  # trim() takes spaces only
        assert [r.get("n") for r in s.select("c", order_by="-n")] == [2, 1.5, 1, -0.0, None, None]  # nulls last
        assert [r.get("n") for r in s.select("c", order_by="n")] == [-0.0, 1, 1.5, 2, None, None]
        assert [r.get("id") for r in s.select("c", {"absent": None, "name": None})] == ["\ta", "a", "İX", "z", "y"]
        assert s.select("d", {"n": 0.0}) == [{"n": -0.0}]  # a DOUBLE column: -0.0 equals 0.0
        assert s.select("c", {"n": 0.0}) == []  # a JSON column (numbers of two types): compared as text
        assert s.select("c", {"n": "2"}) == [] and s.select("c", {"absent": 1}) == []
        assert [r["id"] for r in s.select("c", {"id": "x a"}, match="words")] == []
        with pytest.raises(StateError, match="no field 'nope' to order by"):
            s.select("c", order_by="nope")
    finally:
        s.close()


@pytest.mark.parametrize("kind", KINDS)
def test_updates_widen_types_append_new_keys_and_filter_before_writing(kind):
    s = state_of({"c": [{"n": 1, "name": "é"}, {"n": 2}], "o": {"K1": {"id": "a"}, "k1": {"status": "x"}}}, kind)
    try:
        assert s.update("c", {"n": 1}, {"n": "one"}) == [{"n": "one", "name": "é"}]
        assert s.select("c", {"n": 2}) == [{"n": 2}] and s.select("c", {"n": "one"}) == [{"n": "one", "name": "é"}]
        assert s.update("c", {"name": "é"}, {"name": 5}) == [{"n": "one", "name": 5}]
        assert s.update("o", {"_key": "K1"}, {"Status": "new", "n": None}) == [
            {"_key": "K1", "id": "a", "Status": "new", "n": None}]
        assert s.update("c", {"n": "ONE"}, {}, match="ci") == [{"n": "one", "name": 5}]
        assert json.dumps(s.export()) == json.dumps(
            {"c": [{"n": "one", "name": 5}, {"n": 2}], "o": {"K1": {"id": "a", "Status": "new", "n": None},
                                                          "k1": {"status": "x"}}})
    finally:
        s.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_call_rolls_back_every_write_kind(kind):
    doc = {"orders": {"O-1": {"status": "open", "n": 1}}, "log": [{"a": 1}]}
    s = state_of(doc, kind)
    try:
        s.update("orders", {"_key": "O-1"}, {"status": "held"})
        columns = dict(s.collections["orders"].columns)
        with pytest.raises(RuntimeError):
            with s.transaction():
                s.update("orders", {"_key": "O-1"}, {"n": "one", "brand_new": 1})  # ALTER TYPE, ALTER ADD
                s.insert("log", {"b": [1.0]})  # a collection copied from the seed in this call
                s.insert("fresh", {"x": 1}, "k")  # a collection created in this call
                raise RuntimeError("the call failed")
        assert s.collections["orders"].columns == columns and not s.has("fresh")
        assert s.select("orders", {"n": 1}) == [{"_key": "O-1", "status": "held", "n": 1}]
        assert s.select("log") == [{"a": 1}]
        assert s.export() == {"orders": {"O-1": {"status": "held", "n": 1}}, "log": [{"a": 1}]}
        s.insert("log", {"a": 2})
        assert s.select("log") == [{"a": 1}, {"a": 2}]
    finally:
        s.close()


def test_rows_share_nothing_with_the_caller():
    """A tool's arguments (or a handler's dict) may be edited after the call, and a caller may
    edit the rows it read: the state keeps what was written."""
    doc = {"log": [], "orders": {"O-1": {"lines": [{"sku": "A"}]}}}
    s = StateDB(doc, allow_sql=False, seed=doc)
    rows = s.select("orders")
    rows[0]["lines"].append({"sku": "Z"})
    entry = {"event": "refund", "items": [{"sku": "A"}]}
    s.insert("log", entry)
    change = {"lines": [{"sku": "B"}]}
    s.update("orders", {"_key": "O-1"}, change)
    entry["items"].append({"sku": "X"}), change["lines"][0].update(sku="X")
    assert s.export() == {"log": [{"event": "refund", "items": [{"sku": "A"}]}],
                          "orders": {"O-1": {"lines": [{"sku": "B"}]}}}
    assert doc == {"log": [], "orders": {"O-1": {"lines": [{"sku": "A"}]}}}
    s.close()


def test_the_stored_size_is_bounded_from_the_first_write_scalars_included():
    """What the solver stores is measured without a query when nothing changed, and every write
    counts against `limits.state_mb` from then on: an id counter or a handler's scalar too."""
    from pibench_inspect.environment.limits import EffectLimits, StateTooLarge

    for huge in (lambda s: s.insert("log", {"x": "a" * 20_000}), lambda s: s.set_scalar("n", "b" * 20_000)):
        s = StateDB({"log": [], "n": 0}, allow_sql=False, limits=EffectLimits(state_mb=0.01))  # 10 KB
        try:
            with s.transaction():
                s.insert("log", {"x": "a" * 100})
                s.check_size()
            with pytest.raises(StateTooLarge, match="limits.state_mb"):
                with s.transaction():
                    huge(s)
                    s.check_size()
            assert s.export() == {"log": [{"x": "a" * 100}], "n": 0}
        finally:
            s.close()


def test_scenario_tables_are_shared_by_content_and_never_written():
    """A collection the scenario patched is built once per process into a shared catalog (keyed
    by its JSON text) and read there until a state writes it; a write copies it into the state's
    own catalog, so the other states (and the shared table) do not see it. Values that differ
    only in type or key order are different tables."""
    import copy

    from pibench_inspect.environment import seed as seed_mod
    from pibench_inspect.environment.duck import shared_instance as _shared_instance

    doc = {"log": [{"a": 1, "b": "x"}, {"a": 2}], "orders": {"O-1": {"status": "open"}}}
    a, b = StateDB(doc, allow_sql=False), StateDB(copy.deepcopy(doc), allow_sql=False)
    assert a.select("log") and b.select("log")
    assert a.collections["log"].source == b.collections["log"].source is not None
    a.insert("log", {"a": 3})
    a.update("orders", {"_key": "O-1"}, {"status": "closed"})
    assert a.collections["log"].source is None
    assert b.export() == doc and a.export()["log"][-1] == {"a": 3}
    c = StateDB({"log": [{"a": 1.0, "b": "x"}, {"a": 2}], "orders": {"O-1": {"status": "open"}}}, allow_sql=False)
    d = StateDB({"log": [{"b": "x", "a": 1}, {"a": 2}]}, allow_sql=False)
    c.select("log"), d.select("log")
    assert len({b.collections["log"].source, c.collections["log"].source, d.collections["log"].source}) == 3
    assert json.dumps(c.export()["log"]) == '[{"a": 1.0, "b": "x"}, {"a": 2}]'
    assert json.dumps(d.export()["log"]) == '[{"b": "x", "a": 1}, {"a": 2}]'
    # past the bound a new shared catalog starts; the old one goes once no state reads it
    old = next(iter(b._shares)).name
    saved, seed_mod.MAX_SHARED = seed_mod.MAX_SHARED, 0
    try:
        e = StateDB({"log": [{"z": 1}]}, allow_sql=False)
        e.select("log")
        assert next(iter(e._shares)).name != old
    finally:
        seed_mod.MAX_SHARED = saved
    attached = lambda: {r[0] for r in _shared_instance().execute("SELECT database_name FROM duckdb_databases()").fetchall()}
    assert old in attached()
    for s in (a, b, c, d):
        s.close()
    del a, b, c, d, s
    import gc
    gc.collect()
    StateDB({"x": []}, allow_sql=False).close()  # attaching a catalog detaches the pending ones
    assert old not in attached()
    e.close()


def test_reads_of_shared_tables_are_remembered_but_every_caller_gets_its_own_rows():
    doc = {"c": [{"n": 1, "tags": ["a"]}, {"n": True, "tags": []}, {"n": 1.0}]}
    a, b = StateDB(doc, allow_sql=False, seed=doc), StateDB(doc, allow_sql=False, seed=doc)
    first = a.select("c", {"tags": ["a"]})
    first[0]["tags"].append("changed")
    assert b.select("c", {"tags": ["a"]}) == [{"n": 1, "tags": ["a"]}]
    # the column is JSON: 1, true and 1.0 are different values, and different cached reads
    assert [r.get("tags") for r in b.select("c", {"n": True})] == [[]]
    assert [r.get("tags") for r in b.select("c", {"n": 1})] == [["a"]]
    assert b.select("c", {"n": 1.0}) == [{"n": 1.0}]
    a.insert("c", {"n": 2})  # a's own copy from now on: its reads are its own
    assert len(a.select("c")) == 4 and len(b.select("c")) == 3
    a.close(), b.close()
