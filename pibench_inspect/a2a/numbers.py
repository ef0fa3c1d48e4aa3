"""Numbers from A2A peers, read by meaning.

a2a-sdk 1.x carries a data part as a protobuf Struct, in which every number is a double: a 1.x
client that sends `max_steps: 40` and `seed: 42` puts `40.0` and `42.0` on the wire, even when it
speaks the v0.3 dialect to a v0.3 server (its compat transport converts through the Struct too).
Where a field needs an integer we therefore read an integral float as that integer (so a seed of
42.0 derives exactly the seeds of 42), refuse a non-integral one with a message naming the field,
and never take a boolean for a number (JSON `true` is not 1).
"""

from __future__ import annotations

import math
from typing import Any


class NotWholeNumber(ValueError):
    """The value is not an integer by meaning; the text names the field."""


def describe(value: Any) -> str:
    """A value as the caller wrote it in JSON (true, 40.5, "40"), kept short."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


def whole_number(value: Any, field: str) -> int:
    """`value` as an int: an int, or a float whose value is integral (40.0 -> 40). Anything else
    (a fraction, NaN, infinity, a boolean, a string, null) raises NotWholeNumber naming `field`."""
    if isinstance(value, bool):
        raise NotWholeNumber(f"{field}: expected a whole number, got the boolean {describe(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():  # False for NaN and infinities
            return int(value)
        raise NotWholeNumber(f"{field}: expected a whole number, got {describe(value)}")
    shown = "null" if value is None else f"{type(value).__name__} {describe(value)}"
    raise NotWholeNumber(f"{field}: expected a whole number, got {shown}")


def optional_whole_number(value: Any, field: str) -> int | None:
    """As whole_number, with None (absent) passed through."""
    return None if value is None else whole_number(value, field)


def integral_numbers(value: Any) -> Any:
    """A JSON value with every integral float turned back into an int, at any depth: what a peer
    on a protobuf-based SDK (a2a-sdk 1.x) meant, whose wire turned every number into a double."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral_numbers(v) for v in value]
    return value
