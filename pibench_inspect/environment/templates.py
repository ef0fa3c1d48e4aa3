"""Value templates used by effect steps and result blocks (syntax in docs/authoring.md)."""

from __future__ import annotations

import json
import re
from typing import Any, Callable

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)\}")
REFERENCE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_\-]+)*)(?:\|(.*))?$", re.S)


class TemplateError(Exception):
    pass


def lookup(bindings: dict[str, Any], name: str, fields: list[str]) -> Any:
    value = bindings.get(name)
    for f in fields:
        if isinstance(value, dict):
            value = value.get(f)
        elif isinstance(value, list) and f.isdigit() and int(f) < len(value):
            value = value[int(f)]
        else:
            return None
    return value


def _default(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def render(template: Any, bindings: dict[str, Any], new_id: Callable[[str], str]) -> Any:
    """Evaluate a template against the call's bindings (arguments, now, step results)."""
    if isinstance(template, dict):
        return {k: render(v, bindings, new_id) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, bindings, new_id) for v in template]
    if not isinstance(template, str):
        return template
    if template.startswith("$$"):
        return template[1:]
    if template.startswith("$id:"):
        prefix = template[4:]
        if not prefix:
            raise TemplateError("`$id:` needs a prefix, e.g. `$id:DEC`")
        return new_id(prefix)
    if template.startswith("$"):
        m = REFERENCE.match(template)
        if not m:
            raise TemplateError(f"malformed reference {template!r}")
        name, path, default = m.group(1), m.group(2), m.group(3)
        value = lookup(bindings, name, [p for p in path.split(".") if p])
        if value is None and default is not None:
            return _default(default)
        return value
    if "{" in template:

        def fill(m: re.Match[str]) -> str:
            name, *fields = m.group(1).split(".")
            value = lookup(bindings, name, fields)
            return "" if value is None else str(value)

        return PLACEHOLDER.sub(fill, template)
    return template


def condition(spec: dict[str, Any], bindings: dict[str, Any], new_id: Callable[[str], str]) -> bool:
    if len(spec) != 1:
        raise TemplateError(f"a condition has exactly one operator, got {sorted(spec)}")
    (op, arg), = spec.items()
    value = render(arg, bindings, new_id)
    if op == "equals":
        return value[0] == value[1]
    if op == "not_equals":
        return value[0] != value[1]
    if op == "truthy":
        return bool(value)
    if op == "falsy":
        return not value
    if op == "in":
        return value[0] in (value[1] or [])
    raise TemplateError(f"unknown condition {op!r} (equals, not_equals, truthy, falsy, in)")
