"""The information-flow gate: every value the reference solution passes is one an agent could know.

The reference solution is replayed through the engine. Before each call, what the agent has
seen is: the system prompt, the tool catalog it is offered (descriptions, parameter
descriptions, enum values; not their "e.g." examples), everything the simulated user can say
in the mode being checked, and the results of earlier calls whose own arguments were all
learnable. Every argument value of the call (ids, names, dates, amounts; list items one by
one) must occur in that, unless its parameter is an enum, a boolean, or declared `free_text`
by the tool (the agent's own words).
A value the solution computes (a sum, a date plus a window) is allowed when
`reference_solution.derived` names it and every value it is computed from is visible.

Two user modes are checked, because they know different things:

* `scripted` (`-T user=scripted`): the opening message, the scripted turns (or the pressure
  script the scripted user replays when there are none; or its tactics and closing lines) and
  the facts table's answers;
* `llm`: the persona, `known_facts`, the goal, the opening message and the facts table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Iterator

from ..conversation.offline import OfflineRun, play_calls
from ..conversation.prompts import system_prompt
from ..domain.catalog import ToolSpec
from ..environment.tools import exposed_tools
from ..scenario.catalog import Entry
from ..scenario.model import Scenario, UserSimulation

NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")
EXAMPLE = re.compile(r"\be\.g\.[^);\n]*")
TIMESTAMP_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})[T ]\d{2}:\d{2}")
MONTHS = ("january february march april may june july august september october november "
          "december").split()
MONTH = r"(" + "|".join(m[:3] + r"[a-z]*\.?" for m in MONTHS) + r")"
# dates as people say them: 27 May 1983, May 27, 1983; an agent writes them as YYYY-MM-DD
SPOKEN_DATES = (
    re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH}\s*,?\s*(\d{{4}})\b", re.I),
    re.compile(rf"\b{MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s*(\d{{4}})\b", re.I),
)


def user_texts(sim: UserSimulation, mode: str) -> list[str]:
    """Everything the simulated user can say in one mode."""
    facts = [f.answer for f in sim.facts]
    if mode == "scripted":
        return [sim.initial_user_message, *sim.user_lines(), *facts]
    return [sim.persona, sim.known_facts, sim.goal, sim.initial_user_message, *facts]


def catalog_text(tools: list[ToolSpec]) -> list[str]:
    """The offered tools as the agent reads them, minus examples ("e.g. ORD-30101"): an example
    shows a format, and a real id that happens to be one is not thereby learned."""
    out = []
    for t in tools:
        out.append(f"{t.name}: {t.description}")
        for name, prop in t.schema.get("properties", {}).items():
            out.append(f"{name}: {prop.get('description', '')} {' '.join(map(str, prop.get('enum', [])))}")
    return [EXAMPLE.sub("", text) for text in out]


def _spoken_dates(text: str) -> set[str]:
    found = set()
    for pattern in SPOKEN_DATES:
        for m in pattern.finditer(text):
            a, b, year = m.groups()
            day, month = (a, b) if a.isdigit() else (b, a)
            try:
                found.add(date(int(year), MONTHS.index(_month(month)) + 1, int(day)).isoformat())
            except ValueError:
                continue
    return found


def _month(word: str) -> str:
    return next(m for m in MONTHS if m.startswith(word.lower().rstrip(".")[:3]))


def _number(token: str) -> float | None:
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None


@dataclass
class Seen:
    """What the agent has seen so far: text to search, plus the numbers and dates in it."""

    text: list[str] = field(default_factory=list)
    numbers: set[float] = field(default_factory=set)
    dates: set[str] = field(default_factory=set)

    def add_text(self, text: str) -> None:
        self.text.append(text)
        self.numbers |= {n for n in map(_number, NUMBER.findall(text)) if n is not None}
        self.dates |= _spoken_dates(text) | set(TIMESTAMP_DATE.findall(text))

    def add_result(self, value: Any) -> None:
        for leaf in _leaves(value):
            if isinstance(leaf, bool):
                self.add_text(str(leaf).lower())
            elif isinstance(leaf, (int, float)):
                self.numbers.add(float(leaf))
                self.text.append(str(leaf))
            else:
                self.add_text(str(leaf))

    def has(self, value: Any) -> bool:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return any(abs(float(value) - n) < 0.005 for n in self.numbers)
        text = str(value).strip()
        if not text:
            return True
        if text in self.dates:
            return True
        pattern = re.compile(rf"(?<![A-Za-z0-9]){re.escape(text)}(?![A-Za-z0-9])", re.I)
        return any(pattern.search(t) for t in self.text)

    def copy(self) -> "Seen":
        return Seen(list(self.text), set(self.numbers), set(self.dates))


def _leaves(value: Any) -> Iterator[Any]:
    """Scalars of a JSON value, dict keys included (a keyed listing shows its keys)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    elif value is not None:
        yield value


