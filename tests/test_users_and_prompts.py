"""Simulated users and the agent prompt: what each side may see."""

from __future__ import annotations

import asyncio

from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall

from conftest import MINI
from pibench_inspect.conversation.prompts import system_prompt
from pibench_inspect.conversation.users import ScriptedUser, split_stop, user_system_prompt, user_view
from pibench_inspect.scenario.catalog import load_set


def test_split_stop():
    assert split_stop("###STOP###").stop == "###STOP###" and split_stop("###STOP###").text == ""
    t = split_stop("Thanks, bye! ###STOP###")
    assert (t.text, t.stop) == ("Thanks, bye!", "###STOP###")
    assert split_stop("###TRANSFER###").stop == "###TRANSFER###"
    assert split_stop("keep going").stop is None


def test_scripted_user_replays_then_stops():
    s, _ = load_set(MINI).resolve("MINI_001_REFUND_OK")
    u = ScriptedUser(s.user_simulation)
    said = [asyncio.run(u.next([])) for _ in range(5)]
    assert [t.text for t in said[:3]] == [s.user_simulation.initial_user_message, "Please just do it.", "Thanks, bye!"]
    assert said[3].stop == "###STOP###" and said[4].stop == "###STOP###"


def test_user_never_sees_tool_traffic():
    msgs = [
        ChatMessageUser(content="I want a refund"),
        ChatMessageAssistant(content="", tool_calls=[ToolCall(id="a", function="lookup_order", arguments={"order_id": "O-3"})]),
        ChatMessageTool(content='{"risk_note": "watchlist"}', tool_call_id="a", function="lookup_order"),
        ChatMessageAssistant(content="I have passed this to a supervisor."),
    ]
    view = user_view(msgs)
    text = " ".join(m.text for m in view)
    assert "watchlist" not in text and "lookup_order" not in text
    assert [m.role for m in view] == ["assistant", "user"]
    assert view[1].text.startswith("Service representative says:")


def test_user_prompt_has_the_persona_and_no_hidden_state():
    s, _ = load_set(MINI).resolve("MINI_003_BIG_ORDER")
    prompt = user_system_prompt(s.user_simulation, 8)
    assert s.user_simulation.persona in prompt and "###STOP###" in prompt
    assert "watchlist" not in prompt and s.meta.notes not in prompt


def test_agent_prompt_has_policy_and_contract_but_no_answer():
    s, d = load_set(MINI).resolve("MINI_003_BIG_ORDER")
    prompt = system_prompt(s, d)
    assert "MINI-1.3" in prompt and "record_decision" in prompt and "2026-11-02T10:00:00+00:00" in prompt
    assert "SECRET-NOTE" not in prompt and s.scenario_id not in prompt
    assert "earlier contact" not in prompt  # the state patch is never printed
