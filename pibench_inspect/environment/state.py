"""A sample's state: a JSON document held in DuckDB, every collection a table of its own catalog.

DuckDB is the state: every read, filter, insert and update is a statement on the collection's
table (the mapping is in mapping.py, filters in filters.py, where the instances and catalogs live
in duck.py). What keeps it cheap (seed.py, duck.py): one sandboxed instance per process, a
private catalog per sample, the domain seed's tables and the scenarios' collections built once
per process and read in place until a sample first writes one (then copied in-database), the
optimizer off, and no database transaction unless a call writes.

A value DuckDB cannot store (a lone surrogate; NaN inside JSON) is refused with a StateError
naming the collection and field, when the document is loaded and when a call writes or filters
with it, so no later statement fails on an earlier value.

Python keeps only what is not data: the document's shape (`layout`, for key order on export),
each table's column types and names, scalars (as JSON text; they reach the `_scalars` table only
around raw SQL), which top-level keys a call changed (`export_changes_text`), and the value a
never-written collection was loaded from, which `export` returns as it is (a seed collection's
text is made once per process).
"""

from __future__ import annotations

import json
import weakref
from dataclasses import replace
from operator import itemgetter
from typing import Any

import duckdb

from .bounds import CallBounds
from .document import DocumentAccess
from .duck import drop_catalog, open_private_catalog, open_sandboxed, q, shared_instance
from .filters import order_sql, where_sql
from .limits import DEFAULT_LIMITS, EffectLimits
from .mapping import (Collection, StateError, classify, clean, column_name, create_params, create_sql, describe,
                      filter_ok, fits, param, printable, records, storable, text_ok, utf8, value_type)
from .seed import cached_read, keep_read, read_key, seed_catalog, shared_table
from .transactions import Transactions, refuse_transaction_statements

__all__ = ["StateDB", "StateError", "open_sandboxed"]
SCALARS = "_scalars"


def _out(coll: Collection, key: Any, rec: dict[str, Any]) -> dict[str, Any]:
    """A row as a call sees it: a keyed collection's key is added as `_key` (unless a field has that name)."""
    return {"_key": key, **rec} if coll.kind == "keyed" and "_key" not in rec else rec


