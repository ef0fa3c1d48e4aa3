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
import threading
import time

import duckdb
import regex
from jsonschema import Draft7Validator, ValidationError, validators
from referencing import Registry

from ..domain.catalog import STEP_KEYS, Fail, Insert, Let, Select, Sql, ToolSpec, Update, Verify, handler_problem
from .limits import PATTERN_SECONDS, CallOverran, StateTooLarge
from .mapping import printable, text_ok, utf8
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


class PatternTimeout(Exception):
    """A schema pattern took longer than PATTERN_SECONDS on one value."""


# the deadline of the call this thread is executing (execute sets it): every pattern matched
# for the call shares it, so many patterned values (an array of 10,000) cannot add up past it
_CALL = threading.local()


def pattern_search(pattern: str, text: str) -> bool:
    """`re.search(pattern, text)` with a deadline: a schema `pattern` is domain data, and one
    that backtracks catastrophically (`^(a+)+$`) would hold the process for years. The `regex`
    engine (re's syntax) checks a timeout as it matches; Python's `re` cannot be interrupted.
    At most PATTERN_SECONDS a value, and never past the call's own deadline."""
    seconds = PATTERN_SECONDS
    deadline = getattr(_CALL, "deadline", None)
    if deadline is not None:
        seconds = min(seconds, deadline - time.monotonic())
        if seconds <= 0:
            raise PatternTimeout(pattern)
    try:
        return regex.search(pattern, text, timeout=seconds) is not None
    except TimeoutError:
        raise PatternTimeout(pattern) from None


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _bounded_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "string"):
        return
    try:
        if not pattern_search(pattern, instance):
            yield ValidationError(f"{_short(instance)} does not match {pattern!r}")
    except PatternTimeout:
        yield ValidationError(f"matching the pattern {pattern!r} ran out of time ({PATTERN_SECONDS:g} s a value, "
                              "within the call's deadline); the value is refused (the catalog's pattern "
                              "backtracks catastrophically)")


