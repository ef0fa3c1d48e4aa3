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
from ..conversation.termination import AGENT_STOPS, ModelStopped, agent_stopped, stop_detail
from ..conversation.tool_calls import protocol_arguments
from ..local.errors import AgentUnavailable
from ..local.replay import openai_calls
from ..providers.credentials import require_credentials

RESERVED = {"model", "messages", "seed", "tools"}


class LiteLLMAgent:
    """`generate` (the protocol, synchronous) calls LiteLLM directly; `agenerate`, which the
    benchmark's adapter prefers, goes through Inspect's `litellm/` provider, so the calls run
    concurrently, are retried and timed out like the model under test's, and appear in the
    transcript with their tokens and cost (the agent row of the usage report)."""

    def __init__(self, model_name: str = "gpt-4o-mini", **llm_args: Any):
        self.model_name = model_name
        self.llm_args = {k: v for k, v in llm_args.items() if k not in RESERVED}
        self.seed: int | None = None
        self._model: Any = None
        self.preflight(model_name, **llm_args)

    @staticmethod
    def preflight(model_name: str = "gpt-4o-mini", **llm_args: Any) -> None:
        """Called before the run (pibench_inspect.local.adapter.check_agent): a missing key is
        known now, so the run stops with one line instead of every sample failing."""
        require_credentials(model_name, llm_args, f"the LiteLLM agent ({model_name})")

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

    def _history(self, message: dict, state: dict) -> list[dict]:
        history = list(state["history"])
        incoming = message.get("tool_messages") if message.get("role") == "multi_tool" else [message]
        return history + [h for h in (self._to_openai(m) for m in incoming) if h]

    def generate(self, message: dict, state: dict) -> tuple[dict, dict]:
        """Synchronous (the protocol's form; serve-agent and `--model protocol/` call it in a thread)."""
        import litellm

        history = self._history(message, state)
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
        try:
            response = litellm.completion(**request)
        except Exception as err:
            from ..providers.litellm_api import litellm_stop

            stopped = litellm_stop(err)
            if stopped is not None:  # the model overflowed or refused: an outcome, not an outage
                raise ModelStopped(AGENT_STOPS[stopped], stop_detail("agent", self.model_name, stopped)) from None
            raise self._unavailable(err) from None
        choice = response.choices[0]
        if choice.finish_reason == "content_filter":
            raise ModelStopped(AGENT_STOPS["content_filter"], stop_detail("agent", self.model_name, "content_filter"))
        # arguments go on as the model sent them; the adapter reads them by the one rule for
        # every agent (an object is kept; text that is not is a malformed call, a tool error)
        calls = [{"id": c.id, "name": c.function.name, "arguments": _arguments(c.function.arguments)}
                 for c in (choice.message.tool_calls or [])]
        return self._answer(choice.message.content, calls, history, state)

    async def agenerate(self, message: dict, state: dict) -> tuple[dict, dict]:
        """The same turn through Inspect's model interface (awaited on the event loop)."""
        from inspect_ai.model import ChatMessageSystem, GenerateConfig, messages_from_openai
        from ..runtime.inspect_internals import active_generate_config
        from inspect_ai.util import LimitExceededError

        history = self._history(message, state)
        messages = [ChatMessageSystem(content=state["system"])] + await messages_from_openai(history)
        # Inspect passes its retry settings and --timeout to every model; --attempt-timeout (a
        # hung call is abandoned and retried) only to the model under test, so it is added here
        config = GenerateConfig(seed=self.seed, attempt_timeout=active_generate_config().attempt_timeout)
        try:
            output = await self.model().generate(messages, tools=_tool_infos(state["tools"]), config=config)
        except LimitExceededError:
            raise  # an Inspect limit ends the run on its state reached, not as a failure
        except Exception as err:
            raise self._unavailable(err) from None
        stopped = agent_stopped(f"litellm/{self.model_name}", output)
        if stopped is not None:  # an overflow, a refusal or nothing: a termination, not a reply
            raise stopped
        reply = output.message
        # a malformed call goes on as the text the model sent, which the adapter refuses exactly
        # as Inspect did: a tool error the model can recover from
        calls = [{"id": c.id, "name": c.function, "arguments": protocol_arguments(c)} for c in reply.tool_calls or []]
        return self._answer(reply.text, calls, history, state)

    def _unavailable(self, err: Exception) -> AgentUnavailable:
        """The provider's own message, without the chain: Inspect renders a sample error's
        traceback, and LiteLLM's nested one took seconds to format per failed sample."""
        from ..reports.causes import error_cause

        # Inspect gave up retrying (tenacity RetryError): the cause under it, in one line
        return AgentUnavailable(f"the LiteLLM agent's model {self.model_name} failed: {error_cause(err)}")

    def model(self) -> Any:
        """This agent's Inspect model, `litellm/<model_name>` with the agent's LiteLLM arguments."""
        if self._model is None:
            from inspect_ai.model import get_model

            from .. import providers  # noqa: F401  (registers the litellm/ provider)

            self._model = get_model(f"litellm/{self.model_name}", memoize=False, **self.llm_args)
        return self._model

    def _answer(self, content: str | None, calls: list[dict], history: list[dict], state: dict) -> tuple[dict, dict]:
        reply: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            reply["tool_calls"] = calls
        # nothing to say ends the conversation as agent_empty (the solver's rule for every agent)
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


def _arguments(text: str | None) -> Any:
    """A call's arguments as LiteLLM returned them: the object when the text is one, else the
    text itself (read later by the one rule for every agent)."""
    try:
        value = json.loads(text or "{}")
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, dict) else text


def _tool_infos(openai_tools: list[dict]) -> list[Any]:
    from inspect_ai.tool import ToolInfo, ToolParams

    return [ToolInfo(name=t["function"]["name"], description=t["function"].get("description") or t["function"]["name"],
                     parameters=ToolParams.model_validate(t["function"].get("parameters") or {}))
            for t in openai_tools]
