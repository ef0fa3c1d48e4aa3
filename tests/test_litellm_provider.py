"""`litellm/<model>` as an Inspect provider, offline through LiteLLM's mock responses."""

from __future__ import annotations

import json

import pytest

from inspect_ai.model import get_model

from conftest import MINI, run_eval
from pibench_inspect.analysis import final_state
from conftest import registered


def task(**kw):
    return registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", user="scripted", **kw)


@pytest.mark.slow
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
    assert final_state(log, sample)["orders"]["O-1"]["status"] == "delivered"


def test_user_role_through_litellm():
    user = get_model("litellm/gpt-4o-mini", mock_response="Thanks, that is all. ###STOP###")
    agent = get_model("litellm/gpt-4o-mini", mock_response="Let me look into it.")
    log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK"), model=agent,
                   model_roles={"user": user})
    users = [m.text for m in log.samples[0].messages if m.role == "user"]
    assert users[-1] == "Thanks, that is all."


# ---------------------------------------------------------------- provider faults (loopback)

def _standin():
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "bench"))
    import openai_standin

    return openai_standin


def test_missing_key_fails_before_the_run_not_after_minutes_of_retries(monkeypatch, tmp_path):
    import time

    import pytest

    standin = _standin()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = standin.OpenAIStandin(latency=0)
    with standin.serve(server) as url:
        started = time.monotonic()
        # timeout bounds the retries the old provider made (LiteLLM calls a missing OpenAI key a 500)
        with pytest.raises(ValueError, match="OPENAI_API_KEY"):
            run_eval(task(), model="litellm/openai/standin", model_args={"api_base": url}, timeout=20,
                     log_dir=str(tmp_path))
    assert time.monotonic() - started < 15 and server.requests == 0


def test_authentication_error_is_not_retried(tmp_path):
    standin = _standin()
    server = standin.OpenAIStandin(latency=0, status=401)
    with standin.serve(server) as url:
        log = run_eval(task(), model="litellm/openai/standin", model_args={"api_base": url, "api_key": "bad"},
                       fail_on_error=False, timeout=20, log_dir=str(tmp_path))
    sample = log.samples[0]
    assert server.requests == 1  # one attempt: the same key would fail again
    assert "AuthenticationError" in sample.error.message and "stand-in answers 401" in sample.error.message


def test_credential_errors_reported_as_500_are_not_transient(monkeypatch):
    import litellm

    from pibench_inspect.providers.litellm_api import LiteLLMAPI, LiteLLMCallError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    api = LiteLLMAPI("openai/standin", mock_response="unused")
    real = None
    try:  # LiteLLM's own report of a missing OpenAI key: an InternalServerError, raised before any request
        litellm.completion(model="openai/standin", api_base="http://127.0.0.1:9/v1",
                           messages=[{"role": "user", "content": "hi"}], max_retries=0)
    except Exception as err:
        real = LiteLLMCallError(err)
    assert real is not None and real.kind == "InternalServerError" and "credentials" in str(real).lower()
    assert not api.should_retry(real)
    connection = LiteLLMCallError(litellm.APIConnectionError(message="Connection refused", llm_provider="openai", model="x"))
    assert api.should_retry(connection)
