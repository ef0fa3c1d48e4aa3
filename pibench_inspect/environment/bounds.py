"""One call's bounds on a state: its deadline (interrupting DuckDB) and the size of what it stores.

A mixin of StateDB (environment/state.py), kept apart because it is about calls, not data: it
needs only the state's connection (`_conn`) and its `export_changes_text`.
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from typing import Any, Iterator

import duckdb

from .limits import CallOverran, EffectLimits, StateTooLarge
from .mapping import StateError
from .watchdog import WATCHDOG


class CallBounds:
    limits: EffectLimits
    _conn: duckdb.DuckDBPyConnection | None

    def _init_bounds(self, limits: EffectLimits) -> None:
        self.limits = limits
        # the call in flight (see `bounded`): its marker, whether it ran past its deadline, and
        # a lock held while it runs (a call runs in a worker thread; `settle` waits for it)
        self._call: object | None = None
        self._overran = False
        self._guard = threading.Lock()
        self._busy = threading.Lock()
        # the size of what the solver would store, as last measured (None: not known), and an
        # upper bound of what generated writes added since (see check_size)
        self._size_known: int | None = None
        self._growth = 0

    def export_changes_text(self) -> str:
        raise NotImplementedError

    @contextmanager
    def bounded(self, seconds: float) -> Iterator[None]:
        """One call's deadline. Past it, the DuckDB statement running is interrupted (DuckDB's
        own interrupt, from the watchdog thread), every later statement of the call is refused
        and Python-side loops over rows stop at their next check: the call ends with
        CallOverran (or DuckDB's InterruptException) and its transaction rolls back."""
        if not self._busy.acquire(blocking=False):
            raise StateError("another call is still running on this state")
        marker = object()
        with self._guard:
            self._call, self._overran = marker, False
        token = WATCHDOG.arm(seconds, lambda: self._overrun(marker))
        try:
            yield
        finally:
            WATCHDOG.disarm(token)
            with self._guard:
                self._call = None
            self._busy.release()

    @property
    def overran(self) -> bool:
        """Whether the call in flight (or the last one) ran past its deadline."""
        return self._overran

    def _overrun(self, marker: object) -> None:
        with self._guard:
            if self._call is not marker:
                return  # that call is over
            self._overran = True
            conn = self._conn
        if conn is not None:
            conn.interrupt()

    def interrupt(self) -> None:
        """End the call in flight now, as its deadline would (a cancelled sample)."""
        with self._guard:
            marker = self._call
        if marker is not None:
            self._overrun(marker)

    @property
    def free(self) -> bool:
        """No call is running on this state (nothing else may read it while one runs)."""
        return not self._busy.locked()

    def check_deadline(self) -> None:
        """CallOverran once the call in flight ran past its deadline. Only while it is in flight:
        the state is read after it (the sample's final state, a check, the next call)."""
        if self._overran and self._call is not None:
            raise CallOverran()

    def check_size(self) -> None:
        """StateTooLarge when what the solver would store (`export_changes_text`) is larger than
        the domain's `limits.state_mb`. Measured exactly (an export) only when it may be: after
        raw SQL or a handler's `put`, or when the last measure plus an upper bound of what
        inserts and updates added since (`_grew`) passes the limit; so a sample's few small
        writes cost one export, not one each."""
        limit = int(self.limits.state_mb * 1_000_000)
        if self._size_known is not None and self._size_known + self._growth <= limit:
            return
        size = len(self.export_changes_text())
        if size > limit:
            raise StateTooLarge(f"the sample's state changes would take {size / 1e6:.1f} MB, more than the "
                                f"domain's limit of {self.limits.state_mb:g} MB (limits.state_mb)")
        self._size_known, self._growth = size, 0

    def _grew(self, values: dict[str, Any], rows: int, key: str | None = None) -> None:
        """An upper bound of what writing `values` to `rows` rows adds to the stored text: each
        value's JSON twice over (a row may gain every field, with its name), and some framing."""
        if rows:
            text = len(json.dumps(values, default=str)) + len(key or "")
            self._growth += rows * (2 * text + 64)
