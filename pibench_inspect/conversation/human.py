"""A person in the conversation: the agent (`pibench play --as agent`) or the user (`--as user`).

The parties read and write through a `Console` (the terminal of `pibench play`, or a test's
script); they take the place of the model or the simulated user in the same solver, so the
conversation, its step limit, the tools and the checks are those of any run.

As the agent, the person sees what a model sees: the system prompt (policy and task), the tools
with their parameter schemas, the user's turns and the tool results. A line is a message to the
user, a tool call (`/call TOOL {json}`) or a decision (`/decide LABEL {json}`, through the
domain's decision tool). A call to a tool that is not offered, arguments that are not a JSON
object or do not fit the tool's schema are refused with one line before anything runs, and the
person tries again; nothing refused reaches the conversation.

As the user, the person sees what the simulated user sees: the scenario's brief (persona, goal,
what they know, the pressure guidance) and the agent's words, never its tool calls or results.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import ToolCall, ToolDef

from ..domain.loader import Domain
from ..environment.effects import argument_errors
from ..scenario.model import LABELS, Scenario, UserSimulation
from .json_safe import unrecordable
from .keys import INTERRUPTED
from .reading import last_agent_text
from .users import STOP_TOKENS, UserTurn, split_stop, user_system_prompt

HUMAN = "human"
STOP = STOP_TOKENS[0]

AGENT_COMMANDS = {
    "/call": "/call TOOL {json}       call a tool with JSON arguments (or just TOOL {json}; Tab completes tool names)",
    "/decide": "/decide LABEL {json}   record your decision with the decision tool (LABEL: "
    + ", ".join(LABELS) + "; its other arguments as JSON)",
    "/tools": "/tools                 show the tools and their parameter schemas again",
    "/prompt": "/prompt                show the system prompt (policy and task) again",
    "/stop": "/stop                  end the conversation (the agent's stop token)",
    "/help": "/help                  this list",
}
USER_COMMANDS = {
    "/stop": "/stop     end the conversation (you are done, or give up)",
    "/brief": "/brief    show your brief again",
    "/help": "/help     this list",
}


MAX_LINE = 100_000  # characters of one line a person may play (the terminal keeps no more)


class BadInput(ValueError):
    """A line the person typed that cannot be played; said in one line, then they try again."""


def too_long(line: str) -> None:
    if len(line) > MAX_LINE:
        raise BadInput(f"the line is longer than {MAX_LINE:,} characters; say it in fewer")


class Console(Protocol):
    """Where a person reads and types. `ask` raises EOFError when input ends."""

    def show(self, text: str) -> None: ...

    async def ask(self, prompt: str, completions: Callable[[str], list[str]] | None = None) -> str: ...


async def read(console: Console, prompt: str, complete: Callable[[str], list[str]]) -> str:
    """A line from the person. Ctrl-C (the run is cancelled) or the end of input while they are
    asked marks the sample's store as interrupted, so the log says why the session stopped."""
    try:
        return await console.ask(prompt, complete)
    except BaseException as err:
        why = "eof" if isinstance(err, EOFError) else getattr(console, "ended_by", None) or "ctrl-c"
        try:
            from inspect_ai.util import store

            store().set(INTERRUPTED, why)
        except Exception:  # noqa: BLE001  (no sample running: nothing to mark)
            pass
        raise


