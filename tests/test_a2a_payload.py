"""The green server's leaderboard payload against the original green's (issue 30).

The main test plays recorded runs of the original pi-bench (the shared sample's trajectories,
read in place) through our green server: a purple agent that replays the recorded assistant
turns, the scripted user, the sample's judge stub as the grader. Its payload is compared field
by field with the payload the original built for the same runs (expected_metrics/<variant>.json,
made by its `to_agentbeats_results`), taken to what the original's *green* returns: its A2A rows
derive each seed from the scenario file's stem and say "NONE" for an unresolved decision
(reference 4.10, 5.5). The only exceptions are the ones docs/parity.md lists as deliberate:
wall-clock values (time_used, duration), our column descriptions, our benchmark_version.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from a2a_agents import TrajectoryAgent
from a2a_helpers import sdk_1x_post, sdk_1x_request, serve
from conftest import MINI, NO_SAMPLE, ROOT, SAMPLE, registered, run_eval
from helpers_trace import trace
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput

from pibench_inspect import __version__
from pibench_inspect.a2a.agent_server import build_agent_app
from pibench_inspect.a2a.green.executor import RESULTS
from pibench_inspect.a2a.green.plan import ServerSettings
from pibench_inspect.a2a.green.results import assessment_payload
from pibench_inspect.a2a.green.server import build_green_app
from pibench_inspect.checks.judge import ModelJudge
from pibench_inspect.reports.logs import load_logs
from pibench_inspect.reports.rows import dimensions, log_rows
from pibench_inspect.scenario.model import NLJudge
from pibench_inspect.conversation.seeds import derive_seed
from pibench_inspect.scoring.payload import leaderboard_payload

JUDGE = "protocol/tests.a2a_agents:YesJudge"  # the sample's judge stub (YES to every question)


# ---------------------------------------------------------------- the pieces


def test_outcome_checks_keep_the_evaluators_order():
    """The original lists outcome_checks as its evaluator ran them (reward_basis order, then file
    order); they used to be read off the dimensions, which put the decision check first."""
    checks = [
        {"outcome_id": "CALLED", "type": "tool_called", "passed": True, "detail": "tool_called(a)=True"},
        {"outcome_id": "NOT_EVALUATED", "type": "state_field", "passed": None, "detail": "skipped"},
        {"outcome_id": "BEFORE", "type": "tool_before_tool", "passed": False, "detail": "b"},
        {"outcome_id": "DECISION", "type": "decision_equals", "passed": True, "detail": "decision: ok"},
        {"outcome_id": "SAID", "type": "NL_JUDGE", "passed": False, "detail": "llm_judge: ..."},
    ]
    row = {"scenario_id": "S", "label": "DENY", "status": "completed", "all_passed": False, "reward": 0.0,
           "event_flags": {}, "checks": checks, "dimensions": dimensions(checks)}
    (detail,) = leaderboard_payload("a", [row])["results"][0]["scenario_details"]
    assert [c["outcome_id"] for c in detail["outcome_checks"]] == ["CALLED", "BEFORE", "DECISION", "SAID"]
    assert detail["outcome_checks"][0] == {"outcome_id": "CALLED", "type": "tool_called", "passed": True,
                                           "detail": "tool_called(a)=True", "dimension": ""}
    # the dimensions keep their own order (the decision first), as in the original
    assert detail["dimensions"]["decision"]["checks"][0]["outcome_id"] == "DECISION"


def test_an_nl_verdict_says_which_question_the_judge_was_asked():
    """The original's detail (reference 4.4): the question's first 80 characters (then '...'),
    the expected answer as written, the answer, the reason."""
    question = "Did the agent tell the customer that only account 003 was reviewed or imply that nothing else was?"
    class Stub:  # the sample's judge stub: this exact answer to every question
        async def generate(self, messages: Any, config: Any = None) -> ModelOutput:
            return ModelOutput.from_content("stub", '{"answer": "YES", "reasoning": "stub"}')

    judge = ModelJudge(Stub())  # type: ignore[arg-type]
    check = NLJudge(type="nl_assertion_llm_judge", outcome_id="E23", judge_question=question, expected_answer="No")
    result = asyncio.run(judge(check, trace(("say", "Only account 003 was reviewed."))))
    assert result.passed is False
    assert result.detail == f"llm_judge: question='{question[:80]}...' expected=No, got=YES, reason=stub"
    short = NLJudge(type="nl_assertion_llm_judge", outcome_id="E1", judge_question="Polite?", expected_answer="YES")
    again = asyncio.run(judge(short, trace(("say", "Only account 003 was reviewed."))))
    assert again.passed is True and again.detail == "llm_judge: question='Polite?' expected=YES, got=YES, reason=stub"


@pytest.fixture(scope="module")
def nothing_log():
    """A keyless run in which no decision resolves (the built-in `nothing` agent)."""
    return run_eval(registered(source=str(MINI), agent="nothing", user="scripted", judge="off")).location


def test_time_used_is_the_runs_measured_time_to_the_millisecond(nothing_log):
    """The runner measures the evaluation's wall-clock time and the payload carries it to the
    millisecond; the log's run timestamps have whole seconds (a sub-second run said 0.0)."""
    payload = assessment_payload(nothing_log, "a", "policy_compliance", time_used=0.48912)
    assert payload["results"][0]["time_used"] == 0.489
    # without a measurement (an older runner), the log's timestamps are all there is
    assert float(assessment_payload(nothing_log, "a", "policy_compliance")["results"][0]["time_used"]).is_integer()


