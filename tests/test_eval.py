"""Whole runs through Inspect's eval(): built-in agents, the model path, users, limits, isolation."""

from __future__ import annotations


from pathlib import Path

import pytest
from inspect_ai.model import get_model

from conftest import MINI, mini_copies, mini_scenario, mock_outputs, run_eval, sample_scores, full_score
from pibench_inspect.analysis import final_state
from pibench_inspect.checks.trace import build_trace
from pibench_inspect.conversation.solver import STATE_CHANGES, TERMINATION, USER_MODEL
from conftest import registered
from pibench_inspect.pibench import pibench
from pibench_inspect.scoring.scorer import flag_of



def mini(**args):
    return registered(source=str(MINI), user="scripted", **args)


def test_oracle_passes_every_fixture_scenario():
    log = run_eval(mini(agent="oracle"))
    assert log.status == "success"
    scores = sample_scores(log)
    assert len(scores) == 3
    for sid, sc in scores.items():
        assert sc.value["all_passed"] == 1.0, (sid, sc.explanation)
        assert sc.metadata["termination"] == "user_stop"
    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    assert metrics["pass"] == 1.0 and metrics["overall"] == 1.0


@pytest.mark.parametrize("agent, passing", [
    ("nothing", set()),
    ("deny_all", set()),  # DENY fixture also requires a lookup, which deny_all never makes
    ("escalate_all", set()),
    ("pushover", set()),
])
def test_baselines_fail_where_they_must(agent, passing):
    scores = sample_scores(run_eval(mini(agent=agent)))
    assert {sid for sid, sc in scores.items() if sc.value["all_passed"] == 1.0} == passing
    if agent == "nothing":
        assert all(sc.answer == "INVALID:MISSING_DECISION" for sc in scores.values())


def test_pushover_does_what_the_user_pushes_for():
    scores = sample_scores(run_eval(mini(agent="pushover", scenarios="MINI_002_FINAL_SALE")))
    sc = scores["MINI_002_FINAL_SALE"]
    assert sc.answer == "ALLOW" and sc.metadata["tool_calls"][0] == "refund_order"
    assert flag_of(sc.value, "UR_r") and flag_of(sc.value, "AT_r")  # the value's flags (format 2: not repeated in the metadata)


def test_state_snapshot_is_in_the_store_and_the_viewer_log():
    log = run_eval(mini(agent="oracle", scenarios="MINI_001_REFUND_OK"))
    sample = log.samples[0]
    final = final_state(log, sample)
    assert final["orders"]["O-1"]["status"] == "refunded"
    assert final["now"] == "2026-11-02T10:00:00+00:00"
    assert sample.store[USER_MODEL] == "scripted"


def test_selection_args_and_bad_args():
    assert len(mini(agent="oracle", label="DENY,ESCALATE").dataset) == 2
    assert len(mini(agent="oracle", column=["Policy Activation"]).dataset) == 1
    with pytest.raises(ValueError, match=r"-T agnet=oracle: unknown task argument \(did you mean -T agent\?\)"):
        registered(source=str(MINI), agnet="oracle")
    with pytest.raises(ValueError, match="-T agent"):
        registered(source=str(MINI), agent="genius")
    with pytest.raises(ValueError, match="-T scenarios: removed; choose scenarios with Inspect's --sample-id"):
        pibench(source=str(MINI), scenarios="NOPE")
    with pytest.raises(ValueError, match=r"-T label=deny: unknown label\(s\) deny"):
        mini(label="deny")
    with pytest.raises(ValueError, match=r"-T column: 'Policy Activaton' \(did you mean 'Policy Activation'\?\).*values present are"):
        mini(column="Policy Activaton")
    with pytest.raises(ValueError, match=r"-T label: 'ALLOW-CONDITIONAL' matches no scenario here; the values present are: ALLOW, DENY, ESCALATE"):
        mini(label="ALLOW-CONDITIONAL")


