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
import math
import operator
import re
from datetime import date, datetime, timedelta
from typing import Any, Callable

from .bounds import charge

MAX_EXPRESSION = 1000  # characters
MAX_DEPTH = 100  # nesting of an expression's parts (the evaluator recurses once a level)
MAX_DAYS = 3_660_000  # date_add's days: about the span of dates there are (years 1 to 9999)
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
    if not isinstance(days, (int, float)) or not abs(days) <= MAX_DAYS:
        raise ExprError(f"date_add: {days!r} is not a number of days (at most {MAX_DAYS:,} either way)")
    try:
        return (_date(day) + timedelta(days=int(days))).isoformat()
    except OverflowError:
        raise ExprError(f"date_add: {int(days)} days from {_date(day)} is not a date (years 1 to 9999)") from None


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
    """The items' text between `sep`s, refused as soon as it would pass MAX_TEXT (not after)."""
    sep, parts, size = str(sep), [], 0
    for x in items:
        part = str(x)
        size += len(part) + (len(sep) if parts else 0)
        if size > MAX_TEXT:
            raise ExprError(f"join: text longer than {MAX_TEXT:,} characters")
        parts.append(part)
    return sep.join(parts)


def add_numbers(items: Any, start: Any = 0) -> Any:
    """sum() of numbers only (sum over lists would repeat them: `sum([a, a, a], [])`)."""
    values = [start, *items]
    if not all(isinstance(v, (int, float)) for v in values):
        raise ExprError("sum adds numbers only")
    return sum(values)


def rounded(x: Any, digits: Any = None) -> Any:
    """round(), with at most 15 digits either way (round(5, -10**11) would make 10**10**11)."""
    if digits is None:
        return round(x)
    if not isinstance(digits, int) or abs(digits) > 15:
        raise ExprError(f"round: {digits!r} digits (at most 15 either way)")
    return round(x, digits)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "round": rounded,
    "min": min,
    "max": max,
    "abs": abs,
    "int": int,
    "float": float,
    "str": str,
    "len": len,
    "sum": add_numbers,
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
    if isinstance(value, float) and not math.isfinite(value):
        raise ExprError(f"not a finite number: {value!r}")
    if isinstance(value, (int, float)) and abs(value) > MAX_NUMBER:
        raise ExprError(f"number out of range: {value:.3g} (at most {MAX_NUMBER:.0e} either way)")
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_TEXT:
        raise ExprError("value too long")
    return value


def _sized(value: Any) -> Any:
    """A computed value within MAX_VALUE_BYTES as JSON, charged to the generation (bounds.py)."""
    try:
        charge(value)
    except ValueError as err:
        raise ExprError(str(err)) from None
    return value


def _operands(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be too large before it is made."""
    sized = (str, list)
    if isinstance(op, ast.Mult) and (isinstance(left, sized) or isinstance(right, sized)):
        raise ExprError("repetition (text or list times a number) is not allowed")
    if isinstance(op, ast.Mod) and not (isinstance(left, (int, float)) and isinstance(right, (int, float))):
        # '%01400000000d' % 0 would make 1.4 GB of text before any check
        raise ExprError("% is for numbers only (text formatting is not allowed: use money(), str() or a template)")
    if isinstance(op, ast.Add) and isinstance(left, sized) and isinstance(right, sized) \
            and len(left) + len(right) > MAX_TEXT:
        raise ExprError("value too long")


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return _bounded(node.value)
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
        except (KeyError, IndexError, TypeError, ValueError) as err:  # ValueError: a slice step of 0
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
                key = _eval(k, env)
                if not isinstance(key, (str, int, float, bool, type(None))):
                    raise ExprError(f"an object key must be text or a number, got {type(key).__name__}")
                out[key] = _eval(v, env)
        return out
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not value
        if isinstance(node.op, ast.USub):
            if not isinstance(value, (int, float)):
                raise ExprError(f"{ast.unparse(node)}: - needs a number, got {type(value).__name__}")
            return _bounded(-value)
        if isinstance(node.op, ast.UAdd):
            return value
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = _eval(node.left, env), _eval(node.right, env)
        _operands(node.op, left, right)
        try:
            return _bounded(BINARY[type(node.op)](left, right))
        except (TypeError, ArithmeticError) as err:  # ZeroDivisionError, OverflowError
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
        left = _sized(_eval(node.left, env))  # comparing costs what both sides hold
        for op, comp in zip(node.ops, node.comparators):
            right = _sized(_eval(comp, env))
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
        # sized before the call: str([a, a, a]) would otherwise spell out every copy of a
        args = [_sized(_eval(a, env)) for a in node.args]
        try:
            return _bounded(fn(*args))
        except ExprError:
            raise
        except (TypeError, ValueError, IndexError, ArithmeticError) as err:
            raise ExprError(f"{ast.unparse(node)}: {err}") from None
    raise ExprError(f"not allowed in an expression: {ast.unparse(node) if hasattr(node, 'lineno') else type(node).__name__}")


def evaluate(expression: str, env: dict[str, Any]) -> Any:
    """The value of `expression` over the names in `env` (ExprError when it cannot be had)."""
    source = expression.strip()
    if len(source) > MAX_EXPRESSION:
        raise ExprError(f"expression longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, RecursionError, MemoryError) as err:
        raise ExprError(f"does not parse: {getattr(err, 'msg', 'nested too deeply')}") from None
    if _depth(tree) > MAX_DEPTH:
        raise ExprError(f"nested more than {MAX_DEPTH} levels deep")
    return _sized(_eval(tree, env))


def _depth(tree: ast.AST) -> int:
    """How deep an expression's parts nest, without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, d + 1) for child in ast.iter_child_nodes(node))
    return deepest


def text(value: Any) -> str:
    """How a value reads inside a sentence: whole floats without ".0", others as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def render(value: Any, env: dict[str, Any]) -> Any:
    """`value` with every template filled in (objects and lists element by element), at most
    MAX_VALUE_BYTES as JSON."""
    return _sized(_render(value, env))


def _render(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return {text(_render(k, env)): _render(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, env) for v in value]
    if not isinstance(value, str) or "{{" not in value:
        return value
    whole = TEMPLATE.fullmatch(value)
    if whole and value.count("{{") == 1:  # "{{a}}, {{b}}" is two templates, not one expression
        return evaluate(whole.group(1), env)
    return _filled(value, env)


def _filled(value: str, env: dict[str, Any]) -> str:
    """A text's templates replaced by their values' text, refused as soon as it would pass
    MAX_TEXT (a line of a thousand `{{big}}` never builds a thousand copies)."""
    parts, size, at = [], 0, 0
    for m in TEMPLATE.finditer(value):
        piece = text(evaluate(m.group(1), env))
        size += (m.start() - at) + len(piece)
        if size > MAX_TEXT:
            raise ExprError("rendered text too long")
        parts += [value[at:m.start()], piece]
        at = m.end()
    parts.append(value[at:])
    if size + len(parts[-1]) > MAX_TEXT:
        raise ExprError("rendered text too long")
    return "".join(parts)
