"""A simulated user served over A2A (reference 5.8), for `-T user=a2a -T user_url=URL`.

    python -m pibench_inspect.a2a.user_server --kind scripted --port 8768
    python -m pibench_inspect.a2a.user_server --kind llm --model openai/gpt-4.1-mini

Stateless: every request carries the state the previous reply returned (the benchmark side keeps
it), so one server can play any number of conversations at once and a restart loses nothing.
The state holds the scenario, the user's turn count and the visible conversation, which is all
the scripted user and the LLM user need to say their next line; a scripted user with a
conditional script (tactics) is also sent `acts`, what the agent did (its decision, the tools it
called, whether the user got what it asked for), read by the benchmark side from the calls the
user never sees:

  init      {"init": true, "scenario", "message_history"?, "seed"?} -> {"state"}
  generate  {"message": {"role": "assistant", "content"}, "state", "seed"?, "acts"?}
            -> {"message": {"role": "user", "content"}, "state"}
  stop      {"stop": true, ...} -> {"stopped": true}

Replies are a completed task whose status message holds one data part. A request we cannot
serve gets a failed task whose text says what is wrong with it. Whole numbers (`seed`,
`state.turn`) are read by meaning: an a2a-sdk 1.x client sends every number as a double, and
hands back the state our reply gave it with `turn: 0.0` (numbers.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from a2a.types import AgentSkill
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
)
from pydantic import ValidationError
from starlette.applications import Starlette

from ..conversation.pressure import Acts
from ..conversation.users import USER_MAX_TOKENS, LLMUser, ScriptedUser
from ..cli.refusal import OneLineParser
from ..scenario.model import UserSimulation
from .numbers import NotWholeNumber, optional_whole_number, whole_number
from .serving import JsonExecutor, RequestProblem, agent_card
from .wire import message_content
from .serving import build_app as build_app_with

KINDS = ("scripted", "llm")


class UserModelStopped(Exception):
    """The LLM user's model stopped without a line to say (conversation/termination.py)."""


def _scenario(value: Any, where: str) -> UserSimulation:
    if not isinstance(value, dict):
        raise RequestProblem(f"{where} must be a user_simulation object, got {type(value).__name__}")
    if value.get("max_turns") is not None:  # its one number: 5.0 from an a2a-sdk 1.x client is 5
        try:
            value = {**value, "max_turns": whole_number(value["max_turns"], f"{where}.max_turns")}
        except NotWholeNumber as err:
            raise RequestProblem(str(err)) from None
    try:
        return UserSimulation.model_validate(value)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors(include_url=False)
        )
        raise RequestProblem(f"{where} is not a valid user_simulation: {problems}") from None


