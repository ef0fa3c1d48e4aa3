"""Every documented `-T` value, the removed arguments, model checks, `inspect score` and
`pibench list` errors, through the real command line.

Inspect reads `-T` values as YAML (on/off/yes/no/true/false arrive as booleans), so the values
go through Inspect's own `eval` command: one subprocess runs the command for every case in turn
(the same click command and argument parsing as `inspect eval`, without paying Python's start-up
per case); the exit codes users see are checked with real `inspect` / `pibench` subprocesses.
"""

from __future__ import annotations

import re

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inspect_ai.log import list_eval_logs, read_eval_log

from conftest import MINI, ROOT

BIN = Path(sys.executable).parent
DRIVER = """
import contextlib, io, json, sys
from inspect_ai._cli.main import inspect as cli
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            cli.main(argv, standalone_mode=False)
        out.append({"ok": True})
    except BaseException as e:
        out.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
print("RESULTS " + json.dumps(out))
"""

# (the -T values, the scenario id, what the recorded task arguments must say)
RUNS = [
    (["agent=oracle", "user=scripted", "judge=off", "hard_gate=on", "scoring=strict", "max_steps=30",
      "max_user_turns=3", "user_temperature=0.5", "user_seed=7", "a2a_timeout=30", "label=ALLOW",
      "column=Procedural Compliance", "agent_mode=stateless"], "MINI_001_REFUND_OK",
     {"judge": "off", "hard_gate": True, "scoring": "strict", "max_steps": 30, "user_seed": 7, "label": ["ALLOW"]}),
    (["agent=nothing", "user=solo", "judge=on", "hard_gate=off", "scoring=parity", "label=DENY,ESCALATE"],
     "MINI_002_FINAL_SALE", {"judge": "on", "hard_gate": False, "scoring": "parity", "user": "solo"}),
    (["agent=deny_all", "user=scripted", "judge=yes", "scoring=auto", "hard_gate=no"], "MINI_002_FINAL_SALE",
     {"judge": "on", "hard_gate": False}),
    (["agent=escalate_all", "user=scripted", "judge=no", "hard_gate=yes"], "MINI_003_BIG_ORDER",
     {"judge": "off", "hard_gate": True}),
    (["agent=pushover", "user=scripted", "judge=true", "hard_gate=true"], "MINI_002_FINAL_SALE", {"judge": "on"}),
    (["agent=examples.local_demo.demo_agent:CautiousAgent", "agent_args={}", "user=scripted", "judge=false",
      "hard_gate=false"], "MINI_001_REFUND_OK", {"judge": "off", "agent": "examples.local_demo.demo_agent:CautiousAgent"}),
    (["agent=oracle", "user=scripted", "judge=auto"], "MINI_003_BIG_ORDER", {"judge": "auto"}),  # --epochs 2
]
# (the -T values, --model, extra options, what the error must say)
FAILS = [
    (["agent=a2a", "user=scripted"], "none", [], "-T agent=a2a needs -T agent_url"),
    (["agent=oracle", "user=a2a"], "none", [], "-T user=a2a needs -T user_url"),
    (["user=scripted"], "none", [], "-T agent=model (the default) evaluates --model, but --model is none"),
    (["agent=oracle", "user=llm"], "none", [], "-T user=llm (the default) needs a model for the simulated user"),
    (["agent=oracle", "user=scripted", "epochs=3"], "none", [], "-T epochs: removed; repeat runs with Inspect's --epochs N"),
    (["agent=oracle", "user=scripted", "scenarios=MINI_001_REFUND_OK"], "none", [], "-T scenarios: removed"),
    (["agent=oracle", "user=scripted", "judge=maybe"], "none", [], "-T judge=maybe: Input should be 'auto', 'on' or 'off'"),
    (["agent=oracle", "user=scripted", "label=deny"], "none", [], "-T label=deny: unknown label(s) deny"),
    (["agent=oracle", "user=scripted", "column=Policy Activaton"], "none", [],
     "did you mean 'Policy Activation'?"),
    (["agent=oracle", "user=scripted"], "none", ["--sample-id", "MINI_01_REFUND"],
     "--sample-id MINI_01_REFUND: no scenario 'MINI_01_REFUND' (closest: MINI_001_REFUND_OK"),
]


def eval_argv(values, model, extra, log_dir):
    argv = ["eval", "pibench_inspect/pibench", "-T", f"source={MINI}"]
    for v in values:
        argv += ["-T", v]
    return argv + ["--model", model, *extra, "--log-dir", str(log_dir), "--display", "none"]


