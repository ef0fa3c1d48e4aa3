"""A sample's state: a JSON document held in its own in-memory DuckDB database.

Mapping (also in docs/authoring.md): each top-level key is a collection. A list of objects is a
`rows` table; an object whose values are all objects is a `keyed` table (key in `_key`); an
object whose values are all lists is a namespace whose children are collections of their own
(`activity.pending_requests` -> table `activity__pending_requests`); any other object is a
one-row `record` table; a list of scalars is a `values` table; scalars live in `_scalars`.
Every table has `_pos` (document order) and `_keys` (the keys a row has, in its own order), so
`export()` returns exactly the JSON that was loaded, key order included, plus the changes made
since (a key set for the first time goes last, as in a Python dict).

All values reach SQL as bound parameters; identifiers are quoted and come from the document's
own keys, never from tool arguments.

Where a state lives (the cost of a sample): a DuckDB database instance costs ~18 ms of CPU and
~4.5 MB to open, an attached in-memory catalog ~1 ms and ~0.5 MB. So a state that never runs
caller-supplied SQL (`allow_sql=False`: a domain whose catalog has no `sql` steps) lives in a
private catalog attached to one sandboxed instance per process, dropped when the sample ends;
every statement it runs is generated here from quoted single-part identifiers on a connection
whose default catalog is its own, so it cannot name another sample's tables. A state that runs a
catalog's `sql` steps (arbitrary SQL from domain data, which could name any catalog of a shared
instance) keeps a sandboxed instance of its own, as before.

Lazy and copy-free where it can be: a collection's rows live in its table plan (`TablePlan`:
its column types and its (key, record) rows) until a statement needs its table. Reads filter
the plan's rows, inserts append to the plan and updates replace rows of it, all with the SQL
path's exact semantics: column types widen as an ALTER would, fields a row gains go last in its
key order, filters match as `_where` does. What only DuckDB can judge (a filter on JSON text or
a DOUBLE's text form, case folding beyond ASCII, an order on a JSON field, raw `sql` steps,
writes to record and value collections) builds the table with one `CREATE TABLE ... AS SELECT
unnest(?), ...` from the plan and runs in SQL from then on; the database itself is only opened
then. tests/test_state.py runs random reads, writes and failed calls on both paths and compares
every result and the export. Why: a DuckDB statement costs ~0.5-3 ms of CPU (a table creation
~2.7 ms, BEGIN and COMMIT ~0.3 ms each), and on the shipped domains' scenarios every call is
one of the simple kinds, so the DuckDB work was about a third of the engine's cost per sample.
A value DuckDB would refuse (a lone surrogate, NaN inside JSON) is refused when it is written
(`storable`), so a later statement cannot fail on an earlier call's row. A collection never
written exports the value it was loaded from without serializing it again (for collections
shared with the domain's seed, the plan and the text are made once per process); scalars live
in Python and reach the `_scalars` table only around raw SQL.

What the solver stores is `export_changes_text()`: the top-level keys and the value of each
key a tool wrote, merged over the initial document by `merge.apply_changes`.
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import os
import secrets
import threading
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterator

import duckdb

from .limits import DEFAULT_LIMITS, SHARED_MEMORY_MB, CallOverran, EffectLimits, StateTooLarge
from .once import PerObject
from .watchdog import WATCHDOG

INT64 = (-(2**63), 2**63 - 1)
SCALARS = "_scalars"

# A catalog's `sql` steps are domain data, and a domain folder is untrusted input: the database
# may touch nothing but its own tables. No file reads or writes (read_text, COPY, ATTACH of a
# file), no extension installs or auto-loads, and the settings cannot be turned back on by SQL.
SANDBOX_CONFIG = {
    "threads": 1,
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    # every statement here is generated for tables of a few hundred rows at most: planning
    # them unoptimized is ~40% cheaper per SELECT and no slower to run
    "enable_optimizer": False,
    # no temporary directory: an in-memory database otherwise spills to ./.tmp past its memory
    # limit (files written where the run was started); here it fails the statement instead
    "temp_directory": "",
    "lock_configuration": True,
}


def open_sandboxed(memory_mb: int = DEFAULT_LIMITS.memory_mb) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB database with no access outside itself (see SANDBOX_CONFIG), using at
    most `memory_mb` of memory (a statement that needs more fails: OutOfMemoryException)."""
    return duckdb.connect(":memory:", config={**SANDBOX_CONFIG, "memory_limit": f"{int(memory_mb)}MB"})


_SHARED: tuple[int, duckdb.DuckDBPyConnection] | None = None
_CATALOG_IDS = itertools.count(1)
# the shared instance's root connection is used from the tool workers' threads (and a garbage
# collector's finalizer): a DuckDB connection object must not run two statements at once
_SHARED_LOCK = threading.Lock()
_TO_DETACH: collections.deque[str] = collections.deque()  # catalogs of closed states


