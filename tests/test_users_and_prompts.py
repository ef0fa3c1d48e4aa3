"""Simulated users and the agent prompt: what each side may see."""

from __future__ import annotations

import asyncio

from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall

from conftest import MINI
from pibench_inspect.conversation.prompts import system_prompt
from pibench_inspect.conversation.users import ScriptedUser, split_stop, user_system_prompt, user_view
from pibench_inspect.scenario.catalog import load_set


def test_split_stop():
    assert split_stop("###STOP###").stop == "###STOP###" and split_stop("###STOP###").text == ""
    t = split_stop("Thanks, bye! ###STOP###")
    assert (t.text, t.stop) == ("Thanks, bye!", "###STOP###")
    assert split_stop("###TRANSFER###").stop == "###TRANSFER###"
    assert split_stop("keep going").stop is None


def test_scripted_user_replays_then_stops():
    s, _ = load_set(MINI).resolve("MINI_001_REFUND_OK")
    u = ScriptedUser(s.user_simulation)
    said = [asyncio.run(u.next([])) for _ in range(5)]
    assert [t.text for t in said[:3]] == [s.user_simulation.initial_user_message, "Please just do it.", "Thanks, bye!"]
    assert said[3].stop == "###STOP###" and said[4].stop == "###STOP###"


def test_user_never_sees_tool_traffic():
    msgs = [
        ChatMessageUser(content="I want a refund"),
        ChatMessageAssistant(content="", tool_calls=[ToolCall(id="a", function="lookup_order", arguments={"order_id": "O-3"})]),
        ChatMessageTool(content='{"risk_note": "watchlist"}', tool_call_id="a", function="lookup_order"),
        ChatMessageAssistant(content="I have passed this to a supervisor."),
    ]
    view = user_view(msgs)
    text = " ".join(m.text for m in view)
    assert "watchlist" not in text and "lookup_order" not in text
    assert [m.role for m in view] == ["assistant", "user"]
    assert view[1].text.startswith("Service representative says:")


def test_user_prompt_has_the_persona_and_no_hidden_state():
    s, _ = load_set(MINI).resolve("MINI_003_BIG_ORDER")
    prompt = user_system_prompt(s.user_simulation, 8)
    assert s.user_simulation.persona in prompt and "###STOP###" in prompt
    assert "watchlist" not in prompt and s.meta.notes not in prompt


def test_agent_prompt_has_policy_and_contract_but_no_answer():
    s, d = load_set(MINI).resolve("MINI_003_BIG_ORDER")
    prompt = system_prompt(s, d)
    assert "MINI-1.3" in prompt and "record_decision" in prompt and "2026-11-02T10:00:00+00:00" in prompt
    assert "SECRET-NOTE" not in prompt and s.scenario_id not in prompt
    assert "earlier contact" not in prompt  # the state patch is never printed
    # our policies define the decision values; the generic glosses must not read as overriding them
    assert "Decision values (where the policy defines them, its definitions govern):\n- ALLOW:" in prompt


def test_an_original_folder_keeps_the_originals_decision_values_list():
    import pytest

    from conftest import NO_SAMPLE, SAMPLE

    if not SAMPLE.is_dir():
        pytest.skip(NO_SAMPLE)
    sset = load_set(SAMPLE)
    s, d = sset.resolve(sorted(sset.entries)[0])
    prompt = system_prompt(s, d)
    assert "Decision values:\n- ALLOW:" in prompt and "its definitions govern" not in prompt


def _llm_user_configs(role_config=None, **task_args):
    """What the LLM user generated with, per sample (oracle agent, two scenarios, two epochs)."""
    from inspect_ai.model import GenerateConfig, get_model

    from conftest import MINI, mock_outputs, registered, run_eval

    user = get_model("mockllm/model", config=role_config or GenerateConfig(),
                     custom_outputs=mock_outputs(*["Thanks, bye. ###STOP###"] * 8))
    log = run_eval(registered(source=str(MINI), agent="oracle", user="llm", **task_args),
                   sample_id=["MINI_001_REFUND_OK", "MINI_002_FINAL_SALE"], epochs=2, model_roles={"user": user})
    out = {}
    for s in log.samples:
        (event,) = [e for e in s.events if e.event == "model" and e.role == "user"]
        out[(str(s.id), s.epoch)] = (event.config.temperature, event.config.seed, s.store["pibench:user_config"])
    return out, log


def test_role_settings_are_kept_and_seeds_derive_per_scenario_and_epoch(tmp_path):
    from inspect_ai.model import GenerateConfig

    from pibench_inspect.reports.logs import load_logs
    from pibench_inspect.reports.provenance import provenance
    from pibench_inspect.reports.rows import log_rows
    from pibench_inspect.conversation.seeds import derive_seed

    role, _ = _llm_user_configs(GenerateConfig(temperature=0.7, seed=7))
    assert {(t, seed) for t, seed, _ in role.values()} == {(0.7, 7)}  # not overridden by -T defaults
    derived, log = _llm_user_configs()
    assert all(t == 0.0 for t, _, _ in derived.values())
    assert {k: seed for k, (_, seed, _) in derived.items()} == {
        (sid, ep): derive_seed(42, sid, ep - 1) for sid, ep in derived}  # as remote parties get theirs
    given, _ = _llm_user_configs(GenerateConfig(temperature=0.7, seed=7), user_temperature=0.2, user_seed=5)
    assert {k: (t, seed) for k, (t, seed, _) in given.items()} == {
        (sid, ep): (0.2, derive_seed(5, sid, ep - 1)) for sid, ep in given}
    # provenance says what the user actually ran with
    loaded = load_logs([log.location])
    user = provenance(loaded, log_rows(loaded))["logs"][0]["models"]["user"]["generate_config"]
    assert user == {"temperature": 0.0, "seed": "derived per scenario and epoch from 42", "max_tokens": 256}
