"""`pibench generate`: write (or check) the scenario files of a family.

A family file lives at `families/<domain>/<name>.json` beside `domains/` and `scenarios/`;
its scenarios go to `scenarios/<domain>/<family id, lower case>/<combo>__<envelope>.json`
unless `--out` names another folder. Output is byte-for-byte reproducible: sorted nothing,
dumped with a fixed indent, one trailing newline. Files of the family's folder that the family
no longer produces are removed, so the folder always equals the family's output.

The family file is untrusted data and so is what lies in the output folder. Every file is made
and checked in memory before any is written: within the family's bounds (bounds.py) and by the
scenario loader's own rules (`file_problems`), so `generate` never writes a file `pibench
validate` or `inspect eval` would refuse. Writes stay inside the chosen folder: the default
folder must resolve (symlinks followed) inside the source's scenarios/, a file is written as a
new file renamed over the name (never through a symlink that sits there), and a name held by
anything but a regular file (a symlink, a FIFO, a folder) is refused. What is read back (the
stale-file scan, `--check`) is read as the loader reads: regular files only, at most the
loader's size limit, never waiting on a FIFO.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..domain.loader import Domain, load_domain, resolve_domain_dir, alias_table
from ..scenario.catalog import file_problems
from ..scenario.errors import ScenarioError, validation_problems
from ..scenario.reading import MAX_FILE_BYTES, inside, parse_json, read_json, read_text
from .bounds import MAX_OUTPUT_BYTES, OverBudget, budget, check_time, json_size
from .derive import FamilyError, generate
from .model import Family


@dataclass
class Output:
    family: Family
    folder: Path
    files: dict[str, str]  # file name -> text
    # the folder `folder` must resolve inside (the source's scenarios/); None: --out, the user's choice
    within: Path | None = None


def source_root(family_path: Path) -> Path:
    """The folder holding domains/ and scenarios/ for a family file (families/<domain>/x.json)."""
    for parent in family_path.resolve().parents:
        if (parent / "domains").is_dir() and (parent / "scenarios").is_dir():
            return parent
    raise FileNotFoundError(f"{family_path}: no folder above it holds domains/ and scenarios/ (use --source)")


def load_family(path: Path, root: Path) -> Family:
    raw = read_json(path, root, "family file")
    try:
        return Family.model_validate(raw)
    except ValidationError as err:
        raise ScenarioError(path, validation_problems(err)) from None


def family_domain(family: Family, root: Path) -> Domain:
    droot = root / "domains"
    return load_domain(resolve_domain_dir(family.domain, droot, alias_table(droot).names), root)


def dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def build(path: str | Path, out: str | Path | None = None, source: str | Path | None = None) -> Output:
    """Every file of the family, made and checked in memory (ScenarioError naming the family
    file, and each generated file the loader would refuse)."""
    path = Path(path)
    root = Path(source).resolve() if source else source_root(path)
    family = load_family(path, root)
    domain = family_domain(family, root)
    folder = Path(out) if out else root / "scenarios" / domain.name / family.family.lower()
    try:
        with budget():
            files, problems = made(generate(family, domain), folder, domain)
    except (FamilyError, OverBudget) as err:
        raise ScenarioError(path, [str(err)]) from None
    if problems:
        raise ScenarioError(path, problems)
    return Output(family, folder, files, None if out else root / "scenarios")


def made(docs: list[tuple[str, dict[str, Any]]], folder: Path, domain: Domain) -> tuple[dict[str, str], list[str]]:
    """(file name -> text, problems): each document dumped once its size is known to be within
    the loader's limit and what the family may still write, then checked by the loader's rules."""
    files: dict[str, str] = {}
    problems: list[str] = []
    total = 0
    for name, doc in docs:
        check_time()
        target = folder / name
        left = MAX_OUTPUT_BYTES - total
        size = json_size(doc, min(MAX_FILE_BYTES, left))  # a lower bound, walked only so far
        if size > left:
            raise FamilyError(_too_much())
        if size > MAX_FILE_BYTES:  # never dumped: it could describe gigabytes
            problems.append(f"generated file {target} would not load: larger than the loader's limit of "
                            f"{MAX_FILE_BYTES:,} bytes (MAX_FILE_BYTES)")
            continue
        text = dump(doc)
        total += len(text.encode("utf-8", "surrogatepass"))
        if total > MAX_OUTPUT_BYTES:
            raise FamilyError(_too_much())
        problems += [f"generated file {target} would not load: {p}" for p in file_problems(text, target, domain)]
        files[name] = text
    return files, problems


def _too_much() -> str:
    return f"the family's files come to more than {MAX_OUTPUT_BYTES:,} bytes (MAX_OUTPUT_BYTES); nothing was written"


def output_dir(output: Output, create: bool) -> Path:
    """The real path of the output folder, checked: a folder (or nothing yet), and the default
    one inside the source's scenarios/ however its parts are linked."""
    folder = output.folder
    if output.within is not None and not (inside(folder, output.within) and inside(folder, output.within.parent)):
        raise ScenarioError(folder, [f"(folder): resolves outside {output.within} (a symlink?); "
                                     "generate writes only inside the source's scenarios/"])
    if folder.exists() and not folder.is_dir():
        raise ScenarioError(folder, ["(folder): not a folder; --out names the folder to write the scenarios into"])
    if create:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ScenarioError(folder, [f"(folder): cannot create it: {err.strerror or err}"]) from None
    return folder.resolve()


