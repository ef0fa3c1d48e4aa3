"""The green server as something you could put on a network (issue 17 item 12) and its
retries of infrastructure failures (issue 14 item 4), on real loopback HTTP."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import httpx
import pytest
from a2a_helpers import serve
from conftest import MINI, mini_copies
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from pibench_inspect.a2a.green.executor import RESULTS
from pibench_inspect.a2a.green.plan import NOT_ALLOWED, ServerSettings
from pibench_inspect.a2a.green.server import build_green_app, main

KEYLESS = {"user": "scripted", "judge": "off"}
TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def green(tmp_path_factory):
    logs = tmp_path_factory.mktemp("green-safety-logs")
    settings = ServerSettings(heartbeat=0.5, scenarios_dir=MINI, log_dir=logs)
    app = build_green_app(settings, "http://127.0.0.1:9009/", auth_token=TOKEN)
    with serve(app) as url:
        yield {"url": url, "app": app, "logs": logs}


def send(url: str, request: dict[str, Any], token: str | None = TOKEN) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "message/send",
            "params": {"message": {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
                                   "parts": [{"kind": "data", "data": request}]}}}
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(url + "/", json=body, headers=headers, timeout=120)


def refusal(green, request: dict[str, Any]) -> str:
    answer = send(green["url"], request).json()
    assert "result" not in answer, answer
    assert answer["error"]["code"] == -32602
    assert not green["app"].state.executor.running
    return answer["error"]["message"]


AGENT = {"participants": {"agent": "http://127.0.0.1:9"}}


def test_the_token_is_checked_on_every_request_but_the_card_and_health(green):
    url = green["url"]
    assert httpx.get(url + "/.well-known/agent-card.json").status_code == 200
    assert httpx.get(url + "/.well-known/agent.json").status_code == 200
    assert httpx.get(url + "/health").status_code == 200
    assert httpx.get(url + "/scenarios").status_code == 401
    assert httpx.get(url + "/scenarios", headers={"Authorization": f"Bearer {TOKEN}"}).json()["count"] == 3
    for token in (None, "wrong", TOKEN + "x"):
        response = send(url, {**AGENT, "config": KEYLESS}, token)
        assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
    legacy = httpx.post(url + "/a2a/message/send", json={"jsonrpc": "2.0", "id": 1, "method": "message/send"})
    assert legacy.status_code == 401
    assert not green["app"].state.executor.running
    # with the token, the request reaches the server's own checks
    assert refusal(green, {**AGENT, "config": {"max_step": 3}}).startswith("config.max_step")


def test_participants_only_on_allowed_hosts(green):
    for host in ("10.0.0.7", "169.254.169.254", "example.com", "127.0.0.2"):
        text = refusal(green, {"participants": {"agent": f"http://{host}:80/"}, "config": KEYLESS})
        assert text.startswith("participants.agent: host") and "not allowed" in text
        text = refusal(green, {**AGENT, "config": {"user_url": f"http://{host}:80/"}})
        assert text.startswith("config.user_url: host")


@pytest.mark.parametrize("field", ["user_model", "judge_model"])
def test_models_only_from_allowed_providers(green, field):
    for name in ("protocol/os:system", "hf/gpt2", "openai-api/evil/model", "mockllm/model"):
        text = refusal(green, {**AGENT, "config": {"user_model": "gpt-4.1-mini", "judge": "on", field: name}})
        assert text.startswith(f"config.{field}: provider") and "not allowed" in text


def test_scenario_folders_only_under_the_roots_and_refusals_reveal_nothing(green, tmp_path):
    outside = mini_copies(tmp_path, 1, "OUT")  # a valid source, but not under any root
    texts = {refusal(green, {**AGENT, "config": {**KEYLESS, "scenarios_dir": d}})
             for d in (str(outside), "/etc", "/nonexistent/x", "/proc/self", str(MINI / "domains"),
                       str(MINI / ".." / ".."), "../../../etc", str(MINI / "scenarios" / "nope"))}
    assert texts == {NOT_ALLOWED}  # one message: no answer tells which paths exist


@pytest.mark.parametrize("key, value", [
    ("num_trials", 10**9), ("max_steps", 10**6), ("a2a_timeout", 1e9), ("max_user_turns", 10**6),
    ("retry_failed", 100), ("concurrency", 10**9), ("seed", 2**70),
])
def test_numbers_are_bounded(green, key, value):
    assert refusal(green, {**AGENT, "config": {**KEYLESS, key: value}}).startswith(f"config.{key}")


def test_the_command_line_takes_the_safety_flags(capsys):
    with pytest.raises(SystemExit):
        main(["--user-model", "protocol/os:system"])
    assert "not in --model-providers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--scenario-root", "/nonexistent/root"])
    assert "--scenario-root /nonexistent/root: not a folder" in capsys.readouterr().err


# ---------------------------------------------------------------- retry_failed (14.4)


def flaky_purple(failures: int):
    """Answers 503 to its first `failures` POSTs (an outage), then like a plain agent."""
    posts: Counter = Counter()

    async def rpc(request: Request):
        body = await request.json()
        posts["n"] += 1
        if posts["n"] <= failures:
            return PlainTextResponse("down for maintenance", status_code=503)
        history = body["params"]["message"]["parts"][0]["data"]["messages"]
        text = "###STOP###" if len(history) > 1 else "Let me look into that."
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": {
            "kind": "message", "messageId": "m", "role": "agent", "parts": [{"kind": "data", "data": {"content": text}}]}})

    return Starlette(routes=[Route("/", rpc, methods=["POST"])]), posts


@pytest.mark.slow
def test_retry_failed_reruns_samples_that_ended_on_infrastructure_errors(green):
    # (an assessment in which nothing could run is a failed task: test_a2a_green.py)
    app, posts = flaky_purple(failures=3)  # the first turn's three attempts fail: a sample error
    config = {**KEYLESS, "scenarios": ["MINI_001_REFUND_OK"], "a2a_timeout": 10, "retry_failed": 1}
    with serve(app) as purple:
        retried = send(green["url"], {"participants": {"agent": purple}, "config": config}).json()["result"]
    assert retried["status"]["state"] == "completed", retried["status"]
    (result,) = [a for a in retried["artifacts"] if a["name"] == RESULTS]
    (detail,) = result["parts"][0]["data"]["results"][0]["scenario_details"]
    assert detail["status"] == "completed" and "error" not in detail
    assert posts["n"] == 5  # 3 failed attempts, then the retried sample's two turns
