"""`pibench validate` is bounded as a whole, and ends quietly when interrupted (issue 41, defect
11 and the interrupted validate's "nanobind: leaked" lines).

Each tool call has a deadline of its own (the domain's limits.call_seconds), but a catalog whose
every lookup overruns made one scenario's gate plays cost a hundred of them. The plays of one
scenario share one deadline (`--gate-seconds`); past it the scenario is one problem naming it.
Ctrl-C ends validate with 130 and one line, its worker processes stopped, never waited for.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import MINI, ctrl_c_default, mini_copies

PIBENCH = str(Path(sys.executable).with_name("pibench"))
SLOW_SQL = {"sql": "SELECT count(*) AS n FROM range(1000000000000)", "as": "n"}  # runs for hours


def slow_lookups(src: Path) -> Path:
    """Every lookup of the source's mini domain runs into its 0.5 s deadline."""
    tools_path = src / "domains" / "mini" / "tools.json"
    catalog = json.loads(tools_path.read_text())
    lookup = next(t for t in catalog["tools"] if t["name"] == "lookup_order")
    lookup["effect"] = [SLOW_SQL] + lookup["effect"]
    tools_path.write_text(json.dumps(catalog))
    cfg_path = src / "domains" / "mini" / "domain.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["limits"] = {"call_seconds": 0.5}
    cfg_path.write_text(json.dumps(cfg))
    return src


@pytest.mark.slow
def test_a_scenarios_gate_plays_share_one_deadline(mini_source: Path):
    src = slow_lookups(mini_source)
    started = time.monotonic()
    r = subprocess.run([PIBENCH, "validate", "--source", str(src), "--only", "MINI_001_REFUND_OK", "--jobs", "1",
                        "--gate-seconds", "2"], capture_output=True, text=True, timeout=300)
    assert time.monotonic() - started < 120
    assert r.returncode == 1, r.stderr[-2000:]
    problems = [line for line in r.stdout.splitlines() if "mini_001_refund_ok.json" in line]
    assert problems == [f"{src / 'scenarios' / 'mini' / 'mini_001_refund_ok.json'}: gates: its plays did not finish "
                        "within the 2 s they share (pibench validate --gate-seconds); its tool calls are too slow "
                        "to judge it"], r.stdout
    # the interrupted statements' states are gone by exit: no "nanobind: leaked" report
    assert "Traceback" not in r.stderr and "leaked" not in r.stderr and "nanobind" not in r.stderr, r.stderr[-2000:]


@pytest.mark.slow
def test_ctrl_c_ends_validate_with_130_its_workers_stopped(tmp_path: Path):
    # six distinct cases (a minute apart), not envelope siblings, which would share one mutation
    # gate result and be done before the interrupt: ~15 s of gates each, on two workers
    def apart(i: int, d: dict) -> None:
        d["environment_setup"]["now"] = f"2026-11-02T10:{i:02d}:00+00:00"

    src = slow_lookups(mini_copies(tmp_path, 6, "SLOW", apart))
    proc = subprocess.Popen([PIBENCH, "validate", "--source", str(src), "--jobs", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=ctrl_c_default)
    err: list[str] = []
    first = threading.Event()

    def read() -> None:
        for line in proc.stderr:
            err.append(line)
            if line.startswith("validate: 1/"):
                first.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert first.wait(240), "".join(err)  # a scenario is done: the workers play the others
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        interrupted = time.monotonic()
        proc.wait(60)
        took = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(10)
    text = "".join(err)
    assert proc.returncode == 130, text[-2000:]
    assert took < 15, took  # the four scenarios still queued or playing were not waited for
    assert text.splitlines()[-1] == "pibench: interrupted", text[-2000:]
    assert "Traceback" not in text and "leaked" not in text and "nanobind" not in text, text[-2000:]
    try:
        os.killpg(proc.pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive, "a worker outlived validate"


def test_gate_seconds_must_be_a_positive_finite_number():
    from pibench_inspect.cli.main import positive_seconds

    assert positive_seconds("2.5") == 2.5
    for bad in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_seconds(bad)


def test_a_scenario_past_its_gate_deadline_is_one_problem_and_nothing_is_remembered(monkeypatch):
    from pibench_inspect.authoring import benign, plays
    from pibench_inspect.authoring.gates import gate_problems
    from pibench_inspect.scenario.catalog import load_set

    # plays and benign results are shared per case within a process: start from none, as a
    # fresh validate does (another test in this worker may have played the same case)
    for module, name in ((plays, "_RUNS"), (plays, "_PLAYED"), (benign, "_RESULTS"), (benign, "_CASES")):
        monkeypatch.setattr(module, name, {})
    entry = load_set(MINI).entries["MINI_002_FINAL_SALE"]
    kept = (set(plays._RUNS), set(plays._PLAYED))
    assert gate_problems(entry, seconds=1e-9) == [
        f"{entry.path}: gates: its plays did not finish within the 1e-09 s they share (pibench validate "
        "--gate-seconds); its tool calls are too slow to judge it"]
    # no play cut short was kept for the next caller
    assert (set(plays._RUNS), set(plays._PLAYED)) == kept
    assert gate_problems(entry) == []
