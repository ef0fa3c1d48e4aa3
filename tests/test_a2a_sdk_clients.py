"""Both generations of official a2a-sdk clients against our three servers (green, serve-agent,
serve-user) on real loopback HTTP (issue 30).

* v0.3: the installed a2a-sdk 0.3 client itself (ClientFactory over our agent card).
* 1.x: a2a-sdk 1.x cannot be installed beside 0.3 (both are the `a2a` package), so these tests
  send exactly the JSON-RPC a2a-sdk 1.3.0's client sends to our servers, captured from the real
  client (a2a_helpers.py says how): v0.3 JSON-RPC, `A2A-Version: 0.3`, and every number a double,
  also in state our servers returned and the client hands back.

Numbers are read by meaning (pibench_inspect/a2a/numbers.py): an integral double is the integer
(`seed: 42.0` derives exactly the seeds of 42), a fraction where a whole number is needed is an
error naming the field, a boolean is never a number.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import DataPart, Message, Part, Role, Task
from a2a_agents import SeedEcho
from a2a_helpers import (
    as_doubles,
    sdk_1x_post,
    sdk_1x_request,
    sdk_1x_stream,
    sdk_1x_task_request,
    serve,
    serve_built,
    task_data,
)
from conftest import MINI
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from examples.local_demo.demo_agent import CautiousAgent
from pibench_inspect.a2a.agent_server import build_agent_app
from pibench_inspect.a2a.client import A2AClient, read_card
from pibench_inspect.a2a.green.executor import RESULTS
from pibench_inspect.a2a.green.plan import ServerSettings, make_plan
from pibench_inspect.a2a.green.request import parse_request
from pibench_inspect.a2a.green.server import build_green_app
from pibench_inspect.a2a.numbers import NotWholeNumber, integral_numbers, whole_number
from pibench_inspect.a2a.user_server import build_app as build_user_app
from pibench_inspect.a2a.wire import BOOTSTRAP_URN
from pibench_inspect.conversation.seeds import derive_seed

KEYLESS = {"user": "scripted", "judge": "off"}
# every number field of the config, as an a2a-sdk 1.x client carries it: doubles
NUMERIC = {"num_trials": 1, "concurrency": 1, "max_steps": 40, "seed": 42, "max_user_turns": 8,
           "retry_failed": 0, "a2a_timeout": 60}
CONTEXT = [{"kind": "policy", "content": "Refunds only within 30 days.", "metadata": {"scenario_id": "X"}}]
TOOLS = [{"type": "function", "function": {
    "name": "lookup_order", "description": "Look up an order",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"},
                                                    "limit": {"type": "integer", "minimum": 1}},
                   "required": ["order_id"]}}}]
SIM = {"persona": "a customer", "initial_user_message": "I want a refund", "pressure_script": ["Please, now."],
       "max_turns": 3}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """Each server's card names its real URL: the SDK clients post where the card says."""
    logs = tmp_path_factory.mktemp("green-logs")
    settings = ServerSettings(concurrency=2, heartbeat=0.5, scenarios_dir=MINI, log_dir=logs)
    apps: dict[str, Any] = {}

    def built(name: str, make: Any) -> Any:
        def build(url: str) -> Any:
            apps[name] = make(url)
            return apps[name]
        return serve_built(build)

    with (built("purple", lambda url: build_agent_app(CautiousAgent, url)) as p,
          built("echo", lambda url: build_agent_app(SeedEcho, url)) as e,
          built("user", lambda url: build_user_app("scripted", url=url)) as u,
          built("green", lambda url: build_green_app(settings, url)) as g):
        yield {"purple": p, "echo": e, "user": u, "green": g, "app": apps["green"]}


# ---------------------------------------------------------------- numbers by meaning


def test_whole_numbers_by_meaning():
    assert whole_number(40, "f") == 40 and whole_number(40.0, "f") == 40
    assert type(whole_number(42.0, "f")) is int
    assert whole_number(-3.0, "f") == -3
    for bad, said in ((40.5, "got 40.5"), (True, "got the boolean true"), (False, "got the boolean false"),
                      ("40", "got str '40'"), (None, "got null"), (float("nan"), "got nan"),
                      (float("inf"), "got inf")):
        with pytest.raises(NotWholeNumber) as err:
            whole_number(bad, "config.max_steps")
        assert str(err.value).startswith("config.max_steps: expected a whole number") and said in str(err.value)
    assert integral_numbers({"a": [1.0, 2.5, True], "b": {"c": 3.0}}) == {"a": [1, 2.5, True], "b": {"c": 3}}
    assert type(integral_numbers({"c": 3.0})["c"]) is int


