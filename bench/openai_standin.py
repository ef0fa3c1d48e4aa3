"""An OpenAI-compatible chat-completions server on loopback, for benchmarks and fault tests.

    with serve(OpenAIStandin(latency=1.0)) as url:   # url = "http://127.0.0.1:PORT/v1"
        ... litellm / Inspect / the LiteLLM agent with api_base=url, api_key="x" ...

It sleeps `latency` seconds per request (so concurrency shows in wall time), counts requests in
flight (`max_in_flight` is the most seen at once), and answers with a fixed text (`reply`), a
tool call with arguments that are not JSON (`bad_arguments`: every request with tools;
`bad_first=N`: the first N of them), the refusal a server gives a prompt longer than its context
(`overflow`: HTTP 400, code `context_length_exceeded`, as OpenAI and llama.cpp's server send it),
or an HTTP error (`status`, e.g. 500 or 401) in OpenAI's error format. Every answer carries
`usage`; `bodies` keeps every request body.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

START_TIMEOUT = 10.0


class OpenAIStandin:
    def __init__(self, latency: float = 1.0, reply: str = "Understood, I have noted that.",
                 status: int | None = None, bad_arguments: bool = False, bad_first: int = 0,
                 overflow: bool = False) -> None:
        self.latency = latency
        self.reply = reply
        self.status = status
        self.bad_arguments = bad_arguments
        self.bad_first = bad_first
        self.bad_sent = 0
        self.overflow = overflow
        self.bodies: list[dict] = []
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.models: list[str] = []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        if not scope["path"].endswith("/chat/completions"):
            await _send(send, 404, {"error": {"message": f"no route {scope['path']}", "type": "not_found"}})
            return
        body = json.loads(b"".join(chunks) or b"{}")
        self.bodies.append(body)
        self.requests += 1
        self.models.append(str(body.get("model")))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency)
        finally:
            self.in_flight -= 1
        if self.overflow:
            await _send(send, 400, {"error": {
                "message": "This model's maximum context length is 8192 tokens. However, you requested "
                           f"{9000 + self.requests} tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
            return
        if self.status:
            kind = "authentication_error" if self.status == 401 else "server_error"
            await _send(send, self.status, {"error": {"message": f"stand-in answers {self.status}", "type": kind}})
            return
        await _send(send, 200, self.completion(body))

    def completion(self, body: dict) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": self.reply}
        bad = self.bad_arguments or self.bad_sent < self.bad_first
        if bad and body.get("tools"):
            self.bad_sent += 1
            name = body["tools"][0]["function"]["name"]
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{self.requests}", "type": "function",
                 "function": {"name": name, "arguments": "{not json"}}]}
        prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
        return {
            "id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "standin"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 8, "total_tokens": prompt + 8},
        }


async def _send(send: Any, status: int, payload: dict) -> None:
    data = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


@contextmanager
def serve(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """Run `app` under uvicorn in a background thread; yields its OpenAI base URL (`.../v1`)."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=lambda: server.run(sockets=[sock]), name=f"openai-standin:{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"OpenAI stand-in on port {port} did not start")
            time.sleep(0.01)
        yield f"http://{host}:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=START_TIMEOUT)
        sock.close()
