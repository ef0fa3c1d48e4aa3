"""Load errors that name the file and the field, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError


class ScenarioError(ValueError):
    """One file with one or more problems, each `field.path: message`."""

    def __init__(self, path: str | Path, problems: Iterable[str]):
        self.path = str(path)
        self.problems = list(problems)
        super().__init__("\n".join(f"{self.path}: {p}" for p in self.problems))


def field_path(loc: Iterable[Any], tags: Iterable[str] = ()) -> str:
    """Render a pydantic error location as `a.b[3].c`.

    Discriminated unions insert the tag (the check `type`) into the location after the list
    index; it is dropped so the path matches what the author wrote.
    """
    tagset = set(tags)
    out = ""
    prev_int = False
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            prev_int = True
            continue
        if prev_int and part in tagset:
            prev_int = False
            continue
        prev_int = False
        # keep one problem per line even for keys with line breaks in them
        part = str(part).replace("\r", "\\r").replace("\n", "\\n")
        out += f".{part}" if out else part
    return out or "(top level)"


def validation_problems(err: ValidationError, tags: Iterable[str] = ()) -> list[str]:
    tags = tuple(tags)
    problems = []
    for e in err.errors(include_url=False):
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "missing":
            msg = "field required"
        elif e["type"] == "extra_forbidden":
            msg = "unknown field"
        elif e["type"] == "union_tag_invalid":
            ctx = e.get("ctx") or {}
            msg = f"unknown check type {ctx.get('tag')!r}"
        problems.append(f"{field_path(e['loc'], tags)}: {msg}")
    return problems
