"""One rule for a malformed tool call on every way in (conversation/tool_calls.py).

The same agent behaviour, arguments `{not json` on its first call and a plain answer after, goes
through each path: the Inspect model under test (`openai-api/...` against a loopback server, so
Inspect's own parser reads the call), the LiteLLM agent, a protocol agent and an A2A agent. Each
ends the same way: the call is not run, the agent gets it back as a `parsing` tool error and
answers on, the conversation ends as the scripted user ends it, and the sample carries
`malformed_calls: 1`, as does the metric (`malformed`).
"""

from __future__ import annotations

import json
import sys

import pytest
from inspect_ai.model import ChatMessageTool

from a2a_helpers import serve as serve_app
from conftest import MINI, ROOT, registered, run_eval
from pibench_inspect.conversation.keys import AGENT_ERROR, TERMINATION
from pibench_inspect.conversation.tool_calls import malformed_calls, read_call

sys.path.insert(0, str(ROOT / "bench"))
from openai_standin import OpenAIStandin, serve  # noqa: E402

BAD = "{not json"
SCENARIO = "MINI_001_REFUND_OK"


def task(**kw):
    return registered(source=str(MINI), scenarios=SCENARIO, user="scripted", judge="off", **kw)


def assert_same_outcome(log) -> ChatMessageTool:
    """The outcome every path must give; returns the tool error the agent was sent."""
    assert log.status == "success"
    (sample,) = log.samples
    assert sample.error is None
    assert sample.store[TERMINATION] == "user_stop" and AGENT_ERROR not in sample.store
    score = sample.scores["pibench_scorer"]
    assert score.metadata["malformed_calls"] == 1
    tools = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
    (error,) = tools  # the one call was refused: no tool ran
    assert error.error is not None
    assert error.error.type == "parsing" and BAD in error.error.message
    # the agent answered on after the tool error
    after = sample.messages[sample.messages.index(error) + 1:]
    assert any(m.role == "assistant" and m.text for m in after)
    assert log.results.scores[0].metrics["malformed"].value == 1.0
    assert log.results.scores[0].metrics["error_rate"].value == 0.0
    return error


def tool_results_sent(bodies: list[dict]) -> list[str]:
    return [m.get("content") or "" for b in bodies for m in b.get("messages", []) if m.get("role") == "tool"]


def test_inspect_model_path(monkeypatch):
    standin = OpenAIStandin(latency=0, bad_first=1)
    with serve(standin) as url:
        monkeypatch.setenv("STANDIN_BASE_URL", url)
        monkeypatch.setenv("STANDIN_API_KEY", "x")
        # a model name of its own: Inspect memoizes models by name, and another test's standin (a
        # closed port by now) under the same name would be retried without end
        log = run_eval(task(), model="openai-api/standin/malformed-calls-model", max_retries=1)
    assert_same_outcome(log)
    assert any(BAD in c for c in tool_results_sent(standin.bodies[1:2]))  # the next request carried it


def test_litellm_agent_path():
    standin = OpenAIStandin(latency=0, bad_first=1)
    with serve(standin) as url:
        log = run_eval(task(agent="pibench_inspect.agents.litellm_agent:LiteLLMAgent",
                            agent_args={"model_name": "openai/standin", "api_base": url, "api_key": "x"}))
    error = assert_same_outcome(log)
    sent = tool_results_sent(standin.bodies[1:2])
    assert any(BAD in c for c in sent) and error.error.message in sent[0]


class BadOnce:
    """A protocol agent whose first call's arguments are not JSON; it then answers in text."""

    received: list[dict] = []

    def init_state(self, benchmark_context, tools, message_history=None):
        return {"turn": 0}

    def generate(self, message, state):
        BadOnce.received.append(message)
        if state["turn"] == 0:
            reply = {"role": "assistant", "content": None,
                     "tool_calls": [{"id": "c1", "name": "lookup_order", "arguments": BAD}]}
        else:
            reply = {"role": "assistant", "content": "Understood, I have noted that."}
        return reply, {"turn": state["turn"] + 1}

    def is_stop(self, message):
        return False

    def set_seed(self, seed):
        pass

    def stop(self, message, state):
        pass


def test_protocol_agent_path():
    BadOnce.received = []
    assert_same_outcome(run_eval(task(agent="test_malformed_calls:BadOnce")))
    tool = BadOnce.received[1]
    assert tool["role"] == "tool" and tool["error"] is True and BAD in tool["content"]


def test_a2a_agent_path():
    from test_a2a_purple import recording_purple, result_message

    def reply(body):
        history = body["params"]["message"]["parts"][0]["data"]["messages"]
        if not any(m["role"] == "tool" for m in history):
            call = {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": BAD}}
            return result_message(body, {"tool_calls": [call]})
        return result_message(body, {"content": "Understood, I have noted that."})

    app, seen = recording_purple(reply)
    with serve_app(app) as url:
        log = run_eval(task(agent="a2a", agent_url=url))
    assert_same_outcome(log)
    history = seen[1]["body"]["params"]["message"]["parts"][0]["data"]["messages"]
    assert any(m["role"] == "tool" and BAD in m["content"] for m in history)


@pytest.mark.parametrize("arguments, malformed", [
    ({"order_id": "O-1"}, False),
    ('{"order_id": "O-1"}', False),
    ("  ", False),  # no arguments at all: Inspect reads it as none given (then the schema decides)
    (BAD, True),
    ('{"order_id": ' * 150 + '"O-1"' + "}" * 150, True),  # deeper than text may nest
    ([1, 2], True),
    (7, True),
])
def test_the_rule_for_each_form_of_arguments(arguments, malformed):
    call = read_call("c1", "lookup_order", arguments)
    assert bool(call.parse_error) is malformed
    if not malformed:
        assert isinstance(call.arguments, dict)


def test_malformed_calls_counts_every_refused_call():
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser

    bad, good = read_call("a", "f", BAD), read_call("b", "f", json.dumps({"x": 1}))
    messages = [ChatMessageUser(content="hi"), ChatMessageAssistant(content="", tool_calls=[bad, good]),
                ChatMessageAssistant(content="", tool_calls=[read_call("c", "f", [])])]
    assert malformed_calls(messages) == 2
