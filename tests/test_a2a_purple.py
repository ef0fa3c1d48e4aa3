"""A remote agent under test over A2A (-T agent=a2a), on real loopback HTTP.

The same scripted agent (examples/local_demo's CautiousAgent) runs four ways: as a local protocol
object, as an Inspect model (`protocol/...`), and served over A2A in bootstrap and stateless
mode. They must score identically. Purple agents that answer badly (garbage, HTTP 4xx, JSON-RPC
errors, unusable replies) end their samples as agent_error with the reason; the run goes on.
Agents that cannot answer (nothing listening, 5xx, timeouts) are sample errors:
tests/test_a2a_hostile.py.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from types import SimpleNamespace

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from a2a_helpers import serve
from case_id_helpers import CASE_ID, assert_unnamed, generated_and_hand_written, reads
from conftest import MINI, NO_SAMPLE, SAMPLE, run_eval, sample_scores, shipped
from pibench_inspect.conversation.prompts import agent_case_id
from pibench_inspect.scenario.catalog import load_set
from pibench_inspect.a2a.agent_server import ProtocolAgentHost, build_agent_app
from pibench_inspect.a2a.client import read_card
from pibench_inspect.scoring.explain import check_list
from pibench_inspect.a2a.wire import BOOTSTRAP_URN, A2AError, parse_reply
from pibench_inspect.conversation.solver import AGENT_ERROR, TERMINATION
from pibench_inspect.local.adapter import load_agent
from pibench_inspect.conversation.seeds import derive_seed
from conftest import registered

DEMO = "examples.local_demo.demo_agent:CautiousAgent"


def outcome(log) -> dict:
    """What must agree between the ways in: score values, decision, tool calls, check results."""
    return {
        sid: (s.value, s.answer, s.metadata["termination"], s.metadata["tool_calls"],
              [(c["outcome_id"], c["passed"]) for c in check_list(s.metadata["checks"])])
        for sid, s in sample_scores(log).items()
    }


def demo_app(bootstrap: bool):
    return build_agent_app(lambda: load_agent(DEMO), "http://127.0.0.1/", bootstrap=bootstrap)


# ---------------------------------------------------------------- the ways in agree


@pytest.mark.slow
def test_three_ways_in_score_a_domain_identically():
    # the hand-written retail scenarios and the baseline variants of every retail family: each
    # procedure once (the other envelopes of a case differ only in the user's words)
    ids = sorted(sid for sid, e in shipped().entries.items() if e.domain.name == "retail"
                 and (e.scenario.meta.family is None or e.scenario.meta.envelope == "baseline"))
    local = run_eval(registered("retail", agent=DEMO, user="scripted", scenarios=ids))
    model = run_eval(registered("retail", user="scripted", scenarios=ids), model=f"protocol/{DEMO}")
    expected = outcome(local)
    n = len(ids)
    assert n >= 24 and len(expected) == n
    # not a degenerate comparison: the scores differ from scenario to scenario
    assert len({v[0]["partial_credit"] for v in expected.values()}) >= 5
    assert outcome(model) == expected
    for bootstrap in (True, False):
        app = demo_app(bootstrap)
        with serve(app) as url:
            remote = run_eval(registered("retail", agent="a2a", agent_url=url, user="scripted", scenarios=ids))
        assert remote.status == "success"
        assert outcome(remote) == expected, f"bootstrap={bootstrap}"
        # bootstrap mode opened one context per sample; stateless opened none
        assert len(app.state.host.sessions) == (n if bootstrap else 0)
        assert all(s.store.get(AGENT_ERROR) is None for s in remote.samples)


# ---------------------------------------------------------------- wire format


def recording_purple(reply, card: dict | None = None, delay: float = 0.0):
    """A raw purple: records each JSON-RPC request body, answers with reply(body) (a dict is sent
    as JSON, a str as text/plain, an int as that HTTP status)."""
    seen: list[dict] = []

    async def rpc(request: Request) -> Response:
        body = await request.json()
        seen.append({"body": body, "headers": dict(request.headers)})
        if delay:
            await asyncio.sleep(delay)
        out = await asyncio.to_thread(reply, body)  # replies may block (sleep, run a host)
        if isinstance(out, int):
            return PlainTextResponse("upstream exploded", status_code=out)
        if isinstance(out, str):
            return PlainTextResponse(out)
        return JSONResponse(out)

    async def card_route(request: Request) -> Response:
        return JSONResponse(card) if card is not None else PlainTextResponse("no card", status_code=404)

    app = Starlette(routes=[Route("/", rpc, methods=["POST"]),
                            Route("/.well-known/agent-card.json", card_route)])
    return app, seen


def result_message(body: dict, data: dict) -> dict:
    return {"jsonrpc": "2.0", "id": body["id"], "result": {
        "kind": "message", "messageId": "m", "role": "agent", "parts": [{"kind": "data", "data": data}]}}


def record_then_done(body: dict) -> dict:
    """Records ESCALATE once, then says a sentence (enough for the scripted user to finish)."""
    history = body["params"]["message"]["parts"][0]["data"].get("messages", [])
    if not any(m.get("tool_calls") for m in history):
        call = {"id": "c1", "type": "function",
                "function": {"name": "record_decision", "arguments": json.dumps({"decision": "ESCALATE", "order_id": "O-1", "clause_ids": [], "rationale": "needs review"})}}
        return result_message(body, {"tool_calls": [call]})
    return result_message(body, {"content": "A specialist will decide this."})


def test_stateless_wire_format_carries_context_tools_and_history_every_turn():
    app, seen = recording_purple(record_then_done)
    with serve(app) as url:
        log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", agent="a2a",
                                    agent_url=url, user="scripted"))
    assert log.status == "success" and sample_scores(log)["MINI_001_REFUND_OK"].answer == "ESCALATE"
    assert len(seen) >= 2
    for n, req in enumerate(seen):
        body = req["body"]
        assert body["jsonrpc"] == "2.0" and body["method"] == "message/send" and body["id"]
        message = body["params"]["message"]
        assert message["messageId"] and message["kind"] == "message" and message["role"] == "user"
        (part,) = message["parts"]
        assert part["kind"] == "data"
        data = part["data"]
        assert [c["kind"] for c in data["benchmark_context"]] == ["policy", "task"]
        assert {t["type"] for t in data["tools"]} == {"function"}
        assert "record_decision" in {t["function"]["name"] for t in data["tools"]}
        # the original's A2A path seeds from the scenario FILE's stem, not the id (reference 3.6)
        assert data["seed"] == derive_seed(42, "mini_001_refund_ok", 0) != derive_seed(42, "MINI_001_REFUND_OK", 0)
        assert "context_id" not in data
        assert data["messages"][0]["role"] == "user"  # history without the system prompt
    # the second turn carries the tool call and its result, in OpenAI format
    second = seen[1]["body"]["params"]["message"]["parts"][0]["data"]["messages"]
    assert [m["role"] for m in second][-2:] == ["assistant", "tool"]
    assert json.loads(second[-2]["tool_calls"][0]["function"]["arguments"])["decision"] == "ESCALATE"
    assert second[-1]["tool_call_id"] == "c1"


def test_bootstrap_sends_context_once_then_only_the_context_id():
    def reply(body):
        data = body["params"]["message"]["parts"][0]["data"]
        if data.get("bootstrap"):
            # the original's shape: a task whose status message carries the answer
            return {"jsonrpc": "2.0", "id": body["id"], "result": {
                "kind": "task", "id": "t0", "contextId": "ctx-9",
                "status": {"state": "completed", "message": {"kind": "message", "messageId": "b", "role": "agent",
                           "parts": [{"kind": "data", "data": {"bootstrapped": True, "context_id": "ctx-9"}}]}}}}
        return record_then_done(body)

    # the original's top-level `extensions` list of URNs is honoured as well as the spec's form
    app, seen = recording_purple(reply, card={"name": "p", "extensions": [BOOTSTRAP_URN]})
    with serve(app) as url:
        log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", agent="a2a",
                                    agent_url=url, user="scripted"))
    assert log.status == "success"
    first, *turns = [r["body"]["params"]["message"] for r in seen]
    boot = first["parts"][0]
    assert boot["metadata"] == {"extension": BOOTSTRAP_URN}
    assert boot["data"]["bootstrap"] is True and boot["data"]["run_id"] and boot["data"]["domain"] == "mini"
    assert [c["kind"] for c in boot["data"]["benchmark_context"]] == ["policy", "task"] and boot["data"]["tools"]
    assert turns
    for message in turns:
        data = message["parts"][0]["data"]
        assert data["context_id"] == "ctx-9" and message["contextId"] == "ctx-9"
        assert "benchmark_context" not in data and "tools" not in data and data["messages"]


def test_bootstrap_answer_without_context_id_falls_back_to_stateless_or_fails_when_required():
    def reply(body):
        data = body["params"]["message"]["parts"][0]["data"]
        if data.get("bootstrap"):
            return result_message(body, {"ok": True})
        return record_then_done(body)

    card = {"name": "p", "capabilities": {"extensions": [{"uri": BOOTSTRAP_URN}]}}
    app, seen = recording_purple(reply, card=card)
    with serve(app) as url:
        auto = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", agent="a2a",
                                     agent_url=url, user="scripted"))
        required = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", agent="a2a",
                                         agent_url=url, agent_mode="bootstrap", user="scripted"))
    assert sample_scores(auto)["MINI_001_REFUND_OK"].answer == "ESCALATE"
    assert "benchmark_context" in seen[1]["body"]["params"]["message"]["parts"][0]["data"]
    (s,) = required.samples
    assert s.store[TERMINATION] == "agent_error"
    assert "bootstrap answer lacks bootstrapped=true and a context_id" in s.store[AGENT_ERROR]


# ---------------------------------------------------------------- nothing names the case


def reading_purple(sids: list[str], bootstrap: bool):
    """A raw purple for shipped scenarios: reads what each scenario's reference solution reads
    (so tool results come back to it), then stops; bootstraps when its card says so."""
    plans = {shipped().entries[sid].scenario.user_simulation.initial_user_message[:60]: reads(shipped().entries[sid].scenario)
             for sid in sids}

    def reply(body):
        data = body["params"]["message"]["parts"][0]["data"]
        if data.get("bootstrap"):
            return result_message(body, {"bootstrapped": True, "context_id": f"ctx-{uuid.uuid4().hex}"})
        history = data["messages"]
        plan = next((c for key, c in plans.items() if key in history[0]["content"]), [])
        if plan and not any(m.get("tool_calls") for m in history):
            return result_message(body, {"tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                for i, c in enumerate(plan)]})
        return result_message(body, {"content": "###STOP###"})

    card = {"name": "p", "capabilities": {"extensions": [{"uri": BOOTSTRAP_URN}]}} if bootstrap else None
    return recording_purple(reply, card=card)


@pytest.mark.parametrize("bootstrap", [True, False])
def test_a2a_agent_is_given_an_opaque_case_id_and_nothing_that_names_the_case(bootstrap):
    sids = list(generated_and_hand_written("finra"))
    app, seen = reading_purple(sids, bootstrap)
    with serve(app) as url:
        log = run_eval(registered("finra", scenarios=sids, agent="a2a", agent_url=url, user="scripted"))
    assert log.status == "success" and all(s.store.get(AGENT_ERROR) is None for s in log.samples)
    datas = [r["body"]["params"]["message"]["parts"][0]["data"] for r in seen]
    contexts = [d["benchmark_context"] for d in datas if "benchmark_context" in d]
    assert len(contexts) == (2 if bootstrap else len(datas))
    assert any(m.get("role") == "tool" for d in datas for m in d.get("messages", []))  # results came back
    given = {node["metadata"]["scenario_id"] for c in contexts for node in c}
    expected = {agent_case_id(shipped().entries[sid].scenario, shipped().entries[sid].domain) for sid in sids}
    assert given == expected and all(CASE_ID.match(x) for x in given)
    # every byte the purple received: bodies (context, tools, history, run and context ids,
    # message metadata) and headers
    for sid in sids:
        assert_unnamed(json.dumps(seen), sid)


@pytest.mark.skipif(not SAMPLE.is_dir(), reason=NO_SAMPLE)
def test_an_original_pibench_folder_keeps_its_ids_for_a2a_agents():
    sid = sorted(load_set(SAMPLE).entries)[0]
    app, seen = recording_purple(lambda body: result_message(body, {"content": "###STOP###"}))
    with serve(app) as url:
        run_eval(registered(source=str(SAMPLE), scenarios=[sid], agent="a2a", agent_url=url, user="scripted"))
    assert {node["metadata"]["scenario_id"] for r in seen
            for node in r["body"]["params"]["message"]["parts"][0]["data"]["benchmark_context"]} == {sid}


# ---------------------------------------------------------------- broken purple agents


def broken_for_one(kind: str):
    """Answers like the demo agent, except for MINI_002's conversation, where it misbehaves."""
    host = ProtocolAgentHost(lambda: load_agent(DEMO))

    def reply(body):
        data = body["params"]["message"]["parts"][0]["data"]
        if "O-2" in data["messages"][0]["content"]:  # MINI_002's customer asks about order O-2
            if kind == "garbage":
                return "<html>definitely not JSON</html>"
            if kind == "http":
                return 404  # an answer (a 5xx is an outage: test_a2a_hostile.py)
            if kind == "rpc_error":
                return {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32000, "message": "model quota exhausted"}}
            if kind == "nameless_call":
                call = {"id": "x", "type": "function", "function": {"arguments": "{}"}}
                return result_message(body, {"tool_calls": [call]})
        answer = asyncio.run(host.handle(data, SimpleNamespace(context_id=None)))
        return result_message(body, answer)

    return reply


