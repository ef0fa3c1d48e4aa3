"""One scenario as an environment: episodes of the conversation solver with the policy in the
agent's seat, scored by the pi-bench scorer (see the package docstring)."""

from __future__ import annotations

import asyncio
import difflib
import queue
from dataclasses import dataclass, field
from typing import Any

from ..scenario.catalog import Entry, ScenarioSet
from .runner import WIND_DOWN, Runner
from .splits import scenario_set, skipped

AGENT = "policy"  # the agent's name in the store and the score's record
STEP_TIMEOUT = 600.0  # seconds step() waits for the simulated user and the engine

Action = Any  # str | {"tool": name, "arguments": {...}} | ChatMessageAssistant


def message_dict(m: Any) -> dict[str, Any]:
    """A conversation message as the agent sees it, in the chat format most trainers take."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool

    out: dict[str, Any] = {"role": m.role, "content": m.text}
    if isinstance(m, ChatMessageTool):
        out.update(tool_call_id=m.tool_call_id, name=m.function,
                   error=m.error.message if m.error is not None else None)
    elif isinstance(m, ChatMessageAssistant) and m.tool_calls:
        out["tool_calls"] = [{"id": c.id, "name": c.function, "arguments": c.arguments} for c in m.tool_calls]
    return out


def tool_dict(tool: Any) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description,
            "parameters": tool.parameters.model_dump(exclude_none=True)}


def to_message(action: Action, call_number: int, tools: list[Any] | None = None) -> Any:
    """The assistant message an action plays. A caller's mistake (an action of no known shape)
    raises before anything runs; arguments that are not a JSON object (malformed JSON text, a
    list) are the policy's own mistake, a tool error for that call as on every agent path
    (conversation/tool_calls.py)."""
    from inspect_ai.model import ChatMessageAssistant

    from ..conversation.tool_calls import read_call

    if isinstance(action, ChatMessageAssistant):
        return action
    if isinstance(action, str):
        return ChatMessageAssistant(content=action, model=AGENT)
    if isinstance(action, dict) and isinstance(action.get("tool"), str):
        call = read_call(str(action.get("id") or f"policy_call_{call_number}"), action["tool"],
                         action.get("arguments", {}), tools)
        return ChatMessageAssistant(content=str(action.get("content") or ""), tool_calls=[call], model=AGENT)
    raise TypeError("an action is a text (str), a tool call {'tool': NAME, 'arguments': {...}}, or a "
                    f"ChatMessageAssistant; got {type(action).__name__}")


# ---------------------------------------------------------------------------------------------
# the policy's seat in the conversation


@dataclass
class _Turn:
    """The agent's turn handed to the caller: what is new to it, and where its action goes."""

    new: list[Any]
    tools: list[Any]
    answer: asyncio.Future


@dataclass
class _Ended:
    new: list[Any]
    state: Any
    score: Any
    record: dict[str, Any]  # the score's full record (scoring/record.py)


@dataclass
class PolicyAgent:
    """The agent whose moves come from `step()`: each turn is handed to the caller's thread."""

    out: "queue.Queue[Any]"
    name: str = AGENT
    messages: list[Any] = field(default_factory=list)  # the conversation, as the solver holds it
    _seen: int = 0

    async def next(self, messages: list[Any], tools: list[Any]) -> Any:
        self.messages = messages
        answer = asyncio.get_running_loop().create_future()
        self.out.put(_Turn(list(messages[self._seen:]), tools, answer))
        message = await answer
        self._seen = len(messages) + 1  # the solver appends the action next
        return message

    def unseen(self, messages: list[Any]) -> list[Any]:
        return list(messages[self._seen:])


@dataclass
class _PolicySeat:
    out: "queue.Queue[Any]"
    agents: list[PolicyAgent] = field(default_factory=list)

    def agent(self, name: str, scenario: Any, domain: Any, config: Any) -> PolicyAgent:
        party = PolicyAgent(self.out)
        self.agents.append(party)
        return party

    def user(self, name: str, scenario: Any, config: Any) -> Any:  # the env seats no person
        raise ValueError(f"user={name!r} cannot be played in the training environment")


# ---------------------------------------------------------------------------------------------
# the environment


class EpisodeOver(RuntimeError):
    """step() after the episode ended (call reset())."""


