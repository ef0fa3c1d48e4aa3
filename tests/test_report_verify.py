"""Reports verify what they read (issue 25, item 5), through the real commands: a log that lost
a sample entry (its header says 3, its body holds 2) or holds a score that is no finite number
is refused by `pibench report` and `pibench rescore` with a clear error; with --allow-partial the
report is written from what can be used and says what was left out, and results.json never holds
`Infinity` or `NaN`. `pibench report`'s refusal goes through the real command; the other command
lines through its entry point, in process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from inspect_ai.log import read_eval_log, write_eval_log

from conftest import MINI, registered, run_eval

BIN = Path(sys.executable).parent
PIBENCH = str(BIN / "pibench")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def complete_log(tmp_path_factory) -> Path:
    """A complete log of the registered task (in process: the commands under test are the
    readers, not the run that wrote it)."""
    logs = tmp_path_factory.mktemp("verify-logs")
    log = run_eval(registered(source=str(MINI), agent="oracle", user="scripted"), log_dir=str(logs))
    assert log.status == "success", log.error
    return next(logs.glob("*.eval"))


def damaged(complete_log: Path, out: Path, how: str) -> Path:
    log = read_eval_log(str(complete_log))
    assert log.results.total_samples == 3 and len(log.samples) == 3
    if how == "missing":
        log.samples = log.samples[:2]  # the header still announces 3
    else:
        score = log.samples[0].scores["pibench_scorer"]
        score.value = {**score.value, "partial_credit": float("inf")}  # what a `1e999` reads as
    write_eval_log(log, str(out))
    return out


def pibench(*args: str):
    """The real command, in a process of its own."""
    return subprocess.run([PIBENCH, *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


def pibench_here(capsys, *args: str) -> SimpleNamespace:
    """The same command line through the command's own entry point, in this process (what
    the process adds, the exit status and stderr, is checked once through `pibench` above)."""
    from pibench_inspect.cli import main

    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


@pytest.mark.parametrize("how, said", [("missing", "its header announces 3 sample runs, the log holds 2"),
                                       ("infinite", "its score's value.partial_credit is not a finite number")])
def test_report_and_rescore_refuse_a_damaged_log(complete_log, tmp_path, capsys, how, said):
    bad = damaged(complete_log, tmp_path / f"{how}.eval", how)
    r = pibench("report", str(bad), "--out", str(tmp_path / "r"), "--resamples", "20")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "damaged log" in r.stderr and said in r.stderr, r.stderr
    assert not (tmp_path / "r" / "results.json").exists()
    r = pibench_here(capsys, "rescore", str(bad), "--out", str(tmp_path / "re.eval"))
    assert r.returncode == 2 and said in r.stderr, r.stdout + r.stderr
    assert not (tmp_path / "re.eval").exists()


@pytest.mark.parametrize("how", ["missing", "infinite"])
def test_allow_partial_reports_what_it_can_and_says_what_is_missing(complete_log, tmp_path, capsys, how):
    bad = damaged(complete_log, tmp_path / f"{how}.eval", how)
    r = pibench_here(capsys, "report", str(bad), "--out", str(tmp_path / "r"), "--resamples", "20", "--allow-partial")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "left out of this report" in r.stderr
    text = (tmp_path / "r" / "results.json").read_text()
    assert "Infinity" not in text and "NaN" not in text
    payload = json.loads(text)
    assert len(payload["results"][0]["scenario_details"]) == 2
    assert "left out of this report" in (tmp_path / "r" / "report.md").read_text()


def test_the_green_payload_refuses_a_damaged_log(complete_log, tmp_path):
    from pibench_inspect.a2a.green.results import AssessmentFailed, assessment_payload

    for how in ("missing", "infinite"):
        bad = damaged(complete_log, tmp_path / f"{how}.eval", how)
        with pytest.raises(AssessmentFailed, match="is damaged"):
            assessment_payload(bad, "agent", "policy_compliance")
