"""Build the pi-bench Task: scenarios -> samples, the conversation solver, the scorer.

Task files (finra.py, retail.py, helpdesk.py, pibench.py) are thin wrappers around
`pibench_task`; their `-T` arguments are validated here so a typo is a clear error.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import pass_k
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import _bootstrap  # noqa: F401  (environment set-up before litellm can load)
from .conversation.agents import BUILTIN_AGENTS
from .conversation.solver import ConversationConfig, conversation
from .scenario.catalog import Entry, ScenarioSet, load_set
from .scenario.content_hash import content_hash
from .scenario.shard import in_shard, parse_shard
from .scoring.reducers import pibench_epochs
from .scoring.scorer import pibench_scorer

logger = logging.getLogger(__name__)


def _split(v: Any) -> list[str] | None:
    if v is None or v == "":
        return None
    if isinstance(v, str):
        return [x.strip() for x in v.split(",") if x.strip()]
    return [str(x) for x in v]


class TaskArgs(BaseModel):
    """Every `-T` argument a pi-bench task accepts (see README: Task arguments)."""

    model_config = ConfigDict(extra="forbid")
    scenarios: list[str] | None = None  # scenario ids (comma-separated on the command line)
    column: list[str] | None = None  # leaderboard primary column(s)
    label: list[str] | None = None  # expected label(s)
    agent: str = "model"
    # keyword arguments for a module:ClassOrFactory agent (e.g. {"model_name": "gpt-4o-mini"})
    agent_args: dict[str, Any] = Field(default_factory=dict)
    # a remote agent under test (-T agent=a2a): its URL, and whether to bootstrap (auto: if its
    # card declares urn:pi-bench:policy-bootstrap:v1)
    agent_url: str | None = None
    agent_mode: Literal["auto", "stateless", "bootstrap"] = "auto"
    user: Literal["llm", "scripted", "solo", "a2a"] = "llm"
    user_url: str | None = None  # the simulated user over A2A (-T user=a2a)
    a2a_timeout: float = Field(default=120.0, gt=0)  # seconds per A2A request
    max_steps: int = Field(default=40, ge=2)
    max_user_turns: int = Field(default=8, ge=1)
    user_temperature: float = Field(default=0.0, ge=0.0)
    user_seed: int = 42
    hard_gate: bool = False
    # parity: score as the original did (original pi-bench folders default to it); strict: ours
    scoring: Literal["auto", "parity", "strict"] = "auto"
    # NL judge (tier 2): auto = the grader role, else the model under test, else not scored
    judge: Literal["auto", "on", "off"] = "auto"
    epochs: int = Field(default=1, ge=1)
    source: str | None = None
    shard: str | None = None  # K/N: the K-th of N parts of the selection (scenario/shard.py)

    _split = field_validator("scenarios", "column", "label", mode="before")(
        lambda cls, v: _split(v)
    )
    _shard = field_validator("shard", mode="before")(
        lambda cls, v: None if parse_shard(v) is None else str(v).strip()
    )

    @field_validator("agent")
    @classmethod
    def _known_agent(cls, v: str) -> str:
        if v not in ("model", "a2a") and v not in BUILTIN_AGENTS and ":" not in v:
            raise ValueError(
                f"expected 'model', 'a2a', one of {', '.join(BUILTIN_AGENTS)}, or module:ClassOrFactory "
                f"implementing pibench_inspect.local.AgentProtocol; got {v!r}"
            )
        return v


    @model_validator(mode="after")
    def _urls_match_parties(self) -> "TaskArgs":
        for party, url_arg, url in (("agent", "agent_url", self.agent_url), ("user", "user_url", self.user_url)):
            remote = getattr(self, party) == "a2a"
            if remote and not url:
                raise ValueError(f"-T {party}=a2a needs -T {url_arg}=http://HOST:PORT")
            if url and not remote:
                raise ValueError(f"-T {url_arg} is only used with -T {party}=a2a")
            if url and not url.startswith(("http://", "https://")):
                raise ValueError(f"-T {url_arg}={url!r} must start with http:// or https://")
        return self


def parse_args(task_args: dict[str, Any]) -> TaskArgs:
    try:
        return TaskArgs.model_validate(task_args)
    except ValidationError as err:
        problems = "; ".join(
            (f"-T {'.'.join(str(p) for p in e['loc'])}: " if e["loc"] else "")
            + ("unknown task argument" if e["type"] == "extra_forbidden" else e["msg"].removeprefix("Value error, "))
            for e in err.errors(include_url=False)
        )
        known = ", ".join(TaskArgs.model_fields)
        raise ValueError(f"{problems} (task arguments: {known})") from None


def sample_for(entry: Entry) -> Sample:
    s = entry.scenario
    return Sample(
        id=s.scenario_id,
        input=s.user_simulation.initial_user_message,
        target=s.expected,
        metadata={
            "domain": entry.domain.name,
            "label": s.expected,
            "column": s.primary,
            "subskills": s.leaderboard.subskills if s.leaderboard else [],
            "stressors": s.leaderboard.stressors if s.leaderboard else [],
            "policy_version": s.policy_context.policy_version,
            "scenario_file": str(entry.path),
        },
    )


def select(entries: list[Entry], args: TaskArgs) -> list[Entry]:
    out = entries
    if args.scenarios:
        wanted = set(args.scenarios)
        unknown = wanted - {e.scenario.scenario_id for e in entries}
        if unknown:
            raise ValueError(f"-T scenarios: unknown scenario id(s) {', '.join(sorted(unknown))}")
        out = [e for e in out if e.scenario.scenario_id in wanted]
    if args.column:
        out = [e for e in out if e.scenario.primary in args.column]
    if args.label:
        out = [e for e in out if e.scenario.expected in args.label]
    if args.shard:
        out = [e for e in out if in_shard(e.scenario.scenario_id, args.shard)]
    return out


def pibench_task(domain: str | None, **task_args: Any) -> Task:
    """The Task for one domain (or every domain with `domain=None`)."""
    args = parse_args(task_args)
    scenario_set: ScenarioSet = load_set(args.source)
    for err in scenario_set.errors:
        logger.warning("skipping invalid scenario input: %s", err)
    entries = (
        list(scenario_set.entries.values()) if domain is None else scenario_set.by_domain(domain)
    )
    if not entries:
        where = f"domain {domain!r}" if domain else "any domain"
        raise ValueError(f"no valid scenarios for {where} under {scenario_set.source or 'the package data'}")
    chosen = select(entries, args)
    if not chosen:
        raise ValueError("the scenario selection (-T scenarios/column/label/shard) matched nothing"
                         + (f"; -T shard={args.shard} is an empty part of it: use fewer shards" if args.shard else ""))
    parity = {"parity": True, "strict": False}.get(args.scoring)
    config = ConversationConfig(
        agent=args.agent,
        user=args.user,
        max_steps=args.max_steps,
        max_user_turns=args.max_user_turns,
        user_temperature=args.user_temperature,
        user_seed=args.user_seed,
        hard_gate=args.hard_gate,
        parity=parity,
        agent_args=tuple(sorted(args.agent_args.items())),
        agent_url=args.agent_url,
        agent_mode=args.agent_mode,
        a2a_timeout=args.a2a_timeout,
        user_url=args.user_url,
    )
    reducers = [pibench_epochs()] + ([pass_k(args.epochs)] if args.epochs > 1 else [])
    return Task(
        dataset=MemoryDataset([sample_for(e) for e in chosen], name=domain or "pibench"),
        solver=conversation(scenario_set.resolve, config),
        scorer=pibench_scorer(scenario_set.resolve, judge=args.judge, parity=parity),
        epochs=Epochs(args.epochs, reducers),
        metadata={
            "pibench": args.model_dump(),
            "domain": domain or "all",
            "scenario_set": content_hash(str(scenario_set.source) if scenario_set.source else None),
        },
    )
