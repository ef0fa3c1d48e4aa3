"""Conversations on the A2A wire: OpenAI-format messages and tools, as the original sent them.

Inspect messages -> OpenAI history (the green side sends it every turn); a reply's parts and
tool calls (OpenAI style or flat) -> a protocol assistant message.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolDef

from .wire import MAX_DEPTH, A2AError, depth_exceeds


def openai_tools(tools: list[ToolDef]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description,
                                          "parameters": t.parameters.model_dump(exclude_none=True)}}
        for t in tools
    ]


def openai_history(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The conversation without the system prompt (the benchmark context travels separately)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, ChatMessageUser):
            out.append({"role": "user", "content": m.text})
        elif isinstance(m, ChatMessageAssistant):
            item: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                item["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.function, "arguments": json.dumps(c.arguments)}}
                    for c in m.tool_calls
                ]
            out.append(item)
        elif isinstance(m, ChatMessageTool):
            out.append({"role": "tool", "tool_call_id": m.tool_call_id,
                        "content": m.error.message if m.error else m.text})
    return out


def protocol_calls(calls: Any, where: str) -> list[dict[str, Any]]:
    """OpenAI-style `{"id", "type", "function": {"name", "arguments"}}` or flat
    `{"id", "name", "arguments"}` tool calls -> protocol calls. Arguments are passed on as sent
    (an object, or JSON text): the adapter reads them by the one rule for every agent, and
    arguments that cannot be read make a malformed call, a tool error the agent can recover
    from (conversation/tool_calls.py), not a broken reply."""
    if not isinstance(calls, list) or not calls:
        raise A2AError(f"{where}: tool_calls must be a non-empty list")
    out = []
    for i, c in enumerate(calls):
        if not isinstance(c, dict):
            raise A2AError(f"{where}: tool_calls[{i}] must be an object")
        fn = c.get("function") if isinstance(c.get("function"), dict) else c
        name, args = fn.get("name"), fn.get("arguments", {})
        if not isinstance(name, str) or not name.strip():
            raise A2AError(f"{where}: tool_calls[{i}] has no function name")
        if isinstance(args, str) and not args.strip():
            args = {}
        elif isinstance(args, (dict, list)) and depth_exceeds(args, MAX_DEPTH):
            raise A2AError(f"{where}: tool_calls[{i}] ({name}) arguments are nested deeper than {MAX_DEPTH} levels")
        call_id = c.get("id") if isinstance(c.get("id"), str) and c.get("id") else f"call_{uuid.uuid4().hex[:12]}"
        out.append({"id": call_id, "name": name, "arguments": args})
    return out


def assistant_message(parts: list[dict[str, Any]], where: str) -> dict[str, Any]:
    """A purple reply's parts -> a protocol assistant message (reference 5.6 decoding)."""
    for part in parts:
        if part["kind"] == "data":
            data = part.get("data")
            if isinstance(data, dict) and data.get("tool_calls") is not None:
                msg: dict[str, Any] = {"role": "assistant", "tool_calls": protocol_calls(data["tool_calls"], where)}
                if isinstance(data.get("content"), str) and data["content"].strip():
                    msg["content"] = data["content"]
                return msg
            if isinstance(data, dict) and "content" in data:
                return {"role": "assistant", "content": data["content"] if isinstance(data["content"], str) else json.dumps(data["content"])}
            return {"role": "assistant", "content": json.dumps(data)}
        if part["kind"] == "text":
            return {"role": "assistant", "content": part.get("text", "")}
    kinds = ", ".join(p["kind"] for p in parts) or "none"
    raise A2AError(f"{where}: the reply has no text or data part (parts: {kinds})")
