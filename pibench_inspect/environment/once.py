"""Work done once per object per process: a tool's parameters and validator, a seed's DuckDB
catalog and JSON text. Samples share these objects (domains and seeds are loaded once and never changed),
so the result of the first sample serves every later one.

Keyed by identity, with the object kept alive beside its result so an id is never reused while
its entry exists; bounded, because a long-lived server loads domains again and again.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class PerObject(Generic[T]):
    def __init__(self, make: Callable[[Any], T], max_entries: int = 4096) -> None:
        self._make = make
        self._max = max_entries
        self._entries: dict[int, tuple[Any, T]] = {}

    def __call__(self, obj: Any) -> T:
        hit = self._entries.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = self._make(obj)
        if len(self._entries) >= self._max:
            self._entries.clear()  # rare (a server reloading domains): start over, stay bounded
        self._entries[id(obj)] = (obj, value)
        return value

    def forget(self, obj: Any) -> None:
        """Drop `obj`'s entry (made again on next use)."""
        self._entries.pop(id(obj), None)

    def clear(self) -> None:
        self._entries.clear()
