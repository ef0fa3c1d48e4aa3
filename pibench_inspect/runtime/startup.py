"""A pi-bench run's start-up: the objects alive when its task is built are left out of the
garbage collector's full passes.

By the time a task is built, Inspect and the package have imported ~150,000 objects that live as
long as the process (classes, functions, pydantic schemas, DuckDB's bindings). Python's full
collection walks all of them each time it runs, and the allocations of loading scenarios and
running samples set off several of those passes: a one-sample keyless run spent ~0.5 s of CPU in
them on the 2-core machine (bench/results.md), a bare Inspect task less than half that.
`gc.freeze()` moves what is alive now into a permanent generation the collector skips; what is
freed by reference counting is still freed. Only in processes whose run this package drives (the
`inspect` command, `pi run`, `pibench play`: runtime/run_check.enforced), never in a notebook or
a test process, where frozen garbage would be kept to the end.
"""

from __future__ import annotations

import gc

from .run_check import enforced

_DONE = False


def settle_imports() -> None:
    global _DONE
    if _DONE or not enforced():
        return
    _DONE = True
    gc.freeze()
