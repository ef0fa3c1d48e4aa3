"""The consistency lint: a scenario's story must agree with itself and with its records.

Every rule here is mechanical and precise (it finds nothing on the shipped set): a story that
contradicts the state teaches the agent to distrust one of them, and a template artifact shows a
reader the scenario was generated. Each finding names the scenario file, the field and the text.

Rules (rule names appear in the problem):
- template: unrendered template braces left in any text.
- punctuation: doubled punctuation ("Inc..", ",,", ";;", ".,"), an ellipsis excepted.
- relation_in_name: a kinship word in parentheses after a name ("Julian Mulcahy (Son)").
- article: "a" before a vowel-sounding word ("a order", "a 8-day window").
- person_mix: first-person words in a second-person text (known_facts, goal, pressure_script),
  outside quotation marks: the simulated user is told who they are, not spoken as.
- relationship: the user says they are someone's son (persona, "I'm X's son") while the state's
  record of that person calls them something else (title / relationship: "Daughter").
- order_side: a user line names a side (buy/sell) that is not the side of the order in state.
- relative_time: a user line dates something ("over the weekend", "a few days ago", "on
  Friday", "for months") that the state dates otherwise (story_dates.py).
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from ..scenario.catalog import Entry
from .story import story_texts
from .story_dates import relative_time_problems

# the texts the simulated user speaks or is told: (field path, text)
SECOND_PERSON = ("known_facts", "goal")

_BRACES = re.compile(r"\{\{|\}\}|\{%|%\}")
# ".," is left out: an abbreviation before a comma ("Inc.,", "2 p.m.,") is right
_DOUBLED = re.compile(r"(?<=\w)\.\.(?!\.)|,,|;;|,\.(?!\d)")
_KIN = ("Son|Daughter|Mother|Father|Wife|Husband|Spouse|Brother|Sister|Niece|Nephew|Aunt|Uncle|"
        "Grandson|Granddaughter|Grandmother|Grandfather|Cousin|Parent|Child|Mum|Mom|Dad")
# capitalised, as a title would be: "(Son)" reads as part of the name; "(nephew)" describes
_RELATION_IN_NAME = re.compile(rf"\b[A-Z][\w'-]+\s+\((?:{_KIN})\)")
# `{{calls[2].case_id}}` in a recorded solution's argument is a reference, not an artifact
_CALL_REF = re.compile(r"\{\{calls\[\d+\](?:\.[A-Za-z0-9_\-]+)+\}\}")
# "a" before a vowel sound; words whose vowel letter sounds like a consonant are excepted
# (a capital "A" only where a sentence starts: "Schedule A or B" names a schedule)
_ARTICLE = re.compile(r"(?:(?<![\w'-])a|(?:^|(?<=[.!?]\s))A)\s+(?=([aeiouAEIOU][\w'-]*|8[\w-]*|11[\w-]*|18[\w-]*)\b)")
_CONSONANT_VOWEL = re.compile(r"^(?:uni|use|usu|uti|ure|uro|eu|ewe|one|once|ubiq|u-|us\b|uk\b)", re.I)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|our|ours|us)\b")
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|(?<![\w])'[^']*'(?![\w])")
_SIDE = re.compile(r"\b(?:order to|want to|wants to|need to|can't|cannot|to) (buy|sell)\b|"
                   r"\b(buy|sell) (?:order|\d[\d,]*\b)", re.I)


def _all_strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _all_strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _all_strings(v, f"{where}[{i}]")
    elif isinstance(value, str):
        yield where, value


def _excerpt(text: str, start: int, end: int) -> str:
    return text[max(0, start - 30):end + 30].strip()


def artifact_problems(doc: dict) -> list[str]:
    """Template artifacts anywhere in the scenario document (its JSON form)."""
    out = []
    for where, text in _all_strings(doc, ""):
        text = _CALL_REF.sub("", text)
        for rule, rx in (("template", _BRACES), ("punctuation", _DOUBLED), ("relation_in_name", _RELATION_IN_NAME)):
            for m in rx.finditer(text):
                out.append(f"{where}: consistency ({rule}): {_excerpt(text, m.start(), m.end())!r}")
        for m in _ARTICLE.finditer(text):
            # "a USB cable", "a UPS label": an acronym read letter by letter from a "you"
            if not _CONSONANT_VOWEL.match(m.group(1)) and not re.match(r"U[A-Z0-9]", m.group(1)):
                out.append(f"{where}: consistency (article): 'a' before {m.group(1)!r}: "
                           f"{_excerpt(text, m.start(), m.end() + len(m.group(1)))!r}")
    return out


def person_problems(s) -> list[str]:
    """First-person words in the second-person texts, quotations left out."""
    fields = [(f"user_simulation.{f}", getattr(s.user_simulation, f)) for f in SECOND_PERSON]
    fields += [(f"user_simulation.pressure_script[{i}]", t) for i, t in enumerate(s.user_simulation.pressure_script)]
    out = []
    for where, text in fields:
        bare = _QUOTED.sub('""', text)
        for m in _FIRST_PERSON.finditer(bare):
            out.append(f"{where}: consistency (person_mix): first-person {m.group(0)!r} in a second-person text: "
                       f"{_excerpt(bare, m.start(), m.end())!r}")
    return out


def _order_sides(state: dict) -> set[str]:
    sides = set()
    for table in ("pending_requests", "orders"):
        rows = state.get(table)
        for row in (rows.values() if isinstance(rows, dict) else rows or []):
            if isinstance(row, dict) and str(row.get("side", "")).lower() in ("buy", "sell"):
                sides.add(str(row["side"]).lower())
    return sides


def side_problems(s) -> list[str]:
    """A user who names the side of their order names the side the order has in state."""
    sides = _order_sides(s.environment_setup.initial_state_patch)
    if len(sides) != 1:
        return []  # no order, or orders of both sides: which one a line means is not mechanical
    side = next(iter(sides))
    out = []
    for where, text in story_texts(s):
        for m in _SIDE.finditer(text):
            said = (m.group(1) or m.group(2)).lower()
            if said != side:
                out.append(f"{where}: consistency (order_side): says {said!r} but the order in state is "
                           f"{side.upper()}: {_excerpt(text, m.start(), m.end())!r}")
    return out


_KIN_WORD = re.compile(rf"^(?:{_KIN})$", re.I)
_SAYS_KIN = re.compile(rf"(?:^[^,;]*,\s*|\bI'm |\bI am )(?:[A-Z][\w'-]*\s?)+'s ({_KIN.lower()})\b")


def _kin_on_record(state: Any, name: str) -> set[str]:
    """Kinship words the state gives the person named `name` (title, relationship fields)."""
    found: set[str] = set()
    if isinstance(state, dict):
        if state.get("name") == name or state.get("full_name") == name:
            for field in ("title", "relationship", "relation"):
                v = state.get(field)
                if isinstance(v, str) and _KIN_WORD.match(v.strip()):
                    found.add(v.strip().lower())
        for v in state.values():
            found |= _kin_on_record(v, name)
    elif isinstance(state, list):
        for v in state:
            found |= _kin_on_record(v, name)
    return found


def relationship_problems(s) -> list[str]:
    """What the user says they are to the account holder is what the state records them as."""
    speaker = re.split(r"[,;(]", s.user_simulation.persona, maxsplit=1)[0].strip()
    recorded = _kin_on_record(s.environment_setup.initial_state_patch, speaker)
    if not recorded:
        return []
    out = []
    for where, text in story_texts(s):
        if not (where.endswith("persona") or "I'm " in text or "I am " in text):
            continue
        for m in _SAYS_KIN.finditer(text):
            if m.group(1).lower() not in recorded:
                out.append(f"{where}: consistency (relationship): {speaker} says {m.group(1)!r} but the state "
                           f"records {', '.join(sorted(recorded))}: {_excerpt(text, m.start(), m.end())!r}")
    return out


def consistency_problems(entry: Entry) -> list[str]:
    """Every consistency finding of one scenario, each naming its file and field."""
    s = entry.scenario
    doc = s.model_dump(mode="json", exclude_none=True)
    found = (artifact_problems(doc) + person_problems(s) + side_problems(s) + relationship_problems(s)
             + relative_time_problems(s))
    return [f"{entry.path}: {p}" for p in dict.fromkeys(found)]
