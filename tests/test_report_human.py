"""Human baselines in `pibench report`: sessions a person played (`pibench play`) are a row of
their own. The sessions here go through the same seat and task as `pibench play`, with their
lines scripted instead of typed (tests/test_play.py drives the terminal itself)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import MINI, registered, run_eval
from pibench_inspect.conversation.human import HumanSeat
from pibench_inspect.conversation.seats import seated
from pibench_inspect.reports.logs import load_logs
from pibench_inspect.reports.report import analyse


class Lines:
    """A person whose lines are known in advance."""

    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)
        self.shown: list[str] = []

    def show(self, text: str) -> None:
        self.shown.append(text)

    async def ask(self, prompt: str, completions=None) -> str:
        if not self.lines:
            raise EOFError
        return self.lines.pop(0)


SESSIONS = {
    "MINI_001_REFUND_OK": ('/call lookup_order {"order_id": "O-1"}', '/call refund_order {"order_id": "O-1", "amount": 40}',
                                '/decide ALLOW {"order_id": "O-1", "clause_ids": ["MINI-1.1"], "rationale": "ok"}',
                                "Refunded.", "Done.", "Bye."),
    # a mistake a person makes: refunding a final-sale order
    "MINI_002_FINAL_SALE": ('/call lookup_order {"order_id": "O-2"}', '/call refund_order {"order_id": "O-2", "amount": 25.5}',
                                 "Refunded.", "Done.", "Bye."),
}


def session(root: Path, scenario: str, lines: Lines, **args) -> Path:
    with seated(HumanSeat(lines)):
        log = run_eval(registered(scenarios=scenario, source=str(MINI), **{"agent": "human", "user": "scripted", **args}),
                       log_dir=str(root))
    assert log.status == "success", log.error
    return Path(log.location)


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("human")
    out = {sid: session(root / "human", sid, Lines(*lines)) for sid, lines in SESSIONS.items()}
    out["oracle"] = Path(run_eval(registered(source=str(MINI), agent="oracle", user="scripted"),
                                  log_dir=str(root / "oracle")).location)
    return out


def test_sessions_of_different_scenarios_are_one_human_row(logs, tmp_path, capsys):
    from pibench_inspect.cli import main

    out = tmp_path / "report"
    capsys.readouterr()
    code = main(["report", str(logs["MINI_001_REFUND_OK"].parent), str(logs["oracle"]), "--out", str(out),
                 "--resamples", "100"])  # `pibench report`'s entry point, in process
    said = capsys.readouterr()
    assert code == 0, said.err
    assert "report for human, oracle" in said.out
    human = json.loads((out / "results_human.json").read_text())
    assert human["participants"]["agent"] == "human"
    metrics = human["results"][0]["metrics"]
    assert metrics["total_scenarios"] == 2 and metrics["completed"] == 2
    assert (out / "results_oracle.json").exists()
    md = (out / "report.md").read_text()
    runs = md.split("## Runs")[1].split("\n## ")[0]
    assert "| human (baseline) | pibench | human | none/none | 2 | 1 | 2 |" in runs
    # the people played 2 of the oracle's 3 scenarios: side by side on those two, saying so
    compared = md.split("## Agents compared")[1].split("## Agent:")[0]
    assert ("On the 2 scenarios all of them ran: human, oracle. Compared on their overlap: oracle ran 3; here it is "
            "restated on these 2 scenarios alone.") in compared
    assert "| overall score | 0.727 [0.45, 1.00] | 1.000 [1.00, 1.00] |" in compared
    assert "**Human baseline:** 2 `pibench play` session(s) of people playing the agent, on 2 scenario(s)" in md


def test_the_same_scenario_played_again_is_a_further_trial(logs, tmp_path):
    again = session(tmp_path, "MINI_001_REFUND_OK", Lines(*SESSIONS["MINI_001_REFUND_OK"]))
    [human] = analyse(load_logs([logs["MINI_001_REFUND_OK"], logs["MINI_002_FINAL_SALE"], again]), resamples=20)
    assert human.agent == "human"
    trials = sorted((r["scenario_id"], r["trial"]) for r in human.rows)
    assert trials == [("MINI_001_REFUND_OK", 0), ("MINI_001_REFUND_OK", 1), ("MINI_002_FINAL_SALE", 0)]
    passed = {(r["scenario_id"], r["trial"]): r["all_passed"] for r in human.rows}
    assert passed == {("MINI_001_REFUND_OK", 0): True, ("MINI_001_REFUND_OK", 1): True, ("MINI_002_FINAL_SALE", 0): False}


def test_model_runs_of_different_scenarios_stay_two_runs(tmp_path):
    a = run_eval(registered(scenarios="MINI_001_REFUND_OK", source=str(MINI), agent="oracle", user="scripted"),
                 log_dir=str(tmp_path / "a"))
    b = run_eval(registered(scenarios="MINI_002_FINAL_SALE", source=str(MINI), agent="oracle", user="scripted"),
                 log_dir=str(tmp_path / "b"))
    # only people's sessions pool across scenarios: a model's runs of different scenarios are two runs
    results = analyse(load_logs([a.location, b.location]), resamples=20)
    assert sorted(sorted(x.run.ids) for x in results) == [["MINI_001_REFUND_OK"], ["MINI_002_FINAL_SALE"]]


def test_a_person_playing_the_user_is_its_own_row(tmp_path):
    from inspect_ai.model import get_model

    from conftest import mock_outputs

    lines = Lines("", "Please just do it.", "/stop")
    with seated(HumanSeat(lines)):
        played = run_eval(registered(scenarios="MINI_001_REFUND_OK", source=str(MINI), agent="model", user="human",
                                     judge="off"),
                          model=get_model("mockllm/model", custom_outputs=mock_outputs("Hello.", "Sure.")),
                          log_dir=str(tmp_path / "people"))
    plain = run_eval(registered(scenarios="MINI_001_REFUND_OK", source=str(MINI), agent="model", user="scripted",
                                judge="off"),
                     model=get_model("mockllm/model", custom_outputs=mock_outputs("Hello.", "Sure.", "Bye.")),
                     log_dir=str(tmp_path / "sim"))
    assert [m.text for m in played.samples[0].messages if m.role == "user"] == [
        "Hi, I'd like a refund for order O-1.", "Please just do it."]
    agents = sorted(a.agent for a in analyse(load_logs([played.location, plain.location]), resamples=20))
    assert agents == ["mockllm/model", "mockllm/model [human user]"]
