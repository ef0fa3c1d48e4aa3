"""A state's calls as transactions: all or nothing, in the data and in the Python-side layout.

A mixin of StateDB (environment/state.py), kept apart because it is about calls, not data: a
write call's database transaction begins with its first write (`_write`), so a call that only
reads, or fails before writing, costs no BEGIN and no COMMIT; a failure rolls back the data and
restores the layout, the collections' column maps and the scalars.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import duckdb

from .mapping import Collection, StateError


def _copy_layout(layout: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [(k, _copy_layout(v) if isinstance(v, list) else v) for k, v in layout]


class Transactions:
    layout: list[tuple[str, Any]]
    collections: dict[str, Collection]
    _conn: duckdb.DuckDBPyConnection | None
    _tables: set[str]
    _pristine: dict[str, Any]
    _unbuilt: dict[str, Any]
    _scalars: dict[str, str]
    _dirty: set[str]
    _reads_only: bool
    _tx: str | None
    _size_known: int | None
    _growth: int

    # StateDB provides `conn` (the connection, refused once the call overran)

    def _write(self, sql: str, params: Any = None) -> duckdb.DuckDBPyConnection:
        """Run a statement that changes data: a write call's transaction begins with its first
        (a call that only reads, or fails before writing, needs no BEGIN and no COMMIT)."""
        conn = self.conn
        if self._tx == "wanted":
            self._tx = "open"
            conn.execute("BEGIN TRANSACTION")
        return conn.execute(sql, params)

    @contextmanager
    def transaction(self, *, reads_only: bool = False) -> Iterator[None]:
        """All or nothing: a failure rolls back the data and the Python-side layout.

        `reads_only`: the caller only reads tables (a catalog tool with no insert, update, sql
        or handler): no database transaction; only the scalars and the layout, which id counters
        change, are restored on failure, and a write inside is refused."""
        if reads_only:
            saved_scalars = (len(self.layout), dict(self._scalars), set(self._dirty))
            self._reads_only = True
            try:
                yield
            except BaseException:
                del self.layout[saved_scalars[0]:]
                self._scalars, self._dirty = saved_scalars[1], saved_scalars[2]
                raise
            finally:
                self._reads_only = False
            return
        if self._tx is not None:
            raise StateError("a state transaction is already open")
        # collections' column maps are replaced, never edited, so keeping the maps is a snapshot
        kept = [(c, c.columns, c.physical, c.source, c.end) for c in self.collections.values()]
        saved = (dict(self.collections), _copy_layout(self.layout), set(self._tables), dict(self._pristine),
                 dict(self._scalars), set(self._dirty), dict(self._unbuilt))
        # the stored size as measured: a call may measure it with its changes (check_size) and
        # still fail at its COMMIT; the bound must then be of the state as it is again
        sizes = (self._size_known, self._growth)
        self._tx = "wanted"
        try:
            yield
            if self._tx == "open":
                # COMMIT inside the try: the deadline may pass after the call's last statement
                # (`conn` then refuses) or the COMMIT itself may fail; the call must then roll
                # back like any failure, never leave the transaction open with the layout of a
                # committed call (the next call's BEGIN failed, and its ROLLBACK undid this one)
                self.conn.execute("COMMIT")
        except BaseException:
            if self._tx == "open":
                self._tx = None
                assert self._conn is not None  # the connection itself: `conn` refuses once overran
                try:
                    self._conn.execute("ROLLBACK")
                except duckdb.TransactionException:
                    pass  # a COMMIT that failed has ended it already: restore the layout all the same
            for c, columns, physical, source, end in kept:
                c.columns, c.physical, c.source, c.end = columns, physical, source, end
            (self.collections, self.layout, self._tables, self._pristine, self._scalars, self._dirty,
             self._unbuilt) = saved
            self._size_known, self._growth = sizes
            raise
        finally:
            self._tx = None


def refuse_transaction_statements(query: str) -> None:
    """Raw SQL (a domain's `sql` step) may not BEGIN, COMMIT or ROLLBACK: that would end the
    call's own transaction, keeping (or undoing) its earlier writes whatever the call does next,
    with the layout no longer the data's."""
    try:
        kinds = {st.type for st in duckdb.extract_statements(query)}
    except duckdb.Error:
        kinds = set()  # not parsed: running it reports the error
    if duckdb.StatementType.TRANSACTION in kinds:
        raise StateError("a sql statement may not begin, commit or roll back a transaction "
                         "(a call is all or nothing)")
