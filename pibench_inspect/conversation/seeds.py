"""The seed each run's parties get: the original's per-run derivation (reference 3.6)."""

from __future__ import annotations

import hashlib


def derive_seed(base: int, item_id: str, trial: int) -> int:
    """The original's per-run seed (reference 3.6): a scenario's seed for one trial (0-based)."""
    digest = hashlib.sha256(f"{base}:{item_id}:{trial}".encode()).hexdigest()[:16]
    return int(digest, 16) % (2**63 - 1)
