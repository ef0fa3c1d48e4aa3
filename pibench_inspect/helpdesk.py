"""IT helpdesk access control: a Tier 1 service-desk analyst.

    inspect eval pibench_inspect/helpdesk.py --model openai/gpt-4o-mini
    inspect eval pibench_inspect/helpdesk.py -T agent=oracle -T user=scripted --model none

Task arguments (-T): see README "Task arguments".
"""

from typing import Any

from inspect_ai import Task, task

from pibench_inspect.task import pibench_task


@task
def helpdesk(**task_args: Any) -> Task:
    return pibench_task("helpdesk", **task_args)
