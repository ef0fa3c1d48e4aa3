"""A bare Inspect task for bench/concurrency.py --bare: Inspect alone on a pi-bench run's shape.

One sample per scenario id, each making as many model calls as the pi-bench sample made, with
the scenario's system prompt and its tools (schemas only) on every call; no tool execution, no
user simulator, no state, a no-op scorer. A file of its own: `inspect eval FILE` runs every
task in a file, and bench/floor.py runs bare_task.py.

    inspect eval bench/bare_chat.py --model pibench-standin/replay -M reply=text -T shape=SHAPE.json
SHAPE.json: {"SCENARIO_ID": model calls, ...}
"""

from __future__ import annotations

import json

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver


@scorer(metrics=[mean()])
def chat_noop():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=1.0)

    return score


@solver
def calls_with_tools(tools_by_id: dict):
    """`turns` generate calls, each with the sample's tools, as a pi-bench agent makes them."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        tools = tools_by_id[str(state.sample_id)]
        for i in range(int(state.metadata["turns"])):
            if i:
                state.messages.append(ChatMessageUser(content="go on"))
            state.output = await get_model().generate(state.messages, tools)
            state.messages.append(state.output.message)
        return state

    return solve


@task
def bare_chat(shape: str, source: str | None = None) -> Task:
    """Inspect's floor for the concurrency bench: per sample, the scenario's system prompt and
    its tools (16 schemas on the shipped domains) on each of as many model calls as the pi-bench
    sample made, no tool execution, no user simulator, no state, a no-op scorer. Only the task
    build uses pi-bench (prompt text and tool schemas); nothing of it runs in the samples."""
    from inspect_ai.model import ChatMessageSystem

    from pibench_inspect.conversation.prompts import system_prompt
    from pibench_inspect.environment.merge import domain_document
    from pibench_inspect.environment.state import StateDB
    from pibench_inspect.environment.tools import build_tools
    from pibench_inspect.scenario.catalog import load_set

    counts = json.loads(open(shape).read())
    scenario_set = load_set(source)
    samples, tools_by_id = [], {}
    for sid, n in counts.items():
        scenario, domain = scenario_set.resolve(sid)
        # the tools are only described to the model, never called: a state to bind them to
        tools_by_id[sid] = build_tools(domain, scenario, StateDB(domain_document(domain, scenario), allow_sql=False))
        samples.append(Sample(id=sid, input=[ChatMessageSystem(content=system_prompt(scenario, domain)),
                                             ChatMessageUser(content="hello")], metadata={"turns": n}))
    return Task(dataset=MemoryDataset(samples), solver=calls_with_tools(tools_by_id), scorer=chat_noop())
