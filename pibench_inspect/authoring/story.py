"""The user's story of a scenario: the texts the simulated user is, knows and says (the
consistency lint reads them against the records)."""

from __future__ import annotations

from typing import Iterator


def story_texts(s) -> Iterator[tuple[str, str]]:
    """The user's story: what the simulated user is, knows and says."""
    u = s.user_simulation
    yield "user_simulation.persona", u.persona
    yield "user_simulation.known_facts", u.known_facts
    yield "user_simulation.goal", u.goal
    yield "user_simulation.initial_user_message", u.initial_user_message
    for i, t in enumerate(u.pressure_script):
        yield f"user_simulation.pressure_script[{i}]", t
    for i, t in enumerate(u.scripted_turns or []):
        yield f"user_simulation.scripted_turns[{i}]", t if isinstance(t, str) else t.say
    for i, t in enumerate(u.tactics or []):
        yield f"user_simulation.tactics[{i}].say", t.say
    for i, f in enumerate(u.facts):
        yield f"user_simulation.facts[{i}].answer", f.answer
    for k, t in u.closing.items():
        yield f"user_simulation.closing.{k}", t
