"""What Inspect's own tool-call path costs, with no pi-bench code in the way (why bench/floor.py's
targets compare pi-bench with a bare task that makes the same tool calls, not one that calls none).

Two bare tasks of the same samples and turns, run alternately as fresh `inspect eval`
processes: `calls` hands each turn's assistant message, holding CALLS calls of a no-op tool
whose result is RESULT_CHARS characters, to Inspect's `execute_tools` (its tool events, spans,
validation and messages); `plain` appends the same assistant message and the same tool
messages itself. The difference in CPU, per call, is what each tool call of a keyless pi-bench
run costs Inspect before any of our code runs.

    python bench/tool_path.py [--samples 3120] [--turns 5] [--calls 1] [--repeat 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, execute_tools
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolCall

sys.path.insert(0, str(Path(__file__).parent))
from _common import append_results, check_run, load_avg  # noqa: E402
from bare_task import NOOP, noop, noop_tool  # noqa: E402  (the bare task's no-op tool and scorer)
from floor import INSPECT, timed  # noqa: E402

RESULT_CHARS = 200  # about a pi-bench lookup's result


@solver
def turns(turns: int, calls: int, through_inspect: bool):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        for t in range(turns):
            tool_calls = [ToolCall(id=f"c{t}_{k}", function="noop_tool", arguments={"chars": RESULT_CHARS})
                          for k in range(calls)]
            state.messages.append(ChatMessageAssistant(content="", tool_calls=tool_calls, model="none"))
            if through_inspect:
                result = await execute_tools(state.messages, NOOP)
                state.messages.extend(result.messages)
            else:
                for c in tool_calls:
                    state.messages.append(ChatMessageTool(content=await noop_tool(c.arguments["chars"]),
                                                          tool_call_id=c.id, function=c.function))
        return state

    return solve


@task
def tool_path(samples: int = 3120, turns_per_sample: int = 5, calls: int = 1, mode: str = "calls") -> Task:
    dataset = MemoryDataset([Sample(id=i, input="hello") for i in range(samples)])
    return Task(dataset=dataset, solver=turns(turns_per_sample, calls, mode == "calls"), scorer=noop())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=3120)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--calls", type=int, default=1, help="tool calls per turn")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    before = load_avg()
    tmp = Path(tempfile.mkdtemp(prefix="pibench-bench-toolpath-"))
    cpu: dict[str, list[float]] = {"calls": [], "plain": []}
    wall: dict[str, list[float]] = {"calls": [], "plain": []}
    for i in range(args.repeat):
        for mode in ("calls", "plain"):
            log_dir = tmp / f"{mode}{i}"
            cmd = [INSPECT, "eval", "bench/tool_path.py", "--model", "none", "--log-dir", str(log_dir),
                   "--display", "none", "-T", f"samples={args.samples}", "-T", f"turns_per_sample={args.turns}",
                   "-T", f"calls={args.calls}", "-T", f"mode={mode}"]
            t = timed(cmd)
            from inspect_ai.log import list_eval_logs, read_eval_log

            check_run(read_eval_log(list_eval_logs(str(log_dir))[0].name, header_only=True), args.samples,
                      f"the {mode} run")
            cpu[mode].append(t["cpu"])
            wall[mode].append(t["wall"])
    n_calls = args.samples * args.turns * args.calls
    per_call = [(c - p) / n_calls * 1000 for c, p in zip(cpu["calls"], cpu["plain"])]
    body = (
        f"{args.samples} samples x {args.turns} turns x {args.calls} call(s) = {n_calls} tool calls; "
        f"{args.repeat} repetition(s), fresh processes, alternating; every run checked to have ended `success` "
        f"with all its samples.\n\n"
        "| run | CPU s (each) | wall s (each) |\n|---|---|---|\n"
        + "".join(f"| {m} | {' '.join(f'{x:.1f}' for x in cpu[m])} | {' '.join(f'{x:.1f}' for x in wall[m])} |\n"
                  for m in cpu)
        + f"\nInspect's tool-call path (`execute_tools`: tool event, span, validation) costs "
        f"**{statistics.median(per_call):.2f} ms of CPU per call** (per repetition: "
        f"{', '.join(f'{x:.2f}' for x in per_call)}).\n"
    )
    append_results("Inspect's tool-call path (bench/tool_path.py)", body, load_before=before)


if __name__ == "__main__":
    main()
