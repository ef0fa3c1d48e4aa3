"""`pibench play`: a person at the controls, driven through a pseudo-terminal as a person would.

Each session's log is scored against the same moves played through `inspect eval` (a mockllm
agent making the person's accepted moves, or the scripted user saying the person's lines).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest

from conftest import MINI, mock_outputs, registered, run_eval, full_score
from inspect_ai.log import read_eval_log
from inspect_ai.model import get_model

PIBENCH = str(Path(sys.executable).with_name("pibench"))
SCENARIO = "MINI_001_REFUND_OK"
LOOKUP = {"order_id": "O-1"}
REFUND = {"order_id": "O-1", "amount": 40.0}
DECIDE = {"order_id": "O-1", "clause_ids": ["MINI-1.1"], "rationale": "delivered, not final sale"}
SAID = ["Your refund of 40.00 is on its way.", "It is done.", "Goodbye."]


def spawn(*args: str, log_dir: Path) -> pexpect.spawn:
    return pexpect.spawn(PIBENCH, ["play", *args, "--source", str(MINI), "--log-dir", str(log_dir)],
                         encoding="utf-8", timeout=60, dimensions=(40, 250))


def only_log(log_dir: Path):
    logs = sorted(log_dir.glob("*.eval"))
    assert len(logs) == 1, logs
    return read_eval_log(str(logs[0]))


def outcome(sample) -> tuple:
    """What a run scored: the score value, the decision, and each check's outcome."""
    from pibench_inspect.scoring.explain import check_list

    score = full_score(sample)
    checks = tuple((c["outcome_id"], c["passed"], c.get("status")) for c in check_list(score.metadata["checks"]))
    return score.value, score.answer, checks, score.metadata["termination"]


def test_play_as_the_agent_scores_as_the_same_moves_through_inspect_eval(tmp_path):
    child = spawn(SCENARIO, "--judge", "off", log_dir=tmp_path)
    child.expect("System prompt")
    child.expect("MINI-1.1")  # the policy, as the agent is told it
    child.expect(r"lookup_order\(order_id\)")  # the tools and their schemas
    child.expect("user: Hi, I'd like a refund for order O-1.")
    child.expect("agent> ")
    # Tab completes a tool name; a call that does not fit the schema is refused, and tried again
    child.send("/call look\t")
    child.expect("lookup_order ")
    child.send('{"order": "O-1"}\r')
    child.expect("do not fit lookup_order's schema: .*'order_id' is a required property")
    child.expect("agent> ")
    child.sendline('/call lookup_ordr {"order_id": "O-1"}')
    child.expect(r"no tool 'lookup_ordr' is offered \(did you mean lookup_order")
    child.sendline('/call lookup_order {"order_id": "O-1",}')
    child.expect("are not JSON")
    child.sendline('/call lookup_order {"order_id": "O-1"}')
    child.expect(r"\[lookup_order result\]")
    child.expect('"status": "delivered"')
    child.sendline('/call refund_order {"order_id": "O-1", "amount": 40.0}')
    child.expect(r"\[refund_order result\]")
    child.sendline('/decide ALLOW {"order_id": "O-1", "clause_ids": ["MINI-1.1"], "rationale": "delivered, not final sale"}')
    child.expect(r"\[record_decision result\]")
    child.sendline(SAID[0])
    child.expect("user: Please just do it.")
    child.sendline(SAID[1])
    child.expect("user: Thanks, bye!")
    child.sendline(SAID[2])
    child.expect("Result of MINI_001_REFUND_OK")
    child.expect("all checks passed: yes")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert "Traceback" not in child.before

    log = only_log(tmp_path)
    assert log.status == "success" and log.eval.task == "pibench_inspect/pibench"
    assert log.eval.metadata["pibench"]["agent"] == "human"
    played = log.samples[0]
    assert played.store["pibench:agent"] == "human"
    # the refused lines never reached the conversation: three calls, each accepted once
    calls = [c.function for m in played.messages if m.role == "assistant" for c in m.tool_calls or []]
    assert calls == ["lookup_order", "refund_order", "record_decision"]

    model = get_model("mockllm/model", custom_outputs=mock_outputs(
        ("lookup_order", LOOKUP, "t1"), ("refund_order", REFUND, "t2"),
        ("record_decision", {"decision": "ALLOW", **DECIDE}, "t3"), *SAID))
    same_moves = run_eval(registered(scenarios=SCENARIO, source=str(MINI), agent="model", user="scripted",
                                     judge="off"), model=model)
    assert outcome(played) == outcome(same_moves.samples[0])
    assert full_score(played).value["all_passed"] == 1.0


