"""An agent's tool calls made safe to record: no NaN or Infinity in their arguments.

A model's JSON, a local agent's dict or an A2A reply may carry NaN or Infinity as a number
argument. They are no JSON numbers: the .eval log would hold a bare `NaN` that strict JSON
readers reject. Such a call is the agent's own mistake, so it becomes a tool error for that call
(Inspect's `parse_error`: the tool never runs) and the log keeps the value as a string.
"""

from __future__ import annotations

import json
import math
from typing import Any

from inspect_ai.model import ChatMessageAssistant

from ..environment.effects import non_finite
from ..environment.mapping import utf8


def _as_json(value: Any) -> Any:
    stack = [value]
    while stack:  # iterative: the agent chooses how deep its arguments nest
        v = stack.pop()
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, child in list(items):
            if isinstance(child, float) and not math.isfinite(child):
                v[k] = "NaN" if math.isnan(child) else ("Infinity" if child > 0 else "-Infinity")
            elif isinstance(child, (dict, list)):
                stack.append(child)
    return value


def json_safe_calls(message: ChatMessageAssistant) -> ChatMessageAssistant:
    """`message` with every tool call that carries a non-finite number turned into an error,
    and one whose arguments cannot be recorded at all (unrecordable) into an error whose
    arguments the log keeps as `{}` (the reason is the call's error)."""
    for call in message.tool_calls or []:
        problem = unrecordable(call.arguments, "the arguments")
        if problem:
            call.arguments = {}
            call.parse_error = f"invalid arguments for {call.function}: {problem}"
            continue
        problems = non_finite(call.arguments)
        if problems:
            call.arguments = _as_json(call.arguments)
            call.parse_error = f"invalid arguments for {call.function}: " + "; ".join(problems)
    return message


# What an agent's message may hold so that the log can record it. The log writer refuses values
# nested beyond a few hundred levels ("Maximum serialization depth exceeded") and then loses the
# whole run; Python cannot turn an int of more than 4,300 digits into text; a value that holds
# itself never ends. Scenario JSON nests at most 64 levels (scenario/reading.py): so do messages.
MAX_DEPTH = 64
MAX_INT_BITS = 14_000  # ~4,200 decimal digits, below Python's int-to-str limit of 4,300
MAX_VALUES = 1_000_000  # values walked in one message (a value shared many times counts each time)


def unrecordable(value: Any, what: str = "the message") -> str | None:
    """Why `value` cannot be recorded as JSON in the log, or None: nesting beyond MAX_DEPTH
    (a value that contains itself among them), an integer beyond MAX_INT_BITS, a key that is not
    a string, text that is not valid UTF-8, or a type JSON lacks. Iterative, bounded by
    MAX_VALUES: the value is the agent's, and may be built to exhaust a recursive walk."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    walked = 0
    while stack:
        v, depth = stack.pop()
        walked += 1
        if walked > MAX_VALUES:
            return f"{what}: more than {MAX_VALUES:,} values"
        if v is None or isinstance(v, (bool, float)):
            continue
        if isinstance(v, str):
            if not utf8(v):
                return f"{what}: text that is not valid UTF-8 (a lone surrogate)"
            continue
        if isinstance(v, int):
            if v.bit_length() > MAX_INT_BITS:
                return f"{what}: an integer of {v.bit_length():,} bits, too large to write as text"
            continue
        if isinstance(v, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                return f"{what}: nested deeper than {MAX_DEPTH} levels (or a value that contains itself)"
            if isinstance(v, dict):
                for k, x in dict.items(v):
                    if not isinstance(k, str):
                        return f"{what}: an object key that is not a string ({type(k).__name__})"
                    if not utf8(k):
                        return f"{what}: an object key that is not valid UTF-8"
                    stack.append((x, depth + 1))
            else:
                stack.extend((x, depth + 1) for x in v)
            continue
        return f"{what}: a {type(v).__name__}, which is not a JSON value"
    return None



def describe_error(err: BaseException, limit: int = 500) -> str:
    """`Type: message` of an exception raised by code we do not control: its `__str__` may raise
    or return anything, and its message may be huge or nest without end (a deep structure)."""
    try:
        name = type(err).__name__
        name = name if isinstance(name, str) else "Exception"
    except Exception:  # noqa: BLE001
        name = "Exception"
    try:
        text = str(err)
        if not isinstance(text, str):
            raise TypeError
    except BaseException:  # noqa: BLE001 (a __str__ that raises, recurses or exits)
        return f"{name} (its message cannot be rendered)"
    text = text.encode("utf-8", "replace").decode("utf-8")
    if len(text) > limit:
        text = text[:limit] + f"... ({len(text):,} characters)"
    return f"{name}: {text}" if text else name
