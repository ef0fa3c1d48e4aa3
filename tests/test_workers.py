"""The daemon pools (runtime/workers.py): a few hot threads, a queue, and a rescue for calls
stuck behind calls that do not return."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref

import pytest

from pibench_inspect.runtime.workers import TOOL_POOL, DaemonPool, PoolExhausted


def _blocker(release: threading.Event, started: list[int]):
    def fn(tag: int) -> int:
        started.append(tag)
        release.wait(10)
        return tag

    return fn


async def _hold_a_thread(pool: DaemonPool, release: threading.Event, started: list[int]) -> asyncio.Task:
    """A call that blocks its thread until `release`, once the thread has started it."""
    call = asyncio.create_task(pool.run(_blocker(release, started), 0))
    while 0 not in started:
        await asyncio.sleep(0.005)
    return call


def test_calls_past_the_hot_threads_wait_for_them_and_all_finish():
    pool = DaemonPool("t-hot", hot_threads=2, rescue_seconds=60)
    release, started = threading.Event(), []

    async def main():
        calls = [asyncio.create_task(pool.run(_blocker(release, started), i)) for i in range(6)]
        await asyncio.sleep(0.2)
        assert pool.threads == 2 and len(started) == 2  # four calls wait, no thread of their own
        release.set()
        return [(await c).value for c in calls]

    assert sorted(asyncio.run(main())) == list(range(6))
    assert pool.threads == 2


def test_an_idle_thread_takes_the_next_call():
    pool = DaemonPool("t-reuse", hot_threads=4)

    async def main():
        return [(await pool.run(threading.get_ident)).value for _ in range(5)]

    assert len(set(asyncio.run(main()))) == 1
    assert pool.threads == 1


def test_a_call_stuck_behind_calls_that_never_return_gets_a_thread_of_its_own():
    pool = DaemonPool("t-rescue", hot_threads=1, rescue_seconds=0.05)
    release, started = threading.Event(), []

    async def main():
        stuck = await _hold_a_thread(pool, release, started)
        t0 = time.monotonic()
        out = await pool.run(lambda: "done", timeout=5)
        waited = time.monotonic() - t0
        stuck.cancel()
        return out, waited

    try:
        out, waited = asyncio.run(main())
        assert out.value == "done" and waited < 2
        deadline = time.monotonic() + 2
        while pool.threads > 1 and time.monotonic() < deadline:  # the overflow thread ends
            time.sleep(0.01)
        assert pool.threads == 1
    finally:
        release.set()


def test_past_max_threads_a_call_is_refused():
    pool = DaemonPool("t-max", hot_threads=1, max_threads=1)
    release, started = threading.Event(), []

    async def main():
        first = await _hold_a_thread(pool, release, started)
        with pytest.raises(PoolExhausted, match="all 1 t-max threads are busy"):
            await pool.run(lambda: None)
        release.set()
        return (await first).value

    assert asyncio.run(main()) == 0


def test_a_queued_call_keeps_its_whole_deadline_and_a_late_one_times_out():
    pool = DaemonPool("t-deadline", hot_threads=1, rescue_seconds=0.05)
    release, started = threading.Event(), []

    async def main():
        with pytest.raises(TimeoutError):
            await pool.run(_blocker(release, started), 0, timeout=0.1)
        # the abandoned call still holds the hot thread: this one waits, is rescued, finishes
        return await pool.run(lambda: 7, timeout=1)

    try:
        assert asyncio.run(main()).value == 7
    finally:
        release.set()


def test_what_the_callee_raises_is_its_outcome():
    pool = DaemonPool("t-raise", hot_threads=1)

    def fails():
        raise SystemExit(3)

    out = asyncio.run(pool.run(fails))
    assert isinstance(out.error, SystemExit) and out.value is None


def test_a_finished_call_leaves_nothing_of_its_arguments_behind():
    """A hot thread lives as long as the process: what its calls were given must not (a
    sample's state, its DuckDB connection; duckdb >= 2 reports those alive at exit)."""
    pool = DaemonPool("t-refs", hot_threads=2)

    class Payload:
        pass

    payload = Payload()
    ref = weakref.ref(payload)
    assert asyncio.run(pool.run(lambda p: type(p).__name__, payload)).value == "Payload"
    del payload
    gc.collect()
    assert ref() is None and pool.threads == 1


def test_hot_threads_must_fit_max_threads():
    with pytest.raises(ValueError, match="t-bad: hot_threads"):
        DaemonPool("t-bad", hot_threads=5, max_threads=4)


def test_a_run_of_many_samples_keeps_the_tool_threads_to_the_hot_few():
    """The burst of catalog calls at a run's start used to start a thread per concurrent call
    (19 in 312 samples), which took every malloc arena of the process (see the module doc)."""
    from conftest import run_eval

    from pibench_inspect.task import pibench_task

    task = pibench_task(None, agent="oracle", user="scripted")
    ids = [s.id for s in task.dataset][:78]
    log = run_eval(task, sample_id=ids)
    assert log.status == "success" and len(log.samples or []) == 78
    assert TOOL_POOL.hot_threads == 4 and 1 <= TOOL_POOL.threads <= 4
    deadline = time.monotonic() + 2  # an overflow thread may still be on its way out
    while len(tool_threads := [t for t in threading.enumerate() if t.name.startswith("pibench-tool-")]) > 4:
        assert time.monotonic() < deadline, tool_threads
        time.sleep(0.01)
