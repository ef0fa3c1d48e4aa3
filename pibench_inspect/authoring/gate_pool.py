"""The gates of many scenarios played in worker processes (`pibench validate --jobs N`).

A gate plays a scenario hundreds of times (the mutation gate's mutants, the baselines) and each
play is CPU work in one thread, so the whole shipped set takes minutes on one core. The workers
are forked from the process that loaded the set: they inherit it as loaded (nothing is parsed or
pickled again), and every per-process cache of the engine (the shared DuckDB instance, the seed
catalogs) notices the new pid and opens its own, so no DuckDB object crosses the fork. A case's
scenarios (a generated case's envelope siblings) go to one worker together: their mutants'
fate is the same (mutation.case_key), and that worker plays them once.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable

from ..scenario.catalog import Entry

# the entries a forked worker plays, by scenario id (set in the parent just before the fork)
_ENTRIES: dict[str, Entry] = {}


def default_jobs() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


Played = tuple[list[str], dict[str, list[int]], dict[str, list[int]]]


def _play(sids: list[str], seconds: float) -> list[Played]:
    """The gates of scenarios of one case (mutation.case_key), in one worker so that its
    mutants are played once: each scenario's problems and counts."""
    from .gates import BenignTally, MutationTally, gate_problems

    out: list[Played] = []
    for sid in sids:
        tally, benign = MutationTally(), BenignTally()
        out.append((gate_problems(_ENTRIES[sid], tally, seconds, benign), tally.by_domain, benign.by_domain))
    return out


def by_case(entries: list[Entry]) -> list[list[str]]:
    """Scenario ids grouped by case (envelope siblings together), in the order first met."""
    from .mutation import case_key

    groups: dict[tuple[str, str], list[str]] = {}
    for e in entries:
        groups.setdefault((e.domain.name, case_key(e)), []).append(e.scenario.scenario_id)
    return list(groups.values())


def gate_problems_of(entries: list[Entry], jobs: int, tally: Any = None,
                     progress: Callable[[int, int, str], None] | None = None,
                     seconds: float | None = None, benign: Any = None) -> dict[str, list[str]]:
    """Scenario id -> its gate problems, for every entry, in `jobs` forked processes (in this
    one when `jobs` is 1, fork is not available or this process runs other threads). `tally`
    (a MutationTally) and `benign` (a BenignTally) get every worker's counts; `progress(i, n,
    id)` is called as scenarios finish; `seconds`: what each scenario's plays may take together
    (gates.GATE_SECONDS)."""
    from .gates import GATE_SECONDS, gate_problems

    seconds = GATE_SECONDS if seconds is None else seconds

    out: dict[str, list[str]] = {}
    n = len(entries)
    # forked only from a process with no other thread: a child forked while another thread held a
    # lock (a test runner's, a logger's) can wait for it forever; such a caller plays them here
    if jobs <= 1 or n <= 1 or threading.active_count() > 1 or "fork" not in multiprocessing.get_all_start_methods():
        for i, entry in enumerate(entries, 1):
            out[entry.scenario.scenario_id] = gate_problems(entry, tally, seconds, benign)
            if progress:
                progress(i, n, entry.scenario.scenario_id)
        return out
    _ENTRIES.clear()
    _ENTRIES.update({e.scenario.scenario_id: e for e in entries})
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(max_workers=min(jobs, n), mp_context=multiprocessing.get_context("fork"),
                               initializer=_leave_sigint_to_the_parent)
    try:
        futures = {pool.submit(_play, sids, seconds): sids for sids in by_case(entries)}
        i = 0
        for future in as_completed(futures):
            sids = futures[future]
            try:
                played = future.result()
            except Exception as err:  # a worker that died (killed, out of memory): named, not a crash
                played = [([f"{_ENTRIES[sid].path}: gates could not run ({type(err).__name__}: "
                            f"{str(err)[:200]})"], {}, {}) for sid in sids]
            for sid, (problems, counts, benign_counts) in zip(sids, played):
                out[sid] = problems
                if tally is not None:
                    tally.merge(counts)
                if benign is not None:
                    benign.merge(benign_counts)
                i += 1
                if progress:
                    progress(i, n, sid)
    except BaseException:
        # Ctrl-C (or any failure here): the workers' scenarios are abandoned, not waited for; the
        # executor alone would play every queued scenario to the end before letting go
        for worker in set(multiprocessing.active_children()) - before:
            worker.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        _ENTRIES.clear()
    return out


def _leave_sigint_to_the_parent() -> None:
    """A worker ignores Ctrl-C (the terminal sends it to the whole process group): the parent
    stops the workers; an idle worker would print a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
