from pibench_inspect.task import domain_task, task


@task
@domain_task(None)  # the -T arguments of task_args.TaskArgs, the Task built in task.py
def pibench():
    """Every shipped domain's pi-bench scenarios (finra, retail, helpdesk) in one task."""
