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


def run_now(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never waits on anything (the evaluator without a judge) to its end
    in this thread, with no event loop: starting one costs about a millisecond, which the
    mutation gate would pay for every mutant. A coroutine that does wait is an error here."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("run_now: the coroutine waited on something; use run_sync")
