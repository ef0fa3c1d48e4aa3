"""Benchmark 1: framework overhead, no model.

Every scenario of every shipped domain runs once with the `oracle` agent and the scripted user,
one sample at a time (max_samples=1, so per-sample wall times do not overlap). Timed by
wrapping the engine's functions from the outside (no engine change):

  setup      domain_document (seed + patch merge) + StateDB(...) (a private catalog; patched collections built, seed ones read from the seed catalog) + build_tools
  tools      environment.effects.execute (argument validation + effect SQL), per call
  export     StateDB.export_changes_text (what the run changed, to the store)
  scoring    build_trace + evaluate (the deterministic checks)
  logging    Inspect's log writer (EvalRecorder.*) and realtime sample buffer (SampleBufferDatabase.*)
  rest       everything else inside the sample: Inspect's solver/transcript/event machinery,
             execute_tools, the scripted agent and user

Usage: python bench/overhead.py [--repeat N] [--log-dir DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Timers, agent_turns, append_results, check_run, load_avg, peak_rss_mb, rss_mb, table  # noqa: E402

TARGET_TURN_MS = 25.0
TARGET_SETUP_SCORING_MS = 100.0


def instrument(t: Timers) -> None:
    import pibench_inspect.conversation.solver as solver
    import pibench_inspect.environment.state as state
    import pibench_inspect.environment.tools as tools
    import pibench_inspect.scoring.scorer as scorer
    from inspect_ai.log._recorders.buffer.database import SampleBufferDatabase
    from inspect_ai.log._recorders.eval import EvalRecorder

    t.wrap(state.StateDB, "export_changes_text", "export")
    t.wrap(solver, "domain_document", "setup")
    t.wrap(solver, "StateDB", "setup")
    t.wrap(solver, "build_tools", "setup")
    t.wrap(tools, "execute", "tools")
    t.wrap(scorer, "build_trace", "scoring")
    t.wrap(scorer, "evaluate", "scoring")
    for name in ("log_init", "log_start", "log_sample", "flush", "log_finish"):
        t.wrap(EvalRecorder, name, "logging")
    for name in ("start_sample", "log_events", "complete_sample", "update_metrics", "remove_samples"):
        t.wrap(SampleBufferDatabase, name, "logging")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="epochs (each scenario runs this often)")
    ap.add_argument("--log-dir", default=None)
    args = ap.parse_args()
    load_before = load_avg()

    from inspect_ai import eval as inspect_eval

    from pibench_inspect.task import pibench_task

    t = Timers()
    instrument(t)
    task = pibench_task(None, agent="oracle", user="scripted")
    rss_before = rss_mb()
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="pibench-bench-overhead-")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    log = inspect_eval(task, model="none", display="none", log_dir=log_dir, max_samples=1, epochs=args.repeat)[0]
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    check_run(log, len(task.dataset) * args.repeat, "the overhead run")
    samples = log.samples or []
    n = len(samples)
    passed = sum(1 for s in samples if s.scores["pibench_scorer"].value["all_passed"] == 1.0)

    rows_dom: dict[str, list] = {}
    per_turn, setup_scoring, sample_wall = [], [], []
    for s in samples:
        cats = t.by_sample.get((str(s.id), s.epoch), {})
        turns = agent_turns(s)
        ss = cats.get("setup", 0) + cats.get("scoring", 0) + cats.get("export", 0)
        sample_wall.append(s.total_time or 0.0)
        setup_scoring.append(ss)
        per_turn.append(((s.total_time or 0.0) - ss) / max(turns, 1))
        rows_dom.setdefault(s.metadata["domain"], []).append((s, turns, cats, ss))

    dom_rows = []
    for dom, items in sorted(rows_dom.items()):
        walls = [x[0].total_time or 0.0 for x in items]
        turns = [x[1] for x in items]
        dom_rows.append([
            dom, len(items), statistics.mean(turns),
            1000 * statistics.mean(walls),
            1000 * statistics.mean((x[0].total_time - x[3]) / max(x[1], 1) for x in items),
            1000 * statistics.mean(x[2].get("setup", 0) for x in items),
            1000 * statistics.mean(x[2].get("tools", 0) / max(x[1], 1) for x in items),
            1000 * statistics.mean(x[2].get("scoring", 0) + x[2].get("export", 0) for x in items),
        ])

    total_turns = sum(agent_turns(s) for s in samples)
    tool_calls = t.calls.get("tools", 0)
    split = []
    measured = measured_cpu = 0.0
    for cat, label in [
        ("setup", "state setup (merge + state plans + tools)"),
        ("tools", f"tool execution ({tool_calls} calls)"),
        ("export", "state changes export"),
        ("scoring", "scoring (trace + checks)"),
        ("logging", "Inspect log writing (recorder + realtime buffer)"),
    ]:
        v, c = t.total.get(cat, 0.0), t.cpu.get(cat, 0.0)
        measured += v
        measured_cpu += c
        split.append([label, 1000 * v / n, 1000 * c / n, 100 * v / wall])
    rest, rest_cpu = wall - measured, cpu - measured_cpu
    split.append(["rest: Inspect machinery, agent, user, eval start/finish", 1000 * rest / n, 1000 * rest_cpu / n, 100 * rest / wall])
    split.append(["total (eval() wall; process CPU)", 1000 * wall / n, 1000 * cpu / n, 100.0])

    mean_turn = statistics.mean(per_turn) * 1000
    p95_turn = sorted(per_turn)[int(0.95 * (n - 1))] * 1000
    mean_ss = statistics.mean(setup_scoring) * 1000
    p95_ss = sorted(setup_scoring)[int(0.95 * (n - 1))] * 1000
    # CPU view: what the framework itself consumes, independent of other load on the machine
    ss_cpu = sum(t.cpu.get(c, 0.0) for c in ("setup", "export", "scoring"))
    turn_cpu = 1000 * (cpu - ss_cpu) / max(total_turns, 1)
    ss_cpu_ms = 1000 * ss_cpu / n
    ok = lambda v, tgt: "met" if v <= tgt else "NOT met"  # noqa: E731

    body = f"""
{n} samples ({passed} passed, oracle + scripted user, model `none`), run one at a time;
{total_turns} agent turns, {tool_calls} tool calls. eval() wall {wall:.1f} s, process CPU {cpu:.1f} s
({1000 * cpu / n:.0f} ms CPU per sample). Memory: RSS {rss_before:.0f} MB before the eval, peak {peak_rss_mb():.0f} MB.
Wall times include waiting for a CPU when the machine is busy (see the load average); CPU times do not.

