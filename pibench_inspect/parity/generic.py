"""`dispatch`: the handler of every tool of an original-layout domain (reference 2.5).

The original ran `generic_tool(db, tool_name, **kwargs)` over one fixed name -> handler table
on a JSON dict it mutated in place. We do the same on a JSON copy of the state and write
back only the top-level entries the handler changed (`StateDB.put` keeps their position and
record key order). Ids and `now` come from `ctx` (the original's `_next_id` / `_now`).
"""

from __future__ import annotations

import json
from typing import Any

from . import orig_common, orig_finra, orig_helpdesk, orig_retail

# Tool names never collide with different meanings across the three domains, so one table serves all.
HANDLERS = {
    **orig_finra.HANDLERS,
    **orig_retail.HANDLERS,
    **orig_helpdesk.HANDLERS,
    "lookup_customer_profile": orig_common.lookup_customer_profile,
    "record_decision": orig_common.record_decision,
    "escalate_to_compliance": orig_common.escalate,
    "escalate_to_manager": orig_common.escalate,
    "escalate_to_tier2": orig_common.escalate,
    "escalate_to_it_security": orig_common.escalate,
}

# The original passed the db positionally and the tool name to generic_tool, so an argument
# with one of these names raised a TypeError (an envelope error), reference 2.5.
RESERVED = ("db", "tool_name")


def run(db: dict, ctx: Any, name: str, arguments: dict[str, Any]) -> Any:
    """The original's generic_tool on a plain dict: table handler, lookup fallback or soft error."""
    for reserved in RESERVED:
        if reserved in arguments:
            raise TypeError(f"generic_tool() got multiple values for argument '{reserved}'")
    handler = HANDLERS.get(name)
    if handler is not None:
        return handler(db, ctx, **arguments)
    if name.startswith("lookup_"):
        return orig_common.lookup_fallback(db, name, arguments)
    return {"error": True, "message": f"No handler registered for tool '{name}'."}


def _fingerprint(value: Any) -> str:
    return json.dumps(value, default=str)  # order-sensitive: a reordered record counts as changed


def dispatch(ctx: Any, /, **arguments: Any) -> Any:
    db = ctx.state.export()
    before = {k: _fingerprint(v) for k, v in db.items()}
    result = run(db, ctx, ctx.tool_name, arguments)
    for key, value in db.items():
        if before.get(key) != _fingerprint(value):
            ctx.state.put(key, value)
    return result
