"""A domain's seed state, shared by every sample: frozen in Python, built once into DuckDB.

Why a seed catalog: a sample's document is the domain seed plus its scenario's patch
(merge.deep_merge shares every untouched value with the seed). Building each sample's tables
from Python values cost ~2.7 ms a table; instead the seed's collections are built once per
process into a catalog of the shared instance, a sample reads an untouched collection there and
copies it into its private catalog in-database (`CREATE TABLE ... AS SELECT * FROM seed`) only
when it first writes it. Samples never write the seed catalog: their statements name their own
tables, the seed's only in reads and in that copy.

Why frozen: the same seed objects are in every sample's document, so one in-place edit (a
handler's, a check's) would change every later sample. `freeze` makes them read-only; a copy
(`copy.deepcopy`, `dict(...)`, pickling) is an ordinary mutable value again.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from .duck import LOCK, attach_catalog, drop_catalog, q, release_at_exit, shared_instance
from .mapping import Collection, classify, create_params, create_sql, describe, records
from .once import PerObject


def _refuse(self: Any, *args: Any, **kwargs: Any) -> None:
    raise TypeError("the domain seed is shared by every sample and cannot be changed in place; "
                    "change a copy (copy.deepcopy) or the sample's state")


class FrozenDict(dict):
    """A dict whose content cannot change (a JSON object of the shared seed)."""

    __slots__ = ()
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse  # type: ignore

    def __reduce_ex__(self, protocol: Any) -> Any:  # copies and pickles are plain dicts
        return (dict, (dict(self),))


class FrozenList(list):
    """A list whose content cannot change (a JSON array of the shared seed)."""

    __slots__ = ()
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = _refuse  # type: ignore
    __iadd__ = __imul__ = _refuse  # type: ignore

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (list, (list(self),))


def freeze(value: Any) -> Any:
    """`value` with every object and array read-only (JSON text, equality and isinstance as before)."""
    if isinstance(value, dict):
        return FrozenDict((k, freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    return value


@dataclass
class SeedCatalog:
    """The seed's collections as tables of one catalog (path -> its table, `source` set)."""

    name: str
    pid: int
    collections: dict[str, Collection]


def _build(seed: dict[str, Any]) -> SeedCatalog:
    name = attach_catalog("seed")
    found: dict[str, tuple[str, Any]] = {}

    def walk(path: list[str], value: Any) -> None:
        kind = classify(value)
        if kind == "namespace":
            for k, v in value.items():
                walk(path + [k], v)
        elif kind != "scalar":
            found[".".join(path)] = (kind, value)

    for key, value in seed.items():
        walk([key], value)
    colls: dict[str, Collection] = {}
    root = shared_instance()
    with LOCK:
        for n, (path, (kind, value)) in enumerate(found.items()):
            rows = records(kind, value)
            coll = describe(path, kind, rows)
            table = f"t{n}"
            root.execute(create_sql(coll, f"{q(name)}.main.{table}"), create_params(coll, rows))
            coll.source, coll.end = f"{q(name)}.main.{table}", len(rows)
            colls[path] = coll
    cat = SeedCatalog(name, os.getpid(), colls)
    weakref.finalize(cat, drop_catalog, root, root.cursor(), name)
    return cat


_catalogs = PerObject(_build, max_entries=64)


def seed_catalog(seed: dict[str, Any]) -> SeedCatalog:
    """The seed's catalog in this process's shared instance, built on first use."""
    cat = _catalogs(seed)
    if cat.pid != os.getpid():  # a forked child: the parent's instance is not ours
        _catalogs.forget(seed)
        cat = _catalogs(seed)
    return cat


# The JSON text of a seed collection, made once per process (the seed is frozen).
seed_text = PerObject(json.dumps)


# ---------------------------------------------------------------- scenario tables
#
# Why: a scenario's patched collections are built again for every play of it (the authoring
# gates play each scenario hundreds of times, a run plays it once per epoch), and many
# scenarios patch in the same collection. So a collection's table is built once per process
# into a catalog of shared tables, keyed by its content (the JSON text `clean` made, which tells
# apart every value a table holds differently: 1/1.0/true, key order), and read in place like a
# seed table until a sample first writes it. Bounded: past MAX_SHARED tables a new catalog is
# started, and an old one is detached once no state reads it (each state keeps the catalogs it
# reads alive).

MAX_SHARED = 2048


class SharedCatalog:
    def __init__(self) -> None:
        self.name, self.pid, self.count = attach_catalog("docs"), os.getpid(), 0
        root = shared_instance()
        with LOCK:
            cursor = root.cursor()
        weakref.finalize(self, drop_catalog, root, cursor, self.name)


_shared: dict[tuple[str, bytes], tuple[SharedCatalog, Collection]] = {}
_current: list[SharedCatalog] = []
_building = threading.Lock()


def shared_table(kind: str, value: Any, text: str) -> tuple[SharedCatalog, Collection] | None:
    """The shared table holding `value` (a collection of kind `kind` whose JSON text is `text`,
    found storable), built on first use; None for a value with a key that is not text (JSON
    text would not tell it apart). The Collection is the shared one: copy before changing."""
    if kind in ("keyed", "record") and not all(type(k) is str for k in value):
        return None
    if kind == "rows" and not all(type(k) is str for r in value for k in r):
        return None
    key = (kind, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest())
    with _building:
        hit = _shared.get(key)
        if hit is not None and hit[0].pid == os.getpid():
            return hit
        if not _current or _current[0].pid != os.getpid() or _current[0].count >= MAX_SHARED:
            _shared.clear()
            _current[:] = [SharedCatalog()]
        cat = _current[0]
        # built from the text its key names, not from `value`: a caller may edit its value after
        # loading it (a handler's `put`), and a table built from the edited value under the old
        # text's key would be read by every other state loading that text
        rows = records(kind, json.loads(text))
        coll = describe("", kind, rows, checked=True)
        table = f"{q(cat.name)}.main.t{cat.count}"
        cat.count += 1
        root = shared_instance()
        with LOCK:
            root.execute(create_sql(coll, table), create_params(coll, rows))
        coll.source, coll.end = table, len(rows)
        _shared[key] = (cat, coll)
        return cat, coll


# What a statement read from a shared table (a seed's or a scenario's: never written), by its
# text and parameters: the gates play a scenario hundreds of times and each play looks up the
# same rows. The rows as DuckDB returned them (immutable values; JSON as text), so every caller
# decodes fresh dicts. Bounded in entries and in the rows an entry may hold.
MAX_READS, MAX_READ_ROWS = 8192, 512
_reads: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}


def _release() -> None:
    _catalogs.clear()
    _shared.clear()
    _current.clear()
    _reads.clear()


release_at_exit(_release)


def read_key(sql: str, params: list[Any]) -> tuple[Any, ...] | None:
    """The cache key of a read (None: a parameter that is not a plain value). Types are part of
    the key: `True == 1` and `1 == 1.0` in Python, not in SQL."""
    if not all(p is None or type(p) in (str, int, float, bool) for p in params):
        return None
    return (sql, os.getpid(), *((type(p), p) for p in params))


def cached_read(key: tuple[Any, ...]) -> list[tuple[Any, ...]] | None:
    return _reads.get(key)


def keep_read(key: tuple[Any, ...], rows: list[tuple[Any, ...]]) -> None:
    if len(rows) <= MAX_READ_ROWS:
        if len(_reads) >= MAX_READS:
            _reads.clear()
        _reads[key] = rows
