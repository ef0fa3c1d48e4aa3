"""An agent that cannot be reached is an infrastructure failure, not agent behaviour.

Through `inspect eval` as a user runs it: a missing API key stops the run before it starts, with
one line; an endpoint nobody listens on ends each sample as an Inspect sample error (retried by
`--retry-on-error`, tolerated by `--no-fail-on-error`, out of the scores), where it used to be
scored as the agent's own `agent_error` with compliance 0. A malformed call from a model that
did answer is its own scored outcome (a tool error it sees).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inspect_ai.log import list_eval_logs, read_eval_log

from conftest import MINI, ROOT, registered, run_eval, full_score
from pibench_inspect.conversation.solver import AGENT_ERROR, TERMINATION

sys.path.insert(0, str(ROOT / "bench"))
from openai_standin import OpenAIStandin, serve  # noqa: E402

INSPECT = str(Path(sys.executable).with_name("inspect"))
LITELLM_AGENT = "pibench_inspect.agents.litellm_agent:LiteLLMAgent"
KEYS = ("OPENAI_API_KEY",)


def inspect_eval(args: list[str], log_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env["PYTHONPATH"] = str(ROOT)
    env["COLUMNS"] = "300"  # rich wraps messages at the terminal width (80 when not a terminal)
    return subprocess.run(
        [INSPECT, "eval", "pibench_inspect/pibench.py", "-T", f"source={MINI}", "-T", "user=scripted",
         "-T", f"agent={LITELLM_AGENT}", "--model", "none", "--display", "plain", "--log-dir", str(log_dir), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_missing_key_stops_before_the_run(tmp_path):
    r = inspect_eval(["-T", 'agent_args={"model_name": "gpt-4o-mini"}'], tmp_path)
    assert r.returncode != 0
    said = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    # one line, after Inspect's own start-up banner; no traceback
    assert "OPENAI_API_KEY" in said[-1] and "LiteLLM agent" in said[-1], r.stdout + r.stderr[-2000:]
    assert "Traceback" not in r.stdout + r.stderr
    assert not list(tmp_path.glob("*.eval"))  # nothing ran, nothing was scored


@pytest.mark.slow
def test_unreachable_agent_is_a_sample_error_not_a_score(tmp_path):
    args = {"model_name": "openai/standin", "api_base": f"http://127.0.0.1:{free_port()}/v1", "api_key": "x"}
    r = inspect_eval(["-T", f"agent_args={json.dumps(args)}", "--sample-id", "MINI_001_REFUND_OK",
                      "--max-retries", "0", "--retry-on-error", "1", "--no-fail-on-error"], tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    log = read_eval_log(list_eval_logs(str(tmp_path))[0].name)
    assert log.status == "success" and len(log.samples) == 1
    for sample in log.samples:
        assert sample.error is not None and "AgentUnavailable" in sample.error.message + sample.error.traceback
        assert len(sample.error_retries or []) == 1  # --retry-on-error ran it again
        assert not sample.scores  # kept out of the scores, not a 0


def test_a_model_that_keeps_sending_malformed_calls_is_scored_not_an_error(tmp_path):
    """Every call malformed: each is a tool error the model sees (tests/test_malformed_calls.py),
    the run ends at -T max_steps and is scored; the model answered, so it is no outage."""
    standin = OpenAIStandin(latency=0, bad_arguments=True)
    with serve(standin) as url:
        log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", user="scripted", max_steps=7,
                                  agent=LITELLM_AGENT, judge="off",
                                  agent_args={"model_name": "openai/standin", "api_base": url, "api_key": "x"}),
                       log_dir=str(tmp_path))
    sample = log.samples[0]
    assert sample.error is None and AGENT_ERROR not in sample.store
    score = full_score(sample)
    assert score.metadata["termination"] == "max_steps" and score.metadata["malformed_calls"] == 3
