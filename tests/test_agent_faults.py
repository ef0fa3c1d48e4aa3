"""Whatever the agent under test does is its own scored outcome (issue 25, item 2), through the
real command: each hostile sample ends as `agent_error` with a reason, never as an Inspect
sample error (which every metric leaves out), and the run, its log and the process end cleanly.

One run holds every fault: each scenario copy names its fault in its customer id, which the
agent reads in init_state (tests/fault_agents.py). The fast suite runs that one run of every
fault; the other agent paths and the process-level checks are end-to-end (`pytest -m slow`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from conftest import mini_copies, full_score

ROOT = Path(__file__).resolve().parents[1]
INSPECT = str(Path(sys.executable).with_name("inspect"))
AGENT = "tests.fault_agents:FaultAgent"

RAISES = ["system_exit", "exit_3", "keyboard_interrupt", "generator_exit", "bad_str"]
FAULTS = ([(f, w) for f in RAISES for w in ("generate", "init_state", "is_stop")]
          + [("deep_error", "generate"), ("block", "generate"), ("block", "init_state"),
             ("deep", "generate"), ("huge_int", "generate"), ("cycle", "generate")])


def fault_source(root: Path, faults) -> Path:
    def patch(i, d):
        fault, where = faults[i]
        d["environment_setup"]["customer"] = {"customer_id": f"FAULT:{fault}@{where}"}
    return mini_copies(root, len(faults), "FAULT", patch)


def run(args: list[str], logs: Path, timeout: float = 240):
    started = time.monotonic()
    r = subprocess.run([INSPECT, "eval", "pibench_inspect/pibench", *args, "-T", "user=scripted",
                        "--display", "none", "--log-dir", str(logs), "--max-samples", "8"],
                       capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    return r, time.monotonic() - started


def outcomes(logs: Path) -> tuple:
    log = read_eval_log(next(logs.glob("*.eval")))
    return log, {str(s.id): s for s in log.samples or []}


def check_every_fault_is_agent_error(log, samples, faults, r) -> None:
    assert log.status == "success", (log.status, log.error, r.stderr[-2000:])
    assert len(samples) == len(faults)
    for i, (fault, where) in enumerate(faults):
        s = samples[f"FAULT_{i:03d}"]
        assert s.error is None, (fault, where, s.error)
        assert s.store.get("pibench:termination") == "agent_error", (fault, where, s.store.get("pibench:termination"))
        reason = s.store.get("pibench:agent_error") or ""
        assert reason, (fault, where)
        assert s.scores and "pibench_scorer" in s.scores  # scored, not dropped


def test_every_agent_fault_is_a_scored_agent_error(tmp_path: Path):
    src = fault_source(tmp_path, FAULTS)
    logs = tmp_path / "logs"
    r, took = run(["-T", f"source={src}", "-T", f"agent={AGENT}", "--model", "none", "--timeout", "3"], logs)
    assert r.returncode == 0, r.stderr[-3000:]
    log, samples = outcomes(logs)
    check_every_fault_is_agent_error(log, samples, FAULTS, r)
    reason = lambda fault, where: samples[f"FAULT_{FAULTS.index((fault, where)):03d}"].store["pibench:agent_error"]
    assert "SystemExit" in reason("system_exit", "generate")
    assert "KeyboardInterrupt" in reason("keyboard_interrupt", "is_stop")
    assert "cannot be rendered" in reason("bad_str", "init_state")
    assert "did not return within 3 s" in reason("block", "generate")
    assert "nested deeper than 64 levels" in reason("deep", "generate")
    assert "too large to write" in reason("huge_int", "generate")
    assert "contains itself" in reason("cycle", "generate")
    assert took < 200  # the blocked agents' threads did not keep the process alive


@pytest.mark.slow
def test_agent_faults_through_the_protocol_model(tmp_path: Path):
    faults = [("system_exit", "generate"), ("exit_3", "init_state"), ("bad_str", "is_stop"),
              ("deep", "generate"), ("huge_int", "generate"), ("block", "generate")]
    src = fault_source(tmp_path, faults)
    logs = tmp_path / "logs"
    r, _ = run(["-T", f"source={src}", "--model", f"protocol/{AGENT}", "--timeout", "3"], logs)
    assert r.returncode == 0, r.stderr[-3000:]
    log, samples = outcomes(logs)
    check_every_fault_is_agent_error(log, samples, faults, r)


@pytest.mark.slow
def test_agent_faults_from_an_async_agenerate(tmp_path: Path):
    """BaseExceptions raised in a coroutine on the event loop: asyncio re-raises SystemExit and
    KeyboardInterrupt out of the loop unless they are caught before they leave the task."""
    faults = [(f, "generate") for f in RAISES]
    src = fault_source(tmp_path, faults)
    logs = tmp_path / "logs"
    r, _ = run(["-T", f"source={src}", "-T", "agent=tests.fault_agents:AsyncFaultAgent", "--model", "none"], logs)
    assert r.returncode == 0, r.stderr[-3000:]
    log, samples = outcomes(logs)
    check_every_fault_is_agent_error(log, samples, faults, r)


@pytest.mark.slow
def test_a_blocking_agent_does_not_hold_the_process(tmp_path: Path):
    """Ended by --time-limit (generate) or past stop()'s grace: the log is written and the
    process exits. Both blocked agents in one run: neither thread keeps the process alive."""
    faults = [("block", "generate"), ("block", "stop")]
    src = fault_source(tmp_path, faults)
    logs = tmp_path / "logs"
    r, took = run(["-T", f"source={src}", "-T", f"agent={AGENT}", "--model", "none", "--time-limit", "3"], logs,
                  timeout=120)
    log, samples = outcomes(logs)
    assert log.status == "success", (log.status, log.error, r.stderr[-2000:])
    assert sorted(samples) == [f"FAULT_{i:03d}" for i in range(len(faults))]
    assert took < 90


@pytest.mark.slow
def test_a_run_that_lost_samples_exits_non_zero_saying_what(tmp_path: Path):
    """An infrastructure failure ends the sample as an Inspect error and the log as `error`:
    `inspect eval` used to exit 0 all the same."""
    src = fault_source(tmp_path, [("unavailable", "generate"), ("none", "generate")])
    logs = tmp_path / "logs"
    r, _ = run(["-T", f"source={src}", "-T", f"agent={AGENT}", "--model", "none"], logs, timeout=120)
    assert r.returncode == 1, r.stderr[-2000:]
    lines = [line for line in r.stderr.splitlines() if line.startswith("pi-bench: the run lost samples")]
    assert len(lines) == 1 and "status 'error'" in lines[0], r.stderr[-2000:]
    # the same failure tolerated (--no-fail-on-error): the log is complete, the error is a row
    logs2 = tmp_path / "logs2"
    r2, _ = run(["-T", f"source={src}", "-T", f"agent={AGENT}", "--model", "none", "--no-fail-on-error"], logs2,
                timeout=120)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert "lost samples" not in r2.stderr


@pytest.mark.slow
def test_the_litellm_agent_whose_model_sends_unrecordable_arguments(tmp_path: Path):
    """The LiteLLM agent's model answers (offline: LiteLLM's mock_tool_calls) with arguments
    nested 260 levels: the log used to be lost to them, with every sample of the run; now they
    are a malformed call like any unreadable arguments."""
    deep: dict = {"leaf": 1}
    for _ in range(260):
        deep = {"x": deep}
    calls = [{"id": "c1", "type": "function",
              "function": {"name": "refund_order", "arguments": json.dumps({"order_id": "O-1", "amount": deep})}}]
    args = {"model_name": "openai/gpt-4o-mini", "api_key": "sk-test", "mock_tool_calls": calls}
    src = mini_copies(tmp_path, 2, "FAULT")
    logs = tmp_path / "logs"
    r, _ = run(["-T", f"source={src}", "-T", "agent=pibench_inspect.agents.litellm_agent:LiteLLMAgent",
                "-T", f"agent_args={json.dumps(args)}", "--model", "none"], logs, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    log, samples = outcomes(logs)
    assert log.status == "success" and len(samples) == 2
    for s in samples.values():
        assert s.error is None
        # text arguments a model sent are read by the one rule for every agent path: too deep to
        # read is a malformed call, returned to the model as a tool error and counted (the
        # mock repeats it until -T max_steps); the log keeps the sample either way
        assert s.store.get("pibench:termination") != "agent_error"
        assert full_score(s).metadata["malformed_calls"] >= 1
        errors = [m.error.message for m in s.messages if m.role == "tool" and m.error]
        assert errors and all("nested deeper than" in e for e in errors), errors[:2]