def test_isolation_with_many_concurrent_samples(tmp_path):
    n = 24
    # a private marker each sample must find, unchanged and alone, at the end
    src = mini_copies(tmp_path, n, "ISO", lambda i, d: d["environment_setup"].update(
        initial_state_patch={"marker": {"owner": d["meta"]["scenario_id"]}}))
    log = run_eval(registered(source=str(src), agent="oracle", user="scripted"), max_samples=n)
    assert len(log.samples) == n
    for s in log.samples:
        final = final_state(log, s)
        assert final["marker"] == {"owner": s.id}
        assert len(final["refunds"]) == 1 and len(final["decisions"]) == 1
        assert final["_id_counter"] == 2
        assert full_score(s).value["all_passed"] == 1.0


def test_step_limit_still_scores_with_a_snapshot():
    log = run_eval(mini(agent="oracle", scenarios="MINI_001_REFUND_OK", max_steps=3))
    sample = log.samples[0]
    sc = full_score(sample)
    assert sc.metadata["termination"] == "max_steps"
    assert final_state(log, sample)["orders"]["O-1"]["status"] == "delivered"  # refund never reached
    assert sc.value["all_passed"] == 0.0


def test_inspect_limit_still_scores_with_a_snapshot():
    log = run_eval(mini(agent="oracle", scenarios="MINI_001_REFUND_OK"), message_limit=6)
    sample = log.samples[0]
    assert sample.store[TERMINATION] == "limit"
    assert STATE_CHANGES in sample.store
    sc = full_score(sample)
    assert sc.value["all_passed"] == 0.0 and sc.metadata["termination"] == "limit"


def test_model_under_test_path_with_mockllm():
    model = get_model("mockllm/model", custom_outputs=mock_outputs(
        ("lookup_order", {"order_id": "O-2"}, "t1"),
        ("record_decision", {"decision": "DENY", "order_id": "O-2", "clause_ids": ["MINI-1.2"], "rationale": "final sale"}, "t2"),
        "Sorry, final-sale orders cannot be refunded.",
        "I understand, but the policy does not allow it.",
        "Goodbye.",
    ))
    log = run_eval(mini(scenarios="MINI_002_FINAL_SALE"), model=model)
    sc = sample_scores(log)["MINI_002_FINAL_SALE"]
    assert sc.value["all_passed"] == 1.0, sc.explanation
    assert sc.answer == "DENY" and sc.metadata["decision_channel"] == "tool"


def test_bad_tool_call_from_model_is_an_error_result_and_changes_nothing():
    model = get_model("mockllm/model", custom_outputs=mock_outputs(
        ("refund_order", {"order_id": "O-1; DROP TABLE orders", "amount": "all of it"}, "t1"),
        ("no_such_tool", {}, "t2"),
        "done",
    ))
    log = run_eval(mini(scenarios="MINI_001_REFUND_OK", max_steps=8), model=model)
    sample = log.samples[0]
    tool_msgs = [m for m in sample.messages if m.role == "tool"]
    assert all(m.error is not None for m in tool_msgs)
    assert final_state(log, sample)["orders"]["O-1"]["status"] == "delivered"
    assert final_state(log, sample)["refunds"] == []


def test_llm_user_role_stop_glued_to_a_sentence():
    agent = get_model("mockllm/model", custom_outputs=mock_outputs("Let me check.", "All done."))
    user = get_model("mockllm/model", custom_outputs=mock_outputs("Can you hurry?", "Thanks, that's all. ###STOP###"))
    log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK"), model=agent,
                   model_roles={"user": user})
    sample = log.samples[0]
    users = [m.text for m in sample.messages if m.role == "user"]
    assert users == [mini_scenario()["user_simulation"]["initial_user_message"], "Can you hurry?", "Thanks, that's all."]
    assert sample.store[TERMINATION] == "user_stop"
    assert sample.store[USER_MODEL] == "mockllm/model"
    # each model party's calls run inside a span labelled with its part in the conversation
    spans = {e.id: e.name for e in sample.events if e.event == "span_begin" and e.type == "agent"}
    assert set(spans.values()) == {"user", "agent"}
    model_spans = [spans.get(e.span_id) for e in sample.events if e.event == "model"]
    assert model_spans.count("user") == 2 and model_spans.count("agent") == 2


def test_llm_user_without_model_is_a_clear_error():
    log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", agent="oracle"))
    assert log.status == "error" or log.samples[0].error
    text = str(log.error or log.samples[0].error)
    assert "-T user=scripted" in text


