"""Retail returns and refunds: a store's customer-service agent under a returns SOP.

    inspect eval pibench_inspect/pibench_retail --model openai/gpt-4o-mini
    inspect eval pibench_inspect/pibench_retail -T agent=oracle -T user=scripted --model none

The arguments are declared once, in pibench_inspect/task_args.py.
"""

from inspect_ai import Task, task

from pibench_inspect.task import build_task
from pibench_inspect.task_args import TaskArgs, task_arguments


@task
@task_arguments()  # the -T parameters of TaskArgs, validated into `args`
def pibench_retail(args: TaskArgs) -> Task:
    """pi-bench retail domain: returns and refunds under a store's SOP."""
    return build_task("retail", args)