def pretty(text: str) -> str:
    """A tool result as the agent got it, indented when it is JSON."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, TypeError):
        return text


def tool_lines(tools: list[ToolDef]) -> str:
    """Each offered tool as a model receives it: name, description and parameter schema."""
    out = []
    for t in tools:
        schema = t.parameters.model_dump(exclude_none=True)
        required = set(schema.get("required") or [])
        params = ", ".join(f"{n}{'' if n in required else '?'}" for n in schema.get("properties") or {})
        out.append(f"{t.name}({params})\n    {t.description}\n    schema: {json.dumps(schema, ensure_ascii=False)}")
    return "\n".join(out)


def split_command(line: str) -> tuple[str, str]:
    head, _, rest = line.strip().partition(" ")
    return head.lower(), rest.strip()


def name_and_json(rest: str) -> tuple[str, str]:
    """`lookup_order {"id": 1}` (or `lookup_order{"id": 1}`) -> the name and the JSON text."""
    cut = min([i for i in (rest.find(" "), rest.find("{")) if i >= 0], default=len(rest))
    return rest[:cut], rest[cut:].strip()


def parse_arguments(text: str, tool: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise BadInput(f"the arguments of {tool} are not JSON ({err.msg} at column {err.colno}); "
                       f'write them as an object, e.g. /call {tool} {{"name": "value"}}') from None
    except (RecursionError, ValueError) as err:  # nested past the parser's depth, a huge number
        raise BadInput(f"the arguments of {tool} cannot be read ({type(err).__name__}); "
                       f"write them as a plain JSON object") from None
    if not isinstance(value, dict):
        raise BadInput(f"the arguments of {tool} must be a JSON object {{...}}, not {type(value).__name__}")
    problem = unrecordable(value, f"the arguments of {tool}")  # what no log could hold: nesting, ...
    if problem:
        raise BadInput(problem)
    return value


def closest(name: str, names: list[str]) -> str:
    near = difflib.get_close_matches(name, names, 3, 0.5)
    return f" (did you mean {' or '.join(near)}?)" if near else ""


@dataclass
class AgentInput:
    """Reads the person's lines into the agent's messages (one tool call or one text each)."""

    tools: list[ToolDef]
    domain: Domain
    _calls: int = 0

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def complete(self, buffer: str) -> list[str]:
        """Completions of the line typed so far: commands, then tool names or labels."""
        head, sep, rest = buffer.partition(" ")
        if not sep:
            return sorted([c + " " for c in AGENT_COMMANDS if c.startswith(head.lower())]
                          + [n + " " for n in self.names if n.startswith(head)])
        if head.lower() == "/call" and " " not in rest:
            return sorted(f"{head} {n} " for n in self.names if n.startswith(rest))
        if head.lower() == "/decide" and " " not in rest:
            return [f"{head} {x} " for x in LABELS if x.startswith(rest.upper())]
        return []

    def call(self, name: str, arguments: dict[str, Any]) -> ChatMessageAssistant:
        if name not in self.names:
            raise BadInput(f"no tool {name!r} is offered{closest(name, self.names)}; tools: {', '.join(self.names)}")
        spec = self.domain.tool_index[name]
        problems = argument_errors(spec, arguments)
        if problems:
            raise BadInput(f"the arguments do not fit {name}'s schema: {'; '.join(problems)} (/tools shows it)")
        self._calls += 1
        call = ToolCall(id=f"human_call_{self._calls}", function=name, arguments=arguments)
        return ChatMessageAssistant(content="", tool_calls=[call], model=HUMAN)

    def parse(self, line: str) -> ChatMessageAssistant | str:
        """The message a line plays, or a command's name (`/help`, `/tools`, `/prompt`) to show."""
        text = line.strip()
        too_long(text)
        if not text:
            raise BadInput("type a message for the user, /call TOOL {json}, /decide LABEL {json}, or /help")
        if not text.startswith("/"):
            name, args = name_and_json(text)
            if name in self.names and args.startswith("{"):  # TOOL {json}: /call without the command
                return self.call(name, parse_arguments(args, name))
            return ChatMessageAssistant(content=text, model=HUMAN)
        command, rest = split_command(text)
        if command in ("/help", "/tools", "/prompt"):
            return command
        if command == "/stop":
            return ChatMessageAssistant(content=STOP, model=HUMAN)
        if command == "/call":
            name, args = name_and_json(rest)
            if not name:
                raise BadInput("/call needs a tool name: /call TOOL {json} (Tab completes tool names)")
            return self.call(name, parse_arguments(args, name))
        if command == "/decide":
            label, args = name_and_json(rest)
            if label.upper() not in LABELS:
                raise BadInput(f"/decide {label or 'LABEL'}: the decision is one of {', '.join(LABELS)}")
            tool = self.domain.config.decision_tool
            if tool not in self.names:
                # no decision tool offered: the decision travels as one fenced JSON block
                block = json.dumps({"decision": label.upper()})
                return ChatMessageAssistant(content=f"```json\n{block}\n```", model=HUMAN)
            return self.call(tool, {**parse_arguments(args, tool), "decision": label.upper()})
        raise BadInput(f"unknown command {command}{closest(command, list(AGENT_COMMANDS))}; /help lists them")


def render_for_agent(m: ChatMessage) -> str | None:
    if isinstance(m, ChatMessageUser):
        return f"user: {m.text}"
    if isinstance(m, ChatMessageTool):
        if m.error is not None:
            return f"[{m.function} error] {m.error.message}"
        return f"[{m.function} result]\n{pretty(m.text)}"
    if isinstance(m, ChatMessageAssistant):  # not the person's own (the original's greeting)
        return f"agent (opening): {m.text}"
    return None