def test_every_numeric_config_field_is_read_by_meaning():
    request = parse_request({"participants": {"agent": {"url": "http://127.0.0.1:1", "id": 7.0}},
                             "agentbeats_ids": {"agent": 9.0}, "config": {**KEYLESS, **as_doubles(NUMERIC)}})
    config = request.config
    for key, value in NUMERIC.items():
        assert getattr(config, key) == value, key
        if key != "a2a_timeout":
            assert type(getattr(config, key)) is int, key
    assert request.agent_id == "7"  # an id sent as 7.0 is "7", as 7 would be
    # the seed of 42.0 is the seed of 42: the task arguments are identical
    ints = parse_request({"participants": {"agent": "http://127.0.0.1:1"}, "config": {**KEYLESS, **NUMERIC}})
    doubles = parse_request({"participants": {"agent": "http://127.0.0.1:1"},
                             "config": {**KEYLESS, **as_doubles(NUMERIC)}})
    settings = ServerSettings(scenarios_dir=MINI)
    a, b = make_plan(ints, settings), make_plan(doubles, settings)
    assert json.dumps(a.task_args) == json.dumps(b.task_args) and a.task_args["user_seed"] == 42
    assert (a.epochs, a.max_samples, a.retry_on_error) == (b.epochs, b.max_samples, b.retry_on_error)


# ---------------------------------------------------------------- the green server


def _assessment(servers: dict[str, Any], **config: Any) -> dict[str, Any]:
    return {"participants": {"agent": servers["purple"]},
            "config": {**KEYLESS, "scenarios": ["MINI_001_REFUND_OK", "MINI_002_FINAL_SALE"], **config}}


def _payload(task: dict[str, Any]) -> dict[str, Any]:
    assert task["status"]["state"] == "completed", task["status"]
    (artifact,) = [a for a in task["artifacts"] if a["name"] == RESULTS]
    return artifact["parts"][0]["data"]


@pytest.mark.slow
def test_an_sdk_1x_client_with_numeric_config_completes_an_assessment(servers):
    request = sdk_1x_request(_assessment(servers, **NUMERIC))
    assert request["params"]["message"]["parts"][0]["data"]["config"]["max_steps"] == 40.0  # as it travels
    answer = sdk_1x_post(servers["green"], request)
    assert "error" not in answer, answer
    payload = _payload(answer["result"])
    details = payload["results"][0]["scenario_details"]
    assert [d["scenario_id"] for d in details] == ["MINI_001_REFUND_OK", "MINI_002_FINAL_SALE"]
    for d in details:
        # derived from 42, not from 42.0 (the original derives another seed from the float)
        assert d["seed"] == derive_seed(42, d["scenario_id"].lower(), 0) and type(d["seed"]) is int
        assert type(d["trial"]) is int
    # the same task, as the 1.x client reads it back with tasks/get
    got = sdk_1x_post(servers["green"], sdk_1x_task_request("tasks/get", answer["result"]["id"]))
    assert got["result"]["status"]["state"] == "completed"
    assert _payload(got["result"])["results"][0]["scenario_details"] == details
    refused = sdk_1x_post(servers["green"], sdk_1x_task_request("tasks/cancel", answer["result"]["id"]))
    assert refused["error"]["code"] == -32002  # TaskNotCancelableError: it has ended


@pytest.mark.parametrize("config, field, said", [
    ({"max_steps": 40.5}, "config.max_steps", "expected a whole number (got 40.5)"),
    ({"num_trials": 1.5}, "config.num_trials", "expected a whole number (got 1.5)"),
    ({"seed": 42.25}, "config.seed", "expected a whole number (got 42.25)"),
    ({"retry_failed": 0.5}, "config.retry_failed", "expected a whole number (got 0.5)"),
    ({"max_user_turns": True}, "config.max_user_turns", "not a boolean (got true)"),
    ({"concurrency": 2.5}, "config.concurrency", "expected a whole number (got 2.5)"),
    ({"max_steps": 1e300}, "config.max_steps", "between -2^63 and 2^63-1 (got 1e+300)"),
])
def test_a_non_integral_number_is_an_invalid_params_error_naming_the_field(servers, config, field, said):
    # sent as the 1.x client sends it; the fraction is a double either way
    request = sdk_1x_request(_assessment(servers))
    request["params"]["message"]["parts"][0]["data"]["config"].update(config)
    answer = sdk_1x_post(servers["green"], request)
    assert "result" not in answer, answer
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].startswith(f"{field}: ") and said in answer["error"]["message"], answer
    events = sdk_1x_stream(servers["green"], {**request, "method": "message/stream"})
    assert len(events) == 1 and events[0]["error"]["code"] == -32602
    assert events[0]["error"]["message"].startswith(f"{field}: ")
    assert not servers["app"].state.executor.running


