"""A pi-bench run's start-up: what Inspect imported before the package is left out of the garbage
collector's full passes.

By the time the package is imported, Inspect has made ~100,000 objects that live as long as the
process (classes, functions, pydantic schemas). Python's full collection walks all of them each
time it runs, and the package's own imports, loading scenarios and running samples set off
several of those passes: a one-sample keyless run spent about 0.5 s of CPU more in them than a
bare Inspect task (bench/results.md). `gc.freeze()` moves what is alive now into a permanent
generation the collector skips; what reference counting frees is still freed.

Called when the task module is imported, before the package imports DuckDB: DuckDB's own objects
stay in the collector's reach, so its caches' collection at exit (environment/duck.py) still
destroys them before the interpreter ends (frozen, nanobind reported them leaked). Only in the
`inspect` command's process, never in a notebook or a test process, where what is frozen would
be kept to the end (the same test as runtime/run_check.enforced, which registers a hook when
imported and so is not imported here).
"""

from __future__ import annotations

import gc
import os
import sys

_DONE = False


def inspect_command() -> bool:
    argv0 = sys.argv[0] if sys.argv else ""
    return os.path.basename(argv0) == "inspect" or argv0.replace(os.sep, "/").endswith("inspect_ai/__main__.py")


def settle_imports() -> None:
    global _DONE
    if _DONE or not inspect_command():
        return
    _DONE = True
    gc.freeze()
