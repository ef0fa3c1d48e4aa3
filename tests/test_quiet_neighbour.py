"""Issue 27: installing pi-bench does not change other tasks' Inspect runs; its hooks are on
only in runs of pi-bench tasks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from inspect_ai.log import list_eval_logs, read_eval_log

from conftest import ROOT

INSPECT = str(Path(sys.executable).with_name("inspect"))
TINY = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver


@solver
def say():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return state

    return solve


@scorer(metrics=[mean()])
def one():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=1.0)

    return score


@task
def tiny():
    return Task(dataset=[Sample(input="hi", target="hi"), Sample(input="ho", target="ho")], solver=say(), scorer=one())
'''


def _inspect(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("INSPECT_LOG_LEVEL", None)
    return subprocess.run([INSPECT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_an_unrelated_tasks_run_shows_nothing_of_ours(tmp_path):
    (tmp_path / "tiny.py").write_text(TINY)
    r = _inspect(["eval", "tiny.py", "--model", "none", "--display", "plain", "--log-dir", "logs"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    assert "tiny" in out  # the run's own output is there
    assert "pibench" not in out.lower() and "hooks enabled" not in out, out[-3000:]
    log = read_eval_log(list_eval_logs(str(tmp_path / "logs"))[0].name)
    assert log.status == "success" and len(log.samples) == 2


def test_a_pibench_run_from_another_folder_has_its_hooks(tmp_path):
    r = _inspect(["eval", "pibench_inspect/pibench", "-T", "agent=oracle", "-T", "user=scripted", "--model", "none",
                  "--sample-id", "RET_002_OPENED_HEADPHONES_RESTOCKING_FEE", "--display", "none", "--log-dir", "logs"],
                 tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    # the run-end summary is our hook's (reports/console.RunSummary)
    assert "pibench pibench: 1 sample(s); 0 error" in r.stderr, r.stderr[-3000:]
    log = read_eval_log(list_eval_logs(str(tmp_path / "logs"))[0].name)
    assert log.status == "success" and log.samples[0].scores["pibench_scorer"].value["all_passed"] == 1.0
