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
def test_seed_plans_and_private_catalogs_round_trip(seed, patch):
    """A document merged from a seed (copy-on-write, untouched collections built from cached
    plans) exports exactly, in a private catalog and in a database of its own, and the seed is
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
    from pibench_inspect.environment.state import _shared_instance

    seed = {"orders": {"O-1": {"status": "open"}}, "log": []}
    a, b = StateDB(seed, allow_sql=False, seed=seed), StateDB(seed, allow_sql=False, seed=seed)
    a.update("orders", {"_key": "O-1"}, {"status": "closed"})
    a.insert("log", {"who": "a"})
    assert b.export() == seed and a.export()["orders"]["O-1"]["status"] == "closed"
    # caller-supplied SQL never runs in the shared instance: it could name another catalog
    with pytest.raises(StateError, match="raw SQL"):
        b.sql(f"SELECT * FROM {a._catalog}.main.orders")
    b.insert("log", {"who": "b"})
    # a catalog is attached when a table is first built (a write alone only changes the plan)
    assert b._catalog is None
    a.collection("orders"), b.collection("log")
    assert a.export()["orders"]["O-1"]["status"] == "closed" and b.export()["log"] == [{"who": "b"}]
    names = {a._catalog, b._catalog}
    assert None not in names and len(names) == 2
    a.close(), b.close()
    attached = {r[0] for r in _shared_instance().execute("SELECT database_name FROM duckdb_databases()").fetchall()}
    assert not names & attached
    # a state with raw SQL has a database of its own, where other catalogs do not exist
    c, d = StateDB(seed, allow_sql=False), StateDB(seed)
    c.insert("log", {"who": "c"})
    c.collection("log")
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


@settings(max_examples=60, deadline=None)
@given(st.lists(records, max_size=3), st.lists(records, min_size=1, max_size=3), st.booleans())
def test_inserts_before_and_after_a_table_exists_agree(seed_rows, new_rows, keyed):
    """An insert into a collection not built yet (the row joins its plan) leaves exactly the
    state an insert into a built table leaves, types and key order included."""
    doc = {"c": {f"k{i}": r for i, r in enumerate(seed_rows)} if keyed else seed_rows}
    lazy, built = StateDB(doc, allow_sql=False, seed=doc), StateDB(doc)
    built.select("c")  # builds the table first
    try:
        for i, r in enumerate(new_rows):
            key = f"n{i}" if keyed else None
            assert lazy.insert("c", r, key) == built.insert("c", r, key)
        assert json.dumps(lazy.export()) == json.dumps(built.export())
        for name in {k for r in seed_rows + new_rows for k in r}:
            assert lazy.collections["c"].columns[name] == built.collections["c"].columns[name]
    finally:
        lazy.close(), built.close()


# values a filter or a field may hold: the types a column can have, text with spaces, case and
# non-ASCII letters (DuckDB folds case its own way there), numbers as text, and nested JSON
field_values = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(-3, 3, allow_nan=False), st.sampled_from([0.0, -0.0, 1.0]),
    st.sampled_from(["a", "A", " a ", "ab c", "B", "x y", "1", "true", "İx", "é", "ä b", "\ta", ""]),
    st.lists(st.integers(0, 2), max_size=2), st.dictionaries(st.sampled_from(["k"]), st.integers(0, 2), max_size=1),
)
small_records = st.dictionaries(st.sampled_from(["id", "name", "n", "tag", "_key"]), field_values, max_size=4)
small_collections = st.one_of(
    st.lists(small_records, max_size=5),
    st.dictionaries(st.sampled_from(["K1", "k1", "K 2", "é3"]), small_records, max_size=4),
    small_records,
    st.lists(field_values, max_size=4),
)
filters = st.dictionaries(st.sampled_from(["id", "name", "n", "tag", "_key", "value", "absent"]), field_values, max_size=2)


@settings(max_examples=400, deadline=None)
# DuckDB's own edges, always tried: trim() takes spaces only, NULLS LAST in both directions,
# case folding beyond ASCII, an absent field under a null filter, -0.0 equal to 0.0
@example([{"id": "\ta"}, {"id": "a"}], {"id": "A "}, "ci", None)
@example([{"n": None}, {"n": 2}, {"n": 1}, {}], {}, "exact", "-n")
@example([{"n": None}, {"n": 2}, {"n": 1}, {}], {}, "exact", "n")
@example([{"id": "İX"}, {"id": "iy"}], {"id": "ix"}, "ci", None)
@example([{"id": "ix"}, {"id": "iy"}], {"id": "İx"}, "ci", None)
@example([{"id": "a"}, {"name": "b"}], {"absent": None, "name": None}, "exact", None)
@example([{"n": -0.0}, {"n": 1.0}], {"n": 0.0}, "exact", None)
@given(small_collections, filters, st.sampled_from(["exact", "ci", "words"]),
       st.sampled_from([None, "id", "-id", "n", "-n", "name", "-tag", "value", "absent"]))
def test_reads_of_loaded_collections_agree_with_sql(coll, where, match, order_by):
    """A never-written collection is read without SQL; every filter, match mode and order gives
    exactly the rows (and errors) the SQL path gives on the same collection as a table."""
    doc = {"c": coll}
    loaded, table = StateDB(doc, allow_sql=False), StateDB(doc, allow_sql=False)
    assume(loaded.has("c"))  # not a namespace of lists
    table._written(table.collection("c"))  # from here on `table` answers from its table
    try:
        def read(state):
            try:
                return json.dumps(state.select("c", where, match=match, order_by=order_by))
            except StateError as err:
                return f"error: {err}"

        assert read(loaded) == read(table)
        assert loaded.export() == doc  # reading changed nothing (and the rows were copies)
    finally:
        loaded.close(), table.close()


def test_a_sample_that_only_reads_never_opens_a_database():
    doc = {"orders": {"O-1": {"status": "open", "lines": [{"sku": "A"}]}}, "log": []}
    s = StateDB(doc, allow_sql=False)
    rows = s.select("orders", {"status": "OPEN"}, match="ci")
    rows[0]["lines"].append({"sku": "B"})  # the caller's copy, not the loaded value
    assert s._conn is None and s.export() == doc
    # a filter only SQL can judge (JSON text) builds the table and asks it
    assert s.select("orders", {"lines": [{"sku": "A"}]}) == s.select("orders", {"lines": [{"sku": "A"}]})
    assert s._conn is not None
    s.close()


update_values = st.dictionaries(st.sampled_from(["id", "name", "n", "status", "Status"]), field_values, max_size=3)


@settings(max_examples=300, deadline=None)
@example([{"n": 1}, {"n": 2}], {"n": 1}, {"n": "one"}, "exact")  # a type widened by the update
@example([{"name": "é"}, {"name": "e"}], {"name": "é"}, {"name": 5}, "exact")  # filter before widening
@example({"K1": {"id": "a"}, "k1": {"status": "x"}}, {"_key": "K1"}, {"Status": "new", "n": None}, "exact")
@example([{"id": "A"}, {}], {"id": "a"}, {}, "ci")  # no values: the matching rows, unchanged
@given(small_collections, filters, update_values, st.sampled_from(["exact", "ci", "words"]))
@pytest.mark.slow
def test_updates_before_and_after_a_table_exists_agree(coll, where, values, match):
    """An update of a collection not built yet (filtered on the loaded value, the table created
    once with the change) returns the same rows, and leaves the same state for later reads and
    the export, as an update of the table."""
    doc = {"c": coll}
    pending, table = StateDB(doc, allow_sql=False), StateDB(doc, allow_sql=False)
    assume(pending.has("c"))
    table._written(table.collection("c"))
    try:
        def outcome(state):
            try:
                rows = state.update("c", where, values, match=match)
            except StateError as err:
                return f"error: {err}"
            later = [state.select("c", {f: v}) for f, v in values.items()]
            return json.dumps([rows, state.export(), later])

        assert outcome(pending) == outcome(table)
    finally:
        pending.close(), table.close()



def test_a_failed_call_restores_the_columns_its_alters_added_or_widened():
    s = StateDB({"orders": {"O-1": {"status": "open", "n": 1}}}, allow_sql=False)
    s.update("orders", {"_key": "O-1"}, {"status": "held"})
    s.collection("orders")  # the table exists from here on: the ALTERs below run in SQL
    columns = dict(s.collections["orders"].columns)
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.update("orders", {"_key": "O-1"}, {"n": "one", "brand_new": 1})  # ALTER TYPE, ALTER ADD
            raise RuntimeError("the call failed")
    assert s.collections["orders"].columns == columns
    assert s.select("orders", {"n": 1}) == [{"_key": "O-1", "status": "held", "n": 1}]
    assert s.export() == {"orders": {"O-1": {"status": "held", "n": 1}}}


# one operation of a tool call: an insert, an update or a read, optionally in a call that fails
operations = st.one_of(
    st.tuples(st.just("insert"), small_records, st.sampled_from([None, "K1", "n1", "n2"])),
    st.tuples(st.just("update"), filters, update_values, st.sampled_from(["exact", "ci", "words"])),
    st.tuples(st.just("select"), filters, st.sampled_from(["exact", "ci"]), st.sampled_from([None, "n", "-id"])),
)
calls = st.lists(st.tuples(operations, st.booleans()), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@example([{"n": 1}], [(("insert", {"n": "x"}, None), False), (("select", {"n": 1}, "exact", None), False)])
@example({"K1": {"id": "a"}}, [(("insert", {"id": "b"}, "K1"), False), (("insert", {"id": "b"}, "n1"), True),
                               (("update", {"_key": "n1"}, {"n": 2}, "exact"), False)])
@example([{"id": "a"}], [(("insert", {"id": "\ud800"}, None), False), (("select", {}, "exact", None), False)])
@example([{"id": "a"}], [(("update", {"id": "a"}, {"n": [1.0]}, "exact"), False),
                         (("update", {}, {"n": {"k": 1}}, "exact"), True)])
@given(small_collections, calls)
@pytest.mark.slow
def test_write_sequences_agree_with_sql(coll, sequence):
    """Calls that write a collection whose table is never built (the rows live in its plan)
    return what the same calls return on its table, and leave the same export, failed calls
    rolled back included: the plan is the table until a statement needs the table."""
    doc = {"c": coll}
    lazy, table = StateDB(doc, allow_sql=False, seed=doc), StateDB(doc, allow_sql=False)
    assume(lazy.has("c"))
    table._written(table.collection("c"))
    try:
        def run(state, op, fails):
            try:
                with state.transaction():
                    if op[0] == "insert":
                        out = state.insert("c", op[1], op[2])
                    elif op[0] == "update":
                        out = state.update("c", op[1], op[2], match=op[3])
                    else:
                        out = state.select("c", op[1], match=op[2], order_by=op[3])
                    if fails:
                        raise RuntimeError("the call failed after its writes")
                return json.dumps(out)
            except (StateError, duckdb.Error) as err:  # a refused value is an error on both paths
                return f"error {type(err).__name__ == 'RuntimeError'}"
            except RuntimeError:
                return "failed"

        for op, fails in sequence:
            assert run(lazy, op, fails) == run(table, op, fails), op
            assert json.dumps(lazy.export()) == json.dumps(table.export())
    finally:
        lazy.close(), table.close()


def test_a_write_call_opens_no_database_transaction_until_a_statement_runs():
    s = StateDB({"orders": {"O-1": {"status": "open"}}, "log": []}, allow_sql=False)
    with s.transaction():
        s.update("orders", {"_key": "O-1"}, {"status": "held"})
        s.insert("log", {"event": "held"})
    assert s._conn is None  # no table was needed: no catalog, no BEGIN/COMMIT
    with pytest.raises(StateError, match="lone surrogate"):
        with s.transaction():
            s.insert("log", {"event": "\ud800"})  # DuckDB could never store it: refused now
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.insert("log", {"event": "second"})
            s.collection("log")  # a statement: the transaction begins here ...
            raise RuntimeError("... and is rolled back")
    assert s.export() == {"orders": {"O-1": {"status": "held"}}, "log": [{"event": "held"}]}
    s.collection("log")
    assert s.select("log") == [{"event": "held"}]
    s.close()


def test_rows_held_in_a_plan_share_nothing_with_the_caller():
    """A tool's arguments (or a handler's dict) may be edited after the call: the state keeps
    what was written, as a table would."""
    s = StateDB({"log": [], "orders": {"O-1": {"lines": []}}}, allow_sql=False)
    entry = {"event": "refund", "items": [{"sku": "A"}]}
    s.insert("log", entry)
    change = {"lines": [{"sku": "B"}]}
    s.update("orders", {"_key": "O-1"}, change)
    entry["items"].append({"sku": "X"}), change["lines"][0].update(sku="X")
    assert s.export() == {"log": [{"event": "refund", "items": [{"sku": "A"}]}],
                          "orders": {"O-1": {"lines": [{"sku": "B"}]}}}
    assert s._conn is None
    s.close()