def test_an_unresolved_decision_is_none_in_the_greens_rows_only(nothing_log):
    """The original's A2A rows say "NONE" where its local runner's rows say null (reference
    4.10): the green says "NONE", `pibench report` (the runner's payload) keeps null."""
    green = assessment_payload(nothing_log, "a", "policy_compliance")["results"][0]["scenario_details"]
    assert {d["canonical_decision"] for d in green} == {"NONE"} and {d["decision_valid"] for d in green} == {False}
    report = leaderboard_payload("a", log_rows(load_logs([nothing_log])))["results"][0]["scenario_details"]
    assert {d["canonical_decision"] for d in report} == {None}


# ---------------------------------------------------------------- the original's green, field by field


def original_green_payload(variant: str, scenario_ids: list[str] | None = None) -> dict[str, Any]:
    """The original's payload for the variant's recorded runs, as its green returns it: seeds
    from the scenario file's stem, "NONE" for an unresolved decision. With `scenario_ids`, only
    those details (the aggregates are over the whole set and are then not comparable)."""
    expected = json.loads((SAMPLE / "expected_metrics" / f"{variant}.json").read_text(encoding="utf-8"))
    payload = copy.deepcopy(expected["agentbeats"])
    stems = {}
    for path in SAMPLE.glob(f"trajectories/*/*__{variant}.json"):
        traj = json.loads(path.read_text(encoding="utf-8"))
        stems[traj["scenario_id"]] = Path(traj["scenario_file"]).stem
    result = payload["results"][0]
    for d in result["scenario_details"]:
        d["seed"] = derive_seed(42, stems[d["scenario_id"]], d["trial"])
        if d["canonical_decision"] is None:
            d["canonical_decision"] = "NONE"
    if scenario_ids is not None:
        result["scenario_details"] = [d for d in result["scenario_details"] if d["scenario_id"] in scenario_ids]
    return payload


