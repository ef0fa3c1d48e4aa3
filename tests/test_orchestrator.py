"""Conversation.step(): one user message, agent message or tool execution per step, counted as
the original counted them, and the Termination that ends the conversation."""

from __future__ import annotations

import asyncio

from inspect_ai.model import ChatMessageAssistant, ModelName
from inspect_ai.solver import TaskState
from inspect_ai.tool import ToolCall, ToolDef

from pibench_inspect.conversation.keys import STOP_DETAIL, USER_ERROR
from pibench_inspect.conversation.orchestrator import Conversation
from pibench_inspect.conversation.termination import ModelStopped, Termination
from pibench_inspect.conversation.users import UserTurn


class Party:
    """Says its lines in turn (a line that is an exception is raised)."""

    name = "fake"

    def __init__(self, *lines):
        self.lines = list(lines)

    async def next(self, *_):
        line = self.lines.pop(0)
        if isinstance(line, BaseException):
            raise line
        return line


async def _echo(text: str) -> str:
    return text


ECHO = ToolDef(_echo, name="echo", description="Echo.", parameters={"text": "What to echo."}).as_tool()


def calls(*texts: str) -> ChatMessageAssistant:
    return ChatMessageAssistant(content="", tool_calls=[
        ToolCall(id=f"c{i}", function="echo", arguments={"text": t}) for i, t in enumerate(texts)])


def run(agent: Party, user: Party, max_steps: int = 40) -> tuple[Conversation, list[Termination | None]]:
    state = TaskState(ModelName("none/none"), "s", 1, "hi", [])
    talk = Conversation(state, agent, user, [ECHO], max_steps)

    async def go() -> list[Termination | None]:
        ends = [await talk.step()]
        while ends[-1] is None:
            ends.append(await talk.step())
        return ends

    return talk, asyncio.run(go())


def test_each_message_and_tool_execution_is_a_step_until_the_user_stops():
    talk, ends = run(Party(calls("a"), ChatMessageAssistant(content="done")),
                     Party(UserTurn("hi"), UserTurn("", "###STOP###")))
    assert ends == [None, None, None, None, Termination.USER_STOP]
    assert talk.steps == 5  # user, agent (call), tools, agent (text), user (stop)
    assert [m.role for m in talk.state.messages] == ["user", "assistant", "tool", "assistant"]
    assert talk.state.messages[2].text == "a"


def test_max_steps_stops_a_turn_but_never_an_agent_messages_calls():
    talk, ends = run(Party(calls("a"), ChatMessageAssistant(content="more")), Party(UserTurn("hi")), max_steps=2)
    assert ends[-1] == Termination.MAX_STEPS
    assert talk.steps == 3 and talk.state.messages[-1].role == "tool"  # the calls ran past the limit


def test_a_model_stop_ends_without_a_step_and_says_why():
    stop = ModelStopped(Termination.AGENT_OVERFLOW, "the agent's model overflowed")
    talk, ends = run(Party(stop), Party(UserTurn("hi")))
    assert ends[-1] == Termination.AGENT_OVERFLOW and talk.steps == 1
    assert talk.state.store.get(STOP_DETAIL) == "the agent's model overflowed"


def test_an_empty_reply_and_a_failed_user_end_the_conversation_their_own_way():
    talk, ends = run(Party(ChatMessageAssistant(content=" ")), Party(UserTurn("hi")))
    assert ends[-1] == Termination.AGENT_EMPTY and talk.steps == 2
    assert "returned an empty reply" in talk.state.store.get(STOP_DETAIL)

    talk, ends = run(Party(), Party(UserTurn("", error="the user's model overflowed")))
    assert ends == [Termination.USER_ERROR] and talk.steps == 1
    assert talk.state.store.get(USER_ERROR) == "the user's model overflowed"
