"""Ctrl-C (a real SIGINT to the process group, as a terminal sends it) on a pi-bench run: it
exits 130 and says what its log holds, never that it lost samples (issue 41 defect 10, issue 42
item 1). Each test waits for a marker that the run is mid-sample, never a fixed time."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from conftest import MINI, ROOT, ctrl_c_default

BIN = Path(sys.executable).parent
DEADLINE = 180.0  # seconds for a marker to appear on a loaded machine
NOISE = ("Traceback", "Fatal Python error", "lost samples", "nanobind", "can be trusted")


def read_until(fd: int, seen: bytearray, marker: bytes, count: int = 1) -> None:
    """Read `fd` into `seen` until `marker` occurs `count` times (AssertionError past DEADLINE)."""
    end = time.monotonic() + DEADLINE
    while seen.count(marker) < count:
        left = end - time.monotonic()
        assert left > 0, f"no {marker!r} x{count} in time; got {bytes(seen[-2000:])!r}"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 65536)
            assert chunk, f"output ended before {marker!r} x{count}; got {bytes(seen[-2000:])!r}"
            seen += chunk


def read_to_end(fd: int, seen: bytearray) -> None:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        if select.select([fd], [], [], end - time.monotonic())[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            seen += chunk
    raise AssertionError(f"output did not end in time; got {bytes(seen[-2000:])!r}")


def stop_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:  # only the process group this test started
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize("stdin", ["pipe", "tty"])
def test_ctrl_c_on_a_piped_play_session_exits_130_and_keeps_the_log(tmp_path, stdin):
    """`pibench play ... | tee` (input from a terminal, output into a pipe) aborted with "Fatal
    Python error: _enter_buffered_busy", exit 134: the reader thread held stdin's buffer lock
    at exit. Input from a pipe printed the false "lost samples" line and ~100 nanobind leak lines."""
    master = slave = None
    if stdin == "tty":
        master, slave = pty.openpty()
    logs, err = tmp_path / "logs", tmp_path / "stderr.txt"
    with open(err, "wb") as err_file:
        proc = subprocess.Popen(
            [str(BIN / "pibench"), "play", "MINI_001_REFUND_OK", "--source", str(MINI), "--log-dir", str(logs)],
            stdin=slave if slave is not None else subprocess.PIPE, stdout=subprocess.PIPE, stderr=err_file,
            start_new_session=True, preexec_fn=ctrl_c_default)
    try:
        send = (lambda b: os.write(master, b)) if master is not None else (lambda b: (proc.stdin.write(b), proc.stdin.flush()))
        out = bytearray()
        read_until(proc.stdout.fileno(), out, b"agent> ")
        send(b'/call lookup_order {"order_id": "O-1"}\n')
        read_until(proc.stdout.fileno(), out, b"agent> ", 2)
        os.killpg(proc.pid, signal.SIGINT)
        read_to_end(proc.stdout.fileno(), out)  # the input stays open: this is Ctrl-C alone
        assert proc.wait(timeout=DEADLINE) == 130, (bytes(out[-2000:]), err.read_text()[-3000:])
    finally:
        stop_group(proc)
        for fd in (master, slave):
            if fd is not None:
                os.close(fd)
    stderr = err.read_text()
    assert not [n for n in NOISE if n in stderr], stderr[-3000:]
    assert b"session interrupted: the log is marked cancelled" in out
    [path] = logs.glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "cancelled"
    sample = log.samples[0]
    assert sample.store["pibench:interrupted"] == "ctrl-c"
    assert [c.function for m in sample.messages if m.role == "assistant" for c in m.tool_calls or []] == ["lookup_order"]


@pytest.mark.slow
def test_ctrl_c_on_inspect_eval_exits_130_saying_what_the_log_holds(tmp_path):
    """A pi-bench run interrupted mid-sample printed "the run lost samples ... none of them can
    be trusted to be in the log" and exited 1 (output piped: Inspect itself exits 0 there)."""
    from waiting_agent import READY

    logs = tmp_path / "logs"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    with open(tmp_path / "stdout.txt", "wb") as out_file:
        proc = subprocess.Popen(
            [str(BIN / "inspect"), "eval", "pibench_inspect/pibench", "-T", f"source={MINI}", "-T", "user=scripted",
             "-T", "agent=waiting_agent:WaitingAgent", "--model", "none", "--display", "plain",
             "--log-dir", str(logs)],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out_file, stderr=subprocess.PIPE,
            start_new_session=True, preexec_fn=ctrl_c_default)
    try:
        err = bytearray()
        read_until(proc.stderr.fileno(), err, READY.encode())
        os.killpg(proc.pid, signal.SIGINT)
        read_to_end(proc.stderr.fileno(), err)
        assert proc.wait(timeout=DEADLINE) == 130, err.decode()[-3000:]
    finally:
        stop_group(proc)
    stderr = err.decode()
    assert not [n for n in NOISE if n in stderr], stderr[-3000:]
    [path] = logs.glob("*.eval")
    lines = [x for x in stderr.splitlines() if x.startswith("pi-bench: ")]
    assert lines == [f"pi-bench: the run was interrupted: {path} is marked cancelled and holds 3 of the 3 "
                     "sample runs asked for, 0 of them scored"], stderr[-3000:]
    assert read_eval_log(str(path), header_only=True).status == "cancelled"
