"""Model providers: `litellm/<model>` makes any LiteLLM model string usable with Inspect;
`protocol/<module:Class>` runs a five-operation protocol agent as the model under test. Before a
run: the keys a LiteLLM model needs (credentials.py), and that each remote model answers
(model_check.py)."""

from inspect_ai.model import ModelAPI, modelapi


@modelapi(name="litellm")
def litellm() -> type[ModelAPI]:
    # imported lazily: litellm is heavy and only needed when the provider is used
    from .litellm_api import LiteLLMAPI

    return LiteLLMAPI


@modelapi(name="protocol")
def protocol() -> type[ModelAPI]:
    # `--model protocol/module:ClassOrFactory`: a five-operation protocol agent as an Inspect model
    from .protocol_api import ProtocolAPI

    return ProtocolAPI
