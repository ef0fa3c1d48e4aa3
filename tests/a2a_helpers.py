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
    # bind the socket ourselves: the port is known before the server starts, with no race
    # between picking a free port and someone else taking it
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit this; without it every reused keep-alive request waits ~40 ms
    # on Nagle plus delayed ACK (uvicorn only sets it on sockets it creates itself)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
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