def _history(value: Any, where: str) -> list[dict[str, str]]:
    """Visible pi-bench messages; tool traffic and system messages are not the user's to see."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise RequestProblem(f"{where} must be a list of messages, got {type(value).__name__}")
    out = []
    for i, m in enumerate(value):
        if not isinstance(m, dict):
            raise RequestProblem(f"{where}[{i}] must be an object")
        if m.get("role") in ("user", "assistant") and not m.get("tool_calls"):
            text = message_content(m, f"{where}[{i}]", RequestProblem)
            if text.strip():
                out.append({"role": m["role"], "content": text})
    return out


def _acts(value: Any, sim: UserSimulation) -> Acts | None:
    """What the agent did (a conditional script reads it; the history holds no tool calls)."""
    if value is None:
        if sim.tactics is not None:
            raise RequestProblem("generate: a user with tactics needs 'acts' (what the agent did: "
                                 "decision, called, granted, escalated, asked)")
        return None
    try:
        return Acts.from_wire(value, "generate: 'acts'")
    except ValueError as err:
        raise RequestProblem(str(err)) from None


def _chat(history: list[dict[str, str]]) -> list[ChatMessage]:
    return [
        ChatMessageUser(content=m["content"]) if m["role"] == "user" else ChatMessageAssistant(content=m["content"])
        for m in history
    ]


class UserSimulator:
    """One user simulator; every call rebuilds the user from the state it is given."""

    def __init__(self, kind: str, model: Model | None, max_turns: int, seed: int | None):
        self.kind, self.model, self.max_turns, self.seed = kind, model, max_turns, seed

    async def handle(self, data: dict[str, Any]) -> dict[str, Any]:
        if data.get("init") is True:
            sim = _scenario(data.get("scenario"), "init: 'scenario'")
            history = _history(data.get("message_history"), "init: 'message_history'")
            return {"state": {"kind": self.kind, "scenario": sim.model_dump(mode="json", exclude_none=True),
                              "turn": 0, "history": history}}
        if data.get("stop") is True:
            return {"stopped": True}
        if "message" in data:
            return await self.generate(data)
        raise RequestProblem(
            'expected an init {"init": true, "scenario"}, a generate {"message", "state"} or a stop '
            f'{{"stop": true}} request; got keys {sorted(data)}'
        )

    async def generate(self, data: dict[str, Any]) -> dict[str, Any]:
        said = message_content(data["message"], "generate: 'message'", RequestProblem)
        state = data.get("state")
        if not isinstance(state, dict):
            raise RequestProblem("generate: missing 'state' object (send the state the init reply returned)")
        sim = _scenario(state.get("scenario"), "generate: 'state.scenario'")
        try:
            turn = whole_number(state.get("turn"), "generate: 'state.turn'")
            seed = optional_whole_number(data.get("seed", self.seed), "generate: 'seed'")
        except NotWholeNumber as err:
            raise RequestProblem(str(err)) from None
        if turn < 0:
            raise RequestProblem(f"generate: 'state.turn' must be a non-negative integer, got {turn}")
        history = _history(state.get("history"), "generate: 'state.history'")
        if said.strip():
            history.append({"role": "assistant", "content": said})
        user = self._user(sim, turn, seed)
        if isinstance(user, ScriptedUser):
            reply = await user.next(_chat(history), acts=_acts(data.get("acts"), sim))
        else:
            reply = await user.next(_chat(history))
        if reply.error:
            # the simulator's model stopped (overflow, refusal, nothing): a failed task, which
            # the benchmark side records as user_error with this reason
            raise UserModelStopped(reply.error)
        # the wire carries the line as said, stop token included; the client splits it again
        content = " ".join(x for x in (reply.text, reply.stop) if x)
        if reply.text:
            history.append({"role": "user", "content": reply.text})
        return {"message": {"role": "user", "content": content},
                "state": {**state, "turn": turn + 1, "history": history}}

    def _user(self, sim: UserSimulation, turn: int, seed: int | None) -> ScriptedUser | LLMUser:
        # both users count their own turns; starting them at the state's turn makes them stateless
        if self.kind == "scripted":
            return ScriptedUser(sim, _turn=turn)
        assert self.model is not None
        return LLMUser(sim, self.model, self.max_turns,
                       GenerateConfig(temperature=0.0, seed=seed, max_tokens=USER_MAX_TOKENS), _turn=turn)


def build_app(
    kind: str = "scripted",
    model: str | Model | None = None,
    max_turns: int = 8,
    seed: int | None = None,
    url: str = "http://127.0.0.1:8768/",
) -> Starlette:
    """The server app. `model` is an Inspect model name (or a Model, which tests inject); `url`
    is what the agent card advertises."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: expected one of {', '.join(KINDS)}")
    if kind == "llm" and model is None:
        raise ValueError("the llm user simulator needs a model (e.g. openai/gpt-4.1-mini)")
    resolved = get_model(model) if isinstance(model, str) else model
    model_name = str(resolved) if resolved is not None and kind == "llm" else None
    simulator = UserSimulator(kind, resolved if kind == "llm" else None, max_turns, seed)
    skill = AgentSkill(
        id="pibench-user-simulation", name="Simulated user",
        description="Stateless init/generate/stop over one data part; the caller carries the state.",
        tags=["pi-bench", "user-simulator"],
    )
    card = agent_card("pibench user simulator",
                      f"A pi-bench simulated user ({kind}) that plays a scenario's customer or employee.", url, skill)
    executor = JsonExecutor(lambda data, _ctx: simulator.handle(data), failure="the user simulator failed")
    return build_app_with(card, executor, {"status": "ok", "kind": kind, "model": model_name})


def main(argv: list[str] | None = None) -> None:
    parser = OneLineParser(
        prog="pibench serve-user", description="Serve a pi-bench simulated user over A2A."
    )
    parser.add_argument("--kind", choices=KINDS, default="scripted")
    parser.add_argument("--model", help="Inspect model for --kind llm, e.g. openai/gpt-4.1-mini or litellm/<model>")
    parser.add_argument("--max-turns", type=int, default=8, help="user messages before ###STOP### (llm kind)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8768)
    parser.add_argument("--seed", type=int, help="seed when a request carries none (llm kind)")
    args = parser.parse_args(argv)
    if args.kind == "llm" and not args.model:
        parser.error("--kind llm needs --model (e.g. --model openai/gpt-4.1-mini)")
    if args.max_turns < 1:
        parser.error("--max-turns must be at least 1")

    import uvicorn

    app = build_app(args.kind, args.model, args.max_turns, args.seed, url=f"http://{args.host}:{args.port}/")
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