def _shared_instance() -> duckdb.DuckDBPyConnection:
    """This process's sandboxed instance that holds the private catalogs (a forked child opens
    its own: a DuckDB instance must not cross a fork)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED[0] != os.getpid():
            _SHARED = (os.getpid(), open_sandboxed(SHARED_MEMORY_MB))
        return _SHARED[1]


def open_private_catalog() -> tuple[duckdb.DuckDBPyConnection, str]:
    """A fresh in-memory catalog in the shared instance and a connection of its own whose
    default catalog it is (unqualified names resolve there and nowhere else)."""
    root = _shared_instance()
    name = f"pibench_{next(_CATALOG_IDS)}_{secrets.token_hex(4)}"
    with _SHARED_LOCK:
        _detach_pending(root)
        root.execute(f"ATTACH ':memory:' AS {q(name)}")
        conn = root.cursor()
    conn.execute(f"USE {q(name)}")
    return conn, name


def _drop_catalog(root: duckdb.DuckDBPyConnection, conn: duckdb.DuckDBPyConnection, name: str) -> None:
    try:
        conn.close()  # an open transaction is rolled back
    except Exception:
        pass
    _TO_DETACH.append(name)
    # never wait for the lock: a finalizer may run in a thread that holds it (a garbage
    # collection during a statement); then the next catalog opened detaches this one
    if _SHARED_LOCK.acquire(blocking=False):
        try:
            _detach_pending(root)
        finally:
            _SHARED_LOCK.release()


def _detach_pending(root: duckdb.DuckDBPyConnection) -> None:
    """Detach the catalogs of closed states (the caller holds _SHARED_LOCK)."""
    while _TO_DETACH:
        name = _TO_DETACH.popleft()
        try:
            root.execute(f"DETACH DATABASE IF EXISTS {q(name)}")
        except Exception:  # the instance is already gone (interpreter shutdown)
            pass


class _NeedsSql(Exception):
    """A value the SQL-free read cannot judge as DuckDB would (non-ASCII text to fold)."""


class StateError(Exception):
    """A state operation that cannot be carried out (reported to the agent as a tool error)."""


def q(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def value_type(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "BOOLEAN"
    if isinstance(v, int):
        return "BIGINT" if INT64[0] <= v <= INT64[1] else "JSON"
    if isinstance(v, float):
        return "DOUBLE"
    if isinstance(v, str):
        return "VARCHAR"
    return "JSON"


def column_type(values: list[Any]) -> str:
    kinds = {value_type(v) for v in values} - {None}
    return kinds.pop() if len(kinds) == 1 else "JSON"


def fits(sql_type: str, v: Any) -> bool:
    return v is None or sql_type == "JSON" or value_type(v) == sql_type


def _json_storable(v: Any) -> bool:
    """Whether DuckDB's JSON type takes `json.dumps(v)`: no lone surrogate, no NaN/Infinity."""
    if isinstance(v, str):
        return utf8(v)
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, dict):
        return all(utf8(k) and _json_storable(x) for k, x in v.items())
    if isinstance(v, list):
        return all(_json_storable(x) for x in v)
    return True


def utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON text may escape one)
        return False
    return True


def storable(path: str, key: str | None, values: dict[str, Any], columns: dict[str, str]) -> None:
    """Refuse, as creating the table would, a row DuckDB cannot hold: a row written to a
    collection whose table is not built yet reaches DuckDB only later (if ever), and a value it
    rejects must fail the call that wrote it, not a later one."""
    if key is not None and not utf8(key):
        raise StateError(f"collection {path!r}: the key is not valid UTF-8 text")
    for name, v in values.items():
        if not utf8(name):
            raise StateError(f"collection {path!r}: a field name is not valid UTF-8 text")
        ok = _json_storable(v) if columns.get(name) == "JSON" else not isinstance(v, str) or utf8(v)
        if not ok:
            raise StateError(f"collection {path!r}: field {name!r} holds a value the state cannot store "
                             "(a lone surrogate, or NaN/Infinity inside JSON)")


@dataclass
class Collection:
    path: str
    kind: str  # rows | keyed | record | values
    table: str
    columns: dict[str, str] = field(default_factory=dict)  # logical name -> SQL type
    physical: dict[str, str] = field(default_factory=dict)  # logical name -> column name

    def col(self, name: str) -> str:
        return q(self.physical[name])


def _classify(value: Any) -> str:
    if isinstance(value, list):
        return "rows" if all(isinstance(x, dict) for x in value) else "values"
    if isinstance(value, dict):
        if not value:
            return "keyed"
        if all(isinstance(x, dict) for x in value.values()):
            return "keyed"
        if all(isinstance(x, list) for x in value.values()):
            return "namespace"
        return "record"
    return "scalar"


@dataclass(frozen=True)
class TablePlan:
    """A collection whose table is not built: its columns and its rows, which are the
    collection's content until the table is created from them. The parameter lists for that
    are only built then (most collections never are, and building them was ~4 ms a sample)."""

    kind: str
    columns: dict[str, str]  # logical name -> SQL type, in first-seen order
    physical: dict[str, str]  # logical name -> column name
    rows: list[tuple[str | None, dict[str, Any]]]  # (key, record) in document order; never edited

    @cached_property
    def params(self) -> list[list[Any]]:
        """_pos, _key, _keys, then one list per column, typed as `columns`."""
        return _plan_params(self.rows, self.columns)


def table_plan(kind: str, value: Any) -> TablePlan:
    if kind == "rows":
        records: list[dict[str, Any]] = list(value)
        keys: list[str | None] = [None] * len(records)
    elif kind == "keyed":
        records, keys = list(value.values()), list(value.keys())
    elif kind == "record":
        records, keys = [value], [None]
    else:  # values
        records, keys = [{"value": v} for v in value], [None] * len(value)
    coll = Collection(path="", kind=kind, table="")
    names: list[str] = []
    for r in records:
        for k in r:
            if k not in coll.columns:
                coll.columns[k] = "?"
                names.append(k)
    for k in names:
        coll.columns[k] = column_type([r.get(k) for r in records])
    for k in names:
        coll.physical[k] = StateDB._column_name(coll, k)
    return TablePlan(kind, coll.columns, coll.physical, list(zip(keys, records)))


def _plan_params(rows: list[tuple[str | None, dict[str, Any]]], columns: dict[str, str]) -> list[list[Any]]:
    """A plan's parameters: _pos, _key, _keys, then one list per column, typed as `columns`."""
    params: list[list[Any]] = [list(range(len(rows))), [k for k, _ in rows], [list(r) for _, r in rows]]
    for k, sql_type in columns.items():
        params.append([StateDB._param(sql_type, r.get(k)) for _, r in rows])
    return params


def _plan_with_types(
    kind: str, rows: list[tuple[str | None, dict[str, Any]]], columns: dict[str, str], base: TablePlan
) -> TablePlan:
    """A plan for `rows` with the given column types (the plan's own, widened or extended as an
    update's ALTERs would) and the base plan's physical names, new fields named after them."""
    physical = dict(base.physical)
    coll = Collection(path="", kind=kind, table="", columns=dict(columns), physical=physical)
    for k in columns:
        if k not in physical:
            physical[k] = StateDB._column_name(coll, k)
    return TablePlan(kind, dict(columns), physical, list(rows))


def _widened(columns: dict[str, str], values: dict[str, Any]) -> dict[str, str]:
    """`columns` after writing `values`, typed as `StateDB._ensure_column` would type the table
    (a new field takes its value's type; a value that does not fit widens to JSON)."""
    out = dict(columns)
    for name, v in values.items():
        if name not in out:
            out[name] = value_type(v) or "JSON"
        elif not fits(out[name], v):
            out[name] = "JSON"
    return out


