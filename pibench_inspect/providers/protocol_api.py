"""`--model protocol/module:ClassOrFactory`: a five-operation protocol agent behind Inspect's
model interface (`-M key=value` become the factory's keyword arguments).

Inspect hands a model the whole conversation each call, so the agent is recreated and the
conversation replayed (pibench_inspect.local.replay): a deterministic agent answers as it would
live. The benchmark context it receives is the system prompt, as one node of kind "system".
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageSystem, GenerateConfig, ModelAPI, ModelOutput, ModelUsage
from inspect_ai.model import ChatMessageAssistant
from inspect_ai.tool import ToolChoice, ToolInfo

from ..a2a.openai_format import openai_history
from ..conversation.json_safe import describe_error
from ..local.adapter import AgentProtocolError, OPERATION_SECONDS, load_agent, off_loop, to_inspect
from ..local.replay import Session, answer, protocol_turns, reply_text, with_stop


class ProtocolAPI(ModelAPI):
    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = GenerateConfig(), **model_args: Any) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        self.model_args = model_args
        load_agent(model_name, model_args)  # a bad reference fails when the model is created

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        system = "\n\n".join(m.text for m in input if isinstance(m, ChatMessageSystem))
        context = [{"kind": "system", "content": system, "metadata": {}}] if system else []
        schemas = [{"name": t.name, "description": t.description,
                    "parameters": t.parameters.model_dump(exclude_none=True)} for t in tools]
        session = Session(load_agent(self.model_name, self.model_args), context, schemas)
        turns = protocol_turns(openai_history(input))
        # the agent's own thread pool: asyncio's default one has min(32, CPUs + 4) workers, which
        # would let only a handful of samples wait on their agents at once
        # whatever the agent's code does (raises anything, blocks, replies with what the log
        # cannot hold) is AgentProtocolError, which the conversation scores as agent_error
        reply, stop = await off_loop(answer, session, turns, config.seed, operation="the agent",
                                     timeout=float(config.timeout) if config.timeout else OPERATION_SECONDS)
        try:
            message: ChatMessageAssistant = to_inspect(reply)  # the protocol's validation, as locally
        except AgentProtocolError:
            raise
        except Exception as err:  # noqa: BLE001 (a reply built to break our reading of it)
            raise AgentProtocolError(f"the agent's reply cannot be read: {describe_error(err)}") from None
        message.content = with_stop(reply_text(reply), stop)
        output = ModelOutput.from_message(message)
        output.model = self.model_name
        output.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
        return output

    def connection_key(self) -> str:
        return f"protocol:{self.model_name}"
