"""The private Inspect names pibench-inspect relies on, called against the installed Inspect.

Every entry of pibench_inspect/runtime/inspect_internals.py is exercised here for the
behaviour we rely on, so an Inspect upgrade that moves or reshapes one fails in this file, by
name. The wrapper is the only module of the package allowed to reach into Inspect's private
modules; outside the package, the entry point (pibench_inspect_entry.py) writes the registry
itself, since importing the wrapper would import the package (tests/test_entry_point.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import re
import tomllib
from pathlib import Path

import anyio
import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, get_model, model_roles
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolFunction, ToolInfo, ToolParam, ToolParams
from inspect_ai.util import registry_create

import inspect_ai
from pibench_inspect.runtime import inspect_internals as ii

ROOT = Path(__file__).resolve().parents[1]
PRIVATE = re.compile(r"inspect_ai(\.[A-Za-z0-9_]+)*\._")


def test_only_the_wrapper_reaches_into_inspect_private_modules() -> None:
    found = []
    # and the entry point, which may not import the package (tests/test_entry_point.py checks
    # the registry names it writes)
    for path in sorted((ROOT / "pibench_inspect").rglob("*.py")):
        if path.name == "inspect_internals.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PRIVATE.search(line.replace("inspect_ai.__version__", "")):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "private Inspect names outside runtime/inspect_internals.py:\n" + "\n".join(found)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def test_the_installed_inspect_is_in_the_range_we_accept_and_the_pin_is_the_checked_version() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in deps if d.startswith("inspect-ai"))
    low = re.search(r">=([\d.]+)", spec)
    high = re.search(r"<([\d.]+)", spec)
    assert low and high, f"pyproject.toml should accept a range of inspect-ai, not {spec!r}"
    installed = _version(inspect_ai.__version__)
    assert _version(low.group(1)) <= installed < _version(high.group(1)), (inspect_ai.__version__, spec)
    pins = (ROOT / "constraints.txt").read_text()
    assert f"inspect-ai=={ii.INSPECT_CHECKED}\n" in pins  # the tested set is the checked one


def test_prerequisite_error_and_cancellation_message_are_inspects() -> None:
    from inspect_ai._eval.task.util import slice_dataset

    with pytest.raises(ii.PrerequisiteError):  # what Inspect raises for a --sample-id matching nothing
        slice_dataset(MemoryDataset([Sample(input="x", id="a")]), None, "zzz")
    assert ii.is_cancellation_message("CancelledError()")
    assert not ii.is_cancellation_message("ValueError('x')")


def test_a_registry_alias_finds_the_object_and_keeps_its_own_name() -> None:
    from inspect_ai.scorer import Score, Target, mean, scorer
    from inspect_ai.util import registry_info

    @scorer(metrics=[mean()], name="internals_probe_scorer")
    def probe(value: float = 1.0):  # type: ignore[no-untyped-def]
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value=value)

        return score

    ii.add_registry_alias("scorer", "internals_probe_alias", probe)
    made = registry_create("scorer", "internals_probe_alias", value=2.0)
    assert registry_info(made).name == "internals_probe_scorer"  # created by the alias, named as itself
    assert registry_info(probe).name == "internals_probe_scorer"

    @scorer(metrics=[mean()], name="internals_other_scorer")
    def other():  # type: ignore[no-untyped-def]
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value=0)

        return score

    ii.add_registry_alias("scorer", "internals_probe_alias", other)  # a taken name is left alone
    assert registry_info(registry_create("scorer", "internals_probe_alias")).name == "internals_probe_scorer"


def test_bound_models_are_the_active_model_and_roles_of_the_context_only() -> None:
    assert ii.active_model() is None  # outside an eval

    def inside() -> None:
        m = get_model("mockllm/model")
        ii.bind_models(m, {"user": m})
        assert ii.active_model() is m
        assert get_model() is m and get_model(role="user") is m and model_roles() == {"user": m}
        assert ii.active_generate_config() == GenerateConfig()

    contextvars.copy_context().run(inside)
    assert ii.active_model() is None and model_roles() == {}


def test_inside_an_eval_the_active_model_config_and_limits_are_read() -> None:
    from inspect_ai.log._samples import sample_active
    from inspect_ai.util import sample_limits

    seen: dict[str, object] = {}

    @solver
    def probe():  # type: ignore[no-untyped-def]
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            seen["model"] = ii.active_model() is get_model()
            seen["attempt_timeout"] = ii.active_generate_config().attempt_timeout
            seen["working_error"] = sample_active().limit_exceeded_error  # type: ignore[union-attr]
            seen["scope"] = hasattr(sample_limits().time, "_cancel_scope")
            seen["up_before"] = ii.sample_time_is_up()
            try:
                await anyio.sleep(5)
            finally:
                seen["up_after"] = ii.sample_time_is_up()
            return state

        return solve

    task = Task(dataset=[Sample(input="x", id="s")], solver=probe(), time_limit=1)
    [log] = eval(task, model="mockllm/model", attempt_timeout=7, display="none", log_dir=None)
    assert seen == {"model": True, "attempt_timeout": 7, "working_error": None, "scope": True,
                    "up_before": False, "up_after": True}, seen
    assert log.samples and log.samples[0].limit is not None and log.samples[0].limit.type == "time"


def test_a_running_tasks_log_location_is_known_until_the_run_ends(tmp_path: Path) -> None:
    seen: dict[str, str] = {}

    @solver
    def probe():  # type: ignore[no-untyped-def]
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            seen.update(ii.eval_log_locations())
            return state

        return solve

    [log] = eval(Task(dataset=[Sample(input="x", id="s")], solver=probe()), model="mockllm/model",
                 display="none", log_dir=str(tmp_path))
    assert seen == {log.eval.eval_id: log.location}, (seen, log.location)
    assert ii.eval_log_locations() == {}  # the run is over


def test_sample_time_is_up_is_false_outside_a_sample() -> None:
    assert ii.sample_time_is_up() is False


def test_the_sample_id_predicate_gives_up_its_patterns(caplog: pytest.LogCaptureFixture) -> None:
    from inspect_ai._eval.task.util import slice_dataset

    predicates = []

    class Seeing(MemoryDataset):
        def filter(self, predicate, name=None):  # type: ignore[no-untyped-def,override]
            predicates.append(predicate)
            return super().filter(predicate, name)

    data = Seeing([Sample(input="x", id=i) for i in ("alpha", "beta", "gamma")], name="probe")
    with caplog.at_level(logging.WARNING, logger=ii.SAMPLE_ID_LOGGER):
        out = slice_dataset(data, None, ["al*", "gamma", "nope"])
    assert [s.id for s in out] == ["alpha", "gamma"]
    assert ii.sample_id_patterns(predicates[0]) == ["al*", "gamma", "nope"]
    assert any("sample id 'nope' not found" in r.getMessage() and r.name == ii.SAMPLE_ID_LOGGER
               for r in caplog.records)
    assert ii.sample_id_patterns(lambda s: True) is None  # another filter
    matches = ii.sample_id_matcher(["al*", 3])
    assert matches("alpha") and matches(3) and not matches("beta")


def test_a_task_built_by_eval_reads_its_sample_ids(tmp_path: Path) -> None:
    """The `--sample-id` of the eval building a task, before Inspect filters the dataset with it."""
    from inspect_ai import task

    seen: list[object] = []

    @task
    def recording() -> Task:
        seen.append(ii.eval_sample_ids())
        return Task(dataset=MemoryDataset([Sample(id=i, input="x") for i in ("alpha", "beta")]))

    eval(recording, model="mockllm/model", sample_id=["al*"], display="none", log_dir=str(tmp_path))
    eval(recording, model="mockllm/model", display="none", log_dir=str(tmp_path))
    assert seen == [["al*"], None]
    assert ii.eval_sample_ids() is None  # outside an eval


def _lone_param_tool() -> ToolInfo:
    return ToolInfo(name="lookup", description="look up",
                    parameters=ToolParams(properties={"query": ToolParam(type="string")}, required=["query"]))


def test_tool_calls_are_read_as_inspects_providers_read_them() -> None:
    call = ii.parse_tool_call("c1", "lookup", "plain words", [_lone_param_tool()])
    assert call.arguments == {"query": "plain words"} and not call.parse_error
    bad = ii.parse_tool_call("c2", "lookup", "{not json", [])
    assert bad.parse_error


def test_display_type_initialized_reads_inspects_setting() -> None:
    from inspect_ai.util import _display

    assert ii.display_type_initialized() is (_display._display_type is not None)


def test_openai_conversions_of_tools_choice_and_output() -> None:
    from inspect_ai.model import model_output_from_openai as public_output
    from openai.types.chat import ChatCompletion

    [tool] = ii.openai_chat_tools([_lone_param_tool()])
    assert tool["type"] == "function" and tool["function"]["name"] == "lookup"
    assert tool["function"]["parameters"]["properties"]["query"]["type"] == "string"
    assert ii.openai_chat_tool_choice("any") == "required"
    assert ii.openai_chat_tool_choice(ToolFunction(name="lookup")) == {"type": "function", "function": {"name": "lookup"}}

    completion = ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "plain words"}}]}}],
    })
    output = ii.model_output_from_openai(completion, [_lone_param_tool()])
    assert output.message.tool_calls[0].arguments == {"query": "plain words"}  # type: ignore[index]
    # why the wrapper: the public conversion reads the same call without the tools
    public = asyncio.run(public_output(completion))
    assert public.message.tool_calls[0].arguments == {}  # type: ignore[index]
