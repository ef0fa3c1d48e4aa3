"""The conversation solver: agent and simulated user take turns over the sample's tools.

Steps are counted as in the original (each agent message, each tool execution and each user
message is one step); the run ends when the user stops, the agent sends a stop token or says
nothing at all, a party's model stops without an answer (conversation/termination.py), or
`max_steps` is reached. The final state is written to the store in
`finally`, so a sample cut short by an Inspect limit is still scored on its real end state.
"""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable

from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    execute_tools,
    get_model,
)
from inspect_ai.log import transcript
from inspect_ai.model._generate_config import active_generate_config
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import LimitExceededError, span, suspend_token_limit, suspend_turn_limit

from ..domain.loader import Domain
from ..environment.merge import apply_changes, compact_changes, domain_document
from ..environment.state import StateDB
from ..environment.tools import build_tools, settle as settle_state
from ..scenario.model import Scenario, ToolNotCalled
from ..local.adapter import AgentProtocolError
from .agents import BUILTIN_AGENTS, ModelAgent, ScriptedAgent, builtin_agent
from .prompts import benchmark_context, policy_shared, system_prompt
from .seats import SEATED_AGENTS, SEATED_USERS, seated_agent, seated_user
from .users import SOLO_DONE, STOP_TOKENS, USER_MAX_TOKENS, LLMUser, ScriptedUser, SoloUser
from .json_safe import display_arguments, json_safe_calls

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
from .termination import ModelStopped, Termination

SEED_BASE = 42  # the original's default base seed


def seed_base(config: "ConversationConfig") -> int:
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


@dataclass(frozen=True)
class ConversationConfig:
    agent: str = "model"
    user: str = "llm"
    max_steps: int = 40
    max_user_turns: int = 8
    # None: not given (-T), so the `user` role's own settings apply (temperature 0.0 and a seed
    # derived from 42 per scenario and epoch when the role sets none)
    user_temperature: float | None = None
    user_seed: int | None = None
    hard_gate: bool = False
    # None: follow the domain (original pi-bench folders open with the original's greeting)
    parity: bool | None = None
    agent_args: tuple = ()
    # remote agents and users over A2A
    agent_url: str | None = None
    agent_mode: str = "auto"
    a2a_timeout: float = 120.0
    user_url: str | None = None


logger = logging.getLogger(__name__)

Resolver = Callable[[str], tuple[Scenario, Domain]]


def is_none_model(model: Any) -> bool:
    """`--model none` (or a role left on it): nothing can generate."""
    return model.api.model_name == "none" or str(model).startswith("none")


def make_user(config: ConversationConfig, scenario: Scenario, epoch: int = 1, seed_id: str | None = None):
    if config.user == "a2a":
        # the simulated user runs in another process, behind an A2A server (reference 5.8)
        from ..a2a.user_client import A2AUser
        from ..scoring.payload import derive_seed

        return A2AUser(config.user_url or "", scenario.user_simulation,
                       derive_seed(seed_base(config), seed_id or scenario.scenario_id, epoch - 1), config.a2a_timeout)
    if config.user in SEATED_USERS:  # a person at a terminal (pibench play --as user)
        return seated_user(config, scenario)
    if config.user == "scripted":
        return ScriptedUser(scenario.user_simulation)
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


def user_generate_config(config: ConversationConfig, model: Any, scenario: Scenario, epoch: int) -> GenerateConfig:
    """-T user_temperature / user_seed when given, else the role's own settings, else
    temperature 0 and the seed the original derived per scenario and trial (as remote parties get);
    the role's max_tokens and attempt_timeout, else USER_MAX_TOKENS and the run's --attempt-timeout."""
    from ..scoring.payload import derive_seed

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


def make_agent(config: ConversationConfig, scenario: Scenario, domain: Domain, epoch: int = 1,
               seed_id: str | None = None):
    from ..scoring.payload import derive_seed

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


TURN_CHARS = 100  # Inspect keeps an event's longer strings as attachments, one more copy each


