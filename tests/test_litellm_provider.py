"""`litellm/<model>` as an Inspect provider, offline through LiteLLM's mock responses."""

from __future__ import annotations

import json

from inspect_ai.model import get_model

from conftest import MINI, run_eval
from pibench_inspect.conversation.solver import stored_final_state
from conftest import registered


def task(**kw):
    return registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", user="scripted", **kw)


def test_text_replies_and_usage_are_recorded():
    model = get_model("litellm/gpt-4o-mini", mock_response="Happy to help with that refund.")
    log = run_eval(task(), model=model)
    sample = log.samples[0]
    replies = [m.text for m in sample.messages if m.role == "assistant"]
    assert replies and all(r == "Happy to help with that refund." for r in replies)
    usage = sample.model_usage["litellm/gpt-4o-mini"]
    assert usage.input_tokens > 0 and usage.total_cost is not None


def test_tool_calls_are_executed_by_the_engine():
    calls = [{"id": "c1", "type": "function",
              "function": {"name": "lookup_order", "arguments": json.dumps({"order_id": "O-1"})}}]
    model = get_model("litellm/gpt-4o-mini", mock_tool_calls=calls)
    log = run_eval(task(max_steps=4), model=model)
    sample = log.samples[0]
    tool_msgs = [m for m in sample.messages if m.role == "tool"]
    assert tool_msgs and '"order_id": "O-1"' in tool_msgs[0].text
    assert stored_final_state(sample.store)["orders"]["O-1"]["status"] == "delivered"


def test_user_role_through_litellm():
    user = get_model("litellm/gpt-4o-mini", mock_response="Thanks, that is all. ###STOP###")
    agent = get_model("litellm/gpt-4o-mini", mock_response="Let me look into it.")
    log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK"), model=agent,
                   model_roles={"user": user})
    users = [m.text for m in log.samples[0].messages if m.role == "user"]
    assert users[-1] == "Thanks, that is all."
