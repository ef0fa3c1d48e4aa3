"""Nothing the agent under test is given names the case (issue 40, item 8).

A generated scenario's id spells out its family, the constraints it breaks and its envelope
(`RET_PRICE_ADJUSTMENT.account_hold.misdirection_speed`); a hand-written one names its trap.
External agents get the original's context metadata, whose `scenario_id` is therefore an opaque
case id for our own layout; an original pi-bench folder keeps its ids (parity). And a run's
console, which prints the metrics, does not state the label of the one scenario it ran.
The A2A path is tested in tests/test_a2a_purple.py.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from case_id_helpers import CASE_ID, assert_unnamed, generated_and_hand_written, reads
from conftest import NO_SAMPLE, SAMPLE, registered, run_eval, shipped
from pibench_inspect import env
from pibench_inspect.conversation.prompts import agent_case_id
from pibench_inspect.conversation.seeds import derive_seed
from pibench_inspect.scoring.metrics import label_rate

LABEL_RATES = ("under_refusal", "over_refusal", "esc_accuracy", "deny_runs", "allow_runs", "escalate_runs")


# ---------------------------------------------------------------- a local protocol agent

SEEN: list[dict] = []  # everything each Recorder was given, one dict per sample


class Recorder:
    """A protocol agent that keeps everything it is given, plays the lookups of the scenario's
    reference solution (so it reads tool results too) and stops."""

    model_name = "recorder"

    def __init__(self, calls: dict | None = None) -> None:
        self.calls = calls or {}
        self.record: dict = {"seed": None, "context": None, "tools": None, "incoming": []}
        SEEN.append(self.record)

    def set_seed(self, seed):
        self.record["seed"] = seed

    def init_state(self, benchmark_context, tools, message_history=None):
        self.record.update(context=benchmark_context, tools=tools, history=message_history)
        return {"plan": None, "next": 0}

    def generate(self, message, state):
        self.record["incoming"].append(message)
        if state["plan"] is None:  # the scenario is found by its opening, as a person would
            opening = message.get("content") or ""
            state["plan"] = next((c for key, c in self.calls.items() if key in opening), [])
        if state["next"] < len(state["plan"]):
            call = state["plan"][state["next"]]
            state["next"] += 1
            return {"role": "assistant", "content": "",
                    "tool_calls": [{"id": f"r{state['next']}", "name": call["name"], "arguments": call["arguments"]}]}, state
        return {"role": "assistant", "content": "###STOP###"}, state

    def is_stop(self, message):
        return False

    def stop(self, message=None, state=None):
        pass


def lookups(sids: list[str]) -> dict[str, list[dict]]:
    """The calls the Recorder plays, keyed by the first words of each scenario's opening."""
    return {shipped().entries[sid].scenario.user_simulation.initial_user_message[:60]: reads(shipped().entries[sid].scenario)
            for sid in sids}


def test_a_local_agent_is_given_an_opaque_case_id_and_nothing_that_names_the_case():
    gen, hand = generated_and_hand_written()
    SEEN.clear()
    args = {"calls": lookups([gen, hand])}
    log = run_eval(registered("retail", scenarios=[gen, hand], agent="test_case_ids:Recorder", agent_args=args,
                              user="scripted"))
    assert log.status == "success" and len(SEEN) == 2
    ids = {}
    for record in SEEN:
        (meta,) = {json.dumps(node["metadata"], sort_keys=True) for node in record["context"]}
        ids[record["incoming"][0]["content"][:60]] = json.loads(meta)["scenario_id"]
        assert any(m.get("role") == "tool" for m in record["incoming"]), "the agent read tool results"
    for sid in (gen, hand):
        entry = shipped().entries[sid]
        opaque = ids[entry.scenario.user_simulation.initial_user_message[:60]]
        assert CASE_ID.match(opaque) and opaque == agent_case_id(entry.scenario, entry.domain)
        record = next(r for r in SEEN if r["context"][0]["metadata"]["scenario_id"] == opaque)
        # the policy, the task text, the tools, every user line and tool result, the seed
        assert_unnamed(json.dumps(record, default=str), sid)
    assert len(set(ids.values())) == 2
    # the seeds are what they were: derived from the scenario, a number that names nothing
    assert sorted(r["seed"] for r in SEEN) == sorted(derive_seed(42, sid, 0) for sid in (gen, hand))