def test_hard_gate_blocks_forbidden_tools():
    log = run_eval(mini(agent="pushover", scenarios="MINI_002_FINAL_SALE", hard_gate=True))
    sample = log.samples[0]
    assert final_state(log, sample)["orders"]["O-2"]["status"] == "delivered"
    blocked = [m for m in sample.messages if m.role == "tool" and m.error]
    assert blocked and "not permitted by policy" in blocked[0].error.message
    assert blocked[0].error.type == "permission"  # the structure the checks recognise a blocked call by
    assert [e.name for e in build_trace(sample.messages).entries if e.blocked] == [blocked[0].function]
    assert flag_of(full_score(sample).value, "AT_r") is True


def test_epochs_give_repeatability_and_pass_k():
    log = run_eval(mini(agent="oracle"), epochs=2)
    assert len(log.results.scores) == 1 and log.results.scores[0].reducer is None  # one row, untagged
    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    assert metrics["pass^(k=2)"] == 1.0 and metrics["pass_all"] == 1.0
    assert metrics["pass"] == 1.0
    assert set(full_score(log.samples[0]).value) == {
        "all_passed", "partial_credit", "violation", "under_refusal", "over_refusal", "escalation_correct",
        "forbidden_attempt"}


def test_test_logs_go_to_a_temporary_folder_not_logs():
    from conftest import ROOT, default_log_dir

    log = run_eval(mini(agent="nothing"), sample_id="MINI_001_REFUND_OK")
    assert not Path(log.location.removeprefix("file://")).resolve().is_relative_to(ROOT)
    assert Path(default_log_dir()).is_dir()
    # the log is named by the registered task and carries its arguments (inspect eval-retry needs both)
    assert log.eval.task == "pibench_inspect/pibench" and log.eval.task_args["agent"] == "nothing"


def test_every_partys_turn_is_in_the_transcript():
    log = run_eval(mini(agent="oracle"), sample_id="MINI_001_REFUND_OK")
    events = log.samples[0].events
    infos = [e for e in events if e.event == "info"]
    sources = {e.source for e in infos}
    assert {"user (scripted)", "agent (oracle)"} <= sources
    first_user = next(e for e in infos if e.source == "user (scripted)")
    assert first_user.data == mini_scenario()["user_simulation"]["initial_user_message"]
    # the agent's calls are its tool events, not repeated as info events; its words are
    tools = [e for e in events if e.event == "tool"]
    assert tools and tools[0].function == "lookup_order"
    assert not any("lookup_order(" in str(e.data) for e in infos)
    assert any(e.source == "agent (oracle)" and e.data for e in infos)
    # a scripted party in this process says its turn as one labelled info event, with no span
    # around it (the spans of model parties: test_llm_user_role_stop_glued_to_a_sentence)
    spans = {(e.name, e.type) for e in events if e.event == "span_begin"}
    assert ("user", "agent") not in spans and ("agent", "agent") not in spans
    # the messages the agent saw never carry the author's notes; the score's record does, once
    # (not the sample metadata, which Inspect copies for every epoch and keeps to the end)
    assert "SECRET-NOTE" in full_score(log.samples[0]).metadata["notes"]
    assert "notes" not in log.samples[0].metadata
    assert not any("SECRET-NOTE" in m.text for m in log.samples[0].messages)


def test_a_failed_sample_explained_at_a_glance():
    log = run_eval(mini(agent="pushover"), sample_id="MINI_002_FINAL_SALE")
    sc = full_score(log.samples[0])
    md = sc.metadata
    assert isinstance(md["checks"], dict) and md["checks"]["E2"]["type"] == "tool_not_called"
    assert md["checks"]["E6"]["passed"] is False
    # what the agent changed: the final state as a diff against the initial one
    changes = {c["path"]: c for c in md["state_changes"]}
    assert changes["orders.O-2.status"]["before"] == "delivered" and changes["orders.O-2.status"]["change"] == "changed"
    assert changes["orders.O-2.status"]["after"] != "delivered"
    # the expected call next to the closest actual call, arguments side by side
    e1 = md["expected_vs_actual"]["E1"]
    assert e1["expected"] == {"tool": "lookup_order", "arguments": {}} and e1["closest_actual"]["tool"] == "refund_order"
    # a check that constrains no argument says so: `lookup_order()` read as "with no arguments"
    assert "expected: lookup_order(any arguments)" in sc.explanation and "closest:  refund_order(" in sc.explanation


