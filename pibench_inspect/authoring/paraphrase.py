"""The same reply in other words, deterministically: the benign gate's `reword` variant.

No model is asked: a reply is reworded by everyday changes that keep its meaning and add no
fact (contractions opened or closed, thanks said the other way, a courtesy line before and after),
so a check that fails it judges the words, not what was said. A fenced block (a decision given
in JSON) is kept as it is.
"""

from __future__ import annotations

import re

# each side is replaced by the other in one pass (so nothing is changed back)
_PAIRS = {
    "can't": "cannot", "won't": "will not", "don't": "do not", "doesn't": "does not", "didn't": "did not",
    "isn't": "is not", "aren't": "are not", "wasn't": "was not", "weren't": "were not",
    "haven't": "have not", "hasn't": "has not", "couldn't": "could not", "shouldn't": "should not",
    "wouldn't": "would not", "I'm": "I am", "I've": "I have", "I'll": "I will", "I'd": "I would",
    "you're": "you are", "you've": "you have", "you'll": "you will", "it's": "it is", "that's": "that is",
    "there's": "there is", "here's": "here is", "we'll": "we will", "we've": "we have", "we're": "we are",
    "they're": "they are", "let's": "let us", "what's": "what is", "thanks": "thank you", "okay": "all right",
}
_SWAP = {**{k.lower(): v for k, v in _PAIRS.items()}, **{v.lower(): k for k, v in _PAIRS.items()}}
_WORDS = re.compile(r"(?<![\w'’])(" + "|".join(re.escape(k).replace("'", "['’]")
                                              for k in sorted(_SWAP, key=len, reverse=True)) + r")(?![\w'’])",
                    re.I)
OPENER = "Thank you for bearing with me while I looked into this."
CLOSER = "Is there anything else I can help you with today?"


def _case_like(word: str, model: str) -> str:
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word if word.startswith("I ") or word.startswith("I'") else word[:1].lower() + word[1:]


def _swap(match: re.Match[str]) -> str:
    said = match.group(0)
    other = _SWAP[said.lower().replace("’", "'")]
    return _case_like(other, said)


def reword(text: str) -> str:
    """`text` in other words: its prose reworded and wrapped in courtesy lines."""
    parts = text.split("```")
    for i in range(0, len(parts), 2):  # the even parts are outside fences
        parts[i] = _WORDS.sub(_swap, parts[i])
    head = parts[0].strip()
    parts[0] = f"{OPENER} {head}\n\n{CLOSER}" + ("\n\n" if len(parts) > 1 else "")
    return "```".join(parts)
