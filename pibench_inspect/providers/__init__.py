"""Model providers: `litellm/<model>` makes any LiteLLM model string usable with Inspect."""

from inspect_ai.model import ModelAPI, modelapi


@modelapi(name="litellm")
def litellm() -> type[ModelAPI]:
    # imported lazily: litellm is heavy and only needed when the provider is used
    from .litellm_api import LiteLLMAPI

    return LiteLLMAPI
