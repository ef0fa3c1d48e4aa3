"""Reports over pi-bench Inspect logs: the leaderboard payload with provenance, usage per role,
bootstrap confidence intervals, pass^k, report.md and charts; and re-scoring a log.

Everything here reads finished logs only, so a report never re-runs an agent.
"""

from .logs import LoadedLog, ReportInputError, load_logs

__all__ = ["LoadedLog", "ReportInputError", "load_logs"]
