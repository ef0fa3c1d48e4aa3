"""A bare Inspect task of the same shape as a pi-bench run (for bench/floor.py).

One sample per scenario id, each running the given number of `generate` turns on `mockllm`
(a user message before each), and a scorer that does nothing: what Inspect itself costs for
the same samples and turns, with no pi-bench code in the way.

    inspect eval bench/bare_task.py --model mockllm/model -T shape=SHAPE.json
SHAPE.json: {"SCENARIO_ID": turns, ...}

With a shape that also lists each sample's tools and tool calls ({"SCENARIO_ID": {"turns": N,
"tools": [{name, description, parameters}], "calls": [{function, arguments, result}]}}), each
sample also makes the same tool calls through Inspect's `execute_tools`, on tools with the same
names and parameter schemas that return the recorded result: Inspect's own cost for the tool
calls of the run, which the issue's bare task (no tools) leaves on pi-bench's side.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput, ModelUsage, execute_tools, get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolCall, ToolDef, ToolParams


def replay_tools(tools: list[dict], results: deque) -> list[ToolDef]:
    def make(name: str):
        async def run(**kwargs: Any) -> str:
            return results.popleft() if results else ""

        return run

    return [ToolDef(make(t["name"]), name=t["name"], description=t["description"] or t["name"],
                    parameters=ToolParams.model_validate(t["parameters"])) for t in tools]


@solver
def turns():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        calls = state.metadata.get("calls") or []
        results = deque(c["result"] for c in calls)
        tools = replay_tools(state.metadata.get("tools") or [], results)
        for i in range(int(state.metadata["turns"])):
            if i:
                state.messages.append(ChatMessageUser(content="go on"))
            state = await generate(state)
            if i < len(calls):
                c = calls[i]
                call = ToolCall(id=f"call_{i}", function=c["function"], arguments=c["arguments"])
                state.messages.append(ChatMessageAssistant(content="", tool_calls=[call]))
                out = await execute_tools(state.messages, tools)
                state.messages.extend(out.messages)
        return state

    return solve


@scorer(metrics=[mean()])
def noop():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=1.0)

    return score


def replies():
    """mockllm's replies with `usage` set: without it mockllm counts tokens with a tokenizer
    that is downloaded (no network here), and that count is no part of Inspect's floor."""
    while True:
        out = ModelOutput.from_content("mockllm/model", "Default output from mockllm/model")
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        yield out


@task
def bare(shape: str) -> Task:
    counts = json.loads(open(shape).read())
    samples = [
        Sample(id=sid, input="hello", metadata=spec if isinstance(spec, dict) else {"turns": spec})
        for sid, spec in counts.items()
    ]
    return Task(dataset=MemoryDataset(samples), solver=turns(), scorer=noop(),
                model=get_model("mockllm/model", custom_outputs=replies()))
