"""Re-score a log after a scenario's checks were fixed, without re-running the agent.

`inspect score LOG` does the same with the scorer arguments recorded in the log; this
convenience also takes another scenario source (`--source`), judge mode (`--judge`) or scoring
(`--scoring parity|strict|auto`: the original's roll-up, ours, or the domain's default).

Everything the scorer reads is in the log (each sample's messages and its stored final state,
`pibench:final_state`), so Inspect's own `score()` re-runs the pibench scorer on the logged
samples with scenarios rebuilt from the log's source (or another one), then recomputes the
metrics and epoch reductions. The new log records what it was re-scored from.

Only samples that were played to their end are scored: a sample that ended in an error (an
Inspect sample error, which every metric leaves out), one a person interrupted in `pibench play`,
and one never played (no termination, no score) stay in the new log as they were, unscored, and
are named (`Rescored.not_scored`); Inspect's `score()` would give each of them a score.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from inspect_ai import score as inspect_score
from inspect_ai.log import EvalLog, EvalSample, write_eval_log

from ..conversation.keys import TERMINATION
from ..scenario.catalog import load_set
from ..scenario.content_hash import content_hash
from ..scoring.record import SCORER
from ..scoring.scorer import pibench_scorer
from ..task_args import REMOVED, parse_args
from .logs import ReportInputError, check_log, interruption, load_logs

LOG_SUFFIXES = (".eval", ".json")


@dataclass
class Rescored:
    log: EvalLog
    scored: int
    not_scored: list[str] = field(default_factory=list)  # "ID (epoch N): why", one per sample left unscored


def check_out(out: str | Path) -> Path:
    """Where the re-scored log goes: a .eval or .json file, not a folder (checked before any work)."""
    path = Path(out).expanduser()
    if path.is_dir():
        raise ReportInputError(f"--out {out}: is a folder; name the log file to write (e.g. {path / 'rescored.eval'})")
    if path.suffix not in LOG_SUFFIXES:
        raise ReportInputError(f"--out {out}: a log file ends in .eval or .json (Inspect writes the format the "
                               "name says)")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ReportInputError(f"--out {out}: {parent} is not a folder")
            break
    return path


def why_unscored(sample: EvalSample) -> str | None:
    """Why `sample` must not be scored (it did not finish playing), or None."""
    how = interruption(sample)
    if how:
        return f"interrupted in pibench play ({how})"
    if sample.error is not None:
        return "ended in an error"
    if (sample.store or {}).get(TERMINATION) is None and (sample.scores or {}).get(SCORER) is None:
        return "never played to its end (no termination, no score)"
    return None


def rescore(log_path: str | Path, out: str | Path, *, source: str | None = None, judge: str | None = None,
            scoring: str | None = None, allow_partial: bool = False) -> Rescored:
    out = check_out(out)
    # a damaged log (a sample missing, a score that is no number) is refused, as by the report;
    # with allow_partial its played samples are re-scored
    loaded = load_logs([log_path])
    if len(loaded) != 1:
        raise ReportInputError(f"{log_path}: give one log file to re-score, not a folder of {len(loaded)}")
    original = list(loaded[0].log.samples or [])
    check_log(loaded[0], allow_partial)
    log = loaded[0].log
    if not original:
        raise ReportInputError(f"{log_path}: the log holds no samples to re-score")
    unscored = {id(s): why for s in original if (why := why_unscored(s))}
    playable = [s for s in original if id(s) not in unscored]
    not_scored = [f"{s.id} (epoch {s.epoch}): {unscored[id(s)]}" for s in original if id(s) in unscored]
    if not playable:
        raise ReportInputError(f"{log_path}: no sample to re-score: {'; '.join(not_scored[:3])}"
                               + (f" and {len(not_scored) - 3} more" if len(not_scored) > 3 else ""))
    # older logs carry -T epochs / scenarios, which are Inspect's --epochs / --sample-id now
    recorded = {k: v for k, v in loaded[0].args.items() if k not in REMOVED}
    try:
        args = parse_args({**recorded, **({"source": source} if source else {}), **({"judge": judge} if judge else {}),
                           **({"scoring": scoring} if scoring else {})})
    except ValueError as err:
        raise ReportInputError(f"{log_path}: its task arguments do not parse ({err})") from None
    try:
        sset = load_set(args.source)
    except FileNotFoundError as err:
        raise ReportInputError(f"{log_path}: cannot rebuild its scenarios ({err}); pass --source") from None
    missing = sorted({str(s.id) for s in playable} - set(sset.entries))
    if missing:
        raise ReportInputError(f"{log_path}: scenario(s) {', '.join(missing)} not found under "
                               f"{sset.source or 'the shipped set'}; pass --source")
    parity = {"parity": True, "strict": False}.get(args.scoring)
    source_arg = str(sset.source) if sset.source else None
    # the same scorer Inspect rebuilds for `inspect score LOG` (metrics read every run, no
    # reducer), over the played samples only; the others go back into the log as they were
    try:
        new = inspect_score(log.model_copy(update={"samples": playable}),
                            pibench_scorer(source=source_arg, judge=args.judge, parity=parity, scenarios=sset),
                            action="overwrite", display="none")
    except Exception as err:  # e.g. the model the log ran cannot be rebuilt here (no provider, no key)
        raise ReportInputError(f"{log_path}: re-scoring failed ({type(err).__name__}: "
                               f"{' '.join(str(err).split())[:300]})") from None
    scored = {(s.id, s.epoch): s for s in new.samples or []}
    new.samples = [scored.get((s.id, s.epoch), s) for s in original]
    if new.results is not None:  # the header counts every sample run, as the run's did
        announced = log.results.total_samples if log.results is not None else len(original)
        new.results.total_samples = max(announced, len(original))
        new.results.completed_samples = len(playable)
    meta = dict(new.eval.metadata or {})
    meta["pibench"] = {**meta.get("pibench", {}), "source": args.source, "judge": args.judge, "scoring": args.scoring}
    meta["pibench_rescored"] = {"from": str(loaded[0].path), "at": datetime.now(timezone.utc).isoformat(),
                                "source": str(sset.source) if sset.source else "shipped", "judge": args.judge,
                                "scoring": args.scoring,
                                # what the scores were computed from (the run's own set is `scenario_set`)
                                "scenario_set": content_hash(source_arg, note="hashed when the log was re-scored"),
                                "not_scored": not_scored}
    new.eval.metadata = meta
    out.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(new, str(out))
    new.location = str(out)
    return Rescored(new, len(playable), not_scored)
