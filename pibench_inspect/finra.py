"""FINRA / AML compliance: a broker-dealer's compliance operations analyst.

    inspect eval pibench_inspect/finra.py --model openai/gpt-4o-mini
    inspect eval pibench_inspect/finra.py -T agent=oracle -T user=scripted --model none

Task arguments (-T): see README "Task arguments".
"""

from typing import Any

from inspect_ai import Task, task

from pibench_inspect.task import pibench_task


@task
def finra(**task_args: Any) -> Task:
    return pibench_task("finra", **task_args)
