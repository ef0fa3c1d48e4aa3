"""Initial state = domain seed + scenario patch (the original's merge rules).

Copy-on-write: the merged document shares every value the patch does not touch with the seed
(and the patch's own values with the scenario), so nothing is deep-copied per sample and
`StateDB` can recognise the seed's untouched collections by identity. The document is
therefore read-only: whoever needs to change it copies the part it changes.
"""

from __future__ import annotations

import json
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
    """The final document from the loaded one and what the solver stored: top-level keys in
    their final order, each rebuilt from its diff (`diff`, see `compact_changes`) or, in logs
    written before diffs, its whole changed value (`changed`, `StateDB.export_changes_text`),
    else the loaded one. Shares the loaded document's values: read-only, as it is."""
    changed = changes.get("changed") or {}
    diff = changes.get("diff") or {}
    out: dict[str, Any] = {}
    for key in changes.get("keys") or []:
        if key in diff:
            node = diff[key]
            if "=" not in node and key not in initial:
                raise ValueError(f"stored state changes patch {key!r}, but the initial document has no "
                                 "such key (the scenario or domain changed since the run?)")
            out[key] = apply_diff(initial.get(key), node)
        elif key in changed:
            out[key] = changed[key]
        elif key in initial:
            out[key] = initial[key]
        else:
            raise ValueError(f"stored state changes name {key!r} as unchanged, but the initial "
                             "document has no such key (the scenario or domain changed since the run?)")
    return out


# ---------------------------------------------------------------- diffs
#
# A diff node says how a value differs from the initial one:
#   {"=": value, "was": old}              the value itself (new, or of another kind), and the
#                                         value it replaced when that was short (WAS_MAX)
#   {"d": {key: node}, "x": [keys], "k": [keys]}   an object: changed or added keys, removed
#                                         keys, and the key order when it is not the one the
#                                         patch gives (kept keys in place, added ones last)
#   {"+": [items]}                        a list grown at its end
#   {"i": {"index": node}}                a list of the same length, items changed in place
# `compact_changes` checks every diff rebuilds its value exactly (JSON text equal) and stores
# the whole value when one does not, so the format never loses a change. `was` is for the
# reader only (rebuilding ignores it); logs written before it have none and read the same.

# what a person reading `pibench:state_changes` needs to read a diff (the task's metadata holds
# it, the viewer's Task tab shows it; README: the sample's store)
DIFF_LEGEND = {
    "keys": "the state's top-level keys, in order; each one in `diff` changed",
    "=": "the value now (new, or of another kind); `was`: the value it replaced, when that was short",
    "d": "an object's changed or added keys, each a diff",
    "x": "an object's removed keys (their values are the initial state's)",
    "k": "an object's key order, when it changed",
    "+": "items appended to a list",
    "i": "a list's items changed in place, by index, each a diff",
}
WAS_MAX = 200  # characters of JSON: a changed field's old value, not a replaced collection


def _replaced(before: Any, after: Any) -> dict[str, Any]:
    node = {"=": after}
    if len(json.dumps(before, default=str)) <= WAS_MAX:
        node["was"] = before
    return node


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: objects and arrays by content, whatever their class (the domain seed's
    are read-only subclasses of dict and list, environment/seed.freeze), scalars only with their
    own type (1, 1.0 and True are three values)."""
    if a is b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def diff_value(before: Any, after: Any) -> dict[str, Any]:
    """The diff node taking `before` to `after` (see above)."""
    if isinstance(before, dict) and isinstance(after, dict):
        node: dict[str, Any] = {}
        sub = {k: diff_value(before[k], v) if k in before else {"=": v}
               for k, v in after.items() if not (k in before and _same(before[k], v))}
        if sub:
            node["d"] = sub
        gone = [k for k in before if k not in after]
        if gone:
            node["x"] = gone
        order = [k for k in before if k in after] + [k for k in after if k not in before]
        if order != list(after):
            node["k"] = list(after)
        return node
    if isinstance(before, list) and isinstance(after, list):
        n = len(before)
        if len(after) >= n and all(_same(x, y) for x, y in zip(before, after)):
            return {"+": after[n:]}
        if len(after) == n:
            return {"i": {str(i): diff_value(x, y) for i, (x, y) in enumerate(zip(before, after)) if not _same(x, y)}}
    return _replaced(before, after)


def apply_diff(before: Any, node: dict[str, Any]) -> Any:
    """The value `diff_value(before, after)` was made from (shares what did not change)."""
    if "=" in node:
        return node["="]
    if "+" in node:
        return [*before, *node["+"]]
    if "i" in node:
        out = list(before)
        for i, sub in node["i"].items():
            out[int(i)] = apply_diff(out[int(i)], sub)
        return out
    gone = set(node.get("x") or ())
    sub = node.get("d") or {}
    res = {k: (apply_diff(v, sub[k]) if k in sub else v) for k, v in before.items() if k not in gone}
    for k, d in sub.items():
        if k not in before:
            res[k] = apply_diff(None, d)
    if "k" in node:
        res = {k: res[k] for k in node["k"]}
    return res


def compact_changes(initial: dict[str, Any], changes_text: str) -> str:
    """What the solver stores: `StateDB.export_changes_text()` with each changed top-level
    value replaced by its diff against the initial document (`{"keys": [...], "diff": {...}}`).
    A sample changes a few records of a collection; the collection in full was most of a log's
    sample (a ~15 KB string in the store, again in the transcript's store event). A diff that
    does not rebuild its value exactly (JSON text equal, so 1, 1.0 and true stay apart) is
    replaced by the value itself."""
    changes = json.loads(changes_text)
    diff: dict[str, Any] = {}
    for key, after in (changes.get("changed") or {}).items():
        node = diff_value(initial[key], after) if key in initial else {"=": after}
        if "=" not in node:
            if json.dumps(apply_diff(initial[key], node)) != json.dumps(after):
                node = {"=": after}
            elif not any(node.values()):
                continue  # written back to what it was: nothing to store
        diff[key] = node
    return json.dumps({"keys": changes.get("keys") or [], "diff": diff})
