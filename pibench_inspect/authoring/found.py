"""Facts found, not told: the gate that the user's words do not carry the values that decide a case.

A generated case is decided by the values its family's constraints set (a delivery 9 days ago,
a risk score of 82, a `chargeback_hold` flag, an employee's night-shift title). When the user's
opening, scripted tactic lines or fact answers already carry them, the lookups the policy
demands change nothing: the agent is told, it does not find. So for each generated case:

* the *deciding values* are found by flipping each constraint: the case's slot values are
  drawn again under the same draw key with that one constraint on its other side (families/
  cases.case_env), and every value of the case (each leaf of a slot: numbers, dates, strings)
  that the flip changes, that the other side's range could not also have drawn (a `choice`
  whose options share a department, say) and that the flipped case does not hold anywhere
  else (the order id inside a prior credit) is deciding. Slots computed from a deciding one
  (a delivery date from a day count) follow, as the flip recomputes them; a threshold's
  pinned slot is one of them;
* a value is *carried* by a text when it occurs there as rendered: a number by value in any
  form (`9,500.00`, `$9,500`), a date in its ISO form or spoken with or without the year
  ("May 12", "12 May 2025"), a string whole-word and case-insensitively (`return_abuse_watch`
  also as "return abuse watch");
* the texts are the opening of every envelope, every scripted tactic line and every fact
  answer (the closings are said once the agent has decided).

A case is *found* when none of its envelopes carries a deciding value. `pibench validate`
prints per domain `found: X of Y generated cases (Z%)` and fails a domain under 70%.
The information-flow gate still proves each value the solution passes learnable from a tool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..scenario.catalog import Entry

FOUND_SHARE = 0.70
MONTHS = ("January February March April May June July August September October November December").split()
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])|(?<=\$)\d[\d,]*(?:\.\d+)?")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass
class CaseFinding:
    family: str
    combo: str
    domain: str
    told: list[str] = field(default_factory=list)  # "<value> in <where>"


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{path}.{k}")
    elif isinstance(value, list):
        for v in value:  # list items by content, not position: a flag list is a set
            yield from leaves(v, f"{path}[]")
    else:
        yield path, value


def meaningful(path: str, value: Any) -> bool:
    """A value that states a record fact: a number, a date, a code or flag (`GR-60871`,
    `return_abuse_watch`, an item of a list), or a story of six words or more said verbatim.
    Names and titles are left out: a caller names the product or their job, which is no fact
    the case turns on by itself."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return True
    if not isinstance(value, str) or len(value.strip()) < 3:
        return False
    text = value.strip()
    if ISO_DATE.match(text) or (" " not in text and re.search(r"[\d_]", text)):
        return True
    return path.endswith("[]") or len(text.split()) >= 6


def possible(spec: Any) -> set[str] | None:
    """The leaf values a `choice` slot's options hold ("path=value"), else None: a value the
    other side could also have drawn (a department both sides' options share) decides nothing."""
    if spec is None or spec.choice is None:
        return None
    return {f"{p}={v}" for option in spec.choice for p, v in leaves(option)}


def deciding(family: Any, unsatisfied: list[str]) -> list[Any]:
    """The constraints whose side decides the case: flipping one changes the outcome. With
    none unsatisfied, every one; else the deciding one (the first broken) and those before it."""
    names = [c.name for c in family.constraints]
    first = next((i for i, n in enumerate(names) if n in unsatisfied), len(names) - 1)
    return family.constraints[: first + 1]


def story(path: str, value: Any) -> bool:
    """A sentence of the user's (six words or more), not a number, date, code or list item."""
    return isinstance(value, str) and meaningful(path, value) and not (
        ISO_DATE.match(value.strip()) or path.endswith("[]") or (" " not in value.strip()))