EXPECTED_ERRORS = {
    "garbage": "sent a reply that is not JSON",
    "http": "answered HTTP 404",
    "rpc_error": "returned JSON-RPC error -32000: model quota exhausted",
    # a call with no name is no tool call (arguments that are not JSON are a tool error the agent
    # sees, and an empty reply ends the run as agent_empty: tests/test_malformed_calls.py)
    "nameless_call": "tool_calls[0] has no function name",
}


@pytest.fixture(scope="module")
def local_demo():
    return outcome(run_eval(registered(source=str(MINI), agent=DEMO, user="scripted")))


@pytest.mark.parametrize("kind", sorted(EXPECTED_ERRORS))
def test_a_broken_reply_ends_that_sample_as_agent_error_and_the_run_goes_on(kind, local_demo):
    app, _ = recording_purple(broken_for_one(kind))
    with serve(app) as url:
        log = run_eval(registered(source=str(MINI), agent="a2a", agent_url=url, user="scripted",
                                    a2a_timeout=0.5 if kind == "slow" else 30))
    assert log.status == "success"
    scores = sample_scores(log)
    assert set(scores) == set(local_demo)  # every sample scored
    broken = scores["MINI_002_FINAL_SALE"]
    assert broken.metadata["termination"] == "agent_error"
    assert EXPECTED_ERRORS[kind] in broken.metadata["agent_error"]
    assert url in broken.metadata["agent_error"] or kind == "nameless_call"
    assert "agent error:" in broken.explanation
    # the other samples are untouched by the broken one
    for sid in ("MINI_001_REFUND_OK", "MINI_003_BIG_ORDER"):
        assert outcome(log)[sid] == local_demo[sid]


