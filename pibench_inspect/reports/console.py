"""At the end of every run of a pi-bench task: how many samples ended in an Inspect error, an
agent_error or a user_error, and how many ended because the agent's model stopped (overflow,
content filter, empty reply), with the first reason of each kind in one line, on stderr.

A broken agent or simulator, or a model too small for the prompt, otherwise looks like a low
score; this line makes it loud. A sample error is named by its underlying cause (the model call
that failed, how and after how many attempts: reports/causes.py), not by Inspect's retry
wrapper. An Inspect hook (registered through the package's entry point) so it runs for
`inspect eval`, `eval()` in Python and `pi run` alike.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from ..runtime.inspect_internals import is_cancellation_message
from inspect_ai.hooks import Hooks, RunEnd, SampleEnd, TaskStart, hooks

from ..conversation.termination import AGENT_STOPS, ERRORS, Termination
from .causes import sample_error_cause
from ..scoring.record import score_record, semantic_score

KINDS = (Termination.ERROR, *ERRORS)
# a sample Inspect cancelled because the run stopped (the first error with fail_on_error): not
# an error of its own, counted apart
CANCELLED = "cancelled"
# counted only when they happen: the agent's model stopped without an answer
STOPS = tuple(t.value for t in AGENT_STOPS.values())


@dataclass
class Tally:
    task: str
    samples: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {k: 0 for k in (*KINDS, CANCELLED)})
    first: dict[str, str] = field(default_factory=dict)
    judged: int = 0  # scored samples with a semantic score (an NL check was judged)
    nl_checks: int = 0  # scored samples whose scenario has NL checks
    not_scored: str | None = None  # why the NL tier was not scored, the first sample's reason
    # samples that passed every evaluated check while some of their checks were not evaluated
    # (keyless: their NL checks), and how many checks that left unjudged
    passed_unevaluated: int = 0
    unevaluated_checks: int = 0

    def add(self, kind: str, reason: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.first.setdefault(kind, reason)

    def add_nl(self, md: dict[str, Any]) -> None:
        if not md:
            return
        self.judged += semantic_score(md) is not None
        tier = str(md.get("nl_tier") or "")
        self.nl_checks += tier != "no_nl_checks"
        if tier.startswith("not_scored") and self.not_scored is None:
            self.not_scored = tier.removeprefix("not_scored").lstrip(": ")

    def add_unevaluated(self, sample: Any, md: dict[str, Any]) -> None:
        from ..scoring.explain import check_list

        score = (sample.scores or {}).get("pibench_scorer")
        passed = bool(score and isinstance(score.value, dict) and score.value.get("all_passed"))
        skipped = [c for c in check_list(md.get("checks")) if isinstance(c, dict) and c.get("passed") is None]
        if passed and skipped:
            self.passed_unevaluated += 1
            self.unevaluated_checks += len(skipped)

    def unevaluated_line(self) -> str | None:
        """A pass with checks left unjudged is a pass of the evaluated checks only: say so."""
        if not self.passed_unevaluated:
            return None
        return (f"{self.passed_unevaluated} passed sample(s) left {self.unevaluated_checks} check(s) not evaluated "
                "(NL checks, with no grader): their pass covers the evaluated checks only, never these")

    def semantic_line(self) -> str | None:
        """`semantic_score not scored: why`, when no NL check of the run was judged."""
        if self.judged or not self.samples:
            return None
        why = (self.not_scored or ("no scenario of the run has an NL check" if not self.nl_checks
                                   else "no NL check was judged (see the judge errors in the explanations)"))
        return f"semantic_score not scored: {why}"


def sample_outcome(sample: Any, md: dict[str, Any] | None = None) -> tuple[str, str] | None:
    """(kind, reason) when the sample ended badly, else None; `md`: its score record, if read."""
    if sample.error is not None:
        if is_cancellation_message(sample.error.message):
            return CANCELLED, sample.error.message
        return Termination.ERROR, sample_error_cause(sample) or "unknown error"
    md = score_record(sample) if md is None else md
    for kind in ERRORS:  # each also names its own metadata key (its message)
        if md.get("termination") == kind or md.get(kind):
            return kind, str(md.get(kind) or kind)
    if md.get("termination") in STOPS:
        return md["termination"], str(md.get("stop_detail") or md["termination"])
    return None


def summary_line(t: Tally) -> str:
    shown = [*KINDS, *(k for k in STOPS if t.counts.get(k))]
    head = f"pi-bench: {t.samples} sample(s) of {t.task}; " + ", ".join(f"{t.counts.get(k, 0)} {k}" for k in shown)
    if t.counts.get(CANCELLED):
        head += f", {t.counts[CANCELLED]} {CANCELLED} (not run to the end: the run stopped)"
    reasons = [f"first {k}: {t.first[k][:300]}" for k in shown if k in t.first]
    return head + ("" if not reasons else "\n  " + "\n  ".join(reasons))


@hooks(name="pibench_run_summary", description="pi-bench: errors, agent_error and user_error at the end of a run")
class RunSummary(Hooks):
    def __init__(self) -> None:
        self.tallies: dict[str, Tally] = {}  # eval_id -> counts (pi-bench tasks only)

    async def on_task_start(self, data: TaskStart) -> None:
        if data.spec.task.startswith("pibench_inspect/"):
            self.tallies[data.eval_id] = Tally(data.spec.task.removeprefix("pibench_inspect/"))

    async def on_sample_end(self, data: SampleEnd) -> None:
        tally = self.tallies.get(data.eval_id)
        if tally is None:
            return
        tally.samples += 1
        md = score_record(data.sample) if data.sample.error is None else {}
        outcome = sample_outcome(data.sample, md)
        if outcome:
            tally.add(*outcome)
        tally.add_nl(md)
        tally.add_unevaluated(data.sample, md)

    async def on_run_end(self, data: RunEnd) -> None:
        lines = []
        for log in data.logs:
            tally = self.tallies.pop(log.eval.eval_id, None)
            if tally is not None:
                lines.append(summary_line(tally))
                lines += not_applicable_lines(log)
                if (line := tally.semantic_line()) is not None:
                    lines.append(f"pi-bench: {line}")
                if (line := tally.unevaluated_line()) is not None:
                    lines.append(f"pi-bench: {line}")
        if lines:
            say(lines)


def say(lines: list[str]) -> None:
    """Lines on stderr, from the start of a line: Inspect's last line on stdout (`Log: ...`,
    then a line of spaces) has no newline, so when both streams go to one file or pipe (`2>&1`,
    CI logs) what is written straight after it followed 80 spaces."""
    try:
        sys.stdout.flush()
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
        shared = (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino) and not sys.stderr.isatty()
    except (OSError, ValueError, AttributeError):  # no real file behind a stream (a notebook, a test)
        shared = False
    print(("\n" if shared else "") + "\n".join(lines), file=sys.stderr, flush=True)


def not_applicable_lines(log: Any) -> list[str]:
    """Which rates had nothing to measure (the table shows them as nan), in one line."""
    from ..scoring.metrics import not_applicable

    scores = log.results.scores if log.results else []
    na = not_applicable(scores[0].metrics) if scores else []
    return [f"pi-bench: not applicable (no run in the denominator): {'; '.join(na)}"] if na else []
