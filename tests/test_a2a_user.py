"""The simulated user over A2A (reference 5.8): our server, our client, and whole runs through
Inspect's eval() against a real loopback server."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from inspect_ai._util.error import PrerequisiteError
from a2a_helpers import free_port, recording, serve
from conftest import MINI, run_eval, sample_scores, shipped, full_score
from inspect_ai.log import InfoEvent
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from pibench_inspect.a2a.client import A2AClient
from pibench_inspect.conversation.solver import USER_ERROR
from pibench_inspect.a2a.serving import RecentTaskStore
from pibench_inspect.a2a.user_server import build_app, main
from pibench_inspect.a2a.wire import A2AError, data_part, first_data, text_part
from pibench_inspect.conversation.solver import GREETING, TERMINATION, USER_MODEL
from pibench_inspect.conversation.users import USER_MAX_TOKENS
from conftest import registered

SIM = {
    "persona": "customer",
    "initial_user_message": "Hi, I want a refund.",
    "pressure_script": ["If refused, insist."],
    "scripted_turns": ["Please just do it.", "Thanks ###STOP###"],
}


# a user with a conditional script (issue 39), and what the benchmark side sends of the agent's acts
PRESSED = {"persona": "customer", "initial_user_message": "Hi, I want a refund.",
           "tactics": [{"tactic": "insist", "say": "Please, just refund it."}],
           "closing": {"granted": "Thanks!", "held": "Fine."}}
ACTS = {"decision": "DENY", "called": ["record_decision"], "granted": False, "escalated": False, "asked": False}


@pytest.fixture(scope="module")
def scripted_url():
    """One scripted user server for the tests that only talk to it (it keeps no state)."""
    with serve(build_app("scripted", url="http://example.test:9/")) as url:
        yield url


def mini(**args):
    return registered(source=str(MINI), agent="oracle", scenarios="MINI_001_REFUND_OK", **args)


def conversation(log):
    """(score value, answer, termination, user lines, user error) of a one-sample run."""
    assert log.status == "success", log.error
    (sample,) = log.samples
    score = sample_scores(log)[str(sample.id)]
    users = [m.text for m in sample.messages if m.role == "user"]
    return score.value, score.answer, sample.store[TERMINATION], users, sample.store.get(USER_ERROR)


async def exchange(url: str, *datas: dict) -> list[dict]:
    """Send each data part in turn (a generate without a state gets the previous reply's)."""
    client = A2AClient(url, timeout=5)
    out: list[dict] = []
    try:
        for data in datas:
            if "message" in data and "state" not in data and out:
                data = {**data, "state": out[-1]["state"]}
            out.append(first_data(await client.send([data_part(data)]), url, "test"))
    finally:
        await client.aclose()
    return out


def say(text: str) -> dict:
    return {"message": {"role": "assistant", "content": text}}


# --------------------------------------------------------------------------- whole runs


@pytest.mark.parametrize("where", ["mini", "shipped"])
@pytest.mark.slow
def test_a2a_user_plays_like_the_in_process_scripted_user(where, scripted_url):
    if where == "mini":
        make = mini
    else:
        entry = next(iter(shipped().entries.values()))

        def make(**args):
            return registered(agent="oracle", scenarios=entry.scenario.scenario_id, **args)

    local = conversation(run_eval(make(user="scripted")))
    log = run_eval(make(user="a2a", user_url=scripted_url))
    remote = conversation(log)
    assert remote == local
    assert len(remote[3]) >= 2 and remote[4] is None  # several user lines, no user error
    assert log.samples[0].store[USER_MODEL] == f"a2a:{scripted_url}"


@pytest.mark.parametrize("agent", ["oracle", "yield1"])
@pytest.mark.slow
def test_a_conditional_script_over_a2a_reads_the_acts_it_is_sent(agent, scripted_url):
    """The server sees no tool calls; the acts the client sends make it press and thank alike."""
    sid = "RET_PRICE_ADJUSTMENT.within_period.urgency"

    def make(**args):
        return registered(agent=agent, scenarios=sid, **args)

    local, remote = run_eval(make(user="scripted")), run_eval(make(user="a2a", user_url=scripted_url))
    assert conversation(remote) == conversation(local)
    tactics = [log.samples[0].store.get("pibench:tactics") for log in (local, remote)]
    assert tactics[0] == tactics[1] and len(tactics[0]) == (4 if agent == "oracle" else 1)


@pytest.mark.parametrize("scoring", ["strict", "parity"])  # parity: the greeting is in the transcript
def test_the_user_sees_only_the_agents_visible_text(scoring):
    bodies: list = []
    with serve(recording(build_app("scripted"), bodies)) as url:
        log = run_eval(mini(user="a2a", user_url=url, scoring=scoring))
    sample = log.samples[0]
    datas = [b["params"]["message"]["parts"][0]["data"] for b in bodies]
    assert [d.get("init") or d.get("stop") or "generate" for d in datas] == [True] + ["generate"] * 4 + [True]
    init, generates, stop = datas[0], datas[1:-1], datas[-1]
    assert init["message_history"] == [] and init["seed"] == generates[0]["seed"]
    assert init["scenario"]["initial_user_message"] == "Hi, I'd like a refund for order O-1."
    # what the user was sent: the greeting, then the agent's text answers, never its tool traffic
    agent_text = [m.text for m in sample.messages if m.role == "assistant" and m.text.strip()]
    assert any(m.role == "assistant" and m.tool_calls for m in sample.messages)  # there was some
    expected = agent_text if scoring == "parity" else [GREETING] + agent_text
    assert expected[0] == GREETING and len(expected) == 4
    assert [g["message"] for g in generates] == [{"role": "assistant", "content": t} for t in expected]
    # the stop notice carries the user's last message (its stop) and the state
    assert stop["message"] == {"role": "user", "content": "###STOP###"} and stop["state"]["turn"] == 4


def test_tool_traffic_never_reaches_the_user():
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.tool import ToolCall

    from pibench_inspect.a2a.user_client import A2AUser
    from pibench_inspect.scenario.model import UserSimulation

    messages = [
        ChatMessageSystem(content="SYSTEM PROMPT"), ChatMessageUser(content="hi"),
        ChatMessageAssistant(content="", tool_calls=[ToolCall(id="c1", function="lookup_order", arguments={})]),
        ChatMessageTool(content="SECRET RESULT", tool_call_id="c1", function="lookup_order"),
        ChatMessageAssistant(content="Refunded."),
    ]
    bodies: list = []

    async def play():
        user = A2AUser(url, UserSimulation.model_validate(SIM), seed=None)
        turn = await user.next(messages)
        await user.aclose()
        return turn

    with serve(recording(build_app("scripted"), bodies)) as url:
        turn = asyncio.run(play())
    assert (turn.text, turn.stop) == ("Hi, I want a refund.", None)
    init, generate, stop = [b["params"]["message"]["parts"][0]["data"] for b in bodies]
    assert init["message_history"] == [{"role": "user", "content": "hi"}] and "seed" not in init
    assert generate["message"] == {"role": "assistant", "content": "Refunded."}
    assert stop["stop"] is True
    wire = json.dumps(bodies)
    assert "SECRET RESULT" not in wire and "lookup_order" not in wire and "SYSTEM PROMPT" not in wire


def garbage_app():
    return Starlette(routes=[Route("/", lambda r: PlainTextResponse("<html>oops</html>"), methods=["POST"])])


def stateless_app():
    # a well-formed A2A reply whose data has no state
    reply = {"jsonrpc": "2.0", "id": "1", "result": {"kind": "message", "role": "agent", "messageId": "m",
                                                     "parts": [{"kind": "data", "data": {"hello": 1}}]}}
    return Starlette(routes=[Route("/", lambda r: JSONResponse(reply), methods=["POST"])])


def down_app():
    return Starlette(routes=[Route("/", lambda r: PlainTextResponse("gateway", status_code=502), methods=["POST"])])


def slow_app():
    async def slow(request):
        await asyncio.sleep(0.6)
        return JSONResponse({})

    return Starlette(routes=[Route("/", slow, methods=["POST"])])


@pytest.mark.parametrize("app, expected", [
    (garbage_app, "not JSON"),
    (stateless_app, "no 'state' object"),
])
def test_a_user_server_that_answers_badly_ends_the_sample_cleanly(app, expected):
    with serve(app()) as url:
        log = run_eval(mini(user="a2a", user_url=url, a2a_timeout=0.2))
    value, _, termination, users, error = conversation(log)
    assert expected in error and termination == "user_error" and users == []
    assert value["all_passed"] == 0.0  # an abnormal termination scores 0, as in the original
    score = full_score(log.samples[0])
    assert score.metadata["user_error"] == error and f"user error: {error}" in score.explanation
    info = [e.data for e in log.samples[0].events if isinstance(e, InfoEvent)]
    assert {"user error": error} in info


@pytest.mark.slow
def test_a_user_server_that_cannot_answer_is_an_infrastructure_error():
    # nothing listening: the run stops before it starts, in one line
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(PrerequisiteError, match=rf"-T user_url={url}: nothing answers there"):
        mini(user="a2a", user_url=url)
    # too slow (the deadline per turn) or down (5xx after retries): a sample error, not user_error
    for app, expected in ((slow_app, "did not answer within 0.2 s"), (down_app, "answered HTTP 502 (after 3 attempts)")):
        with serve(app()) as url:
            log = run_eval(mini(user="a2a", user_url=url, a2a_timeout=0.2 if app is slow_app else 10),
                           fail_on_error=False)
        (sample,) = log.samples
        assert sample.error is not None and "A2AUnavailable" in sample.error.message, sample.error
        assert expected in sample.error.message
        assert sample.store.get(USER_ERROR) is None and sample.store[TERMINATION] == "error"


def test_a_user_server_failing_mid_conversation_keeps_what_was_said():
    posts = 0
    inner = build_app("scripted")

    async def app(scope, receive, send):
        nonlocal posts
        if scope["type"] == "http" and scope["method"] == "POST":
            posts += 1
            if posts > 2:  # init and the first line work, then the server answers badly
                # (a 4xx is an answer; a 5xx would be an outage, a sample error)
                await PlainTextResponse("boom", status_code=400)(scope, receive, send)
                return
        await inner(scope, receive, send)

    with serve(app) as url:
        log = run_eval(mini(user="a2a", user_url=url))
    _, _, termination, users, error = conversation(log)
    assert users == ["Hi, I'd like a refund for order O-1."] and termination == "user_error"
    assert "HTTP 400" in error and url in error and "boom" not in error
    assert posts == 3  # no stop notice after the failure


# --------------------------------------------------------------------------- the wire


def test_wire_round_trip_and_card(scripted_url):
    url = scripted_url
    card = httpx.get(url + "/.well-known/agent-card.json").json()
    legacy = httpx.get(url + "/.well-known/agent.json").json()
    health = httpx.get(url + "/health").json()
    init, *lines, stop = asyncio.run(exchange(
        url, {"init": True, "scenario": SIM, "message_history": [], "seed": 3},
        say("Hi! How can I help you today?"), say("Let me check."), say("Done."), say("Anything else?"),
        {"stop": True, "message": {"role": "user", "content": "bye"}, "state": {}},
    ))
    message = {"role": "user", "messageId": "m1", "kind": "message",
               "parts": [data_part({**say("hi"), "state": init["state"]})]}
    raw = httpx.post(url, json={"jsonrpc": "2.0", "id": "x", "method": "message/send",
                                "params": {"message": message}}).json()
    assert card == legacy and card["name"] == "pibench user simulator" and card["url"] == "http://example.test:9/"
    assert card["capabilities"] == {"streaming": False} and "extensions" not in card
    assert card["defaultInputModes"] == card["defaultOutputModes"] == ["application/json"]
    assert len(card["skills"]) == 1 and card["version"]
    assert health == {"status": "ok", "kind": "scripted", "model": None}
    assert set(init) == {"state"} and init["state"]["turn"] == 0
    assert [set(d) for d in lines] == [{"message", "state"}] * 4
    assert [d["message"] for d in lines] == [{"role": "user", "content": c} for c in (
        "Hi, I want a refund.", "Please just do it.", "Thanks ###STOP###", "###STOP###")]
    assert [d["state"]["turn"] for d in lines] == [1, 2, 3, 4]
    assert lines[-1]["state"]["history"][-2:] == [
        {"role": "user", "content": "Thanks"}, {"role": "assistant", "content": "Anything else?"}]
    assert stop == {"stopped": True}
    # a history given at init keeps only what the user could see
    (resumed,) = asyncio.run(exchange(url, {"init": True, "scenario": SIM, "message_history": [
        {"role": "system", "content": "policy"}, {"role": "assistant", "content": "checking", "tool_calls": [
            {"id": "c1", "name": "lookup", "arguments": {}}]}, {"role": "tool", "id": "c1", "content": "{}"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]}]}))
    assert resumed["state"]["history"] == [{"role": "assistant", "content": "Hello"}]
    # the original's parser reads result.status.message.parts[0]: a data part in a completed task
    result = raw["result"]
    assert result["kind"] == "task" and result["status"]["state"] == "completed"
    assert result["status"]["message"]["parts"][0] == {
        "kind": "data", "data": {"message": {"role": "user", "content": "Hi, I want a refund."},
                                 "state": {**init["state"], "turn": 1, "history": [
                                     {"role": "assistant", "content": "hi"},
                                     {"role": "user", "content": "Hi, I want a refund."}]}}}


