"""Every domain's scenarios in one task.

    inspect eval pibench_inspect/pibench.py --model openai/gpt-4o-mini

Task arguments (-T): see README "Task arguments".
"""

from typing import Any

from inspect_ai import Task, task

from pibench_inspect.task import pibench_task


@task
def pibench(**task_args: Any) -> Task:
    return pibench_task(None, **task_args)
