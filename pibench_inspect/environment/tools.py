"""Inspect tools built at run time from the catalog, bound to one sample's state."""

from __future__ import annotations

import json
from typing import Any

from inspect_ai.tool import ToolDef, ToolError, ToolParams

from ..domain.catalog import ToolSpec
from ..domain.loader import Domain
from ..scenario.model import Scenario
from .effects import ToolCallError, execute
from .state import StateDB

BLOCKED_MESSAGE = "Tool not permitted by policy"
# JSON-schema keywords Inspect's ToolParams silently drops; a catalog must not rely on them
UNSUPPORTED_KEYWORDS = ("oneOf", "anyOf", "allOf", "const", "$ref", "not")


def exposed_tools(domain: Domain, scenario: Scenario) -> list[ToolSpec]:
    """Catalog order; filtered by `available_tools` when the scenario has it."""
    if scenario.available_tools is None:
        return list(domain.tools)
    wanted = set(scenario.available_tools)
    return [t for t in domain.tools if t.name in wanted]


def unsupported_keywords(schema: Any, path: str = "parameters") -> list[str]:
    found = []
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in UNSUPPORTED_KEYWORDS:
                found.append(f"{path}.{k}")
            found += unsupported_keywords(v, f"{path}.{k}")
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            found += unsupported_keywords(v, f"{path}[{i}]")
    return found


def with_descriptions(schema: dict[str, Any]) -> dict[str, Any]:
    """Inspect requires a description for every parameter; catalogs may omit them."""
    props = {
        name: ({**p, "description": name.replace("_", " ")} if not p.get("description") else p)
        for name, p in schema.get("properties", {}).items()
    }
    return {**schema, "properties": props}


def tool_def(spec: ToolSpec, state: StateDB, *, blocked: bool = False) -> ToolDef:
    async def run(**kwargs: Any) -> str:
        if blocked:
            raise ToolError(BLOCKED_MESSAGE)
        try:
            result = execute(spec, state, kwargs)
        except ToolCallError as err:
            raise ToolError(str(err)) from None
        return json.dumps(result, default=str)

    params = ToolParams.model_validate(with_descriptions(spec.schema))
    return ToolDef(run, name=spec.name, description=spec.description or spec.name, parameters=params)


def build_tools(
    domain: Domain, scenario: Scenario, state: StateDB, *, forbidden: set[str] | None = None
) -> list[ToolDef]:
    """One ToolDef per exposed tool. With `forbidden` (hard-gate mode) those tools refuse."""
    forbidden = forbidden or set()
    return [tool_def(s, state, blocked=s.name in forbidden) for s in exposed_tools(domain, scenario)]
