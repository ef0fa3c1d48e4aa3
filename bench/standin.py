"""A stand-in model for the benchmarks and hardening tests: a real Inspect model provider.

`pibench-standin/<name>` sleeps a fixed latency per call (so calls go through Inspect's
connection handling, retries and concurrency limits like a real provider) and replays the
sample's scenario `reference_solution` (the oracle's plan): one tool call per message, then text.
It finds the scenario from the active sample's id and the scenario set of `source`
(model arg; the shipped set by default). Every output carries `usage`.

Model args (`-M` or `get_model(..., **args)`):
  latency      seconds slept per call (default 0.5)
  source       scenario source folder (default: shipped scenarios)
  fail_ids     comma-separated sample ids whose calls raise `StandinFault`
  fail_times   how many calls per failing sample raise (default: all)
  call_log     a file to which every call appends "<pid> <sample id>" (tests use it)
  reply        "replay" (default: the oracle's next message) or "text" (a fixed short answer,
               for bench/bare_chat.py)
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import lru_cache
from typing import Any

import anyio
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

PROVIDER = "pibench-standin"


class StandinFault(Exception):
    """The injected provider error (retryable)."""


@lru_cache(maxsize=8)
def _scenario_set(source: str | None):
    from pibench_inspect.scenario.catalog import load_set

    return load_set(source)


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def next_message(sample_id: str, messages: list[ChatMessage], source: str | None) -> ChatMessageAssistant:
    """The oracle's next message, computed from the conversation so far (stateless)."""
    from pibench_inspect.conversation.agents import builtin_agent

    scenario, domain = _scenario_set(source).resolve(sample_id)
    agent = builtin_agent("oracle", domain, scenario)
    calls = [m for m in messages if isinstance(m, ChatMessageAssistant) and m.tool_calls]
    texts = [m for m in messages if isinstance(m, ChatMessageAssistant) and not m.tool_calls]
    agent._step = len(calls)
    agent._texts = len(texts)
    agent._call_ids = [c.tool_calls[0].id for c in calls]

    coro = agent.next(messages, [])
    # ScriptedAgent.next never awaits; drive the coroutine synchronously
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("ScriptedAgent.next awaited unexpectedly")  # pragma: no cover


@modelapi(name=PROVIDER)
def _standin() -> type[ModelAPI]:
    return StandinModel


class StandinModel(ModelAPI):
    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        latency: float | str = 0.5,
        source: str | None = None,
        fail_ids: str | list[str] | None = None,
        fail_times: int | str | None = None,
        call_log: str | None = None,
        reply: str = "replay",
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        self.latency = float(latency)
        self.source = source or None
        if isinstance(fail_ids, str):
            fail_ids = [x for x in fail_ids.split(",") if x]
        self.fail_ids = set(fail_ids or [])
        self.fail_times = None if fail_times in (None, "") else int(fail_times)
        self.call_log = call_log or None
        if reply not in ("replay", "text"):
            raise ValueError(f"reply must be 'replay' or 'text', not {reply!r}")
        self.reply = reply
        self.calls: dict[str, int] = defaultdict(int)
        self.failures: dict[str, int] = defaultdict(int)

    def max_connections(self) -> int:
        return 1000

    def should_retry(self, ex: Exception) -> bool:
        return isinstance(ex, StandinFault)

    def retry_wait(self):
        from tenacity import wait_fixed

        return wait_fixed(0.05)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        from inspect_ai.log._samples import sample_active

        active = sample_active()
        sid = str(active.sample.id) if active else ""
        self.calls[sid] += 1
        if self.call_log:
            import os

            with open(self.call_log, "a") as f:
                f.write(f"{os.getpid()} {sid}\n")
        if self.latency:
            await anyio.sleep(self.latency)
        if sid in self.fail_ids and (self.fail_times is None or self.failures[sid] < self.fail_times):
            self.failures[sid] += 1
            raise StandinFault(f"injected provider fault for sample {sid}")
        if self.reply == "text":
            message = ChatMessageAssistant(content="Understood.")
        else:
            message = next_message(sid, input, self.source)
        message.model = self.model_name
        out = ModelOutput.from_message(message)
        out.model = self.model_name
        prompt = sum(len(m.text) for m in input) + len(json.dumps([t.model_dump() for t in tools]))
        completion = len(message.text) + sum(len(json.dumps(c.arguments)) for c in message.tool_calls or [])
        out.usage = ModelUsage(
            input_tokens=max(1, prompt // 4),
            output_tokens=max(1, completion // 4),
            total_tokens=max(1, prompt // 4) + max(1, completion // 4),
        )
        return out
