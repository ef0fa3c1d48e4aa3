"""How long a person waits for one scenario: a one-sample keyless run beside a bare Inspect task's start-up.

    python bench/startup.py [--repeat 7] [--sample-id ID] [--note TEXT]

Runs, in fresh processes, alternating, after one warm-up run of each:

  pibench   inspect eval pibench_inspect/pibench -T agent=oracle -T user=scripted --model none
            --sample-id ID   (the README's keyless demo on one scenario, by default one of a family)
  bare      inspect eval bench/bare_task.py --model mockllm/model, 1 sample and 0 turns
            (Inspect's start-up alone, as bench/floor.py's "start-up")

and prints the medians of wall and CPU time (the process and its children, from the operating
system's accounting), the median of the pairwise differences, and whether the pi-bench run is
within TARGET_SECONDS of the bare task's start-up (issue 42: 4.5 s against 3.1 s before, most of
the difference loading all 488 scenarios). Differences of pairs, not of medians: both runs of a
pair see the same load. Every run's log is checked (FailedRun otherwise).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _common import ROOT, append_results, check_run

INSPECT = str(Path(__import__("sys").executable).with_name("inspect"))
TARGET_SECONDS = 0.5
SAMPLE = "RET_PRICE_ADJUSTMENT.all_met.baseline"


def pibench_cmd(sample_id: str, log_dir: str) -> list[str]:
    return [INSPECT, "eval", "pibench_inspect/pibench", "-T", "agent=oracle", "-T", "user=scripted",
            "--model", "none", "--sample-id", sample_id, "--display", "none", "--log-dir", log_dir]


def bare_cmd(shape: Path, log_dir: str) -> list[str]:
    return [INSPECT, "eval", "bench/bare_task.py", "-T", f"shape={shape}", "--model", "mockllm/model",
            "--display", "none", "--log-dir", log_dir]


def measured(cmd: list[str], log_dir: str, what: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one run, its log checked."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{what} exited {done.returncode}: {done.stderr[-2000:]}")
    check_run(log_dir, 1, what)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--sample-id", default=SAMPLE)
    ap.add_argument("--note", default="")
    ap.add_argument("--no-record", action="store_true", help="print only; do not append to bench/results.md")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pibench-startup-"))
    shape = tmp / "one.json"
    shape.write_text(json.dumps({"S": 0}))
    runs: dict[str, list[tuple[float, float]]] = {"pibench": [], "bare": []}
    for i in range(args.repeat + 1):  # the first pair warms the file cache and is not counted
        p = measured(pibench_cmd(args.sample_id, str(tmp / f"p{i}")), str(tmp / f"p{i}"), "pibench run")
        b = measured(bare_cmd(shape, str(tmp / f"b{i}")), str(tmp / f"b{i}"), "bare run")
        if i:
            runs["pibench"].append(p)
            runs["bare"].append(b)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    wall_diff = statistics.median(p[0] - b[0] for p, b in zip(runs["pibench"], runs["bare"]))
    cpu_diff = statistics.median(p[1] - b[1] for p, b in zip(runs["pibench"], runs["bare"]))
    verdict = "met" if wall_diff <= TARGET_SECONDS else "NOT met"
    lines = [
        f"one-sample keyless run (`--sample-id {args.sample_id}`) against the bare task's start-up, "
        f"{args.repeat} pairs, medians:",
        "",
        "| run | wall s | CPU s |",
        "|---|---|---|",
        *(f"| {k} | {w:.2f} | {c:.2f} |" for k, (w, c) in med.items()),
        f"| pibench - bare (median of pairs) | {wall_diff:+.2f} | {cpu_diff:+.2f} |",
        "",
        f"target: within {TARGET_SECONDS} s of the bare task's start-up (wall): {verdict}",
    ]
    print("\n".join(lines))
    if not args.no_record:
        append_results("Start-up: one scenario against a bare Inspect task",
                       "\n".join(lines) + (f"\n\n{args.note}" if args.note else ""))
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    raise SystemExit(main())
