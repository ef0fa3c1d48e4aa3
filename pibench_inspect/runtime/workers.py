"""Blocking work off the event loop, in daemon threads that never keep the process alive.

Why not `anyio.to_thread` or asyncio's executor: their worker threads are joined when the
interpreter exits, so one call that never returns (an agent's `generate()` that blocks, a
`stop()` that hangs) kept the process alive after the run had ended and its log was written.
Here an abandoned call keeps only its own daemon thread, and the process exits regardless.

A pool reuses idle threads (a thread start costs ~50 us) and starts one more when every thread
is busy, up to `max_threads`: past that a call is refused (`PoolExhausted`) rather than queued
behind calls that may never return.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from typing import Any, Callable


class PoolExhausted(RuntimeError):
    """Every thread of the pool is busy (calls abandoned after their deadline included)."""


class Outcome:
    """What a call in a worker thread did: returned `value`, or raised `error` (any
    BaseException: SystemExit and KeyboardInterrupt from the callee are data here)."""

    __slots__ = ("value", "error")

    def __init__(self, value: Any = None, error: BaseException | None = None):
        self.value, self.error = value, error


class DaemonPool:
    def __init__(self, name: str, max_threads: int = 1024):
        self.name = name
        self.max_threads = max_threads
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._idle = 0
        self._threads = 0
        self._pid = os.getpid()

    def submit(self, fn: Callable[..., Any], args: tuple, done: Callable[[Outcome], None]) -> None:
        with self._lock:
            if self._pid != os.getpid():  # a forked child has none of the parent's threads
                self._pid, self._idle, self._threads, self._jobs = os.getpid(), 0, 0, queue.SimpleQueue()
            if self._idle > 0:
                self._idle -= 1
            elif self._threads >= self.max_threads:
                raise PoolExhausted(f"all {self.max_threads} {self.name} threads are busy")
            else:
                self._threads += 1
                threading.Thread(target=self._work, name=f"{self.name}-{self._threads}", daemon=True).start()
        self._jobs.put((fn, args, done))

    def _work(self) -> None:
        while True:
            fn, args, done = self._jobs.get()
            try:
                outcome = Outcome(fn(*args))
            except BaseException as err:  # noqa: BLE001 (whatever the callee raised is its outcome)
                outcome = Outcome(error=err)
            try:
                done(outcome)
            except BaseException:  # noqa: BLE001 (the waiting loop is gone: nothing to tell)
                pass
            del fn, args, done, outcome
            with self._lock:
                self._idle += 1

    async def run(self, fn: Callable[..., Any], *args: Any, timeout: float | None = None) -> Outcome:
        """Run `fn(*args)` in a daemon thread and wait for its Outcome. TimeoutError after
        `timeout` seconds; a cancelled caller stops waiting. Either way the thread is abandoned
        (it finishes, or blocks, on its own; its result is dropped)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Outcome] = loop.create_future()

        def settle(outcome: Outcome) -> None:
            if not future.done():
                future.set_result(outcome)

        def done(outcome: Outcome) -> None:
            try:
                loop.call_soon_threadsafe(settle, outcome)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

        self.submit(fn, args, done)
        if timeout is None:
            return await future
        return await asyncio.wait_for(future, timeout)


AGENT_POOL = DaemonPool("pibench-agent")  # the five protocol operations of agents under test
TOOL_POOL = DaemonPool("pibench-tool")  # catalog calls (environment/tools.py)
