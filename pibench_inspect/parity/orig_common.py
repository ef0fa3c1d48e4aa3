"""Lookup utilities and the handlers every original domain shares (reference 2.5, 2.6).

Handlers work on `db`, a plain JSON document (the whole state), and mutate it the way the
original mutated its dict; `generic.dispatch` writes the changed parts back. `ctx` supplies
`now` and `new_id` (the original's `_now` / `_next_id`, backed by the state's `_id_counter`).
Every handler takes `db, ctx` positionally so that any argument name (even `db`) is a keyword.
"""

from __future__ import annotations

import copy
from typing import Any


def values_equal(a: Any, b: Any) -> bool:
    """Lookup equality (reference 2.6): None only equals None; else trimmed, case-folded text."""
    if a is None and b is None:
        return True
    if a is None or b is None:
        return False
    return str(a).strip().lower() == str(b).strip().lower()


def is_empty(value: Any) -> bool:
    return value is None or value == ""


def find_record(collection: Any, id_field: str, id_value: Any) -> dict | None:
    """`_find_record` (reference 2.6): a list, a single record, or a dict keyed by id."""
    if is_empty(id_value):
        return None
    if isinstance(collection, list):
        return next(
            (r for r in collection if isinstance(r, dict) and values_equal(r.get(id_field), id_value)),
            None,
        )
    if not isinstance(collection, dict):
        return None
    if id_field in collection and values_equal(collection.get(id_field), id_value):
        return collection  # a single record stored directly (e.g. customer_profile)
    direct = collection.get(id_value) if isinstance(id_value, (str, int, float, bool)) else None
    if isinstance(direct, dict):
        return {id_field: id_value, **direct}
    for key, value in collection.items():
        if isinstance(value, dict) and (
            values_equal(value.get(id_field), id_value) or values_equal(key, id_value)
        ):
            return {id_field: key, **value}
    return None


def find_in_collection(db: dict, path: str, id_field: str, id_value: Any) -> dict | None:
    """`_find_in_collection` (reference 2.6), used by mutating handlers: dotted path, lists only,
    exact (case-sensitive) id equality. Returns the live record so the caller can mutate it."""
    node: Any = db
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    if not isinstance(node, list):
        return None
    return next((r for r in node if isinstance(r, dict) and r.get(id_field) == id_value), None)


SECURITY_FIELDS = ("symbol", "ticker", "security")


def record_matches(record: dict, filters: dict[str, Any]) -> bool:
    """`_record_matches` (reference 2.6): every non-empty filter matches one candidate field."""
    for name, wanted in filters.items():
        if is_empty(wanted):
            continue
        if name == "account_id":
            candidates = [record.get(f) for f in ("account_id", "customer_id", "requested_by_customer_id")]
        elif name in SECURITY_FIELDS:
            candidates = [record.get(f) for f in SECURITY_FIELDS]
        else:
            candidates = [record.get(name)]
        if not any(values_equal(c, wanted) for c in candidates):
            return False
    return True


def iter_records(x: Any) -> list[dict]:
    """`_iter_records` (reference 2.6): list items, the dict values of a keyed dict, or [record]."""
    if isinstance(x, list):
        return [r for r in x if isinstance(r, dict)]
    if isinstance(x, dict):
        nested = [v for v in x.values() if isinstance(v, dict)]
        return nested if nested else [x]
    return []


def not_found(entity: str, field: str, value: Any) -> dict:
    """The common soft-error shape (reference 2.6)."""
    return {"error": True, "message": f"No {entity} found for {field}='{value}'.", field: value}


# ---------------------------------------------------------------- handlers shared by all domains


def record_decision(db: dict, ctx: Any, /, **kw: Any) -> dict:
    """Appends to `decisions` (created if missing); echoes the other kwargs in call order
    (reference 2.6). Any decision string is accepted; validation is the resolver's job."""
    rec = {"decision_record_id": ctx.new_id("DEC"), "decision": kw.get("decision", ""), "recorded_at": ctx.now}
    rec.update({k: v for k, v in kw.items() if k != "decision"})
    if not isinstance(db.get("decisions"), list):
        db["decisions"] = []
    db["decisions"].append(rec)
    return rec


def escalate(db: dict, ctx: Any, /, **kw: Any) -> dict:
    """Generic escalation (reference 2.6): only the id counter changes; reason/summary not echoed."""
    result = {
        "escalation_id": ctx.new_id("ESC"),
        "status": "pending_review",
        "assigned_to": "Senior Officer",
        "created_at": ctx.now,
    }
    result.update({k: v for k, v in kw.items() if k not in ("reason", "summary")})
    return result


def lookup_customer_profile(db: dict, ctx: Any, /, customer_id: Any = "", **_: Any) -> dict:
    """finra and retail (reference 2.4): `customer_profile` first, then `customers`."""
    for name in ("customer_profile", "customers"):
        rec = find_record(db.get(name), "customer_id", customer_id)
        if rec is not None:
            return copy.deepcopy(rec)
    return not_found("customer_profile", "customer_id", customer_id)


def lookup_fallback(db: dict, tool_name: str, kw: dict[str, Any]) -> dict:
    """Best-effort `lookup_<entity>` for names without a handler (reference 2.5)."""
    entity = tool_name[len("lookup_"):]
    squashed = entity.replace("_", "")
    criteria = {k: v for k, v in kw.items() if k == "id" or k.endswith("_id")}
    for name in dict.fromkeys((entity, entity + "s", squashed, squashed + "s")):
        if name not in db:
            continue
        for field, value in criteria.items():
            rec = find_record(db[name], field, value)
            if rec is not None:
                return copy.deepcopy(rec)
    return {
        "error": True,
        "message": f"No {entity} record found matching the given criteria.",
        "lookup": entity,
        "criteria": criteria,
    }
