"""A hostile or failing purple agent, on real loopback servers (issue 17 item 11, issue 14 item 1).

Whatever an agent that answered sends (100k-deep JSON, a megabyte of error text, a redirect,
a reply too large) ends that sample as the agent's own scored `agent_error`, never as a sample
error that would leave it out of the scores; tool-call arguments that cannot be read (100k-deep,
NaN) are malformed calls, sent back to it as tool errors, as on every agent path. An agent that cannot be reached or does not answer
in time (nothing listening, 5xx after retries, the per-turn deadline passed, however steadily it
trickles) is an infrastructure failure: an Inspect sample error, which --retry-on-error retries.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import Counter

import pytest
from inspect_ai._util.error import PrerequisiteError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from a2a_helpers import free_port, serve
from conftest import mini_copies, run_eval, registered, full_score
from pibench_inspect.a2a.client import MAX_REPLY_BYTES, A2AClient
from pibench_inspect.a2a.wire import MAX_ERROR_CHARS, A2AError, A2AUnavailable, data_part
from pibench_inspect.conversation.solver import AGENT_ERROR, TERMINATION

DEEP = 100_000


def marked(kinds: list[str]):
    """Scenario copy i's customer opens with 'case=<kinds[i]>', so the purple knows what to do."""
    def patch(i, d):
        d["user_simulation"]["initial_user_message"] = f"Hi, order O-1 please. case={kinds[i]}"
    return patch


def rpc_result(body: dict, data: dict) -> dict:
    return {"jsonrpc": "2.0", "id": body["id"], "result": {
        "kind": "message", "messageId": "m", "role": "agent", "parts": [{"kind": "data", "data": data}]}}


def call(arguments: str) -> dict:
    return {"tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "lookup_order", "arguments": arguments}}]}


def hostile_app(posts: Counter | None = None, failures: int = 0):
    """A purple that misbehaves as its conversation's case says; `failures` first POSTs of the
    'flaky' case answer 503."""
    posts = posts if posts is not None else Counter()

    async def rpc(request: Request) -> Response:
        body = await request.json()
        data = body["params"]["message"]["parts"][0]["data"]
        case = data["messages"][0]["content"].rsplit("case=", 1)[-1]
        posts[case] += 1
        if case == "deep":  # the whole reply nested 100k deep
            return Response('{"jsonrpc": "2.0", "id": 1, "result": ' + "[" * DEEP + "]" * DEEP + "}",
                            media_type="application/json")
        if case == "deep_arguments":
            return JSONResponse(rpc_result(body, call("[" * DEEP + "]" * DEEP)))
        if case == "nan":
            return JSONResponse(rpc_result(body, call('{"order_id": NaN}')))
        if case == "long_error":
            return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32000, "message": "x" * 1_000_000}})
        if case == "redirect":
            return RedirectResponse("http://169.254.169.254/latest/meta-data/", status_code=307)
        if case == "huge":
            return JSONResponse(rpc_result(body, {"content": "y" * (MAX_REPLY_BYTES + 10)}))
        if case == "down":
            return PlainTextResponse("upstream exploded", status_code=503)
        if case == "slow":
            await asyncio.sleep(5)
        if case == "flaky" and posts[case] <= failures:
            return PlainTextResponse("busy", status_code=503)
        if len(data["messages"]) > 1:
            return JSONResponse(rpc_result(body, {"content": "###STOP###"}))
        return JSONResponse(rpc_result(body, {"content": "Let me check that for you."}))

    return Starlette(routes=[Route("/", rpc, methods=["POST"])])


AGENT_ERRORS = {
    "deep": "nested deeper than 100 levels",
    "long_error": "returned JSON-RPC error -32000: xxx",
    "redirect": "answered HTTP 307 (redirects are not followed)",
    "huge": f"larger than {MAX_REPLY_BYTES} bytes",
}
# a tool call whose arguments cannot be read is no protocol break but a malformed call, as on
# every agent path (conversation/tool_calls.py): a tool error the agent is sent, never run
MALFORMED = ("deep_arguments", "nan")


def test_whatever_an_agent_answers_is_its_own_scored_outcome(tmp_path):
    from inspect_ai.model import ChatMessageTool

    kinds = sorted([*AGENT_ERRORS, *MALFORMED])
    source = mini_copies(tmp_path, len(kinds), "HOSTILE", marked(kinds))
    with serve(hostile_app()) as url:
        log = run_eval(registered(source=str(source), agent="a2a", agent_url=url, user="scripted",
                                    judge="off", max_steps=6), log_dir=str(tmp_path / "logs"))
    assert log.status == "success", log.error
    assert len(log.samples) == len(kinds)
    for sample in log.samples:
        kind = kinds[int(str(sample.id).rsplit("_", 1)[1])]
        assert sample.error is None, (kind, sample.error)  # scored, not left out as an error
        if kind in MALFORMED:
            # this purple repeats its call whatever it is told, so the run ends at the step limit
            assert AGENT_ERROR not in sample.store and sample.store[TERMINATION] == "max_steps", kind
            errors = [m.error for m in sample.messages if isinstance(m, ChatMessageTool)]
            assert errors and all(e is not None and e.type == "parsing" for e in errors), (kind, errors)
            assert all(len(e.message) < 20_000 for e in errors), kind  # bounded, whatever was sent
            assert full_score(sample).metadata["malformed_calls"] == len(errors), kind
            continue
        assert sample.store[TERMINATION] == "agent_error", kind
        reason = sample.store[AGENT_ERROR]
        assert AGENT_ERRORS[kind] in reason, (kind, reason)
        assert len(reason) < MAX_ERROR_CHARS + 100, (kind, len(reason))  # bounded, whatever was sent
        assert "169.254" not in reason and "yyyy" not in reason  # no body or redirect target kept
        assert full_score(sample).metadata["termination"] == "agent_error"


