"""Benchmark: does the LiteLLM reference agent keep samples concurrent? (issue 13, item 2)

The same eight samples (the shipped scenarios with the scripted user, the NL judge off) run
twice against an OpenAI-compatible stand-in on loopback that answers every request after a fixed
latency (1 s by default):

* the Inspect model path: `--model litellm/openai/standin -M api_base=...`;
* the LiteLLM reference agent: `-T agent=pibench_inspect.agents.litellm_agent:LiteLLMAgent`
  with the same model and endpoint, under `--model none`.

The stand-in answers the same text every time, so both runs hold the same conversations. With
the agent's calls on the event loop (as before) eight samples took eight times as long; the
target is the agent's wall time within 1.5x of the model path's. The latency bound is the
longest sample's agent calls times the latency.

Usage: python bench/agents_concurrency.py [--samples 8] [--latency 1.0] [--record]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
from _common import append_results, check_run, load_avg, table  # noqa: E402
from openai_standin import OpenAIStandin, serve  # noqa: E402

AGENT = "pibench_inspect.agents.litellm_agent:LiteLLMAgent"
TARGET = 1.5


def run(way: str, url: str, samples: int, log_dir: str) -> tuple[float, int]:
    """(wall seconds, most agent calls in one sample)."""
    from inspect_ai import eval as inspect_eval

    from pibench_inspect.task import pibench_task

    endpoint = {"api_base": url, "api_key": "standin"}
    if way == "agent":
        task = pibench_task(None, user="scripted", judge="off", agent=AGENT,
                            agent_args={"model_name": "openai/standin", **endpoint})
        model, model_args = "none", {}
    else:
        task = pibench_task(None, user="scripted", judge="off")
        model, model_args = "litellm/openai/standin", endpoint
    started = time.perf_counter()
    log = inspect_eval(task, model=model, model_args=model_args, limit=samples, max_samples=samples,
                       max_connections=samples, display="none", log_dir=log_dir)[0]
    wall = time.perf_counter() - started
    check_run(log, min(samples, len(task.dataset)), f"the {way} run")
    calls = max(sum(1 for e in s.events if e.event == "model") for s in log.samples)
    return wall, calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--latency", type=float, default=1.0)
    ap.add_argument("--record", action="store_true", help="append the figures to bench/results.md")
    args = ap.parse_args()
    import tempfile

    load_before = load_avg()
    standin = OpenAIStandin(latency=args.latency)
    rows = []
    with serve(standin) as url, tempfile.TemporaryDirectory() as logs:
        run("model", url, 1, logs)  # warm-up: imports, LiteLLM's first call
        for way in ("model", "agent"):
            standin.max_in_flight = 0
            wall, calls = run(way, url, args.samples, logs)
            rows.append([way, wall, calls, calls * args.latency, standin.max_in_flight])
    ratio = rows[1][1] / rows[0][1]
    body = (
        f"{args.samples} samples, stand-in latency {args.latency:g} s, scripted user, judge off.\n\n"
        + table(["path", "wall s", "most calls in a sample", "latency bound s", "most requests in flight"], rows)
        + f"\n\nLiteLLM agent / Inspect model path: **{ratio:.2f}x** (target <= {TARGET}x): "
        + ("met" if ratio <= TARGET else "MISSED")
    )
    if args.record:
        append_results("LiteLLM agent concurrency", body, load_before=load_before)
    else:
        print(body)


if __name__ == "__main__":
    main()
