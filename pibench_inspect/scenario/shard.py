"""`-T shard=K/N`: run the K-th of N disjoint parts of a scenario selection.

A scenario's shard depends on its id alone (a SHA-256 of the id, modulo N), so it is the same in
every run, process and machine, and does not move when other scenarios are added or removed.
Every epoch of a scenario runs in its shard, so each shard's log holds whole samples and
`pibench report` over all shards' logs reports exactly what the unsharded run reports.
K counts from 1 (`1/3`, `2/3`, `3/3`), as array-job indices usually do (`sbatch --array=1-3`).
"""

from __future__ import annotations

import hashlib
from typing import Any


def parse_shard(value: Any) -> tuple[int, int] | None:
    """'K/N' -> (K, N); None for no sharding. A bad value is a ValueError saying what is expected."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    parts = text.split("/")
    try:
        if len(parts) != 2:
            raise ValueError
        k, n = int(parts[0]), int(parts[1])
    except ValueError:
        raise ValueError(f"expected K/N (shard K of N, e.g. 2/3), got {text!r}") from None
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"expected K/N with 1 <= K <= N, got {text!r}")
    return k, n


def shard_of(scenario_id: str, n: int) -> int:
    """The shard (1..n) a scenario id belongs to."""
    digest = hashlib.sha256(scenario_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def in_shard(scenario_id: str, shard: str | None) -> bool:
    parsed = parse_shard(shard)
    return parsed is None or shard_of(scenario_id, parsed[1]) == parsed[0]