def show_turn(who: str, said: Any) -> None:
    """A turn of a party that is not an Inspect model, as an event of the sample's transcript
    (a model's turns appear there as its model events): who spoke and the first
    TURN_CHARS characters of what, enough to follow the conversation in the transcript. The
    whole text is the sample's message, and each call is its tool event: repeated here in full,
    every longer turn was one more attachment in the log."""
    if isinstance(said, ChatMessageAssistant):
        # displaying a call never fails the turn, whatever its arguments hold
        calls = [f"{c.function}({display_arguments(c.arguments)})" for c in said.tool_calls or []]
        said = "\n".join(x for x in [said.text, *calls] if x) or "(said nothing)"
    said = str(said)
    transcript().info(said if len(said) <= TURN_CHARS else said[:TURN_CHARS - 1] + "\u2026", source=who)


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


def party_span(party: Any, label: str) -> Any:
    """The span a party's turn runs in: a model's calls, a remote or external agent's events and
    errors are grouped under it and labelled. A scripted party in this process (built-in agents,
    the scripted and solo users) emits one info event per turn, labelled by its source, and no
    span: two more events per turn around it added nothing to read and were a fifth of the
    transcript's cost on keyless runs."""
    if isinstance(party, (ScriptedAgent, ScriptedUser, SoloUser)):
        return nullcontext()
    return span(label, type="agent")


def sample_time_is_up() -> bool:
    """Whether the sample's `--time-limit` or `--working-limit` has run out (Inspect enforces
    both by cancelling the sample, so the solver sees a cancellation, not LimitExceededError)."""
    from inspect_ai.log._samples import sample_active
    from inspect_ai.util import sample_limits

    active = sample_active()
    if active is not None and getattr(active, "limit_exceeded_error", None) is not None:
        return True  # the working-time monitor stopped the sample
    try:
        limit = sample_limits().time
    except RuntimeError:  # no sample running (the solver called directly)
        return False
    scope = getattr(limit, "_cancel_scope", None)
    if scope is not None:
        return bool(scope.cancel_called)
    # the scope is private to Inspect; the elapsed time says the same (to within a tick)
    return limit.limit is not None and limit.usage >= limit.limit - 0.01


def agent_stop_token(message: ChatMessageAssistant) -> bool:
    if (message.metadata or {}).get("pibench_stop"):  # an external agent's is_stop() said so
        return True
    text = message.text.strip()
    return any(tok in text for tok in STOP_TOKENS)


