"""Bring-your-own agent through the five-operation protocol, run keylessly."""

from __future__ import annotations

import pytest

from conftest import MINI, run_eval, sample_scores, full_score
from pibench_inspect.conversation.solver import AGENT_ERROR, TERMINATION
from pibench_inspect.local import AgentProtocol
from conftest import registered


def task(agent, **kw):
    return registered(source=str(MINI), agent=agent, user="scripted", **kw)


def test_demo_agent_satisfies_the_protocol():
    from examples.local_demo.demo_agent import CautiousAgent

    assert isinstance(CautiousAgent(), AgentProtocol)


def test_demo_agent_runs_keylessly_and_tools_are_executed():
    log = run_eval(task("examples.local_demo.demo_agent:CautiousAgent"))
    scores = sample_scores(log)
    assert len(scores) == 3
    esc = scores["MINI_003_BIG_ORDER"]
    assert esc.answer == "ESCALATE" and esc.metadata["tool_calls"][:2] == ["lookup_order", "record_decision"]
    assert scores["MINI_001_REFUND_OK"].value["all_passed"] == 0.0  # escalating an ordinary refund fails
    for s in log.samples:
        assert s.store[TERMINATION] == "user_stop"
        assert any(m.role == "tool" and not m.error for m in s.messages)


class Broken:
    """Sends a tool call whose structure is broken (no name): a protocol break."""

    model_name = "broken"

    def init_state(self, benchmark_context, tools, message_history=None):
        return {}

    def generate(self, message, state):
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": "x", "name": "", "arguments": {"order_id": "O-1"}}]}, state

    def is_stop(self, message):
        return False

    def set_seed(self, seed):
        pass

    def stop(self, message, state):
        pass


class Raises(Broken):
    def generate(self, message, state):
        raise RuntimeError("model backend down")


@pytest.mark.parametrize("ref, reason", [
    ("test_local_agent:Broken", "needs a non-blank string id and name"),
    ("test_local_agent:Raises", "the agent raised RuntimeError: model backend down"),
])
def test_malformed_agent_is_a_recorded_error_not_a_crash(ref, reason):
    log = run_eval(task(ref))
    assert log.status == "success"
    for s in log.samples:
        assert s.store[TERMINATION] == "agent_error" and reason in s.store[AGENT_ERROR]
        assert full_score(s).value["all_passed"] == 0.0


class Stopper(Broken):
    def generate(self, message, state):
        return {"role": "assistant", "content": "Goodbye"}, state

    def is_stop(self, message):
        return True


def test_is_stop_ends_the_conversation():
    log = run_eval(task("test_local_agent:Stopper", scenarios="MINI_001_REFUND_OK"))
    assert log.samples[0].store[TERMINATION] == "agent_stop"


def test_bad_reference_is_a_clear_error():
    with pytest.raises(ValueError, match="-T agent"):
        task("no-colon-here")


def test_run_end_says_how_many_samples_ended_in_agent_error(capfd):
    log = run_eval(task("test_local_agent:Broken"))
    err = capfd.readouterr().err
    assert "pi-bench: 3 sample(s) of pibench; 0 error, 3 agent_error, 0 user_error" in err
    assert "first agent_error:" in err and "needs a non-blank string id and name" in err
    assert log.results.scores[0].metrics["error_rate"].value == 1.0
