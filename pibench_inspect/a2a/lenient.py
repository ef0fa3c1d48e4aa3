"""Be lenient in what our servers accept: A2A messages without `messageId` or `kind`.

The original pi-bench's clients (its green server, purple adapter, bootstrap and user adapter)
send messages without `messageId` and `kind`, and parts without `kind` (reference 5.6-5.8,
known defect 22). a2a-sdk refuses such a message with -32602 before any of our code runs, so
this ASGI wrapper fills them in on the way in: a fresh messageId, kind "message", and a part's
kind from what it holds (data, text or file). Everything else passes unchanged; a body that is
not a JSON object of a JSON-RPC request, or is too large or too deep, passes unchanged too, and
the sdk answers it with its own error. We keep sending both fields ourselves (wire.py).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from .wire import MAX_DEPTH, depth_exceeds

MAX_BODY = 16 << 20  # a request body larger than this is not read into memory: 413


def fill_message(message: Any) -> bool:
    """Add what the original leaves out; True when something was added."""
    if not isinstance(message, dict):
        return False
    changed = False
    if not message.get("messageId"):
        message["messageId"] = uuid.uuid4().hex
        changed = True
    if "kind" not in message:
        message["kind"] = "message"
        changed = True
    for part in message.get("parts") or []:
        if isinstance(part, dict) and "kind" not in part:
            kind = next((k for k in ("data", "text", "file") if k in part), None)
            if kind:
                part["kind"] = kind
                changed = True
    return changed


def _filled(body: bytes) -> bytes:
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return body
    if depth_exceeds(request, MAX_DEPTH):
        return body
    requests = request if isinstance(request, list) else [request]
    changed = False
    for r in requests:
        params = r.get("params") if isinstance(r, dict) else None
        if isinstance(params, dict) and fill_message(params.get("message")):
            changed = True
    return json.dumps(request).encode() if changed else body


class LenientMessages:
    """Pure ASGI middleware: `starlette_app.add_middleware(LenientMessages)`."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        app = self.app
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                await _too_large(send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = _filled(b"".join(chunks))
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await app({**scope, "headers": headers}, replay, send)


async def _too_large(send: Any) -> None:
    text = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32600, "message": f"request body larger than {MAX_BODY} bytes"}}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(text)).encode())]})
    await send({"type": "http.response.body", "body": text})
