"""The agent under test is a remote A2A agent (`-T agent=a2a -T agent_url=URL`).

Each agent turn is one message/send carrying one data part. Stateless (the default): the data
holds the whole OpenAI-format history, the benchmark context and the tools, every turn. With the
bootstrap extension declared on the agent's card, the context and tools go once in a bootstrap
message; the returned context_id then rides on every turn (as A2A contextId and in the data), and
only the history is sent. A reply we cannot read (HTTP or JSON-RPC error, garbage) ends the
sample's conversation as `agent_error` with the reason recorded; an agent that cannot be reached
or misses the deadline is a sample error (a2a/client.py). A tool call whose arguments cannot be
read is a malformed call, returned to the agent as a tool error (conversation/tool_calls.py).
"""

from __future__ import annotations

import logging
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessage, ChatMessageAssistant
from inspect_ai.tool import ToolDef

from ..conversation.users import STOP_TOKENS
from ..local.adapter import AgentProtocolError, to_inspect
from .client import A2AClient, CardInfo
from .openai_format import assistant_message, openai_history, openai_tools
from .wire import BOOTSTRAP_URN, A2AError, _snippet, data_part, first_data, new_id

logger = logging.getLogger(__name__)


class A2APurpleAgent:
    name = "a2a"

    def __init__(self, url: str, context: list[dict], seed: int | None, timeout: float = 120.0,
                 mode: str = "auto", domain: str = ""):
        self.url = url
        self.context = context
        self.seed = seed
        self.timeout = timeout
        self.mode = mode  # auto (follow the card), stateless, bootstrap (required)
        self.domain = domain
        self.run_id = new_id()
        self.client: A2AClient | None = None
        self.card: CardInfo | None = None
        self.context_id: str | None = None

    async def _start(self, tools: list[ToolDef]) -> None:
        self.client = A2AClient(self.url, self.timeout)
        self.card = await self.client.card()
        transcript().info({"a2a agent": self.url, "card found": self.card.found, "protocol": self.card.dialect.version,
                           "bootstrap declared": self.card.bootstrap, "mode": self.mode})
        if self.mode == "stateless" or (self.mode == "auto" and not self.card.bootstrap):
            return
        if not self.card.bootstrap:
            raise A2AError(f"{self.url}: -T agent_mode=bootstrap, but the agent card does not declare {BOOTSTRAP_URN}")
        data: dict[str, Any] = {"bootstrap": True, "benchmark_context": self.context, "tools": openai_tools(tools),
                                "run_id": self.run_id, "domain": self.domain}
        try:
            reply = await self.client.send([data_part(data, {"extension": BOOTSTRAP_URN})],
                                           metadata={"pibench_run_id": self.run_id})
            answer = first_data(reply, self.url, "the bootstrap answer")
            if answer.get("bootstrapped") is not True or not isinstance(answer.get("context_id"), str) or not answer["context_id"]:
                raise A2AError(f"{self.url}: the bootstrap answer lacks bootstrapped=true and a context_id",
                               _snippet(answer))
        except A2AError as err:
            if self.mode == "bootstrap":
                raise
            # the original fell back silently; we fall back too, but say so in the transcript
            logger.warning("bootstrap with %s failed, continuing stateless: %s", self.url, err)
            transcript().info({"bootstrap failed, stateless from here": str(err)})
            return
        self.context_id = answer["context_id"]
        transcript().info({"bootstrapped": True, "context_id": self.context_id})

    async def next(self, messages: list[ChatMessage], tools: list[ToolDef]) -> ChatMessageAssistant:
        try:
            if self.client is None:
                await self._start(tools)
            assert self.client is not None
            data: dict[str, Any] = {"messages": openai_history(messages)}
            if self.context_id:
                data["context_id"] = self.context_id
            else:
                data["benchmark_context"] = self.context
                data["tools"] = openai_tools(tools)
            if self.seed is not None:
                data["seed"] = self.seed
            reply = await self.client.send([data_part(data)], context_id=self.context_id,
                                           metadata={"pibench_run_id": self.run_id})
            message = assistant_message(reply.parts, self.url)
        except A2AError as err:
            if err.detail:  # what the agent sent, for the transcript (never into the error text)
                transcript().info({"a2a agent reply": err.detail})
            raise AgentProtocolError(f"A2A agent error: {err}") from None
        out = to_inspect(message, tools)  # a call whose arguments cannot be read: a tool error
        if (message.get("content") or "").strip() in STOP_TOKENS:
            out.metadata = {"pibench_stop": True}
        return out

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aclose()
