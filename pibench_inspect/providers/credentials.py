"""Missing LiteLLM credentials, found before the first call.

LiteLLM only notices a missing key when a request is made, and for OpenAI it reports it as an
InternalServerError, which looks retryable: a run would retry every sample for minutes before
failing. `litellm.validate_environment` knows which variables a provider reads; only API keys are
treated as certainly required (Bedrock, Vertex or Ollama also work from IAM roles, application
default credentials or a default local address, which it lists as "missing" too).
"""

from __future__ import annotations

import os
from typing import Any

from .. import _bootstrap  # noqa: F401  (before litellm loads)

from ..runtime.inspect_internals import PrerequisiteError


class MissingCredentials(PrerequisiteError, ValueError):
    """A key a model needs is not set. Inspect's command line prints a PrerequisiteError as its
    message alone (no traceback): the run stops with one line."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)
        self.message = message


# arguments through which a call brings its own credentials or needs none (offline mocks)
CARRIES_CREDENTIALS = ("api_key", "mock_response", "mock_tool_calls", "azure_ad_token", "aws_access_key_id")


def missing_credentials(model: str, args: dict[str, Any] | None = None) -> list[str]:
    """The environment variables `model` needs and lacks; [] when satisfied or unknowable.
    Alternatives (Gemini reads GOOGLE_API_KEY or GEMINI_API_KEY) are listed together."""
    args = args or {}
    if any(args.get(k) for k in CARRIES_CREDENTIALS):
        return []
    import litellm

    try:
        found = litellm.validate_environment(model=model, api_base=args.get("api_base"))
    except Exception:  # an unknown provider: LiteLLM says so itself on the first call
        return []
    keys = [k for k in found.get("missing_keys") or [] if k.endswith("_API_KEY")]
    if not keys or any(os.environ.get(k) for k in keys):
        return []
    return [" or ".join(keys)]


def require_credentials(model: str, args: dict[str, Any] | None, who: str) -> None:
    """Raise MissingCredentials, saying in one line what is missing and how to fix it."""
    missing = missing_credentials(model, args)
    if missing:
        raise MissingCredentials(f"{who} needs {missing[0]}: set it in the environment (or pass api_key), "
                                 "or run keylessly, e.g. -T agent=oracle -T user=scripted --model none")