class PibenchEnv:
    """One scenario as an environment. Build it with `make()`."""

    def __init__(self, entry: Entry, sset: ScenarioSet, user: str = "scripted", *, max_steps: int = 40,
                 max_user_turns: int = 8, user_model: Any = None, hard_gate: bool = False) -> None:
        from ..task_args import TaskArgs

        if user not in ("scripted", "llm", "solo"):
            raise ValueError(f"user={user!r}: expected 'scripted', 'llm' (with user_model=...) or 'solo'")
        if user == "llm" and user_model is None:
            raise ValueError("user='llm' needs user_model= (a model name such as 'openai/gpt-4o-mini', or a Model)")
        self.entry = entry
        self.scenario_id = entry.scenario.scenario_id
        self.domain = entry.domain.name
        self._set = sset
        self._config = dict(agent=AGENT, user=user, max_steps=max_steps, max_user_turns=max_user_turns,
                            hard_gate=hard_gate)
        TaskArgs(**self._config)  # a bad value fails here, not in the first episode
        self._user_model = user_model
        self._runner: Runner | None = None  # the episodes' loop and thread (runner.py)
        self._out: "queue.Queue[Any]" = queue.Queue()
        self._turn: _Turn | None = None
        self._seat: _PolicySeat | None = None
        self._state: Any = None
        self._calls = 0
        self.tools: list[dict[str, Any]] = []
        self.done = True

    def _stop_episode(self) -> None:
        """Cancel a running episode and wait (bounded) until it has wound down: the solver's
        `finally` closes its state before the loop is reused or stopped."""
        if self._runner is not None:
            self._runner.cancel(wait=WIND_DOWN)
        self._turn = None
        self._out = queue.Queue()

    def _spawn(self, seed: int | None) -> None:
        if self._runner is None or not self._runner.alive:
            self._runner = Runner(f"pibench-env-{self.scenario_id}")
        self._seat = seat = _PolicySeat(self._out)
        # the episode is given what it needs, never the environment: a dropped environment is
        # collected, and its __del__ ends the episode (runner.py)
        run = _episode(self.entry, self._set, dict(self._config), self._user_model, seat, seed, self._out)
        self._runner.spawn(lambda: run)

    def _wait(self) -> tuple[dict[str, Any], float, bool, dict[str, Any]]:
        try:
            item = self._out.get(timeout=STEP_TIMEOUT)
        except queue.Empty:
            raise TimeoutError(f"no answer from the episode in {STEP_TIMEOUT:.0f} s") from None
        if isinstance(item, BaseException):
            self.done = True
            raise RuntimeError(f"the episode failed: {type(item).__name__}: {item}") from item
        if isinstance(item, _Turn):
            self._turn = item
            obs = {"messages": [message_dict(m) for m in item.new]}
            return obs, 0.0, False, {"actions": self._calls}
        self.done = True
        self._state = item.state
        return self._finish(item)

    def _finish(self, ended: _Ended) -> tuple[dict[str, Any], float, bool, dict[str, Any]]:
        from ..scoring.explain import check_list, scenario_notes
        from ..scoring.record import partial_credit

        score = ended.score
        value = score.value if isinstance(score.value, dict) else {}
        md = ended.record
        reward = 1.0 if value.get("all_passed") else 0.0
        info = {
            "score": value,
            "all_passed": bool(value.get("all_passed")),
            "partial_credit": partial_credit(value, md),  # exact (the value's is rounded for display)
            "decision": score.answer,
            "expected": self.entry.scenario.expected,
            "termination": md.get("termination"),
            "steps": md.get("steps"),
            "checks": check_list(md.get("checks"), scenario_notes(self.entry.scenario)),
            "explanation": score.explanation,
        }
        return {"messages": [message_dict(m) for m in ended.new]}, reward, True, info

    # ---- the gym-style interface
    def reset(self, seed: int | None = None) -> dict[str, Any]:
        """Start a new episode; the observation holds the system prompt, the user's opening and
        the tools. `seed` seeds the LLM user (per scenario, as a run's does); the scripted user
        is deterministic."""
        self._stop_episode()
        self._calls = 0
        self.done = False
        self._state = None
        self._spawn(seed)
        obs, _, done, info = self._wait()
        if done:  # the conversation ended before the agent's first turn
            return {**obs, "tools": [], "done": True, "info": info}
        assert self._turn is not None
        self.tools = [tool_dict(t) for t in self._turn.tools]
        return {**obs, "tools": self.tools}

    def step(self, action: Action) -> tuple[dict[str, Any], float, bool, dict[str, Any]]:
        """Play one agent message: a text for the user, or one tool call. Returns the next
        observation (what is new to the agent: tool results, the user's reply), the reward (at
        the end: 1.0 if every deterministic check passed, else 0.0), whether the episode is over,
        and info (at the end: the score, each check, the decision, how the conversation ended).
        A call whose arguments are not a JSON object gets a tool error, as a model's would."""
        if self.done or self._turn is None or self._runner is None:
            raise EpisodeOver("the episode is over (or never started): call reset()")
        message = to_message(action, self._calls + 1, self._turn.tools)
        self._calls += 1
        turn, self._turn = self._turn, None
        self._runner.call(_settle, turn.answer, message)
        return self._wait()

    @property
    def messages(self) -> list[Any]:
        """The whole conversation so far as Inspect messages (what the agent has seen and done);
        read between steps, while the episode waits for the next action."""
        if self._state is not None:
            return list(self._state.messages)
        agents = self._seat.agents if self._seat else []
        return list(agents[-1].messages) if agents else []

    def close(self) -> None:
        """End the episode (bounded wait for it to wind down) and the environment's thread."""
        self._turn = None
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.stop(wait=WIND_DOWN)

    def __enter__(self) -> "PibenchEnv":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # dropped (or collected at exit) without close(): the thread ends the episode; nothing
        # here waits, since this may run on any thread, the loop's own included (runner.py)
        runner = getattr(self, "_runner", None)
        if runner is not None:
            try:
                runner.stop(wait=None)
            except Exception:  # noqa: BLE001
                pass