@solver
def conversation(resolve: Resolver, config: ConversationConfig = ConversationConfig()) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        scenario, domain = resolve(str(state.sample_id))
        forbidden = (
            {c.tool_name for c in scenario.criteria.policy_checks if isinstance(c, ToolNotCalled)}
            if config.hard_gate
            else None
        )
        initial = domain_document(domain, scenario)
        db = StateDB(
            initial, allow_sql=domain.runs_raw_sql, seed=domain.seed_state,
            limits=domain.config.limits,
        )
        store = state.store
        store.set(TERMINATION, Termination.NOT_STARTED.value)
        store.set(AGENT, config.agent)
        steps = 0
        agent = user = None
        try:
            # handed to the agent and to execute_tools, not kept in `state.tools`: Inspect
            # re-describes (deep-copies) every tool there at each state snapshot, which cost more
            # than the tools themselves; a model agent's tools are in each of its model events
            tools = build_tools(domain, scenario, db, forbidden=forbidden)
            # the original's A2A path seeds from the scenario file's stem, not the id (reference 3.6)
            seed_id = Path(state.metadata.get("scenario_file") or scenario.scenario_id).stem
            agent = make_agent(config, scenario, domain, state.epoch, seed_id)
            if getattr(agent, "notes", None):
                # a derived oracle plan that cannot pass every check says which and why
                store.set(ORACLE_NOTES, agent.notes)
                transcript().info({"oracle cannot satisfy": agent.notes})
                logger.warning("oracle on %s cannot satisfy: %s", scenario.scenario_id, "; ".join(agent.notes))
            user = make_user(config, scenario, state.epoch, seed_id)
            store.set(
                USER_MODEL, str(user.model) if isinstance(user, LLMUser) else user.name
            )
            if isinstance(user, LLMUser):
                store.set(USER_CONFIG, user.config.model_dump(exclude_none=True))
            state.messages = [ChatMessageSystem(content=system_prompt(scenario, domain, shared=policy_shared(config.agent)))]
            if domain.original_layout if config.parity is None else config.parity:
                # the original's conversations open with a fixed assistant greeting, which its
                # judge and JSON-decision parsing see as agent text
                state.messages.append(ChatMessageAssistant(content=GREETING))
            termination: Termination | None = None
            while termination is None:
                # ---- user turn (not counted against the agent's limits)
                async with party_span(user, "user"):
                    with suspend_token_limit(), suspend_turn_limit():
                        turn = await user.next(state.messages)
                    if not isinstance(user, LLMUser):  # a model user's turn is its model event
                        show_turn(f"user ({user.name})", turn.text or f"(ends the conversation: {turn.stop})")
                steps += 1
                if turn.text:
                    state.messages.append(ChatMessageUser(content=turn.text))
                if turn.error:
                    # the simulator's model stopped (overflow, refusal, nothing): its failure
                    store.set(USER_ERROR, turn.error)
                    transcript().info({"user error": turn.error})
                    termination = Termination.USER_ERROR
                    break
                if turn.stop:
                    if turn.stop == SOLO_DONE:
                        termination = Termination.AGENT_STOP
                    elif store.get(USER_ERROR):
                        # the simulator failed, not the agent: abnormal, as in the original
                        termination = Termination.USER_ERROR
                    else:
                        termination = Termination.USER_STOP
                    break
                # ---- agent turn: messages and tool executions until it answers in text
                while True:
                    if steps >= config.max_steps:
                        termination = Termination.MAX_STEPS
                        break
                    try:
                        async with party_span(agent, "agent"):
                            message = await agent.next(state.messages, tools)
                            if not isinstance(agent, ModelAgent):  # a model's turn is its model event
                                show_turn(f"agent ({agent.name})", message)
                    except ModelStopped as stop:
                        # the agent's model overflowed, was filtered or said nothing: the run ends
                        # on the state reached, and the provider's text stays out of the
                        # conversation (the user simulator never reads it as the agent's words)
                        store.set(STOP_DETAIL, stop.detail)
                        transcript().info({str(stop.termination): stop.detail})
                        if stop.output is not None:
                            state.output = stop.output
                        termination = stop.termination
                        break
                    except AgentProtocolError as err:
                        # a broken external agent ends its own run, scored as the original did
                        store.set(AGENT_ERROR, str(err))
                        transcript().info({"agent error": str(err)})
                        termination = Termination.AGENT_ERROR
                        break
                    message = json_safe_calls(message)  # NaN/Infinity arguments: a tool error
                    state.messages.append(message)
                    state.output = ModelOutput.from_message(message)
                    steps += 1
                    if agent_stop_token(message):
                        termination = Termination.AGENT_STOP
                        break
                    if message.tool_calls:
                        result = await execute_tools(state.messages, tools)
                        state.messages.extend(result.messages)
                        steps += 1
                        continue
                    if not message.text.strip():
                        # said nothing and did nothing: every agent path ends the same way
                        store.set(STOP_DETAIL, f"the agent ({agent.name}) returned an empty reply (no text, no tool call)")
                        termination = Termination.AGENT_EMPTY
                    break
                if termination is None and steps >= config.max_steps:
                    termination = Termination.MAX_STEPS
            store.set(TERMINATION, termination.value)
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
            # the snapshot first: closing a remote party awaits the network, which a cancelled
            # sample may not get to finish
            store.set(STEPS, steps)
            try:
                # a tool call still running (the sample was cancelled mid-call) is stopped first
                if not await settle_state(db):
                    raise RuntimeError("a tool call did not stop, so the sample's state cannot be read")
                # what changed, as JSON text: a diff against the initial state (merge.compact_changes);
                # Inspect carries the store into its store event and the log's store, so what is
                # stored here is in the log twice: the changed collections in full were ~15 KB
                store.set(STATE_CHANGES, compact_changes(initial, db.export_changes_text()))
            finally:
                db.close()
                for party in (agent, user):
                    await close_party(party)
        return state

    return solve