class StateDB(Transactions, DocumentAccess, CallBounds):
    """One sample's state, private to it. `allow_sql`: whether `sql()` (caller-supplied SQL) may
    run; only then does the state get a DuckDB instance of its own (duck.py). `seed`: the domain
    seed the document was merged from; its untouched collections are read from the seed catalog."""

    def __init__(self, document: dict[str, Any], *, allow_sql: bool = True, seed: dict[str, Any] | None = None,
                 limits: EffectLimits = DEFAULT_LIMITS):
        self._init_bounds(limits)
        self.allow_sql = allow_sql
        self._closed, self._finalizer, self._catalog = False, None, None
        if allow_sql:  # a database of its own; a single worker thread keeps per-sample memory low
            self._conn: duckdb.DuckDBPyConnection | None = open_sandboxed(limits.memory_mb)
        else:
            self._conn, self._catalog = open_private_catalog()
            self._finalizer = weakref.finalize(self, drop_catalog, shared_instance(), self._conn, self._catalog)
        self._seed = seed
        self._seed_cat = seed_catalog(seed) if seed is not None and not allow_sql else None
        self._shares: set[Any] = set()  # the shared catalogs (seed.py) it reads, kept attached
        self.collections: dict[str, Collection] = {}
        self.layout: list[tuple[str, Any]] = []  # top-level keys in order; namespaces hold child keys
        self._tables: set[str] = set()
        self._pristine: dict[str, Any] = {}  # never-written collections: the value loaded
        self._texts: dict[str, tuple[Any, str]] = {}  # a loaded value's JSON text, made by `clean`
        self._unbuilt: dict[str, Any] = {}  # collections whose table is made at first use: value, JSON text
        self._scalars: dict[str, str] = {}  # JSON text by key
        self._reads_only = False
        self._tx: str | None = None  # in a write call: "wanted" until it writes, then "open"
        self._dirty: set[str] = set()  # top-level keys a call changed (see export_changes_text)
        try:
            for key, value in document.items():
                self.layout.append((key, self._load(key, [key], value)))
        except BaseException:
            self.close()
            raise
        # nothing changed yet: what the solver would store is the keys alone (no query), and
        # writes add to it from here (see bounds.check_size)
        self._size_known = len(self.export_changes_text())

    @property
    def conn(self) -> duckdb.DuckDBPyConnection:
        self.check_deadline()  # the call's deadline passed: no further statement of it runs
        if self._conn is None or self._closed:
            raise StateError("this state is closed")
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
        kind = classify(value)
        if kind == "namespace":
            return [(k, self._load(k, path + [k], v)) for k, v in value.items()]
        if kind == "scalar":
            if len(path) > 1:  # nested scalars only occur inside namespaces of lists
                raise StateError(f"unexpected scalar at {dotted}")
            if not text_ok(value):
                raise StateError(f"{dotted!r} holds text that is not valid UTF-8 (a lone surrogate)")
            self._scalars[key] = json.dumps(value)
            return "scalar"
        shared = self._seed_cat.collections.get(dotted) if self._seed_cat else None
        if shared is not None and self._seed_value(path) is value:
            # the very collection of the seed, untouched by the scenario: read in place
            coll = replace(shared, columns=dict(shared.columns), physical=dict(shared.physical))
            coll.table = self._table_name(dotted)
        elif (text := clean(value)) is not None:  # nothing to refuse: its table is made when needed
            coll = Collection(path=dotted, kind=kind, table=self._table_name(dotted))
            self._unbuilt[dotted] = (value, text)
            self._texts[dotted] = (value, text)  # what export writes while it is not written
        else:  # the check that names what cannot be stored, now
            coll = self._build(describe(dotted, kind, records(kind, value)), value, self._table_name(dotted))
        self.collections[dotted] = coll
        self._pristine[dotted] = value
        return "collection"

    def _build(self, coll: Collection, value: Any, table: str) -> Collection:
        """Create the collection's table from the value loaded (`coll` described, or still bare)."""
        rows = records(coll.kind, value)
        if not coll.columns and rows:
            built = describe(coll.path, coll.kind, rows, checked=True)
            coll.columns, coll.physical = built.columns, built.physical  # new dicts: see transaction
        coll.table, coll.end = table, len(rows)
        self._write(create_sql(coll, q(table)), create_params(coll, rows))
        return coll

    def _table_name(self, path: str) -> str:
        base = path.replace(".", "__") or "_blank"
        name, n = base, 2
        while name.lower() in self._tables or name.lower() == SCALARS:
            name, n = f"{base}_{n}", n + 1
        self._tables.add(name.lower())
        return name

    def _written(self, coll: Collection) -> None:
        """The collection is about to change: it exports from its table from now on."""
        if self._reads_only:
            raise StateError(f"a read-only call cannot change {coll.path!r}")
        self._pristine.pop(coll.path, None)
        self._dirty.add(coll.path.split(".", 1)[0])

    def _reshape(self, coll: Collection, values: dict[str, Any]) -> None:
        """Give the collection a table of the sample's own, with the columns `values` need (a
        new field takes its value's type, a value that does not fit widens its field to JSON):
        one statement that copies the seed's table or rebuilds the sample's, where an ALTER per
        column cost ~1 ms each (an insert into an empty collection adds every field)."""
        columns, physical, added, widened = dict(coll.columns), dict(coll.physical), [], []
        for name, v in values.items():
            if name not in columns:
                physical[name], columns[name] = column_name(physical, name), value_type(v) or "JSON"
                added.append(name)
            elif not fits(columns[name], v):
                columns[name] = "JSON"
                widened.append(name)
        if coll.source is None and not added and not widened:
            return
        verb = "CREATE TABLE" if coll.source is not None else "CREATE OR REPLACE TABLE"
        if coll.end == 0 and not self.allow_sql:  # no rows to copy: a table of these columns (~0.25 ms less)
            defs = ["_pos BIGINT", "_key VARCHAR", "_keys VARCHAR[]"]
            defs += [f"{q(physical[n])} {t}" for n, t in columns.items()]
            self._write(f"{verb} {q(coll.table)} ({', '.join(defs)})")
            coll.columns, coll.physical, coll.source = columns, physical, None
            return
        select = "*"
        if widened:
            select += f" REPLACE ({', '.join(f'to_json({coll.col(n)}) AS {coll.col(n)}' for n in widened)})"
        # rows that existed before do not list a new field in `_keys`: it stays absent for them
        select += "".join(f", NULL::{columns[n]} AS {q(physical[n])}" for n in added)
        self._write(f"{verb} {q(coll.table)} AS SELECT {select} FROM {coll.ref}")
        # new dicts, not edits: a transaction's snapshot keeps the old ones
        coll.columns, coll.physical, coll.source = columns, physical, None

    # ------------------------------------------------------------------ reading

    def collection(self, path: str) -> Collection:
        """The collection, its table built if it was not yet (every statement reaches it here)."""
        try:
            coll = self.collections[path]
        except KeyError:
            known = ", ".join(sorted(self.collections)) or "none"
            raise StateError(f"no collection {path!r} in the state (known: {known})") from None
        if path in self._unbuilt:  # read in a shared table (seed.py) unless the call's transaction is older
            shared = None if self.allow_sql or self._tx == "open" else shared_table(coll.kind, *self._unbuilt[path])
            if shared is None:
                self._build(coll, self._unbuilt[path][0], coll.table)
            else:
                self._shares.add(shared[0])
                coll.columns, coll.physical = dict(shared[1].columns), dict(shared[1].physical)
                coll.source, coll.end = shared[1].source, shared[1].end
            del self._unbuilt[path]
        return coll

    def has(self, path: str) -> bool:
        return path in self.collections

    def _rows(self, coll: Collection, where: str, params: list[Any], order: str, update: str = "") -> list[dict]:
        return [_out(coll, key, rec) for _, key, rec in self._fetch(coll, where, params, order, update)]

    def _keyed_rows(self, coll: Collection, where: str, params: list[Any], order: str) -> list[tuple[Any, dict]]:
        return [(key, rec) for _, key, rec in self._fetch(coll, where, params, order)]

    def _fetch(self, coll: Collection, where: str, params: list[Any], order: str,
               update: str = "") -> list[tuple[int, Any, dict]]:
        """(_pos, key, record) of the rows `where` picks, in `order`. `update`: an UPDATE's SET
        clause; the rows are changed by it and returned as changed, in document order."""
        names = list(coll.columns)
        # without raw SQL a table has exactly the columns `coll` lists, in that order, and unique
        # _pos: no column list, and document order is a sort here (cheaper than planning one)
        exact = not self.allow_sql
        cols = "*" if exact else ", ".join(["_pos", "_key", "_keys"] + [coll.col(k) for k in names])
        if update:
            fetched = sorted(self._write(f"UPDATE {q(coll.table)} SET {update}{where} RETURNING {cols}",
                                         params).fetchall(), key=itemgetter(0))
        else:
            sql = f"SELECT {cols} FROM {coll.ref}{where}" + (f" ORDER BY {order}" if order and (
                order != "_pos" or not exact) else "")
            # a shared table never changes: the same read gives the same rows (seed.py)
            key = read_key(sql, params) if exact and coll.source is not None else None
            fetched = cached_read(key) if key is not None else None
            if fetched is None:
                fetched = self.conn.execute(sql, params).fetchall()
                if order == "_pos" and exact:
                    fetched.sort(key=itemgetter(0))
                if key is not None:
                    keep_read(key, fetched)
        out = []
        for n, row in enumerate(fetched):
            if n % 1024 == 1023:
                self.check_deadline()
            values = dict(zip(names, row[3:]))
            rec: dict[str, Any] = {}
            for name in row[2] or []:
                v = values.get(name)
                rec[name] = json.loads(v) if coll.columns.get(name) == "JSON" and v is not None else v
            out.append((row[0], row[1], rec))
        return out

    def select(self, path: str, where: dict[str, Any] | None = None, *, match: str = "exact",
               order_by: str | None = None) -> list[dict[str, Any]]:
        coll = self.collection(path)
        filter_ok(path, where or {})
        sql, params = where_sql(coll, where or {}, match)
        # one key: at most one row (keys are unique, unless raw SQL wrote the table)
        one = (coll.kind == "keyed" and match == "exact" and (where or {}).get("_key") is not None
               and not order_by and not self.allow_sql)
        return self._rows(coll, sql, params, "" if one else order_sql(coll, order_by))

    def get_scalar(self, key: str, default: Any = None) -> Any:
        text = self._scalars.get(key)
        return default if text is None else json.loads(text)

    # ------------------------------------------------------------------ writing

    def set_scalar(self, key: str, value: Any) -> None:
        if not (utf8(key) and text_ok(value)):  # as at load: raw SQL's `_scalars` table could not take it
            raise StateError(f"{printable(key)!r} holds text that is not "
                             "valid UTF-8 (a lone surrogate)")
        if key not in self._scalars:
            self.layout.append((key, "scalar"))
        self._scalars[key] = text = json.dumps(value)
        self._dirty.add(key)
        self._growth += len(text) + len(key) + 8  # an upper bound of what it adds to the stored text

    def insert(self, path: str, values: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        if not self.has(path):
            if "." in path:
                raise StateError(f"no collection {path!r} in the state")
            if any(k == path for k, _ in self.layout):
                # a scalar or a namespace of that name: a collection beside it would be a second
                # top-level key of the same name in the exported document
                raise StateError(f"{path!r} is not a collection (a scalar or a namespace): cannot insert into it")
            if self._reads_only:
                raise StateError(f"a read-only call cannot change {path!r}")
            self.layout.append((path, "collection"))
            self._load(path, [path], {} if key is not None else [])
        coll = self.collection(path)
        key = None if key is None else str(key)
        self._written(coll)
        if coll.kind == "keyed":
            if key is None:
                raise StateError(f"collection {path!r} is keyed: an insert needs a key")
            storable(path, key, {}, {})
            if self.conn.execute(f"SELECT 1 FROM {coll.ref} WHERE _key = ? LIMIT 1", [key]).fetchall():
                raise StateError(f"collection {path!r} already has key {key!r}")
        elif coll.kind not in ("rows", "values"):
            raise StateError(f"cannot insert into {coll.kind} collection {path!r}")
        storable(path, key, values, coll.columns)
        self._reshape(coll, values)
        names = [k for k in coll.columns if k in values]
        marks = ", ".join(["?", "?"] + ["?::JSON" if coll.columns[k] == "JSON" else "?" for k in names])
        cols = ", ".join(["_pos", "_key", "_keys"] + [coll.col(k) for k in names])
        table, end = q(coll.table), coll.end if not self.allow_sql else None
        pos = "?" if end is not None else f"(SELECT coalesce(max(_pos) + 1, 0) FROM {table})"
        self._write(f"INSERT INTO {table} ({cols}) SELECT {pos}, {marks}",
                    ([end] if end is not None else []) + [key, list(values)]
                    + [param(coll.columns[k], values[k]) for k in names])
        coll.end = None if end is None else end + 1
        self._grew(values, 1, key)
        return {"_key": key, **values} if coll.kind == "keyed" else dict(values)

    def update(self, path: str, where: dict[str, Any], values: dict[str, Any], *,
               match: str = "exact") -> list[dict[str, Any]]:
        if "_key" in values:
            raise StateError("the key of a keyed collection cannot be changed")
        coll = self.collection(path)
        filter_ok(path, where)
        self._written(coll)
        # select the targets first, on the fields as they are: an update may change the fields
        # the filter reads, and widen their type (a JSON column compares as text)
        sql, params = where_sql(coll, where, match)
        found = self._fetch(coll, sql, params, "_pos")
        if found:
            storable(path, None, values, coll.columns)
        else:  # nothing is written, but `_reshape` still makes a column of every new field name
            storable(path, None, dict.fromkeys(values), coll.columns)
        self._reshape(coll, values)
        sets = [f"{coll.col(n)} = " + ("?::JSON" if coll.columns[n] == "JSON" else "?") for n in values]
        args: list[Any] = [param(coll.columns[n], v) for n, v in values.items()]
        if self.allow_sql or any(n not in rec for _, _, rec in found for n in values):
            # keys a row did not have yet are appended to its key order
            sets.append("_keys = list_concat(_keys, list_filter(?, lambda x: NOT list_contains(_keys, x)))")
            args.append(list(values))
        rows = [_out(coll, key, rec) for _, key, rec in found]
        if found and values:
            where_pos, targets = " WHERE list_contains(?, _pos)", [pos for pos, _, _ in found]
            if self.allow_sql or any(coll.columns[n] == "JSON" for n in values):
                # raw SQL may have left rows alike; JSON comes back as DuckDB writes it: read it back
                rows = self._rows(coll, where_pos, args + [targets], "_pos", ", ".join(sets))
            else:  # every value is stored as it is: the rows are what they were plus the values
                self._write(f"UPDATE {q(coll.table)} SET {', '.join(sets)}{where_pos}", args + [targets])
                rows = [_out(coll, key, {**rec, **values}) for _, key, rec in found]
        self._grew(values, len(found))
        return rows

    def sql(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Raw parameterized SQL (`$name` placeholders). Returns rows as dicts."""
        if not self.allow_sql:
            # a catalog in the shared instance: caller-supplied SQL could name other catalogs
            raise StateError("this state was opened without raw SQL (allow_sql=False)")
        if self._reads_only:
            raise StateError("a read-only call cannot run raw SQL")
        refuse_transaction_statements(query)
        self._size_known = None  # the statement may write anything: measure again
        for path in list(self.collections):  # ... to any table: none is pristine after
            coll = self.collection(path)
            self._written(coll)
            self._reshape(coll, {})
        self._dirty.update(self._scalars)
        self._write(f"CREATE OR REPLACE TABLE {SCALARS} AS SELECT unnest(?::BIGINT[]) AS _pos, "
                    "unnest(?::VARCHAR[]) AS key, unnest(?::VARCHAR[])::JSON AS value",
                    [list(range(len(self._scalars))), list(self._scalars), list(self._scalars.values())])
        cur = self._write(query, params or {})
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

    def close(self) -> None:
        self._closed = True
        if self._finalizer is not None:
            self._finalizer()  # closes the connection and detaches the private catalog, once
        elif self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # closing twice or after an interpreter-level failure is harmless
                pass
