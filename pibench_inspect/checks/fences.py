"""Fenced blocks in an agent's message, found in time linear in the message size.

The original found them with `re.finditer(r"```(?:json)?\\s*\\n(.*?)\\n```", re.S)`. On text with
many unterminated fences that regex is quadratic (each opening fence scans to the end of the
message looking for a close; 480 kB took minutes), and the text is the agent's. This scanner
returns exactly the regex's matches, in order, while looking at every character a bounded number
of times:

* the closing fences (`\\n```` positions) are listed once, and "the first close at or after b"
  is a binary search, so an opening fence without a close costs no scan;
* the whitespace after an opening fence is read once (a run of whitespace never contains a
  backtick, so runs of different fences never overlap).

Backtracking order is the regex's: `json` taken before not, then `\\s*` greedy (the last newline
of the whitespace run first), then the lazy body (the first close).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Iterator

OPEN = "```"
CLOSE = "\n```"


def _closes(text: str) -> list[int]:
    out, j = [], text.find(CLOSE)
    while j >= 0:
        out.append(j)
        j = text.find(CLOSE, j + 1)
    return out


def _match_at(text: str, start: int, closes: list[int]) -> tuple[int, int, int] | None:
    """(body start, body end, match end) of the regex matched at `start` (an opening fence)."""
    after = start + len(OPEN)
    for q in ([after + 4] if text.startswith("json", after) else []) + [after]:
        run_end = q
        while run_end < len(text) and text[run_end].isspace():  # `\s` is str.isspace
            run_end += 1
        k = text.rfind("\n", q, run_end)
        while k >= 0:
            body = k + 1
            i = bisect_left(closes, body)
            if i < len(closes):
                return body, closes[i], closes[i] + len(CLOSE)
            k = text.rfind("\n", q, k)
    return None


def fenced_blocks(text: str) -> Iterator[tuple[str, str]]:
    """(body, whole matched span) of every fenced block, as the original regex found them."""
    closes = _closes(text)
    pos = 0
    while True:
        start = text.find(OPEN, pos)
        if start < 0:
            return
        m = _match_at(text, start, closes)
        if m is None:
            pos = start + 1
            continue
        body, body_end, end = m
        yield text[body:body_end], text[start:end]
        pos = end
