"""The green server (`pi-bench-green`) on real loopback HTTP: a purple agent (the keyless demo
agent behind build_agent_app) is assessed over JSON-RPC message/send and message/stream; the
artifact is the leaderboard payload with the same scores as a local run; bad requests are
JSON-RPC errors naming the field; a dead purple still yields a result; cancel ends the run."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import httpx
import pytest
from a2a_helpers import free_port, serve
from conftest import MINI, run_eval, shipped

from pibench_inspect.a2a.agent_server import build_agent_app
from pibench_inspect.a2a.green.executor import FAILED, RESULTS
from pibench_inspect.a2a.green.plan import ServerSettings, make_plan, model_ref
from pibench_inspect.a2a.green.request import InvalidRequest, parse_request
from pibench_inspect.a2a.green.server import build_green_app
from pibench_inspect.a2a.green.slots import Slots
from pibench_inspect.a2a.serving import package_version
from pibench_inspect.local.adapter import load_agent
from pibench_inspect.reports.logs import load_logs
from pibench_inspect.reports.rows import log_rows
from pibench_inspect.conversation.seeds import derive_seed
from pibench_inspect.scoring.payload import DETAIL_KEYS, leaderboard_payload
from conftest import registered

DEMO = "examples.local_demo.demo_agent:CautiousAgent"
KEYLESS = {"user": "scripted", "judge": "off"}
TIMEOUT = 120.0


# ---------------------------------------------------------------- servers and JSON-RPC helpers


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """One purple and one green server for the module. The green's --scenarios-dir is the mini
    fixture, so assessments that name no scenarios_dir run it too (original defect 24)."""
    logs = tmp_path_factory.mktemp("green-logs")
    purple = build_agent_app(lambda: load_agent(DEMO), "http://127.0.0.1/")
    settings = ServerSettings(concurrency=2, heartbeat=0.5, scenarios_dir=MINI, log_dir=logs)
    green = build_green_app(settings, "http://127.0.0.1:9009/")
    with serve(purple) as purple_url, serve(green) as green_url:
        yield {"purple": purple_url, "green": green_url, "app": green, "logs": logs}


def message(data: Any = None, text: str | None = None, **fields: Any) -> dict[str, Any]:
    part = {"kind": "text", "text": text} if text is not None else {"kind": "data", "data": data}
    return {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex, "parts": [part], **fields}


def rpc(url: str, method: str, params: dict[str, Any], path: str = "/") -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    response = httpx.post(url + path, json=body, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return response.json()


def assess(url: str, request: dict[str, Any], as_text: bool = False) -> dict[str, Any]:
    sent = message(text=json.dumps(request)) if as_text else message(request)  # AgentBeats sends text
    answer = rpc(url, "message/send", {"message": sent})
    assert "result" in answer, answer
    return answer["result"]


def stream(url: str, request: dict[str, Any]) -> list[dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": "s1", "method": "message/stream", "params": {"message": message(request)}}
    events = []
    with httpx.stream("POST", url + "/", json=body, timeout=TIMEOUT) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    return events


def artifact(task: dict[str, Any], name: str) -> list[dict[str, Any]]:
    found = [a for a in task.get("artifacts") or [] if a.get("name") == name]
    assert len(found) == 1, [a.get("name") for a in task.get("artifacts") or []]
    return found[0]["parts"]


def payload_of(task: dict[str, Any]) -> dict[str, Any]:
    assert task["status"]["state"] == "completed", task["status"]
    parts = artifact(task, RESULTS)
    assert len(parts) == 1 and parts[0]["kind"] == "data"
    return parts[0]["data"]


def check_payload(payload: dict[str, Any], agent: str, n: int) -> None:
    """Every field of reference 4.10, with its type."""
    assert payload["participants"] == {"agent": agent}
    assert len(payload["results"]) == 1
    r = payload["results"][0]
    for key, kind in (("domain", str), ("score", float), ("max_score", float), ("pass_rate", float),
                      ("time_used", float), ("task_rewards", dict), ("task_rewards_by_scenario_id", dict),
                      ("metrics", dict), ("flag_summary", dict), ("label_breakdown", dict),
                      ("scenario_details", list)):
        assert isinstance(r[key], kind), (key, r[key])
    assert r["max_score"] == float(n) and r["score"] == sum(r["task_rewards"].values())
    assert r["pass_rate"] == pytest.approx(100.0 * r["score"] / n)
    assert list(r["task_rewards"]) == [str(i) for i in range(n)]
    assert all(isinstance(v, float) for v in r["task_rewards"].values())
    assert r["flag_summary"] == r["metrics"]["event_flag_rates"]
    for key in ("total_scenarios", "completed", "errors", "compliance_rate", "overall_score", "labels",
                "by_column", "by_group", "by_domain", "event_flag_rates"):
        assert key in r["metrics"], key
    assert all(set(v) == {"total", "passed"} for v in r["label_breakdown"].values())
    assert len(r["scenario_details"]) == n
    for d in r["scenario_details"]:
        assert set(DETAIL_KEYS) <= set(d), set(DETAIL_KEYS) - set(d)
        assert isinstance(d["scenario_id"], str) and isinstance(d["trial"], int)
        assert isinstance(d["reward"], float) and isinstance(d["all_passed"], bool)
        assert isinstance(d["event_flags"], dict) and isinstance(d["status"], str)
        assert not {"messages", "trace", "env"} & set(d)  # never published


def status_texts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for e in events:
        res = e.get("result") or {}
        if res.get("kind") == "status-update" and res["status"]["state"] == "working" and res["status"].get("message"):
            out.append(json.loads(res["status"]["message"]["parts"][0]["text"]))
    return out


# ---------------------------------------------------------------- full assessments


@pytest.mark.slow
def test_send_runs_the_benchmark_and_returns_the_leaderboard_payload(servers):
    request = {"participants": {"agent": {"url": servers["purple"], "id": "cautious-demo"}},
               "config": {**KEYLESS, "scenarios_dir": str(MINI), "domain": "policy_compliance"}}
    task = assess(servers["green"], request)
    payload = payload_of(task)
    check_payload(payload, "cautious-demo", 3)
    assert payload["results"][0]["domain"] == "policy_compliance"

    # the same agent run locally, in process: the same scores
    local = run_eval(registered(source=str(MINI), agent=DEMO, user="scripted", judge="off"))
    expected = leaderboard_payload("cautious-demo", log_rows(load_logs([local.location])))["results"][0]
    got = payload["results"][0]
    assert got["task_rewards_by_scenario_id"] == expected["task_rewards_by_scenario_id"]
    assert got["score"] == expected["score"] and got["label_breakdown"] == expected["label_breakdown"]
    for key in ("compliance_rate", "overall_score", "by_column", "event_flag_rates"):
        assert got["metrics"][key] == expected["metrics"][key], key
    for mine, theirs in zip(got["scenario_details"], expected["scenario_details"]):
        for key in ("scenario_id", "label", "status", "reward", "all_passed", "canonical_decision",
                    "decision_channel", "event_flags", "tool_calls"):
            assert mine[key] == theirs[key], (mine["scenario_id"], key)
        # the A2A path's seed derives from the scenario file's stem, as the original's leaderboard reads it
        assert mine["seed"] == derive_seed(42, mine["scenario_id"].lower(), 0) != theirs["seed"]

    # the evidence is kept: one folder per assessment with the Inspect log and the runner's stderr
    folder = next(p for p in servers["logs"].iterdir() if p.name.endswith(task["id"]))
    assert len(list(folder.glob("*.eval"))) == 1 and (folder / "runner-stderr.log").is_file()


@pytest.mark.slow
def test_stream_reports_progress_then_the_artifact(servers):
    # the flat shape, no scenarios_dir (the server's default source), one scenario
    request = {"purple_agent_url": servers["purple"],
               "config": {**KEYLESS, "scenarios": ["MINI_002_FINAL_SALE"], "workspace_root": "/w"}}
    events = stream(servers["green"], request)
    results = [e["result"] for e in events]
    assert all("error" not in e for e in events), events
    assert results[0]["kind"] == "task"
    kinds = [r["kind"] for r in results]
    assert kinds.index("artifact-update") > kinds.index("status-update")
    final = results[-1]
    assert final["kind"] == "status-update" and final["status"]["state"] == "completed" and final["final"]
    progress = status_texts(events)
    assert progress and all(p["status"] == "working" and isinstance(p["elapsed_seconds"], float) for p in progress)
    assert {"message", "completed", "total"} <= set(progress[-1])
    # the original's workspace_root is accepted, and the caller hears that it is ignored
    assert "config.workspace_root" in progress[0]["warnings"][0]
    done = [p for p in progress if p.get("scenario_id") == "MINI_002_FINAL_SALE"]
    assert done and done[0]["completed"] == 1 and done[0]["total"] == 1 and done[0]["message"] == "1/1 samples done"
    (art,) = [r for r in results if r["kind"] == "artifact-update"]
    assert art["artifact"]["name"] == RESULTS
    check_payload(art["artifact"]["parts"][0]["data"], "agent", 1)


@pytest.mark.slow
def test_unreachable_purple_fails_the_assessment_with_the_reason(servers):
    # an infrastructure failure, not a zero for the agent: no payload to submit (issue 14.1, 14.4)
    dead = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    task = assess(servers["green"], {"participants": {"agent": dead}, "config": {**KEYLESS, "a2a_timeout": 5}},
                  as_text=True)
    assert task["status"]["state"] == "failed" and time.monotonic() - started < 30
    text, data = artifact(task, FAILED)
    assert f"-T agent_url={dead}: nothing answers there" in text["text"]
    assert "Traceback" not in text["text"] and str(servers["logs"]) not in text["text"]
    assert not [a for a in task.get("artifacts") or [] if a.get("name") == RESULTS]


@pytest.mark.slow
def test_cancel_ends_the_run_and_keeps_serving(servers):
    app = servers["app"]
    params = {"message": message({"participants": {"agent": servers["purple"]}, "config": KEYLESS}),
              "configuration": {"blocking": False}}
    task = rpc(servers["green"], "message/send", params)["result"]
    answer = rpc(servers["green"], "tasks/cancel", {"id": task["id"]})
    assert answer["result"]["status"]["state"] == "canceled", answer
    deadline = time.monotonic() + 15
    while app.state.executor.running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not app.state.executor.running
    assert app.state.executor.slots.free == app.state.executor.slots.total  # the slots came back
    got = rpc(servers["green"], "tasks/get", {"id": task["id"]})["result"]
    assert got["status"]["state"] == "canceled"
    assert "error" in rpc(servers["green"], "tasks/cancel", {"id": task["id"]})  # already final


# ---------------------------------------------------------------- bad requests: JSON-RPC errors


def _agent(servers):
    return {"participants": {"agent": servers["purple"]}}


BAD = [
    # (name, request builder, text the error must contain)
    ("no participants", lambda s: {"config": KEYLESS}, "participants"),
    ("participants not an object", lambda s: {"participants": ["x"]}, "participants"),
    ("participant URL not http", lambda s: {"participants": {"agent": "ftp://x"}}, "participants.agent"),
    ("participant object without url", lambda s: {"participants": {"agent": {"id": "a"}}}, "participants.agent"),
    ("bad scope", lambda s: {**_agent(s), "config": {**KEYLESS, "scenario_scope": "some"}}, "config.scenario_scope"),
    ("domain scope without domain", lambda s: {**_agent(s), "config": {**KEYLESS, "scenario_scope": "domain"}},
     "config.scenario_domain"),
    ("unknown domain", lambda s: {**_agent(s), "config": {**KEYLESS, "scenario_scope": "domain",
                                                           "scenario_domain": "banking"}}, "config.scenario_domain"),
    ("unknown config key", lambda s: {**_agent(s), "config": {**KEYLESS, "max_step": 5}}, "config.max_step"),
    ("wrong type", lambda s: {**_agent(s), "config": {**KEYLESS, "max_steps": "40"}}, "config.max_steps"),
    ("bool for an int", lambda s: {**_agent(s), "config": {**KEYLESS, "num_trials": True}}, "config.num_trials"),
    ("config not an object", lambda s: {**_agent(s), "config": [1]}, "config"),
    ("unknown scenario id", lambda s: {**_agent(s), "config": {**KEYLESS, "scenarios": ["NOPE_1"]}},
     "config.scenarios"),
    ("missing scenarios_dir", lambda s: {**_agent(s), "config": {**KEYLESS, "scenarios_dir": "/nonexistent/x"}},
     "config.scenarios_dir"),
    ("no user model", lambda s: {**_agent(s), "config": {"judge": "off"}}, "config.user_model"),
    ("user_url not http", lambda s: {**_agent(s), "config": {"user_url": "localhost:1"}}, "config.user_url"),
    ("judge on without a model", lambda s: {**_agent(s), "config": {"user": "scripted", "judge": "on"}},
     "config.judge"),
]


@pytest.mark.parametrize("builder,field", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_request_is_a_jsonrpc_error_naming_the_field(servers, builder, field):
    answer = rpc(servers["green"], "message/send", {"message": message(builder(servers))})
    assert "result" not in answer, answer
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].startswith(field) or f"{field}:" in answer["error"]["message"], answer
    assert not servers["app"].state.executor.running  # no task was started


def test_unknown_key_error_lists_the_known_keys(servers):
    answer = rpc(servers["green"], "message/send",
                 {"message": message({**_agent(servers), "config": {"max_step": 5, "seeed": 1}})})
    text = answer["error"]["message"]
    assert text.startswith("config.max_step: unknown config key") and "seeed" in text
    assert "known keys:" in text and "max_steps" in text and "scenario_scope" in text


def test_message_shape_errors(servers):
    url = servers["green"]
    # the original's clients send no messageId or kind: the request reaches our own checks
    no_id = message({**_agent(servers), "config": {"max_step": 5}})
    del no_id["messageId"], no_id["kind"]
    assert rpc(url, "message/send", {"message": no_id})["error"]["message"].startswith("config.max_step")
    not_json = rpc(url, "message/send", {"message": message(text="please assess my agent")})
    assert not_json["error"]["code"] == -32602
    assert not_json["error"]["message"].startswith("message.parts[0].text: not JSON")
    not_object = rpc(url, "message/send", {"message": message(text="[1, 2]")})
    assert "expected an object" in not_object["error"]["message"]
    follow_up = rpc(url, "message/send", {"message": message({**_agent(servers), "config": KEYLESS}, taskId="t1")})
    assert follow_up["error"]["message"].startswith("message.taskId")


def test_stream_and_legacy_path_report_errors_too(servers):
    events = stream(servers["green"], {**_agent(servers), "config": {"scenario_scope": "nope"}})
    assert len(events) == 1 and events[0]["error"]["code"] == -32602
    assert events[0]["error"]["message"].startswith("config.scenario_scope")
    legacy = rpc(servers["green"], "message/send", {"message": message({"config": {}})}, path="/a2a/message/send")
    assert legacy["error"]["code"] == -32602 and legacy["error"]["message"].startswith("participants")


# ---------------------------------------------------------------- card, health, scenarios


def test_card_health_and_scenarios(servers):
    url = servers["green"]
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
        card = httpx.get(url + path).json()
        assert card["name"] == "PI-Bench" and card["version"] == package_version()
        assert card["capabilities"]["streaming"] is True and not card["capabilities"].get("extensions")
        assert card["defaultInputModes"] == ["application/json"] == card["defaultOutputModes"]
        (skill,) = card["skills"]
        assert skill["id"] == "policy_compliance_assessment" and skill["name"] == "Policy Compliance Assessment"
        assert set(skill["tags"]) == {"policy", "compliance", "assessment", "benchmark", "finra", "aml", "retail",
                                      "helpdesk"}
        assert all(json.loads(example) for example in skill["examples"])  # the examples are valid requests
    assert httpx.get(url + "/health").json() == {"status": "ok"}
    listing = httpx.get(url + "/scenarios").json()
    assert listing["count"] == 3 and listing["domains"] == {"mini": 3}
    first = listing["scenarios"][0]
    assert set(first) == {"scenario_id", "domain", "label", "file"}
    assert first["file"] == "mini/mini_001_refund_ok.json" and first["label"] == "ALLOW"


# ---------------------------------------------------------------- request parsing and planning (no server)


def test_slots_queue_first_come_first_served():
    async def scenario():
        slots, order = Slots(2), []

        async def job(name, k, hold):
            await slots.acquire(k)
            order.append(name)
            await asyncio.sleep(hold)
            await slots.release(k)

        first = asyncio.create_task(job("a", 1, 0.05))
        await asyncio.sleep(0)
        big = asyncio.create_task(job("big", 2, 0))  # needs both slots: waits for a
        await asyncio.sleep(0)
        small = asyncio.create_task(job("c", 1, 0))  # one slot is free, but big came first
        await asyncio.gather(first, big, small)
        assert order == ["a", "big", "c"] and slots.free == 2
        assert (await asyncio.wait_for(slots.acquire(5), 1)) is None and slots.free == 0  # capped at the total

    asyncio.run(scenario())


def test_request_shapes():
    r = parse_request({"participants": {"judge": "http://j:1", "purple": {"endpoint": "http://p:2/rpc",
                                                                          "agentbeats_id": "pid"}}})
    assert (r.role, r.purple_url, r.agent_id) == ("judge", "http://j:1", "judge")  # no "agent" key: the first
    r = parse_request({"participants": {"agent": "http://a:1"}, "agentbeats_ids": {"agent": "abc-123"}})
    assert (r.purple_url, r.agent_id) == ("http://a:1", "abc-123")
    r = parse_request({"participants": {"agent": {"base_url": "https://a", "id": "x"}}})
    assert (r.purple_url, r.agent_id) == ("https://a", "x")
    r = parse_request({"purple_agent_url": "http://p:3", "purple_agent_id": "pp"})
    assert (r.purple_url, r.agent_id) == ("http://p:3", "pp")
    r = parse_request({"purple_agent_url": "http://p:3", "config": {"retry_failed": 2, "workspace_root": "/w",
                                                                    "scenarios": "A, B"}})
    assert len(r.warnings) == 1 and r.config.scenarios == ["A", "B"] and r.config.retry_failed == 2
    with pytest.raises(InvalidRequest, match=r"^agentbeats_ids\.agent: expected a non-empty string"):
        parse_request({"participants": {"agent": "http://a"}, "agentbeats_ids": {"agent": ["x"]}})


@pytest.mark.slow
def test_plan_maps_the_config_to_the_task():
    settings = ServerSettings(concurrency=3, allowed_hosts=("a", "u"), scenario_roots=(MINI,))
    base = {"participants": {"agent": "http://a:1"}}
    plan = make_plan(parse_request({**base, "config": {
        "scenario_scope": "domain", "scenario_domain": "retail_refund_sop_v1", "user_model": "gpt-4.1-mini",
        "judge_model": "openai/gpt-4o", "num_trials": 2, "seed": 7, "observer_mode": "hard_gate",
        "concurrency": 9, "max_steps": 30}}), settings)
    assert plan.task == "pibench_inspect/pibench_retail"
    assert plan.model_roles == {"user": "litellm/gpt-4.1-mini", "grader": "openai/gpt-4o"}
    assert plan.max_samples == 3  # capped by the server
    args = plan.task_args
    assert (args["agent"], args["agent_url"], args["user"], plan.epochs, args["user_seed"], args["hard_gate"],
            args["max_steps"]) == ("a2a", "http://a:1", "llm", 2, 7, True, 30)
    assert plan.total == 2 * len(shipped().by_domain("retail"))
    a2a_user = make_plan(parse_request({**base, "config": {"user_url": "http://u:5", "judge": "off",
                                                           "judge_model": "x"}}), settings)
    assert (a2a_user.task, a2a_user.task_args["user"], a2a_user.task_args["user_url"]) == (
        "pibench_inspect/pibench", "a2a", "http://u:5")
    assert a2a_user.model_roles == {} and a2a_user.max_samples == 3  # judge off: no grader bound
    mini = make_plan(parse_request({**base, "config": {**KEYLESS, "scenarios_dir": str(MINI / "scenarios"),
                                                       "scenario_scope": "domain", "scenario_domain": "mini"}}),
                     settings)
    # the original's scenarios_dir (the scenarios/ folder itself) is taken; a custom domain runs
    # as the all-domains task narrowed to its ids
    assert mini.task_args["source"] == str(MINI) and len(mini.sample_id) == 3 and mini.total == 3
    assert model_ref("gpt-4.1-mini") == "litellm/gpt-4.1-mini" and model_ref("anthropic/claude") == "anthropic/claude"
    # one domain's folder, as the original allows: its scenarios only
    folder = make_plan(parse_request({**base, "config": {**KEYLESS, "scenarios_dir": str(MINI / "scenarios" / "mini")}}),
                       settings)
    assert folder.task_args["source"] == str(MINI) and len(folder.sample_id) == 3
    with pytest.raises(InvalidRequest, match=r"^config\.scenario_domain: unknown domain 'mini'"):
        make_plan(parse_request({**base, "config": {**KEYLESS, "scenario_scope": "domain",
                                                    "scenario_domain": "mini"}}), settings)


@pytest.mark.slow
def test_an_unreachable_user_model_fails_the_assessment_within_seconds(servers, monkeypatch):
    # a user model whose endpoint is down (the runner inherits this environment): one short
    # preflight call finds it, instead of every sample retrying for minutes (issue 14.4)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    request = {**_agent(servers), "config": {"user_model": "openai/gpt-4.1-mini", "judge": "off",
                                             "scenarios": ["MINI_001_REFUND_OK"]}}
    started = time.monotonic()
    task = assess(servers["green"], request)
    assert task["status"]["state"] == "failed" and time.monotonic() - started < 45
    text, data = artifact(task, FAILED)
    assert text["kind"] == "text" and data["kind"] == "data" and data["data"] == {"error": text["text"]}
    assert "the user model openai/gpt-4.1-mini cannot be reached" in text["text"], text["text"]
    assert "Traceback" not in text["text"] and str(servers["logs"]) not in text["text"]
    assert "openai/gpt-4.1-mini" in task["status"]["message"]["parts"][0]["text"]
