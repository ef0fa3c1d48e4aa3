"""Expressions and templates of a family file: a small, safe, deterministic language.

A family computes values from its slots (a price less a fee, a date some days before today,
a name from its parts). Family files are data, so expressions are parsed with Python's `ast`
and evaluated by walking a short list of allowed node kinds: literals, slot names, field
access on objects (`product.price`), indexing, arithmetic, comparisons, `and`/`or`/`not`,
`x if c else y`, and calls of the functions in FUNCTIONS. Nothing else parses, nothing is
imported or looked up, and sizes are bounded, so a hostile file cannot run code or run long.

Templates are strings holding `{{expression}}`: a string that is exactly one `{{...}}` keeps
the value's type (a number stays a number, an object an object); otherwise each `{{...}}` is
replaced by the value's text (see `text`).
"""

from __future__ import annotations

import ast
import operator
import re
from datetime import date, datetime, timedelta
from typing import Any, Callable

MAX_EXPRESSION = 1000  # characters
MAX_NUMBER = 10**12  # no expression makes a number beyond this (no 9**9**9)
MAX_TEXT = 10_000  # nor a string longer than this
TEMPLATE = re.compile(r"\{\{(.*?)\}\}", re.S)


class ExprError(ValueError):
    """An expression or template that does not parse or evaluate; the message says why."""


def _date(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            pass
    raise ExprError(f"not a date: {value!r}")


def date_add(day: Any, days: Any) -> str:
    """An ISO date `days` after `day` (negative: before)."""
    return (_date(day) + timedelta(days=int(days))).isoformat()


def days_between(a: Any, b: Any) -> int:
    """Whole days from date `a` to date `b` (b - a)."""
    return (_date(b) - _date(a)).days


def spoken_date(day: Any) -> str:
    """A date as people say it: "March 4, 2025"."""
    d = _date(day)
    return f"{d.strftime('%B')} {d.day}, {d.year}"


def short_date(day: Any) -> str:
    """A date without the year: "March 4"."""
    d = _date(day)
    return f"{d.strftime('%B')} {d.day}"


def weekday(day: Any) -> str:
    return _date(day).strftime("%A")


def money(x: Any) -> str:
    """A dollar amount as written: 1234.5 -> "1,234.50"."""
    return f"{float(x):,.2f}"


def cents(x: Any) -> float:
    """Rounded to the cent, half away from zero (as a till does, unlike round())."""
    v = float(x)
    sign = -1 if v < 0 else 1
    return sign * int(abs(v) * 100 + 0.5 + 1e-9) / 100


def ordinal(n: Any) -> str:
    n = int(n)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def join(items: Any, sep: str = ", ") -> str:
    return str(sep).join(str(x) for x in items)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "round": round,
    "min": min,
    "max": max,
    "abs": abs,
    "int": int,
    "float": float,
    "str": str,
    "len": len,
    "sum": sum,
    "sorted": sorted,
    "upper": lambda s: str(s).upper(),
    "lower": lambda s: str(s).lower(),
    "title": lambda s: str(s).title(),
    "first_word": lambda s: str(s).split()[0] if str(s).split() else "",
    "last_word": lambda s: str(s).split()[-1] if str(s).split() else "",
    "date_add": date_add,
    "days_between": days_between,
    "spoken_date": spoken_date,
    "short_date": short_date,
    "weekday": weekday,
    "money": money,
    "cents": cents,
    "ordinal": ordinal,
    "join": join,
}

BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _bounded(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and abs(value) > MAX_NUMBER:
        raise ExprError(f"number out of range: {value!r}")
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_TEXT:
        raise ExprError("value too long")
    return value


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExprError(f"unknown name {node.id!r}")
        return env[node.id]
    if isinstance(node, ast.Attribute):
        base = _eval(node.value, env)
        if not isinstance(base, dict) or node.attr not in base:
            raise ExprError(f"no field {node.attr!r} in {ast.unparse(node.value)}")
        return base[node.attr]
    if isinstance(node, ast.Slice):
        return slice(*(None if part is None else _eval(part, env) for part in (node.lower, node.upper, node.step)))
    if isinstance(node, ast.Subscript):
        base, key = _eval(node.value, env), _eval(node.slice, env)
        try:
            return base[key]
        except (KeyError, IndexError, TypeError) as err:
            raise ExprError(f"{ast.unparse(node)}: {err}") from None
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_eval(e, env) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:  # {**other, ...}
                merged = _eval(v, env)
                if not isinstance(merged, dict):
                    raise ExprError(f"** needs an object, got {type(merged).__name__}")
                out.update(merged)
            else:
                out[_eval(k, env)] = _eval(v, env)
        return out
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not value
        if isinstance(node.op, ast.USub):
            return _bounded(-value)
        if isinstance(node.op, ast.UAdd):
            return value
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Mult) and (isinstance(left, (str, list)) or isinstance(right, (str, list))):
            raise ExprError("repetition (text or list times a number) is not allowed")
        try:
            return _bounded(BINARY[type(node.op)](left, right))
        except (TypeError, ZeroDivisionError) as err:
            raise ExprError(f"{ast.unparse(node)}: {err}") from None
    if isinstance(node, ast.BoolOp):
        values = node.values
        if isinstance(node.op, ast.And):
            result: Any = True
            for v in values:
                result = _eval(v, env)
                if not result:
                    return result
            return result
        result = False
        for v in values:
            result = _eval(v, env)
            if result:
                return result
        return result
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env)
            try:
                if not COMPARE[type(op)](left, right):
                    return False
            except TypeError as err:
                raise ExprError(f"{ast.unparse(node)}: {err}") from None
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, env) if _eval(node.test, env) else _eval(node.orelse, env)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fn = FUNCTIONS.get(node.func.id)
        if fn is None:
            raise ExprError(f"unknown function {node.func.id!r} (known: {', '.join(sorted(FUNCTIONS))})")
        args = [_eval(a, env) for a in node.args]
        try:
            return _bounded(fn(*args))
        except ExprError:
            raise
        except (TypeError, ValueError, IndexError) as err:
            raise ExprError(f"{ast.unparse(node)}: {err}") from None
    raise ExprError(f"not allowed in an expression: {ast.unparse(node) if hasattr(node, 'lineno') else type(node).__name__}")


def evaluate(expression: str, env: dict[str, Any]) -> Any:
    """The value of `expression` over the names in `env` (ExprError when it cannot be had)."""
    source = expression.strip()
    if len(source) > MAX_EXPRESSION:
        raise ExprError(f"expression longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as err:
        raise ExprError(f"does not parse: {err.msg}") from None
    return _eval(tree, env)


def text(value: Any) -> str:
    """How a value reads inside a sentence: whole floats without ".0", others as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def render(value: Any, env: dict[str, Any]) -> Any:
    """`value` with every template filled in (objects and lists element by element)."""
    if isinstance(value, dict):
        return {text(render(k, env)): render(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, env) for v in value]
    if not isinstance(value, str) or "{{" not in value:
        return value
    whole = TEMPLATE.fullmatch(value)
    if whole and value.count("{{") == 1:  # "{{a}}, {{b}}" is two templates, not one expression
        return evaluate(whole.group(1), env)
    out = TEMPLATE.sub(lambda m: text(evaluate(m.group(1), env)), value)
    if len(out) > MAX_TEXT:
        raise ExprError("rendered text too long")
    return out
