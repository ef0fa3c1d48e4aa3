"""Retail returns and refunds: a customer-service representative.

    inspect eval pibench_inspect/retail.py --model openai/gpt-4o-mini
    inspect eval pibench_inspect/retail.py -T agent=oracle -T user=scripted --model none

Task arguments (-T): see README "Task arguments".
"""

from typing import Any

from inspect_ai import Task, task

from pibench_inspect.task import pibench_task


@task
def retail(**task_args: Any) -> Task:
    return pibench_task("retail", **task_args)