def flips(family: Any, domain: Any, combo: str, unsatisfied: list[str], base: dict[str, Any],
          env: dict[str, Any], asked: set[str]) -> Iterator[tuple[Any, dict[str, Any], set[Any]]]:
    """(constraint, the flipped case's slot values, the deciding values of the case it shows)
    for each constraint that decides the case (see the module's docstring). `asked`: the
    values of the calls the user asks for (the amount of the wire it wants is its request)."""
    from ..families import edges
    from ..families.cases import case_env

    pins = edges.pin(family.constraints, family.slots, combo)
    for c in deciding(family, unsatisfied):
        flipped = [n for n in unsatisfied if n != c.name] if c.name in unsatisfied else [*unsatisfied, c.name]
        own_pin = {k: v for k, v in pins.items() if not (c.threshold and c.threshold.slot == k)}
        other = case_env(family, domain, combo, flipped, base, own_pin)
        other_leaves = {str(v) for _, v in leaves(other)}
        other_side = c.satisfied if c.name in unsatisfied else c.unsatisfied
        values: set[Any] = set()
        for slot, value in env.items():
            if slot in ("now", "today") or other.get(slot) == value:
                continue
            could = possible(other_side.get(slot) if slot in other_side else family.slots.get(slot))
            flip_at = dict(leaves(other.get(slot)))
            for p, v in leaves(value):
                if not meaningful(p, v) or flip_at.get(p) == v or str(v) in other_leaves or str(v) in asked:
                    continue
                if isinstance(v, str) and any(carried(v, leaf) for leaf in other_leaves):
                    continue  # part of a value both sides hold (a phone tail that is a request id's)
                if c.name not in unsatisfied and story(p, v):
                    continue  # a satisfied constraint's story is the ordinary request, no record fact
                if could is None or f"{p}={v}" not in could:
                    values.add(v)
        yield c, other, values


def templates(family: Any, case: Any) -> list[tuple[str, str]]:
    """(where, template) of what the user says: each envelope's opening and tactic lines (the
    lines this case plays), the facts' answers."""
    from ..families.pressure import tactic_line

    out: list[tuple[str, Any]] = []
    for name, envelope in family.envelopes.items():
        out.append((f"{name} opening", envelope.opening))
        for step in envelope.press or []:
            line, _ = tactic_line(family, case, name, envelope, step.tactic)
            out.append((f"{name} {step.tactic} line", line if isinstance(line, str) else line.say))
        out += [(f"{name} line {i + 1}", t) for i, t in enumerate(envelope.turns)]
        out += [(f"{name} fact {f.topic!r}", f.answer) for f in envelope.facts]
    out += [(f"fact {f.topic!r}", f.answer) for f in family.user.facts]
    return out


def _date_forms(iso: str) -> list[re.Pattern[str]]:
    year, month, day = int(iso[:4]), int(iso[5:7]), int(iso[8:10])
    if not 1 <= month <= 12:
        return []
    name = MONTHS[month - 1]
    m = rf"(?:{name}|{name[:3]}\.?)"
    d = rf"0?{day}(?:st|nd|rd|th)?"
    return [re.compile(rf"\b{re.escape(iso)}\b"),
            re.compile(rf"\b{m}\s+{d}\b", re.I),
            re.compile(rf"\b{d}\s+(?:of\s+)?{m}\b", re.I)]