def test_task_arguments_for_remote_parties_are_checked():
    with pytest.raises(ValueError, match="-T agent=a2a needs -T agent_url"):
        registered(source=str(MINI), agent="a2a", user="scripted")
    with pytest.raises(ValueError, match="only used with -T agent=a2a"):
        registered(source=str(MINI), agent_url="http://127.0.0.1:1", user="scripted")
    with pytest.raises(ValueError, match="must start with http"):
        registered(source=str(MINI), agent="a2a", agent_url="127.0.0.1:1", user="scripted")
    with pytest.raises(ValueError, match="agent_mode"):
        registered(source=str(MINI), agent="a2a", agent_url="http://x", agent_mode="sometimes", user="scripted")


# ---------------------------------------------------------------- A2A 1.x


def v1_purple():
    """A purple that speaks only A2A 1.x JSON-RPC: SendMessage, the A2A-Version header, parts
    without `kind`, wrapped results, protobuf numbers (every number a double)."""
    host = ProtocolAgentHost(lambda: load_agent(DEMO))
    card = {"name": "v1", "supportedInterfaces": [{"url": "http://x/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"extensions": [{"uri": BOOTSTRAP_URN}]}}

    def as_doubles(v):
        if isinstance(v, bool) or not isinstance(v, (int, float, dict, list)):
            return v
        if isinstance(v, dict):
            return {k: as_doubles(x) for k, x in v.items()}
        if isinstance(v, list):
            return [as_doubles(x) for x in v]
        return float(v)

    def reply(body):
        if body.get("method") != "SendMessage":
            return {"jsonrpc": "2.0", "id": body.get("id"), "error": {"code": -32601, "message": "method not found"}}
        message = body["params"]["message"]
        assert message["role"] == "ROLE_USER" and message["messageId"] and "kind" not in message
        (part,) = message["parts"]
        assert "kind" not in part
        ctx = message.get("contextId") or uuid.uuid4().hex
        answer = asyncio.run(host.handle(part["data"], SimpleNamespace(context_id=ctx)))
        return {"jsonrpc": "2.0", "id": body["id"], "result": {"task": {
            "id": "t", "contextId": ctx, "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "a", "parts": [{"data": as_doubles(answer)}]}]}}}

    app, seen = recording_purple(reply, card=card)
    return app, seen, host


@pytest.mark.slow
def test_a_1x_agent_is_spoken_to_in_1x_when_its_card_says_so(local_demo):
    app, seen, host = v1_purple()
    with serve(app) as url:
        log = run_eval(registered(source=str(MINI), agent="a2a", agent_url=url, user="scripted"))
    assert outcome(log) == local_demo
    assert len(host.sessions) == 3  # bootstrapped over 1.x too
    assert all(r["headers"].get("a2a-version") == "1.0" for r in seen)


# ---------------------------------------------------------------- reply parsing units


def test_reply_parts_are_found_wherever_a_peer_puts_them():
    part = {"kind": "text", "text": "hi"}
    direct = {"jsonrpc": "2.0", "id": 1, "result": {"kind": "message", "role": "agent", "parts": [part]}}
    artifact = {"jsonrpc": "2.0", "id": 1, "result": {"kind": "task", "id": "t", "status": {"state": "completed"},
                                                       "artifacts": [{"parts": [part]}]}}
    status = {"jsonrpc": "2.0", "id": 1, "result": {"id": "t", "status": {"state": "completed",
                                                                           "message": {"parts": [part]}}}}
    legacy = {"jsonrpc": "2.0", "id": 1, "result": {"message": {"parts": [part]}, "status": {"state": "completed"}}}
    for body in (direct, artifact, status, legacy):
        assert parse_reply(body, "u").parts[0]["text"] == "hi"
    v1 = {"jsonrpc": "2.0", "id": 1, "result": {"message": {"role": "ROLE_AGENT", "parts": [{"data": {"n": 3.0, "x": 2.5}}]}}}
    assert parse_reply(v1, "u", v1=True).parts[0]["data"] == {"n": 3, "x": 2.5}


@pytest.mark.parametrize("body, message", [
    ({"id": 1, "result": {}}, "did not answer with a JSON-RPC 2.0 response"),
    ({"jsonrpc": "2.0", "id": 1, "result": "yes"}, "without a result object"),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "messageId missing"}}, "JSON-RPC error -32602: messageId missing"),
    ({"jsonrpc": "2.0", "id": 1, "result": {"kind": "task", "status": {"state": "failed", "message": {"parts": [
        {"kind": "text", "text": "unknown context_id"}]}}}}, "ended the task as failed: unknown context_id"),
])
def test_unusable_replies_raise_a2a_errors_naming_the_problem(body, message):
    with pytest.raises(A2AError, match=message):
        parse_reply(body, "http://purple")


def test_card_reading():
    assert not read_card({"name": "x"}).bootstrap and read_card({"name": "x"}).dialect.version == "0.3"
    assert read_card({"extensions": [BOOTSTRAP_URN]}).bootstrap
    assert read_card({"capabilities": {"extensions": [{"uri": BOOTSTRAP_URN}]}}).bootstrap
    both = {"supportedInterfaces": [{"protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                                    {"protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}
    assert read_card(both).dialect.version == "0.3"  # the AgentBeats dialect when both are offered
    assert read_card({"protocolVersion": "1.0"}).dialect.version == "1.0"
