"""Build conversations by hand for check and decision tests."""

from __future__ import annotations

from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall, ToolCallError

from pibench_inspect.checks.trace import build_trace
from pibench_inspect.environment.tools import BLOCKED_ERROR_TYPE, BLOCKED_MESSAGE

# a call the hard gate stopped, as Inspect records it (environment/tools.py)
BLOCKED = ToolCallError(BLOCKED_ERROR_TYPE, f"{BLOCKED_MESSAGE}.")


def conversation(*steps):
    """steps: ("user", text) | ("say", text) | ("call", name, args[, error]); an error is a
    ToolCallError, or text for an ordinary failed call."""
    msgs = [ChatMessageSystem(content="policy")]
    n = 0
    for step in steps:
        if step[0] == "user":
            msgs.append(ChatMessageUser(content=step[1]))
        elif step[0] == "say":
            msgs.append(ChatMessageAssistant(content=step[1]))
        else:
            name, args = step[1], step[2]
            error = step[3] if len(step) > 3 else None
            cid = f"c{n}"
            n += 1
            msgs.append(ChatMessageAssistant(content="", tool_calls=[ToolCall(id=cid, function=name, arguments=args)]))
            msgs.append(ChatMessageTool(content="{}" if not error else "", tool_call_id=cid, function=name,
                                        error=(error if isinstance(error, ToolCallError) else ToolCallError("unknown", error)) if error else None))
    return msgs


def trace(*steps):
    return build_trace(conversation(*steps))
