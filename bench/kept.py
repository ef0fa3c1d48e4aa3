"""Benchmark: what Inspect keeps in memory per finished sample, counted object by object.

Inspect holds every finished sample's `SampleScore` (for the metrics at the end of the run) and
its `EvalSampleSummary` until the run ends. floor.py measures their cost from outside, as the
slope of the process's RSS, which also moves with the native heap and from run to run; this
script counts them exactly. Each run is a fresh process (`--child`) whose hook, at the last
sample's end, walks every live `SampleScore` and `EvalSampleSummary` with `gc.get_referents`
(leaving out what the dataset's `Sample` objects hold: that is not per finished sample) and
prints the bytes per finished sample by kind of object.

  pibench       the keyless oracle run of the first N shipped scenarios
  bare + calls  bench/bare_task.py with the same samples, turns and tool calls (floor.py's
                reference), on mockllm

Every run is checked to have ended `success` with all its samples (FailedRun otherwise).

Usage: python bench/kept.py [--scenarios 78] [--epochs 3] [--note TEXT]
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, append_results, check_run, load_avg, table, tool_results  # noqa: E402
from floor import pibench_cmd  # noqa: E402

KINDS = ("SampleScore", "EvalSampleSummary")
_SKIP = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _walk(roots: list[Any], seen: set[int], by_type: collections.Counter | None = None) -> int:
    total, stack = 0, list(roots)
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, _SKIP) or o is None or o is True or o is False:
            continue
        seen.add(id(o))
        size = sys.getsizeof(o)
        total += size
        if by_type is not None:
            by_type[type(o).__name__] += size
        stack.extend(gc.get_referents(o))
    return total


def child(task: str, samples: int, epochs: int, log_dir: str, shape: str, ids: list[str], out: str) -> None:
    """Run one eval in this process and write the count taken at its last sample's end."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.hooks import Hooks, SampleEnd, hooks

    total, ended = samples * epochs, [0]

    @hooks(name="bench_kept", description="bench/kept.py: count what Inspect keeps per finished sample")
    class Count(Hooks):
        async def on_sample_end(self, data: SampleEnd) -> None:
            ended[0] += 1
            if ended[0] != total:
                return
            gc.collect()
            live: dict[str, list[Any]] = collections.defaultdict(list)
            for o in gc.get_objects():
                live[type(o).__name__].append(o)
            seen: set[int] = set()
            _walk(live["Sample"], seen)
            result = {}
            for kind in KINDS:
                by_type: collections.Counter = collections.Counter()
                result[kind] = {"objects": len(live[kind]), "bytes": _walk(live[kind], seen, by_type),
                                "by_type": dict(by_type.most_common(6))}
            Path(out).write_text(json.dumps(result))

    if task == "pibench":
        inspect_eval("pibench_inspect/pibench.py", task_args={"agent": "oracle", "user": "scripted"}, model="none",
                     sample_id=ids, epochs=epochs, display="none", log_dir=log_dir)
    else:
        inspect_eval("bench/bare_task.py", task_args={"shape": shape}, model="mockllm/model", epochs=epochs,
                     display="none", log_dir=log_dir)


def run(task: str, tmp: Path, ids: list[str], epochs: int, shape: Path) -> dict[str, Any]:
    log_dir, out = tmp / task.replace(" ", ""), tmp / f"{task.replace(' ', '')}.json"
    cmd = [sys.executable, __file__, "--child", task, "--epochs", str(epochs), "--log-dir", str(log_dir),
           "--shape", str(shape), "--ids", ",".join(ids), "--out", str(out)]
    r = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{task} run failed:\n{(r.stdout + r.stderr)[-3000:]}")
    check_run(str(log_dir), len(ids) * epochs, f"{task} run")
    if not out.exists():
        raise SystemExit(f"{task} run: the hook counted nothing (its last sample never ended)")
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", type=int, default=78, help="the first N scenarios of the shipped set")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--note", default="")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--log-dir", help=argparse.SUPPRESS)
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    ap.add_argument("--ids", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        ids = args.ids.split(",")
        child(args.child, len(ids), args.epochs, args.log_dir, args.shape, ids, args.out)
        return

    from inspect_ai.log import list_eval_logs, read_eval_log

    load_before = load_avg()
    tmp = Path(tempfile.mkdtemp(prefix="pibench-bench-kept-"))
    # the shape (as floor.py takes it): one warm-up pibench run gives each sample's tool calls
    warm = tmp / "shape"
    r = subprocess.run(pibench_cmd(str(warm)), cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    if r.returncode != 0:
        raise SystemExit(f"warm-up run failed:\n{(r.stdout + r.stderr)[-3000:]}")
    log = read_eval_log(list_eval_logs(str(warm))[0].name)
    check_run(log, log.eval.dataset.samples or -1, "the warm-up pibench run")
    calls = {str(s.id): tool_results(s) for s in log.samples or []}
    calls = dict(list(calls.items())[: args.scenarios])
    (tmp / "calls.json").write_text(json.dumps(calls))
    ids, n = list(calls), len(calls) * args.epochs

    counts = {task: run(task, tmp, ids, args.epochs, tmp / "calls.json") for task in ("pibench", "bare + calls")}
    rows, totals = [], {}
    for task, c in counts.items():
        totals[task] = sum(c[k]["bytes"] for k in KINDS) / n
        rows.append([task, *(f"{c[k]['bytes'] / n:,.0f}" for k in KINDS), f"{totals[task]:,.0f}",
                     "; ".join(f"{t} {b / n:,.0f}" for t, b in c["SampleScore"]["by_type"].items())])
    ratio = totals["pibench"] / totals["bare + calls"]
    body = (f"{len(ids)} scenarios x {args.epochs} epoch(s) = {n} samples a run; each run a fresh process, "
            "checked to have ended `success` with all its samples.\n\n"
            + table(["run", "SampleScore, B per finished sample", "EvalSampleSummary, B per finished sample",
                     "total", "SampleScore by type (B)"], rows)
            + f"\n\nKept per finished sample, pibench / (bare + calls): **{ratio:.2f}x** (issue 27's target "
              "for the RSS measure of floor.py: <= 1.25x). Counted at the last sample's end: every live "
              "SampleScore and EvalSampleSummary, walked with gc.get_referents, leaving out what the dataset's "
              "Samples hold.\n" + (f"\n{args.note}\n" if args.note else ""))
    append_results("What Inspect keeps per finished sample (bench/kept.py)", body, load_before=load_before)


if __name__ == "__main__":
    main()