@pytest.mark.slow
def test_an_sdk_03_client_runs_an_assessment_and_its_seeds_equal_the_1x_clients(servers):
    async def run() -> list[Any]:
        async with httpx.AsyncClient(timeout=120) as http:
            card = await A2ACardResolver(http, servers["green"]).get_agent_card()
            assert card.capabilities.streaming  # so the client streams (message/stream)
            assert card.url == servers["green"] + "/"
            client = await ClientFactory.connect(card, client_config=ClientConfig(httpx_client=http))
            message = Message(role=Role.user, message_id=uuid.uuid4().hex,
                              parts=[Part(root=DataPart(data=_assessment(servers, **NUMERIC)))])
            return [event async for event in client.send_message(message)]

    events = asyncio.run(run())
    task = events[-1][0]
    assert isinstance(task, Task) and task.status.state.value == "completed"
    payload = _payload(task.model_dump(mode="json", by_alias=True, exclude_none=True))
    seeds = {d["scenario_id"]: d["seed"] for d in payload["results"][0]["scenario_details"]}
    doubles = sdk_1x_post(servers["green"], sdk_1x_request(_assessment(servers, **NUMERIC)))
    assert seeds == {d["scenario_id"]: d["seed"] for d in _payload(doubles["result"])["results"][0]["scenario_details"]}
    assert seeds["MINI_001_REFUND_OK"] == derive_seed(42, "mini_001_refund_ok", 0)


# ---------------------------------------------------------------- the purple agent server (serve-agent)


def test_an_sdk_1x_client_seeds_a_served_agent_with_the_integer(servers):
    url = servers["echo"]
    boot = sdk_1x_post(url, sdk_1x_request({"bootstrap": True, "benchmark_context": CONTEXT, "tools": TOOLS,
                                            "run_id": "r1", "domain": "retail"}, metadata={"extension": BOOTSTRAP_URN}))
    context_id = task_data(boot["result"])["context_id"]
    messages = [{"role": "user", "content": "I want a refund for order 7."}]
    turn = sdk_1x_post(url, sdk_1x_request({"messages": messages, "context_id": context_id, "seed": 42}))
    assert task_data(turn["result"]) == {"content": "seed=42 (int)"}
    stateless = sdk_1x_post(url, sdk_1x_request({"messages": messages, "benchmark_context": CONTEXT,
                                                 "tools": TOOLS, "seed": 42}))
    assert task_data(stateless["result"]) == {"content": "seed=42 (int)"}
    for bad, said in ((42.5, "got 42.5"), (True, "got the boolean true"), ("42", "got str '42'")):
        data = {"messages": messages, "benchmark_context": CONTEXT, "tools": TOOLS}
        request = sdk_1x_request(data)
        request["params"]["message"]["parts"][0]["data"]["seed"] = bad
        refused = task_data(sdk_1x_post(url, request)["result"])
        assert refused == {"failed": f"'seed': expected a whole number, {said}"}


def test_an_sdk_03_client_talks_to_a_served_agent(servers):
    async def run() -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, servers["echo"]).get_agent_card()
            assert [e.uri for e in card.capabilities.extensions or []] == [BOOTSTRAP_URN]
            client = await ClientFactory.connect(card, client_config=ClientConfig(httpx_client=http, streaming=False))
            data = {"messages": [{"role": "user", "content": "hi"}], "benchmark_context": CONTEXT, "tools": TOOLS,
                    "seed": 7}
            message = Message(role=Role.user, message_id=uuid.uuid4().hex, parts=[Part(root=DataPart(data=data))])
            return [event async for event in client.send_message(message)]

    (event,) = asyncio.run(run())
    task = event[0]
    assert task.status.state.value == "completed"
    assert task.status.message.parts[0].root.data == {"content": "seed=7 (int)"}


