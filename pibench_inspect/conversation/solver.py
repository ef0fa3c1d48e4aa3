"""The conversation solver: scenario -> environment -> conversation -> store.

For each sample: the scenario and its domain, the sample's private state and its tools, the
agent and the user, then the conversation (conversation/orchestrator.py), which ends with a
`Termination` (conversation/termination.py) written to the store. The steps taken and what
changed in the state are written in `finally`, so a sample cut short by an Inspect limit is
still scored on its real end state.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Callable

from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, GenerateConfig, get_model
from inspect_ai.log import transcript
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import LimitExceededError

from ..domain.loader import Domain
from ..environment.merge import apply_changes, compact_changes, domain_document
from ..environment.state import StateDB
from ..environment.tools import build_tools, settle as settle_state
from ..scenario.model import Scenario, ToolNotCalled
from ..runtime.inspect_internals import active_generate_config, sample_time_is_up
from ..task_args import TaskArgs
from .agents import BUILTIN_AGENTS, ModelAgent, builtin_agent
from .orchestrator import Conversation
from .prompts import benchmark_context, policy_shared, system_prompt
from .seats import SEATED_AGENTS, SEATED_USERS, seated_agent, seated_user
from .pressure import DECISION_TOOL
from .users import USER_MAX_TOKENS, LLMUser, ScriptedUser, SoloUser

from .keys import (  # noqa: F401  (re-exported: tests and reports import them from here)
    GREETING,
    FINAL_STATE,
    STATE_CHANGES,
    TERMINATION,
    STEPS,
    USER_MODEL,
    AGENT,
    ORACLE_NOTES,
    AGENT_ERROR,
    USER_ERROR,
    USER_CONFIG,
    STOP_DETAIL,
)
from .termination import Termination

SEED_BASE = 42  # the original's default base seed


def seed_base(config: TaskArgs) -> int:
    return SEED_BASE if config.user_seed is None else config.user_seed


def stored_final_state(store: Any, initial: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The final state the solver saved (a `Store` or a logged sample's store dict).

    The solver stores what changed since the initial state (`STATE_CHANGES`); `initial` is that
    state, `domain_document(domain, scenario)` (`pibench_inspect.analysis.final_state` finds it
    for a logged sample). Older logs hold the whole document (`FINAL_STATE`, as JSON text or
    as the document itself) and need no `initial`.
    """
    value = store.get(FINAL_STATE)
    if value is not None:
        return json.loads(value) if isinstance(value, str) else value
    changes = store.get(STATE_CHANGES)
    if changes is None:
        return None
    if initial is None:
        raise ValueError(
            f"the store holds the state's changes ({STATE_CHANGES}): pass the initial state "
            "(domain_document(domain, scenario)), or use pibench_inspect.analysis.final_state"
        )
    return apply_changes(initial, json.loads(changes) if isinstance(changes, str) else changes)


logger = logging.getLogger(__name__)

Resolver = Callable[[str], tuple[Scenario, Domain]]


def is_none_model(model: Any) -> bool:
    """`--model none` (or a role left on it): nothing can generate."""
    return model.api.model_name == "none" or str(model).startswith("none")


def make_user(config: TaskArgs, scenario: Scenario, epoch: int = 1, seed_id: str | None = None,
              domain: Domain | None = None):
    if config.user == "a2a":
        # the simulated user runs in another process, behind an A2A server (reference 5.8)
        from ..a2a.user_client import A2AUser
        from .seeds import derive_seed

        return A2AUser(config.user_url or "", scenario.user_simulation,
                       derive_seed(seed_base(config), seed_id or scenario.scenario_id, epoch - 1), config.a2a_timeout,
                       decision_tool=domain.config.decision_tool if domain else DECISION_TOOL)
    if config.user in SEATED_USERS:  # a person at a terminal (pibench play --as user)
        return seated_user(config, scenario)
    if config.user == "scripted":
        return ScriptedUser(scenario.user_simulation,
                            decision_tool=domain.config.decision_tool if domain else DECISION_TOOL)
    if config.user == "solo":
        return SoloUser(scenario.user_simulation)
    if config.user != "llm":
        raise ValueError(f"-T user={config.user!r}: expected 'llm', 'scripted', 'solo' or 'a2a'")
    model = get_model(role="user", default=get_model())
    if is_none_model(model):
        raise ValueError(
            "the simulated user needs a model: bind one with --model-role user=PROVIDER/MODEL, "
            "pass --model, or run keylessly with -T user=scripted"
        )
    return LLMUser(scenario.user_simulation, model, config.max_user_turns, user_generate_config(config, model, scenario, epoch))


