"""What a party's model stop becomes (conversation/termination.py; docs/design.md's table).

A model that overflows its context (`model_length`), is refused by a content filter or returns
nothing is no answer. For the agent under test the conversation ends with a named termination,
scored on the state reached, and the provider's text never reaches the simulated user; for the
user simulator it is a `user_error`, for the judge a `judge_error`, never the agent's doing.
Through mockllm (outputs with `usage` set), and through the real OpenAI-compatible and LiteLLM
paths against a loopback server that refuses an over-long prompt the way OpenAI and llama.cpp do.
"""

from __future__ import annotations

import sys

import pytest
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from conftest import MINI, ROOT, mock_outputs, registered, run_eval, full_score
from pibench_inspect.conversation.keys import STOP_DETAIL, TERMINATION, USER_ERROR
from pibench_inspect.scoring.metric_names import termination_name

sys.path.insert(0, str(ROOT / "bench"))
from openai_standin import OpenAIStandin, serve  # noqa: E402

USAGE = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
OVERFLOW = "This model's maximum context length is 8192 tokens. However, you requested 9731 tokens."
REFUSAL = "The response was filtered due to the prompt triggering the content management policy."


def stop(stop_reason: str, text: str) -> ModelOutput:
    o = ModelOutput.from_content("mockllm/model", text, stop_reason=stop_reason)  # type: ignore[arg-type]
    o.usage = USAGE
    return o


def mock(*outputs) -> object:
    return get_model("mockllm/model", custom_outputs=list(outputs))


def task(**kw):
    return registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", **kw)


def metrics(log) -> dict[str, float]:
    return {k: v.value for k, v in log.results.scores[0].metrics.items()}


def model_inputs(sample, role: str | None) -> list[str]:
    """The text of every message each model call of `role` was sent (None: the agent's)."""
    return [m.text for e in sample.events if e.event == "model" and e.role == role for m in e.input]


@pytest.mark.parametrize("kind, output, termination, said", [
    ("overflow", stop("model_length", OVERFLOW), "agent_overflow", "overflowed its context or output (model_length)"),
    ("filtered", stop("content_filter", REFUSAL), "agent_content_filter", "content filter (content_filter)"),
    ("empty", stop("stop", ""), "agent_empty", "returned an empty reply"),
])
def test_the_agents_model_stop_ends_the_run_with_a_named_termination_and_is_scored(kind, output, termination, said):
    # the agent answers once, the user presses, then the agent's model stops
    agent = mock(*mock_outputs("Let me look into that for you."), output)
    user = mock(*mock_outputs("Please hurry, I need the money today.", "Hello? Are you there?"))
    grader = mock(*mock_outputs('{"answer": "YES", "reason": "polite"}'))
    log = run_eval(task(user="llm"), model=agent, model_roles={"user": user, "grader": grader})
    (sample,) = log.samples
    assert sample.error is None and log.status == "success"
    assert sample.store[TERMINATION] == termination
    assert said in sample.store[STOP_DETAIL] and "mockllm/model" in sample.store[STOP_DETAIL]
    score = full_score(sample)
    # scored on the state reached: the checks ran (the agent did nothing, so they fail)
    assert score.metadata["termination"] == termination and score.metadata["checks"]
    assert score.value["all_passed"] == 0.0 and score.metadata["reason"] is None
    assert "agent stopped:" in score.explanation
    # the provider's text is not the agent's words: not in the conversation, never shown to the user
    if output.completion:
        assert output.completion in sample.store[STOP_DETAIL]
        assert not any(output.completion in m.text for m in sample.messages)
        assert not any(output.completion in text for text in model_inputs(sample, "user"))
    assert len([e for e in sample.events if e.event == "model" and e.role == "user"]) == 1  # one reply, then the end
    assert metrics(log)[termination_name(termination)] == 1.0  # overflow, filtered, agent_empty
    assert metrics(log)["error_rate"] == 0.0  # a model stop is not a protocol error


def test_the_user_simulators_model_stop_is_a_user_error_never_seen_by_the_agent(capfd):
    agent = mock(*mock_outputs("Let me look into that for you.", "Still checking."))
    user = mock(stop("model_length", OVERFLOW))
    log = run_eval(task(user="llm", judge="off"), model=agent, model_roles={"user": user})
    (sample,) = log.samples
    assert sample.error is None
    assert sample.store[TERMINATION] == "user_error"
    assert "user simulator's model mockllm/model overflowed" in sample.store[USER_ERROR]
    score = full_score(sample)
    assert score.metadata["user_error"] == sample.store[USER_ERROR]
    # not the agent's doing: an abnormal end, no check counted against it
    assert score.metadata["reason"] == "abnormal_termination:user_error"
    assert not any(OVERFLOW in m.text for m in sample.messages)
    assert not any(OVERFLOW in text for text in model_inputs(sample, None))
    assert len([e for e in sample.events if e.event == "model" and e.role is None]) == 1
    assert "1 user_error" in capfd.readouterr().err


