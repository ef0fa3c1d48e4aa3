"""A content hash of a scenario set (every file of scenarios/ and domains/), for provenance."""

from __future__ import annotations

import hashlib
from typing import Any

from ..paths import domains_dir, files_under, scenarios_dir


def content_hash(source: str | None, note: str = "hashed when the run started") -> dict[str, Any]:
    """sha256 over every file of scenarios/ and domains/ (relative path and bytes, sorted)."""
    roots = [scenarios_dir(source), domains_dir(source)]
    if not all(r.is_dir() for r in roots):
        return {"source": source or "shipped", "sha256": None, "files": 0,
                "note": f"source {source} is no longer on disk; hash unavailable"}
    digest = hashlib.sha256()
    files = 0
    for root in roots:
        for parts, p in files_under(root):
            if "__pycache__" in parts or not p.is_file():
                continue
            digest.update(f"{root.name}/{'/'.join(parts)}\0".encode())
            digest.update(p.read_bytes())
            digest.update(b"\0")
            files += 1
    return {"source": source or "shipped", "sha256": digest.hexdigest(), "files": files,
            "note": note}