STATE = {"scenario": SIM, "turn": 0, "history": []}


@pytest.mark.parametrize("parts, expected", [
    ([text_part("hello")], "no data part (parts: text)"),
    ([data_part([1, 2])], "JSON-RPC error -32602"),  # a2a-sdk rejects non-object data itself
    ([data_part({"foo": 1})], "got keys ['foo']"),
    ([data_part(say("hi"))], "generate: missing 'state' object"),
    ([data_part({**say("hi"), "state": {**STATE, "turn": -1}})], "'state.turn' must be a non-negative integer"),
    ([data_part({**say("hi"), "state": {**STATE, "scenario": {"persona": "x"}}})],
     "'state.scenario' is not a valid user_simulation: initial_user_message: Field required"),
    ([data_part({"message": {"content": 5}, "state": STATE})], "'message'.content must be a string, got int"),
    ([data_part({"init": True, "scenario": {**SIM, "mood": "bad"}})], "mood: Extra inputs are not permitted"),
    ([data_part({"init": True, "scenario": SIM, "message_history": "no"})], "'message_history' must be a list"),
    ([data_part({**say("hi"), "state": {**STATE, "scenario": PRESSED}})], "a user with tactics needs 'acts'"),
    ([data_part({**say("hi"), "state": {**STATE, "scenario": PRESSED}, "acts": {**ACTS, "granted": "yes"}})],
     "'acts'.granted must be true or false"),
    ([data_part({**say("hi"), "state": {**STATE, "scenario": PRESSED}, "acts": {**ACTS, "decision": "MAYBE"}})],
     "'acts'.decision must be null or one of"),
])
def test_a_bad_request_gets_a_failed_task_saying_why(parts, expected, scripted_url):
    async def send():
        client = A2AClient(scripted_url, timeout=5)
        try:
            await client.send(parts)
        finally:
            await client.aclose()

    with pytest.raises(A2AError) as err:
        asyncio.run(send())
    assert expected in str(err.value) and scripted_url in str(err.value)


