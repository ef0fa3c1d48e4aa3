"""Where the shipped domains/ and scenarios/ live.

In a wheel they are package data (`pibench_inspect/_data/`); in a source checkout or an
editable install they are the top-level folders next to the package.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def data_root() -> Path:
    bundled = PACKAGE_DIR / "_data"
    if (bundled / "domains").is_dir():
        return bundled
    return PACKAGE_DIR.parent


def domains_dir(source: str | Path | None = None) -> Path:
    return (Path(source) if source else data_root()) / "domains"


def scenarios_dir(source: str | Path | None = None) -> Path:
    return (Path(source) if source else data_root()) / "scenarios"


def user_path(path: str | Path) -> Path:
    """Resolve a path the user typed on the command line.

    Inspect creates tasks with the working directory set to the task file's folder, so a
    relative `-T source=...` is resolved against the directory the command was run from
    (the shell's $PWD) when it exists there.
    """
    p = Path(path).expanduser()
    if p.is_absolute():
        return p
    import os

    shell_cwd = os.environ.get("PWD")
    if shell_cwd and (Path(shell_cwd) / p).exists():
        return (Path(shell_cwd) / p).resolve()
    return p.resolve()


def files_under(root: Path, pattern: str = "*") -> list[tuple[tuple[str, ...], Path]]:
    """Every file under `root` whose name matches `pattern`, as (its path's parts below `root`,
    its path), in the order `sorted(root.rglob(pattern))` gives: by parts, symlinked folders not
    entered, a symlink to a file listed (`is_file` follows it). Walked with `os.walk`: pathlib's
    rglob hashes and compares every Path it makes, which cost a run ~0.1 s per 500 files."""
    out = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(folder, root)
        parts = () if rel == os.curdir else tuple(rel.split(os.sep))
        for name in names:
            if fnmatch.fnmatchcase(name, pattern):
                out.append((parts + (name,), Path(folder, name)))
    out.sort(key=lambda item: item[0])
    return out
