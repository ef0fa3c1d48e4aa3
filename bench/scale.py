"""Benchmark 3: scale. The concurrency benchmark at growing multiples of the scenario set.

Each point runs `bench/concurrency.py --copies K --epochs E --json ...` in its own process
(so each peak RSS is its own) over a temporary source folder holding K copies of every shipped
scenario, with a connection and a sample slot for every sample. A least-squares line through
(samples, peak RSS) gives the memory per sample and the projected peak at 10x the scenarios x 4
epochs (target < 2 GB, linear growth).

Usage: python bench/scale.py [--copies 1,2] [--epochs 1] [--latency 0.5] [--full]
  --full   also run the target point itself: 10 copies x 4 epochs. Refused when the memory
           projected from the smaller points exceeds the machine's available memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import BENCH, append_results, load_avg, table  # noqa: E402

TARGET_PEAK_MB = 2048


def point(copies: int, epochs: int, latency: float, max_samples: int | None = None) -> dict:
    out = Path(tempfile.mkstemp(prefix="pibench-scale-", suffix=".json")[1])
    cmd = [sys.executable, str(BENCH / "concurrency.py"), "--copies", str(copies), "--epochs", str(epochs),
           "--latency", str(latency), "--json", str(out)]
    if max_samples:
        cmd += ["--max-samples", str(max_samples)]
    print("running:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    r = json.loads(out.read_text())
    out.unlink()
    # concurrency.py refuses a run short of samples itself (_common.check_run); said again here,
    # so no point of the line can be a failed run's
    if r.get("status") != "success" or r["samples"] != r["expected_samples"]:
        raise SystemExit(f"scale point {copies}x{epochs} FAILED, not a measurement: status {r.get('status')!r}, "
                         f"{r['samples']} of {r['expected_samples']} samples")
    print(f"  {r['samples']} samples: wall {r['wall_s']:.1f} s, peak RSS {r['peak_rss_mb']:.0f} MB", flush=True)
    return r


def _available_mb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return slope, my - slope * mx


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", default="1,2")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--max-samples", type=int, default=None,
                    help="samples in flight at once in the --full point (default: all of them)")
    ap.add_argument("--only-full", action="store_true", help="with --full: measure the target point alone")
    args = ap.parse_args()
    load_before = load_avg()
    points = [] if args.full and args.only_full else [point(int(k), args.epochs, args.latency) for k in args.copies.split(",")]
    if args.full:
        xs0 = [r["samples"] for r in points]
        if len(points) >= 2:
            s0, i0 = fit(xs0, [r["peak_rss_mb"] for r in points])
            need = i0 + s0 * points[0]["scenarios"] // max(points[0]["copies"], 1) * 40
            avail = _available_mb()
            if avail and need > 0.8 * avail:
                print(f"--full refused: projected peak {need:.0f} MB > 80% of available {avail:.0f} MB", flush=True)
                args.full = False
        if args.full:
            points.append(point(10, 4, args.latency, args.max_samples))
    points.sort(key=lambda r: r["samples"])
    xs = [r["samples"] for r in points]
    slope_mem, icpt_mem = fit(xs, [r["peak_rss_mb"] for r in points]) if len(points) > 1 else (0.0, points[0]["peak_rss_mb"])
    slope_t, icpt_t = fit(xs, [r["wall_s"] for r in points]) if len(points) > 1 else (0.0, points[0]["wall_s"])
    base = points[0]
    target_samples = base["scenarios"] // max(base["copies"], 1) * 10 * 4
    measured_target = next((r for r in points if r["copies"] == 10 and r["epochs"] == 4), None)
    proj_mem = icpt_mem + slope_mem * target_samples
    proj_t = icpt_t + slope_t * target_samples
    rows = []
    for r in points:
        lin_mem = icpt_mem + slope_mem * r["samples"]
        rows.append([
            f"{r['copies']}x", r["epochs"], r["samples"], r.get("max_samples", r["samples"]), r["errors"], r["wall_s"], r["ratio"],
            r["cpu_ms_per_sample"], r["peak_rss_mb"], lin_mem,
            (r["peak_rss_mb"] - r["rss_before_mb"]) * 1024 / min(r["samples"], r.get("max_samples") or r["samples"]),
            r["log_mb"],
        ])
    peak = measured_target["peak_rss_mb"] if measured_target else proj_mem
    how = "measured" if measured_target else "projected from the line"
    status = "met" if peak < TARGET_PEAK_MB else "NOT met"
    resid = max(abs(r["peak_rss_mb"] - (icpt_mem + slope_mem * r["samples"])) for r in points)
    fit_lines = "" if len(points) < 2 else (
        f"* Memory: peak RSS ~ {icpt_mem:.0f} MB + {slope_mem * 1024:.0f} KB x samples (largest deviation from the line {resid:.0f} MB).\n"
        f"* Time: wall ~ {icpt_t:.1f} s + {slope_t * 1000:.0f} ms x samples: time grows with the number of samples\n"
        "  because the framework's CPU per sample is serialized on one event loop, not with the latency.\n")
    body = f"""
Stand-in model (latency {args.latency} s, reference-solution replay), scripted user; every sample in flight at
once unless "in flight" says fewer ("KB per sample" is per sample in flight).

{table(["scenario set", "epochs", "samples", "in flight", "errors", "wall s", "wall / bound", "CPU ms per sample", "peak RSS MB", "linear fit MB", "KB per sample in flight", "log MB"], rows)}

{fit_lines}* Target (10x scenarios x 4 epochs = {target_samples} samples): peak < {TARGET_PEAK_MB} MB; {how}: {peak:.0f} MB
  ({peak / TARGET_PEAK_MB:.2f}x of the limit): {status}. {'' if measured_target else f'Projected wall time at that size: {proj_t / 60:.0f} min (run with --full to measure it).'}
"""
    append_results("Scale (bench/scale.py)", body, load_before=load_before)


if __name__ == "__main__":
    main()
