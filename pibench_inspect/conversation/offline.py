"""Play a fixed list of tool calls through the engine without a model or Inspect's loop.

The calls run through the same effects on a fresh state and produce the same message shapes the
solver records (assistant message with one tool call, tool result or tool error), so the same
checks apply. Used by the validity gates and by trajectory replay.

Plays may share one deadline (`shared_deadline`: `pibench validate` gives each scenario's gate
plays one): every call of a play then runs within what is left of it, and a play that ends past
it raises PlaysOverran instead of returning what it reached, so no truncated play is judged or
remembered.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Iterator

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import ToolCall, ToolCallError

from ..domain.loader import Domain
from ..environment.effects import ToolCallError as EngineCallError
from ..environment.effects import execute
from ..environment.limits import EffectLimits
from ..environment.merge import domain_document
from ..environment.state import StateDB
from ..environment.tools import exposed_tools
from ..scenario.model import PlannedCall, Scenario
from .arguments import resolve_references


class PlaysOverran(Exception):
    """The plays ran past the deadline they share (`shared_deadline`)."""


_DEADLINE: ContextVar[float | None] = ContextVar("pibench_plays_deadline", default=None)


@contextmanager
def shared_deadline(seconds: float) -> Iterator[None]:
    """Every play in this context ends within `seconds` from now, together."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _within_deadline(limits: EffectLimits) -> EffectLimits:
    """The limits of the next call: its own deadline, cut to what is left of the shared one."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return limits
    left = deadline - time.monotonic()
    if left <= 0:
        raise PlaysOverran()
    return limits if limits.call_seconds <= left else limits.model_copy(update={"call_seconds": left})


@dataclass
class OfflineRun:
    messages: list[ChatMessage]
    final_state: dict[str, Any]
    results: list[Any]


def play_calls(
    scenario: Scenario,
    domain: Domain,
    calls: list[PlannedCall],
    *,
    final_text: str | None = None,
    validate: bool = True,
) -> OfflineRun:
    offered = {t.name: t for t in exposed_tools(domain, scenario)}
    state = StateDB(domain_document(domain, scenario), allow_sql=domain.runs_raw_sql, seed=domain.seed_state,
                    limits=domain.config.limits)
    messages: list[ChatMessage] = [
        ChatMessageSystem(content="(offline run)"),
        ChatMessageUser(content=scenario.user_simulation.initial_user_message),
    ]
    results: list[Any] = []
    try:
        for i, planned in enumerate(calls):
            args = resolve_references(planned.arguments, results)
            call_id = f"call_{i}"
            messages.append(
                ChatMessageAssistant(
                    content="", tool_calls=[ToolCall(id=call_id, function=planned.name, arguments=args)]
                )
            )
            spec = offered.get(planned.name)
            state.limits = _within_deadline(domain.config.limits)
            try:
                if spec is None:
                    raise EngineCallError(f"Tool {planned.name} not found")
                result = execute(spec, state, args, validate=validate)
                results.append(result)
                messages.append(
                    ChatMessageTool(
                        content=json.dumps(result, default=str), tool_call_id=call_id, function=planned.name
                    )
                )
            except EngineCallError as err:
                results.append(None)
                messages.append(
                    ChatMessageTool(
                        content="",
                        tool_call_id=call_id,
                        function=planned.name,
                        error=ToolCallError("parsing", str(err)),
                    )
                )
        if final_text:
            messages.append(ChatMessageAssistant(content=final_text))
        _within_deadline(domain.config.limits)  # a play whose last call was cut short is no play
        return OfflineRun(messages, state.export(), results)
    finally:
        state.close()
