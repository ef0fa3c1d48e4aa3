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
"""

from __future__ import annotations

import copy
import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import duckdb

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
    "lock_configuration": True,
}


def open_sandboxed() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB database with no access outside itself (see SANDBOX_CONFIG)."""
    return duckdb.connect(":memory:", config=dict(SANDBOX_CONFIG))


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


class StateDB:
    """One sample's state. Not shared: every sample builds its own from the document."""

    def __init__(self, document: dict[str, Any]):
        # one small database per sample: a single worker thread keeps per-sample memory and
        # thread churn low when many samples are in flight
        self.conn = open_sandboxed()
        self.collections: dict[str, Collection] = {}
        # document shape for export: top-level keys in order; namespaces hold child keys
        self.layout: list[tuple[str, Any]] = []
        self._tables: set[str] = set()
        self.conn.execute(
            f"CREATE TABLE {SCALARS} (_pos BIGINT, key VARCHAR PRIMARY KEY, value JSON)"
        )
        for key, value in document.items():
            self.layout.append((key, self._load(key, [key], value)))

    # ------------------------------------------------------------------ building

    def _load(self, key: str, path: list[str], value: Any) -> Any:
        kind = _classify(value)
        if kind == "scalar" and len(path) == 1:
            self.conn.execute(
                f"INSERT INTO {SCALARS} VALUES (?, ?, ?::JSON)",
                [len(self.layout), key, json.dumps(value)],
            )
            return "scalar"
        if kind == "namespace":
            return [(k, self._load(k, path + [k], v)) for k, v in value.items()]
        if kind == "scalar":  # nested scalars only occur inside namespaces of lists
            raise StateError(f"unexpected scalar at {'.'.join(path)}")
        self._create(".".join(path), kind, value)
        return "collection"

    def _table_name(self, path: str) -> str:
        base = path.replace(".", "__") or "_blank"
        name, n = base, 2
        while name.lower() in self._tables or name.lower() == SCALARS:
            name, n = f"{base}_{n}", n + 1
        self._tables.add(name.lower())
        return name

    def _create(self, path: str, kind: str, value: Any) -> Collection:
        if kind == "rows":
            records = [dict(r) for r in value]
            keys: list[str | None] = [None] * len(records)
        elif kind == "keyed":
            records = [dict(r) for r in value.values()]
            keys = list(value.keys())
        elif kind == "record":
            records, keys = [dict(value)], [None]
        else:  # values
            records, keys = [{"value": v} for v in value], [None] * len(value)
        coll = Collection(path=path, kind=kind, table=self._table_name(path))
        names: list[str] = []
        for r in records:
            for k in r:
                if k not in coll.columns:
                    coll.columns[k] = "?"
                    names.append(k)
        for k in names:
            coll.columns[k] = column_type([r.get(k) for r in records])
        for k in names:
            coll.physical[k] = self._column_name(coll, k)
        cols = ["_pos BIGINT", "_key VARCHAR", "_keys VARCHAR[]"]
        cols += [f"{coll.col(k)} {coll.columns[k]}" for k in names]
        self.conn.execute(f"CREATE TABLE {q(coll.table)} ({', '.join(cols)})")
        self.collections[path] = coll
        self._insert_rows(coll, list(zip(keys, records)))
        return coll

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
            coll.columns[name] = sql_type
            coll.physical[name] = phys
            # rows that existed before do not list this key in `_keys`: it stays absent for them
            self.conn.execute(f"ALTER TABLE {q(coll.table)} ADD COLUMN {q(phys)} {sql_type}")
        elif not fits(coll.columns[name], v):
            self.conn.execute(
                f"ALTER TABLE {q(coll.table)} ALTER {coll.col(name)} SET DATA TYPE JSON "
                f"USING to_json({coll.col(name)})"
            )
            coll.columns[name] = "JSON"

    # ------------------------------------------------------------------ reading

    def collection(self, path: str) -> Collection:
        try:
            return self.collections[path]
        except KeyError:
            known = ", ".join(sorted(self.collections)) or "none"
            raise StateError(f"no collection {path!r} in the state (known: {known})") from None

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
        for row in cur.fetchall():
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
        coll = self.collection(path)
        where_sql, params = self._where(coll, where or {}, match)
        order = "_pos"
        if order_by:
            name = order_by.lstrip("-")
            if name not in coll.columns:
                raise StateError(f"collection {path!r} has no field {name!r} to order by")
            order = f"{coll.col(name)} {'DESC' if order_by.startswith('-') else 'ASC'}, _pos"
        return self._rows(coll, where_sql, params, order)

    def get_scalar(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute(f"SELECT value FROM {SCALARS} WHERE key = ?", [key]).fetchone()
        return default if row is None else json.loads(row[0])

    # ------------------------------------------------------------------ writing

    def set_scalar(self, key: str, value: Any) -> None:
        exists = self.conn.execute(f"SELECT 1 FROM {SCALARS} WHERE key = ?", [key]).fetchone()
        if exists:
            self.conn.execute(
                f"UPDATE {SCALARS} SET value = ?::JSON WHERE key = ?", [json.dumps(value), key]
            )
        else:
            self.conn.execute(
                f"INSERT INTO {SCALARS} VALUES (?, ?, ?::JSON)",
                [len(self.layout), key, json.dumps(value)],
            )
            self.layout.append((key, "scalar"))

    def insert(self, path: str, values: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        if not self.has(path):
            if "." in path:
                raise StateError(f"no collection {path!r} in the state")
            self.layout.append((path, "collection"))
            self._create(path, "keyed" if key is not None else "rows", {} if key else [])
        coll = self.collection(path)
        if coll.kind == "keyed":
            if key is None:
                raise StateError(f"collection {path!r} is keyed: an insert needs a key")
            if self.select(path, {"_key": str(key)}):
                raise StateError(f"collection {path!r} already has key {key!r}")
        elif coll.kind not in ("rows", "values"):
            raise StateError(f"cannot insert into {coll.kind} collection {path!r}")
        pos = self.conn.execute(f"SELECT coalesce(max(_pos) + 1, 0) FROM {q(coll.table)}").fetchone()
        self._insert_row(coll, pos[0], None if key is None else str(key), values)
        row = dict(values)
        return {"_key": str(key), **row} if coll.kind == "keyed" else row

    def update(
        self, path: str, where: dict[str, Any], values: dict[str, Any], *, match: str = "exact"
    ) -> list[dict[str, Any]]:
        coll = self.collection(path)
        for name, v in values.items():
            if name == "_key":
                raise StateError("the key of a keyed collection cannot be changed")
            self._ensure_column(coll, name, v)
        where_sql, where_params = self._where(coll, where, match)
        # select the targets first: an update may change the fields the filter reads
        targets = [
            r[0]
            for r in self.conn.execute(
                f"SELECT _pos FROM {q(coll.table)}{where_sql} ORDER BY _pos", where_params
            ).fetchall()
        ]
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

    def _by_pos(self, coll: Collection, positions: list[int]) -> list[dict[str, Any]]:
        if not positions:
            return []
        return self._rows(coll, " WHERE list_contains(?, _pos)", [positions], "_pos")

    def sql(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Raw parameterized SQL (`$name` placeholders). Returns rows as dicts."""
        cur = self.conn.execute(query, params or {})
        if cur.description is None:
            return []
        names = [d[0] for d in cur.description]
        return [
            {n: v for n, v in zip(names, row) if n not in ("_pos", "_keys")}
            for row in cur.fetchall()
        ]

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
        scalars = {}
        if isinstance(node, list):
            return self._export_level(node, parts, scalars)
        return self._export_collection(self.collections[path])

    def _drop(self, parts: list[str], node: Any) -> None:
        if node == "scalar":
            self.conn.execute(f"DELETE FROM {SCALARS} WHERE key = ?", [parts[-1]])
        elif isinstance(node, list):
            for k, child in node:
                self._drop(parts + [k], child)
        else:
            coll = self.collections.pop(".".join(parts))
            self.conn.execute(f"DROP TABLE {q(coll.table)}")
            self._tables.discard(coll.table.lower())

    def put(self, path: str, value: Any) -> None:
        """Replace (or create) the JSON value at a top-level key or a namespace child.

        For handlers that reproduce the original's in-place JSON edits; the value is reloaded
        into tables with the usual mapping, in the same position of the document.
        """
        parts = path.split(".")
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
            self.conn.execute(f"INSERT INTO {SCALARS} VALUES (?, ?, ?::JSON)", [idx, path, json.dumps(value)])
            level[idx] = (path, "scalar")
            return
        level[idx] = (parts[-1], self._load(parts[-1], parts, value))

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All or nothing: a failure rolls back the data and the Python-side layout."""
        saved = (
            copy.deepcopy(self.collections),
            copy.deepcopy(self.layout),
            set(self._tables),
        )
        self.conn.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            self.collections, self.layout, self._tables = saved
            raise
        else:
            self.conn.execute("COMMIT")

    # ------------------------------------------------------------------ export

    def export(self) -> dict[str, Any]:
        scalars = {
            k: json.loads(v)
            for k, v in self.conn.execute(f"SELECT key, value FROM {SCALARS}").fetchall()
        }
        return self._export_level(self.layout, [], scalars)

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
        if coll.kind == "keyed":
            return dict(self._keyed_rows(coll, "", [], "_pos"))
        rows = self._rows(coll, "", [], "_pos")
        if coll.kind == "rows":
            return rows
        if coll.kind == "values":
            return [r.get("value") for r in rows]
        return rows[0] if rows else {}

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # closing twice or after an interpreter-level failure is harmless
            pass