def _bounded_pattern_properties(validator: Any, patterns: dict, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for k, v in instance.items():
            try:
                hit = pattern_search(pattern, k)
            except PatternTimeout:
                yield ValidationError(f"matching the property pattern {pattern!r} ran out of time "
                                      f"({PATTERN_SECONDS:g} s a value, within the call's deadline)")
                continue
            if hit:
                yield from validator.descend(v, subschema, path=k, schema_path=pattern)


# Draft 7 with every regular expression matched under a deadline
BoundedValidator = validators.extend(
    Draft7Validator, {"pattern": _bounded_pattern, "patternProperties": _bounded_pattern_properties})


def _make_validator(spec: ToolSpec) -> Any:
    # Inspect's ToolParams defaults additionalProperties to false; validate the same way here
    schema = {"additionalProperties": False, **spec.schema}
    # an empty registry that retrieves nothing: a `$ref` never reaches the network
    return BoundedValidator(schema, registry=Registry())


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

    for number, step in enumerate(spec.effect, 1):
        try:
            _run_step(step, ctx, bindings, ev, bind)
        except (SoftError, ToolCallError):
            raise
        except Exception as err:
            raise StepFailed(f"effect step {number} ({step_kind(step)})", err) from None
    if spec.result is not None:
        return ev(spec.result)
    return last if have_last else {"status": "ok"}


class StepFailed(Exception):
    """A step of a call failed: `where` names it (`effect step 2 (sql)`), `error` is why."""

    def __init__(self, where: str, error: BaseException):
        super().__init__(f"{where}: {error}")
        self.where, self.error = where, error


def step_kind(step: Any) -> str:
    return next((k for k, model in STEP_KEYS.items() if isinstance(step, model)), type(step).__name__)


def _run_step(step: Any, ctx: ToolContext, bindings: dict[str, Any], ev: Callable[[Any], Any],
              bind: Callable[[str | None, Any], None]) -> None:
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

    Raises ToolCallError for a bad call; the state is then exactly as before the call. The call
    runs within the domain's limits (`state.limits`, environment/limits.py): past its deadline,
    over DuckDB's memory limit, returning too many rows or growing the stored state past its cap
    it fails with a message naming the step, and its changes roll back.
    """
    if not isinstance(arguments, dict):
        raise ToolCallError(f"arguments of {spec.name} must be a JSON object")
    try:
        with state.bounded(state.limits.call_seconds):
            _CALL.deadline = time.monotonic() + state.limits.call_seconds
            try:
                return _execute(spec, state, arguments, validate)
            finally:
                _CALL.deadline = None
    except StepFailed as failed:
        raise ToolCallError(_step_failure(spec, state, failed.where, failed.error)) from None
    except (CallOverran, duckdb.InterruptException, duckdb.OutOfMemoryException, StateTooLarge) as err:
        where = "the handler" if spec.handler else "the call"
        raise ToolCallError(_step_failure(spec, state, where, err)) from None
    except StateError as err:  # the state is busy (an earlier call that never stopped) or closed
        raise ToolCallError(f"{spec.name} failed: {err}") from None


def _step_failure(spec: ToolSpec, state: StateDB, where: str, err: BaseException) -> str:
    limits = state.limits
    if isinstance(err, (CallOverran, duckdb.InterruptException)) and state.overran:
        return (f"{spec.name} failed: {where} ran over the {limits.call_seconds:g} s a call may take "
                "(the domain's limits.call_seconds) and was stopped; nothing was changed")
    if isinstance(err, duckdb.OutOfMemoryException):
        return (f"{spec.name} failed: {where} needed more than the {limits.memory_mb} MB of memory a state may use "
                "(the domain's limits.memory_mb); nothing was changed")
    if isinstance(err, StateTooLarge):
        return f"{spec.name} failed: {err}; nothing was changed"
    if isinstance(err, StateError) and "limits.sql_rows" in str(err):
        return f"{spec.name} failed: {where}: {err}; nothing was changed"
    if isinstance(err, (StateError, TemplateError, TypeError)):
        return f"{spec.name} failed: {err}"
    return f"{spec.name} failed: {type(err).__name__}: {err}"


def unstorable_arguments(arguments: dict[str, Any]) -> list[str]:
    """Arguments holding text DuckDB cannot take (a lone surrogate, which JSON may escape)."""
    return [k for k, v in arguments.items() if not (utf8(k) and text_ok(v))]


def refuse_unstorable(tool: str, arguments: dict[str, Any]) -> None:
    """A call whose arguments the state could neither store nor search for is a tool error
    naming them, before any step runs: the same answer whatever the steps would do with it."""
    bad = unstorable_arguments(arguments)
    if bad:
        names = ", ".join(repr(printable(k)) for k in bad)
        raise ToolCallError(f"{tool} failed: argument {names} holds text that is not valid UTF-8 "
                            "(a lone surrogate); the state cannot store or search for it")


def _execute(spec: ToolSpec, state: StateDB, arguments: dict[str, Any], validate: bool) -> Any:
    if validate:
        problems = argument_errors(spec, arguments)
        if problems:
            raise ToolCallError(
                f"invalid arguments for {spec.name}: " + "; ".join(problems)
            )
    refuse_unstorable(spec.name, arguments)
    ctx = ToolContext(state, spec.name)
    read_only = reads_only(spec)
    try:
        with state.transaction(reads_only=read_only):
            result = run_effect(spec, ctx, arguments)
            json.dumps(result, default=str)  # a result that cannot be shown is a failure
            if not read_only:
                state.check_size()
    except SoftError as soft:
        return agent_view(soft.payload())
    except (StepFailed, CallOverran, StateTooLarge, ToolCallError):
        raise
    except (duckdb.InterruptException, duckdb.OutOfMemoryException):
        raise
    except (StateError, TemplateError) as err:
        raise ToolCallError(f"{spec.name} failed: {err}") from None
    except TypeError as err:
        # a handler called with an argument it does not take
        raise ToolCallError(f"{spec.name} failed: {err}") from None
    except Exception as err:  # duckdb errors and handler bugs: never corrupt, always report
        raise ToolCallError(f"{spec.name} failed: {type(err).__name__}: {err}") from None
    return agent_view(result)
