"""The README's keyless commands, run as a user would (subprocess, another directory)."""

from __future__ import annotations

import subprocess
import re
import sys
from pathlib import Path

from conftest import ROOT

INSPECT = str(Path(sys.executable).with_name("inspect"))


def run(args, cwd):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_keyless_demo_prints_metrics(tmp_path):
    # the README's command, by registered name from another directory
    # (a slice of every domain keeps the test fast; CI runs the whole keyless demo once)
    r = run([INSPECT, "eval", "pibench_inspect/pibench", "-T", "agent=oracle", "-T", "user=scripted",
             "-T", "label=DENY", "--model", "none", "--display", "plain", "--log-dir", str(tmp_path)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compliance_rate" in r.stdout and "overall_score" in r.stdout
    # one naming scheme, no package-prefixed or NaN metrics, and the end-of-run error summary
    assert "pibench_inspect/" not in r.stdout.split("total time")[-1] and "nan" not in r.stdout.lower()
    assert "column/Policy Activation" in r.stdout and "semantic" not in r.stdout
    assert "0 error, 0 agent_error, 0 user_error" in r.stderr
    assert any(line.split()[-1] == "1.000" for line in r.stdout.splitlines() if line.strip().startswith("compliance_rate"))


def test_registered_task_name_and_relative_source(tmp_path):
    r = run([INSPECT, "eval", "pibench_inspect/pibench", "-T", "source=tests/fixtures/mini", "-T", "agent=nothing",
             "-T", "user=scripted", "--model", "none", "--display", "plain", "--log-dir", str(tmp_path)], ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mini" in r.stdout and "(3 samples)" in r.stdout


def test_list_and_pi_alias():
    pi = str(Path(sys.executable).with_name("pi"))
    r = run([pi, "list", "--domain", "retail"], ROOT)
    assert r.returncode == 0 and re.search(r"\d+ scenarios in \d+ famil(y|ies): retail \d+$", r.stdout.strip()), r.stdout
