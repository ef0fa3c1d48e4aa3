"""Every fact a scenario demands is learnable: the information-flow gate, the facts table the
simulated user answers from, and tool results free of the state mapping's bookkeeping."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from inspect_ai.model import ChatMessageAssistant, ChatMessageUser

from conftest import MINI, mock_outputs, run_eval, sample_scores, registered
from pibench_inspect.conversation.users import ScriptedUser, user_system_prompt
from pibench_inspect.authoring.info_flow import information_flow_problems
from pibench_inspect.scenario.catalog import load_set
from pibench_inspect.scenario.model import UserSimulation
from pibench_inspect.authoring.validate import validate_set

PIBENCH = str(Path(sys.executable).with_name("pibench"))
SCENARIO = "mini_001_refund_ok"
ORDER_FACT = {"topic": "order number", "asked_by": ["order number", "order id"], "answer": "It's order O-1."}


def edit(source, fn, name=SCENARIO):
    p = source / "scenarios" / "mini" / f"{name}.json"
    d = json.loads(p.read_text())
    fn(d)
    p.write_text(json.dumps(d))


def flow(source) -> list[str]:
    """The information-flow gate's problems on every scenario of a source."""
    return [p for e in load_set(source).entries.values() for p in information_flow_problems(e)]


@pytest.mark.slow
def test_pibench_validate_catches_an_id_the_agent_never_saw(mini_source):
    # O-2 exists in the seed, but nothing the agent sees before the call names it
    edit(mini_source, lambda d: d["reference_solution"]["tool_calls"].insert(
        0, {"name": "lookup_order", "arguments": {"order_id": "O-2"}}))
    r = subprocess.run([PIBENCH, "validate", "--source", str(mini_source)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    [problem] = [line for line in r.stdout.splitlines() if "cannot have learned" in line]
    assert f"{SCENARIO}.json: reference_solution.tool_calls[0] lookup_order.order_id = 'O-2'" in problem
    assert "scripted user and llm user" in problem


def test_gate_catches_a_fact_the_scripted_user_never_says(mini_source):
    # the LLM user knows the order number (known_facts); the scripted user never says it
    edit(mini_source, lambda d: d["user_simulation"].update(initial_user_message="Hi, I'd like a refund for my order."))
    out = flow(mini_source)
    assert out and all("with the scripted user:" in p for p in out)
    assert any("tool_calls[0] lookup_order.order_id = 'O-1'" in p for p in out)
    # a facts table entry the scripted user answers makes it learnable
    edit(mini_source, lambda d: d["user_simulation"].update(facts=[ORDER_FACT]))
    assert flow(mini_source) == []


def test_gate_checks_the_llm_user_separately(mini_source):
    edit(mini_source, lambda d: d["user_simulation"].update(
        known_facts="You bought a desk lamp.", scripted_turns=["It's order O-1.", "Thanks, bye!"],
        initial_user_message="Hi, I'd like a refund for my order."))
    out = flow(mini_source)
    assert out and all("with the llm user:" in p for p in out)


def test_results_of_unlearnable_calls_teach_nothing(mini_source):
    # the amount is read from the order record, but only a lookup the agent could make counts
    def hide(d):
        d["user_simulation"].update(initial_user_message="Hi, I'd like a refund.", known_facts="", scripted_turns=["Thanks, bye!"])
    edit(mini_source, hide)
    out = flow(mini_source)
    assert any("refund_order.order_id = 'O-1'" in p for p in out)


def test_derived_values_need_visible_sources(mini_source):
    def computed(d):
        d["reference_solution"]["tool_calls"][1]["arguments"]["amount"] = 34.0
        d["evaluation_criteria"]["policy_checks"][1]["arguments"]["amount"] = 34.0
    edit(mini_source, computed)
    assert any("refund_order.amount = 34.0" in p for p in flow(mini_source))
    edit(mini_source, lambda d: d["reference_solution"].update(
        derived=[{"call": 1, "argument": "amount", "from": [40.0, 6.0], "how": "order total less a 6.00 fee"}]))
    [problem] = flow(mini_source)
    assert "refund_order.amount derived from 6.0" in problem
    edit(mini_source, lambda d: d["user_simulation"].update(scripted_turns=["There's a 6 dollar scratch, take 6 off.", "Thanks, bye!"],
                                                            known_facts="order O-1; a 6 dollar scratch"))
    assert flow(mini_source) == []
    edit(mini_source, lambda d: d["reference_solution"].update(
        derived=[{"call": 7, "argument": "amount", "from": [40.0], "how": "x"}]))
    assert any("reference_solution.derived[0].call: 7 is not a call" in p for p in validate_set(load_set(mini_source)))


def test_free_text_must_name_a_parameter(tmp_path):
    import shutil

    src = tmp_path / "mini"
    shutil.copytree(MINI, src)
    tools = src / "domains" / "mini" / "tools.json"
    tools.write_text(tools.read_text().replace('"free_text": ["reason"]', '"free_text": ["reasons"]'))
    assert any("(escalate).free_text: 'reasons' is not a parameter" in p for p in validate_set(load_set(src)))


# --------------------------------------------------------------------------- the facts table


def sim(**kw) -> UserSimulation:
    base = dict(persona="p", initial_user_message="I want a refund.", scripted_turns=["Please just do it.", "Bye."])
    return UserSimulation(**{**base, **kw})


def said(text: str) -> list:
    return [ChatMessageUser(content="I want a refund."), ChatMessageAssistant(content=text)]


class Conversation:
    """The agent says something, the scripted user answers; the history grows as in the solver.
    `rebuild` makes a fresh user every turn from the history alone (as the A2A user server does)."""

    def __init__(self, sim_: UserSimulation, rebuild: bool = False):
        self.sim, self.rebuild, self.user = sim_, rebuild, ScriptedUser(sim_)
        self.messages: list = []

    def reply(self, agent_text: str | None = None):
        if agent_text is not None:
            self.messages.append(ChatMessageAssistant(content=agent_text))
        user = ScriptedUser(self.sim) if self.rebuild else self.user
        turn = asyncio.run(user.next(self.messages))
        if turn.text:
            self.messages.append(ChatMessageUser(content=turn.text))
        return turn.stop or turn.text


FACTS = [ORDER_FACT, {"topic": "full name", "asked_by": ["name"], "answer": "Dana Cole."}]


def test_scripted_user_answers_a_fact_before_its_next_turn_and_only_once():
    for rebuild in (False, True):
        c = Conversation(sim(facts=FACTS), rebuild)
        assert c.reply() == "I want a refund."
        assert c.reply("Sure. What is the Order Number and your names?") == "It's order O-1. Dana Cole."
        assert c.reply("And the order number again?") == "Please just do it."  # told once; the script resumes
        assert c.reply("Your order number is on the receipt.") == "Bye."  # a statement asks nothing
        assert c.reply("ok") == "###STOP###"


def test_a_fact_asked_later_and_a_trigger_inside_a_word():
    for rebuild in (False, True):
        c = Conversation(sim(facts=FACTS), rebuild)
        c.reply()
        assert c.reply("What is your username?") == "Please just do it."  # `name` must start a word
        assert c.reply("Could you tell me your name, please?") == "Dana Cole."
        assert c.reply("Thanks.") == "Bye."


CONSENT = {"topic": "go-ahead", "asked_by": ["shall i", "go ahead"], "answer": "Yes, please go ahead.", "repeat": True}


def test_a_consent_question_is_answered_every_time_it_is_asked():
    """A careful agent asks before acting on the user's behalf, maybe twice; the scripted user
    says yes each time and its next scripted line waits (before: the line came instead)."""
    for rebuild in (False, True):
        c = Conversation(sim(facts=[*FACTS, CONSENT]), rebuild)
        c.reply()
        assert c.reply("Shall I refund the 40.00 to your Visa?") == "Yes, please go ahead."
        assert c.reply("Done. Shall I also email you the label?") == "Yes, please go ahead."
        assert c.reply("All set.") == "Please just do it."  # then the script resumes
        assert c.reply("Anything else?") == "Bye."


def test_without_a_facts_table_the_sequence_is_fixed():
    u = ScriptedUser(sim())
    texts = [asyncio.run(u.next(said("What is your order number and name?"))).text for _ in range(3)]
    assert texts == ["I want a refund.", "Please just do it.", "Bye."]


def test_llm_user_prompt_lists_the_same_facts():
    prompt = user_system_prompt(sim(facts=[ORDER_FACT]), 8)
    assert "- order number: It's order O-1." in prompt
    assert "answer with it" in user_system_prompt(sim(facts=[ORDER_FACT]), 8)
    assert "answer with it" not in user_system_prompt(sim(), 8)


def test_a_model_agent_that_asks_gets_the_fact_through_inspect(mini_source, tmp_path):
    from inspect_ai.model import get_model

    edit(mini_source, lambda d: d["user_simulation"].update(
        initial_user_message="Hi, I'd like a refund.", facts=[ORDER_FACT]))
    agent = get_model("mockllm/model", custom_outputs=mock_outputs(
        "Happy to help. What is your order number?",
        ("lookup_order", {"order_id": "O-1"}, "c1"),
        "Thanks, I see it.",
        "Done.",
        "Goodbye.",
    ))
    log = run_eval(registered(agent="model", user="scripted", source=str(mini_source),
                                scenarios="MINI_001_REFUND_OK", judge="off"), model=agent,
                   log_dir=str(tmp_path / "logs"))
    assert log.status == "success", log.error
    users = [m.text for m in log.samples[0].messages if m.role == "user"]
    assert users[:3] == ["Hi, I'd like a refund.", "It's order O-1.", "Please just do it."]
    tools = [m.text for m in log.samples[0].messages if m.role == "tool"]
    assert tools and '"order_id": "O-1"' in tools[0]
    assert sample_scores(log)
