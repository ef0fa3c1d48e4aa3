"""How a JSON document maps to DuckDB tables (also in docs/authoring.md).

Each top-level key is a collection. A list of objects is a `rows` table; an object whose values
are all objects is a `keyed` table (key in `_key`); an object whose values are all lists is a
namespace whose children are collections of their own (`activity.pending_requests` -> table
`activity__pending_requests`); any other object is a one-row `record` table; a list of scalars
is a `values` table; scalars live in `_scalars`. Every table has `_pos` (document order) and
`_keys` (the keys a row has, in its own order), so a collection exports exactly as loaded.

A column's type is its values' one type (BOOLEAN, BIGINT, DOUBLE, VARCHAR), else JSON; a write
that does not fit widens it to JSON. This module only describes tables and checks values; the
statements run in state.py.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .duck import q

INT64 = (-(2**63), 2**63 - 1)
BOOKKEEPING = ("_pos", "_key", "_keys")


class StateError(Exception):
    """A state operation that cannot be carried out (reported to the agent as a tool error)."""


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


_EXACT: dict[type, str | None] = {type(None): None, bool: "BOOLEAN", float: "DOUBLE", str: "VARCHAR",
                                  dict: "JSON", list: "JSON"}


def column_type(values: list[Any]) -> str:
    """`value_type`'s one type of the values, else JSON: typed once per distinct Python type
    (ints by their range), not once per value."""
    kinds: set[str | None] = set()
    for t in set(map(type, values)):
        if t in _EXACT:
            kinds.add(_EXACT[t])
        elif t is int:
            kinds.add("BIGINT" if all(INT64[0] <= v <= INT64[1] for v in values if type(v) is int) else "JSON")
        else:
            kinds.update(value_type(v) for v in values if type(v) is t)
    kinds.discard(None)
    return kinds.pop() if len(kinds) == 1 else "JSON"


def fits(sql_type: str, v: Any) -> bool:
    return v is None or sql_type == "JSON" or value_type(v) == sql_type


def param(sql_type: str, v: Any) -> Any:
    """A value as the statement binds it: JSON columns take JSON text."""
    if v is None:
        return None
    return json.dumps(v) if sql_type == "JSON" else v


def utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON text may escape one)
        return False
    return True


def printable(text: str) -> str:
    """Text as a message can show it: a lone surrogate as its escape (`\\ud800`)."""
    return text.encode("utf-8", "backslashreplace").decode()


def text_ok(v: Any) -> bool:
    """No lone surrogate anywhere in `v` (keys included): DuckDB takes text as UTF-8 only."""
    if isinstance(v, str):
        return utf8(v)
    if isinstance(v, dict):
        return all(utf8(k) and text_ok(x) for k, x in v.items())
    if isinstance(v, list):
        return all(text_ok(x) for x in v)
    return True


def json_ok(v: Any) -> bool:
    """Whether DuckDB's JSON type takes `json.dumps(v)`: no lone surrogate, no NaN/Infinity."""
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, dict):
        return all(utf8(k) and json_ok(x) for k, x in v.items())
    if isinstance(v, list):
        return all(json_ok(x) for x in v)
    return text_ok(v)


def clean(value: Any) -> str | None:
    """`value`'s JSON text (as `json.dumps` writes it) if it holds no lone surrogate (keys
    included) and no NaN/Infinity anywhere, found at C speed (such a value is storable whatever
    its columns' types: `storable` finds nothing in it), else None. None is not a refusal:
    `storable` then decides, and names the field."""
    try:
        text = json.dumps(value, allow_nan=False)
        if "\\ud" in text:  # an escaped surrogate: a pair (fine) or a lone one, which UTF-8 refuses
            json.dumps(value, ensure_ascii=False).encode("utf-8")
    except Exception:  # NaN/Infinity, a lone surrogate, a value JSON lacks, too deep
        return None
    return text


UNSTORABLE = "holds a value the state cannot store (a lone surrogate, or NaN/Infinity inside JSON)"