@pytest.mark.slow
def test_play_as_the_user_against_a_model_scores_as_the_scripted_user_saying_the_same(tmp_path):
    child = spawn(SCENARIO, "--as", "user", "--model", "mockllm/model", log_dir=tmp_path)
    child.expect("You are the user")
    child.expect("You are: customer")  # the simulated user's brief
    child.expect("you> ")
    child.send("\r")  # Enter opens with the scenario's first message
    child.expect("agent: Default output from mockllm/model")
    child.expect("you> ")
    child.sendline("/wat")
    child.expect("unknown command /wat")
    child.sendline("Please just do it.")
    child.expect("agent: Default output")
    child.sendline("Thanks, bye!")
    child.expect("agent: Default output")
    child.sendline("/stop")
    child.expect("Result of MINI_001_REFUND_OK")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before

    log = only_log(tmp_path)
    played = log.samples[0]
    assert log.eval.metadata["pibench"]["user"] == "human" and played.store["pibench:user_model"] == "human"
    users = [m.text for m in played.messages if m.role == "user"]
    assert users == ["Hi, I'd like a refund for order O-1.", "Please just do it.", "Thanks, bye!"]
    # the scripted user says exactly those lines, then stops: the same conversation
    same = run_eval(registered(scenarios=SCENARIO, source=str(MINI), agent="model", user="scripted"),
                    model=get_model("mockllm/model"))
    assert outcome(played) == outcome(same.samples[0])


@pytest.mark.slow
def test_ctrl_c_mid_session_leaves_an_interrupted_log_and_exit_130(tmp_path):
    child = spawn(SCENARIO, log_dir=tmp_path)
    child.expect("agent> ")
    child.sendline('/call lookup_order {"order_id": "O-1"}')
    child.expect(r"\[lookup_order result\]")
    child.expect("agent> ")
    child.sendintr()
    child.expect("session interrupted: the log is marked cancelled")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "Traceback" not in child.before

    log = only_log(tmp_path)
    assert log.status == "cancelled"
    sample = log.samples[0]
    assert sample.store["pibench:interrupted"] == "ctrl-c"
    assert [c.function for m in sample.messages if m.role == "assistant" for c in m.tool_calls or []] == ["lookup_order"]
    assert not sample.scores  # never scored: an interrupted session is not a result


@pytest.mark.slow
def test_an_unknown_id_is_asked_again_and_the_end_of_input_stops_cleanly(tmp_path):
    child = spawn("MINI_01_REFUND", log_dir=tmp_path)
    child.expect(r"no scenario 'MINI_01_REFUND' \(closest: MINI_001_REFUND_OK")
    child.expect("scenario id")
    child.send("MINI_001\t")  # Tab completes the id
    child.expect("MINI_001_REFUND_OK")
    child.send("\r")
    child.expect("agent> ")
    child.sendeof()
    child.expect("session input ended: the log is marked cancelled")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "Traceback" not in child.before
    log = only_log(tmp_path)
    assert log.status == "cancelled" and log.samples[0].store["pibench:interrupted"] == "eof"


