"""Every domain's scenarios in one task.

    inspect eval pibench_inspect/pibench --model openai/gpt-4o-mini
    inspect eval pibench_inspect/pibench -T agent=oracle -T user=scripted --model none

The arguments are declared once, in pibench_inspect/task_args.py.
"""

from inspect_ai import Task, task

from pibench_inspect.task import build_task
from pibench_inspect.task_args import TaskArgs, task_arguments


@task
@task_arguments()  # the -T parameters of TaskArgs, validated into `args`
def pibench(args: TaskArgs) -> Task:
    """Every shipped domain's pi-bench scenarios (finra, retail, helpdesk)."""
    return build_task(None, args)
