"""A bare Inspect task of the same shape as a pi-bench run (for bench/floor.py).

One sample per scenario id, each running the given number of `generate` turns on `mockllm`
(a user message before each), and a scorer that does nothing: what Inspect itself costs for
the same samples and turns, with no pi-bench code in the way. The model's outputs carry `usage`:
without it Inspect counts tokens with a tokenizer it downloads, which fails offline, and a
bare run that failed at its first turn is no floor (bench/floor.py checks every run's log).

    inspect eval bench/bare_task.py --model mockllm/model -T shape=SHAPE.json
SHAPE.json: {"SCENARIO_ID": turns, ...}
"""

from __future__ import annotations

import json

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver


@solver
def turns():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        for i in range(int(state.metadata["turns"])):
            if i:
                state.messages.append(ChatMessageUser(content="go on"))
            state = await generate(state)
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
    samples = [Sample(id=sid, input="hello", metadata={"turns": n}) for sid, n in counts.items()]
    return Task(dataset=MemoryDataset(samples), solver=turns(), scorer=noop(),
                model=get_model("mockllm/model", custom_outputs=outputs()))

