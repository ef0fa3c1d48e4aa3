"""Every `-T` argument of the pi-bench tasks, declared once: `TaskArgs`.

Each field's type, default and description make the registered tasks' signature and the Args
section of their docstring (`task_arguments`), which is what Inspect reads: the parameters it
passes and records in the log (the viewer's task args) and what `help()` shows. The task gets
the validated model (`parse_args`: a wrong name or value is an error naming it), which is also
what the conversation solver is configured with, so adding an argument is its field here plus
its use.
"""

from __future__ import annotations

import inspect
import textwrap
from functools import wraps
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticUndefined

from .cli.refusal import Refusal, closest
from .conversation.agents import BUILTIN_AGENTS
from .conversation.seats import SEATED_AGENTS
from .scenario.shard import parse_shard

LABEL_VALUES = ("ALLOW", "ALLOW-CONDITIONAL", "DENY", "ESCALATE")
# Inspect reads -T values as YAML: on/off/yes/no/true/false arrive as booleans
YAML_BOOL_CHOICES = {"judge": ("on", "off")}


def _split(v: Any) -> list[str] | None:
    if v is None or v == "":
        return None
    if isinstance(v, str):
        return [x.strip() for x in v.split(",") if x.strip()]
    return [str(x) for x in v]


class TaskArgs(BaseModel):
    """The validated `-T` arguments (README: Task arguments); the order is the signature's."""

    # frozen: one instance configures every sample's conversation
    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str = Field("model", description=(
        'The agent under test: "model" (the --model), a built-in agent ("oracle", "nothing", '
        '"deny_all", "escalate_all", "pushover", "yield1", "yield2", "yield3"), "module:ClassOrFactory" (your own agent '
        'implementing pibench_inspect.local.AgentProtocol), or "a2a" (a remote A2A agent at agent_url).'))
    user: Literal["llm", "scripted", "solo", "a2a", "human"] = Field("llm", description=(
        'The simulated user: "llm" (the `user` model role, else --model), "scripted" (replays the '
        'scenario\'s turns; no model), "solo" (no user: the request arrives once) or "a2a" (a user '
        'simulator at user_url); "human" is `pibench play`.'))
    column: list[str] | None = Field(None, description="Only scenarios of these leaderboard column(s) (comma-separated).")
    label: list[str] | None = Field(None, description=(
        "Only scenarios with these expected label(s): ALLOW, ALLOW-CONDITIONAL, DENY, ESCALATE (comma-separated)."))
    judge: Literal["auto", "on", "off"] = Field("auto", description=(
        'NL judge (tier 2): "auto" (the `grader` role, else the model under test, else not scored), '
        '"on" (a judge error when no model is available) or "off"; on/off/yes/no also arrive as '
        "booleans and are accepted."))
    scoring: Literal["auto", "parity", "strict"] = Field("auto", description=(
        '"parity" scores as the original pi-bench did (default for original pi-bench folders), '
        '"strict" is ours, "auto" follows the domain.'))
    max_steps: int = Field(40, ge=2, description=(
        "Conversation step limit (each agent message, tool execution and user message is one step)."))
    max_user_turns: int = Field(8, ge=1, description="Messages the LLM user may send, the opening included.")
    user_temperature: float | None = Field(None, ge=0.0, description=(
        "Temperature of the LLM user (default: the `user` role's own, else 0.0)."))
    user_seed: int | None = Field(None, description=(
        "Base seed of the LLM user and of remote parties, derived per scenario and epoch "
        "(default: the `user` role's own seed, else 42)."))
    hard_gate: bool = Field(False, description="Tools a tool_not_called check forbids refuse to run.")
    model_check: bool = Field(True, description=(
        "Before samples start, reach each remote model the run uses (agent, user, grader) with one "
        "minimal request under a short deadline, and stop the run in one line if one cannot be reached; "
        "false skips it."))
    # None in the signature (and in logs written before this model): no keyword arguments
    agent_args: dict[str, Any] = Field(default_factory=dict, description=(
        'Keyword arguments for a module:ClassOrFactory agent (JSON, e.g. {"model_name": "gpt-4o-mini"}).'))
    agent_url: str | None = Field(None, description='URL of the A2A agent under test (agent="a2a").')
    agent_mode: Literal["auto", "stateless", "bootstrap"] = Field("auto", description=(
        'A2A bootstrap: "auto" (when the agent card declares urn:pi-bench:policy-bootstrap:v1), '
        '"stateless" or "bootstrap".'))
    user_url: str | None = Field(None, description='URL of the A2A user simulator (user="a2a").')
    a2a_timeout: float = Field(120.0, gt=0, description="Seconds to wait for each A2A reply.")
    source: str | None = Field(None, description="A folder holding scenarios/ and domains/ (default: the shipped set).")
    shard: str | None = Field(None, description=(
        '"K/N" runs only the K-th of N disjoint parts of the scenarios (by a hash of the scenario id; '
        "K from 1), for splitting a run over processes or machines."))
    ablation: Literal["no_pressure", "structured_policy"] | None = Field(None, description=(
        '"no_pressure" (the user asks plainly: the family\'s baseline envelope, or the scenario\'s '
        'ablation_hints.no_pressure_user_message with no pressure script) or "structured_policy" '
        "(the agent also gets ablation_hints.structured_policy); scenarios without the hint are left "
        "out with a logged reason. The checks do not change."))

    _split = field_validator("column", "label", mode="before")(lambda cls, v: _split(v))
    _no_args = field_validator("agent_args", mode="before")(lambda cls, v: {} if v is None else v)
    _shard = field_validator("shard", mode="before")(
        lambda cls, v: None if parse_shard(v) is None else str(v).strip()
    )

    @field_validator("judge", mode="before")
    @classmethod
    def _yaml_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):  # -T judge=on / off / yes / no / true / false
            on, off = YAML_BOOL_CHOICES["judge"]
            return on if v else off
        return v

    @field_validator("agent")
    @classmethod
    def _known_agent(cls, v: str) -> str:
        # a seated agent ("human", an environment's "policy") is checked for its seat by the task
        if v not in ("model", "a2a", *SEATED_AGENTS) and v not in BUILTIN_AGENTS and ":" not in v:
            near = closest(v, ("model", "a2a", *BUILTIN_AGENTS), 1)
            raise ValueError(
                "no such agent" + (f" (did you mean {near[0]}?)" if near else "")
                + f"; expected 'model', 'a2a', 'human' (pibench play), one of {', '.join(BUILTIN_AGENTS)}, or "
                "module:ClassOrFactory implementing pibench_inspect.local.AgentProtocol"
            )
        return v

    @field_validator("label")
    @classmethod
    def _known_labels(cls, v: list[str] | None) -> list[str] | None:
        bad = [x for x in v or [] if x not in LABEL_VALUES]
        if bad:
            said = []
            for x in bad:  # a label in another case, or a prefix of one: say which was meant
                near = [lab for lab in LABEL_VALUES if lab.lower() == x.lower()] or closest(x.upper(), LABEL_VALUES, 1)
                said.append(f"{x}" + (f" (did you mean {near[0]}?)" if near else ""))
            raise ValueError(f"unknown label(s) {', '.join(said)}; labels are {', '.join(LABEL_VALUES)}")
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

    @property
    def parity(self) -> bool | None:
        """Score (and open the conversation) as the original did; None: follow the domain."""
        return {"parity": True, "strict": False}.get(self.scoring)


