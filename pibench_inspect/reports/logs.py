"""Find and read Inspect logs for a report, failing with a message that names the bad path.

Report input comes from a person typing paths, so every failure must say which path and why
(the CLI turns ReportInputError into exit 2) instead of surfacing a pydantic traceback.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, read_eval_log

from ..conversation.keys import INTERRUPTED
from ..scoring.record import SCORER, score_record
from .bounded import LOG_READ_SECONDS, MAX_LOGS, Unreadable, check_log_file, within
from .values import record_problem, value_problem

LOG_SUFFIXES = (".eval", ".json")
HUMAN = "human"  # -T agent=human / user=human: a person played it (`pibench play`)


class ReportInputError(ValueError):
    """A report input path that is missing or is not an Inspect log."""


def pibench_problem(log: EvalLog, *, allow_partial: bool) -> str | None:
    """Why `log` cannot be reported as a pi-bench run, or None.

    Any Inspect log reads; only one written by a pi-bench task (its task metadata, or the
    pibench scorer) can be reported, and an incomplete one (killed, errored, still running)
    only when the caller says partial results are fine. A `pibench play` session the person
    interrupted is not incomplete: it is a session of its own scenario that ended unscored
    (load_logs sets it apart).
    """
    scorers = {s.name for s in (log.results.scores if log.results else [])}
    if not isinstance((log.eval.metadata or {}).get("pibench"), dict) and "pibench_scorer" not in scorers:
        return f"not a pi-bench log (task {log.eval.task!r} has no pibench metadata or scorer)"
    if log.status != "success" and not allow_partial and not interrupted_session(log):
        done = len(log.samples or [])
        total = chosen_samples(log)
        epochs = log.eval.config.epochs or 1
        of = f" of {total * epochs}" if total is not None else ""
        return (f"incomplete log (status {log.status!r}, {done}{of} samples); "
                "pass --allow-partial to use what it holds")
    return None


def chosen_samples(log: EvalLog) -> int | None:
    """How many samples the run chose: its dataset after --sample-id (a `pibench play` session
    chooses one scenario of the set), else the whole dataset."""
    ds = log.eval.dataset
    if ds is None:
        return None
    return len(ds.sample_ids) if ds.sample_ids is not None else ds.samples


def task_args(log: EvalLog) -> dict[str, Any]:
    """The pibench task arguments: recorded in the task metadata (complete, defaults included),
    else the -T arguments Inspect kept."""
    meta = (log.eval.metadata or {}).get("pibench")
    return dict(meta) if isinstance(meta, dict) else dict(log.eval.task_args or {})


def played_by_person(log: EvalLog) -> bool:
    """A `pibench play` session: a person was the agent (`human`) or the user."""
    args = task_args(log)
    return HUMAN in (args.get("agent"), args.get("user"))


def interruption(sample: EvalSample) -> str | None:
    """How a person ended a `pibench play` sample before it finished (Ctrl-C, the end of input),
    or None. Such a sample has no score: it is not a result."""
    how = (sample.store or {}).get(INTERRUPTED)
    if not how or (sample.scores or {}).get(SCORER) is not None:
        return None
    return {"ctrl-c": "Ctrl-C", "eof": "end of input"}.get(str(how), str(how)[:40])


def interrupted_session(log: EvalLog) -> bool:
    """A `pibench play` session the person interrupted: cancelled, and every sample it holds
    either scored or interrupted."""
    samples = log.samples or []
    return (log.status == "cancelled" and played_by_person(log) and bool(samples)
            and any(interruption(s) for s in samples)
            and all(interruption(s) or (s.scores or {}).get(SCORER) is not None for s in samples))


def non_finite_at(value: Any, where: str) -> str | None:
    """The path of the first NaN or Infinity in `value` (a score's value or metadata), or None.
    Iterative: a damaged log may nest as it likes."""
    stack = [(value, where)]
    while stack:
        v, at = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return at
        if isinstance(v, dict):
            stack += [(x, f"{at}.{k}") for k, x in v.items()]
        elif isinstance(v, list):
            stack += [(x, f"{at}[{i}]") for i, x in enumerate(v)]
    return None


def damage(log: EvalLog, set_apart: int = 0) -> tuple[list[str], set[int]]:
    """What a log lost or holds that cannot be reported: fewer samples than its header announces,
    a sample with neither a pi-bench score nor an error, a score that is not a finite number
    (a `1e999` reads as Infinity and would be written as `Infinity` into results.json). Returns
    the problems and the indexes of the samples that cannot be used. `set_apart`: samples taken
    out before (interrupted play sessions), which the header still counts."""
    problems: list[str] = []
    unusable: set[int] = set()
    samples = log.samples or []
    announced = log.results.total_samples if log.results is not None else None
    held = len(samples) + set_apart
    if announced is not None and held < announced:
        problems.append(f"its header announces {announced} sample runs, the log holds {held} "
                        f"({announced - held} missing)")
    for i, sample in enumerate(samples):
        score = (sample.scores or {}).get(SCORER)
        name = f"sample {sample.id} (epoch {sample.epoch})"
        if score is None:
            if sample.error is None:
                problems.append(f"{name} has neither a pi-bench score nor an error")
                unusable.add(i)
            continue
        bad = non_finite_at(score.value, "value") or non_finite_at(score.metadata, "metadata")
        bad = f"its score's {bad} is not a finite number" if bad else (
            value_problem(score.value) or record_problem(score_record(sample, SCORER)))
        if bad:
            problems.append(f"{name}: {bad}")
            unusable.add(i)
    return problems, unusable


@dataclass
class LoadedLog:
    path: Path
    log: EvalLog
    # what the log lost (reported with --allow-partial; otherwise the log is refused)
    problems: list[str] = field(default_factory=list)
    # a `pibench play` session's samples the person interrupted, (id, how): set apart
    interrupted: list[tuple[str, str]] = field(default_factory=list)

    @property
    def args(self) -> dict[str, Any]:
        return task_args(self.log)

    @property
    def played_by_person(self) -> bool:
        return played_by_person(self.log)

    @property
    def agent_id(self) -> str:
        """Built-in agents are named by themselves; the model under test by its model name. A run
        under an ablation is its own entry ("gpt-4o-mini [no_pressure]"): never pooled with the
        agent's unablated runs, and compared with them side by side. People playing the agent are
        one entry, `human` (the human baseline); a model a person played the user against is its
        own entry ("gpt-4o-mini [human user]"), apart from its runs against the simulated user."""
        agent = self.args.get("agent", "model")
        name = str(self.log.eval.model) if agent == "model" else str(agent)
        ablation = self.args.get("ablation")
        name = f"{name} [{ablation}]" if ablation else name
        return f"{name} [human user]" if self.args.get("user") == HUMAN else name


def _read(path: Path) -> EvalLog:
    """The log at `path`, read only as bounded.py allows (a regular file, bounded, in time)."""
    try:
        check_log_file(path)
        log = within(LOG_READ_SECONDS, "log", lambda: read_eval_log(str(path)))
    except Unreadable as err:
        raise ReportInputError(f"{path}: {err}") from None
    except Exception as err:  # any parse failure means "not a log": say so, never a traceback
        raise ReportInputError(f"{path}: not an Inspect log ({type(err).__name__}: {str(err)[:200]})") from None
    if not isinstance(log, EvalLog) or log.eval is None:
        raise ReportInputError(f"{path}: not an Inspect log")
    return log


def _in_dir(folder: Path) -> list[Path]:
    # .json in a log folder may also be a report's results.json: only .json files that read as
    # logs count there, while a .eval that fails to read (a FIFO, a link to a device) is an error
    found = []
    for p in folder.rglob("*"):
        if p.suffix in LOG_SUFFIXES and not p.is_dir():
            found.append(p)
            if len(found) > MAX_LOGS:
                raise ReportInputError(f"{folder}: holds more than {MAX_LOGS} log files (MAX_LOGS); "
                                       "report a folder of fewer")
    return sorted(found)


def load_logs(paths: list[str | Path], *, check: bool = False, allow_partial: bool = False) -> list[LoadedLog]:
    """Every log named (files) or found (folders, recursively), in the order given. With `check`,
    each must be a complete pi-bench log (see pibench_problem), and the samples of a `pibench
    play` session the person interrupted are set apart (`interrupted`), never reported."""
    if not paths:
        raise ReportInputError("no log given")
    out: list[LoadedLog] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if not p.exists():
            raise ReportInputError(f"{p}: no such file or folder")
        if not p.is_dir():
            out.append(LoadedLog(p, _read(p)))
            continue
        found: list[LoadedLog] = []
        for f in _in_dir(p):
            try:
                found.append(LoadedLog(f, _read(f)))
            except ReportInputError:
                if f.suffix == ".eval":
                    raise
        if not found:
            raise ReportInputError(f"{p}: folder holds no Inspect log (.eval or .json)")
        out += found
    if check:
        for loaded in out:
            check_log(loaded, allow_partial)
    return out


def check_log(loaded: LoadedLog, allow_partial: bool) -> None:
    """Refuse a log that cannot be reported (ReportInputError), or keep what can be used: with
    allow_partial, a damaged log without its unusable samples, said in `problems`."""
    problem = pibench_problem(loaded.log, allow_partial=allow_partial)
    if problem:
        raise ReportInputError(f"{loaded.path}: {problem}")
    samples = loaded.log.samples or []
    if loaded.played_by_person:
        loaded.interrupted = [(str(s.id), how) for s in samples if (how := interruption(s))]
        loaded.log.samples = samples = [s for s in samples if not interruption(s)]
    problems, unusable = damage(loaded.log, len(loaded.interrupted))
    if problems and not allow_partial:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ReportInputError(f"{loaded.path}: damaged log: {problems[0]}{more}; "
                               "pass --allow-partial to use what it holds")
    if unusable:  # --allow-partial: reported without them, and the report says so
        loaded.log.samples = [s for i, s in enumerate(samples) if i not in unusable]
    loaded.problems = problems


def reported(logs: list[LoadedLog]) -> list[LoadedLog]:
    """The logs that hold something to report: not a play session that was only interrupted."""
    return [x for x in logs if x.log.samples or not x.interrupted]


def left_out(logs: list[LoadedLog], of: str = "this report") -> list[str]:
    """What the checked logs leave out (of `of`), one line each."""
    notes = [f"{x.path.name}: {p} (left out of {of})" for x in logs for p in x.problems]
    notes += [f"{x.path.name}: the `pibench play` session of {sid} was interrupted ({how}) before it finished: "
              "not scored, and not counted as an error" for x in logs for sid, how in x.interrupted]
    return notes
