"""One rule for a malformed tool call, on every way an agent comes in.

A tool call is malformed when its arguments cannot be read as a JSON object. Whatever the path
(the Inspect model under test, the LiteLLM agent, a protocol agent, an A2A agent), such a call
is not run: the agent gets a tool error for it (Inspect's `parsing` error, as Inspect's own model
path returns it), may correct itself on its next turn, and the conversation goes on. Each one
is counted in the score metadata (`malformed_calls`) and the `malformed_calls` metric.

Arguments arrive in one of three forms:

* an object (a protocol or A2A agent's `arguments: {...}`): used as it is;
* text (OpenAI's `function.arguments`, which a model, the LiteLLM agent, an OpenAI-style
  protocol agent or A2A agent sends): read by Inspect's own tool-call parser, the one its model
  providers use, so every path accepts and refuses exactly what the model path does (text that
  is not an object is taken as the tool's first argument, as Inspect does);
* anything else (a list, a number): malformed.

A call that carries NaN or Infinity is refused the same way (conversation/json_safe.py). A message
whose structure is broken (tool calls that are not a list of objects, a call with no name) is no
tool call at all: that is a protocol break (`agent_error`), as in the original.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant
from inspect_ai.tool import ToolCall, ToolDef, ToolInfo

MAX_DEPTH = 100  # nesting levels kept from arguments sent as text (as the A2A wire keeps)
PARSE_PREFIX = "Error parsing the following tool call arguments:\n\n"
PARSE_DETAILS = "\n\nError details:"


def _infos(tools: list[ToolDef] | None) -> list[ToolInfo]:
    return [ToolInfo(name=t.name, description=t.description, parameters=t.parameters) for t in tools or []]


def read_call(call_id: str, name: str, arguments: Any, tools: list[ToolDef] | None = None) -> ToolCall:
    """A tool call from what an agent sent; a malformed one carries a `parse_error` and never runs."""
    if isinstance(arguments, dict):
        return ToolCall(id=call_id, function=name, arguments=arguments)
    if arguments is None or isinstance(arguments, str):
        # Inspect's model providers read a model's call with this function (the same module
        # path its own providers import it from), so the paths cannot drift apart
        from ..runtime.inspect_internals import parse_tool_call

        try:
            call = parse_tool_call(call_id, name, arguments, _infos(tools))
        except (RecursionError, ValueError) as err:  # nested too deep for the parser, or worse
            return ToolCall(id=call_id, function=name, arguments={},
                            parse_error=f"tool call arguments that cannot be read: {type(err).__name__}")
        if not call.parse_error and nested_deeper(call.arguments, MAX_DEPTH):
            # text is the one form whose depth nobody checked before it was parsed
            return ToolCall(id=call_id, function=name, arguments={},
                            parse_error=f"tool call arguments nested deeper than {MAX_DEPTH} levels")
        return call
    return ToolCall(id=call_id, function=name, arguments={},
                    parse_error=f"tool call arguments must be a JSON object, not {json_type(arguments)}")


def nested_deeper(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than `limit` (iterative: no recursion on hostile input)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def json_type(value: Any) -> str:
    return {list: "an array", bool: "a boolean", int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def raw_arguments(call: ToolCall) -> str | None:
    """The text a malformed call's arguments were, recovered from Inspect's parse error (which
    quotes it, middle-truncated past 16 KB); None when the error does not quote it."""
    error = call.parse_error or ""
    if not error.startswith(PARSE_PREFIX) or PARSE_DETAILS not in error:
        return None
    return error[len(PARSE_PREFIX):error.rindex(PARSE_DETAILS)]


def malformed_calls(messages: list[ChatMessage]) -> int:
    """How many of the agent's tool calls in the conversation were malformed (never run)."""
    return sum(
        1
        for m in messages
        if isinstance(m, ChatMessageAssistant)
        for c in m.tool_calls or []
        if c.parse_error
    )


def protocol_arguments(call: ToolCall) -> Any:
    """A call Inspect's model path read, as a protocol agent hands it on: the object, or for a
    malformed call the text the model sent, which `read_call` then refuses exactly as Inspect
    did. (Inspect only refuses text that opens with `{`; should its error ever not quote the
    text, the error itself is handed on behind a `{`, still unreadable, never run.)"""
    if call.parse_error:
        raw = raw_arguments(call)
        return raw if raw is not None else "{" + call.parse_error
    return call.arguments