async def _episode(entry: Entry, sset: ScenarioSet, config: dict[str, Any], user_model: Any, seat: "_PolicySeat",
                   seed: int | None, out: "queue.Queue[Any]") -> None:
    """One episode: the conversation solver with `seat` in the agent's place, then the scorer;
    what ends it is put on `out` (the end, or the error the caller's step() raises)."""
    from inspect_ai.model import ModelName
    from inspect_ai.solver import TaskState

    from ..conversation.seats import seated
    from ..conversation.solver import conversation
    from ..scoring.scorer import sample_evaluator
    from ..task import sample_for
    from ..task_args import TaskArgs

    try:
        if user_model is not None:
            _use_user_model(user_model)
        sample = sample_for(entry)
        state = TaskState(ModelName("none/none"), sample.id, 1, sample.input, [], metadata=sample.metadata)
        with seated(seat):
            state = await conversation(sset.resolve, TaskArgs(**config, user_seed=seed))(state, None)  # type: ignore[arg-type]
        score, record = await sample_evaluator(sset, "off", None)(state)
        party = seat.agents[-1] if seat.agents else None
        out.put(_Ended(party.unseen(state.messages) if party else list(state.messages), state, score, record))
    except asyncio.CancelledError:  # reset(), close() or a dropped environment: nobody waits for it
        raise
    except BaseException as err:  # noqa: BLE001  (handed to the caller, who raises it)
        out.put(err)
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise


def _settle(future: asyncio.Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _use_user_model(model: Any) -> None:
    """Bind the LLM user's model in this episode's context, as `inspect eval --model-role user=`
    does for a run (the solver asks for the `user` role)."""
    from inspect_ai.model import get_model

    from ..runtime.inspect_internals import bind_models

    m = get_model(model)
    bind_models(m, {"user": m})


def make(scenario_id: str, source: str | None = None, user: str = "scripted", **options: Any) -> PibenchEnv:
    """The environment of one scenario.

    Args:
      scenario_id: a scenario id (`pibench list`, `list_scenarios()`).
      source: a folder holding scenarios/ and domains/ (default: the shipped set).
      user: "scripted" (the scenario's scripted turns; no model), "llm" (with user_model=...)
        or "solo" (the request arrives once; the agent's first text ends the episode).
      **options: max_steps (40), max_user_turns (8), user_model, hard_gate (False).

    A scenario `inspect eval` skips as invalid (`pibench validate`'s static checks) is refused
    with a ValueError giving the reasons: the environment serves exactly what a run runs.
    """
    sset = scenario_set(source)
    entry = sset.entries.get(scenario_id)
    if entry is None:
        near = difflib.get_close_matches(scenario_id, list(sset.entries), 3, 0.5)
        raise KeyError(f"no scenario {scenario_id!r}" + (f" (closest: {', '.join(near)})" if near else "")
                       + "; list_scenarios() gives every id")
    why = skipped(source).get(scenario_id)
    if why:  # served exactly as inspect eval runs it: not at all
        raise ValueError(f"scenario {scenario_id!r} is invalid and `inspect eval` skips it (`pibench validate` "
                         f"says more): {'; '.join(why)}")
    return PibenchEnv(entry, sset, user, **options)
