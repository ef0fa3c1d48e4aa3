"""Run a coroutine to completion from synchronous code, inside or outside an event loop.

Offline evaluation (gates, replay, the oracle's plan check) calls the async evaluator from
sync code that may itself run inside Inspect's event loop (a solver building the oracle).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
