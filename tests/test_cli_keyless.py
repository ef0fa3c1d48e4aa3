"""The README's keyless commands, run as a user would (subprocess, another directory)."""

from __future__ import annotations

import subprocess
import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT

INSPECT = str(Path(sys.executable).with_name("inspect"))


def run(args, cwd):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_keyless_demo_prints_metrics(tmp_path):
    # the README's command, by registered name from another directory
    # (a slice of every domain keeps the test fast; CI runs the whole keyless demo once)
    r = run([INSPECT, "eval", "pibench_inspect/pibench", "-T", "agent=oracle", "-T", "user=scripted",
             "-T", "label=DENY", "--model", "none", "--display", "plain", "--log-dir", str(tmp_path)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "pass " in r.stdout and "overall " in r.stdout
    # one naming scheme, no package-prefixed metrics, and the end-of-run error summary
    assert "pibench_inspect/" not in r.stdout.split("total time")[-1]
    assert "activation " in r.stdout and "semantic" not in r.stdout
    assert "0 error, 0 agent_error, 0 user_error" in r.stderr
    # DENY scenarios only: the over-refusal and escalation accuracy rates have nothing to measure.
    # They are not applicable (nan beside their count of runs, 0), never a 0, and said so
    table = {line.split()[0]: line.split()[-1] for line in r.stdout.split("total time")[-1].splitlines()
             if line.strip() and len(line.split()) >= 2}
    assert table["esc_accuracy"] == "nan" and table["escalate_runs"] == "0.000"
    assert table["over_refusal"] == "nan" and table["allow_runs"] == "0.000"
    assert table["under_refusal"] == "0.000" and float(table["deny_runs"]) > 0
    assert [k for k, v in table.items() if v == "nan"] == ["over_refusal", "esc_accuracy"]
    assert ("pi-bench: not applicable (no run in the denominator): over_refusal (0 ALLOW or "
            "ALLOW-CONDITIONAL runs); esc_accuracy (0 ESCALATE runs)") in r.stderr
    assert table["pass"] == "1.000"


@pytest.mark.slow
def test_registered_task_name_and_relative_source(tmp_path):
    # stdout and stderr into one pipe, as `2>&1` and CI logs have them
    r = subprocess.run([INSPECT, "eval", "pibench_inspect/pibench", "-T", "source=tests/fixtures/mini", "-T", "agent=nothing",
                        "-T", "user=scripted", "--model", "none", "--log-dir", str(tmp_path)],
                       cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert "mini" in r.stdout and "(3 samples)" in r.stdout
    # the end-of-run summary names the task once, on a line of its own (Inspect's last line of
    # spaces has no newline: the summary followed 80 spaces)
    assert "\npi-bench: 3 sample(s) of pibench; 0 error, 0 agent_error, 0 user_error\n" in r.stdout, r.stdout[-600:]
    assert "pibench pibench" not in r.stdout


@pytest.mark.slow
def test_list_and_pi_alias():
    pi = str(Path(sys.executable).with_name("pi"))
    r = run([pi, "list", "--domain", "retail"], ROOT)
    # the families as the README counts them, and as the statistics do (a hand-written scenario its own)
    assert r.returncode == 0 and re.search(
        r"\d+ scenarios: \d+ from \d+ famil(y|ies), \d+ written by hand \(\d+ famil(y|ies) in the statistics, "
        r"a hand-written scenario its own\): retail \d+$", r.stdout.strip(), re.M), r.stdout


def test_the_readme_explains_every_baseline_beside_the_keyless_demo():
    """Issue 42: the README never said what `nothing`, `deny_all`, `escalate_all` or `pushover` do."""
    from pibench_inspect.conversation.agents import BUILTIN_AGENTS

    readme = (ROOT / "README.md").read_text()
    demo = readme[readme.index("## Keyless demo"):readme.index("A run that cannot work stops")]
    for agent in BUILTIN_AGENTS:
        lines = [x for x in demo.splitlines() if x.startswith(f"* `{agent}`: ")]
        assert len(lines) == 1, f"the keyless demo gives {agent} no line of its own"
    assert "docs/baselines.md" in demo
