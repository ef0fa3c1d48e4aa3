"""An agent's tool calls made safe to record: no NaN or Infinity in their arguments.

A model's JSON, a local agent's dict or an A2A reply may carry NaN or Infinity as a number
argument. They are no JSON numbers: the .eval log would hold a bare `NaN` that strict JSON
readers reject. Such a call is the agent's own mistake, so it becomes a tool error for that call
(Inspect's `parse_error`: the tool never runs) and the log keeps the value as a string.
"""

from __future__ import annotations

import math
from typing import Any

from inspect_ai.model import ChatMessageAssistant

from ..environment.effects import non_finite


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
    """`message` with every tool call that carries a non-finite number turned into an error."""
    for call in message.tool_calls or []:
        problems = non_finite(call.arguments)
        if problems:
            call.arguments = _as_json(call.arguments)
            call.parse_error = f"invalid arguments for {call.function}: " + "; ".join(problems)
    return message