def plan_with_row(plan: TablePlan, key: str | None, row: dict[str, Any]) -> TablePlan:
    """`plan` with one more row at the end, its columns widened for it. The plan may be a
    cached seed plan: it is never changed."""
    return _plan_with_types(plan.kind, [*plan.rows, (key, _owned(row))], _widened(plan.columns, row), plan)


def _owned(values: dict[str, Any]) -> dict[str, Any]:
    """`values` as a table would hold them: nested values as their JSON round trip, so a plan
    shares nothing with the caller (a tool call's arguments) and holds what SQL would read back."""
    return {k: json.loads(json.dumps(v)) if isinstance(v, (dict, list)) else v for k, v in values.items()}


def _make_seed_plans(seed: dict[str, Any]) -> dict[tuple[str, ...], TablePlan]:
    plans: dict[tuple[str, ...], TablePlan] = {}

    def walk(path: list[str], value: Any) -> None:
        kind = _classify(value)
        if kind == "namespace":
            for k, v in value.items():
                walk(path + [k], v)
        elif kind != "scalar":
            plans[tuple(path)] = table_plan(kind, value)

    for key, value in seed.items():
        walk([key], value)
    return plans


# Table plans of a domain's seed collections, built once per process: a sample whose document
# shares a collection with the seed (copy-on-write merge) only runs the CREATE.
seed_plans = PerObject(_make_seed_plans, max_entries=64)

# The JSON text of a seed collection, made once per process (seeds are never changed: samples
# copy on write).
seed_text = PerObject(json.dumps)


