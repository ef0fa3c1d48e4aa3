"""The assessment's Inspect run, in a process of its own:

    python -m pibench_inspect.a2a.green.runner '<EvalPlan as JSON>'

A subprocess because Inspect's eval() is not re-entrant within one process (two assessments
at once would share its global state) and because a crash, a hang or a runaway memory use of
one run must not take the server down; the server can also end a run by its process id.

Protocol on stdout, one JSON object per line (everything else the run prints goes to stderr):
    {"event": "start", "total": N}
    {"event": "sample_end", "scenario_id": ..., "epoch": e, "completed": n, "total": N, "error"?: str}
    {"event": "done", "log": PATH, "status": "success"|"error"|"cancelled", "error"?: str,
     "time_used": seconds}
`time_used` is the evaluation's own wall-clock duration, measured here to the millisecond: the
log's run timestamps have whole-second resolution (Inspect writes them with timespec="seconds"),
so a sub-second run would report 0.0 where the original reports 0.489.
Exit status 0 when the log's status is success, 1 otherwise, 2 for a bad invocation.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO

from inspect_ai.hooks import Hooks, SampleEnd, TaskStart, hooks

_channel: TextIO | None = None  # set by main(): the real stdout; None = hook inactive


def emit(event: dict[str, Any]) -> None:
    if _channel is not None:
        _channel.write(json.dumps(event) + "\n")
        _channel.flush()


@hooks(name="pibench_green_progress", description="Reports finished samples to the pi-bench green server.")
class Progress(Hooks):
    """One line per finished sample-epoch. Registered at import, but silent unless this module
    runs as the runner (importing it elsewhere must not print into someone's stdout)."""

    def __init__(self) -> None:
        self.total = 0
        self.completed = 0

    def enabled(self) -> bool:
        return _channel is not None

    async def on_task_start(self, data: TaskStart) -> None:
        from ...runtime.run_check import expected_samples  # --sample-id narrows the dataset after the spec

        self.total = expected_samples(data.spec)
        self.completed = 0
        emit({"event": "start", "total": self.total})

    async def on_sample_end(self, data: SampleEnd) -> None:
        # samples of one run finish on one event loop: this counter needs no lock
        self.completed += 1
        event: dict[str, Any] = {"event": "sample_end", "scenario_id": str(data.sample.id),
                                 "epoch": data.sample.epoch, "completed": self.completed, "total": self.total}
        if data.sample.error is not None:
            from ...reports.causes import sample_error_cause

            event["error"] = sample_error_cause(data.sample)  # the cause, not the retry wrapper
        emit(event)


PREFLIGHT_TIMEOUT = 20  # seconds for the one call that shows a role model answers


async def preflight(roles: dict[str, str]) -> str | None:
    """One tiny call to each role model, with no retries and a short timeout: a model that
    cannot be reached (no key, a dead endpoint, an unknown model) fails the assessment in
    seconds, instead of every sample retrying it for minutes. The reason, or None."""
    from inspect_ai.model import GenerateConfig, get_model

    for role, name in roles.items():
        try:
            model = get_model(name)
            await model.generate("Reply with OK.", config=GenerateConfig(
                max_tokens=5, max_retries=0, timeout=PREFLIGHT_TIMEOUT, attempt_timeout=PREFLIGHT_TIMEOUT))
        except Exception as err:  # noqa: BLE001 (whatever the provider raises is the reason)
            last = getattr(getattr(err, "last_attempt", None), "exception", None)  # tenacity's RetryError
            err = (last() if callable(last) else None) or err
            # the provider's text (which may quote the body some endpoint answered) is for the
            # operator, on stderr (kept in the assessment's folder); the caller gets its kind
            first = (str(err).strip().splitlines() or [""])[0][:300]
            print(f"preflight: the {role} model {name} failed: {type(err).__name__}: {first}", file=sys.stderr)
            return (f"the {role} model {name} cannot be reached ({type(err).__name__}); "
                    "the provider's answer is in the server's log")
    return None



def run(plan: dict[str, Any]) -> int:
    import asyncio

    from inspect_ai import eval as inspect_eval

    if plan.get("preflight", True) and plan.get("model_roles"):
        problem = asyncio.run(preflight(plan["model_roles"]))
        if problem:
            emit({"event": "done", "log": None, "status": "error", "error": problem})
            return 1
    started = time.perf_counter()
    logs = inspect_eval(
        plan["task"],
        task_args=plan["task_args"],
        model="none",  # the agent under test is remote; the user and judge come as roles
        model_roles=plan.get("model_roles") or None,
        max_samples=plan.get("max_samples") or 1,
        epochs=plan.get("epochs") or 1,
        sample_id=plan.get("sample_id"),
        log_dir=plan["log_dir"],
        display="none",
        # a sample that fails (user simulator down, a bug) becomes an error row, as in the
        # original, instead of stopping every other sample
        fail_on_error=False,
        # the original's retry_failed: run again what ended on an infrastructure error
        retry_on_error=plan.get("retry_on_error") or None,
    )
    time_used = round(time.perf_counter() - started, 3)
    if not logs:
        emit({"event": "done", "log": None, "status": "error", "error": "Inspect returned no log"})
        return 1
    log = logs[0]
    from ...runtime.run_check import log_problem
    from ..wire import error_kind

    # a log that ended `success` but holds fewer samples than asked for lost some: not a result
    problem = log_problem(log, None) if log.status == "success" else None
    status = "error" if problem else log.status
    done: dict[str, Any] = {"event": "done", "log": log.location, "status": status, "time_used": time_used}
    if log.error is not None:  # the text stays in the log, on the server
        done["error"] = f"{error_kind(log.error.message)} (details in the assessment's log)"
    elif problem:
        done["error"] = problem
    emit(done)
    return 0 if status == "success" else 1


def main(argv: list[str] | None = None) -> int:
    global _channel
    args = sys.argv[1:] if argv is None else argv
    try:
        plan = json.loads(args[0])
        if not isinstance(plan, dict) or not {"task", "task_args", "log_dir"} <= set(plan):
            raise ValueError("expected an object with task, task_args and log_dir")
    except (IndexError, ValueError) as err:
        print(f"usage: python -m pibench_inspect.a2a.green.runner '<plan JSON>': {err}", file=sys.stderr)
        return 2
    # our lines alone on stdout; whatever Inspect or a library prints goes to stderr
    _channel, sys.stdout = sys.stdout, sys.stderr
    try:
        return run(plan)
    except Exception as err:  # noqa: BLE001 (e.g. a model role Inspect cannot resolve: no log, but a reason)
        import traceback

        traceback.print_exc()  # to stderr, which the server keeps
        emit({"event": "done", "log": None, "status": "error", "error": f"{type(err).__name__}: {err}"})
        return 1
    finally:
        sys.stdout, _channel = _channel, None


if __name__ == "__main__":
    sys.exit(main())
