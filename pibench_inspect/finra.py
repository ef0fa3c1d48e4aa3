from pibench_inspect.task import domain_task, task


@task
@domain_task("finra")  # the -T arguments of task_args.TaskArgs, the Task built in task.py
def pibench_finra():
    """pi-bench FINRA / AML domain: a broker-dealer's compliance operations analyst."""
