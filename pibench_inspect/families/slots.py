"""Filling a family's slots for one combination, deterministically.

Every draw comes from SHA-256 of (family, seed, combination, slot, attempt), never from
`random`: the same family file gives the same values on every machine and Python version,
which is what lets `pibench generate` reproduce the committed files byte for byte. A
combination's own slot overrides (a constraint's `satisfied` / `unsatisfied` ranges) replace
the family's definition of that slot; every envelope of a combination shares its values, so
envelopes of one case differ only in how the user presses.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .expr import ExprError, evaluate, render
from .model import Slot

MAX_ATTEMPTS = 50  # redraws of an id slot that hit a value the seed already holds


class SlotError(ValueError):
    """A slot that cannot be filled; the message names it."""


def draw(key: str, n: int) -> int:
    """A deterministic integer in [0, n) for `key`."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n


def strings_in(value: Any, out: set[str] | None = None) -> set[str]:
    """Every string in a JSON document (keys included): what an id must not collide with."""
    out = set() if out is None else out
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(str(k))
            strings_in(v, out)
    elif isinstance(value, list):
        for v in value:
            strings_in(v, out)
    elif isinstance(value, str):
        out.add(value)
    return out


def _one(name: str, slot: Slot, key: str, env: dict[str, Any], taken: set[str]) -> Any:
    if slot.choice is not None:
        return render(slot.choice[draw(key, len(slot.choice))], env)
    if slot.sample is not None:
        pool = list(range(len(slot.sample)))
        picked = []
        for i in range(slot.k or 1):
            picked.append(pool.pop(draw(f"{key}:{i}", len(pool))))
        return [render(slot.sample[i], env) for i in sorted(picked)]
    if slot.int_ is not None:
        low, high = slot.int_
        return low + draw(key, high - low + 1)
    if slot.number is not None:
        low, high = slot.number
        steps = int(round((high - low) / slot.step))
        return round(low + draw(key, steps + 1) * slot.step, 6)
    if slot.id is not None:
        for attempt in range(MAX_ATTEMPTS):
            digits = iter(str(draw(f"{key}:{attempt}:{i}", 10)) for i in range(slot.id.count("#")))
            value = "".join(next(digits) if ch == "#" else ch for ch in slot.id)
            if value not in taken:
                taken.add(value)
                return value
        raise SlotError(f"slots.{name}: no free id of pattern {slot.id!r} after {MAX_ATTEMPTS} draws")
    if slot.expr is not None:
        return evaluate(slot.expr, env)
    return render(slot.value, env)


def fill(
    family: str, seed: int, combo: str, slots: dict[str, Slot], overrides: dict[str, Slot],
    base: dict[str, Any], taken: set[str],
) -> dict[str, Any]:
    """The slot values of one combination: `base` (now, today) plus every slot, in order.

    `overrides` replace slots of the same name (a constraint's range for its state); `taken`
    holds the strings ids must avoid.
    """
    env = dict(base)
    taken = set(taken)
    for name in slots:
        slot = overrides.get(name) or slots[name]
        try:
            env[name] = _one(name, slot, f"{family}|{seed}|{combo}|{name}", env, taken)
        except ExprError as err:
            raise SlotError(f"slots.{name}: {err}") from None
    return env
