"""One assessment as an A2A task: queue for a slot, run the benchmark in a subprocess, report
progress, end with the results artifact (completed) or the reason (failed), or be canceled.

Status updates (state working) carry a JSON text
`{"status": "working", "message": "n/N samples done", "completed": n, "total": N,
"elapsed_seconds": s}`: one per finished sample run, and a heartbeat whenever `heartbeat`
seconds pass without one (callers and proxies drop connections that stay silent).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import (
    DataPart,
    Message,
    Part,
    TaskNotCancelableError,
    TaskState,
    TextPart,
)
from a2a.utils import new_task
from a2a.utils.errors import ServerError

from .plan import EvalPlan, ServerSettings, make_plan
from .process import Outcome, RunnerProcess
from .request import InvalidRequest, read_request
from .results import AssessmentFailed, assessment_payload
from .slots import Slots

logger = logging.getLogger(__name__)

RESULTS = "PI-Bench Assessment Results"
FAILED = "PI-Bench Assessment Results (Failed)"


def _text(text: str) -> Part:
    return Part(root=TextPart(text=text))


@dataclass
class Assessment:
    """A running assessment, as cancel() and shutdown() need to find it."""

    plan: EvalPlan
    updater: TaskUpdater
    runner: RunnerProcess | None = None
    canceled: bool = False
    started: float = field(default_factory=time.monotonic)
    completed: int = 0

    def status(self, message: str, **extra: Any) -> str:
        return json.dumps({"status": "working", "message": message, "completed": self.completed,
                           "total": self.plan.total, "elapsed_seconds": round(time.monotonic() - self.started, 1),
                           **extra})


class GreenExecutor(AgentExecutor):
    def __init__(self, settings: ServerSettings):
        self.settings = settings
        self.slots = Slots(settings.concurrency)
        self.running: dict[str, Assessment] = {}
        # plans the request handler checked, by message id (with the message, to be sure it is
        # the same request), so that execute() need not redo the work
        self.plans: dict[str, tuple[Message, EvalPlan]] = {}

    def plan_for(self, context: RequestContext) -> EvalPlan:
        message = context.message
        checked = self.plans.pop(message.message_id, None) if message else None
        if checked is not None and checked[0] is message:
            return checked[1]
        return make_plan(read_request(message), self.settings)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task or new_task(context.message)  # type: ignore[arg-type]
        try:
            plan: EvalPlan | None = self.plan_for(context)
            problem = ""
        except InvalidRequest as err:  # only if the request handler was bypassed
            plan, problem = None, str(err)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if plan is None:
            await self._fail(updater, problem)
            return
        # one fresh folder per assessment; kept: its Inspect log is the evidence for the result
        plan = plan.model_copy(update={"log_dir": str(self._log_dir(task.id))})
        run = Assessment(plan, updater)
        self.running[task.id] = run
        try:
            k = min(plan.max_samples, self.slots.total)
            first = ("starting the evaluation" if self.slots.free >= k and not self.slots.waiting()
                     else f"queued: waiting for {k} of the server's {self.slots.total} evaluation slot(s)")
            extra = {"warnings": plan.warnings} if plan.warnings else {}
            await updater.start_work(updater.new_agent_message([_text(run.status(first, **extra))]))
            await self._drive(run)
        except Exception as err:  # our bug: say so on the task, keep serving
            logger.exception("assessment %s crashed", task.id)
            if not run.canceled:
                await self._fail(updater, f"internal error: {type(err).__name__}: {err}")
        finally:
            self.running.pop(task.id, None)
            if run.runner is not None:
                await run.runner.stop()

    def _log_dir(self, task_id: str) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        return (self.settings.log_dir / f"{stamp}_{task_id or uuid.uuid4().hex}").resolve()

    async def _drive(self, run: Assessment) -> None:
        events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        worker = asyncio.create_task(self._work(run, events))
        last = time.monotonic()
        try:
            while True:
                wait = max(0.0, self.settings.heartbeat - (time.monotonic() - last))
                try:
                    event = await asyncio.wait_for(events.get(), wait)
                except TimeoutError:
                    event = {"event": "heartbeat"}
                if event["event"] == "end":
                    break
                if run.canceled:
                    continue
                await self._progress(run, event)
                last = time.monotonic()
            outcome: Outcome = await worker
        finally:
            worker.cancel()
        if not run.canceled:
            await self._finish(run, outcome)

    async def _work(self, run: Assessment, events: asyncio.Queue) -> Outcome:
        """Wait for slots, run the subprocess, pass its progress on; always ends with 'end'."""
        k = run.plan.max_samples
        try:
            await self.slots.acquire(k)
            try:
                run.runner = RunnerProcess(run.plan)
                await run.runner.start()
                await events.put({"event": "running"})
                async for event in run.runner.events():
                    await events.put(event)
                return await run.runner.wait()
            finally:
                await self.slots.release(k)
        finally:
            await events.put({"event": "end"})

    async def _progress(self, run: Assessment, event: dict[str, Any]) -> None:
        kind = event["event"]
        extra: dict[str, Any] = {}
        if kind == "start" and event.get("total"):
            run.plan = run.plan.model_copy(update={"total": int(event["total"])})
        if kind == "sample_end":
            run.completed = int(event.get("completed", run.completed + 1))
            extra = {"scenario_id": event.get("scenario_id"), "epoch": event.get("epoch")}
        if kind == "heartbeat" and run.runner is None:
            message = "queued: waiting for a free evaluation slot"
        else:
            message = f"{run.completed}/{run.plan.total} samples done"
        await run.updater.update_status(
            TaskState.working, run.updater.new_agent_message([_text(run.status(message, **extra))]))

    async def _finish(self, run: Assessment, outcome: Outcome) -> None:
        updater, plan = run.updater, run.plan
        if not outcome.ok:
            if outcome.stderr_tail.strip():  # for the operator, in the server's log; never to the caller
                logger.warning("assessment %s: last lines of the runner's stderr:\n%s", updater.task_id,
                               outcome.stderr_tail.rstrip())
            await self._fail(updater, outcome.problem())
            return
        try:
            payload = await asyncio.to_thread(assessment_payload, outcome.log or "", plan.agent_id, plan.result_domain,
                                              outcome.time_used)
        except AssessmentFailed as err:
            await self._fail(updater, str(err))
            return
        await updater.add_artifact([Part(root=DataPart(data=payload))], name=RESULTS)
        result = payload["results"][0]
        summary = (f"{len(result['scenario_details'])} sample runs, score {result['score']:g}/{result['max_score']:g} "
                   f"({result['pass_rate']:.1f}% passed); log {Path(outcome.log or '').name}")
        await updater.complete(updater.new_agent_message([_text(summary)]))

    async def _fail(self, updater: TaskUpdater, error: str) -> None:
        logger.warning("assessment %s failed: %s", updater.task_id, error.splitlines()[0] if error else "")
        await updater.add_artifact([_text(error), Part(root=DataPart(data={"error": error}))], name=FAILED)
        await updater.failed(updater.new_agent_message([_text(error)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """End the run by its process id (its partial log is kept) and mark the task canceled."""
        run = self.running.get(context.task_id or "")
        if run is None:
            raise ServerError(error=TaskNotCancelableError(message=f"task {context.task_id} is not running here"))
        run.canceled = True
        try:
            await run.updater.cancel(run.updater.new_agent_message([_text(
                f"canceled on request after {run.completed}/{run.plan.total} samples; "
                f"the partial log is kept on the server ({Path(run.plan.log_dir).name})")]))
        except RuntimeError as err:  # it reached a final state meanwhile
            raise ServerError(error=TaskNotCancelableError(message=str(err))) from None
        if run.runner is not None:
            await run.runner.stop()

    async def shutdown(self) -> None:
        """The server is stopping: end every run it started (their logs stay)."""
        for run in list(self.running.values()):
            run.canceled = True
            if run.runner is not None:
                await run.runner.stop(grace=5.0)
