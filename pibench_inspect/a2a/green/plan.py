"""From a checked request and the server's settings to the Inspect run: task, -T arguments,
model roles, sample concurrency, and how many sample runs to expect.

Everything that can be known before the run is checked here, against the scenario set the
run will use (its folder exists, the domain has scenarios, the scenario ids exist, a model is
there for the simulated user), so that a mistake is a JSON-RPC error naming the field instead
of a task that fails minutes later.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from ...domain.loader import domain_aliases
from ...paths import domains_dir
from ...scenario.catalog import ScenarioSet, load_set
from .request import AssessmentRequest, InvalidRequest

# the domains that have a registered task of their own (pibench_inspect/<name>)
TASK_DOMAINS = ("finra", "retail", "helpdesk")
# hosts a request may name as participants unless the server is started with --allow-host
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# Inspect model providers a request may name for the user and the judge unless the server is
# started with --model-providers: hosted APIs only. Not `protocol` (imports any module in the
# runner), not local-weights or arbitrary-endpoint providers (hf, vllm, openai-api, ...).
DEFAULT_PROVIDERS = ("litellm", "openai", "anthropic", "google", "mistral", "grok", "groq", "together",
                     "fireworks", "deepseek", "perplexity", "openrouter", "azureai", "bedrock", "vertex")
MAX_SAMPLE_RUNS = 5000  # scenarios x trials in one assessment
# LiteLLM's own providers ("litellm/<provider>/<model>", or a bare name LiteLLM routes) a request
# may name: hosted APIs only. Not the ones that call a local or arbitrary endpoint (ollama,
# ollama_chat, llamafile, lm_studio, vllm, hosted_vllm, custom_openai, litellm_proxy, ...): they
# would let a caller make the server POST to services on its own host and read the answer back.
# The operator adds one with --model-providers litellm/<provider>.
LITELLM_HOSTED = ("openai", "anthropic", "gemini", "vertex_ai", "mistral", "xai", "groq", "together_ai",
                  "fireworks_ai", "deepseek", "perplexity", "openrouter", "azure", "azure_ai", "bedrock",
                  "cohere", "cohere_chat")


@dataclass(frozen=True)
class ServerSettings:
    concurrency: int = 1  # sample runs in flight across the whole server
    heartbeat: float = 30.0  # seconds between status updates at the latest
    scenarios_dir: Path | None = None  # the default scenario source (None: the shipped set)
    log_dir: Path = Path("logs/green")
    user_model: str | None = None  # for requests that name none
    judge_model: str | None = None
    allowed_hosts: tuple[str, ...] = LOOPBACK  # participant hosts; "*" allows any
    model_providers: tuple[str, ...] = DEFAULT_PROVIDERS  # for user_model / judge_model
    # folders under which a request's config.scenarios_dir may lie (the --scenarios-dir source
    # is always allowed); none: a request cannot name a folder at all
    scenario_roots: tuple[Path, ...] = ()
    preflight: bool = True  # one tiny call to each role model before a run (runner.py)


class EvalPlan(BaseModel):
    """What the runner subprocess needs (sent to it as JSON) plus what the result needs."""

    task: str
    task_args: dict[str, Any]
    model_roles: dict[str, str] = {}
    max_samples: int = 1
    total: int  # sample runs expected: scenarios x trials
    epochs: int = 1  # Inspect's --epochs (trials)
    sample_id: list[str] | None = None  # Inspect's --sample-id (the scenarios asked for)
    log_dir: str = ""  # filled in by the executor: one fresh folder per assessment
    agent_id: str = "agent"
    result_domain: str = "policy_compliance"
    purple_url: str = ""
    warnings: list[str] = []  # told to the caller in the first status update
    retry_on_error: int = 0  # Inspect's retries of sample runs that ended on an error
    preflight: bool = True  # reach each role model once before the run (runner.py)


def model_ref(name: str, providers: tuple[str, ...] | None = None, field: str = "config.user_model") -> str:
    """An AgentBeats config names a model bare ("gpt-4.1-mini"); Inspect needs a provider.
    Bare names go through our litellm provider; "provider/model" passes unchanged, if the
    provider is one the server allows (`providers`; None: no check). Through LiteLLM, the
    provider LiteLLM itself would call must be hosted (LITELLM_HOSTED) or listed by the operator
    as `litellm/<provider>`."""
    ref = name if "/" in name else f"litellm/{name}"
    provider = ref.split("/", 1)[0]
    if providers is None:
        return ref
    if provider not in providers:
        raise InvalidRequest(f"{field}: provider {provider!r} is not allowed on this server; "
                             f"allowed: {', '.join(providers)}")
    if provider == "litellm":
        sub = litellm_provider(ref.split("/", 1)[1])
        allowed = set(LITELLM_HOSTED) | {p.split("/", 1)[1] for p in providers if p.startswith("litellm/")}
        if sub is not None and sub not in allowed:
            raise InvalidRequest(f"{field}: LiteLLM provider {sub!r} is not allowed on this server (it calls an endpoint "
                                 f"of the server's own choosing, not a hosted API); allowed: {', '.join(sorted(allowed))}; "
                                 "the operator adds one with --model-providers litellm/<provider>")
    return ref


def litellm_provider(model: str) -> str | None:
    """The provider LiteLLM would call for `model`: its first segment ("ollama/llama3"), else the
    provider LiteLLM's model list gives a bare name; None for a bare name it does not know (which
    LiteLLM cannot route anywhere)."""
    if "/" in model:
        return model.split("/", 1)[0]
    from ... import _bootstrap  # noqa: F401  (before litellm loads: no price-list download)
    import litellm

    known = litellm.model_cost.get(model)
    provider = known.get("litellm_provider") if isinstance(known, dict) else None
    return provider if isinstance(provider, str) else None


def check_host(url: str, field: str, settings: ServerSettings) -> None:
    """Participants only on the hosts the operator allowed (loopback by default): a request must
    not make the server reach into its own network."""
    if "*" in settings.allowed_hosts:
        return
    host = (urlsplit(url).hostname or "").lower()
    if host not in {h.lower() for h in settings.allowed_hosts}:
        raise InvalidRequest(f"{field}: host {host!r} is not allowed on this server "
                             f"(allowed: {', '.join(settings.allowed_hosts)}; the operator adds hosts with --allow-host)")


def source_folder(raw: str, field: str) -> Path:
    """A scenario source: a folder holding scenarios/ and domains/. The original's
    scenarios_dir pointed at the scenarios/ folder itself; its parent is taken then."""
    path = Path(raw).expanduser().resolve()
    if (path / "scenarios").is_dir():
        return path
    if path.name == "scenarios" and path.is_dir() and (path.parent / "domains").is_dir():
        return path.parent
    what = "does not exist" if not path.exists() else "holds no scenarios/ folder"
    raise InvalidRequest(f"{field}: {path} {what} (expected a folder with scenarios/ and domains/, as in pi-bench)")


NOT_ALLOWED = ("config.scenarios_dir: not a scenario folder this server offers (it accepts a source, its "
               "scenarios/ folder or one domain's folder, under the roots the operator configured)")


def requested_source(raw: str, settings: ServerSettings) -> tuple[Path, Path | None]:
    """(source, domain folder or None) for a request's scenarios_dir: a source (scenarios/ and
    domains/), its scenarios/ folder, or one domain's folder scenarios/<domain> (the original
    allowed that), inside a configured root. Every refusal is the same message, so that the
    answers do not tell a caller which paths exist on the server."""
    roots = [r.resolve() for r in settings.scenario_roots]
    if settings.scenarios_dir is not None:
        roots.append(settings.scenarios_dir.resolve())
    try:
        path = Path(raw).expanduser()
        if not path.is_absolute() and settings.scenarios_dir is not None:
            path = settings.scenarios_dir / path
        path = path.resolve()
        if not any(path == r or path.is_relative_to(r) for r in roots):
            raise InvalidRequest(NOT_ALLOWED)
        if (path / "scenarios").is_dir() and (path / "domains").is_dir():
            return path, None
        if path.name == "scenarios" and path.is_dir() and (path.parent / "domains").is_dir():
            return path.parent, None
        if path.is_dir() and path.parent.name == "scenarios" and (path.parent.parent / "domains").is_dir():
            return path.parent.parent, path
    except (OSError, ValueError):
        pass
    raise InvalidRequest(NOT_ALLOWED)


def scenario_set(request: AssessmentRequest, settings: ServerSettings) -> tuple[Path | None, ScenarioSet, Path | None]:
    folder = None
    if request.config.scenarios_dir:
        source, folder = requested_source(request.config.scenarios_dir, settings)
        field = "config.scenarios_dir"
    else:
        source, field = settings.scenarios_dir, "the server's --scenarios-dir"
    try:
        found = load_set(source)
    except (OSError, ValueError):
        raise InvalidRequest(f"{field}: cannot read the scenarios") from None
    if not found.entries:
        raise InvalidRequest(f"{field}: no valid scenario there")
    return source, found, folder


def make_plan(request: AssessmentRequest, settings: ServerSettings) -> EvalPlan:
    config = request.config
    check_host(request.purple_url, f"participants.{request.role}", settings)
    if config.user_url:
        check_host(config.user_url, "config.user_url", settings)
    source, found, folder = scenario_set(request, settings)
    entries = list(found.entries.values())
    task, scenarios = "pibench_inspect/pibench", config.scenarios
    # narrowed: the all-domains task, told the scenario ids to run
    narrowed = folder is not None
    if folder is not None:
        # one domain's folder: its scenarios only
        entries = [e for e in entries if e.path.resolve().is_relative_to(folder)]
        if not entries:
            raise InvalidRequest(NOT_ALLOWED)
    present = sorted({e.domain.name for e in entries})
    if config.scenario_scope == "domain":
        raw = config.scenario_domain or ""
        name = domain_aliases(domains_dir(source)).get(raw, raw)
        if name not in present:
            raise InvalidRequest(
                f"config.scenario_domain: unknown domain {raw!r}; the scenario set has {', '.join(present)}"
                + " (the original's names retail_refund_sop_v1 and helpdesk_access_control_v1 are accepted too)"
            )
        entries = [e for e in entries if e.domain.name == name]
        if name in TASK_DOMAINS and folder is None:
            task = f"pibench_inspect/pibench_{name}"
        else:
            narrowed = True  # a domain of a custom scenario folder
    if config.scenarios:
        ids = {e.scenario.scenario_id for e in entries}
        unknown = [s for s in config.scenarios if s not in ids]
        if unknown:
            scope = f"domain {config.scenario_domain}" if config.scenario_scope == "domain" else "the scenario set"
            raise InvalidRequest(f"config.scenarios: not in {scope}: {', '.join(unknown)}")
        entries = [e for e in entries if e.scenario.scenario_id in set(config.scenarios)]
    if narrowed and not scenarios:
        scenarios = [e.scenario.scenario_id for e in entries]

    task_args: dict[str, Any] = {
        "agent": "a2a",
        "agent_url": request.purple_url,
        "max_steps": config.max_steps,
        "max_user_turns": config.max_user_turns,
        "user_seed": config.seed,
        "hard_gate": config.observer_mode == "hard_gate",
        "judge": config.judge,
        "a2a_timeout": config.a2a_timeout,
        # the runner reaches the role models itself before the run (runner.preflight), keeping
        # the provider's answer out of what the caller sees: the task's own check would repeat it
        "model_check": False,
    }
    if source is not None:
        task_args["source"] = str(source)
    roles: dict[str, str] = {}
    if config.user_url:
        task_args.update(user="a2a", user_url=config.user_url)
    elif config.user == "scripted":
        task_args["user"] = "scripted"
    else:
        user_model = config.user_model or settings.user_model
        if not user_model:
            raise InvalidRequest(
                "config.user_model: needed for the LLM-simulated user and this server has no default "
                "(--user-model); or set config.user to \"scripted\", or config.user_url to an A2A user simulator"
            )
        task_args["user"] = "llm"
        # the operator's own default is the operator's choice; a request's name is checked
        roles["user"] = model_ref(user_model, settings.model_providers if config.user_model else None,
                                  "config.user_model")
    judge_model = config.judge_model or settings.judge_model
    if judge_model and config.judge != "off":
        roles["grader"] = model_ref(judge_model, settings.model_providers if config.judge_model else None,
                                    "config.judge_model")
    elif config.judge == "on":
        raise InvalidRequest(
            "config.judge: \"on\" needs config.judge_model (the agent under test is remote, so there is "
            "no model of its own to judge with) or a server --judge-model"
        )
    _check_task_args(task_args)
    total = len(entries) * config.num_trials
    if total > MAX_SAMPLE_RUNS:
        raise InvalidRequest(f"config.num_trials: {len(entries)} scenarios x {config.num_trials} trials is {total} "
                             f"sample runs; this server runs at most {MAX_SAMPLE_RUNS} per assessment")
    return EvalPlan(
        task=task,
        task_args=task_args,
        model_roles=roles,
        max_samples=min(config.concurrency or settings.concurrency, settings.concurrency),
        total=total,
        retry_on_error=config.retry_failed,
        preflight=settings.preflight,
        epochs=config.num_trials,
        sample_id=list(scenarios) if scenarios else None,
        agent_id=request.agent_id,
        result_domain=config.domain,
        purple_url=request.purple_url,
        warnings=request.warnings,
    )


def _check_task_args(task_args: dict[str, Any]) -> None:
    """The task's own validation, so a value it refuses is a request error, not a failed run."""
    from ...task_args import parse_args

    try:
        parse_args(task_args)
    except ValueError as err:
        raise InvalidRequest(f"config: {err}") from None
