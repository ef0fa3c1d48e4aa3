"""Benchmark: pi-bench against Inspect's own floor, side by side in one run.

Alternates, `--repeat` times, three fresh processes (each timed from outside with its own
rusage: wall, CPU, peak RSS):

  pibench   the keyless oracle run of every shipped scenario:
            inspect eval pibench_inspect/pibench.py -T agent=oracle -T user=scripted --model none
  bare      a bare Inspect task of the same shape (bench/bare_task.py): one sample per scenario,
            as many `generate` turns on mockllm as the oracle's agent took, a no-op scorer
  start-up  the bare task with 1 sample and 0 turns (Inspect's start-up alone)

and prints the medians, the ratio of the pi-bench run to the bare one (target <= 1.25x) and
our own CPU per sample, (pibench CPU - bare CPU) / samples (target <= 20 ms). Ratios are
the figures to trust on a shared machine: both runs see the same load.

Usage: python bench/floor.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, agent_turns, append_results, load_avg, table  # noqa: E402

TARGET_RATIO = 1.25
TARGET_CPU_MS = 20.0
INSPECT = str(Path(sys.executable).with_name("inspect"))


def check_log(log_dir: str, samples: int) -> None:
    """A run compared must have ended `success` with every sample: a failed run exits 0 too
    (Inspect's exit code does not say), and its time would be a floor of nothing."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    logs = list_eval_logs(log_dir)
    if len(logs) != 1:
        raise SystemExit(f"{log_dir}: expected one log, found {len(logs)}")
    log = read_eval_log(logs[0].name, header_only=True)
    done = log.results.completed_samples if log.results else 0
    if log.status != "success" or done != samples:
        raise SystemExit(f"{logs[0].name}: run ended {log.status} with {done} of {samples} samples "
                         f"({log.error.message if log.error else 'no error recorded'}); not a measurement")


def timed(cmd: list[str]) -> dict[str, float]:
    """Run a command; its wall seconds, CPU seconds (user + system) and peak RSS (MB)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "INSPECT_LOG_LEVEL": "warning"}
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read() if p.stdout else b""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.decode(errors='replace')[-3000:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss / 1024}


def pibench_cmd(log_dir: str) -> list[str]:
    return [INSPECT, "eval", "pibench_inspect/pibench.py", "-T", "agent=oracle", "-T", "user=scripted",
            "--model", "none", "--display", "none", "--log-dir", log_dir]


def bare_cmd(shape: Path, log_dir: str) -> list[str]:
    return [INSPECT, "eval", "bench/bare_task.py", "-T", f"shape={shape}", "--model", "mockllm/model",
            "--display", "none", "--log-dir", log_dir]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    load_before = load_avg()
    from inspect_ai.log import list_eval_logs, read_eval_log

    tmp = Path(tempfile.mkdtemp(prefix="pibench-bench-floor-"))
    # the shape: one warm-up pibench run gives the agent turns of every sample
    timed(pibench_cmd(str(tmp / "shape")))
    log = read_eval_log(list_eval_logs(str(tmp / "shape"))[0].name)
    assert log.status == "success", log.error
    shape = {str(s.id): agent_turns(s) for s in log.samples or []}
    n, turns = len(shape), sum(shape.values())
    (tmp / "shape.json").write_text(json.dumps(shape))
    (tmp / "one.json").write_text(json.dumps({"START": 0}))

    runs: dict[str, list[dict[str, float]]] = {"pibench": [], "bare": [], "start-up": []}
    for i in range(args.repeat):
        runs["pibench"].append(timed(pibench_cmd(str(tmp / f"p{i}"))))
        runs["bare"].append(timed(bare_cmd(tmp / "shape.json", str(tmp / f"b{i}"))))
        runs["start-up"].append(timed(bare_cmd(tmp / "one.json", str(tmp / f"s{i}"))))
        for kind, size in (("p", n), ("b", n), ("s", 1)):
            check_log(str(tmp / f"{kind}{i}"), size)
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall", "cpu", "rss")} for k, v in runs.items()}
    # the ratio of each repetition's pair (same load), then its median
    ratios = [p["wall"] / b["wall"] for p, b in zip(runs["pibench"], runs["bare"])]
    cpu_ratios = [p["cpu"] / b["cpu"] for p, b in zip(runs["pibench"], runs["bare"])]
    ours = [(p["cpu"] - b["cpu"]) / n * 1000 for p, b in zip(runs["pibench"], runs["bare"])]
    ratio, cpu_ratio, ours_ms = statistics.median(ratios), statistics.median(cpu_ratios), statistics.median(ours)

    rows = [[k, len(v), round(med[k]["wall"], 2), round(med[k]["cpu"], 2), round(med[k]["rss"], 1),
             " ".join(f"{r['wall']:.1f}" for r in v)] for k, v in runs.items()]
    body = (
        f"{n} samples, {turns} agent turns (`generate` turns in the bare task); {args.repeat} repetitions, "
        "each a fresh process, alternating.\n\n"
        + table(["run", "reps", "wall s (median)", "CPU s (median)", "peak RSS MB (median)", "walls s"], rows)
        + "\n\n"
        + table(["target", "measured (median of per-repetition figures)", "target value", "status"], [
            ["wall, pibench / bare", f"{ratio:.2f}x (CPU {cpu_ratio:.2f}x)", f"<= {TARGET_RATIO}x",
             "met" if ratio <= TARGET_RATIO else "NOT met"],
            ["our CPU per sample, (pibench - bare) / samples", f"{ours_ms:.1f} ms", f"<= {TARGET_CPU_MS} ms",
             "met" if ours_ms <= TARGET_CPU_MS else "NOT met"],
        ])
        + f"\n\nPer repetition: wall ratios {', '.join(f'{r:.2f}' for r in ratios)}; our CPU ms per sample "
        f"{', '.join(f'{x:.1f}' for x in ours)}. Start-up alone (1 sample, 0 turns) is in both runs.\n"
    )
    append_results("Floor: pi-bench vs a bare Inspect task (bench/floor.py)", body, load_before=load_before)


if __name__ == "__main__":
    main()
