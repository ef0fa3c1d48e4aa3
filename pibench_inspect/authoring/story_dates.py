"""The consistency lint's date rule: what the user says about when something happened must fit
the date the state gives it, counted back from the scenario's now.

A sentence of the user's story is checked when it holds both a relative-time phrase ("over the
weekend", "a few days ago", "on Friday", "for months") and a topic the state dates ("password"
-> accounts.*.password_last_changed, "delivered" -> orders.*.delivery_date, "YubiKey" ->
assets.*.assigned_on, "hired" -> employees.*.hire_date). It is a finding when the state holds
dates for that topic and none of them fits the phrase. Sentences with no dated topic, or a topic
the state does not date, are left alone: that is what keeps the rule precise.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Callable, Iterator

from .story import story_texts

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBERS = {"one": 1, "a": 1, "an": 1, "two": 2, "a couple of": 2, "three": 3, "four": 4, "five": 5,
           "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_N = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|an|a)"

# topic words -> the state fields that date them
_SET = r"(?:changed|reset|set|picked|chose|updated)"
TOPICS: list[tuple[re.Pattern, tuple[str, ...]]] = [
    (re.compile(rf"\b{_SET}\b.*\bpassword\b|\bpassword\b.*\b{_SET}\b", re.I), ("password_last_changed",)),
    (re.compile(r"\b(?:hired|joined the company|started here|new starter|first day)\b", re.I), ("hire_date",)),
    (re.compile(r"\b(?:yubikey|security key|(?:that|the|my) key)\b", re.I), ("assigned_on",)),
    (re.compile(r"\b(?:delivered|delivery|arrived|arriving|turned up)\b", re.I), ("delivery_date", "delivered_at")),
]
# a password that "expired" then was last changed long before: an expiry date the story gives
# cannot fall within a month of the last change the state records
EXPIRED = re.compile(r"\bpassword\b.*\bexpired\b|\bexpired\b.*\bpassword\b", re.I)
EXPIRY_AFTER = 30
# the user's own (mis)belief, declared as such: the story may be wrong on purpose
HEDGE = re.compile(r"\b(?:I|you|she|he|they) (?:think|believe|remember)\b|\b(?:thinks|believes|remembers)\b|"
                   r"\b(?:if I remember|as far as I know|I'm fairly sure|you're fairly sure)\b", re.I)

Fits = Callable[[int, date], bool]  # (days before now, the date) -> does the phrase fit


def _weekday(name: str) -> Fits:
    wd = WEEKDAYS.index(name)
    return lambda age, d: 0 <= age <= 7 and d.weekday() == wd


def _phrases() -> list[tuple[re.Pattern, Callable[[re.Match], Fits]]]:
    def n(m: re.Match) -> int:
        word = m.group(1).lower()
        return int(word) if word.isdigit() else NUMBERS[word]

    return [
        (re.compile(r"\byesterday\b(?! morning| afternoon| evening)|\blast night\b", re.I), lambda m: lambda a, d: a == 1),
        (re.compile(r"\b(?:over|at) the weekend\b|\bthis past weekend\b", re.I),
         lambda m: lambda a, d: 1 <= a <= 7 and d.weekday() >= 5),
        (re.compile(r"\b(?:last|on|this past) (" + "|".join(WEEKDAYS) + r")\b", re.I),
         lambda m: _weekday(m.group(1).lower())),
        (re.compile(r"\ba few days ago\b", re.I), lambda m: lambda a, d: 2 <= a <= 6),
        (re.compile(rf"\b{_N} days? ago\b", re.I), lambda m: (lambda k: lambda a, d: abs(a - k) <= 1)(n(m))),
        (re.compile(rf"\b{_N} weeks? ago\b", re.I), lambda m: (lambda k: lambda a, d: abs(a - 7 * k) <= 3)(n(m))),
        (re.compile(r"\blast week\b", re.I), lambda m: lambda a, d: 3 <= a <= 13),
        (re.compile(rf"\b{_N} months? ago\b", re.I), lambda m: (lambda k: lambda a, d: abs(a - 30 * k) <= 12)(n(m))),
        (re.compile(r"\bfor (?:many |several |a few )?months\b|\bmonths ago\b", re.I), lambda m: lambda a, d: a >= 45),
        (re.compile(r"\bfor (?:many |several |a few )?years\b|\byears ago\b", re.I), lambda m: lambda a, d: a >= 365),
    ]


PHRASES = _phrases()
# phrases of an age ("for months"): they date the thing named in the sentence before, too
AGES = PHRASES[-2:]
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _day(value: Any) -> date | None:
    if not isinstance(value, str) or not re.match(r"^\d{4}-\d\d-\d\d", value):
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def _dates(value: Any, fields: tuple[str, ...]) -> Iterator[date]:
    if isinstance(value, dict):
        for k, v in value.items():
            d = _day(v) if k in fields else None
            if d is not None:
                yield d
            else:
                yield from _dates(v, fields)
    elif isinstance(value, list):
        for v in value:
            yield from _dates(v, fields)


def _expired(where: str, sentence: str, today: date, state: dict) -> list[str]:
    if not EXPIRED.search(sentence):
        return []
    phrase = next((m for rx, _ in PHRASES for m in rx.finditer(sentence)), None)
    changed = sorted(set(_dates(state, ("password_last_changed",))))
    if phrase is None or not changed or any((today - d).days >= EXPIRY_AFTER for d in changed):
        return []
    return [f"{where}: consistency (relative_time): the password {'expired'!r} {phrase.group(0)!r}, but the state "
            f"shows it changed {changed[-1]} ({(today - changed[-1]).days} days before now): {sentence.strip()[:160]!r}"]


def relative_time_problems(s) -> list[str]:
    now = s.environment_setup.now
    if not now:
        return []
    try:
        today = datetime.fromisoformat(now).date()
    except ValueError:
        return []
    state = s.environment_setup.initial_state_patch
    out = []
    for where, text in story_texts(s):
        sentences = _SENTENCE.split(text)
        for i, sentence in enumerate(sentences):
            if HEDGE.search(sentence):
                continue
            out += _expired(where, sentence, today, state)
            for topic, fields in TOPICS:
                # "That key's in my drawer. I haven't needed it for months.": the topic may
                # be named in the sentence before the one that dates it
                if topic.search(sentence):
                    phrases = PHRASES
                elif i and topic.search(sentences[i - 1]):
                    phrases = AGES
                else:
                    continue
                dated = sorted(set(_dates(state, fields)))
                if not dated:
                    continue
                for rx, make in phrases:
                    for m in rx.finditer(sentence):
                        fits = make(m)
                        if not any(fits((today - d).days, d) for d in dated):
                            out.append(
                                f"{where}: consistency (relative_time): {m.group(0)!r} against "
                                f"{', '.join(fields)}: the state dates it "
                                f"{', '.join(f'{d} ({(today - d).days} days before now)' for d in dated[:3])}: "
                                f"{sentence.strip()[:160]!r}")
    return out
