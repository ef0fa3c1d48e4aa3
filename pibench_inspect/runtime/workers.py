"""Blocking work off the event loop, in daemon threads that never keep the process alive.

Why not `anyio.to_thread` or asyncio's executor: their worker threads are joined when the
interpreter exits, so one call that never returns (an agent's `generate()` that blocks, a
`stop()` that hangs) kept the process alive after the run had ended and its log was written.
Here an abandoned call keeps only its own daemon thread, and the process exits regardless.

A pool reuses idle threads (a thread start costs ~50 us) and starts one more when every thread
is busy, up to `hot_threads`. Past them a call waits for the next free thread, and one that has
waited `rescue_seconds` gets a thread of its own (an overflow thread, which ends as soon as no
call waits): calls that never return hold the others up for half a second, not for ever. Past
`max_threads` a call is refused (`PoolExhausted`).

Why a few hot threads and a queue for the catalog calls, not a thread per concurrent call:
glibc gives each new thread a malloc arena of its own, up to 8 per core, and once all are taken
it hands threads the existing arenas in turn. A run of 78 to 312 samples started 12 to 19 tool
threads in its first burst of calls, so every arena was taken; the short-lived threads Inspect's
log writer starts to zstd-compress each sample (an 8 MB buffer each) then landed in every arena
in turn, each arena kept ~9 MB of freed buffer, and pages of it were touched again at each
flush: RSS grew 1-3 KB per finished sample more than the bare task's (bench/results.md, issue
27). With 4 tool threads the log writer finds a free arena, the same one each time; and two
cores gain nothing from more threads running DuckDB statements of a few milliseconds.
"""

from __future__ import annotations

import asyncio
import collections
import os
import queue
import threading
import time
from typing import Any, Callable


class PoolExhausted(RuntimeError):
    """Every thread of the pool is busy (calls abandoned after their deadline included)."""


class Outcome:
    """What a call in a worker thread did: returned `value`, or raised `error` (any
    BaseException: SystemExit and KeyboardInterrupt from the callee are data here)."""

    __slots__ = ("value", "error")

    def __init__(self, value: Any = None, error: BaseException | None = None):
        self.value, self.error = value, error


Job = tuple[Callable[..., Any], tuple, Callable[[Outcome], None]]  # fn, args, done(outcome)


class DaemonPool:
    def __init__(self, name: str, hot_threads: int, max_threads: int = 1024, rescue_seconds: float = 0.5):
        if not 1 <= hot_threads <= max_threads:
            raise ValueError(f"{name}: hot_threads must be between 1 and max_threads ({max_threads})")
        self.name = name
        self.hot_threads = hot_threads
        self.max_threads = max_threads
        self.rescue_seconds = rescue_seconds
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue] = []  # the inboxes of the threads waiting for a call
        self._waiting: collections.deque[tuple[float, Job]] = collections.deque()  # (since, call)
        self._threads = 0
        self._pid = os.getpid()

    def submit(self, fn: Callable[..., Any], args: tuple, done: Callable[[Outcome], None]) -> bool:
        """Start `fn(*args)` in a thread, or queue it. True when queued: its caller then calls
        `rescue()` once `rescue_seconds` have passed."""
        job: Job = (fn, args, done)
        with self._lock:
            if self._pid != os.getpid():  # a forked child has none of the parent's threads
                self._pid, self._idle, self._waiting, self._threads = os.getpid(), [], collections.deque(), 0
            if self._idle:
                inbox = self._idle.pop()
            elif self._threads < self.hot_threads:
                self._start(job)
                return False
            elif self._threads >= self.max_threads:
                raise PoolExhausted(f"all {self.max_threads} {self.name} threads are busy")
            else:
                self._waiting.append((time.monotonic(), job))
                return True
        inbox.put(job)
        return False

    def rescue(self) -> None:
        """Give the call that has waited longest a thread of its own, if it has waited
        `rescue_seconds` (every thread is then busy with calls that take their time)."""
        with self._lock:
            if self._pid != os.getpid() or not self._waiting or self._threads >= self.max_threads:
                return
            if time.monotonic() - self._waiting[0][0] >= self.rescue_seconds:
                self._start(self._waiting.popleft()[1])

    @property
    def threads(self) -> int:
        """The pool's threads now (busy or idle)."""
        return self._threads

    def _start(self, job: Job) -> None:
        """A new thread that runs `job` first (the caller holds the lock). The job goes through
        its inbox, not the Thread's args: a Thread keeps its args until its target returns, and a
        hot thread's never does (the first call's state would live as long as the process)."""
        self._threads += 1
        inbox: queue.SimpleQueue = queue.SimpleQueue()
        inbox.put(job)
        threading.Thread(target=self._work, args=(inbox,), name=f"{self.name}-{self._threads}", daemon=True).start()

    def _work(self, inbox: queue.SimpleQueue) -> None:
        job: Job | None = None
        while True:
            if job is None:
                job = inbox.get()
            fn, args, done = job
            try:
                outcome = Outcome(fn(*args))
            except BaseException as err:  # noqa: BLE001 (whatever the callee raised is its outcome)
                outcome = Outcome(error=err)
            # free again before telling the caller, who may make its next call at once
            with self._lock:
                if self._pid != os.getpid():  # forked mid-call: this thread is not the child's
                    return
                job = self._waiting.popleft()[1] if self._waiting else None
                ends = job is None and self._threads > self.hot_threads  # overflow, nothing waits
                if ends:
                    self._threads -= 1
                elif job is None:
                    self._idle.append(inbox)
            # drop the call's arguments before telling the caller: once told, it may look for
            # them gone (a sample's state, its DuckDB connection)
            del fn, args
            try:
                done(outcome)
            except BaseException:  # noqa: BLE001 (the waiting loop is gone: nothing to tell)
                pass
            del done, outcome
            if ends:
                return

    async def run(self, fn: Callable[..., Any], *args: Any, timeout: float | None = None) -> Outcome:
        """Run `fn(*args)` in a daemon thread and wait for its Outcome. TimeoutError after
        `timeout` seconds (and `rescue_seconds` more when the call waited for a thread); a
        cancelled caller stops waiting. Either way the thread is abandoned (it finishes, or
        blocks, on its own; its result is dropped)."""
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

        if self.submit(fn, args, done):
            rescue = loop.call_later(self.rescue_seconds, self.rescue)
            future.add_done_callback(lambda _: rescue.cancel())
            if timeout is not None:
                timeout += self.rescue_seconds
        if timeout is None:
            return await future
        return await asyncio.wait_for(future, timeout)


# the five protocol operations of agents under test: a thread each (an agent may block for ever,
# and its deadline is the only bound)
AGENT_POOL = DaemonPool("pibench-agent", hot_threads=1024)
# catalog calls (environment/tools.py): DuckDB statements of a few ms, each under its deadline
TOOL_POOL = DaemonPool("pibench-tool", hot_threads=4)
