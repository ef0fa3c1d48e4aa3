"""Real loopback HTTP servers for tests: `with serve(app) as url:` runs an ASGI app under uvicorn
in a background thread and yields its base URL (no trailing slash)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

START_TIMEOUT = 10.0


@contextmanager
def serve(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    with serve_built(lambda _url: app, host) as url:
        yield url


@contextmanager
def serve_built(build: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """As serve(), for an app that must know its own URL (an agent card a client follows):
    `build(url)` makes it once the port is bound."""
    # bind the socket ourselves: the port is known before the server starts, with no race
    # between picking a free port and someone else taking it
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit this; without it every reused keep-alive request waits ~40 ms
    # on Nagle plus delayed ACK (uvicorn only sets it on sockets it creates itself)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    try:
        app = build(f"http://{host}:{port}/")
    except BaseException:
        sock.close()
        raise
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as err:  # reported to the test instead of dying silently
            errors.append(err)

    thread = threading.Thread(target=run, name=f"uvicorn:{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if errors or not thread.is_alive():
                raise RuntimeError(f"test server on port {port} did not start: {errors[:1] or 'thread exited'}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"test server on port {port} did not start within {START_TIMEOUT:g} s")
            time.sleep(0.01)
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=START_TIMEOUT)
        sock.close()


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on (bound, then released): for 'server is down' tests."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def recording(app: Any, bodies: list[Any]) -> Any:
    """Wrap an ASGI app so every POST body (parsed as JSON when it is) is appended to `bodies`."""
    import json

    async def wrapped(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            bodies.append(json.loads(body))
        except ValueError:
            bodies.append(body)
        replayed = False

        async def replay() -> dict:
            # the app reads the body we already consumed, then whatever comes next (disconnect)
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


# ---------------------------------------------------------------- client generations on the wire
#
# What each generation of a2a-sdk clients puts on the wire when it talks to our servers (whose
# cards offer v0.3 JSON-RPC only). a2a-sdk 1.x and 0.3 cannot be installed side by side (both
# are the `a2a` package), so the 1.x shape is reproduced here exactly as captured: a2a-sdk 1.3.0
# (`a2a.client.create_client(url)`, which reads our card and picks its CompatJsonRpcTransport),
# run in a separate virtualenv against our green, purple and user servers on loopback, every POST
# recorded (issue 30). Captured, for message/send with a data part {"config": {"max_steps": 40,
# "seed": 42}, ...}:
#
#   header  A2A-Version: 0.3
#   {"method": "message/send", "params": {"configuration": {"blocking": true}, "message": {
#     "kind": "message", "messageId": "<32 hex>", "parts": [{"data": {"config": {"max_steps": 40.0,
#     "seed": 42.0, ...}, ...}, "kind": "data"}], "role": "user"}}, "id": "<uuid4>", "jsonrpc": "2.0"}
#
# Every number is a double (the data went through a protobuf Struct), also in state the server
# returned and the client hands back (`"turn": 0.0`). With streaming on, the method is
# message/stream and the Accept header text/event-stream; a part with metadata (the bootstrap
# extension's) carries it beside "data"; tasks/get and tasks/cancel send {"params": {"id": ID}}.
# The v0.3 generation is the installed a2a-sdk 0.3 client itself (tests use it directly).

SDK_1X_HEADERS = {"A2A-Version": "0.3"}


def as_doubles(value: Any) -> Any:
    """What a protobuf Struct makes of a JSON value: every number a double (booleans stay)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: as_doubles(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_doubles(v) for v in value]
    return value


def sdk_1x_request(data: dict[str, Any], method: str = "message/send",
                   metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON-RPC body a2a-sdk 1.3.0's client sends for one data part (see above)."""
    import uuid

    part: dict[str, Any] = {"data": as_doubles(data), "kind": "data"}
    if metadata:
        part["metadata"] = metadata
    message = {"kind": "message", "messageId": uuid.uuid4().hex, "parts": [part], "role": "user"}
    return {"method": method, "params": {"configuration": {"blocking": True}, "message": message},
            "id": str(uuid.uuid4()), "jsonrpc": "2.0"}


def sdk_1x_task_request(method: str, task_id: str) -> dict[str, Any]:
    """tasks/get or tasks/cancel as a2a-sdk 1.3.0's client sends them to a v0.3 server."""
    import uuid

    return {"method": method, "params": {"id": task_id}, "id": str(uuid.uuid4()), "jsonrpc": "2.0"}


def sdk_1x_post(url: str, body: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
    import httpx

    response = httpx.post(url.rstrip("/") + "/", json=body, headers=SDK_1X_HEADERS, timeout=timeout)
    assert response.status_code == 200, response.text
    return response.json()


def sdk_1x_stream(url: str, body: dict[str, Any], timeout: float = 120.0) -> list[dict[str, Any]]:
    import json

    import httpx

    events = []
    headers = {**SDK_1X_HEADERS, "Accept": "text/event-stream"}
    with httpx.stream("POST", url.rstrip("/") + "/", json=body, headers=headers, timeout=timeout) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    return events


def task_data(result: dict[str, Any]) -> dict[str, Any]:
    """The data part of a completed task's status message, or {"failed": text} for a failed one."""
    parts = result["status"]["message"]["parts"]
    if result["status"]["state"] == "failed":
        return {"failed": parts[0]["text"]}
    assert result["status"]["state"] == "completed", result["status"]
    return parts[0]["data"]