def user_generate_config(config: TaskArgs, model: Any, scenario: Scenario, epoch: int) -> GenerateConfig:
    """-T user_temperature / user_seed when given, else the role's own settings, else
    temperature 0 and the seed the original derived per scenario and trial (as remote parties get);
    the role's max_tokens and attempt_timeout, else USER_MAX_TOKENS and the run's --attempt-timeout."""
    from .seeds import derive_seed

    role = model.config
    temperature = config.user_temperature if config.user_temperature is not None else (
        role.temperature if role.temperature is not None else 0.0)
    if config.user_seed is None and role.seed is not None:
        seed = role.seed
    else:
        seed = derive_seed(seed_base(config), scenario.scenario_id, epoch - 1)
    # Inspect hands a role model --max-retries and --timeout, not --attempt-timeout: without it
    # one hung call of the simulator could hold the sample for as long as --timeout allows
    attempt_timeout = role.attempt_timeout if role.attempt_timeout is not None else active_generate_config().attempt_timeout
    max_tokens = role.max_tokens if role.max_tokens is not None else USER_MAX_TOKENS
    return GenerateConfig(temperature=temperature, seed=seed, attempt_timeout=attempt_timeout, max_tokens=max_tokens)


def make_agent(config: TaskArgs, scenario: Scenario, domain: Domain, epoch: int = 1,
               seed_id: str | None = None):
    from .seeds import derive_seed

    # external agents get the seed the original's runner derived for this scenario and trial
    seed = derive_seed(seed_base(config), scenario.scenario_id, epoch - 1)
    if config.agent == "model":
        return ModelAgent(get_model())
    if ":" in config.agent:
        # an external agent implementing the original's five-operation protocol
        from ..local.adapter import ProtocolAgent, load_agent

        return ProtocolAgent(load_agent(config.agent, dict(config.agent_args)), benchmark_context(scenario, domain), seed)
    if config.agent == "a2a":
        from ..a2a.purple import A2APurpleAgent

        return A2APurpleAgent(
            config.agent_url or "",
            benchmark_context(scenario, domain),
            derive_seed(seed_base(config), seed_id or scenario.scenario_id, epoch - 1),
            timeout=config.a2a_timeout,
            mode=config.agent_mode,
            domain=domain.name,
        )
    if config.agent in BUILTIN_AGENTS:
        return builtin_agent(config.agent, domain, scenario)
    if config.agent in SEATED_AGENTS:  # a person (pibench play) or an environment's policy
        return seated_agent(config, scenario, domain)
    raise ValueError(
        f"-T agent={config.agent!r}: expected 'model' or one of {', '.join(BUILTIN_AGENTS)}"
    )


async def close_party(party: Any) -> None:
    """Let an agent or user release what it holds (an external agent's stop(), an HTTP client)."""
    if party is None:
        return
    try:
        if hasattr(party, "aclose"):
            await party.aclose()
        elif hasattr(party, "close"):
            party.close()
    except Exception as err:  # closing must never hide the sample's result
        logger.warning("closing %s failed: %s", getattr(party, "name", party), err)


def forbidden_tools(scenario: Scenario, config: TaskArgs) -> set[str] | None:
    """-T hard_gate: the tools a tool_not_called check forbids, which then refuse to run."""
    if not config.hard_gate:
        return None
    return {c.tool_name for c in scenario.criteria.policy_checks if isinstance(c, ToolNotCalled)}


def start_agent(state: TaskState, scenario: Scenario, domain: Domain, config: TaskArgs) -> Any:
    agent = make_agent(config, scenario, domain, state.epoch, seed_id(state, scenario))
    if getattr(agent, "notes", None):
        # a derived oracle plan that cannot pass every check says which and why
        state.store.set(ORACLE_NOTES, agent.notes)
        transcript().info({"oracle cannot satisfy": agent.notes})
        logger.warning("oracle on %s cannot satisfy: %s", scenario.scenario_id, "; ".join(agent.notes))
    return agent