def test_play_refuses_what_it_cannot_run_in_one_line(tmp_path):
    import subprocess

    r = subprocess.run([PIBENCH, "play", SCENARIO, "--as", "user", "--source", str(MINI)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--as user plays against the model under test: pass --model" in r.stderr


# ---- the person's input, line by line (no terminal)

@pytest.fixture(scope="module")
def agent_input():
    from pibench_inspect.conversation.human import AgentInput
    from pibench_inspect.environment.merge import domain_document
    from pibench_inspect.environment.state import StateDB
    from pibench_inspect.environment.tools import build_tools
    from pibench_inspect.scenario.catalog import load_set

    sset = load_set(MINI)
    scenario, domain = sset.resolve(SCENARIO)
    db = StateDB(domain_document(domain, scenario), seed=domain.seed_state)
    yield AgentInput(build_tools(domain, scenario, db), domain), scenario, domain
    db.close()


@pytest.mark.parametrize("line, said", [
    ("", "type a message for the user"),
    ("/call", "/call needs a tool name"),
    ("/call nope {}", "no tool 'nope' is offered"),
    ("/call lookup_order [1]", "must be a JSON object"),
    ("/call lookup_order {'order_id': 'O-1'}", "are not JSON"),
    ('/call lookup_order {"order_id": 7}', "7 is not of type 'string'"),
    ('/call lookup_order {"order_id": NaN}', "NaN is not a JSON number"),
    ("/decide MAYBE {}", "the decision is one of ALLOW, ALLOW-CONDITIONAL, DENY, ESCALATE"),
    ('/decide DENY {"order_id": "O-1"}', "'clause_ids' is a required property"),
    ("/cal lookup_order {}", "unknown command /cal (did you mean /call?)"),
])
def test_bad_input_is_one_line_and_plays_nothing(agent_input, line, said):
    from pibench_inspect.conversation.human import BadInput

    reader = agent_input[0]
    with pytest.raises(BadInput) as err:
        reader.parse(line)
    assert said in str(err.value) and "\n" not in str(err.value)


def test_lines_become_the_agents_messages(agent_input):
    reader, scenario, domain = agent_input
    text = reader.parse("  Let me check that.  ")
    assert text.text == "Let me check that." and not text.tool_calls
    call = reader.parse('/call lookup_order{"order_id": "O-1"}').tool_calls[0]
    assert (call.function, call.arguments) == ("lookup_order", {"order_id": "O-1"})
    decision = reader.parse('/decide deny {"order_id": "O-1", "clause_ids": ["MINI-1.2"], "rationale": "r"}').tool_calls[0]
    assert decision.function == "record_decision" and decision.arguments["decision"] == "DENY"
    assert reader.parse("/stop").text == "###STOP###"
    assert reader.parse("/tools") == "/tools"
    shorthand = reader.parse('lookup_order {"order_id": "O-1"}').tool_calls[0]
    assert (shorthand.function, shorthand.arguments) == ("lookup_order", {"order_id": "O-1"})
    assert not reader.parse("lookup_order is what I will use").tool_calls  # a tool's name in a sentence
    assert reader.complete("/ca") == ["/call "]
    assert reader.complete("look") == ["lookup_order "]
    assert reader.complete("/call re") == ["/call record_decision ", "/call refund_order "]
    assert reader.complete("/decide ALLOW-") == ["/decide ALLOW-CONDITIONAL "]


def test_decide_without_a_decision_tool_is_the_json_channel(agent_input):
    from pibench_inspect.conversation.human import AgentInput

    reader, _, domain = agent_input
    no_tool = AgentInput([t for t in reader.tools if t.name != "record_decision"], domain)
    message = no_tool.parse("/decide ESCALATE")
    assert not message.tool_calls and '"decision": "ESCALATE"' in message.text


def test_agent_human_needs_pibench_play():
    with pytest.raises(ValueError, match="pibench play"):
        registered(scenarios=SCENARIO, source=str(MINI), agent="human", user="scripted")
    with pytest.raises(ValueError, match="pibench play"):
        registered(scenarios=SCENARIO, source=str(MINI), agent="oracle", user="human")


def test_a_console_whose_input_ends_marks_the_sample_interrupted_by_eof():
    from pibench_inspect.conversation.human import HumanSeat
    from pibench_inspect.conversation.seats import seated

    class OneLine:
        def __init__(self):
            self.lines = ['/call lookup_order {"order_id": "O-1"}']

        def show(self, text):
            pass

        async def ask(self, prompt, completions=None):
            if not self.lines:
                raise EOFError
            return self.lines.pop(0)

    with seated(HumanSeat(OneLine())):
        log = run_eval(registered(scenarios=SCENARIO, source=str(MINI), agent="human", user="scripted"),
                       fail_on_error=False)
    sample = log.samples[0]
    assert sample.error is not None and sample.store["pibench:interrupted"] == "eof"


@pytest.mark.slow
def test_a_random_pick_with_no_input_ends_cleanly_and_names_the_scenario(tmp_path):
    import subprocess

    r = subprocess.run([PIBENCH, "play", "--random", "--source", str(MINI), "--log-dir", str(tmp_path)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert r.returncode == 130 and "Traceback" not in r.stdout + r.stderr
    assert "a scenario picked at random" in r.stdout
    picked = only_log(tmp_path).samples[0].id
    assert f"session input ended: the log is marked cancelled (interrupted) and not scored (the scenario was {picked})" in r.stdout


@pytest.mark.slow
def test_a_session_started_with_sigint_ignored_still_stops_at_the_end_of_input(tmp_path):
    """A background job of a non-interactive shell (`cmd &` in a script, as a CI step may start
    it) inherits SIGINT ignored, and Python then installs no handler of its own. The end of
    input stops a session by raising SIGINT (as Ctrl-C does), so such a session idled forever
    after its last line; `pibench play` now takes SIGINT back and ends as it does elsewhere."""
    import signal
    import subprocess

    r = subprocess.run([PIBENCH, "play", "--random", "--source", str(MINI), "--log-dir", str(tmp_path)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert r.returncode == 130 and "Traceback" not in r.stdout + r.stderr
    assert "session input ended: the log is marked cancelled" in r.stdout
    assert only_log(tmp_path).status == "cancelled"
