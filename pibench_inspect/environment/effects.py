"""Run one tool call against a sample's state: validate, execute the effect, roll back on failure.

The clock is the scenario's `now`; ids come from a counter in the state, so the same call
sequence always yields the same results and the same final state.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable

import math

from jsonschema import Draft7Validator
from referencing import Registry

from ..domain.catalog import Fail, Insert, Let, Select, Sql, ToolSpec, Update, Verify, handler_problem
from .once import PerObject
from .state import StateDB, StateError
from .templates import TemplateError, condition, render

DEFAULT_NOW = "2026-01-01T00:00:00+00:00"


class SoftError(Exception):
    """A domain-level refusal: returned to the agent as `{"error": true, "message": ...}`."""

    def __init__(self, message: str, **fields: Any):
        super().__init__(message)
        self.message = message
        self.fields = fields

    def payload(self) -> dict[str, Any]:
        return {"error": True, "message": self.message, **self.fields}


class ToolCallError(Exception):
    """The call itself is bad (unknown tool, invalid arguments, failing effect): a tool error."""


@dataclass
class ToolContext:
    state: StateDB
    tool_name: str = ""

    @property
    def now(self) -> str:
        return str(self.state.get_scalar("now") or DEFAULT_NOW)

    def new_id(self, prefix: str) -> str:
        n = int(self.state.get_scalar("_id_counter", 0) or 0)
        self.state.set_scalar("_id_counter", n + 1)
        digest = hashlib.sha256(f"{prefix}:{n}".encode()).hexdigest()[:8].upper()
        return f"{prefix}_{digest}"


def today(now: str) -> str:
    try:
        return datetime.fromisoformat(now).date().isoformat()
    except ValueError:
        return now[:10]


def _make_validator(spec: ToolSpec) -> Draft7Validator:
    # Inspect's ToolParams defaults additionalProperties to false; validate the same way here
    schema = {"additionalProperties": False, **spec.schema}
    # an empty registry that retrieves nothing: a `$ref` never reaches the network
    return Draft7Validator(schema, registry=Registry())


# built once per catalog tool, not once per call
_validator = PerObject(_make_validator)


def argument_errors(spec: ToolSpec, arguments: dict[str, Any]) -> list[str]:
    validator = _validator(spec)
    errors = non_finite(arguments)
    for e in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path)):
        where = ".".join(str(p) for p in e.path)
        errors.append(f"{where}: {e.message}" if where else e.message)
    return errors


def non_finite(arguments: Any) -> list[str]:
    """NaN and Infinity in an agent's arguments: no JSON number, and never written to the log.
    Iterative: the arguments are the agent's, and may nest as deep as it likes."""
    found = []
    stack: list[tuple[Any, str]] = [(arguments, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            name = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            found.append(f"{where or 'arguments'}: {name} is not a JSON number")
        elif isinstance(value, dict):
            stack += [(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return sorted(found)


def resolve_handler(ref: str) -> Callable[..., Any]:
    problem = handler_problem(ref)
    if problem:  # catalogs are checked at load; this also covers specs built in code
        raise ToolCallError(problem)
    module, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ToolCallError(f"handler {ref!r} cannot be loaded: {err}") from None


def run_effect(spec: ToolSpec, ctx: ToolContext, arguments: dict[str, Any]) -> Any:
    if spec.handler:
        return resolve_handler(spec.handler)(ctx, **arguments)
    props = spec.schema.get("properties", {})
    bindings: dict[str, Any] = {name: None for name in props}
    bindings.update(arguments)
    bindings["now"] = ctx.now
    bindings["today"] = today(ctx.now)
    last: Any = None
    have_last = False

    def ev(t: Any) -> Any:
        return render(t, bindings, ctx.new_id)

    def bind(name: str | None, value: Any) -> None:
        nonlocal last, have_last
        last, have_last = value, True
        if name:
            bindings[name] = value

    for step in spec.effect:
        if isinstance(step, Select):
            where = {k: ev(v) for k, v in step.where.items()}
            if step.optional_filters:
                where = {k: v for k, v in where.items() if v is not None}
            rows = ctx.state.select(step.select, where, match=step.match, order_by=step.order_by)
            if step.key_as:
                rows = [{step.key_as: r.pop("_key", None), **r} for r in rows]
            if step.fields is not None:
                rows = [{f: r[f] for f in step.fields if f in r} for r in rows]
            if not rows and step.missing:
                raise SoftError(ev(step.missing), **{k: v for k, v in where.items()})
            bind(step.as_, (rows[0] if rows else None) if step.one else rows)
        elif isinstance(step, Insert):
            values = ev(step.values)
            key = ev(step.key)
            row = ctx.state.insert(step.insert, values, None if key is None else str(key))
            bind(step.as_, row)
        elif isinstance(step, Update):
            where = {k: ev(v) for k, v in step.where.items()}
            rows = ctx.state.update(step.update, where, ev(step.set), match=step.match)
            if not rows and step.missing:
                raise SoftError(ev(step.missing), **where)
            bind(step.as_, rows)
        elif isinstance(step, Let):
            for name, template in step.let.items():
                bind(name, ev(template))
        elif isinstance(step, Fail):
            if condition(step.if_, bindings, ctx.new_id):
                raise SoftError(ev(step.fail))
        elif isinstance(step, Sql):
            rows = ctx.state.sql(step.sql, _sql_params(step.sql, bindings))
            bind(step.as_, (rows[0] if rows else None) if step.one else rows)
        elif isinstance(step, Verify):
            bind(step.as_, verify_fields(step, ev(step.against), ev))
    if spec.result is not None:
        return ev(spec.result)
    return last if have_last else {"status": "ok"}


def verify_outcome(given: Any, recorded: Any) -> str:
    """`not_supplied` (null or blank), `match` (equal ignoring case and surrounding
    whitespace) or `no_match`."""
    if given is None or not str(given).strip():
        return "not_supplied"
    if recorded is not None and str(recorded).strip().lower() == str(given).strip().lower():
        return "match"
    return "no_match"


def verify_fields(step: Verify, record: Any, ev: Callable[[Any], Any]) -> dict[str, Any]:
    record = record if isinstance(record, dict) else {}
    out: dict[str, Any] = {name: record.get(name) for name in step.keep}
    matched = 0
    for name, template in step.verify.items():
        out[name] = verify_outcome(ev(template), record.get(name))
        matched += out[name] == "match"
    if step.count_as:
        out[step.count_as] = matched
    return out


def _sql_params(sql: str, bindings: dict[str, Any]) -> dict[str, Any]:
    import re

    names = set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", sql))
    missing = [n for n in names if n not in bindings]
    if missing:
        raise ToolCallError(f"sql step refers to unknown names: {', '.join(sorted(missing))}")
    return {n: bindings[n] for n in names}


def reads_only(spec: ToolSpec) -> bool:
    """A declarative tool whose steps only read (select, let, fail): it needs no database
    transaction. Handlers and `sql` steps may write anything."""
    return not spec.handler and not any(isinstance(s, (Insert, Update, Sql)) for s in spec.effect)


# columns of the state mapping that are not data (a keyed row's key, document order, key order)
BOOKKEEPING = frozenset({"_key", "_pos", "_keys"})


def agent_view(value: Any) -> Any:
    """A result as the agent may see it: the state mapping's bookkeeping columns removed.

    Keyed rows carry their id in a field of their own (or `key_as` exposes it), so dropping
    `_key` hides nothing an agent needs. Replay of recorded runs (parity) does not come here.
    """
    if isinstance(value, dict):
        return {k: agent_view(v) for k, v in value.items() if k not in BOOKKEEPING}
    if isinstance(value, list):
        return [agent_view(v) for v in value]
    return value


def execute(
    spec: ToolSpec, state: StateDB, arguments: dict[str, Any], *, validate: bool = True
) -> Any:
    """Execute one call; returns the JSON-serializable result (soft errors included).

    Raises ToolCallError for a bad call; the state is then exactly as before the call.
    """
    if not isinstance(arguments, dict):
        raise ToolCallError(f"arguments of {spec.name} must be a JSON object")
    if validate:
        problems = argument_errors(spec, arguments)
        if problems:
            raise ToolCallError(
                f"invalid arguments for {spec.name}: " + "; ".join(problems)
            )
    ctx = ToolContext(state, spec.name)
    try:
        with state.transaction(reads_only=reads_only(spec)):
            result = run_effect(spec, ctx, arguments)
            json.dumps(result, default=str)  # a result that cannot be shown is a failure
    except SoftError as soft:
        return agent_view(soft.payload())
    except (StateError, TemplateError) as err:
        raise ToolCallError(f"{spec.name} failed: {err}") from None
    except ToolCallError:
        raise
    except TypeError as err:
        # a handler called with an argument it does not take
        raise ToolCallError(f"{spec.name} failed: {err}") from None
    except Exception as err:  # duckdb errors and handler bugs: never corrupt, always report
        raise ToolCallError(f"{spec.name} failed: {type(err).__name__}: {err}") from None
    return agent_view(result)