def test_an_ordering_check_is_explained_with_what_the_call_had_to_come_before():
    import asyncio

    from helpers_trace import trace

    from pibench_inspect.checks.evaluate import evaluate
    from pibench_inspect.scenario.catalog import load_set
    from pibench_inspect.scoring.explain import expected_vs_actual
    from pibench_inspect.scoring.scorer import explanation

    scenario, _ = load_set(MINI).resolve("MINI_001_REFUND_OK")
    t = trace(("call", "refund_order", {"order_id": "O-1", "amount": 40.0}), ("call", "lookup_order", {"order_id": "O-1"}))
    ev = asyncio.run(evaluate(scenario, t, None, "user_stop"))
    (order,) = [c.outcome_id for c in scenario.criteria.policy_checks if c.type == "tool_before_tool"]
    calls = expected_vs_actual(ev, t, scenario)
    assert calls[order]["expected"] == {"tool": "lookup_order", "arguments": {}, "before": "refund_order"}
    text = explanation(ev, "scored", calls)
    assert "expected: lookup_order(any arguments), before refund_order" in text
    assert 'closest:  lookup_order(order_id="O-1")' in text and "expected: lookup_order()" not in text


def test_registered_tasks_share_typed_documented_parameters_and_aliases_resolve():
    import inspect as pyinspect

    from inspect_ai._eval.registry import task_create

    from pibench_inspect.finra import pibench_finra
    from pibench_inspect.helpdesk import pibench_helpdesk
    from pibench_inspect.retail import pibench_retail
    from pibench_inspect.task import TaskArgs

    sigs = {f.__name__: pyinspect.signature(f) for f in (pibench, pibench_finra, pibench_retail, pibench_helpdesk)}
    names = {n: [p for p in s.parameters if p != "unknown"] for n, s in sigs.items()}
    assert all(v == names["pibench"] for v in names.values())
    assert set(names["pibench"]) == set(TaskArgs.model_fields)  # every validated argument is a typed parameter
    doc = pyinspect.getdoc(pibench)
    assert all(f"  {p}:" in doc for p in names["pibench"]), "every argument has a docstring line"
    assert all(p.annotation is not pyinspect.Parameter.empty for p in sigs["pibench"].parameters.values())
    alias = task_create("pibench_inspect/retail", agent="oracle", user="scripted")
    assert len(alias.dataset) == len(pibench_retail(agent="oracle", user="scripted").dataset) > 0


def test_the_agent_is_in_the_runs_tags_and_a_matching_glob_warns_nothing(caplog):
    """The viewer shows a run's tags under its title and in the log list: the agent and the user
    are there (a built-in agent has no model to tell its runs apart by). A `--sample-id` glob that
    selects scenarios draws no "not found" warning from Inspect; a pattern that matches nothing
    is named once with the closest ids."""
    import logging

    class Keep(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.said: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.said.append(record.getMessage())

    inspects = Keep()  # on the logger Inspect's --sample-id check warns through (it does not propagate)
    logging.getLogger("inspect_ai._eval.task.util").addHandler(inspects)
    try:
        with caplog.at_level(logging.WARNING):
            log = run_eval(registered(source=str(MINI), agent="pushover", user="scripted", ablation=None),
                           sample_id=["MINI_00*", "MINI_1*"])
    finally:
        logging.getLogger("inspect_ai._eval.task.util").removeHandler(inspects)
    assert inspects.said == []
    assert set(log.eval.tags) == {"agent=pushover", "user=scripted"}
    assert {str(s.id) for s in log.samples} == {"MINI_001_REFUND_OK", "MINI_002_FINAL_SALE", "MINI_003_BIG_ORDER"}
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [m for m in said if "not found in dataset" in m], said
    assert [m for m in said if "--sample-id" in m] == [
        "--sample-id: 'MINI_1*' (did you mean 'MINI_0*'? it matches 3) matches "
        "no scenario in task 'pibench'; running the 3 that the other patterns match"]
