"""Hardening: a run killed mid-eval and resumed with `inspect eval-retry` re-runs only the
unfinished samples and loses none that finished.

Both steps run the real `inspect` command line in subprocesses (with the stand-in model
provider of bench/standin.py registered first, since it is not an installed package): an eval of
a slow stand-in model is started, killed (SIGKILL) once some samples are in the log, then
resumed with `inspect eval-retry`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, mini_copies

N = 8
CLI = (
    "import sys; sys.path.insert(0, {bench!r}); import standin; "
    "from inspect_ai._cli.main import main; sys.argv = ['inspect'] + sys.argv[1:]; main()"
)


def make_source(root: Path) -> Path:
    return mini_copies(root, N, "RETRY", digits=2)


def inspect_cli(args: list[str], cwd: Path, **kw) -> subprocess.Popen:
    env = {**os.environ, "INSPECT_LOG_LEVEL": "warning", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "PYTHONPATH": str(ROOT)}
    code = CLI.format(bench=str(ROOT / "bench"))
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def finished_ids(log_file: Path) -> set[str]:
    from inspect_ai.log import read_eval_log_sample_summaries

    try:
        return {str(s.id) for s in read_eval_log_sample_summaries(str(log_file)) if s.completed}
    except Exception:  # the file is being written
        return set()


def called_ids(call_log: Path, pid: int) -> set[str]:
    if not call_log.exists():
        return set()
    out = set()
    for line in call_log.read_text().splitlines():
        p, _, sid = line.partition(" ")
        if int(p) == pid:
            out.add(sid)
    return out


@pytest.mark.slow
def test_killed_eval_resumed_with_eval_retry_reruns_only_unfinished_samples(tmp_path):
    src = make_source(tmp_path)
    logs = tmp_path / "logs"
    call_log = tmp_path / "calls.txt"
    proc = inspect_cli([
        # the registered task by name, as a user runs it: the log names it, so eval-retry finds it
        "eval", "pibench_inspect/pibench", "-T", f"source={src}", "-T", "user=scripted",
        "--model", "pibench-standin/replay", "-M", "latency=0.3", "-M", f"source={src}",
        "-M", f"call_log={call_log}",
        "--max-samples", "2", "--log-buffer", "1", "--log-dir", str(logs), "--display", "none",
    ], cwd=tmp_path, start_new_session=True)
    finished: set[str] = set()
    log_file = None
    deadline = time.time() + 120
    try:
        while time.time() < deadline and proc.poll() is None:
            files = sorted(logs.glob("*.eval")) if logs.exists() else []
            if files:
                log_file = files[0]
                finished = finished_ids(log_file)
                if len(finished) >= 2:
                    break
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # only the process group this test started
        proc.wait(timeout=30)
    assert log_file is not None, proc.stdout.read()
    assert proc.returncode != 0, "the eval finished before it could be killed; slow the stand-in down"
    finished = finished_ids(log_file)
    assert 2 <= len(finished) < N, finished

    from inspect_ai.log import read_eval_log

    killed = read_eval_log(str(log_file), header_only=True)
    assert killed.status == "started"

    retry = inspect_cli(["eval-retry", str(log_file), "--log-dir", str(logs), "--display", "none",
                         "--max-samples", "8"], cwd=tmp_path)
    out, _ = retry.communicate(timeout=300)
    assert retry.returncode == 0, out

    new_logs = [f for f in sorted(logs.glob("*.eval")) if f != log_file]
    assert len(new_logs) == 1, (new_logs, out)
    log = read_eval_log(str(new_logs[0]))
    assert log.status == "success", log.error
    ids = [str(s.id) for s in log.samples]
    assert sorted(ids) == [f"RETRY_{i:02d}" for i in range(N)], ids  # none lost, none twice
    for s in log.samples:
        assert s.error is None
        assert s.scores["pibench_scorer"].value["all_passed"] == 1.0, s.id
    rerun = called_ids(call_log, retry.pid)
    assert rerun, "the retry ran nothing"
    assert not (rerun & finished), f"finished samples were re-run: {sorted(rerun & finished)}"
    assert rerun == set(ids) - finished
