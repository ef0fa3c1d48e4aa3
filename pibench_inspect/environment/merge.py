"""Initial state = domain seed + scenario patch (the original's merge rules).

Copy-on-write: the merged document shares every value the patch does not touch with the seed
(and the patch's own values with the scenario), so nothing is deep-copied per sample and
`StateDB` can recognise the seed's untouched collections by identity. The document is
therefore read-only: whoever needs to change it copies the part it changes.
"""

from __future__ import annotations

from typing import Any

from ..scenario.model import Scenario


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Objects merge key by key; anything else (lists included, and null) replaces.

    Only the objects on a patched path are new; everything else is shared (see above)."""
    out = dict(base)
    for key, value in patch.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def initial_document(
    seed: dict[str, Any], scenario: Scenario, *, policy_text: str | None = None
) -> dict[str, Any]:
    """Seed + patch, then `employee` and `now` on top; with `policy_text` (original domains,
    whose `read_policy` tool serves it from the state) also `_policy_text`, as the original."""
    env = scenario.environment_setup
    doc = deep_merge(seed, env.initial_state_patch)
    if env.employee is not None:
        doc["employee"] = env.employee
    if env.now is not None:
        doc["now"] = env.now
    if policy_text is not None:
        doc["_policy_text"] = policy_text
    return doc


def domain_document(domain: Any, scenario: Scenario) -> dict[str, Any]:
    """The initial state of `scenario` in `domain` (parity extras for original domains)."""
    return initial_document(
        domain.seed_state, scenario, policy_text=domain.policy_text if domain.original_layout else None
    )


def apply_changes(initial: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """The final document from the loaded one and what the solver stored
    (`StateDB.export_changes_text`): top-level keys in their final order, each the changed
    value or else the loaded one. Shares the loaded document's values: read-only, as it is."""
    changed = changes.get("changed") or {}
    out: dict[str, Any] = {}
    for key in changes.get("keys") or []:
        if key in changed:
            out[key] = changed[key]
        elif key in initial:
            out[key] = initial[key]
        else:
            raise ValueError(f"stored state changes name {key!r} as unchanged, but the initial "
                             "document has no such key (the scenario or domain changed since the run?)")
    return out
