"""An async A2A client: read the agent card, send a message, return its reply or raise A2AError.

One client per sample (one HTTP connection pool, nothing shared between samples). Every failure
becomes an A2AError that names the URL and the cause, so a sample's record says what went wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from .wire import BOOTSTRAP_URN, V03, V10, A2AError, Dialect, Reply, parse_reply, _snippet

CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
DEFAULT_TIMEOUT = 120.0
CARD_TIMEOUT = 10.0


@dataclass(frozen=True)
class CardInfo:
    found: bool  # a card was read (else: v0.3, no extensions, as the original assumed)
    dialect: Dialect
    bootstrap: bool  # declares urn:pi-bench:policy-bootstrap:v1
    name: str = ""


def card_urls(url: str) -> list[str]:
    """The card next to the given URL, then at the host root (where the original looked)."""
    parts = urlsplit(url)
    base = url.rstrip("/")
    root = f"{parts.scheme}://{parts.netloc}"
    out = [base + p for p in CARD_PATHS] + [root + p for p in CARD_PATHS]
    return list(dict.fromkeys(out))


def read_card(card: dict[str, Any]) -> CardInfo:
    """Dialect and bootstrap support from an agent card (v0.3 or 1.x layout)."""
    # the extension in the A2A spec's place, or as the original's top-level list of URNs
    declared = [e.get("uri") for e in (card.get("capabilities") or {}).get("extensions") or [] if isinstance(e, dict)]
    top = card.get("extensions")
    declared += [e for e in top if isinstance(e, str)] if isinstance(top, list) else []
    bootstrap = BOOTSTRAP_URN in declared
    dialect = V03
    interfaces = card.get("supportedInterfaces")
    if isinstance(interfaces, list):
        # 1.x cards list their interfaces; use 1.x JSON-RPC if offered, else stay on 0.3
        versions = [
            str(i.get("protocolVersion", "")) for i in interfaces
            if isinstance(i, dict) and str(i.get("protocolBinding", "")).upper() == "JSONRPC"
        ]
        if any(v.startswith("1") for v in versions) and not any(v.startswith("0.3") for v in versions):
            dialect = V10
    elif str(card.get("protocolVersion", "0.3")).startswith("1"):
        dialect = V10
    return CardInfo(True, dialect, bootstrap, str(card.get("name", "")))


class A2AClient:
    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT, dialect: Dialect | None = None):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise A2AError(f"agent URL {url!r} must start with http:// or https://")
        self.url = url.rstrip("/") or url
        self.timeout = timeout
        self.dialect = dialect or V03
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=True)

    async def card(self) -> CardInfo:
        """The first card found; none found means v0.3 without extensions (not an error: the
        original never required a card)."""
        for card_url in card_urls(self.url):
            try:
                response = await self._http.get(card_url, timeout=CARD_TIMEOUT)
                if response.status_code == 200:
                    info = read_card(response.json())
                    self.dialect = info.dialect
                    return info
            except (httpx.HTTPError, ValueError, AttributeError, TypeError):
                continue
        return CardInfo(False, self.dialect, False)

    async def send(
        self,
        parts: list[dict[str, Any]],
        *,
        context_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Reply:
        payload = self.dialect.request(self.dialect.message(parts, context_id=context_id, metadata=metadata))
        try:
            response = await self._http.post(self.url, json=payload, headers=self.dialect.headers())
        except httpx.TimeoutException:
            raise A2AError(f"{self.url} did not answer within {self.timeout:g} s (timeout)") from None
        except httpx.HTTPError as err:
            raise A2AError(f"cannot reach {self.url}: {type(err).__name__}: {err}") from None
        try:
            body = response.json()
        except (json.JSONDecodeError, ValueError):
            body = None
        if response.status_code >= 400 and not (isinstance(body, dict) and body.get("error")):
            raise A2AError(f"{self.url} answered HTTP {response.status_code}: {_snippet(response.text)}")
        if body is None:
            raise A2AError(f"{self.url} replied with something that is not JSON: {_snippet(response.text)}")
        return parse_reply(body, self.url, self.dialect.v1)

    async def aclose(self) -> None:
        await self._http.aclose()
