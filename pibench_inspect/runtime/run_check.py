"""A pi-bench run that lost anything says so and exits non-zero (issue 25, item 3).

`inspect eval` exits 0 whatever its log holds (only `inspect eval-set` reports failure in its
exit status), so a run whose log ended `error`, `cancelled` or still `started`, or that holds
fewer samples than the run was asked for, looked like a success to every script and CI job
that ran it. This Inspect hook watches the pi-bench tasks of a run: at the end it compares each
task's log with what the run was asked for (the dataset's samples, narrowed by `--sample-id`,
times the epochs) and, when something is missing, prints one line per task saying what
(`pi-bench: ... lost ...`) and makes the process exit 1. A task whose log was never finished
(the log writer failed, the run was killed by an exception) counts as lost too.

A run interrupted by the user (Ctrl-C; Inspect writes its log as `cancelled`) lost nothing it
did not mean to: it exits 130, as a bare Inspect task does at a terminal (and did not do when
its output was piped), with one line saying what its log holds (`pi-bench: the run was
interrupted: ...`), never the "lost" line. Inspect calls no `on_task_end` for a cancelled task
and hands `on_run_end` no logs, so the log is found through Inspect's own registry of the
run's tasks (inspect_internals.eval_log_locations).

`exit_status()` is what `pibench`/`pi` commands that run evaluations in-process consult.

The process always ends once the run has: a thread that does not stop (a blocked agent's, in
code we do not control) could otherwise keep the interpreter waiting for it at exit; such a
process is ended LINGER_SECONDS after its run, with a line that says so.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import zipfile
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.hooks import Hooks, RunEnd, SampleEnd, TaskEnd, TaskStart, hooks

LINGER_SECONDS = 10.0
INTERRUPTED = 130  # the exit status of a run the user interrupted (128 + SIGINT)


@dataclass
class Watched:
    task: str
    expected: int
    ended: int = 0
    finished: bool = False  # the task's log was written (on_task_end)
    problem: str | None = None
    interrupted: str | None = None  # what the log of a task the user interrupted holds


@dataclass
class _State:
    watched: dict[str, Watched] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)  # one line per task that lost something
    interrupted: list[str] = field(default_factory=list)  # one line per task the user interrupted
    exit_armed: bool = False
    enforce: bool = False  # set by our own commands (`pi run`); the `inspect` CLI is detected


STATE = _State()


def enforce() -> None:
    """This process is a command that runs evaluations (`pi run`): the exit rules apply."""
    STATE.enforce = True


def enforced() -> bool:
    """Whether this process's exit status is ours to set: the `inspect` command line, or one of
    our commands that said so. Never a library caller's process (a notebook, a test run)."""
    if STATE.enforce:
        return True
    argv0 = sys.argv[0] if sys.argv else ""
    return os.path.basename(argv0) == "inspect" or argv0.replace(os.sep, "/").endswith("inspect_ai/__main__.py")


def expected_samples(spec: Any) -> int:
    """Sample runs a task was asked for: its dataset, narrowed by `--sample-id` (or else by
    `--limit`, as Inspect slices it), times epochs."""
    samples = spec.dataset.samples or 0
    limit = spec.config.limit
    if spec.config.sample_id is not None:
        from .inspect_internals import sample_id_matcher

        matches = sample_id_matcher(spec.config.sample_id)
        samples = sum(1 for sid in spec.dataset.sample_ids or [] if matches(sid))
    elif limit is not None:
        chosen = slice(*limit) if isinstance(limit, (tuple, list)) else slice(0, limit)
        samples = len(range(samples)[chosen])
    return samples * (spec.config.epochs or 1)


def log_problem(log: Any, expected: int | None = None) -> str | None:
    """What a finished pi-bench log lost, or None: a status other than success, or fewer
    samples on disk than expected (the header's count when `expected` is not known)."""
    name = os.path.basename(str(log.location or "")) or "the log"
    if log.status != "success":
        why = f": {log.error.message.splitlines()[0][:200]}" if log.error is not None and log.error.message else ""
        return f"{name} ended with status {log.status!r}{why}"
    if expected is None and log.results is not None:
        expected = log.results.total_samples
    present = _samples_present(log)
    if expected is not None and present is not None and present < expected:
        return f"{name} holds {present} of the {expected} sample runs it was asked for"
    return None


def interruption(log: Any, expected: int | None) -> str:
    """What the log of an interrupted task holds, in one line."""
    name = str(log.location or "") or "the log"
    present, scored = _samples_held(name)
    asked = f" of the {expected} sample runs asked for" if expected is not None else " sample runs"
    return f"{name} is marked cancelled and holds {present}{asked}, {scored} of them scored"


def _samples_held(location: str) -> tuple[int, int]:
    """Sample runs in a log, and how many of them were scored (ended without an error)."""
    from inspect_ai.log import read_eval_log_sample_summaries

    try:
        summaries = read_eval_log_sample_summaries(location)
    except Exception:  # noqa: BLE001 (a log that cannot be read holds nothing usable)
        return 0, 0
    return len(summaries), sum(1 for s in summaries if s.error is None and s.scores)


