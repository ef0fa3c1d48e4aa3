"""Play a fixed list of tool calls through the engine without a model or Inspect's loop.

The calls run through the same effects on a fresh state and produce the same message shapes the
solver records (assistant message with one tool call, tool result or tool error), so the same
checks apply. Used by the validity gates and by trajectory replay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

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
from ..environment.merge import domain_document
from ..environment.state import StateDB
from ..environment.tools import exposed_tools
from ..scenario.model import PlannedCall, Scenario
from .arguments import resolve_references


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
        return OfflineRun(messages, state.export(), results)
    finally:
        state.close()
