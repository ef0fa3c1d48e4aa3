"""An async A2A client: read the agent card, send a message, return its reply.

One client per sample (one HTTP connection pool, nothing shared between samples). Two kinds of
failure, both naming the URL and the cause:
* A2AUnavailable: the peer cannot be reached or does not answer (connection refused or dropped,
  HTTP 5xx after retries, no reply within the deadline) -- the infrastructure failed;
* A2AError: the peer answered with something we cannot use (an HTTP 3xx/4xx, a JSON-RPC error, a
  failed task, a reply that is not JSON, too large or too deep) -- the peer's own doing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx

from .wire import BOOTSTRAP_URN, V03, V10, A2AError, A2AUnavailable, Dialect, Reply, _snippet, loads, parse_reply

CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
DEFAULT_TIMEOUT = 120.0
CARD_TIMEOUT = 10.0
MAX_REPLY_BYTES = 8 << 20  # one turn's reply; a whole conversation's history is far smaller
RETRIES = 2  # after a connection failure or a 5xx, within the turn's deadline
RETRY_WAIT = 0.5  # seconds before the first retry, doubled each time


@dataclass(frozen=True)
class CardInfo:
    found: bool  # a card was read (else: v0.3, no extensions, as the original assumed)
    dialect: Dialect
    bootstrap: bool  # declares urn:pi-bench:policy-bootstrap:v1
    name: str = ""
    # the peer runs on a protobuf-based SDK (a2a-sdk 1.x: its card lists supportedInterfaces), so
    # every number in its data is a double, in the v0.3 dialect too (its compat layer converts
    # through protobuf Values): integral ones are read back as integers
    doubles: bool = False


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
    doubles = isinstance(interfaces, list) or dialect.v1
    return CardInfo(True, dialect, bootstrap, str(card.get("name", "")), doubles)


class A2AClient:
    """`timeout` is a deadline for a whole exchange (connect, retries, headers, the last byte):
    a peer that trickles its reply or its headers is cut at the deadline, however steadily it
    sends. Redirects are not followed (a peer cannot send us to another host)."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT, dialect: Dialect | None = None):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise A2AError(f"agent URL {url!r} must start with http:// or https://")
        self.url = url.rstrip("/") or url
        self.timeout = timeout
        self.dialect = dialect or V03
        self.doubles = self.dialect.v1  # set from the card: the peer's numbers are all doubles
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=False)

    async def card(self) -> CardInfo:
        """The first card found; none found means v0.3 without extensions (not an error: the
        original never required a card). A host that cannot be reached at all is A2AUnavailable."""
        unreachable: list[str] = []
        urls = card_urls(self.url)
        for card_url in urls:
            try:
                with anyio.fail_after(min(self.timeout, CARD_TIMEOUT)):
                    response = await self._http.get(card_url)
                    body = await _read_limited(response, card_url) if response.status_code == 200 else None
            except (httpx.TransportError, TimeoutError) as err:
                unreachable.append(f"{type(err).__name__}: {err}".rstrip(": "))
                continue
            except A2AError:  # a card too large: as good as none
                continue
            if body is None:
                continue
            try:
                card = loads(body, card_url, "card")
                if isinstance(card, dict):
                    info = read_card(card)
                    self.dialect, self.doubles = info.dialect, info.doubles
                    return info
            except (A2AError, ValueError, AttributeError, TypeError):
                continue
        if len(unreachable) == len(urls):
            raise A2AUnavailable(f"cannot reach {self.url}: {unreachable[0]}")
        return CardInfo(False, self.dialect, False)

    async def send(
        self,
        parts: list[dict[str, Any]],
        *,
        context_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Reply:
        payload = self.dialect.request(self.dialect.message(parts, context_id=context_id, metadata=metadata))
        problems: list[str] = []  # of earlier attempts, when the deadline cuts the retries short
        try:
            with anyio.fail_after(self.timeout):
                status, raw = await self._post_with_retries(payload, problems)
        except TimeoutError:
            before = f"; before that: {problems[-1]}" if problems else ""
            raise A2AUnavailable(
                f"{self.url} did not answer within {self.timeout:g} s (the deadline per turn){before}") from None
        body: Any = None
        try:
            body = loads(raw, self.url)
        except A2AError:
            if status < 300:
                raise
            body = None  # an HTTP error page: the status says it
        if status >= 300 and not (isinstance(body, dict) and body.get("error")):
            why = " (redirects are not followed)" if status < 400 else ""
            raise A2AError(f"{self.url} answered HTTP {status}{why}", _snippet(raw.decode("utf-8", "replace")))
        return parse_reply(body, self.url, self.dialect.v1, integral=self.doubles)

    async def _post_with_retries(self, payload: dict[str, Any], problems: list[str]) -> tuple[int, bytes]:
        """POST until an answer that is not a 5xx, at most 1 + RETRIES times; a peer that cannot
        be reached, drops the connection or keeps answering 5xx is A2AUnavailable."""
        for attempt in range(1 + RETRIES):
            if attempt:
                await anyio.sleep(RETRY_WAIT * 2 ** (attempt - 1))
            try:
                async with self._http.stream("POST", self.url, json=payload, headers=self.dialect.headers()) as response:
                    raw = await _read_limited(response, self.url)
                    status = response.status_code
            except httpx.TimeoutException:
                raise TimeoutError from None  # the deadline's business: reported as such by send()
            except httpx.TransportError as err:
                problems.append(f"cannot reach {self.url}: {type(err).__name__}: {err}".rstrip(": "))
                continue
            if status >= 500 and not _jsonrpc_error(raw):
                problems.append(f"{self.url} answered HTTP {status}")
                continue
            return status, raw
        raise A2AUnavailable(f"{problems[-1]} (after {1 + RETRIES} attempts)")

    async def aclose(self) -> None:
        await self._http.aclose()


async def _read_limited(response: httpx.Response, url: str) -> bytes:
    """The body, refused once it passes MAX_REPLY_BYTES (a peer decides how much it sends)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
        raise A2AError(f"{url} sent a reply larger than {MAX_REPLY_BYTES} bytes ({int(declared)})")
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise A2AError(f"{url} sent a reply larger than {MAX_REPLY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _jsonrpc_error(raw: bytes) -> bool:
    """A 5xx that carries a JSON-RPC error is the peer's answer, not an outage."""
    try:
        body = loads(raw, "")
    except A2AError:
        return False
    return isinstance(body, dict) and bool(body.get("error"))
