"""An optional bearer token for the green server (`--auth-token`).

Checked on every request except the agent card (both well-known paths) and GET /health, which
stay public so that callers can discover the server and orchestrators can probe it: neither
starts work or reveals anything beyond the card. Everything else (JSON-RPC at / and
/a2a/message/send, GET /scenarios) needs `Authorization: Bearer <token>`; anything else gets
401 before the request body is read.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

PUBLIC = frozenset({"/.well-known/agent-card.json", "/.well-known/agent.json", "/health"})


class BearerAuth:
    def __init__(self, app: Any, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") in PUBLIC:
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope.get("headers", []) if k.lower() == b"authorization"), b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "this server needs an Authorization: Bearer token"}}).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="pi-bench-green"')]})
        await send({"type": "http.response.body", "body": body})
