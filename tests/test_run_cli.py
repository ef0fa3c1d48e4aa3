"""`pi run` / `pi run-domain` (the original CLI's flags on Inspect) and solo mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inspect_ai.log import list_eval_logs, read_eval_log

from conftest import MINI, run_eval
from pibench_inspect.conversation.solver import TERMINATION, USER_MODEL
from conftest import registered

PI = str(Path(sys.executable).with_name("pi"))


def test_solo_mode_has_no_simulated_user():
    log = run_eval(registered(source=str(MINI), agent="oracle", user="solo", scenarios="MINI_002_FINAL_SALE"))
    s = log.samples[0]
    assert [m.role for m in s.messages].count("user") == 1
    assert s.store[TERMINATION] == "agent_stop" and s.store[USER_MODEL] == "solo"
    assert s.scores["pibench_scorer"].value["all_passed"] == 1.0


@pytest.mark.slow
def test_pi_run_one_file(tmp_path):
    f = MINI / "scenarios" / "mini" / "mini_003_big_order.json"
    r = subprocess.run([PI, "run", str(f), "--agent", "oracle", "--trials", "2", "--log-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    log = read_eval_log(list_eval_logs(str(tmp_path))[0])
    assert {s.id for s in log.samples} == {"MINI_003_BIG_ORDER"} and len(log.samples) == 2
    # the registered task by name, with its arguments: inspect eval-retry and inspect score find it
    assert log.eval.task == "pibench_inspect/pibench" and log.eval.task_args["agent"] == "oracle"
    assert log.eval.config.epochs == 2
    assert log.samples[0].store[USER_MODEL] == "solo"


@pytest.mark.slow
def test_pi_run_domain_no_solo_uses_scripted_user(tmp_path):
    r = subprocess.run([PI, "run-domain", "mini", "--source", str(MINI), "--agent", "nothing", "--concurrency", "3",
                        "--log-dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    log = read_eval_log(list_eval_logs(str(tmp_path))[0])
    assert len(log.samples) == 3 and all(s.store[USER_MODEL] == "scripted" for s in log.samples)


def test_pi_run_needs_an_agent():
    r = subprocess.run([PI, "run-domain", "mini", "--source", str(MINI)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "--agent-llm" in (r.stderr + r.stdout)
