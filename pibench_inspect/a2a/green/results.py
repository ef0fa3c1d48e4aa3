"""An assessment's Inspect log -> the leaderboard payload (reference 4.10), computed as
`pibench report` computes it, so the green server and a local report of the same log agree.
(A run that ended on an agent error carries the reason as the detail's `error`: rows.py.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...reports.logs import load_logs
from ...reports.rows import log_rows
from ...scoring.payload import leaderboard_payload
from ..wire import bounded


class AssessmentFailed(Exception):
    """The run produced no measurement of the agent; the text says why."""


def assessment_payload(log: str | Path, agent_id: str, domain: str) -> dict[str, Any]:
    # imported here: the report module brings the charts (matplotlib), which the server never draws
    from ...reports.report import time_used

    loaded = load_logs([log])
    rows = log_rows(loaded)
    if not rows:
        raise AssessmentFailed(f"the log {Path(log).name} holds no sample")
    if all(r["status"] == "error" for r in rows):
        # every run failed on our side (user simulator, judge, a bug): that measures the
        # server, not the agent, and must not reach a leaderboard as a zero
        raise AssessmentFailed(f"no sample could run: every sample run ended on an error (log {Path(log).name}); "
                               f"first error: {bounded(str(rows[0].get('error')))}")
    return leaderboard_payload(agent_id, rows, domain=domain, time_used=time_used(loaded))