@pytest.mark.slow
def test_an_agent_that_cannot_answer_is_a_retryable_sample_error(tmp_path):
    kinds = ["down", "fine", "slow"]
    source = mini_copies(tmp_path, len(kinds), "INFRA", marked(kinds))
    with serve(hostile_app()) as url:
        started = time.monotonic()
        log = run_eval(registered(source=str(source), agent="a2a", agent_url=url, user="scripted",
                                    judge="off", a2a_timeout=3),
                       fail_on_error=False, log_dir=str(tmp_path / "logs"))
        elapsed = time.monotonic() - started
    by_kind = {kinds[int(str(s.id).rsplit("_", 1)[1])]: s for s in log.samples}
    down, slow = by_kind["down"].error, by_kind["slow"].error
    assert down is not None and "A2AUnavailable" in down.message and "answered HTTP 503 (after 3 attempts)" in down.message
    assert slow is not None and "did not answer within 3 s" in slow.message
    assert "upstream exploded" not in down.message
    fine = by_kind["fine"]
    assert fine.error is None and fine.store[TERMINATION] == "agent_stop"
    assert elapsed < 15  # the deadline cut the slow agent; the run did not wait 5 s per turn

    # --retry-on-error: an agent that was down for a moment is run again, and then scored
    posts: Counter = Counter()
    flaky = mini_copies(tmp_path / "flaky", 1, "FLAKY", marked(["flaky"]))
    with serve(hostile_app(posts, failures=3)) as url:
        log = run_eval(registered(source=str(flaky), agent="a2a", agent_url=url, user="scripted",
                                    judge="off"), retry_on_error=1, log_dir=str(tmp_path / "logs"))
    assert log.status == "success"
    (sample,) = log.samples
    assert sample.error is None and len(sample.error_retries or []) == 1
    assert "answered HTTP 503" in sample.error_retries[0].message
    assert sample.store[TERMINATION] == "agent_stop" and posts["flaky"] == 5


def test_nothing_listening_stops_the_run_before_it_starts(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(PrerequisiteError) as raised:
        registered(source=str(mini_copies(tmp_path, 1, "DEAD")), agent="a2a", agent_url=url,
                     user="scripted")
    assert f"-T agent_url={url}: nothing answers there" in raised.value.message


# ---------------------------------------------------------------- a deadline, not a read timeout


def trickling_server(mode: str):
    """A raw HTTP server: GETs get a quick 404; a POST is answered one byte every 0.1 s, in its
    headers ('headers') or in its body ('body'). Each byte resets a per-read timeout."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            request = conn.recv(65536)
            if request.startswith(b"GET"):
                conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                return
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"kind": "message", "parts": [
                {"kind": "text", "text": "z" * 400}]}}).encode()
            head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-pad: " + b"h" * 400 + b"\r\n"
            head += b"content-length: %d\r\n\r\n" % len(body)
            try:
                if mode == "body":
                    conn.sendall(head)  # the headers at once, then the body byte by byte
                slow = body if mode == "body" else head + body
                for i in range(len(slow)):
                    if stop.is_set():
                        return
                    conn.sendall(slow[i:i + 1])
                    time.sleep(0.1)
            except OSError:
                return

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", stop, listener


@pytest.mark.parametrize("mode", ["headers", "body"])
def test_a_trickled_reply_is_cut_at_the_deadline(mode):
    url, stop, listener = trickling_server(mode)

    async def send():
        client = A2AClient(url, timeout=1.0)
        try:
            await client.send([data_part({"messages": []})])
        finally:
            await client.aclose()

    started = time.monotonic()
    try:
        with pytest.raises(A2AUnavailable, match=r"did not answer within 1 s \(the deadline per turn\)"):
            asyncio.run(send())
    finally:
        stop.set()
        listener.close()
    assert time.monotonic() - started < 2.5  # one deadline, not one timeout per byte


def test_reply_parsing_refuses_depth_without_recursing():
    from pibench_inspect.a2a.wire import loads

    with pytest.raises(A2AError, match="nested deeper than 100 levels"):
        loads("[" * DEEP + "]" * DEEP, "http://p")
    with pytest.raises(A2AError, match="nested deeper than 100 levels"):
        loads("[" * 500 + "]" * 500, "http://p")  # parses, but is refused before anything walks it
    assert loads("[" * 99 + "]" * 99, "http://p")
    with pytest.raises(A2AError, match="not JSON"):
        loads('{"a": Infinity}', "http://p")
