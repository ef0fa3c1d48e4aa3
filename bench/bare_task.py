"""A bare Inspect task of the same shape as a pi-bench run (for bench/floor.py).

One sample per scenario id, each running the given number of `generate` turns on `mockllm`
(a user message before each), and a scorer that does nothing: what Inspect itself costs for
the same samples and turns, with no pi-bench code in the way.

    inspect eval bench/bare_task.py --model mockllm/model -T shape=SHAPE.json
SHAPE.json: {"SCENARIO_ID": turns, ...}
"""

from __future__ import annotations

import json

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser
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


@task
def bare(shape: str) -> Task:
    counts = json.loads(open(shape).read())
    samples = [Sample(id=sid, input="hello", metadata={"turns": n}) for sid, n in counts.items()]
    return Task(dataset=MemoryDataset(samples), solver=turns(), scorer=noop())

