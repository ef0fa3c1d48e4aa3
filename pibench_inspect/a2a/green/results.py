"""An assessment's Inspect log -> the leaderboard payload (reference 4.10), computed as
`pibench report` computes it, so the green server and a local report of the same log agree,
except where the original's A2A rows differ from its local runner's: an unresolved decision is
the string "NONE" (not null). (A run that ended on an agent error carries the reason as the
detail's `error`: rows.py.) docs/parity.md lists what differs from the original's green, and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...reports.logs import damage, load_logs
from ...reports.rows import log_rows
from ...scoring.payload import leaderboard_payload
from ..wire import bounded, error_kind


class AssessmentFailed(Exception):
    """The run produced no measurement of the agent; the text says why."""


def assessment_payload(log: str | Path, agent_id: str, domain: str, time_used: float | None = None) -> dict[str, Any]:
    """`time_used`: the run's wall-clock seconds as the runner measured them (to the millisecond);
    without it, the log's run timestamps, which have whole-second resolution."""
    loaded = load_logs([log])
    problems, _ = damage(loaded[0].log)
    if problems:  # the payload would score fewer, or unusable, sample runs: no measurement
        raise AssessmentFailed(f"the log {Path(log).name} is damaged: {problems[0]}")
    rows = log_rows(loaded)
    if not rows:
        raise AssessmentFailed(f"the log {Path(log).name} holds no sample")
    for r in rows:
        if r["status"] == "completed" and r.get("canonical_decision") is None:
            r["canonical_decision"] = "NONE"  # as the original's A2A rows say it (reference 4.10, 5.5)
        if r.get("error") is not None and r.get("error_from") != "agent":
            # a failure on the server's side (its model roles, the user simulator, a bug): its
            # text may quote what some endpoint answered, which never goes back to the caller
            r["error"] = f"{error_kind(str(r['error']))} (details in the assessment's log on the server)"
    if all(r["status"] == "error" for r in rows):
        # every run failed on our side (user simulator, judge, a bug): that measures the
        # server, not the agent, and must not reach a leaderboard as a zero
        raise AssessmentFailed(f"no sample could run: every sample run ended on an error (log {Path(log).name}); "
                               f"first error: {bounded(str(rows[0].get('error')))}")
    if time_used is None:
        # imported here: the report module brings the charts (matplotlib), which the server never draws
        from ...reports.report import time_used as log_time_used

        time_used = log_time_used(loaded)
    return leaderboard_payload(agent_id, rows, domain=domain, time_used=round(float(time_used), 3))
