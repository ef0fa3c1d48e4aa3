"""The LiteLLM reference agent behind the local protocol, offline via LiteLLM mock responses."""

from __future__ import annotations

import json

from conftest import MINI, run_eval
from pibench_inspect.agents.litellm_agent import LiteLLMAgent
from conftest import registered


def test_context_is_sent_on_every_call(monkeypatch):
    import litellm

    seen = []
    real = litellm.completion

    def fake(**request):
        seen.append(request["messages"])
        return real(model="gpt-4o-mini", messages=request["messages"], mock_response="ok")

    monkeypatch.setattr(litellm, "completion", fake)
    agent = LiteLLMAgent("gpt-4o-mini")
    ctx = [{"kind": "policy", "content": "POLICY TEXT"}, {"kind": "task", "content": "TASK TEXT"}]
    state = agent.init_state(ctx, [{"name": "t", "description": "d", "parameters": {"type": "object", "properties": {}}}])
    _, state = agent.generate({"role": "user", "content": "hello"}, state)
    _, state = agent.generate({"role": "user", "content": "again"}, state)
    assert len(seen) == 2
    for messages in seen:
        assert messages[0]["role"] == "system" and "POLICY TEXT" in messages[0]["content"] and "TASK TEXT" in messages[0]["content"]
    assert [m["content"] for m in seen[1] if m["role"] == "user"] == ["hello", "again"]


def test_runs_through_the_benchmark_with_tool_calls():
    calls = [{"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": json.dumps({"order_id": "O-2"})}}]
    log = run_eval(registered(source=str(MINI), scenarios="MINI_002_FINAL_SALE", user="scripted", max_steps=5,
                                agent="pibench_inspect.agents.litellm_agent:LiteLLMAgent",
                                agent_args={"model_name": "gpt-4o-mini", "mock_tool_calls": calls}))
    sample = log.samples[0]
    assert log.status == "success"
    assert any(m.role == "tool" and '"O-2"' in m.text for m in sample.messages)
