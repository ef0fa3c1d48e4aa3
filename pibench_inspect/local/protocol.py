"""The original pi-bench's local agent protocol: five operations any agent can implement.

Messages are plain dicts (reference 3.1): an assistant message is
`{"role": "assistant", "content": str | list | None, "tool_calls": [{"id", "name", "arguments"}]}`
(text or at least one tool call; with neither, the run ends as `agent_empty`). `arguments` is an
object, or JSON text as OpenAI sends it; arguments that cannot be read are a malformed call,
returned as a tool error (conversation/tool_calls.py). The agent receives user messages, tool results
`{"role": "tool", "id", "content", "requestor", "error", "name"}` or, for several results of one
message, `{"role": "multi_tool", "tool_messages": [...]}`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class AgentProtocol(Protocol):
    model_name: str

    def init_state(
        self, benchmark_context: list[dict], tools: list[dict], message_history: list[dict] | None = None
    ) -> dict: ...

    def generate(self, message: dict, state: dict) -> tuple[dict, dict]: ...

    def is_stop(self, message: dict) -> bool: ...

    def set_seed(self, seed: int) -> None: ...

    def stop(self, message: dict | None, state: dict | None) -> None: ...
