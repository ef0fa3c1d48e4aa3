"""Shared helpers of the benchmarks: machine description, results file, scenario copies, timers."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("INSPECT_LOG_LEVEL", "warning")

import datetime as _dt
import json
import platform
import resource
import shlex
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results.md"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def mem_total_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return None


def load_avg() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def machine() -> str:
    mem = mem_total_gb()
    import inspect_ai

    return (
        f"{platform.node() or 'host'}: {os.cpu_count()} CPU ({cpu_model()}), "
        f"{mem:.1f} GB RAM, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, inspect_ai {getattr(inspect_ai, '__version__', '?')}"
        if mem
        else f"{os.cpu_count()} CPU, Python {platform.python_version()}"
    )


def peak_rss_mb() -> float:
    """Peak resident set size of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def command_line() -> str:
    rel = os.path.relpath(sys.argv[0], os.getcwd()) if sys.argv else "?"
    return "python " + " ".join(shlex.quote(a) for a in [rel, *sys.argv[1:]])


def append_results(title: str, body: str, *, load_before: str | None = None) -> None:
    """Print the figures and append them, with command, date and machine, to bench/results.md."""
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = f"load average before {load_before}, after {load_avg()}" if load_before else f"load average {load_avg()}"
    block = (
        f"\n## {title} ({now})\n\n"
        f"* command: `{command_line()}`\n"
        f"* machine: {machine()}; {load}\n\n"
        f"{body.strip()}\n"
    )
    print(block)
    if not RESULTS.exists():
        RESULTS.write_text("# Benchmark results\n\nAppended by the scripts in bench/ (see bench/README.md).\n")
    with RESULTS.open("a") as f:
        f.write(block)


def table(header: list[str], rows: list[list[Any]]) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, int) and not isinstance(v, bool):
            return f"{v:,}"
        if isinstance(v, float):
            return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) >= 1 else f"{v:.3f}"
        return str(v)

    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


# ---------------------------------------------------------------- runs compared


class FailedRun(SystemExit):
    """A run a bench would compare ended without every sample: no measurement."""


def check_run(log: Any, expected: int, what: str = "run") -> None:
    """Refuse a run that did not end `success` with all `expected` samples completed: Inspect
    exits 0 on a run that ended in `error` (a bare task whose first generate failed), so an exit
    code says nothing, and a failed run's figures would be a floor of nothing. `log`: an EvalLog,
    a log file or a folder holding exactly one log."""
    from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

    if not isinstance(log, EvalLog):
        path = str(log)
        if Path(path).is_dir():
            found = list_eval_logs(path)
            if len(found) != 1:
                raise FailedRun(f"{what}: expected one log in {path}, found {len(found)}; not a measurement")
            path = found[0].name
        log = read_eval_log(path, header_only=True)
    done = log.results.completed_samples if log.results else 0
    if log.status != "success" or done != expected:
        why = log.error.message.strip().splitlines()[-1] if log.error and log.error.message else "no error recorded"
        raise FailedRun(f"{what} FAILED, not a measurement: the run ended {log.status!r} with {done} of {expected} "
                        f"samples completed ({why}; log {log.location})")


# ---------------------------------------------------------------- scenario copies


def copy_source(copies: int, dst: Path | None = None) -> Path:
    """A temporary source folder with `copies` copies of every shipped scenario.

    Copy k > 0 of a scenario gets the id `<ID>_X<k>`; files and domains are otherwise identical.
    """
    from pibench_inspect.paths import domains_dir, scenarios_dir

    dst = dst or Path(tempfile.mkdtemp(prefix="pibench-bench-"))
    shutil.copytree(domains_dir(), dst / "domains")
    src_scen = scenarios_dir()
    for f in sorted(src_scen.rglob("*.json")):
        if f.name.endswith(".schema.json"):
            continue
        raw = json.loads(f.read_text())
        rel = f.relative_to(src_scen)
        for k in range(copies):
            d = raw if k == 0 else json.loads(json.dumps(raw))
            if k:
                d["meta"]["scenario_id"] = f"{raw['meta']['scenario_id']}_X{k}"
            out = dst / "scenarios" / rel.parent / (f.stem + (f"_x{k}" if k else "") + ".json")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(d))
    return dst


# ---------------------------------------------------------------- timers


class Timers:
    """Wall-clock seconds per category (and per sample), from wrapped synchronous calls."""

    def __init__(self) -> None:
        self.total: dict[str, float] = {}
        self.cpu: dict[str, float] = {}  # thread CPU seconds (the event-loop thread)
        self.calls: dict[str, int] = {}
        self.by_sample: dict[tuple[str, int], dict[str, float]] = {}

    @staticmethod
    def _sample_key() -> tuple[str, int] | None:
        from inspect_ai.log._samples import sample_active

        a = sample_active()
        return (str(a.sample.id), a.epoch) if a is not None else None

    def add(self, cat: str, dt: float, dcpu: float = 0.0) -> None:
        self.total[cat] = self.total.get(cat, 0.0) + dt
        self.cpu[cat] = self.cpu.get(cat, 0.0) + dcpu
        self.calls[cat] = self.calls.get(cat, 0) + 1
        key = self._sample_key()
        if key is not None:
            d = self.by_sample.setdefault(key, {})
            d[cat] = d.get(cat, 0.0) + dt

    @contextmanager
    def time(self, cat: str) -> Iterator[None]:
        t, c = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.add(cat, time.perf_counter() - t, time.thread_time() - c)

    def wrap(self, owner: Any, attr: str, cat: str) -> None:
        """Replace `owner.attr` (a sync or async callable) by a timed version."""
        import functools
        import inspect as _inspect

        fn = getattr(owner, attr)
        timers = self
        if _inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def awrapped(*a: Any, **kw: Any) -> Any:
                t, c = time.perf_counter(), time.thread_time()
                try:
                    return await fn(*a, **kw)
                finally:
                    timers.add(cat, time.perf_counter() - t, time.thread_time() - c)

            setattr(owner, attr, awrapped)
        else:

            @functools.wraps(fn)
            def wrapped(*a: Any, **kw: Any) -> Any:
                t, c = time.perf_counter(), time.thread_time()
                try:
                    return fn(*a, **kw)
                finally:
                    timers.add(cat, time.perf_counter() - t, time.thread_time() - c)

            setattr(owner, attr, wrapped)


def agent_turns(sample: Any) -> int:
    """Agent messages of a sample (the assistant messages the agent produced)."""
    return sum(1 for m in sample.messages if m.role == "assistant")


def tool_results(sample: Any) -> list[list[int]]:
    """For each agent message of a sample, the length of each tool result its calls got."""
    length = {m.tool_call_id: len(m.text) for m in sample.messages if m.role == "tool"}
    return [[length.get(c.id, 0) for c in m.tool_calls or []] for m in sample.messages if m.role == "assistant"]


def model_calls(sample: Any) -> int:
    return sum(1 for e in sample.events if e.event == "model")