def _copy_layout(layout: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [(k, _copy_layout(v) if isinstance(v, list) else v) for k, v in layout]


class StateDB:
    """One sample's state. Not shared: every sample builds its own from the document.

    `allow_sql`: whether `sql()` (caller-supplied SQL) may run; only then does the state need a
    database instance of its own (see the module docstring). `seed`: the domain seed the
    document was merged from, whose untouched collections are built from cached plans.
    """

    def __init__(
        self, document: dict[str, Any], *, allow_sql: bool = True, seed: dict[str, Any] | None = None,
        limits: EffectLimits = DEFAULT_LIMITS,
    ):
        self.allow_sql = allow_sql
        self.limits = limits
        # the call in flight (see `bounded`): its marker, whether it ran past its deadline, and
        # a lock held while it runs (a call runs in a worker thread; `settle` waits for it)
        self._call: object | None = None
        self._overran = False
        self._guard = threading.Lock()
        self._busy = threading.Lock()
        # the size of what the solver would store, as last measured (None: not known), and an
        # upper bound of what generated writes added since (see check_size)
        self._size_known: int | None = None
        self._growth = 0
        self._catalog: str | None = None
        self._finalizer: Any = None
        self._conn: duckdb.DuckDBPyConnection | None = None
        self._closed = False
        self.collections: dict[str, Collection] = {}
        # document shape for export: top-level keys in order; namespaces hold child keys
        self.layout: list[tuple[str, Any]] = []
        self._tables: set[str] = set()
        self._seed = seed
        self._seed_plans = seed_plans(seed) if seed is not None else {}
        # collections without a table (path -> plan: their content until the table is built);
        # values of collections never written (path -> the loaded value, which export returns
        # as it is); scalars as JSON text, by key
        self._pending: dict[str, TablePlan] = {}
        self._pristine: dict[str, Any] = {}
        self._scalars: dict[str, str] = {}
        self._reads_only = False
        # inside a write transaction: "wanted" until a statement runs, then "open" (see conn)
        self._tx: str | None = None
        # top-level keys whose value may differ from the loaded document's (see export_changes)
        self._dirty: set[str] = set()
        for key, value in document.items():
            self.layout.append((key, self._load(key, [key], value)))

    @property
    def conn(self) -> duckdb.DuckDBPyConnection:
        """The state's database, opened on first use: a sample that only reads answers from the
        loaded values (see `select`) and never needs one."""
        if self._overran:
            raise CallOverran()  # the call's deadline passed: no further statement runs
        if self._conn is None:
            if self._closed:
                raise StateError("this state is closed")
            if self.allow_sql:
                # a database of its own; a single worker thread keeps per-sample memory low
                self._conn = open_sandboxed(self.limits.memory_mb)
            else:
                self._conn, self._catalog = open_private_catalog()
                self._finalizer = weakref.finalize(
                    self, _drop_catalog, _shared_instance(), self._conn, self._catalog
                )
        if self._tx == "wanted":
            # a write call's database transaction begins with its first statement: most write
            # calls only change collections whose tables are not built, and run none
            self._tx = "open"
            self._conn.execute("BEGIN TRANSACTION")
        return self._conn

    def _seed_value(self, path: list[str]) -> Any:
        node: Any = self._seed
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    # ------------------------------------------------------------------ building

    def _load(self, key: str, path: list[str], value: Any) -> Any:
        dotted = ".".join(path)
        plan = self._seed_plans.get(tuple(path))
        if plan is not None and self._seed_value(path) is value:
            # the very collection of the seed, untouched by the scenario's patch
            self._create(dotted, plan.kind, value, plan)
            return "collection"
        kind = _classify(value)
        if kind == "scalar" and len(path) == 1:
            self._scalars[key] = json.dumps(value)
            return "scalar"
        if kind == "namespace":
            return [(k, self._load(k, path + [k], v)) for k, v in value.items()]
        if kind == "scalar":  # nested scalars only occur inside namespaces of lists
            raise StateError(f"unexpected scalar at {dotted}")
        self._create(dotted, kind, value)
        return "collection"

    def _table_name(self, path: str) -> str:
        base = path.replace(".", "__") or "_blank"
        name, n = base, 2
        while name.lower() in self._tables or name.lower() == SCALARS:
            name, n = f"{base}_{n}", n + 1
        self._tables.add(name.lower())
        return name

    def _create(self, path: str, kind: str, value: Any, plan: TablePlan | None = None) -> Collection:
        """Register a collection; its table is created on first use (`_materialize`)."""
        plan = plan or table_plan(kind, value)
        coll = Collection(
            path=path, kind=kind, table=self._table_name(path),
            columns=dict(plan.columns), physical=dict(plan.physical),
        )
        self.collections[path] = coll
        self._pending[path] = plan
        self._pristine[path] = value
        return coll

    def _materialize(self, coll: Collection) -> None:
        plan = self._pending.pop(coll.path, None)
        if plan is None:
            return
        # one statement: every column arrives as one list parameter and is unnested in step;
        # the plan's column types, not the collection's (which later writes may have widened)
        cols = ["unnest(?::BIGINT[]) AS _pos", "unnest(?::VARCHAR[]) AS _key", "unnest(?::VARCHAR[][]) AS _keys"]
        for k, sql_type in plan.columns.items():
            if sql_type == "JSON":  # JSON text travels as VARCHAR and is cast row by row
                cols.append(f"unnest(?::VARCHAR[])::JSON AS {coll.col(k)}")
            else:
                cols.append(f"unnest(?::{sql_type}[]) AS {coll.col(k)}")
        self.conn.execute(f"CREATE TABLE {q(coll.table)} AS SELECT {', '.join(cols)}", plan.params)

    def _written(self, coll: Collection) -> None:
        """The collection is about to change: it no longer exports as the value it was loaded
        from (its rows are its plan's until its table exists, then the table's)."""
        if self._reads_only:
            raise StateError(f"a read-only call cannot change {coll.path!r}")
        self._pristine.pop(coll.path, None)
        self._dirty.add(coll.path.split(".", 1)[0])

    def _insert_rows(
        self, coll: Collection, rows: list[tuple[str | None, dict[str, Any]]], first_pos: int = 0
    ) -> None:
        """Load many rows with one statement per chunk (a statement per row dominated setup)."""
        names = list(coll.columns)
        one = "(" + ", ".join(["?", "?", "?"] + ["?::JSON" if coll.columns[k] == "JSON" else "?" for k in names]) + ")"
        cols = ", ".join(["_pos", "_key", "_keys"] + [coll.col(k) for k in names])
        chunk = max(1, 2000 // (len(names) + 3))  # keep each statement's parameter count modest
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            params: list[Any] = []
            for pos, (key, r) in enumerate(part, first_pos + start):
                params += [pos, key, list(r)] + [self._param(coll.columns[k], r.get(k)) for k in names]
            self.conn.execute(
                f"INSERT INTO {q(coll.table)} ({cols}) VALUES {', '.join([one] * len(part))}", params
            )

    def _insert_row(self, coll: Collection, pos: int, key: str | None, r: dict[str, Any]) -> None:
        """Append one row, widening or adding columns its values need."""
        for k, v in r.items():
            self._ensure_column(coll, k, v)
        self._insert_rows(coll, [(key, r)], first_pos=pos)

    @staticmethod
    def _column_name(coll: Collection, name: str) -> str:
        """The SQL column for a key: the key itself unless it clashes (DuckDB identifiers are
        case-insensitive) or is empty."""
        taken = {p.lower() for p in coll.physical.values()} | {"_pos", "_key", "_keys"}
        base = name or "_blank"
        phys, n = base, 2
        while phys.lower() in taken:
            phys, n = f"{base}__{n}", n + 1
        return phys

    @staticmethod
    def _param(sql_type: str, v: Any) -> Any:
        if v is None:
            return None
        return json.dumps(v) if sql_type == "JSON" else v

    def _ensure_column(self, coll: Collection, name: str, v: Any) -> None:
        if name not in coll.columns:
            phys = self._column_name(coll, name)
            sql_type = value_type(v) or "JSON"
            # new dicts, not edits: a transaction's snapshot keeps the old ones
            coll.columns = {**coll.columns, name: sql_type}
            coll.physical = {**coll.physical, name: phys}
            # rows that existed before do not list this key in `_keys`: it stays absent for them
            self.conn.execute(f"ALTER TABLE {q(coll.table)} ADD COLUMN {q(phys)} {sql_type}")
        elif not fits(coll.columns[name], v):
            self.conn.execute(
                f"ALTER TABLE {q(coll.table)} ALTER {coll.col(name)} SET DATA TYPE JSON "
                f"USING to_json({coll.col(name)})"
            )
            coll.columns = {**coll.columns, name: "JSON"}

    # ------------------------------------------------------------------ reading

    def collection(self, path: str) -> Collection:
        """The collection at `path`, its table created."""
        try:
            coll = self.collections[path]
        except KeyError:
            known = ", ".join(sorted(self.collections)) or "none"
            raise StateError(f"no collection {path!r} in the state (known: {known})") from None
        self._materialize(coll)
        return coll

    def has(self, path: str) -> bool:
        return path in self.collections

    def _rows(self, coll: Collection, where_sql: str, params: list[Any], order: str) -> list[dict]:
        """Rows as dicts; a keyed collection's key is added as `_key` (unless a field has that name)."""
        out = []
        for key, rec in self._keyed_rows(coll, where_sql, params, order):
            if coll.kind == "keyed" and "_key" not in rec:
                rec = {"_key": key, **rec}
            out.append(rec)
        return out

    def _keyed_rows(
        self, coll: Collection, where_sql: str, params: list[Any], order: str
    ) -> list[tuple[str | None, dict]]:
        names = list(coll.columns)
        cols = ["_key", "_keys"] + [coll.col(k) for k in names]
        cur = self.conn.execute(
            f"SELECT {', '.join(cols)} FROM {q(coll.table)}{where_sql} ORDER BY {order}", params
        )
        out = []
        for n, row in enumerate(cur.fetchall()):
            if n % 1024 == 1023:
                self.check_deadline()
            key, present = row[0], row[1] or []
            values = dict(zip(names, row[2:]))
            rec: dict[str, Any] = {}
            for name in present:
                v = values.get(name)
                if coll.columns.get(name) == "JSON" and v is not None:
                    v = json.loads(v)
                rec[name] = v
            out.append((key, rec))
        return out

    def _where(self, coll: Collection, where: dict[str, Any], match: str) -> tuple[str, list[Any]]:
        parts, params = [], []
        for name, v in where.items():
            if name == "_key" and coll.kind == "keyed":
                expr, sql_type = "_key", "VARCHAR"
            elif name in coll.columns:
                expr, sql_type = coll.col(name), coll.columns[name]
            else:
                # a field no row has: only a null filter can match it
                parts.append("TRUE" if v is None else "FALSE")
                continue
            if v is None:
                parts.append(f"{expr} IS NULL")
            elif match == "words":
                # every word of the value is in the field (case-insensitive), each a bound parameter
                text = expr if sql_type != "JSON" else f"json_extract_string({expr}, '$')"
                words = str(v).lower().split()
                parts.extend([f"contains(lower(CAST({text} AS VARCHAR)), ?)"] * len(words) or ["FALSE"])
                params.extend(words)
            elif match == "ci":
                text = expr if sql_type != "JSON" else f"json_extract_string({expr}, '$')"
                parts.append(f"lower(trim(CAST({text} AS VARCHAR))) = lower(trim(?))")
                params.append(str(v).lower() if isinstance(v, bool) else str(v))
            elif sql_type == "JSON":
                parts.append(f"CAST({expr} AS VARCHAR) = ?")
                params.append(json.dumps(v))
            elif fits(sql_type, v):
                parts.append(f"{expr} = ?")
                params.append(v)
            else:
                parts.append("FALSE")
        return (" WHERE " + " AND ".join(parts) if parts else ""), params

    def select(
        self,
        path: str,
        where: dict[str, Any] | None = None,
        *,
        match: str = "exact",
        order_by: str | None = None,
    ) -> list[dict[str, Any]]:
        if path in self._pending:
            try:
                rows = self._select_loaded(self.collections[path], where or {}, match, order_by)
            except _NeedsSql:
                rows = None
            if rows is not None:
                return rows
        coll = self.collection(path)
        where_sql, params = self._where(coll, where or {}, match)
        order = "_pos"
        if order_by:
            name = order_by.lstrip("-")
            if name not in coll.columns:
                raise StateError(f"collection {path!r} has no field {name!r} to order by")
            order = f"{coll.col(name)} {'DESC' if order_by.startswith('-') else 'ASC'}, _pos"
        return self._rows(coll, where_sql, params, order)

    # ------------------------------------------------------------------ reading without SQL

    def _select_loaded(
        self, coll: Collection, where: dict[str, Any], match: str, order_by: str | None
    ) -> list[dict[str, Any]] | None:
        """`select` on a collection whose table is not built, answered from its plan's rows
        with exactly the SQL path's semantics (`_where`, ORDER BY ... NULLS LAST, _pos), or None
        where those semantics are DuckDB's own (JSON text, a DOUBLE's text form, non-ASCII
        case folding): the caller then builds the table and asks SQL.

        Why: a statement costs ~1 ms of CPU and building a table ~2.7 ms, and most collections
        a sample touches are only ever read (tests/test_state.py checks both paths agree)."""
        loaded = self._pending[coll.path].rows
        hits = self._loaded_matches(coll, loaded, where, match)
        if hits is None:
            return None
        rows = [loaded[i] for i in hits]
        if order_by:
            name = order_by.lstrip("-")
            if name not in coll.columns:
                raise StateError(f"collection {coll.path!r} has no field {name!r} to order by")
            if coll.columns[name] == "JSON":
                return None
            # NULLS LAST in both directions; ties keep document order (the sort is stable)
            nulls = [r for r in rows if r[1].get(name) is None]
            rows = sorted((r for r in rows if r[1].get(name) is not None),
                          key=lambda r: r[1][name], reverse=order_by.startswith("-")) + nulls
        return [self._result_row(coll, key, rec) for key, rec in rows]

    def _loaded_matches(
        self, coll: Collection, loaded: list[tuple[str | None, dict[str, Any]]], where: dict[str, Any], match: str
    ) -> list[int] | None:
        """Positions of the loaded rows `where` selects, as `_where` would; None: SQL's own."""
        tests = []
        for name, v in where.items():
            test = self._loaded_test(coll, name, v, match)
            if test is None:
                return None
            tests.append(test)
        return [i for i, (key, rec) in enumerate(loaded) if all(t(key, rec) for t in tests)]

    @staticmethod
    def _result_row(coll: Collection, key: str | None, rec: dict[str, Any]) -> dict[str, Any]:
        """A row as `_rows` returns it, copied: the loaded value is the scenario's (and the
        seed's), and callers may edit rows."""
        rec = _owned(rec)
        return {"_key": key, **rec} if coll.kind == "keyed" and "_key" not in rec else rec

    @staticmethod
    def _loaded_test(coll: Collection, name: str, v: Any, match: str) -> Any:
        """One `where` entry as a test of (key, record), mirroring `_where`; None: SQL's own."""
        if name == "_key" and coll.kind == "keyed":
            sql_type, read = "VARCHAR", (lambda key, rec: key)
        elif name in coll.columns:
            sql_type, read = coll.columns[name], (lambda key, rec: rec.get(name))
        else:
            return lambda key, rec: v is None  # no row has the field: only a null filter matches
        if v is None:
            return lambda key, rec: read(key, rec) is None
        if match in ("words", "ci"):
            if sql_type not in ("VARCHAR", "BIGINT", "BOOLEAN"):
                return None  # a DOUBLE's or a JSON value's text form is DuckDB's
            needle = str(v).lower() if match == "words" or isinstance(v, bool) else str(v)
            if not needle.isascii():
                return None  # DuckDB folds case its own way beyond ASCII

            def text(key: Any, rec: Any) -> str | None:
                """The field as SQL's CAST(... AS VARCHAR); None for null (no match)."""
                x = read(key, rec)
                if x is None:
                    return None
                t = ("true" if x else "false") if isinstance(x, bool) else str(x)
                if not t.isascii():
                    raise _NeedsSql  # DuckDB folds case its own way beyond ASCII
                return t

            if match == "words":
                words = needle.split()

                def has_words(key: Any, rec: Any) -> bool:
                    t = text(key, rec)
                    return t is not None and bool(words) and all(w in t.lower() for w in words)

                return has_words
            want = needle.strip(" ").lower()  # DuckDB's trim() takes spaces only

            def same_ci(key: Any, rec: Any) -> bool:
                t = text(key, rec)
                return t is not None and t.strip(" ").lower() == want

            return same_ci
        if sql_type == "JSON":
            return None  # compared as DuckDB's JSON text
        if not fits(sql_type, v):
            return lambda key, rec: False
        return lambda key, rec: (x := read(key, rec)) is not None and x == v

    def get_scalar(self, key: str, default: Any = None) -> Any:
        text = self._scalars.get(key)
        return default if text is None else json.loads(text)

    # ------------------------------------------------------------------ writing

    def set_scalar(self, key: str, value: Any) -> None:
        if key not in self._scalars:
            self.layout.append((key, "scalar"))
        self._scalars[key] = json.dumps(value)
        self._dirty.add(key)

    def insert(self, path: str, values: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        row = self._insert(path, values, key)
        self._grew(values, 1, key)
        return row

    def _insert(self, path: str, values: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        if not self.has(path):
            if "." in path:
                raise StateError(f"no collection {path!r} in the state")
            self.layout.append((path, "collection"))
            self._create(path, "keyed" if key is not None else "rows", {} if key else [])
        coll = self.collections[path] if path in self._pending else self.collection(path)
        if coll.path in self._pending and coll.kind in ("rows", "keyed") and not self._reads_only:
            return self._insert_pending(coll, values, key)
        self._written(coll)
        if coll.kind == "keyed":
            if key is None:
                raise StateError(f"collection {path!r} is keyed: an insert needs a key")
            if self.select(path, {"_key": str(key)}):
                raise StateError(f"collection {path!r} already has key {key!r}")
        elif coll.kind not in ("rows", "values"):
            raise StateError(f"cannot insert into {coll.kind} collection {path!r}")
        self._materialize(coll)
        pos = self.conn.execute(f"SELECT coalesce(max(_pos) + 1, 0) FROM {q(coll.table)}").fetchone()
        self._insert_row(coll, pos[0], None if key is None else str(key), values)
        row = dict(values)
        return {"_key": str(key), **row} if coll.kind == "keyed" else row

    def _insert_pending(self, coll: Collection, values: dict[str, Any], key: str | None) -> dict[str, Any]:
        """Insert into a collection whose table is not built: the row joins its plan, typed as
        the ALTERs of the SQL path would type it (no statement instead of a table creation,
        an ALTER per new column, a position query and an INSERT)."""
        plan = self._pending[coll.path]
        key_text = None if key is None else str(key)
        if coll.kind == "keyed":
            if key is None:
                raise StateError(f"collection {coll.path!r} is keyed: an insert needs a key")
            if any(k == key_text for k, _ in plan.rows):
                raise StateError(f"collection {coll.path!r} already has key {key!r}")
        plan = plan_with_row(plan, key_text, values)
        storable(coll.path, key_text, values, plan.columns)
        self._pending[coll.path] = plan
        coll.columns, coll.physical = dict(plan.columns), dict(plan.physical)
        self._written(coll)
        row = dict(values)
        return {"_key": str(key), **row} if coll.kind == "keyed" else row

    def update(
        self, path: str, where: dict[str, Any], values: dict[str, Any], *, match: str = "exact"
    ) -> list[dict[str, Any]]:
        rows = self._update(path, where, values, match=match)
        self._grew(values, len(rows))
        return rows

    def _update(
        self, path: str, where: dict[str, Any], values: dict[str, Any], *, match: str = "exact"
    ) -> list[dict[str, Any]]:
        if "_key" in values:
            raise StateError("the key of a keyed collection cannot be changed")
        if path in self._pending and not self._reads_only:
            try:
                rows = self._update_pending(self.collections[path], where, values, match)
            except _NeedsSql:
                rows = None
            if rows is not None:
                return rows
        coll = self.collection(path)
        self._written(coll)
        # select the targets first, on the fields as they are: an update may change the fields
        # the filter reads, and widen their type (a JSON column compares as text)
        where_sql, where_params = self._where(coll, where, match)
        targets = [
            r[0]
            for r in self.conn.execute(
                f"SELECT _pos FROM {q(coll.table)}{where_sql} ORDER BY _pos", where_params
            ).fetchall()
        ]
        for name, v in values.items():
            self._ensure_column(coll, name, v)
        if not targets or not values:
            return self._by_pos(coll, targets)
        sets, params = [], []
        for name, v in values.items():
            sets.append(f"{coll.col(name)} = " + ("?::JSON" if coll.columns[name] == "JSON" else "?"))
            params.append(self._param(coll.columns[name], v))
        # keys a row did not have yet are appended to its key order
        sets.append(
            "_keys = list_concat(_keys, list_filter(?, lambda x: NOT list_contains(_keys, x)))"
        )
        params.append(list(values))
        params.append(targets)
        self.conn.execute(
            f"UPDATE {q(coll.table)} SET {', '.join(sets)} WHERE list_contains(?, _pos)", params
        )
        return self._by_pos(coll, targets)

    def _update_pending(
        self, coll: Collection, where: dict[str, Any], values: dict[str, Any], match: str
    ) -> list[dict[str, Any]] | None:
        """Update a collection whose table is not built: the filter runs on its plan's rows and
        the plan takes the changed rows (no statement instead of a table creation, an ALTER per
        new field, a SELECT, an UPDATE and a SELECT back). None where the SQL path must decide
        (a filter only DuckDB judges; a state that runs raw SQL, whose statements name physical
        columns).

        Same outcome as the SQL path: fields a row did not have go last in its key order, a
        field's type widens to JSON when a value does not fit, new fields take their value's
        type (tests/test_state.py compares both paths)."""
        if self.allow_sql or coll.kind not in ("rows", "keyed"):
            return None
        plan = self._pending[coll.path]
        loaded = plan.rows
        targets = self._loaded_matches(coll, loaded, where, match)
        if targets is None:
            return None
        columns = _widened(plan.columns, values)  # the table the SQL path has after its ALTERs
        if targets:
            storable(coll.path, None, values, columns)
        hit = set(targets)
        values = _owned(values)
        changed = [(key, {**rec, **values}) if i in hit else (key, rec) for i, (key, rec) in enumerate(loaded)]
        self._pending[coll.path] = _plan_with_types(coll.kind, changed, columns, plan)
        coll.columns = dict(self._pending[coll.path].columns)
        coll.physical = dict(self._pending[coll.path].physical)
        self._written(coll)
        return [self._result_row(coll, *changed[i]) for i in targets]

    def _by_pos(self, coll: Collection, positions: list[int]) -> list[dict[str, Any]]:
        if not positions:
            return []
        return self._rows(coll, " WHERE list_contains(?, _pos)", [positions], "_pos")

    def sql(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Raw parameterized SQL (`$name` placeholders). Returns rows as dicts."""
        if not self.allow_sql:
            # a catalog in the shared instance: caller-supplied SQL could name other catalogs
            raise StateError("this state was opened without raw SQL (allow_sql=False)")
        if self._reads_only:
            raise StateError("a read-only call cannot run raw SQL")
        self._size_known = None  # the statement may write anything: measure again
        # the statement may read or write any table: every table exists and none is pristine
        # afterwards, and the scalars go through their table
        for coll in list(self.collections.values()):
            self._written(coll)
            self._materialize(coll)
        self._dirty.update(self._scalars)
        self.conn.execute(
            f"CREATE OR REPLACE TABLE {SCALARS} AS SELECT unnest(?::BIGINT[]) AS _pos, "
            "unnest(?::VARCHAR[]) AS key, unnest(?::VARCHAR[])::JSON AS value",
            [list(range(len(self._scalars))), list(self._scalars), list(self._scalars.values())],
        )
        cur = self.conn.execute(query, params or {})
        rows = []
        if cur.description is not None:
            names = [d[0] for d in cur.description]
            fetched = cur.fetchmany(self.limits.sql_rows + 1)
            if len(fetched) > self.limits.sql_rows:
                raise StateError(f"the statement returned more than {self.limits.sql_rows} rows "
                                 "(the domain's limits.sql_rows)")
            for n, row in enumerate(fetched):
                if n % 1024 == 1023:
                    self.check_deadline()
                rows.append({k: v for k, v in zip(names, row) if k not in ("_pos", "_keys")})
        for key, value in self.conn.execute(f"SELECT key, CAST(value AS VARCHAR) FROM {SCALARS}").fetchall():
            if key in self._scalars:  # a scalar the statement added has no place in the layout
                self._scalars[key] = value if value is not None else "null"
        return rows

    # ------------------------------------------------------------------ JSON-level access

    def _node(self, parts: list[str]) -> tuple[list[tuple[str, Any]], int] | None:
        level = self.layout
        for depth, part in enumerate(parts):
            idx = next((i for i, (k, _) in enumerate(level) if k == part), None)
            if idx is None:
                return None
            if depth == len(parts) - 1:
                return level, idx
            node = level[idx][1]
            if not isinstance(node, list):
                return None
            level = node
        return None

    def get(self, path: str, default: Any = None) -> Any:
        """The JSON value at a top-level key or a namespace child (`activity.pending_requests`)."""
        parts = path.split(".")
        found = self._node(parts)
        if found is None:
            return default
        level, idx = found
        key, node = level[idx]
        if node == "scalar":
            return self.get_scalar(key, default)
        if isinstance(node, list):
            value = self._export_level(node, parts, {})
        else:
            value = self._export_collection(self.collections[path])
        # a copy: a never-written collection's value is the loaded document's own (and the
        # seed's), which a handler's in-place edit must not reach
        return json.loads(json.dumps(value, default=str))

    def _drop(self, parts: list[str], node: Any) -> None:
        if node == "scalar":
            self._scalars.pop(parts[-1], None)
        elif isinstance(node, list):
            for k, child in node:
                self._drop(parts + [k], child)
        else:
            coll = self.collections.pop(".".join(parts))
            self._pristine.pop(coll.path, None)
            if self._pending.pop(coll.path, None) is None:
                self.conn.execute(f"DROP TABLE {q(coll.table)}")
            self._tables.discard(coll.table.lower())

    def put(self, path: str, value: Any) -> None:
        """Replace (or create) the JSON value at a top-level key or a namespace child.

        For handlers that reproduce the original's in-place JSON edits; the value is reloaded
        into tables with the usual mapping, in the same position of the document.
        """
        if self._reads_only:
            raise StateError(f"a read-only call cannot change {path!r}")
        self._size_known = None  # a whole value replaced: measure again
        parts = path.split(".")
        self._dirty.add(parts[0])
        found = self._node(parts)
        if found is None:
            if len(parts) == 1:
                self.layout.append((path, None))
                found = (self.layout, len(self.layout) - 1)
            else:
                parent = self._node(parts[:-1])
                if parent is None or not isinstance(parent[0][parent[1]][1], list):
                    raise StateError(f"no namespace {'.'.join(parts[:-1])!r} to put {path!r} into")
                children = parent[0][parent[1]][1]
                children.append((parts[-1], None))
                found = (children, len(children) - 1)
        level, idx = found
        if level[idx][1] is not None:
            self._drop(parts, level[idx][1])
        if len(parts) > 1 and _classify(value) == "scalar":
            raise StateError(f"{path!r} is inside a namespace and must be a list or an object")
        if len(parts) == 1 and _classify(value) == "scalar":
            self._scalars[path] = json.dumps(value)
            level[idx] = (path, "scalar")
            return
        level[idx] = (parts[-1], self._load(parts[-1], parts, value))

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def transaction(self, *, reads_only: bool = False) -> Iterator[None]:
        """All or nothing: a failure rolls back the data and the Python-side layout.

        `reads_only`: the caller only reads tables (a catalog tool with no insert, update, sql
        or handler). No database transaction is opened (two statements saved per call); only
        the scalars and the layout, which id counters change, are restored on failure, and a
        write inside is refused.
        """
        if reads_only:
            # a read-only call can only set scalars (id counters), which appends to the top level
            saved_scalars = (len(self.layout), dict(self._scalars), set(self._dirty))
            self._reads_only = True
            try:
                yield
            except BaseException:
                del self.layout[saved_scalars[0]:]
                self._scalars, self._dirty = saved_scalars[1], saved_scalars[2]
                raise
            finally:
                self._reads_only = False
            return
        if self._tx is not None:
            raise StateError("a state transaction is already open")
        # collections' column maps are replaced, never edited, so keeping the maps is a snapshot
        kept = [(c, c.columns, c.physical) for c in self.collections.values()]
        saved = (
            dict(self.collections),
            _copy_layout(self.layout),
            set(self._tables),
            dict(self._pending),  # a table created in the transaction is gone after a rollback
            dict(self._pristine),
            dict(self._scalars),
            set(self._dirty),
        )
        self._tx = "wanted"
        try:
            yield
        except BaseException:
            if self._tx == "open":
                self._tx = None
                # the connection itself: `conn` refuses statements once the call overran
                assert self._conn is not None
                self._conn.execute("ROLLBACK")
            for c, columns, physical in kept:
                c.columns, c.physical = columns, physical
            (self.collections, self.layout, self._tables,
             self._pending, self._pristine, self._scalars, self._dirty) = saved
            raise
        else:
            if self._tx == "open":
                self._tx = None
                self.conn.execute("COMMIT")
        finally:
            self._tx = None

    # ------------------------------------------------------------------ bounds

    @contextmanager
    def bounded(self, seconds: float) -> Iterator[None]:
        """One call's deadline. Past it, the DuckDB statement running is interrupted (DuckDB's
        own interrupt, from the watchdog thread), every later statement of the call is refused
        and Python-side loops over rows stop at their next check: the call ends with
        CallOverran (or DuckDB's InterruptException) and its transaction rolls back."""
        if not self._busy.acquire(blocking=False):
            raise StateError("another call is still running on this state")
        marker = object()
        with self._guard:
            self._call, self._overran = marker, False
        token = WATCHDOG.arm(seconds, lambda: self._overrun(marker))
        try:
            yield
        finally:
            WATCHDOG.disarm(token)
            with self._guard:
                self._call = None
            self._busy.release()

    @property
    def overran(self) -> bool:
        """Whether the call in flight (or the last one) ran past its deadline."""
        return self._overran

    def _overrun(self, marker: object) -> None:
        with self._guard:
            if self._call is not marker:
                return  # that call is over
            self._overran = True
            conn = self._conn
        if conn is not None:
            conn.interrupt()

    def interrupt(self) -> None:
        """End the call in flight now, as its deadline would (a cancelled sample)."""
        with self._guard:
            marker = self._call
        if marker is not None:
            self._overrun(marker)

    @property
    def free(self) -> bool:
        """No call is running on this state (nothing else may read it while one runs)."""
        return not self._busy.locked()

    def check_deadline(self) -> None:
        if self._overran:
            raise CallOverran()

    def check_size(self) -> None:
        """StateTooLarge when what the solver would store (`export_changes_text`) is larger than
        the domain's `limits.state_mb`. Measured exactly (an export) only when it may be: after
        raw SQL or a handler's `put`, or when the last measure plus an upper bound of what
        inserts and updates added since (`_grew`) passes the limit; so a sample's few small
        writes cost one export, not one each."""
        limit = int(self.limits.state_mb * 1_000_000)
        if self._size_known is not None and self._size_known + self._growth <= limit:
            return
        size = len(self.export_changes_text())
        if size > limit:
            raise StateTooLarge(f"the sample's state changes would take {size / 1e6:.1f} MB, more than the "
                                f"domain's limit of {self.limits.state_mb:g} MB (limits.state_mb)")
        self._size_known, self._growth = size, 0

    def _grew(self, values: dict[str, Any], rows: int, key: str | None = None) -> None:
        """An upper bound of what writing `values` to `rows` rows adds to the stored text: each
        value's JSON twice over (a row may gain every field, with its name), and some framing."""
        if rows:
            text = len(json.dumps(values, default=str)) + len(key or "")
            self._growth += rows * (2 * text + 64)

    # ------------------------------------------------------------------ export

    def export(self) -> dict[str, Any]:
        """The current document (a copy: nothing in it is shared with the loaded one)."""
        return json.loads(self.export_text())

    def export_text(self) -> str:
        """The current document as JSON text: exactly `json.dumps(self.export())`, written
        piece by piece so that a collection still holding the seed's own value costs no
        serialization (its text is made once per process)."""
        return self._level_text(self.layout, [])

    def export_changes_text(self) -> str:
        """What the solver stores: the document's top-level keys in order, and the value of
        every top-level key that may have changed since loading (written, put, or a scalar
        set); `merge.apply_changes(loaded document, json.loads(...))` gives `export()`.

        Why not the whole document: it is ~65 KB a sample on the shipped domains, and Inspect
        carries the store into events, the realtime buffer and the log twice; storing it cost
        ~9 ms of CPU a sample. A sample usually changes two or three small collections."""
        keys = json.dumps([k for k, _ in self.layout])
        changed = self._level_text([(k, n) for k, n in self.layout if k in self._dirty], [])
        return f'{{"keys": {keys}, "changed": {changed}}}'

    def _level_text(self, layout: list[tuple[str, Any]], path: list[str]) -> str:
        parts = []
        for key, node in layout:
            if node == "scalar":
                text = self._scalars.get(key, "null")
            elif isinstance(node, list):
                text = self._level_text(node, path + [key])
            else:
                coll = self.collections[".".join(path + [key])]
                loaded = self._pristine.get(coll.path)
                if loaded is not None and loaded is self._seed_value(path + [key]):
                    # still the seed's own value: its text is made once per process
                    text = seed_text(loaded)
                else:
                    # default=str: a raw `sql` step may have changed a column to a type JSON
                    # lacks (a date)
                    text = json.dumps(self._export_collection(coll), default=str)
            parts.append(f"{json.dumps(key)}: {text}")
        return "{" + ", ".join(parts) + "}"

    def _export_level(
        self, layout: list[tuple[str, Any]], path: list[str], scalars: dict[str, Any]
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, node in layout:
            if node == "scalar":
                out[key] = scalars.get(key)
            elif isinstance(node, list):
                out[key] = self._export_level(node, path + [key], scalars)
            else:
                out[key] = self._export_collection(self.collections[".".join(path + [key])])
        return out

    def _export_collection(self, coll: Collection) -> Any:
        if coll.path in self._pristine:
            # never written: the value it was loaded from (callers copy it, see export)
            return self._pristine[coll.path]
        plan = self._pending.get(coll.path)
        if plan is not None:
            # written, table not built: its rows are the plan's (shared with it: callers copy)
            if coll.kind == "keyed":
                return dict(plan.rows)
            rows = [rec for _, rec in plan.rows]
        elif coll.kind == "keyed":
            return dict(self._keyed_rows(coll, "", [], "_pos"))
        else:
            rows = self._rows(coll, "", [], "_pos")
        if coll.kind == "rows":
            return rows
        if coll.kind == "values":
            return [r.get("value") for r in rows]
        return rows[0] if rows else {}

    def close(self) -> None:
        self._closed = True
        if self._finalizer is not None:
            self._finalizer()  # closes the connection and drops the private catalog, once
            return
        if self._conn is None:
            return
        try:
            self._conn.close()
        except Exception:  # closing twice or after an interpreter-level failure is harmless
            pass