def carried(value: Any, text: str) -> bool:
    """Whether the text carries the value as it would be rendered or said."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for token in NUMBER.findall(text):
            try:
                if abs(float(token.replace(",", "")) - float(value)) < 0.005:
                    return True
            except ValueError:
                continue
        return False
    s = str(value).strip()
    if ISO_DATE.match(s):
        return any(p.search(text) for p in _date_forms(s))
    words = re.escape(s).replace("_", "[_ ]").replace(r"\ ", r"[_ ]")
    return re.search(rf"(?<!\w){words}(?!\w)", text, re.I) is not None


def families_of(entries: list[Entry]) -> tuple[dict[str, tuple[Any, Any]], list[str]]:
    """Family id -> (family, domain), read from the families/ folder beside each source's
    domains/; and the problems of family files that do not load."""
    from ..families.generate import family_domain, load_family
    from ..scenario.errors import ScenarioError

    roots = {e.domain.path.resolve().parent.parent for e in entries if e.scenario.meta.family}
    out: dict[str, tuple[Any, Any]] = {}
    problems: list[str] = []
    for root in sorted(roots):
        for path in sorted((root / "families").glob("*/*.json")):
            try:
                fam = load_family(path, root)
                out[fam.family] = (fam, family_domain(fam, root))
            except (ScenarioError, OSError, ValueError) as err:
                problems.append(f"{path}: found gate: the family does not load ({str(err).splitlines()[0][:200]})")
    return out, problems


def told(family: Any, domain: Any, combo: str, unsatisfied: list[str]) -> list[str]:
    """What tells the case's deciding values ("<value> in <where>"; empty: the case is found).
    A text tells only when its words depend on the side: rendered with the flipped case's values
    it reads otherwise (a belief said alike on both sides tells nothing)."""
    from ..families.cases import build_case
    from ..families.derive import noncompliant
    from ..families.expr import ExprError, render

    now = render(family.now, {})
    base = {"now": now, "today": str(now)[:10]}
    case = build_case(family, domain, combo, unsatisfied, base)
    asked = {str(v) for call in noncompliant(family, case)["tool_calls"]
             if domain.tool_index[call["name"]].kind in ("write", "escalation") for _, v in leaves(call["arguments"])}
    out: list[str] = []
    said = [(w, t, render(t, case.env)) for w, t in templates(family, case)]
    for _c, other, values in flips(family, domain, combo, unsatisfied, base, case.env, asked):
        for where, template, text in said:
            try:
                if render(template, other) == text:
                    continue
            except ExprError:
                pass
            for v in sorted(values, key=str):
                note = f"{v!r} in {where}"
                if note not in out and carried(v, str(text)):
                    out.append(note)
    return out


def findings(entries: list[Entry]) -> tuple[list[CaseFinding], list[str]]:
    """Each generated case's finding (found, or what told it), and the problems met."""
    from ..families.cases import FamilyError

    fams, problems = families_of(entries)
    cases: dict[tuple[str, str], Entry] = {}
    for e in entries:
        if e.scenario.meta.family and not e.domain.original_layout:
            cases.setdefault((e.scenario.meta.family, e.scenario.meta.combo or ""), e)
    out = []
    for (fid, combo), entry in sorted(cases.items()):
        if fid not in fams:
            problems.append(f"{entry.path}: found gate: no family file defines {fid} (families/<domain>/*.json)")
            continue
        family, domain = fams[fid]
        unsatisfied = dict(family.combinations()).get(combo)
        if unsatisfied is None:
            problems.append(f"{entry.path}: found gate: family {fid} has no case {combo!r}; regenerate it")
            continue
        try:
            out.append(CaseFinding(fid, combo, entry.domain.name, told(family, domain, combo, unsatisfied)))
        except FamilyError as err:
            problems.append(f"{entry.path}: found gate: {err}")
    return out, problems


def found_summary(entries: list[Entry], counts: dict[str, tuple[int, int]] | None = None
                  ) -> tuple[list[str], list[str]]:
    """(lines to print, problems): per domain `found: X of Y generated cases (Z%)`, the told
    cases, and a problem for each domain under FOUND_SHARE. `counts` (a dict) gets each
    domain's (found, generated cases), for validate's per-domain summary."""
    results, problems = findings(entries)
    lines: list[str] = []
    by_domain: dict[str, list[CaseFinding]] = {}
    for r in results:
        by_domain.setdefault(r.domain, []).append(r)
    for name, rs in sorted(by_domain.items()):
        found = sum(1 for r in rs if not r.told)
        share = found / len(rs)
        if counts is not None:
            counts[name] = (found, len(rs))
        lines.append(f"{name}: found: {found} of {len(rs)} generated cases ({share:.0%})")
        if share < FOUND_SHARE:
            problems.append(f"domain {name}: found: {found} of {len(rs)} generated cases ({share:.0%}), below "
                            f"{FOUND_SHARE:.0%}: the user tells the deciding values of the others (see the "
                            "`found: told` lines)")
    for r in results:
        if r.told:
            lines.append(f"told: {r.family}.{r.combo}: {'; '.join(r.told[:4])}"
                         + (f" (+{len(r.told) - 4} more)" if len(r.told) > 4 else ""))
    return lines, problems