Per domain (wall, means per sample; "per turn" = (sample wall - setup - export - scoring) / agent turns):

{table(["domain", "samples", "agent turns", "sample wall ms", "ms per turn", "setup ms", "tool ms per turn", "scoring+export ms"], dom_rows)}

Where the time goes (per sample):

{table(["part", "wall ms", "CPU ms", "% of wall"], split)}

Targets:

| target | wall (mean, p95) | ratio (wall) | CPU | ratio (CPU) | status |
|---|---|---|---|---|---|
| < {TARGET_TURN_MS:.0f} ms per agent turn | {mean_turn:.1f} ms, {p95_turn:.1f} ms | {mean_turn / TARGET_TURN_MS:.2f}x | {turn_cpu:.1f} ms | {turn_cpu / TARGET_TURN_MS:.2f}x | {ok(mean_turn, TARGET_TURN_MS)} (wall), {ok(turn_cpu, TARGET_TURN_MS)} (CPU) |
| < {TARGET_SETUP_SCORING_MS:.0f} ms setup + scoring per sample | {mean_ss:.1f} ms, {p95_ss:.1f} ms | {mean_ss / TARGET_SETUP_SCORING_MS:.2f}x | {ss_cpu_ms:.1f} ms | {ss_cpu_ms / TARGET_SETUP_SCORING_MS:.2f}x | {ok(mean_ss, TARGET_SETUP_SCORING_MS)} (wall), {ok(ss_cpu_ms, TARGET_SETUP_SCORING_MS)} (CPU) |

CPU per turn = (process CPU - setup/export/scoring CPU) / agent turns, so it also carries Inspect's
eval start and finish.
"""
    append_results("Overhead (bench/overhead.py)", body, load_before=load_before)


if __name__ == "__main__":
    main()
