"""Every private Inspect AI name pibench-inspect uses, in one place.

Inspect offers public APIs for most of what we need (`get_model`, `model_roles`,
`sample_limits`, `messages_to_openai`, ...) and the rest of the package uses those. What is
below has no public equivalent in Inspect; each entry names why and was checked against
inspect-ai 0.3.258 (INSPECT_CHECKED). tests/test_inspect_internals.py calls every entry against
the installed Inspect, so an upgrade that moves or reshapes one fails there, by name, and
nowhere else. Keep this the only module importing `inspect_ai._*` or `inspect_ai.*._*`.
"""

from __future__ import annotations

from typing import Any, Callable

# checked against 0.3.258: the exception Inspect's CLI prints as a plain message (no traceback),
# and the test Inspect's own console uses for a cancelled sample's error text; neither is public
from inspect_ai._util.error import PrerequisiteError, is_cancellation_message  # noqa: F401

INSPECT_CHECKED = "0.3.258"
"""The Inspect version every entry below was read against."""

# checked against 0.3.258: `slice_dataset` (which applies `--sample-id`) lives in this module
# and warns through its logger ("sample id 'X' not found in dataset 'D'.")
SAMPLE_ID_LOGGER = "inspect_ai._eval.task.util"


def add_registry_alias(kind: str, name: str, obj: object) -> None:
    """Make `name` find `obj` in Inspect's registry too, keeping `obj`'s own registry info.

    Checked against 0.3.258: a log records our scorer by its unqualified name, and
    `registry_lookup` resolves unqualified names only among Inspect's own objects. The public
    API has no way to add a second name: `registry_add` (private too) would also retag the
    object with the alias as its name. So the registry dict is written to, only if free."""
    from inspect_ai._util.registry import _registry, registry_key

    _registry.setdefault(registry_key(kind, name), obj)  # type: ignore[arg-type]


def active_model() -> Any:
    """The model being evaluated, or None outside an eval.

    Checked against 0.3.258: public `get_model()` returns it too, but without one it falls back
    to INSPECT_EVAL_MODEL (creating a model) or raises; we need "none" as an answer."""
    from inspect_ai.model._model import active_model as current

    return current()


def bind_models(model: Any, roles: dict[str, Any]) -> None:
    """Make `model` the active model and `roles` the model roles of this context, as
    `inspect eval --model ... --model-role ...` does for a run.

    Checked against 0.3.258: Inspect sets both only inside its eval; no public setter exists
    (`model_roles()` is a getter)."""
    from inspect_ai.model import GenerateConfig
    from inspect_ai.model._model import init_active_model, init_model_roles

    init_active_model(model, GenerateConfig())
    init_model_roles(roles)


def active_generate_config() -> Any:
    """The run's GenerateConfig (`--timeout`, `--attempt-timeout`, ... as given to eval).

    Checked against 0.3.258: kept in a context variable with no public getter; a model's own
    `config` does not hold the run's values for models other than the active one."""
    from inspect_ai.model._generate_config import active_generate_config as current

    return current()


def eval_log_locations() -> dict[str, str]:
    """eval id -> where that task's log is written, for the tasks of the run in progress.

    Checked against 0.3.258: a task cancelled by Ctrl-C gets no `on_task_end` hook, and the
    run's end (`on_run_end`) then carries no logs, though the log was written (as cancelled);
    only Inspect's process-level eval registry (what `inspect ctl` reads, cleared once the run
    has ended, after `on_run_end`) knows where. No public API names a running task's log."""
    from inspect_ai._control.eval_state import get_eval_states

    return {state.eval_id: state.log_location for state in get_eval_states() if state.log_location}


def sample_time_is_up() -> bool:
    """Whether the running sample's `--time-limit` or `--working-limit` has run out (Inspect
    enforces both by cancelling the sample, so a solver sees a cancellation, not
    LimitExceededError).

    Checked against 0.3.258: the working-time monitor records its error on the active sample
    (`sample_active().limit_exceeded_error`), and the time limit is an anyio cancel scope
    (`_cancel_scope` of the public `sample_limits().time`); neither is public. Without the scope
    the public elapsed time says the same to within a tick."""
    from inspect_ai.log._samples import sample_active
    from inspect_ai.util import sample_limits

    active = sample_active()
    if active is not None and getattr(active, "limit_exceeded_error", None) is not None:
        return True  # the working-time monitor stopped the sample
    try:
        limit = sample_limits().time
    except RuntimeError:  # no sample running (the solver called directly)
        return False
    scope = getattr(limit, "_cancel_scope", None)
    if scope is not None:
        return bool(scope.cancel_called)
    return limit.limit is not None and limit.usage >= limit.limit - 0.01


