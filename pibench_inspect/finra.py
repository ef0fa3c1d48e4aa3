"""FINRA / AML compliance: a broker-dealer's compliance operations analyst.

    inspect eval pibench_inspect/pibench_finra --model openai/gpt-4o-mini
    inspect eval pibench_inspect/pibench_finra -T agent=oracle -T user=scripted --model none

The arguments are declared once, in pibench_inspect/task_args.py.
"""

from inspect_ai import Task, task

from pibench_inspect.task import build_task
from pibench_inspect.task_args import TaskArgs, task_arguments


@task
@task_arguments()  # the -T parameters of TaskArgs, validated into `args`
def pibench_finra(args: TaskArgs) -> Task:
    """pi-bench FINRA / AML domain: a broker-dealer's compliance operations analyst."""
    return build_task("finra", args)
