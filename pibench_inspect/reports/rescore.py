"""Re-score a log after a scenario's checks were fixed, without re-running the agent.

`inspect score LOG` does the same with the scorer arguments recorded in the log; this
convenience also takes another scenario source (`--source`), judge mode (`--judge`) or scoring
(`--scoring parity|strict|auto`: the original's roll-up, ours, or the domain's default).

Everything the scorer reads is in the log (each sample's messages and its stored final state,
`pibench:final_state`), so Inspect's own `score()` re-runs the pibench scorer on the logged
samples with scenarios rebuilt from the log's source (or another one), then recomputes the
metrics and epoch reductions. The new log records what it was re-scored from.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from inspect_ai import score as inspect_score
from inspect_ai.log import EvalLog, write_eval_log

from ..scenario.catalog import load_set
from ..scoring.scorer import pibench_scorer
from ..task_args import REMOVED, parse_args
from .logs import ReportInputError, load_logs


def rescore(log_path: str | Path, out: str | Path, *, source: str | None = None, judge: str | None = None,
            scoring: str | None = None, allow_partial: bool = False) -> EvalLog:
    # a damaged log (a sample missing, a score that is no number) is refused, as by the report;
    # with allow_partial its usable samples are re-scored
    loaded = load_logs([log_path], check=True, allow_partial=allow_partial)
    if len(loaded) != 1:
        raise ReportInputError(f"{log_path}: give one log file to re-score, not a folder of {len(loaded)}")
    log = loaded[0].log
    if not log.samples:
        raise ReportInputError(f"{log_path}: the log holds no samples to re-score")
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
    missing = sorted({str(s.id) for s in log.samples} - set(sset.entries))
    if missing:
        raise ReportInputError(f"{log_path}: scenario(s) {', '.join(missing)} not found under "
                               f"{sset.source or 'the shipped set'}; pass --source")
    parity = {"parity": True, "strict": False}.get(args.scoring)
    source_arg = str(sset.source) if sset.source else None
    # the same scorer Inspect rebuilds for `inspect score LOG` (metrics read every run, no reducer)
    new = inspect_score(log, pibench_scorer(source=source_arg, judge=args.judge, parity=parity, scenarios=sset),
                        action="overwrite", display="none")
    meta = dict(new.eval.metadata or {})
    meta["pibench"] = {**meta.get("pibench", {}), "source": args.source, "judge": args.judge, "scoring": args.scoring}
    meta["pibench_rescored"] = {"from": str(loaded[0].path), "at": datetime.now(timezone.utc).isoformat(),
                                "source": str(sset.source) if sset.source else "shipped", "judge": args.judge,
                                "scoring": args.scoring}
    new.eval.metadata = meta
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(new, str(out))
    new.location = str(out)
    return new
