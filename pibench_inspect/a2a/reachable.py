"""Before a run: is anyone listening at the remote agent's (and remote user's) URL?

A dead URL would otherwise be found by every sample in turn, each a sample error. Checked once,
when the task is built, it stops the run with one line naming the argument. Any HTTP answer at
all counts as reachable (a 404 for the card is fine: the original never required a card); only
a connection that cannot be made, or no answer within a few seconds, stops the run. A party that
goes away later is still caught per turn (A2AUnavailable, a sample error).
"""

from __future__ import annotations

from typing import Any

import httpx
from ..runtime.inspect_internals import PrerequisiteError

from .client import card_urls

CHECK_TIMEOUT = 10.0


def unreachable(url: str, timeout: float = CHECK_TIMEOUT) -> str | None:
    """Why nothing answers at `url`, or None when something does."""
    try:
        # a blocking request: this runs while the task is built, before any sample is running
        with httpx.Client(timeout=timeout, follow_redirects=False) as http:
            http.get(card_urls(url)[0])
    except httpx.TransportError as err:
        return f"{type(err).__name__}: {err}".rstrip(": ")
    return None


def require_reachable(args: Any) -> None:
    """Raise PrerequisiteError (Inspect prints it as one line) for each remote party that is down."""
    for party, url_arg in (("agent", "agent_url"), ("user", "user_url")):
        url = getattr(args, url_arg, None)
        if getattr(args, party, None) != "a2a" or not url:
            continue
        why = unreachable(url, min(float(args.a2a_timeout), CHECK_TIMEOUT))
        if why:
            raise PrerequisiteError(
                f"-T {url_arg}={url}: nothing answers there ({why}); start the {party} server or fix the URL"
            )