@pytest.mark.parametrize("output, said", [
    (stop("model_length", OVERFLOW), "judge's model mockllm/model overflowed its context or output (model_length)"),
    (stop("content_filter", REFUSAL), "judge's model mockllm/model was stopped by the provider's content filter"),
])
def test_the_judges_model_stop_is_a_judge_error_and_not_retried(output, said):
    grader = mock(output, *mock_outputs('{"answer": "YES", "reason": "polite"}'))
    log = run_eval(task(agent="oracle", user="scripted"), model_roles={"grader": grader})
    (sample,) = log.samples
    score = full_score(sample)
    (check,) = [c for c in score.metadata["checks"].values() if c["type"] == "NL_JUDGE"]
    assert check["status"] == "judge_error" and check["passed"] is None and said in check["detail"]
    assert score.value["all_passed"] == 1.0  # the agent's score is untouched
    assert score.metadata["semantic_score"] is None
    assert len([e for e in sample.events if e.event == "model" and e.role == "grader"]) == 1  # no retry


def test_overflow_through_the_openai_compatible_provider(monkeypatch):
    """`--model openai-api/<service>/<model>` against a server that refuses the prompt as too long
    (llama.cpp's server and OpenAI answer HTTP 400, context_length_exceeded)."""
    standin = OpenAIStandin(latency=0, overflow=True)
    with serve(standin) as url:
        monkeypatch.setenv("STANDIN_BASE_URL", url)
        monkeypatch.setenv("STANDIN_API_KEY", "x")
        # a model name of its own: Inspect memoizes models by name, and another test's standin (a
        # closed port by now) under the same name would be retried without end
        log = run_eval(task(user="scripted", judge="off"), model="openai-api/standin/overflow-model", max_retries=1)
    (sample,) = log.samples
    assert sample.error is None and sample.store[TERMINATION] == "agent_overflow"
    assert "maximum context length is 8192 tokens" in sample.store[STOP_DETAIL]
    assert [m.role for m in sample.messages] == ["system", "user"]  # the refusal was never said
    assert standin.requests == 1  # the scripted user was not answered with it


def test_overflow_through_the_litellm_agent(monkeypatch):
    standin = OpenAIStandin(latency=0, overflow=True)
    with serve(standin) as url:
        log = run_eval(task(user="scripted", judge="off", agent="pibench_inspect.agents.litellm_agent:LiteLLMAgent",
                            agent_args={"model_name": "openai/standin", "api_base": url, "api_key": "x"}))
    (sample,) = log.samples
    assert sample.error is None and sample.store[TERMINATION] == "agent_overflow"
    assert "litellm/openai/standin overflowed" in sample.store[STOP_DETAIL]
    assert [m.role for m in sample.messages] == ["system", "user"]


class SaysNothing:
    """A protocol agent that answers with neither text nor a call."""

    def init_state(self, benchmark_context, tools, message_history=None):
        return {}

    def generate(self, message, state):
        return {"role": "assistant", "content": ""}, state

    def is_stop(self, message):
        return False

    def set_seed(self, seed):
        pass

    def stop(self, message, state):
        pass


def test_an_empty_reply_ends_as_agent_empty_on_every_agent_path():
    from a2a_helpers import serve as serve_app
    from test_a2a_purple import recording_purple, result_message

    app, _ = recording_purple(lambda body: result_message(body, {"content": ""}))
    with serve_app(app) as url:
        a2a = run_eval(task(user="scripted", judge="off", agent="a2a", agent_url=url))
    local = run_eval(task(user="scripted", judge="off", agent="test_model_stops:SaysNothing"))
    model = run_eval(task(user="scripted", judge="off"), model=mock(stop("stop", "")))
    for log in (a2a, local, model):
        (sample,) = log.samples
        assert sample.error is None and sample.store[TERMINATION] == "agent_empty", sample.store
        assert "empty reply" in sample.store[STOP_DETAIL]
        assert full_score(sample).metadata["checks"]  # scored on the state reached
