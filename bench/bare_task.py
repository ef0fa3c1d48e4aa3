"""A bare Inspect task of the same shape as a pi-bench run (for bench/floor.py).

One sample per scenario id, each running the given number of `generate` turns on `mockllm`
(a user message before each), and a scorer that does nothing: what Inspect itself costs for
the same samples and turns, with no pi-bench code in the way. The model's outputs carry `usage`:
without it Inspect counts tokens with a tokenizer it downloads, which fails offline, and a
bare run that failed at its first turn is no floor (bench/floor.py checks every run's log).

    inspect eval bench/bare_task.py --model mockllm/model -T shape=SHAPE.json
SHAPE.json: {"SCENARIO_ID": turns, ...}, or {"SCENARIO_ID": [[chars, ...], ...], ...}: for each
agent turn, the length of each tool result the pi-bench agent got in that turn. With the second
form each turn's `generate` is followed by the same number of calls of a no-op tool, through
Inspect's `execute_tools`, returning results of those lengths: Inspect's own cost of the tool
calls, which a pi-bench run makes and the first form leaves out (bench/tool_path.py measures it
per call).
"""

from __future__ import annotations

import json

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput, ModelUsage, execute_tools, get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolCall, ToolDef


async def noop_tool(chars: int) -> str:
    """Return a result of the given length.

    Args:
        chars: the result's length.
    """
    return "x" * int(chars)


NOOP = [ToolDef(noop_tool, name="noop_tool")]


@solver
def turns():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        calls = state.metadata.get("calls") or [[] for _ in range(int(state.metadata["turns"]))]
        for i, results in enumerate(calls):
            if i:
                state.messages.append(ChatMessageUser(content="go on"))
            state = await generate(state)
            if results:
                state.messages.append(ChatMessageAssistant(content="", model="mockllm/model", tool_calls=[
                    ToolCall(id=f"t{i}_{k}", function="noop_tool", arguments={"chars": n})
                    for k, n in enumerate(results)]))
                state.messages.extend((await execute_tools(state.messages, NOOP)).messages)
        return state

    return solve


@scorer(metrics=[mean()])
def noop():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=1.0)

    return score


def outputs():
    """mockllm's replies, each with its usage (so no tokenizer is needed)."""
    while True:
        out = ModelOutput.from_content(model="mockllm/model", content="ok")
        out.usage = ModelUsage(input_tokens=40, output_tokens=2, total_tokens=42)
        yield out


@task
def bare(shape: str) -> Task:
    counts = json.loads(open(shape).read())
    samples = [Sample(id=sid, input="hello", metadata={"turns": len(n), "calls": n} if isinstance(n, list) else
                      {"turns": n}) for sid, n in counts.items()]
    return Task(dataset=MemoryDataset(samples), solver=turns(), scorer=noop(),
                model=get_model("mockllm/model", custom_outputs=outputs()))