def same(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Every difference, with its path: keys, list lengths, types (an int is not a float to a
    JSON consumer) and values (floats to 1e-12: the sums may run in another order)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = [f"{path}.{k}: only ours" for k in ours.keys() - theirs.keys()]
        out += [f"{path}.{k}: only theirs" for k in theirs.keys() - ours.keys()]
        for k in ours.keys() & theirs.keys():
            out += same(ours[k], theirs[k], f"{path}.{k}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items, theirs {len(theirs)}"]
        return [d for i, (a, b) in enumerate(zip(ours, theirs)) for d in same(a, b, f"{path}[{i}]")]
    if type(ours) is not type(theirs):
        return [f"{path}: {ours!r} ({type(ours).__name__}), theirs {theirs!r} ({type(theirs).__name__})"]
    if isinstance(ours, float) and abs(ours - theirs) <= 1e-12:
        return []
    return [] if ours == theirs else [f"{path}: {ours!r}, theirs {theirs!r}"]


def deliberate(ours: dict[str, Any], theirs: dict[str, Any], elapsed: float, log: Path) -> None:
    """Check, then set aside, what docs/parity.md lists as deliberately different."""
    result, other = ours["results"][0], theirs["results"][0]
    # time_used: the evaluation's wall-clock seconds, measured to the millisecond (the sample's
    # generator passed 0.0); it covers every sample run and fits in the request's own time
    spans = [(s.started_at, s.completed_at) for s in read_eval_log(str(log)).samples or []]
    assert all(a and b for a, b in spans)
    first = min(datetime.fromisoformat(a) for a, _ in spans)
    last = max(datetime.fromisoformat(b) for _, b in spans)
    used = result.pop("time_used")
    assert type(used) is float and round(used, 3) == used
    assert (last - first).total_seconds() - 0.002 <= used <= elapsed, (used, (last - first).total_seconds(), elapsed)
    other.pop("time_used")
    for d in result["scenario_details"]:
        # duration: the sample run's wall-clock seconds (wall-clock values were dropped from the sample)
        assert type(d.pop("duration")) is float
        # benchmark_version names this benchmark's build, not the original's
        assert d.pop("benchmark_version") == __version__
    for d in other["scenario_details"]:
        d.pop("benchmark_version")
    # column descriptions are our own wording (the original's text is not copied)
    for table in (result.get("metrics") or {}).get("by_column", {}), (other.get("metrics") or {}).get("by_column", {}):
        for column in table.values():
            assert isinstance(column.pop("description"), str)


@pytest.fixture(scope="module")
def original_runs(tmp_path_factory):
    """Our green, a purple agent replaying each variant's recorded turns, the judge stub."""
    if not SAMPLE.is_dir():
        pytest.skip(NO_SAMPLE)
    logs = tmp_path_factory.mktemp("green-logs")
    settings = ServerSettings(concurrency=2, heartbeat=5, scenarios_dir=SAMPLE, log_dir=logs,
                              model_providers=("protocol",))
    green = build_green_app(settings, "http://127.0.0.1:9009/")
    purples = {v: build_agent_app(lambda v=v: TrajectoryAgent(v, str(SAMPLE)), "http://127.0.0.1/")
               for v in ("gold", "nothing")}
    with pytest.MonkeyPatch.context() as mp:
        # the runner subprocess loads the judge as tests.a2a_agents, from wherever pytest runs
        mp.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
        with serve(green) as g, serve(purples["gold"]) as gold, serve(purples["nothing"]) as nothing:
            yield {"green": g, "gold": gold, "nothing": nothing, "logs": logs}


def assess(runs: dict[str, Any], variant: str, scenarios: list[str] | None = None) -> tuple[dict[str, Any], float, Path]:
    config: dict[str, Any] = {"user": "scripted", "judge": "on", "judge_model": JUDGE, "max_steps": 40, "seed": 42}
    if scenarios:
        config["scenarios"] = scenarios
    started = time.monotonic()
    # sent as an a2a-sdk 1.x client sends it: the numbers travel as 40.0 and 42.0
    answer = sdk_1x_post(runs["green"], sdk_1x_request({"participants": {"agent": {"url": runs[variant], "id": variant}},
                                                        "config": config}), timeout=600)
    elapsed = time.monotonic() - started
    task = answer["result"]
    assert task["status"]["state"] == "completed", task["status"]
    (artifact,) = [a for a in task["artifacts"] if a["name"] == RESULTS]
    (log,) = (runs["logs"]).glob(f"*_{task['id']}/*.eval")
    return artifact["parts"][0]["data"], elapsed, log


@pytest.mark.slow
def test_the_payload_equals_the_original_greens_on_recorded_runs_without_a_decision(original_runs):
    """`nothing`: the agent only talks, so no decision resolves, and the judge is asked about its
    text; all ten scenarios, the whole payload (aggregates included)."""
    ours, elapsed, log = assess(original_runs, "nothing")
    theirs = original_green_payload("nothing")
    deliberate(ours, theirs, elapsed, log)
    assert same(ours, theirs) == []


@pytest.mark.slow
def test_the_payload_equals_the_original_greens_on_recorded_gold_runs(original_runs):
    """`gold`: every required call, the decision recorded, NL verdicts with their questions.
    The retail scenarios are left out: the recorded gold calls pass record_decision an argument
    retail's schema does not declare ('rationale'), which the original's handlers ignore and our
    live runs refuse as a tool error (arguments are validated, docs/design.md), so those runs
    differ before any payload is built. The aggregates are over ten scenarios, so the seven
    scenarios' details are compared."""
    ids = sorted(json.loads(p.read_text(encoding="utf-8"))["scenario_id"]
                 for p in SAMPLE.glob("trajectories/*/*__gold.json") if p.parent.name != "retail")
    assert len(ids) == 7
    ours, elapsed, log = assess(original_runs, "gold", ids)
    theirs = original_green_payload("gold", ids)
    deliberate(ours, theirs, elapsed, log)
    result, other = ours["results"][0], theirs["results"][0]
    assert same(result["scenario_details"], other["scenario_details"]) == []
    assert same(ours["participants"], theirs["participants"]) == []
    # what every consumer reads first: the NL details carry their questions, in the evaluator's order
    nl = [c for d in result["scenario_details"] for c in d["outcome_checks"] if c["type"] == "NL_JUDGE"]
    assert nl and all(c["detail"].startswith("llm_judge: question='") for c in nl)