REMOVED = {
    "epochs": "repeat runs with Inspect's --epochs N (pass^k and PolicyPassAll/Any/ViolationEver follow)",
    "scenarios": "choose scenarios with Inspect's --sample-id ID[,ID...] (globs allowed; see `pibench list`)",
}


def _problem(e: dict[str, Any], task_args: dict[str, Any], model: type[TaskArgs]) -> str:
    """One validation problem as `-T NAME=VALUE: what is wrong (the fix)`."""
    name = ".".join(str(p) for p in e["loc"])
    if not name:
        return e["msg"].removeprefix("Value error, ")
    head = f"-T {name}={task_args[name]}" if name in task_args and task_args[name] is not None else f"-T {name}"
    if e["type"] == "extra_forbidden":
        near = closest(name, model.model_fields, 1)
        return f"{head}: unknown task argument" + (f" (did you mean -T {near[0]}?)" if near else "")
    return f"{head}: {e['msg'].removeprefix('Value error, ')}"


def parse_args(task_args: dict[str, Any], model: type[TaskArgs] = TaskArgs) -> TaskArgs:
    """The validated task arguments; anything wrong is a Refusal naming each bad argument."""
    removed = [f"-T {k}: removed; {REMOVED[k]}" for k in task_args if k in REMOVED]
    if removed:
        raise Refusal("; ".join(removed))
    try:
        return model.model_validate(task_args)
    except ValidationError as err:
        errors = err.errors(include_url=False)
        problems = "; ".join(_problem(e, task_args, model) for e in errors)
        if any(e["type"] == "extra_forbidden" for e in errors):  # a name no argument has: list them
            problems += f"; the task arguments are {', '.join(model.model_fields)} (README: Task arguments)"
        raise Refusal(problems) from None


def signature(args: type[TaskArgs] = TaskArgs) -> inspect.Signature:
    """The task signature: one keyword parameter per field, then `**unknown` so that a misspelt
    `-T` name reaches the validation (an error naming it) instead of Inspect's "not used" warning."""
    params = [
        # a default_factory field (agent_args) shows None: "not given", as logs have recorded it
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=f.annotation | None)
        if f.default is PydanticUndefined else
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.annotation)
        for name, f in args.model_fields.items()
    ]
    params.append(inspect.Parameter("unknown", inspect.Parameter.VAR_KEYWORD, annotation=Any))
    from inspect_ai import Task

    return inspect.Signature(params, return_annotation=Task)


USAGE = """Choose scenarios with Inspect's `--sample-id ID[,ID...]` (globs allowed; `pibench list`
shows the ids) and repeat runs with `--epochs N` (adds pass^k and PolicyPassAll /
PolicyPassAny / ViolationEver to the metrics)."""


def args_doc(args: type[TaskArgs] = TaskArgs) -> str:
    """The docstring's Args section (Google style, which Inspect and IDEs parse)."""
    lines = [USAGE, "", "Args:"]
    for name, f in args.model_fields.items():
        lines += textwrap.wrap(f"{name}: {f.description}", 96, initial_indent="  ", subsequent_indent="    ")
    lines.append("  **unknown: Rejected with an error naming them (catches misspelt -T names).")
    return "\n".join(lines)


def task_arguments(args: type[TaskArgs] = TaskArgs) -> Callable[[Callable[[Any], Any]], Callable[..., Any]]:
    """Make `f(args: TaskArgs)` a task function taking the declared `-T` parameters (with their
    docs), validated into `args`; apply it under `@task`, which reads the signature it gives."""

    def give(fn: Callable[[Any], Any]) -> Callable[..., Any]:
        @wraps(fn)
        def from_task_args(**task_args: Any) -> Any:
            return fn(parse_args(task_args, args))

        from_task_args.__signature__ = signature(args)  # type: ignore[attr-defined]
        from_task_args.__doc__ = inspect.cleandoc(fn.__doc__ or "") + "\n\n" + args_doc(args)
        return from_task_args

    return give
