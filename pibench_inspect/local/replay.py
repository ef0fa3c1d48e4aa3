"""Drive a five-operation protocol agent from a whole conversation, as if it had been there.

A stateless caller (an A2A request carrying the full history, an Inspect model call) cannot keep
the agent object between turns; it recreates the agent and replays the messages the agent would
have received. For a deterministic agent the answer is exactly the one a live session gives,
which is what lets the three ways in (local object, A2A, Inspect model) score identically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

from ..conversation.users import STOP_TOKENS
from .adapter import text_of


@dataclass
class Session:
    agent: Any
    context: list[dict]
    tools: list[dict]
    state: dict | None = None
    fed: int = 0  # turns already given to the agent
    lock: Lock = field(default_factory=Lock)


class ReplayError(ValueError):
    """The conversation cannot be replayed (nothing new to answer)."""


def answer(session: Session, turns: list[dict], seed: Any = None) -> tuple[Any, bool]:
    """Feed the turns the agent has not seen; return its last reply and whether it stops."""
    with session.lock:
        agent = session.agent
        if session.state is None:
            if isinstance(seed, int):
                agent.set_seed(seed)
            session.state = agent.init_state(session.context, session.tools, None)
        if session.fed >= len(turns):
            raise ReplayError(f"nothing new to answer: {len(turns)} turn(s), all answered")
        reply = None
        for turn in turns[session.fed:]:
            reply, session.state = agent.generate(turn, session.state)
        session.fed = len(turns)
        return reply, bool(agent.is_stop(reply))


def with_stop(content: str, stop: bool) -> str:
    """An agent whose is_stop() ends the run, said as text: the stop token is appended."""
    if stop and content.strip() not in STOP_TOKENS:
        return (content + "\n" if content.strip() else "") + STOP_TOKENS[0]
    return content


def protocol_tools(openai_tools: Any) -> list[dict]:
    """OpenAI function tools (or flat schemas) -> the protocol's `{name, description, parameters}`."""
    if not isinstance(openai_tools, list):
        raise ValueError("'tools' must be a list of OpenAI function tools")
    out = []
    for i, t in enumerate(openai_tools):
        fn = t.get("function") if isinstance(t, dict) and isinstance(t.get("function"), dict) else t
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ValueError(f"tools[{i}] has no function name")
        out.append({"name": fn["name"], "description": fn.get("description", ""),
                    "parameters": fn.get("parameters") or {"type": "object", "properties": {}}})
    return out


def openai_calls(message: dict) -> list[dict]:
    """Protocol calls -> OpenAI's; arguments already text (as a model sent them, malformed
    ones included) are kept as they are."""
    return [
        {"id": c.get("id"), "type": "function",
         "function": {"name": c.get("name"), "arguments": _text(c.get("arguments", {}))}}
        for c in message.get("tool_calls") or [] if isinstance(c, dict)
    ]


def _text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def reply_text(message: Any) -> str:
    return text_of(message.get("content")) if isinstance(message, dict) else ""


def protocol_turns(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages a protocol agent received, in order: after each assistant message, the tool
    results that followed (one, or a multi_tool wrapper) or the latest user message. A leading
    assistant greeting is skipped, as the local adapter does."""
    names: dict[str, str] = {}
    turns: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        tools = [m for m in pending if m.get("role") == "tool"]
        users = [m for m in pending if m.get("role") == "user"]
        if tools:
            results = [{"role": "tool", "id": m.get("tool_call_id", ""), "content": m.get("content") or "",
                        "requestor": "assistant", "error": False, "name": names.get(m.get("tool_call_id", ""), "")}
                       for m in tools]
            turns.append(results[0] if len(results) == 1 else {"role": "multi_tool", "tool_messages": results})
        elif users:
            turns.append({"role": "user", "content": users[-1].get("content") or ""})
        pending.clear()

    for m in history:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "assistant":
            flush()
            for c in m.get("tool_calls") or []:
                if isinstance(c, dict):
                    fn = c.get("function") if isinstance(c.get("function"), dict) else c
                    names[str(c.get("id"))] = str(fn.get("name", ""))
        elif m.get("role") in ("user", "tool"):
            pending.append(m)
    flush()
    return turns


