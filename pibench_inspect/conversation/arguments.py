"""Arguments of planned tool calls: filling required parameters, and `{{calls[i].field}}`
references to earlier results. Shared by the built-in agents, the derived oracle plans and the
offline player, so none of them has to import another."""

from __future__ import annotations

import re
from typing import Any, Callable

from ..domain.catalog import ToolSpec

CALL_REF = re.compile(r"\{\{calls\[(\d+)\]((?:\.[A-Za-z0-9_\-]+)+)\}\}")

NEUTRAL = {"array": [], "object": {}, "integer": 0, "number": 0, "boolean": False}


def fill_arguments(
    spec: ToolSpec, given: dict[str, Any], guess: Callable[[str], Any] | None = None
) -> dict[str, Any]:
    """`given` plus a value for every other required parameter: the first enum value, else what
    `guess(name)` finds for a string parameter, else a neutral value of the parameter's type."""
    schema = spec.schema
    args = dict(given)
    for name in schema.get("required", []):
        if name in args:
            continue
        prop = schema.get("properties", {}).get(name, {})
        if prop.get("enum"):
            args[name] = prop["enum"][0]
            continue
        kind = prop.get("type", "string")
        kind = kind[0] if isinstance(kind, list) else kind
        found = guess(name) if guess and kind == "string" else None
        args[name] = found if found is not None else NEUTRAL.get(kind, "not provided")
    return args


def resolve_references(value: Any, results: list[Any]) -> Any:
    """Replace `{{calls[i].field}}` with a field of an earlier call's JSON result."""
    if isinstance(value, dict):
        return {k: resolve_references(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_references(v, results) for v in value]
    if not isinstance(value, str) or "{{" not in value:
        return value

    def get(m: re.Match[str]) -> Any:
        i = int(m.group(1))
        cur = results[i] if i < len(results) else None
        for f in m.group(2).strip(".").split("."):
            cur = cur.get(f) if isinstance(cur, dict) else None
        return cur

    whole = CALL_REF.fullmatch(value)
    if whole:
        return get(whole)
    return CALL_REF.sub(lambda m: "" if get(m) is None else str(get(m)), value)
