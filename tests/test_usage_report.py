"""Tokens and cost per role in `pibench report`: what was called, counted once, priced or unknown.

The LiteLLM agent's own calls are the agent's (they used to be invisible: 0 calls); a call Inspect
retried is one call, its failed attempt counted apart; a model with no known price has an unknown
cost, never $0.0000.
"""

from __future__ import annotations

import json
import sys

from inspect_ai.model import get_model

from conftest import MINI, ROOT, registered, run_eval
from pibench_inspect.cli import main

sys.path.insert(0, str(ROOT / "bench"))
import standin  # noqa: E402  (registers the pibench-standin provider)
from openai_standin import OpenAIStandin, serve  # noqa: E402


def report(log, out):
    assert main(["report", log.location, "--out", str(out)]) == 0
    payload = json.loads((out / "results.json").read_text())
    return payload["pibench_inspect"]["usage"]["total"], (out / "report.md").read_text()


def agent_messages(log) -> int:
    return sum(1 for m in log.samples[0].messages if m.role == "assistant")


def test_litellm_agent_calls_are_the_agents_and_unpriced_means_unknown(tmp_path):
    with serve(OpenAIStandin(latency=0)) as url:
        log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", user="scripted",
                                  max_steps=6, agent="pibench_inspect.agents.litellm_agent:LiteLLMAgent",
                                  agent_args={"model_name": "openai/standin", "api_base": url, "api_key": "x"}),
                       log_dir=str(tmp_path / "logs"))
    usage, md = report(log, tmp_path / "report")
    agent = usage["agent"]
    assert agent["calls"] == agent_messages(log) > 0
    assert agent["models"] == ["litellm/openai/standin"] and agent["input_tokens"] > 0
    assert agent["cost"] is None and not agent["cost_complete"]
    assert "$0.0000" not in md and "tokens only (no price known)" in md


def test_a_retried_call_counts_once(tmp_path):
    model = get_model(f"{standin.PROVIDER}/replay", latency=0, source=str(MINI),
                      fail_ids="MINI_001_REFUND_OK", fail_times=1)
    log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", user="scripted", judge="off"),
                   model=model, log_dir=str(tmp_path / "logs"))
    assert sum(1 for e in log.samples[0].events if e.event == "model") == agent_messages(log) + 1  # one retry
    usage, _ = report(log, tmp_path / "report")
    assert usage["agent"]["calls"] == agent_messages(log)
    assert usage["agent"]["failed_attempts"] == 1


def test_the_judges_tokens_and_time_are_reported_as_its_own(tmp_path, monkeypatch):
    standin_judge = OpenAIStandin(latency=0.3, reply='{"answer": "YES", "reason": "polite"}')
    with serve(standin_judge) as url:
        monkeypatch.setenv("STANDIN_BASE_URL", url)
        monkeypatch.setenv("STANDIN_API_KEY", "x")
        log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", user="scripted", agent="oracle"),
                       model_roles={"grader": "openai-api/standin/judge"}, log_dir=str(tmp_path / "logs"))
    usage, md = report(log, tmp_path / "report")
    judge = usage["judge"]
    assert judge["calls"] == 1 and judge["models"] == ["openai-api/standin/judge"] and judge["output_tokens"] == 8
    assert judge["seconds"] >= 0.3 and usage["agent"]["seconds"] == 0.0  # the oracle calls no model
    assert "model time (s)" in md
    row = next(line for line in md.splitlines() if line.startswith("| judge"))
    assert f"| {judge['seconds']:.1f} |" in row
