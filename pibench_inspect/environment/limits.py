"""The bounds on what one catalog call may cost (a domain's `limits`, docs/authoring.md).

A catalog is data from a scenario source, and a scenario source is untrusted: a `sql` step can
ask DuckDB for a trillion rows, a schema `pattern` can backtrack for years, a write can grow
the state without end. Every call therefore runs under these limits, in `inspect eval` and in
`pibench validate` alike; one that overruns is a tool error that names the step, its changes
are rolled back, and the sample goes on.

* `call_seconds`: the wall-clock deadline of one call. A DuckDB statement still running then is
  interrupted (DuckDB's own `interrupt()`), Python-side work stops at its next check, and a
  schema `pattern` is matched with a deadline of its own (`pattern_seconds`).
* `memory_mb`: DuckDB's `memory_limit` of a state that runs catalog SQL (a database of its own
  per sample; states that run only generated SQL share one instance, capped at
  SHARED_MEMORY_MB). Nothing spills to disk: the databases have no temporary directory.
* `state_mb`: what a sample may store as its state changes (the JSON text the solver keeps in the
  sample's store, pibench:state_changes); a write that would pass it fails.
* `sql_rows`: rows a `sql` step may return (each one becomes a Python object).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

SHARED_MEMORY_MB = 1024  # the one instance holding every generated-SQL-only sample's catalog
PATTERN_SECONDS = 0.5  # one schema `pattern` against one argument


class EffectLimits(BaseModel):
    """A domain's bounds on one tool call (domain.json `limits`); every field has a default."""

    model_config = ConfigDict(extra="forbid")
    call_seconds: float = Field(default=5.0, gt=0, le=120)
    memory_mb: int = Field(default=256, ge=16, le=8192)
    state_mb: float = Field(default=16.0, gt=0, le=512)
    sql_rows: int = Field(default=10_000, ge=1, le=1_000_000)


DEFAULT_LIMITS = EffectLimits()


class CallOverran(Exception):
    """The call ran past its deadline (its DuckDB statement was interrupted)."""


class StateTooLarge(Exception):
    """A write would make the sample's stored state changes larger than `state_mb`."""
