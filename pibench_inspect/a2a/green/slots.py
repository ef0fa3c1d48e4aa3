"""The server's concurrency cap, counted in sample runs in flight.

`--concurrency N` bounds the load the server puts on purple agents and model keys: an
assessment that runs k samples at once holds k of the N slots for its whole run, and waits,
first come first served, until k are free. With every assessment at the default of one sample at
a time this is a plain semaphore of N assessments.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque


class Slots:
    def __init__(self, total: int):
        if total < 1:
            raise ValueError("the concurrency cap must be at least 1")
        self.total = total
        self.free = total
        self._queue: deque[int] = deque()  # tickets of waiting assessments, oldest first
        self._tickets = itertools.count()
        self._changed = asyncio.Condition()

    def waiting(self) -> int:
        return len(self._queue)

    async def acquire(self, k: int) -> None:
        k = min(k, self.total)
        ticket = next(self._tickets)
        async with self._changed:
            self._queue.append(ticket)
            try:
                # only the oldest waiter may take slots, so a large request is not starved
                await self._changed.wait_for(lambda: self._queue[0] == ticket and self.free >= k)
                self.free -= k
            finally:
                self._queue.remove(ticket)
                self._changed.notify_all()

    async def release(self, k: int) -> None:
        k = min(k, self.total)
        async with self._changed:
            self.free += k
            self._changed.notify_all()
