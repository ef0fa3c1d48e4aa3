"""`pibench report` over an ordinary folder (issue 42, item 6): the README's keyless demo runs and
an interrupted `pibench play` session, all made by the real commands. The session is a run of its
own scenario, interrupted: named, never an incomplete log nor errored samples of the whole set;
runs over different subsets are compared on their overlap, saying so; the judge column says in
words that no judge ran; and report.html is one self-contained page."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

BIN = Path(sys.executable).parent
PLAYED = "RET_001_WINDOW_BY_DELIVERY_DATE"


def run(*cmd: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=300, cwd=ROOT, **kw)


@pytest.mark.slow
def test_report_over_demo_runs_and_an_interrupted_play_session(tmp_path):
    logs = tmp_path / "logs"
    demo = ("-T", "user=scripted", "--model", "none", "--display", "none", "--log-dir", str(logs))
    r = run(str(BIN / "inspect"), "eval", "pibench_inspect/pibench", "-T", "agent=oracle", *demo, "--sample-id", "RET_00*")
    assert r.returncode == 0, r.stderr[-2000:]
    r = run(str(BIN / "inspect"), "eval", "pibench_inspect/pibench_retail", "-T", "agent=nothing", *demo,
            "--sample-id", "RET_00*,RET_01*")
    assert r.returncode == 0, r.stderr[-2000:]
    # a person opens a session and leaves it (the end of input, as Ctrl-C): the log is cancelled
    r = run(str(BIN / "pibench"), "play", PLAYED, "--log-dir", str(logs / "play"), stdin=subprocess.DEVNULL)
    assert r.returncode == 130, r.stdout[-2000:] + r.stderr[-2000:]
    [session] = list((logs / "play").glob("*.eval"))

    out = tmp_path / "report"
    r = run(str(BIN / "pibench"), "report", str(logs), "--out", str(out), "--resamples", "100")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    interrupted = (f"{session.name}: the `pibench play` session of {PLAYED} was interrupted (end of input) before it "
                   "finished: not scored, and not counted as an error")
    assert f"note: {interrupted}" in r.stderr
    assert not list(out.glob("results_human*.json"))  # no run of people, no errored samples of the set
    md = (out / "report.md").read_text()
    assert f"> **Note:** {interrupted}" in md and "errored" not in md.split("## Agent:")[0]
    # nothing ran 19 scenarios, the oracle 9 of them: compared on those 9, saying so
    compared = md.split("## Agents compared")[1].split("## Agent:")[0]
    assert ("On the 9 scenarios all of them ran: oracle, nothing. Compared on their overlap: nothing ran 19; here it "
            "is restated on these 9 scenarios alone.") in compared
    assert re.search(r"\| overall score \| 1\.000 \[1\.00, 1\.00\] \| 0\.\d{3} \[[^]]+\] \|", compared), compared
    # the judge column in words: a keyless run has no grader
    assert "| no judge ran (no grader model): NL checks not scored |" in md and "(T=0)" not in md

    page = (out / "report.html").read_text()
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) >= 5  # each run's columns and decisions, and the comparison
    assert page.count('<img src="data:image/png;base64,') == len(re.findall(r"!\[[^]]*\]\([^)]+\.png\)", md))
    assert not re.search(r"""(src|href)=["'](?!data:)""", page) and "<script" not in page.lower()
    assert "Content-Security-Policy" in page and "not scored, and not counted as an error" in page
    assert "<table>" in page and "On the 9 scenarios all of them ran" in page
    # the session's own log, re-scored: nothing to score (issue 41, defect 1), with --allow-partial too
    r = run(str(BIN / "pibench"), "rescore", str(session), "--out", str(tmp_path / "x.eval"), "--allow-partial")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert f"no sample to re-score: {PLAYED} (epoch 1): interrupted in pibench play (end of input)" in r.stderr
    assert json.loads((out / "results_oracle.json").read_text())["results"][0]["metrics"]["errors"] == 0
