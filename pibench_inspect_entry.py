"""pibench-inspect's Inspect entry point (pyproject.toml, `[project.entry-points.inspect_ai]`).

Inspect imports every `inspect_ai` entry point in every run, whatever its task: a registry
search that finds nothing (the hooks, at the start of each run) loads them all. So this module
sits outside the package and imports nothing of it; installing pi-bench leaves the runs of
other tasks alone (tests/test_quiet_neighbour.py). It registers a stand-in under each name the
package registers; when Inspect calls one, the stand-in imports the real object's
module (which registers the real object under the same name, in the stand-in's place) and
hands the call over:

* the tasks `pibench_inspect/pibench`, `pibench_finra`, `pibench_retail` and `pibench_helpdesk`
  (`inspect eval pibench_inspect/pibench_retail` from any directory), and `finra`, `retail` and
  `helpdesk`, the earlier names, kept as aliases;
* the conversation solver, the scorer and its metrics, so that `inspect score LOG` rebuilds them from the log; the
  scorer under its logged name `pibench_scorer` too (scoring/scorer.py says why);
* the model providers `litellm/<model>` and `protocol/<module:Class>`.

Not the hooks: they are registered when a pi-bench task is built (task.register_hooks), since
Inspect lists every registered hook at the start of every run.

A stand-in takes any arguments and the real object checks them: a task's `-T` arguments are
validated by the real task (a misspelt name is an error naming it), which also records them
for the log; what Inspect gets back is the real object's. tests/test_entry_point.py checks that
these names are exactly the ones the package registers.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable

from inspect_ai import Task
from inspect_ai.scorer import Metric, Scorer
from inspect_ai.solver import Solver
from inspect_ai.util import RegistryInfo

PACKAGE = "pibench_inspect"

# registered name (under pibench_inspect/) -> "module:attribute" of the real object
TASKS = {
    "pibench": "pibench_inspect.pibench:pibench",
    "pibench_finra": "pibench_inspect.finra:pibench_finra",
    "pibench_retail": "pibench_inspect.retail:pibench_retail",
    "pibench_helpdesk": "pibench_inspect.helpdesk:pibench_helpdesk",
    # the earlier task names
    "finra": "pibench_inspect.finra:pibench_finra",
    "retail": "pibench_inspect.retail:pibench_retail",
    "helpdesk": "pibench_inspect.helpdesk:pibench_helpdesk",
}
# the conversation (a log's plan names it)
SOLVER = "pibench_inspect.conversation.solver:conversation"
SCORER = "pibench_inspect.scoring.scorer:pibench_scorer"  # registered and logged as pibench_scorer
METRICS = {
    name: f"pibench_inspect.scoring.metrics:{attribute}"
    for name, attribute in {
        "headline": "headline",
        "compliance": "compliance",
        "overall": "overall_score",
        "policy": "policy",
        "understanding": "understanding",
        "execution": "execution",
        "boundaries": "boundaries",
        "other_columns": "other_columns",
        "nl_tier": "nl_tier",
        "domains": "domains",
        "flags": "flags",
        "runs": "runs",
        "terminations": "terminations",
        "pass_k": "pass_k",
        "repeatability": "repeatability",
        "envelopes": "envelopes",
        "pressure": "pressure",
    }.items()
}
MODEL_APIS = {
    "litellm": "pibench_inspect.providers:litellm",
    "protocol": "pibench_inspect.providers:protocol",
}


def real(target: str) -> Callable[..., Any]:
    """The object `target` ("module:attribute") names, its module imported."""
    module, attribute = target.split(":")
    return getattr(import_module(module), attribute)


def stand_in(name: str, target: str, returns: type | None) -> Callable[..., Any]:
    """A callable that calls `target` with its arguments; `returns` is the return annotation
    by which Inspect's registry_create tells a factory (a Task, Scorer, Metric)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return real(target)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"Stand-in for {target}: imports it on the first call and hands each call to it."
    # the real object's module: Inspect finds the distribution that ships a task by its module
    # (the log's packages), and an earlier task name stays a stand-in for the whole run
    call.__module__ = target.split(":")[0]
    call.stand_in_for = target  # type: ignore[attr-defined]
    call.__annotations__ = {"return": returns} if returns else {}
    return call


def register(kind: str, name: str, target: str, returns: type | None = None, *, metadata: dict[str, Any] | None = None,
             logged_as: str | None = None) -> None:
    """Register the stand-in for `target` as `pibench_inspect/NAME` of `kind`, unless the real
    object is already registered there (the package imported before Inspect loaded this
    module); and under `logged_as` too, if that name is free.

    Checked against Inspect 0.3.258 (`inspect_ai._util.registry`): the public decorators name an
    object after the top-level module that defines it (here `pibench_inspect_entry/...`), so the
    registry is written to directly, as the decorators do (registry_add) and as
    runtime/inspect_internals.add_registry_alias does for a second name (tests/test_entry_point.py
    checks the names and what the stand-ins give)."""
    from inspect_ai._util.registry import _registry, registry_add, registry_key

    info = RegistryInfo(type=kind, name=f"{PACKAGE}/{name}", metadata=metadata or {})  # type: ignore[arg-type]
    key = registry_key(info.type, info.name)
    if key not in _registry:
        registry_add(stand_in(name, target, returns), info)
    if logged_as:
        _registry.setdefault(registry_key(info.type, logged_as), _registry[key])


for _name, _target in TASKS.items():
    # params: what Inspect's @task records for a function taking (*args, **kwargs); Inspect then
    # passes every -T argument on, as it does to the real tasks (they take **unknown)
    register("task", _name, _target, Task, metadata={"attribs": {}, "params": ["args", "kwargs"]})
register("solver", "conversation", SOLVER, Solver)
register("scorer", "pibench_scorer", SCORER, Scorer, logged_as="pibench_scorer")
for _name, _target in METRICS.items():
    register("metric", _name, _target, Metric)  # type: ignore[arg-type]
for _name, _target in MODEL_APIS.items():
    register("modelapi", _name, _target)
