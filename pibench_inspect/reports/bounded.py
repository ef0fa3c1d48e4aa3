"""Reading what a report is given, and what a log names, as untrusted input.

A log is a file a person chose, but its contents were written by whatever ran (or edited) it,
and it names further files (each sample's `scenario_file`). So:

* a log is read only when it is a regular file (a FIFO would block its reader for ever, a
  character device like /dev/zero never ends) of at most MAX_LOG_BYTES; a `.eval` (a zip) only
  when its members add up to at most MAX_LOG_UNPACKED_BYTES (a zip bomb); a folder gives at most
  MAX_LOGS logs; each log is read within LOG_READ_SECONDS;
* a scenario file a log names is read only inside the scenario source that log was run from (its
  `scenarios/` folder, symlinks followed), a regular file of at most the loader's 5 MB, within
  SCENARIO_READ_SECONDS; anything else reads as "not found" (the report then says so).

A read past its deadline is abandoned in a daemon thread (the process still exits) and is an
error naming the file.
"""

from __future__ import annotations

import os
import stat
import threading
import zipfile
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..paths import data_root, user_path

MAX_LOG_BYTES = 1024**3  # 1 GB: a keyless run of 3,120 samples writes ~9 MB
MAX_LOG_UNPACKED_BYTES = 4 * 1024**3
MAX_LOGS = 10_000
LOG_READ_SECONDS = 600.0
SCENARIO_READ_SECONDS = 10.0

T = TypeVar("T")


class Unreadable(ValueError):
    """A file that will not be read, and why (one line, without the path)."""


def within(seconds: float, what: str, fn: Callable[[], T]) -> T:
    """fn() in a daemon thread, waited for at most `seconds`; its exception is raised here."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # handed to the caller, whatever it is
            box["error"] = err

    worker = threading.Thread(target=run, name=f"pibench-read-{what}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise Unreadable(f"{what} was not read within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def check_log_file(path: Path) -> None:
    """Raise Unreadable unless `path` is a log file a report may read (see the module doc)."""
    try:
        st = os.stat(path)  # follows a symlink: what would be read
    except OSError as err:
        raise Unreadable(f"cannot read it ({err.strerror or err})") from None
    if not stat.S_ISREG(st.st_mode):
        raise Unreadable("not a regular file (a FIFO, a device or a socket is never read)")
    if st.st_size > MAX_LOG_BYTES:
        raise Unreadable(f"{st.st_size} bytes, over the {MAX_LOG_BYTES} byte limit for a log (MAX_LOG_BYTES)")
    if path.suffix == ".eval":
        try:
            with zipfile.ZipFile(path) as z:
                unpacked = sum(i.file_size for i in z.infolist())
        except (zipfile.BadZipFile, OSError, ValueError) as err:
            raise Unreadable(f"not an Inspect log (not a readable .eval archive: {err})") from None
        if unpacked > MAX_LOG_UNPACKED_BYTES:
            raise Unreadable(f"its members unpack to {unpacked} bytes, over the {MAX_LOG_UNPACKED_BYTES} "
                             "byte limit (MAX_LOG_UNPACKED_BYTES)")


def source_root(log_source: Any, recorded: Any) -> Path:
    """The scenario source a log was run from: the resolved path the run recorded with its
    scenario-set hash, else its `-T source`, else the shipped set."""
    for where in (recorded, log_source):
        if isinstance(where, str) and where and where != "shipped":
            return user_path(where)
    return data_root()


def read_scenario_file(path: str, root: Path) -> bytes:
    """The bytes of a scenario file a log names, only inside `root`/scenarios (Unreadable else)."""
    from ..scenario.errors import ScenarioError
    from ..scenario.reading import read_bytes

    try:
        return within(SCENARIO_READ_SECONDS, "scenario file",
                      lambda: read_bytes(Path(path), root / "scenarios", "the scenario file"))
    except ScenarioError as err:
        raise Unreadable(str(err)) from None
    except (OSError, ValueError, RuntimeError) as err:  # a name the system refuses, a symlink loop
        raise Unreadable(f"cannot read it ({err})") from None