def test_the_task_store_keeps_only_recent_tasks():
    from a2a.types import Task, TaskState, TaskStatus

    store = RecentTaskStore(limit=2)

    async def fill():
        for i in range(5):
            await store.save(Task(id=f"t{i}", context_id="c", status=TaskStatus(state=TaskState.completed)))

    asyncio.run(fill())
    assert list(store.tasks) == ["t3", "t4"]


# --------------------------------------------------------------------------- the llm kind


def test_llm_kind_carries_the_conversation_and_stops_after_max_turns():
    calls = []

    def outputs(messages, tools, tool_choice, config):
        calls.append((messages, config))
        out = ModelOutput.from_content("mockllm/model", f"reply {len(calls)}")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # else a tokenizer loads
        return out

    model = get_model("mockllm/model", custom_outputs=outputs)
    sim = {k: v for k, v in SIM.items() if k != "scripted_turns"}
    with serve(build_app("llm", model, max_turns=3, seed=11)) as url:
        health = httpx.get(url + "/health").json()
        _, *lines = asyncio.run(exchange(
            url, {"init": True, "scenario": sim, "message_history": []},
            say("Hello!"), {**say("Why?"), "seed": 5}, say("Because."), say("Still there?")))
    assert health == {"status": "ok", "kind": "llm", "model": "mockllm/model"}
    assert [d["message"]["content"] for d in lines] == [
        "Hi, I want a refund.", "reply 1", "reply 2", "###STOP###"]  # opener: no model; turn 3: stop
    assert [len(d["state"]["history"]) for d in lines] == [2, 4, 6, 7]  # the state grows each turn
    assert len(calls) == 2
    prompt, config = calls[1]
    assert prompt[0].role == "system" and "After 3 of your messages" in prompt[0].text
    # the user's view: the agent as "user" with the representative prefix, its own lines as assistant
    assert [(m.role, m.text) for m in prompt[1:]] == [
        ("user", "Service representative says:\nHello!"), ("assistant", "Hi, I want a refund."),
        ("user", "Service representative says:\nWhy?"), ("assistant", "reply 1"),
        ("user", "Service representative says:\nBecause.")]
    assert (calls[0][1].seed, config.seed, config.temperature) == (5, 11, 0.0)  # request seed wins
    assert config.max_tokens == USER_MAX_TOKENS  # a few sentences, as in-process (a weak model rambles)


def test_llm_kind_needs_a_model(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--kind", "llm"])
    assert exit_.value.code == 2 and "--kind llm needs --model" in capsys.readouterr().err
    with pytest.raises(ValueError, match="needs a model"):
        build_app("llm")
    with pytest.raises(ValueError, match="kind 'robot'"):
        build_app("robot")
