"""What the simulated user reads of the agent's turn: its text since the user last spoke, and
whether a sentence of it asks for something (to answer facts, and the `asked` act)."""

from __future__ import annotations

import re

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser

from ..scenario.model import Fact


def last_agent_text(messages: list[ChatMessage]) -> str:
    """What the agent said since the user last spoke (its text messages, tool traffic aside)."""
    said: list[str] = []
    for m in reversed(messages):
        if isinstance(m, ChatMessageUser):
            break
        if isinstance(m, ChatMessageAssistant) and m.text.strip():
            said.append(m.text)
    return "\n".join(reversed(said))


# a sentence asks when it is a question or carries a request
ASK_CUES = re.compile(
    r"\b(?:please|could you|can you|would you|can i|could i|may i|provide|confirm|tell me|give me|"
    r"let me know|need your|need the|what|which)\b",
    re.I,
)


def asks(text: str) -> list[str]:
    """The sentences of the agent's text that ask for something."""
    sentences = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [s for s in sentences if s.rstrip().endswith("?") or ASK_CUES.search(s)]


def asked_for(fact: Fact, text: str) -> bool:
    """A trigger of the fact starts a word of a sentence that asks (a question or a request),
    case-insensitively: `name` matches "names" and "name?", not "username"; "your mobile
    will get a code" asks nothing."""
    return any(
        re.search(rf"(?<![A-Za-z0-9]){re.escape(t.strip())}", sentence, re.I)
        for sentence in asks(text)
        for t in fact.asked_by
    )


def fact_reply(text: str, answers: list[str]) -> bool:
    """The user message is made of fact answers only (a reply to a question, not a script line)."""
    for answer in answers:
        text = text.replace(answer, "")
    return not text.strip()
