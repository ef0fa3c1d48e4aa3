"""Inspect entry point: registers the tasks (`inspect eval pibench_inspect/pibench_retail` works
from any directory), the scorer and its metrics (so `inspect score LOG` rebuilds them from the
log) and the model providers. Not the hooks: Inspect imports this module in every run,
whatever its task, and lists every registered hook at start-up; they are registered when a
pi-bench task is built (task.register_hooks).

`finra`, `retail` and `helpdesk` are the earlier task names, kept as aliases of `pibench_finra`,
`pibench_retail` and `pibench_helpdesk`.
"""

# ruff: noqa: F401
from functools import wraps
from typing import Any, Callable

from inspect_ai import Task, task

from .finra import pibench_finra
from .helpdesk import pibench_helpdesk
from .pibench import pibench
from .providers import litellm
from .retail import pibench_retail
from .scoring.metrics import columns, domains, event_flags, headline, repeatability, robustness
from .scoring.scorer import pibench_scorer  # with the alias of its logged name (scoring/scorer.py)


def _alias(target: Callable[..., Task], name: str) -> Callable[..., Task]:
    @wraps(target)  # the same typed parameters and argument docs
    def alias(*args: Any, **kwargs: Any) -> Task:
        return target(*args, **kwargs)

    alias.__name__ = name
    return task(name=name)(alias)


finra = _alias(pibench_finra, "finra")
retail = _alias(pibench_retail, "retail")
helpdesk = _alias(pibench_helpdesk, "helpdesk")

