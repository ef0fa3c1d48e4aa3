"""The server's side of the runner subprocess: start it, read its progress lines as they come,
keep its stderr (in a file next to the log, and the tail in memory for the server's own log;
never in what goes back to the caller: tracebacks and server paths are the operator's), stop it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..wire import bounded
from .plan import EvalPlan

RUNNER = "pibench_inspect.a2a.green.runner"
STDERR_FILE = "runner-stderr.log"
TAIL_LINES = 40
LINE_LIMIT = 1 << 20  # a long line of library output must not break the reader (default 64 KiB)


@dataclass
class Outcome:
    returncode: int | None
    log: str | None = None  # the Inspect log the run wrote
    status: str | None = None  # that log's status
    error: str | None = None  # the run's own error text (from the log)
    stderr_tail: str = ""
    time_used: float | None = None  # the evaluation's wall-clock seconds, to the millisecond

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.status == "success" and bool(self.log)

    def problem(self) -> str:
        """Why the run failed, for the person who sent the assessment: the run's own error line,
        the log by file name only; the stderr stays in the assessment's folder on the server."""
        if self.log is None:
            why = f"the evaluation process ended (exit status {self.returncode}) without writing a log"
        else:
            why = f"the evaluation ended with status {self.status!r} (log {Path(self.log).name})"
        if self.error:
            why += f": {bounded(self.error.strip())}"
        return why


@dataclass
class RunnerProcess:
    plan: EvalPlan
    proc: asyncio.subprocess.Process | None = None
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    done: dict[str, Any] | None = None
    _stderr_task: asyncio.Task | None = None

    async def start(self) -> None:
        folder = Path(self.plan.log_dir)
        folder.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list download per run
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", RUNNER, self.plan.model_dump_json(),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=env, limit=LINE_LIMIT,
        )
        self._stderr_task = asyncio.create_task(self._keep_stderr(folder / STDERR_FILE))

    async def _keep_stderr(self, path: Path) -> None:
        assert self.proc and self.proc.stderr
        with path.open("a", encoding="utf-8") as out:
            async for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace")
                out.write(line)
                out.flush()
                self.tail.append(line)

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Progress events until the process closes stdout; the `done` event is kept, not yielded."""
        assert self.proc and self.proc.stdout
        async for raw in self.proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                event = None
            if not isinstance(event, dict) or "event" not in event:
                self.tail.append(raw.decode("utf-8", "replace"))  # not ours: keep it for diagnosis
                continue
            if event["event"] == "done":
                self.done = event
            else:
                yield event

    async def wait(self) -> Outcome:
        assert self.proc
        code = await self.proc.wait()
        if self._stderr_task:
            await self._stderr_task
        done = self.done or {}
        used = done.get("time_used")
        used = float(used) if isinstance(used, (int, float)) and not isinstance(used, bool) else None
        return Outcome(code, done.get("log"), done.get("status"), done.get("error"), "".join(self.tail), used)

    async def stop(self, grace: float = 10.0) -> None:
        """SIGINT first: Inspect then writes the log as cancelled (the partial run is evidence);
        the kill after `grace` seconds if it does not end."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        try:
            proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(proc.wait(), grace)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        except ProcessLookupError:
            pass
