"""A `where` filter and an order as SQL over a collection's table, values as bound parameters.

Match modes (docs/authoring.md): `exact` (a value of another type than the field's never
matches; a JSON field compares as JSON text), `ci` (trimmed, case-insensitive text) and `words`
(every word of the value is in the field's text, case-insensitive). A field no row has matches
only a null filter. Field names come from the catalog; only values come from a call.
"""

from __future__ import annotations

import json
from typing import Any

from .mapping import Collection, StateError, fits


def where_sql(coll: Collection, where: dict[str, Any], match: str) -> tuple[str, list[Any]]:
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


def order_sql(coll: Collection, order_by: str | None) -> str:
    """Document order, or a field's (`-field`: descending), nulls last, ties in document order."""
    if not order_by:
        return "_pos"
    name = order_by.lstrip("-")
    if name not in coll.columns:
        raise StateError(f"collection {coll.path!r} has no field {name!r} to order by")
    return f"{coll.col(name)} {'DESC' if order_by.startswith('-') else 'ASC'}, _pos"
