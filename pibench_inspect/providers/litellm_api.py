"""`--model litellm/<model>` (and `--model-role user=litellm/...`, `grader=litellm/...`).

Messages and tools go through Inspect's OpenAI conversions; LiteLLM speaks the OpenAI format
to any provider it supports. Extra `-M key=value` model args are passed to
`litellm.acompletion` (e.g. `api_base`, or `mock_response` for offline tests).
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput
from inspect_ai.model._openai import (
    chat_choices_from_openai,
    messages_to_openai,
    model_output_from_openai,
    openai_chat_tool_choice,
    openai_chat_tools,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from openai.types.chat import ChatCompletion

from .. import _bootstrap  # noqa: F401  (before litellm loads)

RETRYABLE = ("RateLimitError", "APIConnectionError", "Timeout", "ServiceUnavailableError", "InternalServerError")


class LiteLLMAPI(ModelAPI):
    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        **model_args: Any,
    ) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        self.model_args = model_args

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        import litellm

        params: dict[str, Any] = {
            k: v
            for k, v in {
                "temperature": config.temperature,
                "top_p": config.top_p,
                "max_tokens": config.max_tokens,
                "seed": config.seed,
                "stop": config.stop_seqs,
                "timeout": config.timeout,
            }.items()
            if v is not None
        }
        if tools:
            params["tools"] = openai_chat_tools(tools)
            params["tool_choice"] = openai_chat_tool_choice(tool_choice)
        if self.base_url:
            params["api_base"] = self.base_url
        if self.api_key:
            params["api_key"] = self.api_key
        response = await litellm.acompletion(
            model=self.model_name,
            messages=await messages_to_openai(input),
            drop_params=True,  # providers that lack a parameter (e.g. seed) ignore it
            **params,
            **self.model_args,
        )
        completion = ChatCompletion.model_validate(response.model_dump())
        output = model_output_from_openai(completion, chat_choices_from_openai(completion, tools))
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        if output.usage is not None and isinstance(cost, (int, float)):
            output.usage.total_cost = float(cost)
        return output

    def should_retry(self, ex: Exception) -> bool:
        return type(ex).__name__ in RETRYABLE

    def connection_key(self) -> str:
        return f"litellm:{self.model_name}"
