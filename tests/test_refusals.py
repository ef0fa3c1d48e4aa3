"""Every refusal before a run is one line naming the argument, the value and the fix, with a
non-zero exit and no traceback: through the real `inspect eval`, `pibench` and `pi` commands.

Inspect prints its own start-up lines first (its version, the hooks it loaded, where to monitor
the run); they are not part of the refusal and are set aside. Rich wraps what it prints at the
terminal's width, so the commands run with a wide one (COLUMNS), as a terminal would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


BIN = Path(sys.executable).parent
BANNER = re.compile(r"^(inspect_ai v|- hooks enabled|  pibench_inspect/|Monitor from another shell)")
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in KEYS}
    out["COLUMNS"] = "1000"
    return out


def said(r: subprocess.CompletedProcess) -> list[str]:
    return [x for x in (r.stdout + r.stderr).splitlines() if x.strip() and not BANNER.match(x)]


# (the inspect eval arguments, what the one line must say)
INSPECT_CASES = {
    "default agent, no model": (
        ["--model", "none"],
        ["-T agent=model (the default)", "--model is none", "-T agent=oracle -T user=scripted --model none"]),
    "no model for the simulated user": (
        ["-T", "agent=oracle", "--model", "none"],
        ["-T user=llm (the default) needs a model", "--model-role user=PROVIDER/MODEL", "-T user=scripted"]),
    "unknown --sample-id": (
        ["-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "--sample-id", "RET_01"],
        ["--sample-id RET_01: no scenario 'RET_01'", "did you mean 'RET_01*'", "closest: RET_010_", "pibench list"]),
    "misspelt -T name": (
        ["-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "-T", "colum=Privacy"],
        ["-T colum=Privacy: unknown task argument (did you mean -T column?)", "the task arguments are"]),
    "mistyped -T column value": (
        ["-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "-T", "column=Privacy"],
        ["-T column: 'Privacy' (did you mean 'Privacy & Information Flow'?)", "the values present are"]),
    "a value of the wrong type": (
        ["-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "-T", "max_steps=1"],
        ["-T max_steps=1: Input should be greater than or equal to 2"]),
    "a source that is not one": (
        ["-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "-T", "source=/nonexistent"],
        ["-T source=/nonexistent: no scenarios/ folder", "pass a folder holding scenarios/ and domains/"]),
    "an agent that does not load": (
        ["-T", "agent=no_such_module:Agent", "-T", "user=scripted", "--model", "none"],
        ["-T agent=no_such_module:Agent: cannot load 'Agent' from 'no_such_module'"]),
    "a misspelt built-in agent": (
        ["-T", "agent=oracel", "-T", "user=scripted", "--model", "none"],
        ["-T agent=oracel: no such agent (did you mean oracle?)"]),
    "a label in lower case": (
        ["-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "-T", "label=deny"],
        ["-T label=deny: unknown label(s) deny (did you mean DENY?)"]),
    "a misspelt family glob": (
        ["-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "--sample-id", "RET_PRICE_ADJUSTMNT.*"],
        ["no scenario 'RET_PRICE_ADJUSTMNT.*' (did you mean 'RET_PRICE_ADJUSTMENT.*'? it matches"]),
    "an ablation in brackets": (
        ["-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "-T", "ablation=[x]"],
        ["-T ablation=['x']: Input should be 'no_pressure' or 'structured_policy'"]),
}


def inspect_eval(args: list[str], tmp: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([str(BIN / "inspect"), "eval", "pibench_inspect/pibench_retail", *args, "--log-dir",
                             str(tmp / "logs"), *extra], cwd=tmp, env=env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(p: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = p.communicate(timeout=300)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


@pytest.mark.slow
def test_inspect_eval_refusals_are_one_line_exit_1_no_traceback(tmp_path):
    running = {name: inspect_eval(args, tmp_path) for name, (args, _) in INSPECT_CASES.items()}
    for name, p in running.items():
        r = finish(p)
        lines = said(r)
        assert r.returncode == 1, (name, r.stdout[-2000:], r.stderr[-2000:])
        assert "Traceback" not in r.stdout + r.stderr, name
        assert len(lines) == 1, (name, lines)
        for text in INSPECT_CASES[name][1]:
            assert text in lines[0], (name, text, lines[0])
        # the list of every argument name helps only when a name is wrong
        assert ("the task arguments are" in lines[0]) == (name == "misspelt -T name"), (name, lines[0])
    assert not list((tmp_path / "logs").glob("*.eval"))  # refused before anything ran


@pytest.mark.slow
def test_under_display_none_the_refusal_is_still_said(tmp_path):
    """Inspect prints nothing for a PrerequisiteError under --display none: the line goes to stderr."""
    r = finish(inspect_eval(["--model", "none"], tmp_path, "--display", "none"))
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr
    assert said(r) == [line for line in r.stderr.splitlines() if line.strip()]
    assert len(said(r)) == 1 and "--model is none" in said(r)[0]


@pytest.mark.slow
def test_a_glob_that_matches_runs_without_inspects_not_found_warning(tmp_path):
    r = finish(inspect_eval(["-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "--sample-id",
                             "RET_00*"], tmp_path, "--display", "plain"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "not found" not in r.stdout + r.stderr and "WARNING" not in r.stdout + r.stderr
    assert "9/9" in r.stdout  # Inspect selected the nine RET_00x scenarios
    # a pattern of the list that matches nothing is said once, with the closest ids; the rest runs
    r = finish(inspect_eval(["-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "--sample-id",
                             "RET_00*,RET_XYZ"], tmp_path, "--display", "plain"))
    assert r.returncode == 0, r.stderr[-2000:]
    warned = [x for x in (r.stdout + r.stderr).splitlines() if "RET_XYZ" in x and "WARNING" in x]
    assert len(warned) == 1 and "matches no scenario" in warned[0] and "closest: RET_" in warned[0]
    assert "not found in dataset" not in r.stdout + r.stderr


# (the pibench / pi arguments, the exit code, what the one line must say)
PIBENCH_CASES = [
    (["report"], 2, "pibench report: error: the following arguments are required: LOG_OR_DIR, --out"),
    (["bogus"], 2, "pibench: error: argument command: invalid choice: 'bogus'"),
    (["report", "/nonexistent", "--out", "r"], 2, "error: /nonexistent: no such file or folder"),
    (["list", "--domain", "retial"], 2, "--domain retial: no such domain (did you mean retail?)"),
    (["floor", "--domain", "retial"], 2, "--domain retial: no such domain (did you mean retail?)"),
    (["schema", "--out", "/nonexistent/x.json"], 2, "--out /nonexistent/x.json: no folder /nonexistent"),
    (["rescore", "/nonexistent", "--out", "x.eval"], 2, "error: /nonexistent: no such file or folder"),
    (["run", "/nonexistent.json", "--agent", "oracle"], 2, "/nonexistent.json: (file): scenario file not found"),
    (["run-domain", "retail", "--agent-llm", "none"], 1, "--agent-llm none: no model to evaluate"),
    (["run-domain", "retail", "--agent", "oracle", "--max-steps", "1"], 2, "argument --max-steps: 1 is below 2"),
    (["run-domain", "retial", "--agent", "oracle"], 1, "retial: no scenarios of that domain under the shipped set (did you mean retail?)"),
    (["run-domain", "retail", "--agent", "oracle", "--source", "/nonexistent"], 1, "--source /nonexistent: no scenarios/ folder"),
    # a refusal of the task itself, reached through pi's flags
    (["run-domain", "retail", "--agent", "no_such_module:Agent"], 1, "error: -T agent=no_such_module:Agent: cannot load"),
    (["serve-user", "--kind", "nope"], 2, "pibench serve-user: error: argument --kind: invalid choice: 'nope'"),
    (["serve-agent", "no_such_module:Agent"], 2, "pibench serve-agent: error: cannot load 'Agent' from 'no_such_module'"),
    (["green", "--port", "abc"], 2, "pi-bench-green: error: argument --port: invalid int value: 'abc'"),
]


@pytest.mark.slow
def test_pibench_and_pi_refusals_are_one_line_no_traceback(tmp_path):
    running = [(args, code, text, subprocess.Popen([str(BIN / ("pi" if args[0].startswith("run") else "pibench")), *args],
                                                   cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                                                   stderr=subprocess.PIPE, text=True))
               for args, code, text in PIBENCH_CASES]
    for args, code, text, p in running:
        r = finish(p)
        lines = said(r)
        assert r.returncode == code, (args, r.stdout[-1500:], r.stderr[-1500:])
        assert "Traceback" not in r.stdout + r.stderr, args
        assert len(lines) == 1 and text in lines[0], (args, lines)
    assert not (tmp_path / "logs").exists() or not list((tmp_path / "logs").glob("*.eval"))


def test_closest_names_by_prefix_then_edit_distance():
    from pibench_inspect.cli.refusal import closest, prefix_glob

    ids = ["RET_001_WINDOW", "RET_002_OPENED", "RET_010_FINAL", "RET_011_PRICE", "FIN_001_CASH", "HD_001_RESET"]
    assert closest("RET_01", ids) == ["RET_010_FINAL", "RET_011_PRICE"]  # the longest shared start
    assert prefix_glob("RET_01", ids) == ("RET_01*", 2)
    assert closest("RET_01*", ids) == ["RET_010_FINAL", "RET_011_PRICE"]  # a glob is looked up by its stem
    assert closest("RTE_001_WINDOW", ids)[0] == "RET_001_WINDOW"  # a typo in the prefix: edit distance
    assert closest("colum", ["column", "label", "judge"]) == ["column"]
    assert closest("retial", ["finra", "helpdesk", "retail"]) == ["retail"]
    assert closest("zzz", ["finra", "retail"]) == []


def test_a_misspelt_glob_suggests_the_glob_meant_not_ids():
    from pibench_inspect.cli.refusal import glob_fix
    from pibench_inspect.task import unmatched_hint

    ids = [f"RET_PRICE_ADJUSTMENT.{c}.{e}" for c in ("all_met", "late") for e in ("baseline", "urgency")]
    ids += ["RET_001_WINDOW", "RET_002_OPENED", "FIN_CASH.all_met.baseline"]
    assert glob_fix("RET_PRICE_ADJUSTMNT.*", ids) == ("RET_PRICE_ADJUSTMENT.*", 4)
    assert glob_fix("RET_PRICE_ADJUSTMNT*", ids) == ("RET_PRICE_ADJUSTMENT*", 4)
    assert glob_fix("RET_PRICE_ADJUSTMENT.all_mte.*", ids) == ("RET_PRICE_ADJUSTMENT.all_met.*", 2)
    assert glob_fix("RTE_00*", ids) == ("RET_00*", 2)
    assert glob_fix("ZZZ*", ids) is None and glob_fix("RET_001_WINDOW", ids) is None  # no glob: prefix_glob's
    said = unmatched_hint("RET_PRICE_ADJUSTMNT.*", ids)
    assert said == "'RET_PRICE_ADJUSTMNT.*' (did you mean 'RET_PRICE_ADJUSTMENT.*'? it matches 4)"
