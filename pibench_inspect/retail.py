from pibench_inspect.task import domain_task, task


@task
@domain_task("retail")  # the -T arguments of task_args.TaskArgs, the Task built in task.py
def pibench_retail():
    """pi-bench retail domain: returns and refunds under a store's SOP."""
