"""`pibench rescore`: a log re-scored after a check changed, without re-running the agent."""

from __future__ import annotations

import json

import pytest

from inspect_ai.log import read_eval_log

from conftest import run_eval, full_score
from pibench_inspect.cli import main
from pibench_inspect.scoring.explain import check_list
from conftest import registered


def test_changed_check_changes_the_rescored_result(mini_source, tmp_path, capsys):
    log = run_eval(registered(source=str(mini_source), scenarios="MINI_001_REFUND_OK", agent="oracle",
                                user="scripted"), log_dir=str(tmp_path / "logs"))
    before = full_score(log.samples[0])
    assert before.value["all_passed"] == 1.0

    # unchanged scenarios: the same result
    assert main(["rescore", str(log.location), "--out", str(tmp_path / "same.eval")]) == 0
    same = full_score(read_eval_log(str(tmp_path / "same.eval")).samples[0])
    assert same.value == before.value and same.metadata["checks"] == before.metadata["checks"]
    assert same.metadata["ref"] != before.metadata["ref"]  # the rescored record, not the first one

    # fix (here: change) a state check; the stored final state is scored against it
    path = mini_source / "scenarios" / "mini" / "mini_001_refund_ok.json"
    doc = json.loads(path.read_text())
    doc["evaluation_criteria"]["state_field_checks"][0].update(equals="cancelled", notes="MINI-3.1: refund must cancel the order")
    path.write_text(json.dumps(doc))
    new_path = tmp_path / "rescored.eval"
    assert main(["rescore", str(log.location), "--out", str(new_path)]) == 0
    assert "compliance_rate 0.000" in capsys.readouterr().out
    new = read_eval_log(str(new_path))
    sc = full_score(new.samples[0])
    assert list(new.samples[0].scores) == ["pibench_scorer"]  # overwritten, not appended
    assert sc.value["all_passed"] == 0.0
    s1 = next(c for c in check_list(sc.metadata["checks"]) if c["outcome_id"] == "S1")
    assert s1["status"] == "failed" and "refunded" in s1["detail"]
    assert new.results.scores[0].metrics["pass"].value == 0.0
    assert new.eval.metadata["pibench_rescored"]["from"] == str(log.location)
    assert new.samples[0].messages == log.samples[0].messages  # the agent did not run again

    # the report of the re-scored log names the clause the check tests (its notes say which of
    # the scenario's two) and its notes
    out = tmp_path / "report"
    assert main(["report", str(new_path), "--out", str(out)]) == 0
    assert "| MINI_001_REFUND_OK / S1 | state_field | 1/1 | MINI-3.1 | MINI-3.1: refund must cancel the order |" in (
        out / "report.md").read_text()


def test_the_task_passes_its_scenario_set_to_its_scorer_and_a_rebuilt_scorer_loads_it(mini_source, tmp_path, monkeypatch):
    """The scorer a task builds gets the task's scenario set as an argument (no hand-over through a
    module global); the log keeps only its type name, and the scorer `inspect score LOG` rebuilds
    from the logged arguments loads the source again."""
    from inspect_ai import score
    from inspect_ai._eval.score import resolve_scorers  # what `inspect score LOG` rebuilds with

    import pibench_inspect.scoring.scorer as scoring

    loads: list = []
    real = scoring.load_set
    monkeypatch.setattr(scoring, "load_set", lambda source: loads.append(source) or real(source))
    log = run_eval(registered(source=str(mini_source), scenarios="MINI_001_REFUND_OK", agent="oracle",
                              user="scripted"), log_dir=str(tmp_path / "logs"))
    assert loads == []  # the task's own set
    assert log.eval.scorers[0].options["scenarios"] == "ScenarioSet"
    assert log.eval.scorers[0].options["source"] == str(mini_source)
    rebuilt = resolve_scorers(log)
    assert loads == [str(mini_source)]
    again = score(log, rebuilt, action="overwrite", display="none")
    assert full_score(again.samples[0]).value == full_score(log.samples[0]).value


@pytest.mark.slow
def test_rescore_changes_the_scoring_through_the_command(tmp_path):
    """`pibench rescore --scoring parity|strict`: the scorer's scoring argument changes there too.
    With no NL verdict neither scores the semantic tier (nothing was judged); parity scoring keeps
    the original's roll-up, a semantic score of 1.0, for its payload (issue 42)."""
    import subprocess
    import sys
    from pathlib import Path

    from conftest import MINI

    log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", agent="oracle", user="scripted",
                              judge="off", scoring="strict"), log_dir=str(tmp_path / "logs"))
    assert full_score(log.samples[0]).metadata["semantic_score"] is None
    pibench = str(Path(sys.executable).with_name("pibench"))
    for scoring, original in (("parity", 1.0), ("strict", None)):
        out = tmp_path / f"{scoring}.eval"
        r = subprocess.run([pibench, "rescore", str(log.location), "--out", str(out), "--scoring", scoring],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        new = read_eval_log(str(out))
        score = full_score(new.samples[0])
        assert score.metadata["scoring"] == scoring and score.metadata["semantic_score"] is None
        assert score.metadata.get("parity_semantic_score") == original
        assert "semantic" not in new.results.scores[0].metrics
        assert new.eval.metadata["pibench_rescored"]["scoring"] == scoring
    r = subprocess.run([pibench, "rescore", str(log.location), "--out", str(tmp_path / "x.eval"), "--scoring", "lax"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "argument --scoring: invalid choice: 'lax'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
