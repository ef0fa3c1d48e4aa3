"""The LiteLLM reference agent: any LiteLLM model behind the five-operation protocol.

Unlike the original's reference agent, the policy and task context are sent on every call (the
original dropped its system prompt after the first call, so its model saw the policy once).

    inspect eval pibench_inspect/pibench.py --model none -T user=scripted \\
        -T agent=pibench_inspect.agents.litellm_agent:LiteLLMAgent \\
        -T agent_args='{"model_name": "gpt-4o-mini"}'
"""

from __future__ import annotations

import json
from typing import Any

from .. import _bootstrap  # noqa: F401  (before litellm loads)
from ..local.replay import openai_calls

RESERVED = {"model", "messages", "seed", "tools"}


class LiteLLMAgent:
    def __init__(self, model_name: str = "gpt-4o-mini", **llm_args: Any):
        self.model_name = model_name
        self.llm_args = {k: v for k, v in llm_args.items() if k not in RESERVED}
        self.seed: int | None = None

    # ------------------------------------------------------------------ protocol

    def init_state(self, benchmark_context: list[dict], tools: list[dict], message_history: list[dict] | None = None) -> dict:
        system = "You are a policy-compliance agent. Use the context and tools provided."
        for node in benchmark_context:
            if node.get("content"):
                system += f"\n\n<{node['kind']}>\n{node['content']}\n</{node['kind']}>"
        openai_tools = [
            {"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                              "parameters": t.get("parameters", {"type": "object", "properties": {}})}}
            for t in tools
        ]
        history = [self._to_openai(m) for m in message_history or []]
        return {"system": system, "tools": openai_tools, "history": [h for h in history if h]}

    def generate(self, message: dict, state: dict) -> tuple[dict, dict]:
        import litellm

        history = list(state["history"])
        incoming = message.get("tool_messages") if message.get("role") == "multi_tool" else [message]
        history += [h for h in (self._to_openai(m) for m in incoming) if h]
        request: dict[str, Any] = {
            "model": self.model_name,
            # the context goes first on every call
            "messages": [{"role": "system", "content": state["system"]}] + history,
            "drop_params": True,
            **self.llm_args,
        }
        if state["tools"]:
            request["tools"] = state["tools"]
        if self.seed is not None:
            request["seed"] = self.seed
        response = litellm.completion(**request)
        choice = response.choices[0].message
        reply: dict[str, Any] = {"role": "assistant", "content": choice.content or None}
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": json.loads(c.function.arguments or "{}")}
            for c in (choice.tool_calls or [])
        ]
        if calls:
            reply["tool_calls"] = calls
        if not calls and not (choice.content or "").strip():
            reply["content"] = "###STOP###"  # nothing to say: end the conversation, as the original did
        history.append(self._to_openai(reply))
        return reply, {**state, "history": history}

    def is_stop(self, message: dict) -> bool:
        from ..conversation.users import STOP_TOKENS

        return (message.get("content") or "").strip() in STOP_TOKENS

    def set_seed(self, seed: int) -> None:
        self.seed = seed

    def stop(self, message: dict | None, state: dict | None) -> None:
        pass

    # ------------------------------------------------------------------ conversion

    @staticmethod
    def _to_openai(m: dict) -> dict | None:
        role = m.get("role")
        if role == "tool":
            return {"role": "tool", "tool_call_id": m["id"], "content": str(m.get("content", ""))}
        if role == "assistant":
            out: dict[str, Any] = {"role": "assistant", "content": m.get("content")}
            if m.get("tool_calls"):
                out["tool_calls"] = openai_calls(m)
            return out
        if role in ("user", "system"):
            return {"role": role, "content": m.get("content") or ""}
        return None
