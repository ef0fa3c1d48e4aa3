from pibench_inspect.task import domain_task, task


@task
@domain_task("helpdesk")  # the -T arguments of task_args.TaskArgs, the Task built in task.py
def pibench_helpdesk():
    """pi-bench IT helpdesk domain: access control at a service desk."""
