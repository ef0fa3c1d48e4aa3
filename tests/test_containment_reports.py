"""`pibench report` reports pi-bench runs only, and complete ones unless told otherwise
(issue 17, item 14): an unrelated task's log read as "score 0/2", a killed run's 4 of 16
samples as "4 runs, 4 completed"."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.model import get_model
from inspect_ai.scorer import match

from conftest import MINI, mock_outputs, run_eval, registered
from pibench_inspect.cli import main


def test_report_refuses_foreign_and_incomplete_logs(tmp_path: Path, capsys):
    foreign = run_eval(Task(dataset=[Sample(id=i, input="2+2?", target="4") for i in (1, 2)], scorer=match()),
                       model=get_model("mockllm/model", custom_outputs=mock_outputs("4", "4")),
                       log_dir=str(tmp_path / "foreign"))
    assert main(["report", foreign.location, "--out", str(tmp_path / "r0")]) == 2
    err = capsys.readouterr().err
    assert foreign.location in err and "not a pi-bench log" in err, err
    assert not (tmp_path / "r0" / "results.json").exists()

    ours = run_eval(registered(source=str(MINI), agent="oracle", user="scripted"),
                    log_dir=str(tmp_path / "ours"))
    killed = read_eval_log(ours.location)
    killed.status = "started"  # what a killed run leaves: a header that never reached success
    killed.samples = killed.samples[:1]
    write_eval_log(killed, str(tmp_path / "killed.eval"))
    assert main(["report", str(tmp_path / "killed.eval"), "--out", str(tmp_path / "r1")]) == 2
    err = capsys.readouterr().err
    assert "killed.eval: incomplete log (status 'started', 1 of 3 samples)" in err, err
    assert "--allow-partial" in err
    assert main(["report", str(tmp_path / "killed.eval"), "--out", str(tmp_path / "r2"), "--allow-partial",
                 "--resamples", "20"]) == 0
    assert (tmp_path / "r2" / "results.json").exists()
