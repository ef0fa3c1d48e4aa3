"""The conversation: the simulated user and the agent take turns over the sample's tools.

`Conversation.step()` takes one step (a user message, an agent message, or the execution of
the agent's tool calls) and returns the `Termination` that ends the conversation, or None to go
on. Steps are counted as in the original: each of the three is one step; a party whose turn
fails (its model stopped, a protocol break) ends the conversation without a step. `max_steps`
is checked before every user or agent turn; an agent message's tool calls always run.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Awaitable, Callable

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput, execute_tools
from inspect_ai.solver import TaskState
from inspect_ai.util import span, suspend_token_limit, suspend_turn_limit

from ..local.adapter import AgentProtocolError
from .agents import ModelAgent, ScriptedAgent
from .json_safe import json_safe_calls
from .keys import AGENT_ERROR, STOP_DETAIL, TACTICS, USER_ERROR
from .termination import ModelStopped, Termination
from .users import SOLO_DONE, STOP_TOKENS, LLMUser, ScriptedUser, SoloUser

Step = Callable[[], Awaitable["Termination | None"]]


TURN_CHARS = 100  # Inspect keeps an event's longer strings as attachments, one more copy each
# what a cut turn ends with: where the whole text is (the sample's messages, its Messages tab)
CUT = "\u2026 [whole turn: Messages tab]"


def show_turn(who: str, said: Any) -> None:
    """A turn of a party that is not an Inspect model, as an event of the sample's transcript
    (a model's turns appear there as its model events): who spoke and what, in at most
    TURN_CHARS characters, enough to follow the conversation in the transcript; a longer turn is
    cut and says where the whole text is (CUT): it is the sample's message. An agent's tool
    calls are not repeated: each is the tool event that follows (its function, arguments and
    result), so a turn of calls alone adds no event, and a turn with text shows the text."""
    if isinstance(said, ChatMessageAssistant):
        if not said.text and said.tool_calls:
            return  # the tool events are the turn
        said = said.text or "(said nothing)"
    said = str(said)
    transcript().info(said if len(said) <= TURN_CHARS else said[:TURN_CHARS - len(CUT)].rstrip() + CUT, source=who)


def party_span(party: Any, label: str) -> Any:
    """The span a party's turn runs in: a model's calls, a remote or external agent's events and
    errors are grouped under it and labelled. A scripted party in this process (built-in agents,
    the scripted and solo users) emits one info event per turn, labelled by its source, and no
    span: two more events per turn around it added nothing to read and were a fifth of the
    transcript's cost on keyless runs."""
    if isinstance(party, (ScriptedAgent, ScriptedUser, SoloUser)):
        return nullcontext()
    return span(label, type="agent")


def agent_stop_token(message: ChatMessageAssistant) -> bool:
    if (message.metadata or {}).get("pibench_stop"):  # an external agent's is_stop() said so
        return True
    text = message.text.strip()
    return any(tok in text for tok in STOP_TOKENS)


class Conversation:
    """One sample's conversation over `state.messages` (opened by the caller); why a party's
    turn ended the conversation is written to the sample's store (user_error, agent_error,
    stop_detail)."""

    def __init__(self, state: TaskState, agent: Any, user: Any, tools: list[Any], max_steps: int) -> None:
        self.state, self.agent, self.user, self.tools = state, agent, user, tools
        self.max_steps = max_steps
        self.steps = 0
        self._next: Step = self._user_turn  # the user opens

    async def run(self) -> Termination:
        while (end := await self.step()) is None:
            pass
        return end

    async def step(self) -> Termination | None:
        if self._next != self._tool_calls and self.steps >= self.max_steps:
            return Termination.MAX_STEPS
        return await self._next()

    async def _user_turn(self) -> Termination | None:
        user, store = self.user, self.state.store
        async with party_span(user, "user"):
            with suspend_token_limit(), suspend_turn_limit():  # the simulator's use is not the agent's
                turn = await user.next(self.state.messages)
            if not isinstance(user, LLMUser):  # a model user's turn is its model event
                show_turn(f"user ({user.name})", turn.text or f"(ends the conversation: {turn.stop})")
        self.steps += 1
        if turn.text:
            self.state.messages.append(ChatMessageUser(content=turn.text))
        if turn.tactic:  # the pressure applied, for the yielding agents and the reports
            store.set(TACTICS, [*store.get(TACTICS, []), turn.tactic])
        if turn.error:
            # the simulator's model stopped (overflow, refusal, nothing): its failure
            store.set(USER_ERROR, turn.error)
            transcript().info({"user error": turn.error})
            return Termination.USER_ERROR
        if turn.stop == SOLO_DONE:
            return Termination.AGENT_STOP
        if turn.stop:
            # after a failure of the simulator it ends abnormally, not the agent (as in the original)
            return Termination.USER_ERROR if store.get(USER_ERROR) else Termination.USER_STOP
        self._next = self._agent_turn
        return None

    async def _agent_turn(self) -> Termination | None:
        agent, state = self.agent, self.state
        try:
            async with party_span(agent, "agent"):
                message = await agent.next(state.messages, self.tools)
                if not isinstance(agent, ModelAgent):  # a model's turn is its model event
                    show_turn(f"agent ({agent.name})", message)
        except ModelStopped as stop:
            # the agent's model overflowed, was filtered or said nothing: the run ends on the
            # state reached, and the provider's text stays out of the conversation (the user
            # simulator never reads it as the agent's words)
            state.store.set(STOP_DETAIL, stop.detail)
            transcript().info({str(stop.termination): stop.detail})
            if stop.output is not None:
                state.output = stop.output
            return stop.termination
        except AgentProtocolError as err:
            # a broken external agent ends its own run, scored as the original did
            state.store.set(AGENT_ERROR, str(err))
            transcript().info({"agent error": str(err)})
            return Termination.AGENT_ERROR
        message = json_safe_calls(message)  # NaN/Infinity arguments: a tool error
        state.messages.append(message)
        state.output = ModelOutput.from_message(message)
        self.steps += 1
        if agent_stop_token(message):
            return Termination.AGENT_STOP
        if message.tool_calls:
            self._next = self._tool_calls
            return None
        if not message.text.strip():
            # said nothing and did nothing: every agent path ends the same way
            state.store.set(STOP_DETAIL, f"the agent ({agent.name}) returned an empty reply (no text, no tool call)")
            return Termination.AGENT_EMPTY
        self._next = self._user_turn  # answered in text: the user's turn
        return None

    async def _tool_calls(self) -> None:
        result = await execute_tools(self.state.messages, self.tools)
        self.state.messages.extend(result.messages)
        self.steps += 1
        self._next = self._agent_turn