def start_user(state: TaskState, scenario: Scenario, config: TaskArgs, domain: Domain | None = None) -> Any:
    user = make_user(config, scenario, state.epoch, seed_id(state, scenario), domain)
    state.store.set(USER_MODEL, str(user.model) if isinstance(user, LLMUser) else user.name)
    if isinstance(user, LLMUser):
        state.store.set(USER_CONFIG, user.config.model_dump(exclude_none=True))
    return user


def seed_id(state: TaskState, scenario: Scenario) -> str:
    # the original's A2A path seeds from the scenario file's stem, not the id (reference 3.6)
    return Path(state.metadata.get("scenario_file") or scenario.scenario_id).stem


def opening(scenario: Scenario, domain: Domain, config: TaskArgs) -> list[Any]:
    """The messages the conversation starts from: the system prompt, and in parity the
    original's fixed assistant greeting (its judge and JSON-decision parsing see it as agent text)."""
    messages: list[Any] = [ChatMessageSystem(content=system_prompt(scenario, domain, shared=policy_shared(config.agent)))]
    if domain.original_layout if config.parity is None else config.parity:
        messages.append(ChatMessageAssistant(content=GREETING))
    return messages


def save_state_changes(store: Any, db: StateDB, initial: dict[str, Any]) -> None:
    # what changed, as JSON text: a diff against the initial state (merge.compact_changes);
    # Inspect carries the store into its store event and the log's store, so what is stored
    # here is in the log twice: the changed collections in full were ~15 KB
    store.set(STATE_CHANGES, compact_changes(initial, db.export_changes_text()))


async def wind_down(store: Any, db: StateDB, initial: dict[str, Any], parties: tuple[Any, ...]) -> None:
    """The final-state snapshot, then release: closing a remote party awaits the network, which
    a cancelled sample may not get to finish."""
    try:
        # a tool call still running (the sample was cancelled mid-call) is stopped first
        if not await settle_state(db):
            raise RuntimeError("a tool call did not stop, so the sample's state cannot be read")
        save_state_changes(store, db, initial)
    finally:
        db.close()
        for party in parties:
            await close_party(party)


@solver
def conversation(resolve: Resolver, config: TaskArgs = TaskArgs()) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        scenario, domain = resolve(str(state.sample_id))
        initial = domain_document(domain, scenario)
        db = StateDB(initial, allow_sql=domain.runs_raw_sql, seed=domain.seed_state,
                     limits=domain.config.limits)
        store = state.store
        store.set(TERMINATION, Termination.NOT_STARTED.value)
        store.set(AGENT, config.agent)
        talk: Conversation | None = None
        agent = user = None
        try:
            # handed to the agent and to execute_tools, not kept in `state.tools`: Inspect
            # re-describes (deep-copies) every tool there at each state snapshot, which cost more
            # than the tools themselves; a model agent's tools are in each of its model events
            tools = build_tools(domain, scenario, db, forbidden=forbidden_tools(scenario, config))
            agent = start_agent(state, scenario, domain, config)
            user = start_user(state, scenario, config, domain)
            state.messages = opening(scenario, domain, config)
            talk = Conversation(state, agent, user, tools, config.max_steps)
            store.set(TERMINATION, (await talk.run()).value)
        except LimitExceededError:
            # an Inspect limit (tokens, messages, turns): scored like max_steps, on the state reached
            store.set(TERMINATION, Termination.LIMIT.value)
            raise
        except BaseException:
            # the time and working limits cancel the sample instead of raising here; Inspect then
            # scores it like any limit, so it ends on the state reached, not as an error
            store.set(TERMINATION, (Termination.LIMIT if sample_time_is_up() else Termination.ERROR).value)
            raise
        finally:
            store.set(STEPS, talk.steps if talk else 0)  # the snapshot, even when a limit aborts
            await wind_down(store, db, initial, (agent, user))
        return state

    return solve
