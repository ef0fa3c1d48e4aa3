"""`pibench rescore`, `compare` and `report` under hostile input (issue 41, defects 1, 2, 4, 5 and
16, and its "Also" items), through the real commands.

Each test's logs are made in process (the commands under test read them; making them is not
what is tested); the commands run in a process of their own, as a person runs them.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import EvalError, read_eval_log, write_eval_log

from conftest import MINI, ROOT, mini_copies, mini_scenario, registered, run_eval

PIBENCH = str(Path(sys.executable).with_name("pibench"))
FAILING = "FAULT_001"


def pibench(*args: str, timeout: float = 120, memory_gb: float | None = None) -> subprocess.CompletedProcess:
    """The real command. `memory_gb`: its address space is bounded, so a command that reads
    without limit fails here instead of exhausting the machine."""
    limit = None if memory_gb is None else int(memory_gb * 1024**3)

    def bounded() -> None:
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([PIBENCH, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          preexec_fn=bounded, env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})


def one_line_refusal(r: subprocess.CompletedProcess, *said: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr[-2000:]
    for text in said:
        assert text in r.stderr, (text, r.stderr)


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    """A complete oracle log of the mini set; a log of an agent that could not be reached on one
    of three samples (tests/fault_agents.py `unavailable`, run with --no-fail-on-error: that
    sample is an Inspect error, the log complete)."""
    root = tmp_path_factory.mktemp("hostile-logs")
    out = {"oracle": Path(run_eval(registered(source=str(MINI), agent="oracle", user="scripted"),
                                   log_dir=str(root / "oracle")).location)}

    def fault(i, d):
        d["environment_setup"]["customer"] = {"customer_id": f"FAULT:{'unavailable' if i == 1 else 'none'}@generate"}

    src = mini_copies(root, 3, "FAULT", fault)
    errored = run_eval(registered(source=str(src), agent="tests.fault_agents:FaultAgent", user="scripted"),
                       fail_on_error=False, log_dir=str(root / "errored"))
    assert errored.status == "success" and errored.results.completed_samples == 2
    out["errored"] = Path(errored.location)
    out["fault_oracle"] = Path(run_eval(registered(source=str(src), agent="oracle", user="scripted"),
                                        log_dir=str(root / "fault_oracle")).location)
    return out


def rewritten(src: Path, dst: Path, change) -> Path:
    log = read_eval_log(str(src))
    change(log)
    dst.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(dst))
    return dst


# ---- defect 1: rescore scores only samples that were played to their end

@pytest.mark.slow
def test_rescore_never_scores_a_sample_that_errored(logs, tmp_path):
    out = tmp_path / "rescored.eval"
    r = pibench("rescore", str(logs["errored"]), "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    run = read_eval_log(str(logs["errored"])).results.scores[0].metrics  # the run's own, over its 2 scored samples
    assert f"(2 samples re-scored; compliance_rate {run['pass'].value:.3f}, " \
           f"overall_score {run['overall'].value:.3f})" in r.stdout
    assert f"note: 1 sample(s) not re-scored, kept in the log as they were: {FAILING} (epoch 1): ended in an error" in r.stderr
    new = read_eval_log(str(out))
    by_id = {str(s.id): s for s in new.samples}
    assert not by_id[FAILING].scores and by_id[FAILING].error is not None  # still an error, unscored
    assert all(by_id[s].scores["pibench_scorer"] for s in by_id if s != FAILING)
    assert (new.results.total_samples, new.results.completed_samples) == (3, 2)
    # the same set re-scored gives the run's own metrics
    def values(metrics) -> str:  # NaN (a rate with no run in its denominator) compares equal as text
        return json.dumps({k: v.value for k, v in metrics.items()}, sort_keys=True)

    assert values(new.results.scores[0].metrics) == values(run)
    # its report counts the error as an error, as the run's own log did
    report = tmp_path / "report"
    assert pibench("report", str(out), "--out", str(report), "--resamples", "20").returncode == 0
    metrics = json.loads((report / "results.json").read_text())["results"][0]["metrics"]
    assert (metrics["completed"], metrics["errors"]) == (2, 1)


def test_rescore_of_an_interrupted_play_session_scores_nothing(logs, tmp_path, capsys):
    """A `pibench play` session the person interrupted (its log as play leaves it: cancelled, the
    sample an error marked interrupted, unscored) is not a result: with --allow-partial too."""
    from pibench_inspect.cli import main

    def interrupted(log):
        log.status = "cancelled"
        log.eval.metadata["pibench"]["agent"] = "human"
        log.results = None
        log.samples = [s for s in log.samples if str(s.id) == "MINI_001_REFUND_OK"]
        sample = log.samples[0]
        sample.store["pibench:interrupted"] = "ctrl-c"
        sample.scores = None
        sample.error = EvalError(message="CancelledError()", traceback="", traceback_ansi="")

    play = rewritten(logs["oracle"], tmp_path / "play.eval", interrupted)
    assert main(["rescore", str(play), "--out", str(tmp_path / "x.eval"), "--allow-partial"]) == 2
    err = capsys.readouterr().err
    assert "no sample to re-score: MINI_001_REFUND_OK (epoch 1): interrupted in pibench play (Ctrl-C)" in err
    assert not (tmp_path / "x.eval").exists()


# ---- defect 2 and the "Also" items: compare pairs only what is proven to be the same

@pytest.mark.slow
def test_compare_refuses_runs_of_different_scenario_sets_and_a_folder_of_several_runs(logs, mini_source, tmp_path):
    path = mini_source / "scenarios" / "mini" / "mini_001_refund_ok.json"
    doc = json.loads(path.read_text())
    doc["evaluation_criteria"]["state_field_checks"][0]["equals"] = "cancelled"
    path.write_text(json.dumps(doc))
    other = Path(run_eval(registered(source=str(mini_source), agent="oracle", user="scripted"),
                          log_dir=str(tmp_path / "other")).location)
    r = pibench("compare", str(logs["oracle"]), str(other), "--resamples", "20")
    one_line_refusal(r, "the runs ran different scenario sets: A ", f"({MINI})", f"({mini_source})")
    # both in one folder: two runs of one agent (the same ids, different content), never pooled as trials
    both = tmp_path / "both"
    both.mkdir()
    for p in (logs["oracle"], other):
        (both / p.name).write_bytes(p.read_bytes())
    r = pibench("compare", str(both), str(logs["oracle"]), "--resamples", "20")
    one_line_refusal(r, f"{both}: holds 2 runs (oracle (set ", "give one run per side")


def test_compare_refuses_a_scenario_scored_from_different_content(logs, tmp_path, capsys):
    from pibench_inspect.cli import main

    def relabel(log):
        log.samples[0].metadata["label"] = "DENY"

    b = rewritten(logs["oracle"], tmp_path / "b.eval", relabel)
    assert main(["compare", str(logs["oracle"]), str(b), "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert f"{read_eval_log(str(b)).samples[0].id}: the runs scored it differently (label: A ALLOW vs B DENY)" in err


def test_compare_says_what_it_left_out_and_why(logs, tmp_path, capsys):
    """Errored samples are not "run by A only"; runs over different subsets are paired on the
    overlap, saying so; a cancelled log is refused with a flag compare accepts."""
    from pibench_inspect.cli import main

    capsys.readouterr()
    assert main(["compare", str(logs["errored"]), str(logs["fault_oracle"]), "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    assert f"left out, errored in A (an Inspect sample error: no score) (1): {FAILING}" in out
    assert "run by A only" not in out and "run by B only" not in out

    subset = run_eval(registered(source=str(MINI), agent="oracle", user="scripted"), sample_id="MINI_001_REFUND_OK",
                      log_dir=str(tmp_path / "subset"))
    capsys.readouterr()
    assert main(["compare", subset.location, str(logs["oracle"]), "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    assert "compared on their overlap: A ran 1 scenarios, B ran 3; 1 of those both ran are paired" in out
    assert "left out, run by B only (2): MINI_002_FINAL_SALE, MINI_003_BIG_ORDER" in out

    def killed(log):
        log.status = "started"
        log.samples = log.samples[:2]

    partial = rewritten(logs["oracle"], tmp_path / "killed.eval", killed)
    assert main(["compare", str(partial), str(logs["oracle"]), "--resamples", "20"]) == 2
    assert "pass --allow-partial" in capsys.readouterr().err
    assert main(["compare", str(partial), str(logs["oracle"]), "--resamples", "20", "--allow-partial"]) == 0
    assert "paired on 2 scenario(s)" in capsys.readouterr().out

    def killed_play(log):  # a session of one scenario chosen from the three, killed
        log.status = "started"
        log.eval.metadata["pibench"]["agent"] = "human"
        log.eval.dataset.sample_ids = ["MINI_001_REFUND_OK"]
        log.samples = log.samples[:1]

    play = rewritten(logs["oracle"], tmp_path / "killed_play.eval", killed_play)
    assert main(["compare", str(play), str(logs["oracle"]), "--resamples", "20"]) == 2
    assert "killed_play.eval: incomplete log (status 'started', 1 of 1 samples)" in capsys.readouterr().err


# ---- defect 4: only the score shape the scorer writes

BAD_VALUES = {
    "list": ([1.0, 0.0], "its score value is list"),
    "credit": ({"all_passed": 1.0, "partial_credit": 7.5}, "its score's value.partial_credit is 7.5, outside 0 to 1"),
    "string": ("abc", "its score value is str 'abc'"),
    "flag": ({"all_passed": 0.5, "partial_credit": 0.5}, "its score's value.all_passed is 0.5, not 0 or 1"),
}


@pytest.mark.slow
def test_reports_accept_only_the_scorers_score_shape(logs, tmp_path):
    folder = tmp_path / "bad"
    for name, (value, _) in BAD_VALUES.items():
        def change(log, value=value):
            log.samples[0].scores["pibench_scorer"].value = value

        rewritten(logs["oracle"], folder / f"{name}.eval", change)
    sid = read_eval_log(str(folder / "list.eval")).samples[0].id
    r = pibench("report", str(folder / "string.eval"), "--out", str(tmp_path / "r0"), "--resamples", "20")
    one_line_refusal(r, f"string.eval: damaged log: sample {sid} (epoch 1): its score value is str 'abc'")
    # with --allow-partial each is left out, named; no column passes 1
    r = pibench("report", str(folder), "--out", str(tmp_path / "r1"), "--resamples", "20", "--allow-partial")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    for name, (_, said) in BAD_VALUES.items():
        assert f"note: {name}.eval: sample {sid} (epoch 1): {said}" in r.stderr, (name, r.stderr)
    payload = json.loads((tmp_path / "r1" / "results.json").read_text())
    assert payload["results"][0]["metrics"]["total_scenarios"] == 4 * 2  # each log's two good samples
    assert all(0 <= v["value"] <= 1 for v in payload["pibench_inspect"]["confidence_intervals"]["statistics"].values())
    r = pibench("compare", str(folder / "credit.eval"), str(logs["oracle"]), "--resamples", "20")
    one_line_refusal(r, f"credit.eval: damaged log: sample {sid} (epoch 1): its score's value.partial_credit is 7.5")


def test_value_shapes_of_every_format_read():
    from pibench_inspect.reports.values import record_problem, value_problem

    assert value_problem({"all_passed": 1.0, "partial_credit": 0.25, "violation": 0.0, "forbidden_attempt": 1.0}) is None
    # the first format: the original's flag names and the repeatability keys
    assert value_problem({"all_passed": True, "partial_credit": 1, "V_r": 0.0, "pass_all": 1.0, "violation_ever": 0}) is None
    assert "no partial_credit" in value_problem({"all_passed": 1.0})
    assert "unknown key 'bonus'" in value_problem({"all_passed": 1.0, "partial_credit": 1.0, "bonus": 1.0})
    assert "not a finite number" in value_problem({"all_passed": 1.0, "partial_credit": None})
    assert "outside 0 to 1" in value_problem({"all_passed": 1.0, "partial_credit": 10**400})
    assert record_problem({"semantic_score": 2.0}) and record_problem({"checks": "all"})
    assert record_problem({"semantic_score": None, "checks": {}}) is None


# ---- defect 5: a report reads only bounded, regular files, and a log's files only in its source

@pytest.mark.slow
def test_report_and_compare_read_no_fifo_no_device_and_nothing_outside_the_source(logs, tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    outside = tmp_path / "elsewhere" / "scenario.json"
    outside.parent.mkdir()
    stray = mini_scenario("mini_002_final_sale")
    stray["meta"]["domain"] = "read-from-outside"  # the payload's `domain` comes from the file when it is read
    outside.write_text(json.dumps(stray))
    targets = {"MINI_001_REFUND_OK": str(fifo), "MINI_002_FINAL_SALE": str(outside), "MINI_003_BIG_ORDER": "/dev/zero"}

    def point(log):
        for s in log.samples:
            s.metadata["scenario_file"] = targets[str(s.id)]

    bad = rewritten(logs["oracle"], tmp_path / "logs" / "pointing.eval", point)
    r = pibench("report", str(bad), "--out", str(tmp_path / "r"), "--resamples", "20", timeout=90, memory_gb=2)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    payload = (tmp_path / "r" / "results.json").read_text()
    assert "read-from-outside" not in payload and '"domain":"mini"' in payload
    r = pibench("compare", str(bad), str(logs["oracle"]), "--resamples", "20", timeout=90, memory_gb=2)
    assert r.returncode == 0 and "paired on 3 scenario(s)" in r.stdout, r.stderr[-2000:]
    # a log that is a FIFO, or a link to a device, is refused by name, never opened
    os.mkfifo(tmp_path / "logs" / "stuck.eval")
    r = pibench("report", str(tmp_path / "logs"), "--out", str(tmp_path / "r2"), timeout=90, memory_gb=2)
    one_line_refusal(r, "stuck.eval: not a regular file")
    os.unlink(tmp_path / "logs" / "stuck.eval")
    os.symlink("/dev/zero", tmp_path / "logs" / "zero.eval")
    r = pibench("compare", str(tmp_path / "logs" / "zero.eval"), str(logs["oracle"]), timeout=90, memory_gb=2)
    one_line_refusal(r, "zero.eval: not a regular file")


def test_a_log_read_past_its_deadline_is_an_error_naming_it(logs, monkeypatch):
    import threading

    from pibench_inspect.reports import bounded, logs as report_logs
    from pibench_inspect.reports.logs import ReportInputError, load_logs

    release = threading.Event()
    monkeypatch.setattr(report_logs, "LOG_READ_SECONDS", 0.2)
    monkeypatch.setattr(report_logs, "read_eval_log", lambda path: release.wait(30))
    try:
        with pytest.raises(ReportInputError, match=r"oracle.*\.eval: log was not read within 0.2 s"):
            load_logs([logs["oracle"]])
    finally:
        release.set()
    assert bounded.MAX_LOG_BYTES and bounded.MAX_LOG_UNPACKED_BYTES  # the bounds the threat model names


def test_an_eval_archive_that_unpacks_past_the_limit_is_refused(logs, tmp_path, monkeypatch):
    from pibench_inspect.reports import bounded
    from pibench_inspect.reports.logs import ReportInputError, load_logs

    monkeypatch.setattr(bounded, "MAX_LOG_UNPACKED_BYTES", 1000)
    with pytest.raises(ReportInputError, match="unpack to .* bytes, over the 1000 byte limit"):
        load_logs([logs["oracle"]])


# ---- defect 16: one-line refusals before any work

@pytest.mark.slow
def test_bad_counts_and_output_paths_are_refused_before_any_work(logs, tmp_path, capsys):
    """One line each, exit 2, nothing done. Four through the real command (a process each costs
    its start-up), the rest through its entry point in process."""
    from pibench_inspect.cli import main

    folder = tmp_path / "a-folder"
    folder.mkdir()
    (tmp_path / "new.txt").write_text("a file where a folder is asked for")
    log = str(logs["oracle"])
    cases = [
        (("report", log, "--out", str(tmp_path / "r"), "--resamples", "0"), "argument --resamples: 0 is outside 10 to 20000"),
        (("compare", log, log, "--json", str(folder)), f"--json {folder}: is a folder"),
        (("rescore", log, "--out", str(tmp_path / "new.txt")), "a log file ends in .eval or .json"),
        (("compare", log, log, "--resamples", "-5"), "argument --resamples: -5 is outside 10 to 20000"),
        (("report", log, "--out", str(tmp_path / "r"), "--resamples", "100000000"), "100000000 is outside 10 to 20000"),
        (("rescore", log, "--out", str(folder)), f"--out {folder}: is a folder"),
        (("report", log, "--out", str(tmp_path / "new.txt" / "r")), "is not a folder"),
    ]
    for i, (args, said) in enumerate(cases):
        if i < 4:
            r = pibench(*args)
            code, out, err = r.returncode, r.stdout, r.stderr
        else:
            capsys.readouterr()
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's usage error
                code = exit_.code
            out, err = capsys.readouterr()
        assert code == 2 and "Traceback" not in err, (args, err[-2000:])
        assert len(err.strip().splitlines()) == 1 and said in err, (args, err)
        assert not out, (args, out)  # nothing was done: no report, no comparison, no re-scoring
    assert not (tmp_path / "r").exists() and list(folder.iterdir()) == []