def _samples_present(log: Any) -> int | None:
    if log.samples is not None:
        return len(log.samples)
    location = str(log.location or "")
    if not location or not os.path.exists(location):
        return None
    if location.endswith(".eval"):
        # an .eval log is a zip with one `samples/<id>_epoch_<n>.json` entry per sample run
        # written: its directory is read without decompressing anything, where reading the
        # sample summaries parsed and validated each one (~0.7 ms a sample at the end of a run)
        try:
            with zipfile.ZipFile(location) as archive:
                return len({name for name in archive.namelist()
                            if name.startswith("samples/") and name.endswith(".json")})
        except (zipfile.BadZipFile, OSError):  # a log that cannot be read holds nothing usable
            return 0
    from inspect_ai.log import read_eval_log_sample_summaries

    try:
        return len(read_eval_log_sample_summaries(location))
    except Exception:  # noqa: BLE001 (a log that cannot be read holds nothing usable)
        return 0


def exit_status() -> int:
    """130 when the user interrupted a pi-bench task of this process, else 1 when one lost
    something, else 0."""
    return INTERRUPTED if STATE.interrupted else 1 if STATE.lost else 0


def _say(line: str) -> None:
    from ..cli.terminal import inert  # a log's error may quote a model: nothing in it acts on the terminal

    print(f"pi-bench: {inert(line)}", file=sys.stderr, flush=True)


def _exit_nonzero() -> None:
    """At interpreter exit (atexit runs ours first: it was registered last): run the other exit
    handlers, then end with exit_status() (1 or 130) whatever the command's own status was.
    Ending with os._exit also skips the interpreter's finalization, where a run cut short by
    Ctrl-C had objects still held (by abandoned daemon threads) that DuckDB's bindings then
    reported, a hundred "nanobind: leaked" lines."""
    atexit.unregister(_exit_nonzero)
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(exit_status())


def _end_lingering() -> None:
    """Called as the interpreter begins to exit, before it waits for the other threads: if
    one of them never ends, end the process after LINGER_SECONDS anyway."""

    def later() -> None:
        threading.Event().wait(LINGER_SECONDS)
        _say(f"threads still running {LINGER_SECONDS:g} s after the run ended (an agent that never returned); "
             "exiting anyway")
        os._exit(exit_status())

    threading.Thread(target=later, name="pibench-exit", daemon=True).start()


def _arm_exit() -> None:
    if STATE.exit_armed or not enforced():
        return
    STATE.exit_armed = True
    try:
        threading._register_atexit(_end_lingering)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # no such hook in this Python, or already exiting
        pass


@hooks(name="pibench_run_check", description="pi-bench: a run that lost samples exits non-zero, saying what")
class RunCheck(Hooks):
    async def on_task_start(self, data: TaskStart) -> None:
        if isinstance((data.spec.metadata or {}).get("pibench"), dict):
            STATE.watched[data.eval_id] = Watched(data.spec.task, expected_samples(data.spec))
            _arm_exit()

    async def on_sample_end(self, data: SampleEnd) -> None:
        watched = STATE.watched.get(data.eval_id)
        if watched is not None:
            watched.ended += 1

    async def on_task_end(self, data: TaskEnd) -> None:
        watched = STATE.watched.get(data.eval_id)
        if watched is not None:
            watched.finished = True
            if data.log.status == "cancelled":
                watched.interrupted = interruption(data.log, watched.expected)
            else:
                watched.problem = log_problem(data.log, watched.expected)

    async def on_run_end(self, data: RunEnd) -> None:
        from .inspect_internals import eval_log_locations

        logs = {log.eval.eval_id: log for log in data.logs or []}
        locations = eval_log_locations()
        for eval_id, watched in list(STATE.watched.items()):
            problem, interrupted = watched.problem, watched.interrupted
            if not watched.finished:
                log = logs.get(eval_id) or _header(locations.get(eval_id))
                if log is not None and log.status == "cancelled":  # Ctrl-C: no on_task_end
                    interrupted = interruption(log, watched.expected)
                elif log is not None and log.status != "started":  # ended on an error: no on_task_end
                    problem = log_problem(log, watched.expected)
                elif _is_interruption(data.exception):
                    interrupted = f"the log of {watched.task} was never finished ({watched.ended} of " \
                                  f"{watched.expected} sample runs ended)"
                else:
                    why = f" ({type(data.exception).__name__})" if data.exception is not None else ""
                    problem = (f"the log of {watched.task} was never finished{why}: {watched.ended} of "
                               f"{watched.expected} sample runs ended, none of them can be trusted to be in the log")
            if interrupted:
                STATE.interrupted.append(interrupted)
                if enforced():  # a library caller (`pibench play`, a notebook) says it its own way
                    _say(f"the run was interrupted: {interrupted}")
            elif problem:
                STATE.lost.append(problem)
                _say(f"the run lost samples: {problem}")
            del STATE.watched[eval_id]
        if (STATE.lost or STATE.interrupted) and enforced():
            atexit.unregister(_exit_nonzero)  # registered once, and last
            atexit.register(_exit_nonzero)


def _header(location: str | None) -> Any:
    """The header of the log at `location` (None when there is none, or it cannot be read)."""
    if not location:
        return None
    from inspect_ai.log import read_eval_log

    try:
        return read_eval_log(location, header_only=True)
    except Exception:  # noqa: BLE001 (no readable log: the task counts as never finished)
        return None


def _is_interruption(err: BaseException | None) -> bool:
    import asyncio

    return isinstance(err, (KeyboardInterrupt, asyncio.CancelledError))
