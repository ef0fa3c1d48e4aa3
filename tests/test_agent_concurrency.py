"""External agents do not serialize samples: two samples' agent calls are in flight at once.

Structural, not timed: a stand-in records how many requests (or blocking generate calls) were
in progress together; with the agent's work on the event loop that maximum stayed at 1.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest

from conftest import ROOT, mini_copies, run_eval
from pibench_inspect.task import pibench_task

sys.path.insert(0, str(ROOT / "bench"))
from openai_standin import OpenAIStandin, serve  # noqa: E402

LITELLM_AGENT = "pibench_inspect.agents.litellm_agent:LiteLLMAgent"


@pytest.mark.slow
def test_litellm_agent_calls_of_two_samples_overlap(tmp_path):
    src = mini_copies(tmp_path, 2, "PAR")
    standin = OpenAIStandin(latency=0.4)
    with serve(standin) as url:
        log = run_eval(
            pibench_task(None, source=str(src), user="scripted", max_steps=4, agent=LITELLM_AGENT,
                         agent_args={"model_name": "openai/standin", "api_base": url, "api_key": "x"}),
            max_samples=2, log_dir=str(tmp_path / "logs"))
    assert log.status == "success"
    assert standin.requests >= 2
    assert standin.max_in_flight == 2
    # the agent's calls are the agent's usage: recorded as model calls of the sample
    agent_calls = [e for e in log.samples[0].events if e.event == "model"]
    assert agent_calls and agent_calls[0].model == "litellm/openai/standin"


class BlockingAgent:
    """A protocol agent whose generate blocks its thread (a synchronous network call)."""

    model_name = "blocking"
    lock = threading.Lock()
    in_flight = 0
    max_in_flight = 0

    def init_state(self, benchmark_context, tools, message_history=None):
        return {}

    def generate(self, message, state):
        cls = type(self)
        with cls.lock:
            cls.in_flight += 1
            cls.max_in_flight = max(cls.max_in_flight, cls.in_flight)
        time.sleep(0.3)
        with cls.lock:
            cls.in_flight -= 1
        return {"role": "assistant", "content": "Noted."}, state

    def is_stop(self, message):
        return False

    def set_seed(self, seed):
        pass

    def stop(self, message, state):
        pass


def test_blocking_protocol_agents_run_off_the_event_loop(tmp_path):
    src = mini_copies(tmp_path, 2, "BLK")
    BlockingAgent.max_in_flight = 0
    log = run_eval(pibench_task(None, source=str(src), user="scripted", max_steps=4,
                                agent="test_agent_concurrency:BlockingAgent"),
                   max_samples=2, log_dir=str(tmp_path / "logs"))
    assert log.status == "success"
    assert BlockingAgent.max_in_flight == 2


def test_protocol_model_provider_waits_on_every_sample_at_once(tmp_path):
    # `--model protocol/...`: asyncio's default thread pool (CPUs + 4 workers) capped it before
    src = mini_copies(tmp_path, 12, "PRM")
    BlockingAgent.max_in_flight = 0
    log = run_eval(pibench_task(None, source=str(src), user="scripted", max_steps=2, judge="off"),
                   model="protocol/test_agent_concurrency:BlockingAgent", max_samples=12, max_connections=12,
                   log_dir=str(tmp_path / "logs"))
    assert log.status == "success"
    assert BlockingAgent.max_in_flight == 12