def sample_id_patterns(predicate: Callable[..., Any]) -> list[str] | None:
    """The `--sample-id` patterns of the predicate Inspect filters a dataset with, or None when
    the predicate is another filter.

    Checked against 0.3.258: `slice_dataset` calls `dataset.filter(lambda sample:
    matcher.matches(sample.id))`; the matcher (a SampleIdMatcher with `patterns`) is only
    reachable through the lambda's closure."""
    cells = getattr(predicate, "__closure__", None) or ()
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if hasattr(value, "patterns"):
            return [str(p) for p in value.patterns]
    return None


def sample_id_matcher(sample_id: Any) -> Callable[[Any], bool]:
    """Whether a sample id is selected by `--sample-id` (lists and globs), as Inspect decides.

    Checked against 0.3.258: `sample_id_filter` is private; its normalisation of ids is what a
    copy would have to follow."""
    from inspect_ai._eval.task.util import sample_id_filter

    return sample_id_filter(sample_id).matches


def eval_sample_ids() -> list[str] | None:
    """The `--sample-id` patterns of the eval whose tasks are being built right now, or None (no
    `--sample-id`, or no eval: a task built before `eval()` is called).

    Checked against 0.3.258: Inspect builds a run's tasks inside `_eval_async_inner` (module
    `inspect_ai._eval.eval`), whose `sample_id` argument is `--sample-id`, and only later filters
    each task's dataset with it; nothing public carries it to the task. Knowing it, a task loads
    only the scenarios that run. Not finding it (a renamed function) only costs that: every
    scenario is loaded, as for a task built outside an eval."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_eval_async_inner" and frame.f_globals.get("__name__") == "inspect_ai._eval.eval":
            sample_id = frame.f_locals.get("sample_id")
            if sample_id is None:
                return None
            return [str(x) for x in (sample_id if isinstance(sample_id, (list, tuple)) else [sample_id])]
        frame = frame.f_back
    return None


def parse_tool_call(call_id: str, name: str, arguments: str | None, tools: list[Any]) -> Any:
    """A ToolCall from a model's text arguments, as Inspect's own providers read one.

    Checked against 0.3.258: `inspect_ai.model._providers.util.parse_tool_call` is what every
    provider imports; using it keeps the two readings from drifting apart."""
    from inspect_ai.model._providers.util import parse_tool_call as parse

    return parse(call_id, name, arguments, tools)


def display_type_initialized() -> bool:
    """Whether Inspect's display type was set (by `inspect eval`).

    Checked against 0.3.258: the public `display_type()` initialises it from INSPECT_DISPLAY
    when it was not set, so it cannot tell."""
    from inspect_ai.util._display import display_type_initialized as initialized

    return initialized()


def openai_chat_tools(tools: list[Any]) -> list[Any]:
    """Inspect tools as OpenAI chat-completion tool params.

    Checked against 0.3.258: public `inspect_ai.model` converts messages and outputs, not tools
    or tool choice."""
    from inspect_ai.model._openai import openai_chat_tools as convert

    return convert(tools)


def openai_chat_tool_choice(tool_choice: Any) -> Any:
    """An Inspect tool choice as the OpenAI chat-completion param (see openai_chat_tools)."""
    from inspect_ai.model._openai import openai_chat_tool_choice as convert

    return convert(tool_choice)


def model_output_from_openai(completion: Any, tools: list[Any]) -> Any:
    """A ModelOutput from an OpenAI ChatCompletion, its tool calls read against `tools`.

    Checked against 0.3.258: the public `model_output_from_openai` reads tool calls without the
    tools (`tools=[]`), so a lone-parameter tool's plain-text argument is not mapped onto it."""
    from inspect_ai.model._openai import chat_choices_from_openai
    from inspect_ai.model._openai import model_output_from_openai as convert

    return convert(completion, chat_choices_from_openai(completion, tools))
