"""Which collections a state document maps to, and documents whose collections collide.

The state mapping (environment/state.py) names a top-level list or object by its key and the
lists inside a namespace object (`{"a": {"b": [...]}}`) as `a.b`. A top-level key that is itself
`"a.b"` then names the same collection, and one silently replaces the other (the exported state
was wrong). Such a document is refused where it is read: a domain's seed state at load, a
scenario's seed + patch when it is checked. So is text DuckDB cannot store (`unstorable_text`):
refused when the file is loaded, not when a sample's first statement meets it.
"""

from __future__ import annotations

from typing import Any

from .mapping import printable, utf8


def _is_namespace(value: Any) -> bool:
    # the same rule as mapping.classify: a non-empty object whose values are all lists
    return isinstance(value, dict) and bool(value) and all(isinstance(v, list) for v in value.values())


def collection_sources(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(collection path, where it comes from in the document) for every collection."""
    out = []
    for key, value in document.items():
        if _is_namespace(value):
            out += [(f"{key}.{child}", f"{key!r} -> {child!r}") for child in value]
        elif isinstance(value, (dict, list)):
            out.append((key, repr(key)))
    return out


def collection_clashes(document: dict[str, Any]) -> list[str]:
    """One problem per collection path that two parts of the document map to."""
    seen: dict[str, str] = {}
    problems = []
    for path, where in collection_sources(document):
        if path in seen:
            problems.append(
                f"(top level): {seen[path]} and {where} both map to the collection {path!r}; "
                "rename one of them"
            )
        else:
            seen[path] = where
    return problems


def patched_view(seed: dict[str, Any], patch: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A document with the top-level keys and child kinds of deep_merge(seed, patch) + overrides,
    without copying: enough to know its collections (a child's kind never depends on merges below
    it: objects merge into objects, anything else replaces)."""
    view = dict(seed)
    for key, value in patch.items():
        old = view.get(key)
        view[key] = {**old, **value} if isinstance(old, dict) and isinstance(value, dict) else value
    view.update(overrides)
    return view


def unstorable_text(value: Any, where: str) -> list[str]:
    """One problem per place in `value` holding text that is not valid UTF-8 (a lone surrogate,
    which JSON may escape as \\ud800): DuckDB, which holds the state, cannot store it."""
    out: list[str] = []

    def walk(v: Any, path: str) -> None:
        if isinstance(v, str):
            if not utf8(v):
                out.append(f"{path or '(top level)'}: holds text that is not valid UTF-8 (a lone surrogate); the state cannot store it")
        elif isinstance(v, dict):
            for k, x in v.items():
                if not utf8(k):
                    out.append(f"{path or '(top level)'}: a key is not valid UTF-8 (a lone surrogate); the state cannot store it")
                name = printable(k)
                walk(x, f"{path}.{name}" if path else name)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{path}[{i}]")

    walk(value, where)
    return out
