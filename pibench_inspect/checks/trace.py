"""The run as the checks see it: tool-call entries and agent messages, read from the messages.

Everything is derived from the conversation stored in the log, so a log can be re-scored
without re-running the agent. Every attempted call counts, including calls that errored, were
blocked, or named a tool that does not exist.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool

from ..environment.tools import BLOCKED_ERROR_TYPE, BLOCKED_MESSAGE


@dataclass
class TraceEntry:
    index: int  # position among tool calls (the original's step_index)
    call_id: str
    name: str
    arguments: dict[str, Any]
    message_index: int  # index of the assistant message in the conversation
    error: str | None = None
    result: str | None = None
    error_type: str | None = None  # Inspect's ToolCallError type

    @property
    def blocked(self) -> bool:
        """Stopped by the hard gate: told by the error's type, which only the gate produces.

        Logs written before the gate raised its own type hold a blocked call as an ordinary
        tool error whose whole text is the gate's message (no full stop; the gate's error now
        has one). Such a log re-scores as it was scored: only that exact text counts, never a
        message that quotes it."""
        if self.error_type == BLOCKED_ERROR_TYPE:
            return True
        return self.error_type in (None, "unknown") and self.error == BLOCKED_MESSAGE

    def result_json(self) -> Any:
        try:
            return json.loads(self.result or "")
        except json.JSONDecodeError:
            return None


@dataclass
class AgentMessage:
    message_index: int
    text: str
    has_tool_calls: bool


@dataclass
class Trace:
    entries: list[TraceEntry] = field(default_factory=list)
    agent_messages: list[AgentMessage] = field(default_factory=list)
    transcript: list[tuple[str, str]] = field(default_factory=list)  # (role, text) without tools

    def named(self, name: str) -> list[TraceEntry]:
        return [e for e in self.entries if e.name == name]

    def first_index(self, name: str) -> int | None:
        for e in self.entries:
            if e.name == name:
                return e.index
        return None


def build_trace(messages: list[ChatMessage]) -> Trace:
    trace = Trace()
    results: dict[str, ChatMessageTool] = {
        m.tool_call_id: m for m in messages if isinstance(m, ChatMessageTool) and m.tool_call_id
    }
    for i, m in enumerate(messages):
        if m.role == "system":
            continue
        if isinstance(m, ChatMessageAssistant):
            trace.agent_messages.append(AgentMessage(i, m.text, bool(m.tool_calls)))
            if m.text.strip():
                trace.transcript.append(("assistant", m.text))
            for call in m.tool_calls or []:
                res = results.get(call.id)
                args = call.arguments if isinstance(call.arguments, dict) else {}
                trace.entries.append(
                    TraceEntry(
                        index=len(trace.entries),
                        call_id=call.id,
                        name=call.function,
                        arguments=args,
                        message_index=i,
                        error=(res.error.message if res is not None and res.error else None),
                        result=(res.text if res is not None else None),
                        error_type=(res.error.type if res is not None and res.error else None),
                    )
                )
        elif m.role == "user":
            trace.transcript.append(("user", m.text))
    return trace
