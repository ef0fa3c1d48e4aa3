"""The thread and event loop an environment runs its episodes on, and how they end.

An environment's episode is a task on an event loop in a daemon thread of its own. What ends
it, and what it may wait for:

* `reset()` cancels the running episode and waits (at most WIND_DOWN seconds) until the
  solver's `finally` has closed the episode's state, then starts the next one;
* `close()` does the same and then stops the loop and joins its thread (WIND_DOWN at most);
* an environment that is dropped (its last reference goes) asks the thread to cancel the
  episode and stop, and returns at once: it may be collected on any thread, the loop's own
  included, where waiting for the loop would wait for ever;
* at interpreter exit, every environment still open is closed the same way, with one shared
  deadline (EXIT_SECONDS), while daemon threads still run: a script that never calls
  `close()` exits. Past that point (the interpreter finalizing) nothing waits: daemon threads
  are frozen then, and a wait on one would never end.

The runner holds no reference to its environment (the episode's coroutine is given what it
needs, not the environment), so an environment mid-episode can be dropped and collected, and
its episode is cancelled in its own context, never closed from another thread by the garbage
collector (which Inspect reports as "Exiting span created in another context").
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import sys
import threading
import time
import weakref
from typing import Any, Callable, Coroutine

WIND_DOWN = 30.0  # seconds reset() and close() wait for a cancelled episode to wind down
EXIT_SECONDS = 5.0  # seconds, shared by every environment still open at interpreter exit

_OPEN: "weakref.WeakSet[Runner]" = weakref.WeakSet()


class Runner:
    """One event loop in one daemon thread, running at most one episode at a time."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._task: asyncio.Task | None = None  # the running episode (touched on the loop only)
        self._ended: concurrent.futures.Future | None = None  # set when that episode has ended
        self._stopping = False
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()
        _OPEN.add(self)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            try:
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            except Exception:  # noqa: BLE001  (nothing left to tell: the environment is gone)
                pass
            self.loop.close()

    @property
    def alive(self) -> bool:
        return self.thread.is_alive() and not self._stopping

    def spawn(self, episode: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Start `episode()` on the loop (the previous one must have ended: `cancel` first)."""
        ended: concurrent.futures.Future = concurrent.futures.Future()
        started = threading.Event()

        def start() -> None:
            self._task = self.loop.create_task(episode())
            self._task.add_done_callback(lambda _: ended.done() or ended.set_result(None))
            started.set()

        self._ended = ended
        self.loop.call_soon_threadsafe(start)
        started.wait()

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def cancel(self, wait: float | None) -> bool:
        """Cancel the running episode; wait up to `wait` seconds (None: not at all) until it
        has ended. True when no episode is left running."""
        ended, self._ended = self._ended, None
        if ended is None or ended.done():
            return True
        if not self.thread.is_alive():  # nothing can end it any more, nor hold anything
            return True
        try:
            self.loop.call_soon_threadsafe(self._cancel_task)
        except RuntimeError:  # the loop is closed
            return True
        if wait is None or threading.current_thread() is self.thread or sys.is_finalizing():
            return False
        try:
            ended.result(timeout=wait)
            return True
        except concurrent.futures.TimeoutError:
            return False

    def _cancel_task(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def stop(self, wait: float | None) -> None:
        """Cancel the episode, then stop the loop once it has ended (the thread closes the loop
        and ends); wait up to `wait` seconds for the thread (None: not at all)."""
        if not self._stopping:
            self._stopping = True
            _OPEN.discard(self)
            try:
                self.loop.call_soon_threadsafe(self._wind_down)
            except RuntimeError:  # the loop is closed already
                return
        if wait is None or threading.current_thread() is self.thread or sys.is_finalizing():
            return
        self.thread.join(wait)

    def _wind_down(self) -> None:
        task = self._task
        if task is None or task.done():
            self.loop.stop()
            return
        task.add_done_callback(lambda _: self.loop.stop())
        task.cancel()


def _close_open_environments() -> None:
    """At interpreter exit: every environment left open ends its episode, all within one
    deadline (a thread that is stuck is left behind: it is a daemon and holds nothing)."""
    runners = list(_OPEN)
    for runner in runners:
        runner.stop(wait=None)
    deadline = time.monotonic() + EXIT_SECONDS
    for runner in runners:
        runner.thread.join(max(0.0, deadline - time.monotonic()))


atexit.register(_close_open_environments)
