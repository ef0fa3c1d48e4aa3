"""Find and read Inspect logs for a report, failing with a message that names the bad path.

Report input comes from a person typing paths, so every failure must say which path and why
(the CLI turns ReportInputError into exit 2) instead of surfacing a pydantic traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, read_eval_log

LOG_SUFFIXES = (".eval", ".json")


class ReportInputError(ValueError):
    """A report input path that is missing or is not an Inspect log."""


@dataclass
class LoadedLog:
    path: Path
    log: EvalLog

    @property
    def args(self) -> dict[str, Any]:
        """The pibench task arguments: recorded in the task metadata (complete, defaults included),
        else the -T arguments Inspect kept."""
        meta = (self.log.eval.metadata or {}).get("pibench")
        return dict(meta) if isinstance(meta, dict) else dict(self.log.eval.task_args or {})

    @property
    def agent_id(self) -> str:
        """Built-in agents are named by themselves; the model under test by its model name."""
        agent = self.args.get("agent", "model")
        return str(self.log.eval.model) if agent == "model" else str(agent)


def _read(path: Path) -> EvalLog:
    try:
        log = read_eval_log(str(path))
    except Exception as err:  # any parse failure means "not a log": say so, never a traceback
        raise ReportInputError(f"{path}: not an Inspect log ({type(err).__name__}: {str(err)[:200]})") from None
    if not isinstance(log, EvalLog) or log.eval is None:
        raise ReportInputError(f"{path}: not an Inspect log")
    return log


def _in_dir(folder: Path) -> list[Path]:
    # .json in a log folder may also be a report's results.json: only .json files that read as
    # logs count there, while a .eval that fails to read is an error
    found = sorted(p for p in folder.rglob("*") if p.suffix in LOG_SUFFIXES and p.is_file())
    return found


def load_logs(paths: list[str | Path]) -> list[LoadedLog]:
    """Every log named (files) or found (folders, recursively), in the order given."""
    if not paths:
        raise ReportInputError("no log given")
    out: list[LoadedLog] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if not p.exists():
            raise ReportInputError(f"{p}: no such file or folder")
        if p.is_file():
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
    return out
