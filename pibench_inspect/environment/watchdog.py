"""One daemon thread that calls a callback when its deadline passes (a DuckDB interrupt).

Arming and disarming cost a lock and a heap push (microseconds): every catalog call is armed,
whether it runs on the event loop's worker thread or in `pibench validate`'s plain loop. The
thread is a daemon: it never keeps the process alive.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from typing import Callable


class Watchdog:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._live: dict[int, Callable[[], None]] = {}
        self._tokens = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._pid = 0

    def arm(self, seconds: float, callback: Callable[[], None]) -> int:
        """Call `callback` (in the watchdog's thread) `seconds` from now unless disarmed first."""
        with self._cond:
            if self._thread is None or self._pid != os.getpid():  # a forked child starts its own
                self._pid = os.getpid()
                self._heap, self._live = [], {}
                self._thread = threading.Thread(target=self._run, name="pibench-watchdog", daemon=True)
                self._thread.start()
            token = next(self._tokens)
            self._live[token] = callback
            heapq.heappush(self._heap, (time.monotonic() + seconds, token))
            if self._heap[0][1] == token:
                self._cond.notify()
            return token

    def disarm(self, token: int) -> None:
        with self._cond:
            self._live.pop(token, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][1] not in self._live:
                        heapq.heappop(self._heap)  # disarmed
                    if not self._heap:
                        self._cond.wait()
                        continue
                    when, token = self._heap[0]
                    now = time.monotonic()
                    if when <= now:
                        heapq.heappop(self._heap)
                        callback = self._live.pop(token)
                        break
                    self._cond.wait(when - now)
            try:
                callback()
            except Exception:  # a callback's failure must not stop the watchdog
                pass
            # the callback holds the state it interrupted (its DuckDB connection): kept in this
            # frame while the thread waits, it outlived the state and, at exit, made duckdb's
            # bindings print ~100 "nanobind: leaked" lines
            callback = None  # type: ignore[assignment]


WATCHDOG = Watchdog()