def traced_values(spec: ToolSpec | None, arguments: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(argument, value) pairs the gate must trace: no enums, booleans or free text."""
    props = spec.schema.get("properties", {}) if spec else {}
    free = set(spec.free_text) if spec else set()
    for name, value in arguments.items():
        if name in free or props.get(name, {}).get("enum"):
            continue
        for leaf in _leaves(value):
            if isinstance(leaf, bool) or (isinstance(leaf, str) and not leaf.strip()):
                continue
            yield name, leaf


@dataclass(frozen=True)
class Unlearnable:
    call: int
    tool: str
    argument: str
    value: Any
    modes: tuple[str, ...]
    derived_from: bool = False  # a `from` value of a derived argument, not the argument

    def __str__(self) -> str:
        who = " and ".join(f"{m} user" for m in self.modes)
        what = f"derived from {self.value!r}" if self.derived_from else f"= {self.value!r}"
        return (f"reference_solution.tool_calls[{self.call}] {self.tool}.{self.argument} {what}: "
                f"the agent cannot have learned it before this call (with the {who}: not in the "
                "system prompt, the tool catalog, what the user says, or an earlier result); "
                "look it up first, have the user say it, or mark it derived")


def _problems_for_mode(s: Scenario, base: Seen, plays: list[tuple[str, dict, Any, bool]],
                       tools: dict[str, ToolSpec], mode: str) -> list[Unlearnable]:
    seen = base.copy()
    for text in user_texts(s.user_simulation, mode):
        seen.add_text(text)
    derived = {(d.call, d.argument): d for d in (s.reference_solution.derived if s.reference_solution else [])}
    out: list[Unlearnable] = []
    for i, (name, args, result, failed) in enumerate(plays):
        missing = []
        for arg, value in traced_values(tools.get(name), args):
            rule = derived.get((i, arg))
            if rule is not None:
                missing += [Unlearnable(i, name, arg, v, (mode,), True) for v in rule.from_ if not seen.has(v)]
            elif not seen.has(value):
                missing.append(Unlearnable(i, name, arg, value, (mode,)))
        out += missing
        if not missing and not failed:
            seen.add_result(result)
    return out


def information_flow_problems(entry: Entry, run: OfflineRun | None = None) -> list[str]:
    """Problems of the reference solution's information flow, in both user modes.

    `run` is the solution already played through the engine (the oracle's run), when at hand.
    """
    s, d = entry.scenario, entry.domain
    sol = s.reference_solution
    if sol is None:
        return []
    out = []
    for j, rule in enumerate(sol.derived):
        where = f"reference_solution.derived[{j}]"
        if rule.call >= len(sol.tool_calls):
            out.append(f"{where}.call: {rule.call} is not a call of the solution ({len(sol.tool_calls)} calls)")
        elif rule.argument not in sol.tool_calls[rule.call].arguments:
            out.append(f"{where}.argument: {sol.tool_calls[rule.call].name} is not passed {rule.argument!r}")
    offered = exposed_tools(d, s)
    tools = {t.name: t for t in offered}
    base = Seen()
    base.add_text(system_prompt(s, d))
    for text in catalog_text(offered):
        base.add_text(text)
    run = run or play_calls(s, d, sol.tool_calls)
    plays = []
    calls = [m for m in run.messages if getattr(m, "tool_calls", None)][: len(sol.tool_calls)]
    for i, msg in enumerate(calls):
        call = msg.tool_calls[0]
        result = run.results[i]
        failed = result is None or (isinstance(result, dict) and result.get("error") is True)
        plays.append((call.function, dict(call.arguments), result, failed))
    by_value: dict[tuple, list[Unlearnable]] = {}
    for mode in ("scripted", "llm"):
        for u in _problems_for_mode(s, base, plays, tools, mode):
            by_value.setdefault((u.call, u.argument, repr(u.value), u.derived_from), []).append(u)
    for group in by_value.values():
        first = group[0]
        modes = tuple(m for u in group for m in u.modes)
        out.append(str(Unlearnable(first.call, first.tool, first.argument, first.value, modes, first.derived_from)))
    return out
