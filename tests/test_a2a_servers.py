"""Our A2A servers (serve-agent, serve-user, the green server) on real loopback HTTP:
sessions that belong to their caller and expire by age (issue 17 item 13), the original's
request shapes without messageId and kind (issue 14 item 10), tasks/cancel on a running turn
(issue 14 item 12)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from a2a_helpers import serve

from examples.local_demo.demo_agent import CautiousAgent
from pibench_inspect.a2a.agent_server import MAX_SESSIONS, ProtocolAgentHost, build_agent_app
from pibench_inspect.a2a.serving import RequestProblem
from pibench_inspect.a2a.user_server import build_app as build_user_app

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "description": "Look up an order.",
                                            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                           "required": ["order_id"]}}}]
CONTEXT = [{"kind": "policy", "content": "Refunds need review.", "metadata": {}}]
BOOTSTRAP = "urn:pi-bench:policy-bootstrap:v1"


def post(url: str, message: dict[str, Any], method: str = "message/send", **params: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": {"message": message, **params}}
    response = httpx.post(url + "/", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def ours(data: dict[str, Any], context_id: str | None = None) -> dict[str, Any]:
    message = {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
               "parts": [{"kind": "data", "data": data}]}
    if context_id:
        message["contextId"] = context_id
    return message


def answer(response: dict[str, Any]) -> dict[str, Any]:
    """The data of a completed task, or {"failed": text} for a failed one."""
    result = response["result"]
    parts = result["status"]["message"]["parts"]
    if result["status"]["state"] == "failed":
        return {"failed": parts[0]["text"]}
    return parts[0]["data"]


def bootstrap(url: str, context_id: str | None = None) -> dict[str, Any]:
    return answer(post(url, ours({"bootstrap": True, "benchmark_context": CONTEXT, "tools": TOOLS,
                                  "run_id": "r", "domain": "mini"}, context_id)))


def turn(url: str, context_id: str, text: str = "Please refund order O-1.") -> dict[str, Any]:
    return answer(post(url, ours({"messages": [{"role": "user", "content": text}], "context_id": context_id},
                                 context_id)))


# ---------------------------------------------------------------- sessions (17.13)


def test_a_session_belongs_to_its_caller_and_the_server_refuses_rather_than_evicts():
    app = build_agent_app(CautiousAgent, "http://127.0.0.1/", max_sessions=3)
    host = app.state.host
    with serve(app) as url:
        # caller A asks for the context id "shared"; the server issues its own, unguessable one
        a = bootstrap(url, "shared")
        assert a["bootstrapped"] is True and a["context_id"] != "shared" and len(a["context_id"]) >= 32
        mine = host.sessions[a["context_id"]]
        # caller B asks for the same id: a different session; A's is untouched
        b = bootstrap(url, "shared")
        assert b["context_id"] not in ("shared", a["context_id"]) and host.sessions[a["context_id"]] is mine
        # nobody can use an id the server did not issue, whatever contextId they send
        refused = turn(url, "shared")
        assert refused == {"failed": "unknown or expired context_id: bootstrap first"}
        # full: the next bootstrap is refused and no live session is evicted
        bootstrap(url)
        full = bootstrap(url)
        assert "holds 3 live sessions" in full["failed"]
        assert len(host.sessions) == 3 and host.sessions[a["context_id"]] is mine
        assert "tool_calls" in turn(url, a["context_id"])  # A carries on


def test_sessions_expire_by_age_and_1001_bootstraps_do_not_evict_a_live_one():
    now = [0.0]
    host = ProtocolAgentHost(CautiousAgent, ttl=60, clock=lambda: now[0])
    boot = {"bootstrap": True, "benchmark_context": CONTEXT, "tools": TOOLS}

    def handle(data):
        return asyncio.run(host.handle(data, SimpleNamespace(context_id="caller-chosen")))

    live = handle(boot)["context_id"]
    issued, refused = 1, 0
    for _ in range(1000):
        try:
            handle(boot)
            issued += 1
        except RequestProblem:
            refused += 1
    assert (issued, refused) == (MAX_SESSIONS, 1) and live in host.sessions
    now[0] = 30.0
    turn_data = {"messages": [{"role": "user", "content": "Refund O-1"}], "context_id": live}
    assert "tool_calls" in handle(turn_data)  # a use keeps it alive
    now[0] = 61.0  # every other session is now older than the ttl; the live one is not
    assert handle(boot)["bootstrapped"] and len(host.sessions) == 2 and live in host.sessions
    now[0] = 200.0
    with pytest.raises(RequestProblem, match="unknown or expired"):
        handle(turn_data)


# ---------------------------------------------------------------- the original's shapes (14.10)


def original_message(data: dict[str, Any], metadata: dict | None = None) -> dict[str, Any]:
    """As the original's adapters send it (reference 5.6-5.8, known defect 22): no messageId, no
    kind on the message; its own configuration.taskId next to it."""
    part: dict[str, Any] = {"kind": "data", "data": data}
    if metadata:
        part["metadata"] = metadata
    return {"role": "user", "parts": [part]}


def original_post(url: str, data: dict[str, Any], metadata: dict | None = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": "message/send",
            "params": {"message": original_message(data, metadata), "configuration": {"taskId": str(uuid.uuid4())}}}
    response = httpx.post(url, json=body, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_originals_request_shapes_are_served():
    # the original's purple adapter and bootstrap against `pibench serve-agent`
    with serve(build_agent_app(CautiousAgent, "http://127.0.0.1/")) as url:
        boot = original_post(url, {"bootstrap": True, "benchmark_context": CONTEXT, "tools": TOOLS,
                                   "run_id": "r1", "domain": ""}, {"extension": BOOTSTRAP})
        assert "error" not in boot, boot
        ctx = answer(boot)["context_id"]
        history = [{"role": "assistant", "content": "Hi! How can I help you today?"},
                   {"role": "user", "content": "Please refund order O-1."}]
        reply = answer(original_post(url, {"messages": history, "context_id": ctx, "seed": 7}))
        assert reply["tool_calls"][0]["function"]["name"] == "lookup_order"
        stateless = answer(original_post(url, {"messages": history, "benchmark_context": CONTEXT, "tools": TOOLS}))
        assert stateless["tool_calls"][0]["function"]["name"] == "lookup_order"
        # a part without kind too (as the original's green decodes them)
        bare = {"jsonrpc": "2.0", "id": "1", "method": "message/send", "params": {"message": {
            "role": "user", "parts": [{"data": {"messages": history, "benchmark_context": CONTEXT, "tools": TOOLS}}]}}}
        assert "tool_calls" in answer(httpx.post(url, json=bare, timeout=30).json())
    # the original's user adapter against `pibench serve-user`
    sim = {"persona": "customer", "initial_user_message": "Hi, I want a refund.", "scripted_turns": ["Thanks ###STOP###"]}
    with serve(build_user_app("scripted")) as url:
        state = answer(original_post(url, {"init": True, "scenario": sim, "message_history": []}))["state"]
        said = answer(original_post(url, {"message": {"role": "assistant", "content": "Hello"}, "state": state}))
        assert said["message"] == {"role": "user", "content": "Hi, I want a refund."}
        assert answer(original_post(url, {"stop": True, "message": said["message"], "state": said["state"]})) == {
            "stopped": True}


# ---------------------------------------------------------------- tasks/cancel (14.12)


class SlowAgent(CautiousAgent):
    def generate(self, messages, state):
        time.sleep(1.5)
        return super().generate(messages, state)


def test_cancel_on_a_running_turn_is_an_a2a_error_not_an_internal_one():
    with serve(build_agent_app(SlowAgent, "http://127.0.0.1/")) as url:
        data = {"messages": [{"role": "user", "content": "Refund O-1"}], "benchmark_context": CONTEXT, "tools": TOOLS}
        started = post(url, ours(data), configuration={"blocking": False})["result"]
        assert started["status"]["state"] in ("submitted", "working")
        body = {"jsonrpc": "2.0", "id": "c", "method": "tasks/cancel", "params": {"id": started["id"]}}
        error = httpx.post(url + "/", json=body, timeout=30).json()["error"]
        assert error["code"] == -32002, error  # TaskNotCancelableError
        missing = {**body, "params": {"id": "no-such-task"}}
        assert httpx.post(url + "/", json=missing, timeout=30).json()["error"]["code"] == -32001  # not found
