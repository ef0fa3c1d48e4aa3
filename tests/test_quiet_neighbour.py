"""Issue 27: installing pi-bench does not change other tasks' Inspect runs; its hooks are on
only in runs of pi-bench tasks.

Inspect imports every `inspect_ai` entry point when a registry search finds nothing (the hooks
at the start of every run): ours must then import nothing of the package. Each run here is the
real `inspect` command, started through its console-script entry point in a Python that writes
down at exit which of our modules were imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from inspect_ai.log import list_eval_logs, read_eval_log

from conftest import ROOT

# the `inspect` console script, run as it is installed, with an exit hook that writes the set of
# imported top-level modules to the file named by QUIET_MODULES
INSPECT = """
import atexit, json, os, sys
from importlib.metadata import entry_points

def written():
    with open(os.environ["QUIET_MODULES"], "w") as f:
        json.dump(sorted({m.split(".")[0] for m in sys.modules} | set(sys.modules)), f)

atexit.register(written)
sys.argv = ["inspect", *sys.argv[1:]]
sys.exit(entry_points(group="console_scripts", name="inspect")[0].load()())
"""
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


def our_entry_point() -> str:
    """The module our installed `inspect_ai` entry point names (the installed metadata's)."""
    (ep,) = entry_points(group="inspect_ai", name="pibench_inspect")
    return ep.value


def _inspect(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run `inspect ARGS` in `cwd`: the finished process and the modules it had imported."""
    modules = cwd / "modules.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "QUIET_MODULES": str(modules)}
    env.pop("INSPECT_LOG_LEVEL", None)
    r = subprocess.run([sys.executable, "-c", INSPECT, *args], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=600)
    return r, set(json.loads(modules.read_text())) if modules.exists() else set()


def test_the_installed_entry_point_is_the_package_free_module():
    # an install made before the entry point moved still names the old module: reinstall it
    assert our_entry_point() == "pibench_inspect_entry", (
        f"the installed metadata names {our_entry_point()!r}: run `pip install -e .` again")


def test_an_unrelated_tasks_run_shows_nothing_of_ours(tmp_path):
    (tmp_path / "tiny.py").write_text(TINY)
    r, modules = _inspect(["eval", "tiny.py", "--model", "none", "--display", "plain", "--log-dir", "logs"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    # Inspect did load our entry point (every entry point, as in every run), and that imported
    # nothing of the package: no task, scorer, provider or litellm
    assert our_entry_point().split(":")[0] in modules, sorted(modules)
    assert "pibench_inspect" not in modules, sorted(m for m in modules if m.startswith("pibench"))
    assert "litellm" not in modules
    out = r.stdout + r.stderr
    assert "tiny" in out  # the run's own output is there
    assert "pibench" not in out.lower() and "hooks enabled" not in out, out[-3000:]
    log = read_eval_log(list_eval_logs(str(tmp_path / "logs"))[0].name)
    assert log.status == "success" and len(log.samples) == 2


def test_a_pibench_run_from_another_folder_has_its_hooks(tmp_path):
    r, modules = _inspect(["eval", "pibench_inspect/pibench", "-T", "agent=oracle", "-T", "user=scripted", "--model", "none",
                  "--sample-id", "RET_002_OPENED_HEADPHONES_RESTOCKING_FEE", "--display", "none", "--log-dir", "logs"],
                 tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "pibench_inspect" in modules  # the task's own run imports the package, and its hooks
    # the run-end summary is our hook's (reports/console.RunSummary)
    assert "pi-bench: 1 sample(s) of pibench; 0 error" in r.stderr, r.stderr[-3000:]
    # no report of DuckDB objects alive at exit (duckdb >= 2's bindings print ~100 lines of
    # "nanobind: leaked instance ..." for each one the package's caches still held)
    assert "leaked" not in r.stderr and "nanobind" not in r.stderr, r.stderr[-3000:]
    log = read_eval_log(list_eval_logs(str(tmp_path / "logs"))[0].name)
    assert log.status == "success" and log.samples[0].scores["pibench_scorer"].value["all_passed"] == 1.0
