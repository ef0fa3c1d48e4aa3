"""Inspect tools built at run time from the catalog, bound to one sample's state."""

from __future__ import annotations

import json
from typing import Any

from inspect_ai.tool import ToolDef, ToolError, ToolParams

from ..domain.catalog import ToolSpec
from ..domain.loader import Domain
from ..scenario.model import Scenario
from ..runtime.workers import TOOL_POOL, PoolExhausted
from .effects import ToolCallError, execute
from .once import PerObject
from .state import StateDB

# seconds a call's worker may take to stop once its deadline has passed (DuckDB stops within
# milliseconds of its interrupt, Python-side loops at their next check)
STOP_GRACE = 5.0

BLOCKED_MESSAGE = "Tool not permitted by policy"
# A call the hard gate blocks raises PermissionError, which Inspect records as a tool error of
# this type; no other call can end so (run_call turns any other PermissionError into an ordinary
# tool error), so a blocked call is told by its structure, never by text an agent can influence.
BLOCKED_ERROR_TYPE = "permission"
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
            raise PermissionError(BLOCKED_MESSAGE)
        result = await run_call(spec, state, kwargs)
        return json.dumps(result, default=str)

    return ToolDef(run, name=spec.name, description=spec.description or spec.name, parameters=tool_params(spec))


async def run_call(spec: ToolSpec, state: StateDB, arguments: dict[str, Any]) -> Any:
    """`execute` off the event loop, in a daemon worker: a call that takes its time (DuckDB,
    a pattern, a handler) holds only its own sample, never the loop (limits, SIGINT and every
    other sample go on). Its deadline is enforced inside (`StateDB.bounded`); the wait here is
    a backstop for a worker that does not stop after it."""
    try:
        outcome = await TOOL_POOL.run(execute, spec, state, arguments,
                                      timeout=state.limits.call_seconds + STOP_GRACE)
    except TimeoutError:
        raise ToolError(f"{spec.name} failed: the call did not stop within {STOP_GRACE:g} s of its "
                        f"{state.limits.call_seconds:g} s deadline; later calls on this state are refused") from None
    except PoolExhausted as err:
        raise ToolError(f"{spec.name} failed: {err}") from None
    if outcome.error is None:
        return outcome.value
    if isinstance(outcome.error, ToolCallError):
        raise ToolError(str(outcome.error)) from None
    if isinstance(outcome.error, PermissionError):  # only the hard gate's calls end as "permission"
        raise ToolError(f"{spec.name} failed: {outcome.error}") from None
    raise outcome.error


async def settle(state: StateDB, seconds: float = STOP_GRACE) -> bool:
    """Stop the call still running on `state` (a sample cancelled mid-call) and wait, shielded
    from the cancellation, up to `seconds` for its worker to leave the state; whether it did."""
    import anyio

    if state.free:
        return True
    state.interrupt()
    with anyio.move_on_after(seconds, shield=True):
        while not state.free:
            await anyio.sleep(0.01)
    return state.free


def patterns_described(node: Any) -> Any:
    """The schema with every `pattern` moved into its description. Inspect checks a call's
    arguments against the parameters it was given with `re`, on the event loop, before the tool
    runs: a catastrophic pattern there would hold the whole process. The agent still reads the
    constraint, and our own validation (environment/effects.py) enforces it with a deadline."""
    if isinstance(node, list):
        return [patterns_described(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: (patterns_described(v) if k in ("properties", "items", "additionalProperties", "anyOf") else v)
           for k, v in node.items() if k != "pattern"}
    if isinstance(node.get("properties"), dict):
        out["properties"] = {k: patterns_described(v) for k, v in node["properties"].items()}
    if isinstance(node.get("pattern"), str):
        said = f"a string matching the regular expression {node['pattern']}"
        out["description"] = f"{node['description']} ({said})" if node.get("description") else said.capitalize()
    return out


def _make_params(spec: ToolSpec) -> ToolParams:
    return ToolParams.model_validate(with_descriptions(patterns_described(spec.schema)))


# a catalog tool's Inspect parameters, validated once per process, not once per sample (Inspect
# only reads them; every sample's ToolDef shares them)
tool_params = PerObject(_make_params)


def build_tools(
    domain: Domain, scenario: Scenario, state: StateDB, *, forbidden: set[str] | None = None
) -> list[ToolDef]:
    """One ToolDef per exposed tool. With `forbidden` (hard-gate mode) those tools refuse."""
    forbidden = forbidden or set()
    return [tool_def(s, state, blocked=s.name in forbidden) for s in exposed_tools(domain, scenario)]