def held(folder: Path, name: str) -> bool:
    """Whether a regular file holds `name` in the (real) output folder (False: nothing does).
    ScenarioError when anything else holds it (a symlink, a FIFO, a folder): generate neither
    reads nor writes through it."""
    target = folder / name
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return False
    except OSError as err:
        raise ScenarioError(target, [f"(file): cannot read it: {err.strerror or err}"]) from None
    if not stat.S_ISREG(mode):
        raise ScenarioError(target, ["(file): not a regular file (a symlink, FIFO or folder); generate neither "
                                     "reads nor writes through it: remove it"])
    return True


def existing(folder: Path, name: str) -> str | None:
    """The text at `name` in the (real) output folder, read as the loader reads (a regular file,
    at most its size limit, UTF-8); None when nothing is there. ScenarioError otherwise."""
    return read_text(folder / name, folder, "generated file") if held(folder, name) else None


def stale(output: Output, folder: Path | None = None) -> list[Path]:
    """Files in the output folder that belong to this family but that it no longer makes. A
    file that cannot be read as a scenario file (a link, a FIFO, too large) is not judged ours."""
    folder = folder or output_dir(output, create=False)
    if not folder.is_dir():
        return []
    out = []
    for p in sorted(folder.glob("*.json")):
        if p.name in output.files:
            continue
        try:
            text = existing(folder, p.name)
            meta = parse_json(text, p).get("meta", {}) if text is not None else None
        except (ScenarioError, AttributeError):
            continue
        if isinstance(meta, dict) and meta.get("family") == output.family.family:
            out.append(output.folder / p.name)
    return out


def write(output: Output) -> list[Path]:
    """Write the family's files, removing its stale ones. Every name is checked first: nothing
    is written when one is held by a link, a FIFO or a folder."""
    folder = output_dir(output, create=True)
    current: dict[str, str | None] = {}
    for name in output.files:  # first: a name held by a link refuses the whole write
        current[name] = None
        if held(folder, name):
            try:
                current[name] = read_text(folder / name, folder, "generated file")
            except ScenarioError:
                pass  # a regular file the loader could not read (too large): replaced
    for p in stale(output, folder):
        (folder / p.name).unlink()
    written = []
    for name, text in output.files.items():
        if current[name] != text:
            put(folder, name, text)
        written.append(output.folder / name)
    return written


def put(folder: Path, name: str, text: str) -> None:
    """A new file renamed over `name`: a rename replaces the name itself, so nothing that may
    sit there by then (a symlink) is followed."""
    tmp = folder / f".{name}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, folder / name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def differences(output: Output) -> list[str]:
    """How the committed files differ from what the family makes (empty: identical)."""
    folder = output_dir(output, create=False)
    out = []
    for name, text in output.files.items():
        target = output.folder / name
        try:
            have = existing(folder, name)
        except ScenarioError as err:
            out += [f"{target}: {p.removeprefix('(file): ')}" for p in err.problems]
            continue
        if have is None:
            out.append(f"{target}: missing")
        elif have != text:
            out.append(f"{target}: differs from what the family generates")
    out += [f"{p}: no longer generated by {output.family.family}" for p in stale(output, folder)]
    return out
