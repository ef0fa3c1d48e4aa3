"""Boundary cases: a threshold the policy names, drawn just under, at and just over it.

A constraint that turns on a number (a 7-day window, a $10,000 cash threshold, a risk score
of 75) may declare `threshold: {slot, at, step, at_satisfies, clause}`. The family then gets
three more cases, `<constraint>_under`, `<constraint>_at` and `<constraint>_over`, with the
slot pinned to at - step, at and at + step (slots computed from it follow: a delivery date from
a day count). Which side each lies on follows from `at_satisfies` and from the side of `at` the
constraint's satisfied range lies on: a case on the satisfied side is the all-met case with the
slot pinned (the family's outcome), one on the unsatisfied side is the constraint's broken case
with the slot pinned. Every other constraint stays satisfied.

This module holds the arithmetic only (it reads slots and constraints by their fields, so the
model can call it without importing it back).
"""

from __future__ import annotations

from typing import Any

SIDES = ("under", "at", "over")
ALL_MET = "all_met"


def _range(slot: Any) -> tuple[float, float, bool] | None:
    """(low, high, integral) of an int / number / numeric value slot; None for any other kind."""
    if slot is None:
        return None
    if slot.int_ is not None:
        return float(slot.int_[0]), float(slot.int_[1]), True
    if slot.number is not None:
        return float(slot.number[0]), float(slot.number[1]), False
    if "value" in slot.model_fields_set and isinstance(slot.value, (int, float)) and not isinstance(slot.value, bool):
        return float(slot.value), float(slot.value), isinstance(slot.value, int)
    return None


def _fmt(r: tuple[float, float, bool]) -> str:
    return f"[{r[0]:g}, {r[1]:g}]"


def satisfied_below(constraint: Any, slots: dict[str, Any]) -> bool | None:
    """Whether the constraint's satisfied range lies below its threshold (None: not valid)."""
    t = constraint.threshold
    sat = _range(constraint.satisfied.get(t.slot) or slots.get(t.slot))
    unsat = _range(constraint.unsatisfied.get(t.slot))
    if sat is None or unsat is None:
        return None
    at, yes = t.at, t.at_satisfies

    def on_low(r: tuple[float, float, bool], holds_at: bool) -> bool:
        return r[1] < at or (r[1] == at and holds_at)

    def on_high(r: tuple[float, float, bool], holds_at: bool) -> bool:
        return r[0] > at or (r[0] == at and holds_at)

    if on_low(sat, yes) and on_high(unsat, not yes):
        return True
    if on_high(sat, yes) and on_low(unsat, not yes):
        return False
    return None


def threshold_problems(i: int, constraint: Any, slots: dict[str, Any]) -> list[str]:
    """What is wrong with constraints[i].threshold (empty: nothing), each naming the field."""
    t = constraint.threshold
    where = f"constraints[{i}] ({constraint.name}).threshold"
    if t.slot not in slots:
        return [f"{where}.slot: {t.slot!r} is not a slot of the family"]
    sat = _range(constraint.satisfied.get(t.slot) or slots[t.slot])
    unsat = _range(constraint.unsatisfied.get(t.slot))
    if sat is None:
        return [f"{where}.slot: {t.slot!r} has no numeric satisfied range (the constraint's satisfied "
                "range or the family's slot must be an int or number slot)"]
    if unsat is None:
        return [f"{where}.slot: the constraint's unsatisfied ranges must set {t.slot!r} to an int or number range"]
    out = []
    if satisfied_below(constraint, slots) is None:
        out.append(f"{where}: the satisfied range {_fmt(sat)} and the unsatisfied range {_fmt(unsat)} of "
                   f"{t.slot!r} do not lie on opposite sides of at={t.at:g} (at_satisfies={str(t.at_satisfies).lower()}: "
                   f"{t.at:g} belongs to the {'satisfied' if t.at_satisfies else 'unsatisfied'} side)")
    integral = sat[2] and unsat[2]
    low, high = min(sat[0], unsat[0]), max(sat[1], unsat[1])
    for v in pinned_values(t):
        if integral and v != int(v):
            out.append(f"{where}: {v:g} is not a whole number, and {t.slot!r} is an int slot (at and step must be whole)")
            break
        if not low <= v <= high:
            out.append(f"{where}: {v:g} lies outside the values {t.slot!r} may take ({low:g} to {high:g}, "
                       "the satisfied and unsatisfied ranges together)")
    return out


def pinned_values(t: Any) -> list[float]:
    """at - step, at, at + step (rounded as money is: to 6 places)."""
    return [round(t.at - t.step, 6), round(t.at, 6), round(t.at + t.step, 6)]


def boundary_names(constraints: list[Any]) -> list[str]:
    return [f"{c.name}_{side}" for c in constraints if c.threshold is not None for side in SIDES]


def boundaries(constraints: list[Any], slots: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(name, unsatisfied constraints) of every boundary case, in constraint order."""
    out = []
    for c in constraints:
        if c.threshold is None:
            continue
        below = satisfied_below(c, slots)
        for side, v in zip(SIDES, pinned_values(c.threshold)):
            out.append((f"{c.name}_{side}", [] if holds(c.threshold, below, v) else [c.name]))
    return out


def holds(t: Any, below: bool | None, v: float) -> bool:
    """Whether value v lies on the constraint's satisfied side."""
    if v == t.at:
        return t.at_satisfies
    return (v < t.at) == bool(below)


def pin(constraints: list[Any], slots: dict[str, Any], combo: str) -> dict[str, Any]:
    """The slot a boundary case pins and its value ({} for any other case); an int slot's value
    stays an int."""
    for c in constraints:
        if c.threshold is None:
            continue
        for side, v in zip(SIDES, pinned_values(c.threshold)):
            if combo == f"{c.name}_{side}":
                integral = (_range(slots.get(c.threshold.slot)) or (0, 0, False))[2] or (
                    _range(c.unsatisfied.get(c.threshold.slot)) or (0, 0, False))[2]
                return {c.threshold.slot: int(v) if integral and v == int(v) else v}
    return {}


def stands_for(constraints: list[Any], combo: str, unsatisfied: list[str]) -> str:
    """The combination a boundary case is an instance of (its constraint's broken case, or
    all_met), for `when` lists; any other case stands for itself."""
    if combo in boundary_names(constraints):
        return unsatisfied[0] if unsatisfied else ALL_MET
    return combo


def applies(when: list[str] | None, combo: str, alias: str) -> bool:
    """Whether an entry with this `when` (None: every case) applies to a case."""
    return when is None or combo in when or alias in when