@pytest.mark.slow
def test_every_documented_task_argument_value_through_inspect_eval(tmp_path):
    argvs = [eval_argv(v, "none", ["--sample-id", sid], tmp_path / f"run{i}") for i, (v, sid, _) in enumerate(RUNS)]
    argvs[-1] += ["--epochs", "2"]  # Inspect's own epochs give the repeatability metrics
    argvs += [eval_argv(v, m, x, tmp_path / "fail") for v, m, x, _ in FAILS]
    r = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(argvs)], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULTS ")), None)
    assert line, r.stdout[-3000:] + r.stderr[-3000:]
    results = json.loads(line.removeprefix("RESULTS "))
    for (values, sid, expected), res in zip(RUNS, results):
        assert res["ok"], (values, res)
    for i, (values, sid, expected) in enumerate(RUNS):
        (info,) = list_eval_logs(str(tmp_path / f"run{i}"))
        log = read_eval_log(info)
        assert log.status == "success" and {s.id for s in log.samples} == {sid}, values
        recorded = log.eval.metadata["pibench"]
        assert {k: recorded[k] for k in expected} == expected, values
        assert log.samples[0].scores["pibench_scorer"].value["all_passed"] in (0.0, 1.0)
    twice = read_eval_log(list_eval_logs(str(tmp_path / f"run{len(RUNS) - 1}"))[0])
    assert len(twice.samples) == 2 and len(twice.results.scores) == 1
    assert twice.results.scores[0].metrics["pass^(k=2)"].value == 1.0
    for (values, _, _, message), res in zip(FAILS, results[len(RUNS):]):
        assert not res["ok"] and res["error"].startswith("Refusal: ") and message in res["error"], (values, res)
    assert not (tmp_path / "fail").exists() or not list_eval_logs(str(tmp_path / "fail"))  # failed before running

    # Inspect's own re-scoring rebuilds the scorer from the arguments the log recorded
    first = read_eval_log(list_eval_logs(str(tmp_path / "run0"))[0].name)
    out = tmp_path / "rescored.eval"
    r = subprocess.run([str(BIN / "inspect"), "score", first.location, "--action", "overwrite", "--output-file", str(out), "--display", "none"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    again = read_eval_log(str(out))
    assert list(again.samples[0].scores) == ["pibench_scorer"]
    assert again.samples[0].scores["pibench_scorer"].value == first.samples[0].scores["pibench_scorer"].value
    assert again.results.scores[0].metrics["pass"].value == first.results.scores[0].metrics["pass"].value


@pytest.mark.slow
def test_exit_codes_inspect_score_and_pibench_list(tmp_path):
    # a run that cannot work stops before it starts, non-zero, naming the keyless fix
    r = subprocess.run([str(BIN / "inspect"), *eval_argv([], "none", [], tmp_path / "none")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "-T agent=oracle -T user=scripted --model none" in r.stdout + r.stderr
    r = subprocess.run([str(BIN / "pibench"), "list", "--domain", "retial"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and "retial" in r.stderr and "retail" in r.stderr and r.stdout == ""


def test_validate_and_floor_show_progress(capsys):
    from pibench_inspect.cli import main

    assert main(["validate", "--source", str(MINI)]) == 0
    assert main(["floor", "--source", str(MINI), "--domain", "mini"]) == 0
    err = capsys.readouterr().err
    # the gates run in worker processes (validate --jobs): the first to finish is named first
    assert re.search(r"validate: 1/3 \(MINI_00[123]_[A-Z_]+\)", err) and "validate: 3/3" in err
    assert "floor: 3/3 (mini MINI_003_BIG_ORDER); done in " in err


def test_progress_says_the_time_taken_and_an_estimate_of_the_time_left(capsys):
    """Issue 42: `pibench validate` took four minutes with progress every 10 scenarios and no
    estimate of the time left."""
    from pibench_inspect.cli.main import duration, progress_printer

    now = [100.0]
    show = progress_printer("validate", every=10, quiet_for=30, clock=lambda: now[0])
    for i in range(1, 489):
        now[0] += 0.5  # half a second a scenario
        show(i, 488, f"S{i}")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "validate: 1/488 (S1); 0s so far, about 4m04s left"
    assert lines[1] == "validate: 10/488 (S10); 5s so far, about 3m59s left"
    assert lines[-1] == "validate: 488/488 (S488); done in 4m04s"
    assert duration(3725) == "1h02m" and duration(59.6) == "1m00s"
    # a slow stretch is reported within `quiet_for` seconds, not only every 10 items
    show = progress_printer("floor", every=10, quiet_for=30, clock=lambda: now[0])
    now[0] += 40
    show(2, 5, "x")
    assert capsys.readouterr().err == "floor: 2/5 (x); 40s so far, about 1m00s left\n"


@pytest.mark.slow
def test_validate_prints_its_progress_with_the_time_left(tmp_path):
    r = subprocess.run([str(BIN / "pibench"), "validate", "--source", str(MINI), "--jobs", "1"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("validate: ")]
    assert re.fullmatch(r"validate: 1/3 \(MINI_001_REFUND_OK\); \d+s so far, about \d+s left", lines[0]), lines
    assert re.fullmatch(r"validate: 3/3 \(MINI_003_BIG_ORDER\); done in \d+s", lines[-1]), lines