# ---------------------------------------------------------------- the user server (serve-user)


def test_an_sdk_1x_client_plays_a_whole_conversation_with_the_user_server(servers):
    """The 1.x client hands back the state it was given, its numbers turned into doubles
    (`turn: 0.0`); before issue 30 the first generate was refused."""
    url = servers["user"]
    init = task_data(sdk_1x_post(url, sdk_1x_request({"init": True, "scenario": SIM, "message_history": [],
                                                       "seed": 42}))["result"])
    state = as_doubles(init["state"])  # what the 1.x client decoded from our reply
    lines = []
    for said in ("Hello, how can I help?", "Let me check.", "One moment.", "Anything else?"):
        reply = task_data(sdk_1x_post(url, sdk_1x_request({"message": {"role": "assistant", "content": said},
                                                            "state": state, "seed": 42}))["result"])
        assert "failed" not in reply, reply
        lines.append(reply["message"]["content"])
        state = as_doubles(reply["state"])
    assert lines[:2] == ["I want a refund", "Please, now."] and lines[2].endswith("###STOP###")
    assert task_data(sdk_1x_post(url, sdk_1x_request({"stop": True, "message": {"role": "user", "content": "bye"},
                                                       "state": state}))["result"]) == {"stopped": True}
    for field, value, said in (("turn", 0.5, "'state.turn': expected a whole number, got 0.5"),
                               ("turn", True, "'state.turn': expected a whole number, got the boolean true"),
                               ("seed", 4.2, "'seed': expected a whole number, got 4.2")):
        data = {"message": {"role": "assistant", "content": "hi"}, "state": as_doubles(init["state"])}
        request = sdk_1x_request(data)
        target = request["params"]["message"]["parts"][0]["data"]
        (target["state"] if field == "turn" else target)[field] = value
        assert task_data(sdk_1x_post(url, request)["result"]) == {"failed": f"generate: {said}"}
    bad_sim = sdk_1x_request({"init": True, "scenario": SIM})
    bad_sim["params"]["message"]["parts"][0]["data"]["scenario"]["max_turns"] = 2.5
    assert task_data(sdk_1x_post(url, bad_sim)["result"]) == {
        "failed": "init: 'scenario'.max_turns: expected a whole number, got 2.5"}


def test_an_sdk_03_client_talks_to_the_user_server(servers):
    async def run() -> list[Any]:
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, servers["user"]).get_agent_card()
            client = await ClientFactory.connect(card, client_config=ClientConfig(httpx_client=http, streaming=False))

            async def send(data: dict[str, Any]) -> dict[str, Any]:
                message = Message(role=Role.user, message_id=uuid.uuid4().hex, parts=[Part(root=DataPart(data=data))])
                (event,) = [e async for e in client.send_message(message)]
                return event[0].status.message.parts[0].root.data

            init = await send({"init": True, "scenario": SIM, "message_history": [], "seed": 42})
            first = await send({"message": {"role": "assistant", "content": "Hello"}, "state": init["state"]})
            return [init, first]

    init, first = asyncio.run(run())
    assert init["state"]["turn"] == 0
    assert first["message"] == {"role": "user", "content": "I want a refund"} and first["state"]["turn"] == 1


# ---------------------------------------------------------------- our client, a peer on a2a-sdk 1.x


