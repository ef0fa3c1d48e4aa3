"""A content hash of a scenario set (every file of scenarios/ and domains/), for provenance."""

from __future__ import annotations

import hashlib
from typing import Any

from ..paths import domains_dir, scenarios_dir


def content_hash(source: str | None, note: str = "hashed when the run started") -> dict[str, Any]:
    """sha256 over every file of scenarios/ and domains/ (relative path and bytes, sorted)."""
    roots = [scenarios_dir(source), domains_dir(source)]
    if not all(r.is_dir() for r in roots):
        return {"source": source or "shipped", "sha256": None, "files": 0,
                "note": f"source {source} is no longer on disk; hash unavailable"}
    digest = hashlib.sha256()
    files = 0
    for root in roots:
        for p in sorted(x for x in root.rglob("*") if x.is_file() and "__pycache__" not in x.parts):
            digest.update(f"{root.name}/{p.relative_to(root).as_posix()}\0".encode())
            digest.update(p.read_bytes())
            digest.update(b"\0")
            files += 1
    return {"source": source or "shipped", "sha256": digest.hexdigest(), "files": files,
            "note": note}
