"""Benchmark 5: what A2A costs per agent turn, no model.

The local demo agent (examples/local_demo's CautiousAgent) plays every scenario of every shipped
domain with the scripted user, one sample at a time, four ways: as a local protocol object, as
an Inspect model (`protocol/...`), and served over A2A on loopback (`pibench serve-agent`, an
a2a-sdk 0.3 server, in its own process as in real use) in bootstrap and in stateless mode. The difference from the local run, divided by the
agent turns, is the cost of one A2A round trip (card fetch and bootstrap included), and of
stateless replay where the agent is recreated and the history replayed every turn.

Usage: python bench/a2a_overhead.py [--domains finra,retail,helpdesk]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
from _common import agent_turns, append_results, check_run, load_avg, table  # noqa: E402

DEMO = "examples.local_demo.demo_agent:CautiousAgent"


@contextmanager
def served(bootstrap: bool):
    """The demo agent behind `pibench serve-agent` in a process of its own. (A server thread
    inside the measuring process adds ~40 ms per request from the two event loops sharing the
    GIL, which is not what a deployment sees.)"""
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "pibench_inspect.a2a.agent_server", DEMO, "--port", str(port)]
    proc = subprocess.Popen(cmd + ([] if bootstrap else ["--no-bootstrap"]), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def run(domain: str, way: str, log_dir: str) -> tuple[float, int, int, float]:
    """(wall seconds, samples, agent turns, mean partial credit) of one domain run."""
    from inspect_ai import eval as inspect_eval

    from pibench_inspect.task import pibench_task

    def go(model: str = "none", **args):
        start = time.perf_counter()
        task = pibench_task(domain, user="scripted", **args)
        (log,) = inspect_eval(task, model=model, max_samples=1, display="none", log_dir=log_dir)
        check_run(log, len(task.dataset), f"the {way} run of {domain}")
        wall = time.perf_counter() - start
        scores = [s.scores["pibench_scorer"].value["partial_credit"] for s in log.samples]
        return wall, len(log.samples), sum(agent_turns(s) for s in log.samples), sum(scores) / len(scores)

    if way == "local":
        return go(agent=DEMO)
    if way == "inspect model":
        return go(model=f"protocol/{DEMO}")
    with served(bootstrap=way == "a2a bootstrap") as url:
        return go(agent="a2a", agent_url=url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", default="finra,retail,helpdesk")
    parser.add_argument("--log-dir", default=str(ROOT / "logs" / "bench"))
    args = parser.parse_args()
    load_before = load_avg()
    ways = ("local", "inspect model", "a2a bootstrap", "a2a stateless")
    totals = {w: [0.0, 0, 0] for w in ways}
    credit: dict[str, list[float]] = {w: [] for w in ways}
    for domain in args.domains.split(","):
        for way in ways:
            wall, n, turns, mean = run(domain, way, args.log_dir)
            totals[way][0] += wall
            totals[way][1] += n
            totals[way][2] += turns
            credit[way].append(round(mean, 9))
            print(f"{domain:<9} {way:<14} {wall:6.2f} s  {n} samples  {turns} agent turns", flush=True)
    base_wall, _, base_turns = totals["local"]
    rows = []
    for way in ways:
        wall, n, turns = totals[way]
        rows.append([way, n, turns, wall, 1000 * wall / n, 1000 * (wall - base_wall) / max(turns, 1)])
    same = all(credit[w] == credit["local"] for w in ways)
    body = table(["way in", "samples", "agent turns", "wall s", "ms / sample", "extra ms / agent turn vs local"], rows)
    body += (f"\n\nSame mean partial credit per domain all four ways: {'yes' if same else 'NO'} "
             f"({', '.join(f'{c:.3f}' for c in credit['local'])}). One sample at a time; the purple server "
             "runs in its own process (its CPU is not in these figures, its latency is).")
    append_results("A2A overhead (bench/a2a_overhead.py)", body, load_before=load_before)


if __name__ == "__main__":
    main()
