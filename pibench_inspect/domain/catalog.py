"""The tool catalog: what each tool is called, takes, and does to the state.

A tool is data: a JSON-schema `parameters` object and a declarative `effect`, a list of steps
compiled to parameterized SQL against the sample's DuckDB state (see docs/authoring.md), and an
optional `result` template. A `handler` (`module:function`) stands in where steps cannot
express the logic. The original's catalogs (bare list, `tools`, `tool_definitions`; flat
parameters) are accepted and normalized.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# A catalog is data from a scenario source; a `handler` may only name a function of this
# package's own handler modules, so loading a catalog never imports anything else
HANDLER_MODULES = ("pibench_inspect.parity.", "pibench_inspect.environment.handlers_")
HANDLER_REF = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_]*)")
# the handlers a catalog may name: functions written to be handlers, not any attribute of a
# handler module (a module's imports, constants and helpers are not tools)
REGISTERED_HANDLERS = (
    "pibench_inspect.parity.generic:dispatch",
    "pibench_inspect.environment.handlers_demo:count_rows",
)
MAX_PATTERN = 500  # characters of a schema `pattern` (as of a domain's clause_pattern)


def handler_problem(ref: str) -> str | None:
    """Why `ref` may not be used as a handler, or None when it may."""
    m = HANDLER_REF.fullmatch(ref)
    if not m:
        return f"handler {ref!r} must look like 'package.module:function'"
    if not m.group(1).startswith(HANDLER_MODULES):
        return (
            f"handler {ref!r} is not allowed: handlers must live in this package's handler modules "
            f"({', '.join(p + '*' for p in HANDLER_MODULES)})"
        )
    if ref not in REGISTERED_HANDLERS:
        return f"handler {ref!r} is not a registered handler; registered: {', '.join(REGISTERED_HANDLERS)}"
    return None


def pattern_problems(schema: Any, path: str = "parameters") -> list[str]:
    """Schema `pattern`s (and `patternProperties` keys) that cannot be used: too long, or not
    a regular expression. The rest are matched with a deadline (environment/effects.py)."""
    import regex

    found = []
    if isinstance(schema, dict):
        candidates = [(f"{path}.pattern", schema["pattern"])] if isinstance(schema.get("pattern"), str) else []
        if isinstance(schema.get("patternProperties"), dict):
            candidates += [(f"{path}.patternProperties", k) for k in schema["patternProperties"]]
        for where, pattern in candidates:
            if len(pattern) > MAX_PATTERN:
                found.append(f"{where}: longer than {MAX_PATTERN} characters")
                continue
            try:
                regex.compile(pattern)
            except (regex.error, ValueError, OverflowError, RecursionError) as err:
                found.append(f"{where}: {pattern!r} is not a valid regular expression ({err})")
        for k, v in schema.items():
            if isinstance(v, (dict, list)):
                found += pattern_problems(v, f"{path}.{k}")
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            found += pattern_problems(v, f"{path}[{i}]")
    return found


def remote_refs(schema: Any, path: str = "parameters") -> list[str]:
    """`$ref`s that point anywhere but inside the schema itself (`#...`): never fetched."""
    found = []
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k == "$ref" and not (isinstance(v, str) and v.startswith("#")):
                found.append(f"{path}.$ref: {v!r} is not a local reference (#/...); schemas are never fetched")
            found += remote_refs(v, f"{path}.{k}")
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            found += remote_refs(v, f"{path}[{i}]")
    return found


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Select(Strict):
    """Read rows of a collection into `as`.

    `where` values must all match (an argument that was not given makes the step fail unless
    `optional_filters` is true, in which case missing filters are dropped). `match` chooses
    exact equality, a case-, whitespace- and type-insensitive comparison (`ci`), or `words`:
    every whitespace-separated word of the value appears in the field, case-insensitively (a
    search by words of a name; a value with no words matches nothing). `fields` keeps only
    those fields of each row, in that order (a search that must not show, say, a price). With `one`, the
    first row (or null) is bound; otherwise a list. `missing`, when given and nothing matched,
    ends the call with a soft error `{"error": true, "message": <missing>}`; `{arg}` in it is
    replaced by the argument's value.
    """

    select: str
    where: dict[str, Any] = Field(default_factory=dict)
    optional_filters: bool = False
    match: Literal["exact", "ci", "words"] = "exact"
    fields: list[str] | None = None
    one: bool = False
    key_as: str | None = None
    order_by: str | None = None
    as_: str = Field(alias="as")
    missing: str | None = None


class Insert(Strict):
    """Append a row to a collection (columns are added as needed); binds the row to `as`."""

    insert: str
    values: dict[str, Any]
    key: Any = None
    as_: str | None = Field(default=None, alias="as")


class Update(Strict):
    """Set fields on the rows matching `where`; `missing` makes "no row matched" a soft error."""

    update: str
    where: dict[str, Any]
    set: dict[str, Any]
    match: Literal["exact", "ci"] = "exact"
    missing: str | None = None
    as_: str | None = Field(default=None, alias="as")


class Sql(Strict):
    """Raw parameterized SQL. `$name` placeholders bind arguments and earlier bindings' scalars.

    Table names are the collection paths with dots replaced by `__`. Prefer the structured
    steps: they keep the absent-key bookkeeping of the state mapping in order.
    """

    sql: str
    one: bool = False
    as_: str | None = Field(default=None, alias="as")


class Let(Strict):
    """Bind values (templates allowed) to names for later steps and the result."""

    let: dict[str, Any]


class Fail(Strict):
    """End the call with a soft error when `if` holds: `{"equals": [a, b]}` or `{"truthy": a}`."""

    fail: str
    if_: dict[str, Any] = Field(alias="if")


class Verify(Strict):
    """Check values a caller supplied against a record bound by an earlier step (`against`,
    e.g. "$record"). Each field of `verify` (field -> the supplied value, usually "$argument")
    comes out `match` (equal, ignoring case and surrounding whitespace), `no_match`, or
    `not_supplied` (null or blank). Binds to `as`: the record's `keep` fields, each field's
    outcome, and under `count_as` how many matched. Identity checks need no raw SQL this way."""

    verify: dict[str, Any]
    against: str
    keep: list[str] = Field(default_factory=list)
    count_as: str | None = None
    as_: str = Field(alias="as")


Step = Union[Select, Insert, Update, Sql, Let, Fail, Verify]


class ToolSpec(Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    effect: list[Step] = Field(default_factory=list)
    handler: str | None = None
    result: Any = None
    # the original's descriptive return shapes; never shown to agents, never executed
    returns: Any = None
    # `read`: no state change; tools marked read are offered as lookups to the validity gates
    kind: Literal["read", "write", "escalation", "decision"] | None = None
    # collections a handler tool reads (effect steps declare theirs; handlers cannot be inspected)
    reads: list[str] = Field(default_factory=list)
    # parameters that take the agent's own words (reasons, summaries): the information-flow
    # gate does not look for their values in what the agent saw
    free_text: list[str] = Field(default_factory=list)
    # parameters that narrow a search (a date range, a category): many values are right, so the
    # mutation gate does not swap their values for others
    filters: list[str] = Field(default_factory=list)

    @field_validator("handler")
    @classmethod
    def _own_handler(cls, v: str | None) -> str | None:
        problem = handler_problem(v) if v is not None else None
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("parameters")
    @classmethod
    def _no_remote_refs(cls, v: dict[str, Any]) -> dict[str, Any]:
        found = remote_refs(v) + pattern_problems(v)
        if found:
            raise ValueError("; ".join(found))
        return v

    @model_validator(mode="before")
    @classmethod
    def _parse_steps(cls, data: Any) -> Any:
        # pick the step model by its leading key so errors name the right fields
        if isinstance(data, dict) and isinstance(data.get("effect"), list):
            steps = []
            for raw in data["effect"]:
                if isinstance(raw, dict):
                    for key, model in STEP_KEYS.items():
                        if key in raw:
                            steps.append(model.model_validate(raw))
                            break
                    else:
                        raise ValueError(
                            f"effect step needs one of {', '.join(STEP_KEYS)}; got keys "
                            f"{sorted(raw)}"
                        )
                else:
                    steps.append(raw)
            data = {**data, "effect": steps}
        return data

    @property
    def schema(self) -> dict[str, Any]:
        """The agent-visible JSON schema of the parameters (normalized)."""
        return normalize_parameters(self.parameters)


STEP_KEYS: dict[str, type[BaseModel]] = {
    "select": Select,
    "insert": Insert,
    "update": Update,
    "sql": Sql,
    "let": Let,
    "fail": Fail,
    "verify": Verify,
}


def normalize_parameters(params: dict[str, Any]) -> dict[str, Any]:
    """Flat `{param: {type, required: bool}}` (the original's finra/retail style) -> JSON schema.

    An OpenAI-style object schema (with `type: object` or `properties`) passes unchanged.
    """
    if not params:
        return {"type": "object", "properties": {}, "additionalProperties": False}
    if params.get("type") == "object" or "properties" in params:
        out = dict(params)
        out.setdefault("type", "object")
        out.setdefault("properties", {})
        return out
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, spec in params.items():
        if not isinstance(spec, dict):
            continue
        prop: dict[str, Any] = {"type": spec.get("type", "string")}
        if "description" in spec:
            prop["description"] = spec["description"]
        if "enum" in spec:
            prop["enum"] = spec["enum"]
        if "items" in spec:
            items = spec["items"]
            prop["items"] = {"type": items} if isinstance(items, str) else items
            prop["type"] = "array"
        properties[name] = prop
        if spec.get("required") is True:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def catalog_entries(raw: Any) -> list[Any]:
    """The tool list of any accepted catalog shape."""
    if isinstance(raw, list):
        return raw
    if isinstance(raw, dict):
        for key in ("tools", "tool_definitions"):
            if isinstance(raw.get(key), list):
                return raw[key]
    raise ValueError("expected a list of tools, or an object with `tools` or `tool_definitions`")
