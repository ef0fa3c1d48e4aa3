"""Inspect tools built at run time from the catalog, bound to one sample's state."""

from __future__ import annotations

import json
from typing import Any

from inspect_ai.tool import ToolDef, ToolError, ToolParams

from ..domain.catalog import ToolSpec
from ..domain.loader import Domain
from ..scenario.model import Scenario
from .effects import ToolCallError, execute
from .once import PerObject
from .state import StateDB

BLOCKED_MESSAGE = "Tool not permitted by policy"
# JSON-schema keywords a catalog must not rely on. Inspect builds a tool's parameters with its
# ToolParams / JSONSchema models, which keep only their own fields and silently drop every other
# keyword (minItems, maxItems, uniqueItems, exclusiveMinimum, exclusiveMaximum, multipleOf, title,
# const, oneOf, allOf, not, $ref, $defs, minProperties, patternProperties, ...): the model would
# never see the constraint. anyOf is kept by Inspect but not every provider accepts it.
UNSUPPORTED_KEYWORDS = ("oneOf", "anyOf", "allOf", "const", "$ref", "not")


def exposed_tools(domain: Domain, scenario: Scenario) -> list[ToolSpec]:
    """Catalog order; filtered by `available_tools` when the scenario has it."""
    if scenario.available_tools is None:
        return list(domain.tools)
    wanted = set(scenario.available_tools)
    return [t for t in domain.tools if t.name in wanted]


def unsupported_keywords(schema: Any, path: str = "parameters") -> list[str]:
    """Paths of the keywords Inspect would drop from (or we do not support in) a tool's
    parameters, e.g. `parameters.properties.items.minItems`. Walks only schema positions
    (properties, items, additionalProperties, anyOf), never values such as enum or default."""
    from inspect_ai.tool import ToolParams
    from inspect_ai.util import JSONSchema

    def walk(node: Any, where: str, kept: set[str]) -> list[str]:
        if not isinstance(node, dict):
            return []
        found = [f"{where}.{k}" for k in node if k not in kept or k in UNSUPPORTED_KEYWORDS]
        nested = set(JSONSchema.model_fields)
        for name, sub in (node.get("properties") or {}).items() if isinstance(node.get("properties"), dict) else ():
            found += walk(sub, f"{where}.properties.{name}", nested)
        for key in ("items", "additionalProperties"):
            found += walk(node.get(key), f"{where}.{key}", nested)
        for i, sub in enumerate(node.get("anyOf") or [] if isinstance(node.get("anyOf"), list) else []):
            found += walk(sub, f"{where}.anyOf[{i}]", nested)
        return found

    return walk(schema, path, set(ToolParams.model_fields))


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

    return ToolDef(run, name=spec.name, description=spec.description or spec.name, parameters=tool_params(spec))


def _make_params(spec: ToolSpec) -> ToolParams:
    return ToolParams.model_validate(with_descriptions(spec.schema))


# a catalog tool's Inspect parameters, validated once per process, not once per sample (Inspect
# only reads them; every sample's ToolDef shares them)
tool_params = PerObject(_make_params)


def build_tools(
    domain: Domain, scenario: Scenario, state: StateDB, *, forbidden: set[str] | None = None
) -> list[ToolDef]:
    """One ToolDef per exposed tool. With `forbidden` (hard-gate mode) those tools refuse."""
    forbidden = forbidden or set()
    return [tool_def(s, state, blocked=s.name in forbidden) for s in exposed_tools(domain, scenario)]