def test_our_client_reads_integers_back_from_a_1x_sdk_peer_speaking_v03():
    """A purple agent on a2a-sdk 1.x with its v0.3 compat on lists both interfaces on its card
    (this is the card such a server serves, captured), so we speak v0.3 to it; its data parts
    still went through protobuf, so a tool argument 2 arrives as 2.0."""
    card = {"name": "echo-v1", "description": "echo", "version": "1.0.0",
            "supportedInterfaces": [{"url": "http://x/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                                    {"url": "http://x/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}],
            "capabilities": {"streaming": False}, "defaultInputModes": ["application/json"],
            "defaultOutputModes": ["application/json"], "skills": [],
            "preferredTransport": "JSONRPC", "protocolVersion": "0.3", "url": "http://x/"}
    info = read_card(card)
    assert info.dialect.version == "0.3" and info.doubles
    assert not read_card({"name": "ours", "protocolVersion": "0.3.0", "url": "http://x/"}).doubles

    async def rpc(request):  # noqa: ANN001
        body = await request.json()
        data = {"tool_calls": [{"id": "c1", "name": "lookup_order", "arguments": {"quantity": 2.0, "price": 2.5}}]}
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": {
            "kind": "task", "id": "t", "contextId": "c", "status": {"state": "completed", "message": {
                "kind": "message", "role": "agent", "messageId": "m", "parts": [{"kind": "data", "data": data}]}}}})

    app = Starlette(routes=[Route("/.well-known/agent-card.json", lambda r: JSONResponse(card)),
                            Route("/", rpc, methods=["POST"])])

    async def send(url: str) -> dict[str, Any]:
        client = A2AClient(url, timeout=10)
        try:
            await client.card()
            reply = await client.send([{"kind": "data", "data": {"messages": []}}])
        finally:
            await client.aclose()
        return reply.parts[0]["data"]["tool_calls"][0]["arguments"]

    with serve(app) as url:
        arguments = asyncio.run(send(url))
    assert arguments == {"quantity": 2, "price": 2.5} and type(arguments["quantity"]) is int


# ---------------------------------------------------------------- the real a2a-sdk 1.x client
#
# Opt-in: a2a-sdk 1.x cannot live in this environment, so these run tests/a2a_sdk1x_client.py
# with another interpreter that has it, e.g.
#   python3 -m venv /tmp/a2a1 && /tmp/a2a1/bin/pip install "a2a-sdk[http-server]>=1,<2"
#   PIBENCH_A2A_SDK1_PYTHON=/tmp/a2a1/bin/python pytest tests/test_a2a_sdk_clients.py
# They check on the real client what the captured shapes above stand for.

SDK1_PYTHON = os.environ.get("PIBENCH_A2A_SDK1_PYTHON")
needs_sdk1 = pytest.mark.skipif(not SDK1_PYTHON, reason="PIBENCH_A2A_SDK1_PYTHON (a Python with a2a-sdk 1.x) is not set")


def sdk1(mode: str, url: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    script = Path(__file__).with_name("a2a_sdk1x_client.py")
    done = subprocess.run([SDK1_PYTHON, str(script), mode, url, json.dumps(data)], capture_output=True,  # type: ignore[list-item]
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def sdk1_data(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The data part of the (one) completed task's status message, as the 1.x client read it."""
    task = events[-1]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    return task["status"]["message"]["parts"][0]["data"]


@needs_sdk1
@pytest.mark.parametrize("mode", ["send", "stream"])
def test_the_real_sdk_1x_client_completes_an_assessment_with_numeric_config(servers, mode):
    events = sdk1(mode, servers["green"], _assessment(servers, **NUMERIC))
    assert "error" not in events[-1], events[-1]
    final = events[-1].get("task") or events[-1].get("statusUpdate") or {}
    state = final.get("status", {}).get("state")
    assert state == "TASK_STATE_COMPLETED", events[-1]
    artifacts = [e["task"] for e in events if "task" in e] + [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert any(a.get("name") == RESULTS for t in artifacts for a in t.get("artifacts", [t.get("artifact", {})]))
    bad = sdk1(mode, servers["green"], _assessment(servers, max_steps=40.5))
    assert bad[-1]["error"]["type"] == "InvalidParamsError"
    assert bad[-1]["error"]["message"].startswith("config.max_steps: expected a whole number (got 40.5)")


@needs_sdk1
def test_the_real_sdk_1x_client_with_the_purple_and_user_servers(servers):
    reply = sdk1_data(sdk1("send", servers["echo"], {"messages": [{"role": "user", "content": "hi"}],
                                                     "benchmark_context": CONTEXT, "tools": TOOLS, "seed": 42}))
    assert reply == {"content": "seed=42 (int)"}
    init = sdk1_data(sdk1("send", servers["user"], {"init": True, "scenario": SIM, "message_history": [], "seed": 42}))
    state, lines = init["state"], []
    for said in ("Hello", "Let me check."):
        out = sdk1_data(sdk1("send", servers["user"], {"message": {"role": "assistant", "content": said},
                                                       "state": state, "seed": 42}))
        state = out["state"]  # handed back as the 1.x client decoded it: turn 1.0, 2.0
        lines.append(out["message"]["content"])
    assert lines == ["I want a refund", "Please, now."] and state["turn"] == 2
