"""Reading a scenario source's files as untrusted data.

A source (a folder holding scenarios/ and domains/) is data someone else wrote, so every file it
names is read the same careful way:

* the path must resolve (symlinks followed) inside the source root: no absolute paths, no `../`,
  no link out of the folder. A symlink that stays inside the root is fine;
* only a regular file is read (a FIFO would block, /dev/zero would never end), and at most
  MAX_FILE_BYTES of it;
* JSON may nest at most MAX_JSON_DEPTH levels (deeper input crashed the recursive code behind
  the parser) and may not hold NaN or Infinity (strict JSON readers of the .eval log reject them).

Every failure is a ScenarioError naming the file, so one bad file never stops the rest.
"""

from __future__ import annotations

import json
import os
import stat
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import ScenarioError

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_JSON_DEPTH = 64


def inside(path: Path, root: Path) -> bool:
    """Whether `path` (resolved, symlinks followed) lies inside `root` (resolved)."""
    real, top = path.resolve(), root.resolve()
    return real == top or top in real.parents


@lru_cache(maxsize=64)
def _real(root: Path) -> str:
    # a source's root is resolved once, not once for every file read under it
    return os.path.realpath(root)


def confined(path: Path, root: Path | None, what: str) -> Path:
    """The real path of `path` (symlinks followed); with `root`, it must lie inside it."""
    real = os.path.realpath(path)
    if root is not None:
        top = _real(root)
        if not (real == top or real.startswith(top.rstrip(os.sep) + os.sep)):
            raise ScenarioError(path, [f"(file): {what} resolves outside the source folder {root}"])
    return Path(real)


def read_bytes(path: Path, root: Path | None, what: str) -> bytes:
    """The bytes of a regular file inside `root`, at most MAX_FILE_BYTES."""
    real = confined(path, root, what)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise ScenarioError(path, [f"(file): {what} not found"]) from None
    except OSError as err:
        raise ScenarioError(path, [f"(file): cannot read {what}: {err.strerror or err}"]) from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ScenarioError(path, [f"(file): {what} is not a regular file"])
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(
            path, [f"(file): {what} is larger than the {MAX_FILE_BYTES} byte limit (MAX_FILE_BYTES)"]
        )
    return data


def read_text(path: Path, root: Path | None, what: str) -> str:
    data = read_bytes(path, root, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ScenarioError(path, [f"(file): not valid UTF-8 (byte {err.start})"]) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (NaN and Infinity are rejected)")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} overflows to Infinity (NaN and Infinity are rejected)")
    return value


def depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), without recursion."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        d += 1
        if d > MAX_JSON_DEPTH:
            return d
        deepest = max(deepest, d)
        stack.extend((c, d) for c in children if isinstance(c, (dict, list)))  # scalars add no depth
    return deepest


def parse_json(text: str, path: str | Path = "<memory>") -> Any:
    """Strict JSON: no NaN/Infinity, nesting at most MAX_JSON_DEPTH levels."""
    too_deep = f"(file): JSON nests deeper than {MAX_JSON_DEPTH} levels (MAX_JSON_DEPTH)"
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as err:
        raise ScenarioError(
            path, [f"(file): invalid JSON at line {err.lineno} column {err.colno}: {err.msg}"]
        ) from None
    except RecursionError:
        raise ScenarioError(path, [too_deep]) from None
    except ValueError as err:  # NaN, Infinity, an integer too long to convert
        raise ScenarioError(path, [f"(file): invalid JSON: {err}"]) from None
    if depth(value) > MAX_JSON_DEPTH:
        raise ScenarioError(path, [too_deep])
    return value


def read_json(path: Path, root: Path | None, what: str) -> Any:
    return parse_json(read_text(path, root, what), path)
