"""A state as a JSON document: a value by its path (`get`), a value replaced in place (`put`), and
the document or what changed as JSON text (`export`, `export_changes_text`).

A mixin of StateDB (environment/state.py), kept apart because it works on the document's shape
(`layout`) and reads tables only through StateDB's `_keyed_rows`; the original's handlers
(parity/) edit the state this way, as the original edited its JSON.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from .duck import q
from .mapping import Collection, StateError, classify
from .seed import seed_text


class DocumentAccess:
    layout: list[tuple[str, Any]]
    collections: dict[str, Collection]
    _pristine: dict[str, Any]
    _texts: dict[str, tuple[Any, str]]
    _unbuilt: dict[str, Any]
    _scalars: dict[str, str]
    _dirty: set[str]
    _reads_only: bool
    _size_known: int | None

    # StateDB provides get_scalar, _keyed_rows, _load, _write and _seed_value

    def _node(self, parts: list[str]) -> tuple[list[tuple[str, Any]], int] | None:
        level = self.layout
        for depth, part in enumerate(parts):
            idx = next((i for i, (k, _) in enumerate(level) if k == part), None)
            if idx is None:
                return None
            if depth == len(parts) - 1:
                return level, idx
            if not isinstance(level[idx][1], list):
                return None
            level = level[idx][1]
        return None

    def get(self, path: str, default: Any = None) -> Any:
        """The JSON value at a top-level key or a namespace child (`activity.pending_requests`),
        a copy (a never-written collection's value is the loaded document's, and the seed's)."""
        parts = path.split(".")
        found = self._node(parts)
        if found is None:
            return default
        key, node = found[0][found[1]]
        if node == "scalar":
            return self.get_scalar(key, default)
        value = self._export_level(node, parts) if isinstance(node, list) else self._export_collection(
            self.collections[path])
        return json.loads(json.dumps(value, default=str))

    def _drop(self, parts: list[str], node: Any) -> None:
        if node == "scalar":
            self._scalars.pop(parts[-1], None)
        elif isinstance(node, list):
            for k, child in node:
                self._drop(parts + [k], child)
        else:
            coll = self.collections.pop(".".join(parts))
            self._pristine.pop(coll.path, None)
            if self._unbuilt.pop(coll.path, None) is None and coll.source is None:  # a table to drop
                self._write(f"DROP TABLE {q(coll.table)}")
            self._tables.discard(coll.table.lower())

    def put(self, path: str, value: Any) -> None:
        """Replace (or create) the JSON value at a top-level key or a namespace child, in the same
        place of the document (for handlers reproducing the original's in-place JSON edits)."""
        if self._reads_only:
            raise StateError(f"a read-only call cannot change {path!r}")
        self._size_known = None  # a whole value replaced: measure again
        parts = path.split(".")
        self._dirty.add(parts[0])
        found = self._node(parts)
        if found is None:
            if len(parts) == 1:
                level = self.layout
            else:
                parent = self._node(parts[:-1])
                if parent is None or not isinstance(parent[0][parent[1]][1], list):
                    raise StateError(f"no namespace {'.'.join(parts[:-1])!r} to put {path!r} into")
                level = parent[0][parent[1]][1]
            level.append((parts[-1], None))
            found = (level, len(level) - 1)
        level, idx = found
        if level[idx][1] is not None:
            self._drop(parts, level[idx][1])
        if len(parts) > 1 and classify(value) == "scalar":
            raise StateError(f"{path!r} is inside a namespace and must be a list or an object")
        bad_key = _non_text_key(value)
        if bad_key is not None:  # JSON has text keys only; a handler's Python value may not
            raise StateError(f"{path!r}: the key {bad_key!r} is not text (a JSON object's keys are text)")
        if value is not self._seed_value(parts):  # the seed's own value is frozen: read in place
            # the state's own copy: the caller may edit its value after the put (a handler that
            # goes on with it), and the state loads a collection's table lazily from the value
            value = copy.deepcopy(value)
        level[idx] = (parts[-1], self._load(parts[-1], parts, value))

    # ------------------------------------------------------------------ export

    def export(self) -> dict[str, Any]:
        """The current document (a copy: nothing in it is shared with the loaded one)."""
        return json.loads(self.export_text())

    def export_text(self) -> str:
        """The current document as JSON text: exactly `json.dumps(self.export())`."""
        return self._level_text(self.layout, [])

    def export_changes_text(self) -> str:
        """What the solver stores: the document's top-level keys in order, and the value of
        every top-level key that may have changed since loading (written, put, or a scalar
        set); `merge.apply_changes(loaded document, json.loads(...))` gives `export()`.

        Why not the whole document: it is ~65 KB a sample on the shipped domains, and Inspect
        carries the store into events, the realtime buffer and the log twice."""
        keys = json.dumps([k for k, _ in self.layout])
        changed = self._level_text([(k, n) for k, n in self.layout if k in self._dirty], [])
        return f'{{"keys": {keys}, "changed": {changed}}}'

    def _level_text(self, layout: list[tuple[str, Any]], path: list[str]) -> str:
        parts = []
        for key, node in layout:
            if node == "scalar":
                text = self._scalars.get(key, "null")
            elif isinstance(node, list):
                text = self._level_text(node, path + [key])
            else:
                loaded = self._pristine.get(".".join(path + [key]))
                made = self._texts.get(".".join(path + [key]))
                if loaded is not None and loaded is self._seed_value(path + [key]):
                    text = seed_text(loaded)  # still the seed's own value: its text is made once
                elif made is not None and loaded is not None and made[0] is loaded:
                    text = made[1]  # never written: the text the load made
                else:
                    # default=str: a raw `sql` step may have changed a column to a type JSON lacks
                    text = json.dumps(self._export_collection(self.collections[".".join(path + [key])]),
                                      default=str)
            parts.append(f"{json.dumps(key)}: {text}")
        return "{" + ", ".join(parts) + "}"

    def _export_level(self, layout: list[tuple[str, Any]], path: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, node in layout:
            if node == "scalar":
                out[key] = None
            elif isinstance(node, list):
                out[key] = self._export_level(node, path + [key])
            else:
                out[key] = self._export_collection(self.collections[".".join(path + [key])])
        return out

    def _export_collection(self, coll: Collection) -> Any:
        if coll.path in self._pristine:
            return self._pristine[coll.path]  # never written: the value it was loaded from
        if coll.kind == "keyed":
            return dict(self._keyed_rows(coll, "", [], "_pos"))
        rows = [rec for _, rec in self._keyed_rows(coll, "", [], "_pos")]
        if coll.kind == "rows":
            return rows
        if coll.kind == "values":
            return [r.get("value") for r in rows]
        return rows[0] if rows else {}


def _non_text_key(value: Any) -> Any:
    """The first object key in `value` that is not a string (None if all are): the load checks
    values, and a document loaded from JSON never has one, but a handler's `put` can pass any."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    return k
                stack.append(x)
        elif isinstance(v, list):
            stack.extend(v)
    return None
