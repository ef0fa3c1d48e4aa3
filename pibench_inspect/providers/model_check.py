"""Before any sample starts: can each remote model the run uses be reached?

A run whose model cannot be reached (no network, a wrong base URL, a server not started, a key
the provider refuses) otherwise sat at 0 samples for minutes while Inspect retried every call,
saying nothing of why. So when the task is built, each remote model the run will call (the
agent's `--model`, the `user` role, the `grader` role) is sent one minimal request (a few
output tokens) under a short deadline, and a failure stops the run with one line naming the
role, the model, its endpoint and the error, and how to skip the check (`-T model_check=false`).

Keyless runs call no remote model, so nothing is sent: `--model none`, a built-in agent, the
scripted or solo user, no grader. Only Inspect's own providers that talk to a server (and our
`litellm/`) are checked: `mockllm`, in-process models (`hf`, `vllm`, ...), `protocol/` agents
and providers registered by others have no endpoint we know how to reach.

What stops a run is narrow: no connection, no answer within the deadline, the key refused
(401/403) or the model unknown (404). Any other answer (a 400 about the probe's settings, a 429,
a 5xx) means something is there: the run goes on and Inspect's retries handle the rest. The probe
bypasses Inspect's retries, cache and usage accounting (it calls the provider's `ModelAPI.generate`
directly), on a fresh instance of the model driven by an event loop of its own: the run's model
keeps its connections for the run's loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import ChatMessageUser, GenerateConfig, Model, get_model

from .._sync import run_sync
from ..cli.refusal import Refusal

CHECK_SECONDS = 15.0
PROBE_TOKENS = 8  # the reply is never read: a few tokens, so the probe costs next to nothing
SKIP = "-T model_check=false"

# Inspect's providers (and ours) that call a server: the only ones probed
REMOTE_PROVIDERS = frozenset({
    "openai", "openai-api", "openai-api-completions", "anthropic", "google", "mistral", "grok",
    "groq", "together", "fireworks", "moonshot", "deepseek", "sambanova", "ollama", "openrouter",
    "perplexity", "llama-cpp-python", "azureai", "bedrock", "sagemaker", "cloudflare",
    "hf-inference-providers", "litellm",
})
# HTTP answers that say the run cannot work: the key refused, the model (or the path) unknown
FATAL_STATUS = {401: "the key was refused", 403: "access was refused", 404: "no such model or endpoint"}


@dataclass
class Target:
    model: Model
    roles: list[str] = field(default_factory=list)


def provider(model: Model) -> str:
    return str(model).split("/", 1)[0]


def endpoint(model: Model) -> str:
    """Where the model's requests go, as far as can be told without calling it."""
    api = model.api
    for url in (model.explicit_base_url, getattr(api, "base_url", None),
                getattr(getattr(api, "client", None), "base_url", None)):
        if url:
            return str(url).rstrip("/")
    return "the provider's default endpoint"


def targets(roles: dict[str, Model | None]) -> list[Target]:
    """The remote models among `roles` (role -> the model it will call, or None), each once
    with every role it plays."""
    out: dict[tuple[str, str], Target] = {}
    for role, model in roles.items():
        if model is None or provider(model) not in REMOTE_PROVIDERS:
            continue
        key = (str(model), endpoint(model))
        out.setdefault(key, Target(model)).roles.append(role)
    return list(out.values())


def _chain(err: BaseException, implicit: bool = False) -> list[BaseException]:
    """`err` and what caused it (`raise ... from`, LiteLLMCallError's `original`); `implicit`:
    also the exceptions being handled when each was raised."""
    seen: list[BaseException] = []
    cur: BaseException | None = err
    while cur is not None and cur not in seen and len(seen) < 12:
        seen.append(cur)
        nxt = cur.__cause__ or getattr(cur, "original", None)
        if nxt is None and implicit and not cur.__suppress_context__:
            nxt = cur.__context__
        cur = nxt
    return seen


def _status(err: BaseException) -> int | None:
    for e in _chain(err):
        code = getattr(e, "status_code", None) or getattr(getattr(e, "response", None), "status_code", None)
        if isinstance(code, int):
            return code
    return None


def _connection_failed(err: BaseException) -> bool:
    import httpx

    for e in _chain(err, implicit=True):
        if isinstance(e, (httpx.TransportError, ConnectionError, TimeoutError)):
            return True
        name = getattr(e, "kind", None) or type(e).__name__
        if "Connection" in name or "Timeout" in name:
            return True
    return False


def _describe(err: BaseException) -> str:
    """The error and its root cause, in one short line ("APIConnectionError: Connection error.
    (ConnectError: All connection attempts failed)")."""
    chain = _chain(err)
    said = [f"{type(e).__name__}: {str(e).strip()}".rstrip(": ") for e in (chain[0], chain[-1])]
    text = said[0] if len(chain) == 1 or said[0] == said[1] else f"{said[0]} ({said[1]})"
    return " ".join(text.split())[:300]


def verdict(err: BaseException | None) -> str | None:
    """Why a probe's outcome stops the run, or None when the model was reached."""
    if err is None:
        return None
    status = _status(err)
    if status is not None:
        return f"{FATAL_STATUS[status]} ({_describe(err)})" if status in FATAL_STATUS else None
    if _connection_failed(err):
        return _describe(err)
    return None  # an error we cannot read as unreachable: the run's own handling applies


async def probe(model: Model, seconds: float) -> BaseException | None:
    """One minimal request through the provider itself; the exception it ended with, if any."""
    try:
        async with model:
            result = await asyncio.wait_for(model.api.generate(
                input=[ChatMessageUser(content="Reply with the word OK.")], tools=[], tool_choice="none",
                config=GenerateConfig(max_tokens=PROBE_TOKENS, temperature=0.0),
            ), seconds)
    except asyncio.TimeoutError:
        return TimeoutError(f"no answer within {seconds:g} s")
    except Exception as err:  # noqa: BLE001 (judged by `verdict`)
        return err
    if isinstance(result, tuple) and isinstance(result[0], BaseException):
        return result[0]  # a provider that returns its error with the call record
    return None


def fresh(model: Model) -> Model:
    """A new instance of `model` (same name, settings, endpoint and arguments), not memoized."""
    api_key = getattr(model.api, "api_key", None)
    return get_model(str(model), config=model.config, base_url=model.explicit_base_url,
                     memoize=False, **({"api_key": api_key} if api_key else {}), **model.model_args)


async def _probe_all(models: list[Model], seconds: float) -> list[BaseException | None]:
    return list(await asyncio.gather(*(probe(m, seconds) for m in models)))


def require_reachable(roles: dict[str, Model | None], seconds: float = CHECK_SECONDS) -> None:
    """Raise a Refusal (one line) naming every remote model of `roles` that cannot be reached."""
    found = targets(roles)
    if not found:
        return
    problems = []
    # made here, in the run's thread; driven (and closed) on the probes' own event loop
    models = [fresh(t.model) for t in found]
    for target, err in zip(found, run_sync(_probe_all(models, seconds))):
        why = verdict(err)
        if why:
            who = " and ".join([", ".join(target.roles[:-1]), target.roles[-1]] if len(target.roles) > 1 else target.roles)
            problems.append(f"cannot reach the {who} model {target.model} at {endpoint(target.model)}: {why}")
    if problems:
        raise Refusal("; ".join(problems) + f"; check the endpoint, the key and the network, or skip this check with {SKIP}")