def storable(path: str, key: str | None, values: dict[str, Any], columns: dict[str, str]) -> None:
    """Refuse, with a message naming the field, a row DuckDB could not hold (its own error would
    name neither the collection nor the field)."""
    if key is not None and not utf8(key):
        raise StateError(f"collection {path!r}: the key is not valid UTF-8 text (a lone surrogate)")
    for name, v in values.items():
        if not utf8(name):
            raise StateError(f"collection {path!r}: a field name is not valid UTF-8 text (a lone surrogate)")
        # the column's type once the write has widened it (a value that does not fit: JSON)
        sql_type = columns.get(name) or value_type(v) or "JSON"
        if not (json_ok(v) if not fits(sql_type, v) or sql_type == "JSON" else text_ok(v)):
            raise StateError(f"collection {path!r}: field {name!r} {UNSTORABLE}")


def filter_ok(path: str, where: dict[str, Any]) -> None:
    """A filter value DuckDB cannot take as a parameter (a lone surrogate) is refused by name,
    whatever the field's type: the same error on every collection."""
    for name, v in where.items():
        if not text_ok(v):
            raise StateError(f"collection {path!r}: the filter on {name!r} holds text that is not valid "
                             "UTF-8 (a lone surrogate)")


def classify(value: Any) -> str:
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


@dataclass
class Collection:
    """A collection's table: its logical fields' SQL types and column names, in the table's
    column order after `_pos, _key, _keys`. `source`: the shared table it still reads from
    (never written by this sample), else None."""

    path: str
    kind: str  # rows | keyed | record | values
    table: str
    columns: dict[str, str] = field(default_factory=dict)  # logical name -> SQL type
    physical: dict[str, str] = field(default_factory=dict)  # logical name -> column name
    source: str | None = None
    end: int | None = None  # the next row's _pos (None: not known, after raw SQL)

    def col(self, name: str) -> str:
        return q(self.physical[name])

    @property
    def ref(self) -> str:
        """The table reads name."""
        return self.source or q(self.table)


def column_name(physical: dict[str, str], name: str) -> str:
    """The SQL column for a key: the key itself unless it clashes (DuckDB identifiers are
    case-insensitive) or is empty."""
    taken = {p.lower() for p in physical.values()} | set(BOOKKEEPING)
    base = name or "_blank"
    phys, n = base, 2
    while phys.lower() in taken:
        phys, n = f"{base}__{n}", n + 1
    return phys


def records(kind: str, value: Any) -> list[tuple[str | None, dict[str, Any]]]:
    """A collection's rows as (key, record) in document order."""
    if kind == "rows":
        return [(None, r) for r in value]
    if kind == "keyed":
        return list(value.items())
    if kind == "record":
        return [(None, value)]
    return [(None, {"value": v}) for v in value]


def describe(path: str, kind: str, rows: list[tuple[str | None, dict[str, Any]]], *,
             checked: bool = False) -> Collection:
    """The table for `rows` (its name is set by the caller), every value checked storable
    (`checked`: the caller found the value `clean`, nothing to check)."""
    coll = Collection(path=path, kind=kind, table="")
    names: list[str] = []
    for _, r in rows:
        for k in r:
            if k not in coll.columns:
                coll.columns[k] = "?"
                names.append(k)
    for k in names:
        coll.columns[k] = column_type([r.get(k) for _, r in rows])
        coll.physical[k] = column_name(coll.physical, k)
    if not checked:
        for key, r in rows:
            storable(path, key, r, coll.columns)
    return coll


def create_sql(coll: Collection, table: str) -> str:
    """One statement builds a table from its rows: every column arrives as one list parameter
    (see create_params) and is unnested in step; JSON text travels as VARCHAR."""
    cols = ["unnest(?::BIGINT[]) AS _pos", "unnest(?::VARCHAR[]) AS _key", "unnest(?::VARCHAR[][]) AS _keys"]
    for k, sql_type in coll.columns.items():
        if sql_type == "JSON":
            cols.append(f"unnest(?::VARCHAR[])::JSON AS {coll.col(k)}")
        else:
            cols.append(f"unnest(?::{sql_type}[]) AS {coll.col(k)}")
    return f"CREATE TABLE {table} AS SELECT {', '.join(cols)}"


def create_params(coll: Collection, rows: list[tuple[str | None, dict[str, Any]]]) -> list[list[Any]]:
    params: list[list[Any]] = [list(range(len(rows))), [k for k, _ in rows], [list(r) for _, r in rows]]
    for k, sql_type in coll.columns.items():
        column = [r.get(k) for _, r in rows]
        params.append([None if v is None else json.dumps(v) for v in column] if sql_type == "JSON" else column)
    return params
