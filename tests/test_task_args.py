"""A task argument is declared once (pibench_inspect/task_args.py): a field added to the
declaration is a typed, documented parameter of the task, reaches the validated arguments the
task and the conversation solver get, is recorded in the log, and a misspelling of it is an
error naming it -- with no other edit."""

from __future__ import annotations

import inspect as pyinspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from conftest import MINI, ROOT, run_eval

# the whole extension: one field more in the declaration, and a task made from it
EXTENDED = textwrap.dedent('''
    from inspect_ai import Task, task
    from pydantic import Field

    from pibench_inspect.task import build_task
    from pibench_inspect.task_args import TaskArgs, task_arguments


    class WithDummy(TaskArgs):
        dummy: int = Field(3, ge=0, description="A dummy argument of this test.")


    @task
    @task_arguments(WithDummy)
    def dummy_task(args: WithDummy) -> Task:
        """A task with one argument more."""
        return build_task(None, args)
''')


@pytest.fixture
def extended(tmp_path, monkeypatch):
    (tmp_path / "dummy_task.py").write_text(EXTENDED)
    monkeypatch.syspath_prepend(str(tmp_path))
    import dummy_task

    yield tmp_path / "dummy_task.py", dummy_task
    sys.modules.pop("dummy_task", None)


def test_a_declared_argument_is_a_documented_parameter_and_reaches_task_and_solver(extended):
    _, module = extended
    fn = module.dummy_task
    param = pyinspect.signature(fn).parameters["dummy"]
    assert (param.annotation, param.default) == (int, 3)
    assert "  dummy: A dummy argument of this test." in pyinspect.getdoc(fn)

    log = run_eval(fn(agent="oracle", user="scripted", source=str(MINI), dummy=9),
                   sample_id="MINI_001_REFUND_OK")
    assert log.status == "success"
    assert log.eval.task_args["dummy"] == 9  # what the viewer shows as the task's arguments
    assert log.eval.metadata["pibench"]["dummy"] == 9  # the validated arguments of the task
    assert log.plan.steps[0].params["config"]["dummy"] == 9  # the conversation solver's config


def test_a_bad_value_of_a_declared_argument_names_it(extended):
    from pibench_inspect.cli.refusal import Refusal

    _, module = extended
    with pytest.raises(Refusal, match=r"-T dummy=-1: Input should be greater than or equal to 0"):
        module.dummy_task(agent="oracle", user="scripted", source=str(MINI), dummy=-1)
    with pytest.raises(Refusal, match=r"-T dumy=1: unknown task argument \(did you mean -T dummy\?\)"):
        module.dummy_task(agent="oracle", user="scripted", source=str(MINI), dumy=1)


@pytest.mark.slow
def test_a_declared_argument_through_the_command_line(extended, tmp_path):
    """`-T dummy=9` is parsed as YAML by `inspect eval` and reaches the solver; `inspect list
    tasks` finds the task; a misspelt `-T dumy` stops the run naming it."""
    path, _ = extended
    inspect_bin = str(Path(sys.executable).parent / "inspect")
    listed = subprocess.run([inspect_bin, "list", "tasks", path.name], cwd=path.parent, capture_output=True, text=True)
    assert "dummy_task" in listed.stdout, listed.stderr

    def run(*values: str) -> subprocess.CompletedProcess:
        argv = [inspect_bin, "eval", f"{path}@dummy_task", "-T", "agent=oracle", "-T", "user=scripted",
                "-T", f"source={MINI}", *[x for v in values for x in ("-T", v)], "--model", "none",
                "--sample-id", "MINI_001_REFUND_OK", "--log-dir", str(tmp_path / "logs"), "--display", "none"]
        return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)

    ok = run("dummy=9")
    assert ok.returncode == 0, ok.stderr
    log = read_eval_log(str(next((tmp_path / "logs").glob("*.eval"))))
    assert log.eval.task_args["dummy"] == 9 and log.plan.steps[0].params["config"]["dummy"] == 9

    bad = run("dumy=9")
    assert bad.returncode != 0
    assert "-T dumy=9: unknown task argument (did you mean -T dummy?)" in bad.stdout + bad.stderr
