"""IT helpdesk access control: a service-desk agent granting and revoking access.

    inspect eval pibench_inspect/pibench_helpdesk --model openai/gpt-4o-mini
    inspect eval pibench_inspect/pibench_helpdesk -T agent=oracle -T user=scripted --model none

The arguments are declared once, in pibench_inspect/task_args.py.
"""

from inspect_ai import Task, task

from pibench_inspect.task import build_task
from pibench_inspect.task_args import TaskArgs, task_arguments


@task
@task_arguments()  # the -T parameters of TaskArgs, validated into `args`
def pibench_helpdesk(args: TaskArgs) -> Task:
    """pi-bench IT helpdesk domain: access control at a service desk."""
    return build_task("helpdesk", args)