@dataclass
class HumanAgent:
    """The agent under test, played by a person."""

    console: Console
    domain: Domain
    name: str = HUMAN
    _seen: int = 0
    _input: AgentInput | None = None

    def _intro(self, messages: list[ChatMessage], tools: list[ToolDef]) -> None:
        system = next((m for m in messages if isinstance(m, ChatMessageSystem)), None)
        self.console.show("=" * 72 + "\nSystem prompt (what the agent is told)\n" + "=" * 72)
        self.console.show(system.text if system else "(none)")
        self.console.show("=" * 72 + "\nTools\n" + "=" * 72 + "\n" + tool_lines(tools))
        self.console.show("=" * 72 + "\nYou are the agent. " + self._help())

    def _help(self) -> str:
        return ("Type a message for the user, or a command:\n  " + "\n  ".join(AGENT_COMMANDS.values())
                + "\nScores and checks are shown when the conversation ends. Ctrl-C or Ctrl-D stops "
                "the session (the log is marked interrupted).\n" + "=" * 72)

    async def next(self, messages: list[ChatMessage], tools: list[ToolDef]) -> ChatMessageAssistant:
        if self._input is None:
            self._input = AgentInput(tools, self.domain)
            self._intro(messages, tools)
        for m in messages[self._seen:]:
            if not isinstance(m, ChatMessageSystem) and not (isinstance(m, ChatMessageAssistant) and m.model == HUMAN):
                shown = render_for_agent(m)
                if shown:
                    self.console.show(shown)
        while True:
            line = await read(self.console, "agent> ", self._input.complete)
            try:
                played = self._input.parse(line)
            except BadInput as err:
                self.console.show(f"! {err}")
                continue
            except Exception as err:  # noqa: BLE001  (any line that cannot be read is tried again)
                self.console.show(f"! that line cannot be played ({type(err).__name__}); try again, or /help")
                continue
            if isinstance(played, str):
                if played == "/tools":
                    self.console.show(tool_lines(tools))
                elif played == "/prompt":
                    self.console.show(next((m.text for m in messages if isinstance(m, ChatMessageSystem)), "(none)"))
                else:
                    self.console.show(self._help())
                continue
            # the solver appends this message next: what comes after it is new to the person
            self._seen = len(messages) + 1
            return played


def user_brief(sim: UserSimulation, max_turns: int) -> str:
    """Exactly what the LLM user is told (its system prompt), then how a person acts on it."""
    return (user_system_prompt(sim, max_turns)
            + f'\n\n(Press Enter on your first turn to open with "{sim.initial_user_message}"; /stop ends '
            "the conversation, as ###STOP### would. You never see the agent's tools, only what it says.)")


@dataclass
class HumanUser:
    """The user, played by a person against the agent under test."""

    console: Console
    sim: UserSimulation
    max_turns: int = 8
    name: str = HUMAN
    _turn: int = 0

    def _help(self) -> str:
        return ("Type what you say to the agent, or a command:\n  " + "\n  ".join(USER_COMMANDS.values())
                + "\nScores and checks are shown when the conversation ends. Ctrl-C or Ctrl-D stops "
                "the session (the log is marked interrupted).")

    def complete(self, buffer: str) -> list[str]:
        return sorted(c for c in USER_COMMANDS if c.startswith(buffer)) if buffer.startswith("/") else []

    async def next(self, messages: list[ChatMessage]) -> UserTurn:
        limit = self.sim.max_turns or self.max_turns
        if self._turn == 0:
            bar = "=" * 72
            self.console.show(f"{bar}\nYou are the user. Your brief\n{bar}\n{user_brief(self.sim, limit)}\n{bar}\n{self._help()}\n{bar}")
        else:
            said = last_agent_text(messages)
            self.console.show(f"agent: {said}" if said else "agent: (said nothing)")
        if self._turn >= limit:
            self.console.show(f"(you have sent your {limit} messages: the conversation ends)")
            return UserTurn("", STOP)
        while True:
            line = (await read(self.console, "you> ", self.complete)).strip()
            try:
                too_long(line)
            except BadInput as err:
                self.console.show(f"! {err}")
                continue
            command, _ = split_command(line)
            if line.startswith("/"):
                if command == "/stop":
                    return UserTurn("", STOP)
                if command == "/brief":
                    self.console.show(user_brief(self.sim, limit))
                elif command == "/help":
                    self.console.show(self._help())
                else:
                    self.console.show(f"! unknown command {command}{closest(command, list(USER_COMMANDS))}; /help lists them")
                continue
            if not line:
                if self._turn == 0:
                    line = self.sim.initial_user_message
                    self.console.show(f"you: {line}")
                else:
                    self.console.show("! type a message for the agent, or /stop to end the conversation")
                    continue
            self._turn += 1
            return split_stop(line)


@dataclass
class HumanSeat:
    """The seat `pibench play` installs: a person at `console` plays the agent or the user."""

    console: Console

    def agent(self, name: str, scenario: Scenario, domain: Domain, config: Any) -> HumanAgent:
        return HumanAgent(self.console, domain)

    def user(self, name: str, scenario: Scenario, config: Any) -> HumanUser:
        return HumanUser(self.console, scenario.user_simulation, config.max_user_turns)
