"""`pibench play` under hostile text and input (issue 41: defects 12, 13 and 16): what the
scenario, the simulated user or the model says never acts on the person's terminal, any line
that cannot be read is "try again", and a log folder that cannot be one is refused up front."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from conftest import MINI, full_score

PIBENCH = str(Path(sys.executable).with_name("pibench"))
OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # writes "pwned" to the clipboard of a terminal that obeys it
CLEAR = "\x1b[2J\x1b[H"
BIDI = "\u202e"


def hostile_source(tmp_path: Path) -> Path:
    """The mini source with escape sequences in its policy, the user's opening and a scripted turn."""
    src = tmp_path / "src"
    shutil.copytree(MINI, src)
    policy = src / "domains" / "mini" / "policy.md"
    policy.write_text(policy.read_text() + f"\nSee the note{OSC52}{CLEAR}.\n")
    path = src / "scenarios" / "mini" / "mini_001_refund_ok.json"
    scenario = json.loads(path.read_text())
    sim = scenario["user_simulation"]
    sim["initial_user_message"] += f" {BIDI}gnp.exe"
    sim["scripted_turns"][0] += f"\r{CLEAR}{OSC52}"
    path.write_text(json.dumps(scenario))
    return src


@pytest.mark.slow
def test_escapes_are_inert_and_unreadable_lines_are_tried_again(tmp_path):
    nested = "/call lookup_order " + "[" * 20_000 + "]" * 20_000  # past the JSON parser's depth
    deep = {"order_id": "O-1"}
    for _ in range(70):  # parses, but deeper than any log holds
        deep = {"x": deep}
    lines = [
        nested,
        f"/call lookup_order {json.dumps(deep)}",
        "x" * 150_000,  # longer than a line may be
        '/call lookup_order {"order_id": "O-1"}',
        '/call refund_order {"order_id": "O-1", "amount": 40.0}',
        '/decide ALLOW {"order_id": "O-1", "clause_ids": ["MINI-1.1"], "rationale": "delivered, not final sale"}',
        "Your refund of 40.00 is on its way.", "It is done.", "Goodbye.",
    ]
    r = subprocess.run([PIBENCH, "play", "MINI_001_REFUND_OK", "--judge", "off", "--source", str(hostile_source(tmp_path)),
                        "--log-dir", str(tmp_path / "logs")],
                       input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=300)
    out = r.stdout
    assert r.returncode == 0, (out[-3000:], r.stderr[-3000:])
    assert "the arguments of lookup_order cannot be read (RecursionError)" in out
    assert "the arguments of lookup_order: nested deeper than 64 levels" in out
    assert "the line is longer than 100,000 characters" in out
    assert "all checks passed: yes" in out
    # nothing a terminal acts on reached it; each sequence is shown as text instead
    for raw in ("\x1b", "\x07", "\r", BIDI):
        assert raw not in out and raw not in r.stderr, repr(raw)
    assert "See the note\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\x1b[H." in out  # the policy
    assert "user: Please just do it.\\x0d\\x1b[2J\\x1b[H\\x1b]52;c;cHduZWQ=\\x07" in out  # a scripted turn
    assert "\\u202egnp.exe" in out  # the opening
    # refused lines never reached the conversation; the log keeps what was said verbatim
    [path] = (tmp_path / "logs").glob("*.eval")
    sample = read_eval_log(str(path)).samples[0]
    assert full_score(sample).value["all_passed"] == 1.0
    assert [c.function for m in sample.messages if m.role == "assistant" for c in m.tool_calls or []] == [
        "lookup_order", "refund_order", "record_decision"]


def test_a_log_dir_that_cannot_be_a_folder_is_refused_before_anything_runs(tmp_path):
    """It used to be a traceback (FileExistsError) after the scenario set had been loaded."""
    import argparse

    from pibench_inspect.cli.play import log_dir_problem

    a_file = tmp_path / "taken"
    a_file.write_text("not a folder")
    r = subprocess.run([PIBENCH, "play", "MINI_001_REFUND_OK", "--source", str(MINI), "--log-dir", str(a_file)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout) == (2, "")  # nothing started
    assert r.stderr == f"error: --log-dir {a_file}: not a folder (it is a file); name a folder for the session's log\n"
    assert a_file.read_text() == "not a folder"
    below = argparse.Namespace(log_dir=str(a_file / "sub"))
    assert log_dir_problem(below) == f"--log-dir {a_file / 'sub'}: cannot create the folder (Not a directory)"


def test_the_terminal_shows_every_party_s_text_inert():
    """Every text the person sees goes through Terminal.show: the model's words (playing the
    user), the scenario's, tool results."""
    from pibench_inspect.cli.terminal import Terminal, inert

    out = StringIO()
    Terminal(out=out).show(f"agent: done{OSC52}{CLEAR}\r\nnext\x9b31m{BIDI}\ttab")
    assert out.getvalue() == "agent: done\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\x1b[H\nnext\\x9b31m\\u202e\ttab\n"
    assert inert("plain text, ünïcode and emoji 🙂\n") == "plain text, ünïcode and emoji 🙂\n"


def test_play_offers_only_what_inspect_eval_runs(tmp_path):
    """A scenario `inspect eval` skips as invalid is refused with the reason, and asked again."""
    from conftest import source_with_invalid_scenario
    from pibench_inspect.cli.play import choose_scenario
    from pibench_inspect.scenario.catalog import load_set

    src = source_with_invalid_scenario(tmp_path)

    class Person:
        shown: list[str] = []

        def show(self, text):
            self.shown.append(text)

        def read_line(self, prompt, completions=None):
            self.offered = completions("MINI_")
            raise EOFError

    person, sset = Person(), load_set(src)
    assert choose_scenario(person, sset, "MINI_BAD", False, None) is None
    assert person.shown[0].startswith("! scenario MINI_BAD is invalid and `inspect eval` skips it: ")
    assert "tool 'no_such_tool' is not in the mini catalog" in person.shown[0]
    assert person.offered == ["MINI_001_REFUND_OK", "MINI_002_FINAL_SALE", "MINI_003_BIG_ORDER"]
    for _ in range(20):  # --random never picks it
        assert choose_scenario(person, sset, None, True, None) != "MINI_BAD"