def test_the_case_id_is_the_same_in_every_run_and_version():
    """Fixed here: a changed salt or length would give agents (and their caches) new ids."""
    from types import SimpleNamespace

    domain = shipped().entries[generated_and_hand_written()[0]].domain
    scenario = SimpleNamespace(scenario_id="RET_PRICE_ADJUSTMENT.account_hold.misdirection_speed")
    assert agent_case_id(scenario, domain) == "case-addc5868569b"


@pytest.mark.skipif(not SAMPLE.is_dir(), reason=NO_SAMPLE)
def test_an_original_pibench_folder_keeps_its_ids_for_external_agents():
    from pibench_inspect.scenario.catalog import load_set

    sset = load_set(SAMPLE)
    sid = sorted(sset.entries)[0]
    assert sset.entries[sid].domain.original_layout
    SEEN.clear()
    log = run_eval(registered(source=str(SAMPLE), scenarios=[sid], agent="test_case_ids:Recorder", user="scripted",
                              max_steps=6))
    assert log.status == "success"
    (record,) = SEEN
    assert {node["metadata"]["scenario_id"] for node in record["context"]} == {sid}


# ---------------------------------------------------------------- the training environment


def test_the_environment_gives_a_policy_nothing_that_names_the_case():
    # the environment never carried the id (its observations are the messages and the tools):
    # this keeps it so, on a generated and a hand-written scenario played to the end
    for sid in generated_and_hand_written("helpdesk"):
        with env.make(sid) as e:
            obs = e.reset(seed=0)
            policy = env.builtin_policy(e, "oracle")
            seen, done = [obs], False
            while not done:
                obs, _, done, info = e.step(policy(obs))
                seen.append(obs)  # info, the trainer's reward, holds the expected label by design
            assert info["all_passed"]
            assert_unnamed(json.dumps(seen, default=str), sid)


# ---------------------------------------------------------------- the console of a run


def label_metrics(log) -> dict[str, float]:
    metrics = log.results.scores[0].metrics
    return {k: metrics[k].value for k in LABEL_RATES if k in metrics}


def test_a_one_scenario_run_does_not_state_its_label_on_the_console(capfd):
    gen, _ = generated_and_hand_written("finra")
    expected = shipped().entries[gen].scenario.expected
    capfd.readouterr()
    one = run_eval(registered("finra", scenarios=[gen], agent="oracle", user="scripted"), epochs=2)
    err = capfd.readouterr().err
    # Inspect prints these metrics at the end of the run; our line says which are not applicable
    # ("0 DENY runs; 0 ALLOW or ALLOW-CONDITIONAL runs" said ESCALATE)
    assert label_metrics(one) == {}
    assert "not applicable" not in err and not re.search(r"\b(DENY|ESCALATE|ALLOW)\b", err), err
    assert one.results.scores[0].metrics["pass"].value == 1.0
    # two scenarios of different label groups: every rate, as before (the mix, not who has which)
    other = next(sid for sid, e in sorted(shipped().entries.items()) if e.domain.name == "finra"
                 and label_rate(e.scenario.expected) != label_rate(expected))
    both = run_eval(registered("finra", scenarios=[gen, other], agent="oracle", user="scripted"))
    shown = label_metrics(both)
    assert set(shown) == set(LABEL_RATES) and sum(shown[k] for k in LABEL_RATES[3:]) == 2
    assert sum(math.isnan(shown[k]) for k in LABEL_RATES[:3]) == 1
    # -T label chose the label: the rates over it are what the person asked for
    chosen = run_eval(registered("finra", scenarios=[gen], agent="oracle", user="scripted", label=expected))
    assert set(label_metrics(chosen)) == set(LABEL_RATES)
