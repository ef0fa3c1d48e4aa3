"""A sample error is named by its cause, in one line (reports/causes.py).

Inspect ends a model call that failed after its retries with tenacity's `RetryError(<Future at
0x... state=finished raised AttemptTimeoutError>)`. Through `inspect eval` as a user runs it,
against a loopback model that answers too slowly: the run-end summary and `pibench report` say
which model call timed out, after how long, under which flag, and how often it was tried.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tenacity
from inspect_ai.log import list_eval_logs, read_eval_log

from conftest import MINI, ROOT
from pibench_inspect.reports.causes import error_cause, sample_error_cause

sys.path.insert(0, str(ROOT / "bench"))
from openai_standin import OpenAIStandin, serve  # noqa: E402

BIN = Path(sys.executable).parent
CAUSE = "model call to openai-api/standin/slow-model timed out after 1 s (--attempt-timeout; 2 attempts)"


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.slow
def test_a_retried_timeout_is_named_by_its_cause_in_one_line(tmp_path):
    with serve(OpenAIStandin(latency=3)) as url:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300",
               "STANDIN_BASE_URL": url, "STANDIN_API_KEY": "x"}
        r = run([str(BIN / "inspect"), "eval", "pibench_inspect/pibench", "-T", f"source={MINI}",
                 "-T", "user=scripted", "-T", "judge=off", "--sample-id", "MINI_001_REFUND_OK",
                 "--model", "openai-api/standin/slow-model", "--attempt-timeout", "1", "--max-retries", "1",
                 "--no-fail-on-error", "--display", "plain", "--log-dir", str(tmp_path / "logs")], env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    summary = r.stderr[r.stderr.index("pi-bench: 1 sample(s) of pibench;"):].splitlines()
    assert summary[0] == "pi-bench: 1 sample(s) of pibench; 1 error, 0 agent_error, 0 user_error"
    assert summary[1] == f"  first error: {CAUSE}"
    # what the log holds is Inspect's wrapper; the cause is read from the sample's model events
    log = read_eval_log(list_eval_logs(str(tmp_path / "logs"))[0].name)
    assert "RetryError" in log.samples[0].error.message
    assert sample_error_cause(log.samples[0]) == CAUSE
    out = tmp_path / "report"
    r = run([str(BIN / "pibench"), "report", str(tmp_path / "logs"), "--out", str(out)], env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    md = (out / "report.md").read_text()
    assert CAUSE in md and "RetryError" not in md


def future(attempt: int, error: BaseException) -> tenacity.Future:
    return tenacity.Future.construct(attempt, error, True)


def test_error_cause_unwraps_retry_and_group_wrappers():
    from inspect_ai.model._model import AttemptTimeoutError

    retried = tenacity.RetryError(future(2, AttemptTimeoutError(120)))
    assert "RetryError" in repr(retried)
    assert error_cause(retried) == "model call timed out after 120 s (--attempt-timeout)"
    group = ExceptionGroup("in a task group", [tenacity.RetryError(future(3, ConnectionError("refused")))])
    assert error_cause(group) == "ConnectionError: refused"
    assert error_cause(ValueError("a\n  b")) == "ValueError: a b"  # one line


def test_a_sample_error_that_is_no_model_call_keeps_its_own_words():
    from types import SimpleNamespace

    plain = SimpleNamespace(error=SimpleNamespace(message="AgentUnavailable: the agent at http://x is down",
                                                  traceback=""), events=[])
    assert sample_error_cause(plain) == "AgentUnavailable: the agent at http://x is down"
    wrapped = SimpleNamespace(events=[], error=SimpleNamespace(
        message="RetryError(<Future at 0x7f state=finished raised APIConnectionError>)",
        traceback="Traceback...\nopenai.APIConnectionError: Connection error.\n\nThe above exception...\n"
                  "tenacity.RetryError: RetryError[<Future at 0x7f state=finished raised APIConnectionError>]\n"))
    assert sample_error_cause(wrapped) == "APIConnectionError: Connection error."
    assert sample_error_cause(SimpleNamespace(error=None)) is None
