"""A minimal Python handler, the escape hatch for logic effect steps cannot express.

Referenced from a catalog as `"handler": "pibench_inspect.environment.handlers_demo:count_rows"`.
"""

from __future__ import annotations

from typing import Any

from .effects import ToolContext


def count_rows(ctx: ToolContext, collection: str = "orders", **_: Any) -> dict[str, Any]:
    return {"collection": collection, "count": len(ctx.state.select(collection))}
