"""A run refused before it starts, said in one line; and the closest names to a mistyped one.

`Refusal` is an Inspect `PrerequisiteError`: Inspect's command line prints its message alone (no
traceback) and exits 1, the way it reports a missing API key (under `--display none`, where
Inspect prints nothing, the refusal prints itself on stderr). It is also a `ValueError`, so
Python callers (`eval()` in a notebook, the tests) catch it as before. The `pibench` / `pi`
commands print it as `error: MESSAGE` and exit 1.

A refusal names the argument, the value and the fix, e.g.
`-T colum=Privacy: unknown task argument (did you mean -T column?); the task arguments are ...`.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from fnmatch import fnmatchcase
from typing import Iterable, NoReturn

from rich.markup import escape

from ..runtime.inspect_internals import PrerequisiteError, display_type_initialized

GLOB = "*?["


class Refusal(PrerequisiteError, ValueError):
    """Bad input found before any sample runs. `str(err)` is the plain line."""

    def __init__(self, message: str) -> None:
        line = " ".join(str(message).split())  # one line, whatever the parts said
        ValueError.__init__(self, line)
        # Inspect prints `message` through rich, which would read "[no_pressure]" as markup
        self.message = escape(line)
        if _quiet_display():  # Inspect drops the message under --display none: say it here
            print(line, file=sys.stderr, flush=True)


def _quiet_display() -> bool:
    from inspect_ai.util import display_type

    return display_type_initialized() and display_type() == "none"


def _distance(a: str, b: str) -> int:
    """Levenshtein distance (case-insensitive)."""
    a, b = a.lower(), b.lower()
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def closest(wanted: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names nearest to `wanted` (at most n). When names share a start of two or more
    characters with it, those sharing the longest start; else those within a third of its length
    in edits of their start. Ranked by the edit distance between `wanted` and each name's start
    of the same length (a typo in an id's prefix), then by name. Glob characters in `wanted` end
    it, so `RET_01*` is looked up as `RET_01`."""
    names = sorted(set(known))
    stem = wanted
    for ch in GLOB:
        stem = stem.split(ch, 1)[0]
    stem = stem or wanted
    if not names or not stem:
        return []
    lo = stem.lower()

    def common(name: str) -> int:
        k = 0
        for x, y in zip(lo, name.lower()):
            if x != y:
                break
            k += 1
        return k

    def key(name: str) -> tuple[int, int, str]:
        return (-common(name), _distance(stem, name[: len(stem)]), name)

    best = max(common(x) for x in names)
    if best >= 2:  # a shared start of two characters or more: only the names that share the most
        pool = [x for x in names if common(x) == best]
    else:
        limit = max(1, len(stem) // 3)
        pool = [x for x in names if _distance(stem, x[: len(stem)]) <= limit]
    if not pool:  # nothing shares a start: similarity of the whole string
        return difflib.get_close_matches(stem, names, n, 0.6)
    return sorted(pool, key=key)[:n]


def prefix_glob(wanted: str, known: Iterable[str]) -> tuple[str, int] | None:
    """(`wanted*`, how many names it matches) when `wanted` is no glob but the start of names."""
    if is_glob(wanted):
        return None
    hits = sum(1 for x in known if x.startswith(wanted) and x != wanted)
    return (f"{wanted}*", hits) if hits else None


def glob_fix(pattern: str, known: Iterable[str]) -> tuple[str, int] | None:
    """(the glob meant, how many names it matches) when `pattern` is a glob whose literal start is
    a misspelt id part: `RET_PRICE_ADJUSTMNT.*` -> `RET_PRICE_ADJUSTMENT.*` (a family's variants,
    ids `FAMILY.combo.envelope`). The start is matched against the ids' starts cut at the same
    number of `.`-separated parts; the rest of the pattern is kept."""
    if not is_glob(pattern):
        return None
    names = list(known)
    cut = min((pattern.index(ch) for ch in GLOB if ch in pattern))
    stem, rest = pattern[:cut], pattern[cut:]
    if not stem:
        return None
    parts = stem.count(".")
    if stem.endswith("."):
        whole = {".".join(x.split(".")[:parts]) + "." for x in names if x.count(".") >= parts}
    else:
        whole = {".".join(x.split(".")[: parts + 1]) for x in names}
    # whole parts first (a family's name), else the ids' starts of the stem's length ('RTE_00*')
    for starts in (whole, {x[: len(stem)] for x in names}):
        starts.discard(stem)
        for start in closest(stem, starts, 1):
            fixed = start + rest
            hits = sum(1 for x in names if fnmatchcase(x, fixed))
            if hits and _distance(stem, start) <= max(2, len(stem) // 4):
                return fixed, hits
    return None


def matches_any(pattern: str, names: Iterable[str]) -> bool:
    return any(fnmatchcase(x, pattern) for x in names)


def is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in GLOB)


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, `pibench report: error: ... (see pibench report
    --help)`, instead of the usage block and then the error; exit 2 as argparse does."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
