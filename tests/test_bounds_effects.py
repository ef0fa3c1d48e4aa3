"""Every effect a catalog can trigger is bounded (issue 25, item 1), through the real commands.

A hostile domain's `sql` step that would run for hours, a schema `pattern` that backtracks
catastrophically and a write that floods the state each end as a tool error naming the step;
the run ends within its limits and its log is complete. `pibench validate` applies the same
bounds, and refuses a `handler` that names anything but a registered handler.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

BIN = Path(sys.executable).parent
INSPECT, PIBENCH = str(BIN / "inspect"), str(BIN / "pibench")
REDOS_VALUE = "a" * 60 + "!"
REDOS = "^(a|aa)+$"  # Python's re takes years on REDOS_VALUE


def hostile(mini_source: Path, tool: str, *, effect_first=None, parameters=None, limits=None) -> Path:
    tools_path = mini_source / "domains" / "mini" / "tools.json"
    catalog = json.loads(tools_path.read_text())
    spec = next(t for t in catalog["tools"] if t["name"] == tool)
    if effect_first is not None:
        spec["effect"] = [effect_first] + spec["effect"]
    if parameters is not None:
        spec["parameters"]["properties"].update(parameters)
    tools_path.write_text(json.dumps(catalog))
    if limits is not None:
        cfg_path = mini_source / "domains" / "mini" / "domain.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["limits"] = limits
        cfg_path.write_text(json.dumps(cfg))
    return mini_source


def run_eval(src: Path, logs: Path, *extra: str, agent_args: dict | None = None, timeout: float = 120):
    agent = ["-T", "agent=tests.fault_agents:FaultAgent", "-T", f"agent_args={json.dumps(agent_args)}"] \
        if agent_args is not None else ["-T", "agent=oracle"]
    started = time.monotonic()
    r = subprocess.run(
        [INSPECT, "eval", "pibench_inspect/pibench", "-T", f"source={src}", *agent, "-T", "user=scripted",
         "--sample-id", "MINI_001_REFUND_OK", "--model", "none", "--display", "none", "--log-dir", str(logs), *extra],
        capture_output=True, text=True, timeout=timeout, cwd=Path(__file__).resolve().parents[1],
    )
    return r, time.monotonic() - started


def tool_texts(log, name: str) -> list[str]:
    return [(m.error.message if m.error else m.text) for m in log.samples[0].messages
            if m.role == "tool" and m.function == name]


@pytest.mark.slow
def test_a_sql_step_that_runs_forever_is_stopped_at_its_deadline(mini_source: Path, tmp_path: Path):
    # the default limits (5 s a call): the domain need not know about them
    src = hostile(mini_source, "lookup_order", effect_first={"sql": "SELECT count(*) AS n FROM range(1000000000000)", "as": "n"})
    r, took = run_eval(src, tmp_path / "logs")
    assert r.returncode == 0, r.stderr
    assert took < 90
    log = read_eval_log(next((tmp_path / "logs").glob("*.eval")))
    assert log.status == "success" and len(log.samples) == 1
    texts = tool_texts(log, "lookup_order")
    assert texts and all("effect step 1 (sql) ran over the 5 s" in t for t in texts), texts
    assert log.samples[0].scores  # the sample went on and was scored


@pytest.mark.slow
def test_a_sql_step_that_floods_the_state_is_refused(mini_source: Path, tmp_path: Path):
    flood = {"sql": "INSERT INTO orders (_pos, _key, _keys, status) SELECT i + 100, 'X' || i::VARCHAR, ['status'], "
                    "repeat('x', 200) FROM range(1000000) r(i)"}
    src = hostile(mini_source, "lookup_order", effect_first=flood)  # the default limits
    r, _ = run_eval(src, tmp_path / "logs")
    assert r.returncode == 0, r.stderr
    log = read_eval_log(next((tmp_path / "logs").glob("*.eval")))
    texts = tool_texts(log, "lookup_order")
    # whichever bound it meets first: the stored-state cap, DuckDB's memory limit, the deadline
    assert texts and all(any(f"(the domain's limits.{x})" in t for x in ("state_mb", "memory_mb", "call_seconds"))
                         for t in texts), texts
    stored = log.samples[0].store.get("pibench:state_changes")
    assert stored is not None and len(stored) < 1_000_000


@pytest.mark.slow
def test_a_catastrophic_schema_pattern_is_matched_with_a_deadline(mini_source: Path, tmp_path: Path):
    src = hostile(mini_source, "lookup_order", parameters={"order_id": {"type": "string", "pattern": REDOS}})
    calls = [{"name": "lookup_order", "arguments": {"order_id": REDOS_VALUE}}]
    r, took = run_eval(src, tmp_path / "logs", agent_args={"fault": "calls", "calls": calls})
    assert r.returncode == 0, r.stderr
    assert took < 60
    log = read_eval_log(next((tmp_path / "logs").glob("*.eval")))
    texts = tool_texts(log, "lookup_order")
    assert texts and "backtracks catastrophically" in texts[0], texts


@pytest.mark.slow
def test_validate_applies_the_same_bounds(mini_source: Path):
    # a sql step that runs forever on one tool, a catastrophic pattern on another; a short
    # deadline, as every play of the mutation gate meets it
    hostile(mini_source, "refund_order", effect_first={"sql": "SELECT count(*) AS n FROM range(1000000000000)", "as": "n"},
            limits={"call_seconds": 0.5})
    src = hostile(mini_source, "lookup_order", parameters={"order_id": {"type": "string", "pattern": REDOS}})
    scenario = src / "scenarios" / "mini" / "mini_001_refund_ok.json"
    data = json.loads(scenario.read_text())
    for call in (data.get("reference_solution") or {}).get("tool_calls", []):
        if call["name"] == "lookup_order":
            call["arguments"]["order_id"] = REDOS_VALUE
    scenario.write_text(json.dumps(data))
    started = time.monotonic()
    r = subprocess.run([PIBENCH, "validate", "--source", str(src), "--only", "MINI_001_REFUND_OK"],
                       capture_output=True, text=True, timeout=240)
    assert time.monotonic() - started < 200
    assert r.returncode in (0, 1), r.stderr  # finished, with or without problems: it did not hang


def test_a_handler_must_be_a_registered_handler(mini_source: Path):
    tools_path = mini_source / "domains" / "mini" / "tools.json"
    catalog = json.loads(tools_path.read_text())
    catalog["tools"][0]["handler"] = "pibench_inspect.parity.generic:json"  # a module, not a handler
    catalog["tools"][0]["effect"] = []
    tools_path.write_text(json.dumps(catalog))
    r = subprocess.run([PIBENCH, "validate", "--source", str(mini_source)], capture_output=True, text=True, timeout=240)
    assert r.returncode == 1
    assert "is not a registered handler" in r.stdout + r.stderr


@pytest.mark.slow
def test_time_limit_and_sigterm_reach_a_run_whose_sql_step_is_still_running(mini_source: Path, tmp_path: Path):
    """The effect runs off the event loop: Inspect's --time-limit ends the sample on time (its
    statement is interrupted, the state is scored as reached) and SIGTERM ends the run."""
    import signal

    src = hostile(mini_source, "lookup_order", effect_first={"sql": "SELECT count(*) AS n FROM range(1000000000000)", "as": "n"},
                  limits={"call_seconds": 100})
    r, took = run_eval(src, tmp_path / "logs", "--time-limit", "3")
    assert took < 60, took
    log = read_eval_log(next((tmp_path / "logs").glob("*.eval")))
    assert log.status == "success" and len(log.samples) == 1
    assert log.samples[0].store.get("pibench:termination") == "limit"

    proc = subprocess.Popen(
        [INSPECT, "eval", "pibench_inspect/pibench", "-T", f"source={src}", "-T", "agent=oracle", "-T", "user=scripted",
         "--sample-id", "MINI_001_REFUND_OK", "--model", "none", "--display", "none", "--log-dir", str(tmp_path / "t")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    deadline = time.monotonic() + 60
    while not list((tmp_path / "t").glob("*.eval")) and time.monotonic() < deadline:
        time.sleep(0.2)  # the log exists once the sample runs
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("SIGTERM did not end the run")
