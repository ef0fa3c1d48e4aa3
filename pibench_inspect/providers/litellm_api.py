"""`--model litellm/<model>` (and `--model-role user=litellm/...`, `grader=litellm/...`).

Messages and tools go through Inspect's OpenAI conversions; LiteLLM speaks the OpenAI format
to any provider it supports. Extra `-M key=value` model args are passed to
`litellm.acompletion` (e.g. `api_base`, or `mock_response` for offline tests).

Inspect retries what `should_retry` accepts (connection errors, timeouts, 5xx, rate limits),
with backoff, for minutes. Authentication and configuration errors are never retried: they fail
the sample at once with the provider's message. A missing API key is found when the model is
created, before the run.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, RetryDecision, messages_to_openai
from inspect_ai.tool import ToolChoice, ToolInfo
from openai.types.chat import ChatCompletion

from .. import _bootstrap  # noqa: F401  (before litellm loads)
from ..conversation.json_safe import json_safe_calls
from ..runtime.inspect_internals import model_output_from_openai, openai_chat_tool_choice, openai_chat_tools
from .credentials import require_credentials

RETRYABLE = ("RateLimitError", "APIConnectionError", "Timeout", "ServiceUnavailableError", "InternalServerError")
# LiteLLM reports some credential problems as a 500 (OpenAI: "Missing credentials. Please pass
# an `api_key`..."): retrying cannot fix those
NOT_TRANSIENT = ("missing credentials", "api_key client option", "no key is set", "invalid_api_key",
                 "llm provider not provided")


class LiteLLMCallError(Exception):
    """A LiteLLM call failed: its exception's class name (`kind`) and message, without the chain.

    Inspect renders the traceback of every failed model call into the transcript, and LiteLLM's
    (a dozen frames in modules of thousands of lines, syntax-highlighted) took seconds of
    event-loop time per failed attempt, stalling every other sample. The original exception is
    kept in `original` for code that needs it.
    """

    def __init__(self, original: Exception) -> None:
        self.kind = type(original).__name__
        self.status_code = getattr(original, "status_code", None)
        self.original = original
        super().__init__(f"{self.kind}: {original}")


def litellm_stop(err: Exception) -> str | None:
    """A LiteLLM exception that is a model stop: "model_length" (the context window was exceeded)
    or "content_filter" (the provider's content policy refused); None for anything else."""
    import litellm

    if isinstance(err, litellm.ContextWindowExceededError):
        return "model_length"
    if isinstance(err, litellm.ContentPolicyViolationError):
        return "content_filter"
    return None


def _stop_output(model_name: str, err: Exception) -> ModelOutput | None:
    """A context overflow or a content-policy refusal as the output Inspect's own providers give
    for one (the provider's text with stop_reason model_length or content_filter), so every role
    treats it as a model stop (conversation/termination.py), not as a failed call."""
    reason = litellm_stop(err)
    if reason is None:
        return None
    message = getattr(err, "message", None) or str(err)
    return ModelOutput.from_content(model=model_name, content=str(message), stop_reason=reason)  # type: ignore[arg-type]


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
        import litellm  # noqa: F401  (heavy: loaded now, before the run, not on a sample's first call)

        require_credentials(model_name, {"api_key": api_key, **model_args}, f"litellm/{model_name}")

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
        messages = await messages_to_openai(input)
        try:
            response = await litellm.acompletion(
                model=self.model_name,
                messages=messages,
                drop_params=True,  # providers that lack a parameter (e.g. seed) ignore it
                # Inspect retries (with its backoff, limits and accounting): the client does not;
                # model args win over the generate config (a LiteLLM agent's own temperature)
                **{"max_retries": 0, **params, **self.model_args},
            )
        except Exception as err:
            stopped = _stop_output(self.model_name, err)
            if stopped is not None:
                return stopped
            raise LiteLLMCallError(err) from None
        completion = ChatCompletion.model_validate(response.model_dump())
        output = model_output_from_openai(completion, tools)
        for choice in output.choices:
            # arguments the log cannot hold (nested past its depth limit, NaN) become the call's
            # parse error before Inspect records this output: the log is never lost to them
            json_safe_calls(choice.message)
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        if output.usage is not None and isinstance(cost, (int, float)):
            output.usage.total_cost = float(cost)
        return output

    def should_retry(self, ex: Exception) -> RetryDecision:
        name = getattr(ex, "kind", type(ex).__name__)
        if name not in RETRYABLE or any(s in str(ex).lower() for s in NOT_TRANSIENT):
            # authentication, bad request, unknown model: the same request again would fail too
            return RetryDecision.no()
        return RetryDecision.rate_limit() if name == "RateLimitError" else RetryDecision.transient()

    def connection_key(self) -> str:
        return f"litellm:{self.model_name}"
